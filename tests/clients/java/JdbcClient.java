// JDBC driver for tests/clients/test_jdbc.py: runs one scenario against a live ShaleDB through
// MariaDB Connector/J and prints what the driver returned, one tab-separated record per line,
// for the Python test to check. Run as a single-file program:
//   java -cp mariadb-java-client.jar JdbcClient.java <scenario> <jdbc url> [args...]
// Values are printed with Java's own conversions (getBigDecimal, getDate, getTimestamp, ...), so a
// wrong wire type or value shows up as a different text. Errors are printed as
// "ERROR\t<vendor code>\t<message>" and end the program with status 3.

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;

public class JdbcClient {
    static String text(Object v) {
        if (v == null) return "NULL";
        if (v instanceof byte[]) return new String((byte[]) v, java.nio.charset.StandardCharsets.UTF_8);
        return v.toString();
    }

    static void out(Object... fields) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < fields.length; i++) {
            if (i > 0) b.append('\t');
            b.append(text(fields[i]).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n"));
        }
        System.out.println(b);
    }

    /** Every row of rs as "ROW <tag> label=value ..." with the listed labels. */
    static void dump(String tag, ResultSet rs, String... labels) throws SQLException {
        int n = 0;
        while (rs.next()) {
            Object[] f = new Object[labels.length + 2];
            f[0] = "ROW";
            f[1] = tag;
            for (int i = 0; i < labels.length; i++) f[i + 2] = labels[i] + "=" + text(rs.getString(labels[i]));
            out(f);
            n++;
        }
        out("COUNT", tag, n);
    }

    static void connect(Connection c) throws SQLException {
        DatabaseMetaData m = c.getMetaData();
        out("PRODUCT", m.getDatabaseProductName(), m.getDatabaseProductVersion());
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT 1 + 1, 'it''s'")) {
            rs.next();
            out("SELECT", rs.getInt(1), rs.getString(2));
        }
        out("CATALOG", c.getCatalog());
    }

    static void metadata(Connection c, String db, String table) throws SQLException {
        DatabaseMetaData m = c.getMetaData();
        dump("tables", m.getTables(db, null, "%", new String[] {"TABLE"}), "TABLE_CAT", "TABLE_NAME", "TABLE_TYPE");
        dump("columns", m.getColumns(db, null, table, "%"), "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE",
             "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "ORDINAL_POSITION", "IS_NULLABLE");
        ResultSet pk = m.getPrimaryKeys(db, null, table);
        ResultSetMetaData pmd = pk.getMetaData();
        StringBuilder labels = new StringBuilder();
        for (int i = 1; i <= pmd.getColumnCount(); i++) labels.append(i > 1 ? "," : "").append(pmd.getColumnLabel(i));
        out("PKLABELS", labels);
        dump("primarykeys", pk, "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ");
        dump("catalogs", m.getCatalogs(), "TABLE_CAT");
        // Calls JDBC tools make when browsing a table; each runs the driver's own metadata SQL.
        dump("indexinfo", m.getIndexInfo(db, null, table, false, false), "INDEX_NAME");
        dump("importedkeys", m.getImportedKeys(db, null, table), "FKCOLUMN_NAME");
        dump("exportedkeys", m.getExportedKeys(db, null, table), "FKCOLUMN_NAME");
        dump("crossreference", m.getCrossReference(db, null, table, db, null, table), "FKCOLUMN_NAME");
        dump("procedures", m.getProcedures(db, null, "%"), "PROCEDURE_NAME");
        dump("functions", m.getFunctions(db, null, "%"), "FUNCTION_NAME");
        dump("tableprivileges", m.getTablePrivileges(db, null, table), "PRIVILEGE");
        dump("columnprivileges", m.getColumnPrivileges(db, null, table, "%"), "PRIVILEGE");
        dump("bestrow", m.getBestRowIdentifier(db, null, table, DatabaseMetaData.bestRowSession, true), "COLUMN_NAME");
    }

    // One row of every parameter type; the Python test checks the stored table against them.
    static final String INSERT = "INSERT INTO typed (id, tiny, small, big, flag, f, dbl, num, d, ts, s, txt) "
            + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    static final String[] STRINGS = {
        "it's", "say \"hi\"", "back\\slash", "'; DROP TABLE typed; --", "?", "日本語 ünïcode", "",
    };

    static String describe(ResultSetMetaData md) throws SQLException {
        StringBuilder cols = new StringBuilder();
        for (int i = 1; md != null && i <= md.getColumnCount(); i++) {
            cols.append(i > 1 ? "," : "").append(md.getColumnLabel(i)).append(':')
                .append(md.getColumnTypeName(i)).append(':').append(md.getPrecision(i)).append(':').append(md.getScale(i));
        }
        return cols.toString();
    }

    static void prepared(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(INSERT)) {
            out("CLASS", ps.getClass().getSimpleName());
            out("PARAMS", ps.getParameterMetaData().getParameterCount());
            for (int i = 0; i < STRINGS.length; i++) {
                ps.setInt(1, i + 1);
                ps.setByte(2, (byte) (i - 3));
                ps.setShort(3, (short) (-30000 + i));
                ps.setLong(4, 9000000000000000000L + i);
                ps.setBoolean(5, i % 2 == 0);
                ps.setFloat(6, 1.5f * i);
                ps.setDouble(7, -2.25e-7 * (i + 1));
                ps.setBigDecimal(8, new BigDecimal("-12345678901234.123456").add(BigDecimal.valueOf(i)));
                ps.setDate(9, Date.valueOf("2024-02-2" + (i + 1)));
                ps.setTimestamp(10, Timestamp.valueOf("2024-02-29 13:14:15." + (123456 + i)));
                ps.setString(11, STRINGS[i]);
                ps.setString(12, STRINGS[STRINGS.length - 1 - i]);
                out("INSERTED", ps.executeUpdate());
            }
            ps.setInt(1, 100);
            ps.setNull(2, Types.TINYINT);
            ps.setNull(3, Types.SMALLINT);
            ps.setNull(4, Types.BIGINT);
            ps.setNull(5, Types.BOOLEAN);
            ps.setNull(6, Types.FLOAT);
            ps.setNull(7, Types.DOUBLE);
            ps.setNull(8, Types.DECIMAL);
            ps.setNull(9, Types.DATE);
            ps.setNull(10, Types.TIMESTAMP);
            ps.setNull(11, Types.VARCHAR);
            ps.setString(12, null);
            out("INSERTED", ps.executeUpdate());
        }
        // Typed parameters in predicates: each query must find exactly the row it names.
        String[] where = {"s = ?", "num = ?", "d = ?", "ts = ?", "big = ?", "dbl = ?", "s IS NULL AND id = ?"};
        for (int k = 0; k < where.length; k++) {
            String sql = "SELECT id, tiny, small, big, flag, f, dbl, num, d, ts, s, txt FROM typed WHERE "
                    + where[k] + " ORDER BY id";
            try (PreparedStatement q = c.prepareStatement(sql)) {
                if (k == 0) out("PREPMETA", describe(q.getMetaData()));  // before any execution
                switch (k) {
                    case 0: q.setString(1, "'; DROP TABLE typed; --"); break;
                    case 1: q.setBigDecimal(1, new BigDecimal("-12345678901232.123456")); break;
                    case 2: q.setDate(1, Date.valueOf("2024-02-23")); break;
                    case 3: q.setTimestamp(1, Timestamp.valueOf("2024-02-29 13:14:15.123460")); break;
                    case 4: q.setLong(1, 9000000000000000005L); break;
                    case 5: q.setDouble(1, -2.25e-7 * 7); break;
                    default: q.setInt(1, 100); break;
                }
                try (ResultSet rs = q.executeQuery()) {
                    if (k == 0) out("EXECMETA", describe(rs.getMetaData()));
                    while (rs.next()) {
                        out("MATCH", k, rs.getInt(1), rs.getObject(2), rs.getShort(3), rs.getLong(4),
                            rs.getBoolean(5), rs.getFloat(6), rs.getDouble(7), rs.getBigDecimal(8),
                            rs.getDate(9), rs.getTimestamp(10), rs.getString(11), rs.getString(12));
                    }
                }
            }
        }
        // The same statement executed again with new values (types not re-sent by every driver).
        try (PreparedStatement q = c.prepareStatement("SELECT COUNT(*), MIN(id) FROM typed WHERE id >= ? AND s <> ?")) {
            for (int lo : new int[] {1, 4, 100}) {
                q.setInt(1, lo);
                q.setString(2, "it's");
                try (ResultSet rs = q.executeQuery()) {
                    rs.next();
                    out("RANGE", lo, rs.getLong(1), rs.getObject(2));
                }
            }
        }
    }

    static void batch(Connection c, int rows) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO batched (id, name, amount) VALUES (?, ?, ?)")) {
            for (int i = 0; i < rows; i++) {
                ps.setInt(1, i);
                ps.setString(2, "name '" + i + "'");
                ps.setBigDecimal(3, BigDecimal.valueOf(i).movePointLeft(2));
                ps.addBatch();
            }
            int[] counts = ps.executeBatch();
            long total = 0;
            for (int n : counts) total += n == Statement.SUCCESS_NO_INFO ? 0 : n;
            out("BATCH", counts.length, total);
        }
    }

    // The same query as a text result (Statement) and a binary one (server-side PreparedStatement,
    // the connection must set useServerPrepStmts=true): each cell's getObject, side by side.
    static void compare(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet text = s.executeQuery(sql);
             PreparedStatement ps = c.prepareStatement(sql); ResultSet binary = ps.executeQuery()) {
            out("CLASS", ps.getClass().getSimpleName());
            ResultSetMetaData tm = text.getMetaData();
            ResultSetMetaData bm = binary.getMetaData();
            for (int i = 1; i <= tm.getColumnCount(); i++) {
                out("META", tm.getColumnLabel(i), tm.getColumnTypeName(i), tm.getPrecision(i), tm.getScale(i),
                    bm.getColumnTypeName(i), bm.getPrecision(i), bm.getScale(i));
            }
            int row = 0;
            while (text.next()) {
                if (!binary.next()) throw new SQLException("binary result has fewer rows");
                row++;
                for (int i = 1; i <= tm.getColumnCount(); i++) {
                    out("CELL", row, tm.getColumnLabel(i), text.getObject(i), binary.getObject(i));
                }
            }
            if (binary.next()) throw new SQLException("binary result has more rows");
            out("ROWS", row);
        }
    }

    /**
     * Opens `count` connections at the same moment (one thread each) and runs a query on each:
     * "CONNECTED i value" or "CONNECT_ERROR i message" per thread. Connector/J gives its
     * pipelined connect-time queries (SET ..., SELECT @@max_allowed_packet, ...) only 500 ms.
     */
    static void connectMany(String url, int count) throws Exception {
        java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
        String[] results = new String[count];
        Thread[] threads = new Thread[count];
        for (int i = 0; i < count; i++) {
            final int n = i;
            threads[i] = new Thread(() -> {
                try {
                    start.await();
                    try (Connection c = DriverManager.getConnection(url, "root", "");
                         Statement s = c.createStatement();
                         ResultSet rs = s.executeQuery("SELECT " + n + " * 2")) {
                        rs.next();
                        results[n] = "CONNECTED\t" + n + "\t" + rs.getLong(1);
                    }
                } catch (Exception e) {
                    Throwable cause = e;
                    StringBuilder msg = new StringBuilder();
                    while (cause != null) {
                        msg.append(cause.getClass().getSimpleName()).append(": ").append(cause.getMessage()).append(" / ");
                        cause = cause.getCause();
                    }
                    results[n] = "CONNECT_ERROR\t" + n + "\t" + msg.toString().replace("\n", " ").replace("\t", " ");
                }
            });
            threads[i].start();
        }
        start.countDown();
        for (Thread t : threads) t.join();
        for (String r : results) System.out.println(r);
    }

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        String url = args[1];
        if (scenario.equals("connect-many")) {
            connectMany(url, Integer.parseInt(args[2]));
            out("DONE");
            return;
        }
        try (Connection c = DriverManager.getConnection(url, "root", "")) {
            switch (scenario) {
                case "connect": connect(c); break;
                case "metadata": metadata(c, args[2], args[3]); break;
                case "prepared": prepared(c); break;
                case "batch": batch(c, Integer.parseInt(args[2])); break;
                case "compare": compare(c, args[2]); break;
                default: throw new IllegalArgumentException(scenario);
            }
        } catch (SQLException e) {
            out("ERROR", e.getErrorCode(), e.getMessage());
            System.exit(3);
        }
        out("DONE");
    }
}
