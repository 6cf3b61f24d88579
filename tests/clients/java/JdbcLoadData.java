import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * LOAD DATA LOCAL INFILE through MariaDB Connector/J (tests/clients/test_load_data.py).
 * Arguments: a JDBC URL, then statements on one connection, each `update:<sql>` (prints
 * `UPDATED <count>` or `ERROR <code> <message>`) or `query:<sql>` (prints `ROW <v1> <v2> ..`).
 */
public class JdbcLoadData {
    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0], "root", "")) {
            for (int i = 1; i < args.length; i++) {
                String kind = args[i].substring(0, args[i].indexOf(':'));
                String sql = args[i].substring(kind.length() + 1);
                try (Statement s = c.createStatement()) {
                    if (kind.equals("update")) {
                        System.out.println("UPDATED\t" + s.executeUpdate(sql));
                    } else {
                        try (ResultSet r = s.executeQuery(sql)) {
                            int n = r.getMetaData().getColumnCount();
                            while (r.next()) {
                                StringBuilder line = new StringBuilder("ROW");
                                for (int j = 1; j <= n; j++) {
                                    line.append('\t').append(r.getString(j));
                                }
                                System.out.println(line);
                            }
                        }
                    }
                } catch (SQLException e) {
                    System.out.println("ERROR\t" + e.getErrorCode() + "\t" + e.getMessage());
                }
            }
        }
        System.out.println("DONE");
    }
}
