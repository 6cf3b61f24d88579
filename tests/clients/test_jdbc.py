"""JDBC through MariaDB Connector/J (Debian `libmariadb-java`) against a live ShaleDB.

A small Java program (tests/clients/java/JdbcClient.java, compiled once per session with javac)
runs each scenario: connecting (the driver's connect-time SET and @@variable queries),
DatabaseMetaData getTables/getColumns/getPrimaryKeys (its information_schema SQL), client-side
and server-side (`useServerPrepStmts=true`) prepared statements with every parameter type, and
batched inserts with `rewriteBatchedStatements=true`. What the driver printed is checked against
what pymysql reads from the same server and against the values the scenario wrote.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from decimal import Decimal
from pathlib import Path

import pymysql
import pytest

JAVA_DIR = Path(__file__).resolve().parent / "java"
CONNECTOR_JAR = Path("/usr/share/java/mariadb-java-client.jar")
JAVA_TIMEOUT_S = 180

# Mirrors JdbcClient.STRINGS: quotes, backslash, an injection attempt, a `?`, unicode, empty.
STRINGS = ["it's", 'say "hi"', "back\\slash", "'; DROP TABLE typed; --", "?", "日本語 ünïcode", ""]


@pytest.fixture(scope="module")
def jdbc_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("jdbc-classes")
    proc = subprocess.run(
        ["javac", "-cp", str(CONNECTOR_JAR), "-d", str(out), str(JAVA_DIR / "JdbcClient.java")],
        capture_output=True,
        text=True,
        timeout=JAVA_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def url(server, db: str = "", **options: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in options.items())
    return f"jdbc:mysql://127.0.0.1:{server.port}/{db}" + (f"?{query}" if query else "")


def run_java(classes: Path, *args: str) -> list[list[str]]:
    """Run one JdbcClient scenario; its output records, split on tabs (the DONE line checked)."""
    proc = subprocess.run(
        ["java", "-cp", f"{classes}:{CONNECTOR_JAR}", "JdbcClient", *args],
        capture_output=True,
        text=True,
        timeout=JAVA_TIMEOUT_S,
    )
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and lines and lines[-1] == ["DONE"], (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
    )
    return lines[:-1]


def records(lines: list[list[str]], tag: str) -> list[list[str]]:
    return [line[1:] for line in lines if line[0] == tag]


def rows_of(lines: list[list[str]], tag: str) -> list[dict[str, str]]:
    out = []
    for line in lines:
        if line[0] == "ROW" and line[1] == tag:
            out.append(dict(field.split("=", 1) for field in line[2:]))
    count = [line for line in lines if line[0] == "COUNT" and line[1] == tag]
    assert count and int(count[0][2]) == len(out)
    return out


# ---- connect ------------------------------------------------------------------------------------


def test_connect_and_query(server, jdbc_classes, db) -> None:
    lines = run_java(jdbc_classes, "connect", url(server, db))
    with server.connect() as c, c.cursor() as cur:
        cur.execute("SELECT @@version")
        version = cur.fetchone()[0]
    assert records(lines, "PRODUCT") == [["MySQL", version]]
    assert records(lines, "SELECT") == [["2", "it's"]]
    assert records(lines, "CATALOG") == [[db]]


def test_connect_with_mariadb_url_scheme(server, jdbc_classes) -> None:
    lines = run_java(jdbc_classes, "connect", f"jdbc:mariadb://127.0.0.1:{server.port}/")
    assert records(lines, "SELECT") == [["2", "it's"]]


# ---- DatabaseMetaData ---------------------------------------------------------------------------


def test_metadata_tables_columns_primary_keys(server, jdbc_classes, db, db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE t1 (id INT NOT NULL, name VARCHAR(20), amount DECIMAL(10,2), d DATE, "
            "ts DATETIME(3), flag BOOLEAN, big BIGINT, dbl DOUBLE, s STRING) UNIQUE KEY(id) "
            "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES('replication_num'='1')"
        )
        cur.execute(
            "CREATE TABLE t2 (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1 "
            "PROPERTIES('replication_num'='1')"
        )
        cur.execute(
            "SELECT COLUMN_NAME, ORDINAL_POSITION, IS_NULLABLE, DATA_TYPE, NUMERIC_PRECISION, "
            "NUMERIC_SCALE, CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 't1' ORDER BY ORDINAL_POSITION",
            (db,),
        )
        reference = cur.fetchall()
    lines = run_java(jdbc_classes, "metadata", url(server, db), db, "t1")

    tables = rows_of(lines, "tables")
    assert [(t["TABLE_CAT"], t["TABLE_NAME"], t["TABLE_TYPE"]) for t in tables] == [
        (db, "t1", "TABLE"),
        (db, "t2", "TABLE"),
    ]

    columns = rows_of(lines, "columns")
    assert [c["COLUMN_NAME"] for c in columns] == [r[0] for r in reference]
    assert [int(c["ORDINAL_POSITION"]) for c in columns] == [r[1] for r in reference]
    assert [c["IS_NULLABLE"] for c in columns] == [r[2] for r in reference]
    assert all(c["TABLE_NAME"] == "t1" for c in columns)
    by_name = {c["COLUMN_NAME"]: c for c in columns}
    # java.sql.Types codes the driver derives from DATA_TYPE/COLUMN_TYPE with its CASE SQL.
    expected_types = {"id": 4, "name": 12, "amount": 3, "d": 91, "ts": 93, "big": -5, "dbl": 8}
    assert {n: int(by_name[n]["DATA_TYPE"]) for n in expected_types} == expected_types
    ref = {r[0]: r for r in reference}
    assert int(by_name["amount"]["COLUMN_SIZE"]) == ref["amount"][4]
    assert int(by_name["amount"]["DECIMAL_DIGITS"]) == ref["amount"][5]
    assert int(by_name["name"]["COLUMN_SIZE"]) == ref["name"][6]
    assert by_name["name"]["TYPE_NAME"] == "VARCHAR"

    # Doris tables have no PRIMARY KEY: the driver's COLUMNS x STATISTICS join runs and is empty.
    assert records(lines, "PKLABELS") == [
        ["TABLE_CAT,TABLE_SCHEM,TABLE_NAME,COLUMN_NAME,KEY_SEQ,PK_NAME"]
    ]
    assert rows_of(lines, "primarykeys") == []

    # Doris has no indexes of MySQL's kind, foreign keys, stored routines or per-table grants:
    # the driver's information_schema queries for them run and find nothing, as on Doris.
    for tag in (
        "indexinfo",
        "importedkeys",
        "exportedkeys",
        "crossreference",
        "procedures",
        "functions",
        "tableprivileges",
        "columnprivileges",
    ):
        assert rows_of(lines, tag) == [], tag
    # The best row identifier is the key columns information_schema reports (UNIQUE KEY: 'UNI').
    with db_conn.cursor() as cur:
        cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s "
            "AND TABLE_NAME = 't1' AND COLUMN_KEY IN ('PRI', 'MUL', 'UNI')",
            (db,),
        )
        key_columns = [r[0] for r in cur.fetchall()]
    assert key_columns == ["id"]
    assert [r["COLUMN_NAME"] for r in rows_of(lines, "bestrow")] == key_columns

    with server.connect() as c, c.cursor() as cur:
        cur.execute("SHOW DATABASES")
        databases = sorted(r[0] for r in cur.fetchall())
    assert sorted(r["TABLE_CAT"] for r in rows_of(lines, "catalogs")) == databases


# ---- prepared statements ------------------------------------------------------------------------

TYPED_DDL = (
    "CREATE TABLE typed (id INT, tiny TINYINT, small SMALLINT, big BIGINT, flag BOOLEAN, f FLOAT, "
    "dbl DOUBLE, num DECIMAL(20,6), d DATE, ts DATETIME(6), s VARCHAR(100), txt STRING) "
    "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES('replication_num'='1')"
)


def expected_typed_rows() -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for i, s in enumerate(STRINGS):
        rows.append(
            (
                i + 1,
                i - 3,
                -30000 + i,
                9000000000000000000 + i,
                int(i % 2 == 0),
                1.5 * i,
                -2.25e-7 * (i + 1),
                Decimal("-12345678901234.123456") + i,
                dt.date(2024, 2, 21 + i),
                dt.datetime(2024, 2, 29, 13, 14, 15, 123456 + i),
                s,
                STRINGS[len(STRINGS) - 1 - i],
            )
        )
    rows.append((100,) + (None,) * 11)
    return rows


@pytest.mark.parametrize("server_side", [False, True], ids=["client-prepare", "server-prepare"])
def test_prepared_statements_every_parameter_type(
    server, jdbc_classes, db, db_conn, server_side
) -> None:
    with db_conn.cursor() as cur:
        cur.execute(TYPED_DDL)
    options = {"useServerPrepStmts": "true"} if server_side else {}
    lines = run_java(jdbc_classes, "prepared", url(server, db, **options))

    # The driver really used the protocol asked for (Connector/J silently falls back to
    # client-side preparation when a server-side PREPARE fails).
    expected_class = "ServerSidePreparedStatement" if server_side else "ClientSidePreparedStatement"
    assert records(lines, "CLASS") == [[expected_class]]
    assert records(lines, "PARAMS") == [["12"]]
    assert records(lines, "INSERTED") == [["1"]] * (len(STRINGS) + 1)

    with db_conn.cursor() as cur:
        cur.execute("SELECT * FROM typed ORDER BY id")
        stored = cur.fetchall()
    expected = expected_typed_rows()
    assert len(stored) == len(expected)
    for got, want in zip(stored, expected):
        assert got[:5] == want[:5]
        assert (got[5] is None) == (want[5] is None) and (
            got[5] is None or got[5] == pytest.approx(want[5])
        )
        assert got[6:] == want[6:]

    # A query's result columns are described at PREPARE, exactly as its execution describes them.
    [prepared_meta] = records(lines, "PREPMETA")
    assert prepared_meta == records(lines, "EXECMETA")[0]
    assert [c.split(":")[0] for c in prepared_meta[0].split(",")] == [
        "id",
        "tiny",
        "small",
        "big",
        "flag",
        "f",
        "dbl",
        "num",
        "d",
        "ts",
        "s",
        "txt",
    ]

    # Each typed predicate found exactly the row it names (the injection string included).
    matches = records(lines, "MATCH")
    found = {(int(m[0]), int(m[1])) for m in matches}
    assert found == {(0, 4), (1, 3), (2, 3), (3, 5), (4, 6), (5, 7), (6, 100)}
    assert len(matches) == len(found)
    injected = next(m for m in matches if m[0] == "0")
    assert injected[11] == STRINGS[3] and injected[12] == STRINGS[3]
    assert injected[8] == "-12345678901231.123456" and injected[9] == "2024-02-24"
    assert injected[10] == "2024-02-29 13:14:15.123459"
    null_row = next(m for m in matches if m[0] == "6")
    assert null_row[9:] == ["NULL"] * 4

    # Re-executions with new values (server-side: types are not re-sent every time).
    def reference(lo: int) -> list[str]:
        with db_conn.cursor() as cur:
            cur.execute(
                "SELECT COUNT(*), MIN(id) FROM typed WHERE id >= %s AND s <> %s", (lo, "it's")
            )
            n, low = cur.fetchone()
        return [str(lo), str(n), "NULL" if low is None else str(low)]

    assert records(lines, "RANGE") == [reference(1), reference(4), reference(100)]


def test_server_prepared_statement_errors_are_reported(server, jdbc_classes, db, db_conn) -> None:
    # No `typed` table in this database: the execution fails and the driver reports the very
    # error (code and text) a plain query gets.
    proc = subprocess.run(
        [
            "java",
            "-cp",
            f"{jdbc_classes}:{CONNECTOR_JAR}",
            "JdbcClient",
            "prepared",
            url(server, db, useServerPrepStmts="true"),
        ],
        capture_output=True,
        text=True,
        timeout=JAVA_TIMEOUT_S,
    )
    errors = [line.split("\t") for line in proc.stdout.splitlines() if line.startswith("ERROR")]
    assert proc.returncode == 3 and len(errors) == 1, proc.stdout + proc.stderr
    with db_conn.cursor() as cur, pytest.raises(pymysql.MySQLError) as info:
        cur.execute("INSERT INTO typed (id) VALUES (1)")
    code, message = info.value.args
    assert errors[0][1] == str(code)
    assert errors[0][2].endswith(message)


@pytest.mark.parametrize(
    "options",
    [{"rewriteBatchedStatements": "true"}, {"useServerPrepStmts": "true"}],
    ids=["rewrite-batched", "server-prepare-batch"],
)
def test_batched_inserts(server, jdbc_classes, db, db_conn, options) -> None:
    with db_conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE batched (id INT, name VARCHAR(40), amount DECIMAL(12,2)) "
            "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2 "
            "PROPERTIES('replication_num'='1')"
        )
    rows = 2500
    lines = run_java(jdbc_classes, "batch", url(server, db, **options), str(rows))
    assert records(lines, "BATCH")[0][0] == str(rows)
    with db_conn.cursor() as cur:
        cur.execute("SELECT id, name, amount FROM batched ORDER BY id")
        stored = cur.fetchall()
    assert stored == tuple(
        (i, f"name '{i}'", Decimal(i).scaleb(-2).quantize(Decimal("0.01"))) for i in range(rows)
    )


# ---- binary results (server-side prepared) against text results ---------------------------------

COMPARE_DDL = (
    "CREATE TABLE a (id INT, b BOOLEAN, ti TINYINT, si SMALLINT, bi BIGINT, li LARGEINT, f FLOAT, "
    "d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(38,10), dt DATE, ts DATETIME, ts3 DATETIME(3), "
    "ts6 DATETIME(6), c CHAR(5), v VARCHAR(20), s STRING) DUPLICATE KEY(id) "
    "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES('replication_num'='1')"
)
COMPARE_ROWS = (
    "(1, true, -128, 32767, -9000000000000000000, -170141183460469231731687303715884105728, 1.5, "
    "-2.25e-300, -12345678.90, 1234567890.0123456789, '2024-02-29', '2024-02-29 01:02:03', "
    "'2024-02-29 01:02:03.120', '2024-02-29 01:02:03.000001', 'ab', 'it''s', '日本'), "
    "(2, false, 127, -32768, 9000000000000000000, 5, -0.25, 1e300, 0.01, -0.0000000001, "
    "'0001-01-01', '9999-12-31 23:59:59', '1970-01-01 00:00:00.001', '2000-01-01 00:00:00', "
    "'abcde', '', 'x'), "
    "(3" + ", NULL" * 16 + ")"
)


def test_binary_results_match_text_results(server, jdbc_classes, db, db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute(COMPARE_DDL)
        cur.execute(f"INSERT INTO a VALUES {COMPARE_ROWS}")
        cur.execute("SELECT li FROM a ORDER BY id")
        largeints = [r[0] for r in cur.fetchall()]
    lines = run_java(
        jdbc_classes,
        "compare",
        url(server, db, useServerPrepStmts="true"),
        "SELECT * FROM a ORDER BY id",
    )
    assert records(lines, "CLASS") == [["ServerSidePreparedStatement"]]
    assert records(lines, "ROWS") == [["3"]]
    meta = records(lines, "META")
    assert [m[0] for m in meta] == [
        "id",
        "b",
        "ti",
        "si",
        "bi",
        "li",
        "f",
        "d",
        "dec1",
        "dec2",
        "dt",
        "ts",
        "ts3",
        "ts6",
        "c",
        "v",
        "s",
    ]
    for label, *text_and_binary in meta:
        if label != "li":  # same type name, precision and scale in both protocols
            assert text_and_binary[:3] == text_and_binary[3:], label
    cells = records(lines, "CELL")
    assert len(cells) == 3 * len(meta)
    for row, label, text, binary in cells:
        if label == "li":
            # LARGEINT has no 8-byte binary form: it travels as DECIMAL(38,0), exactly.
            want = largeints[int(row) - 1]
            assert binary == ("NULL" if want is None else str(want))
        else:
            assert binary == text, (row, label)
