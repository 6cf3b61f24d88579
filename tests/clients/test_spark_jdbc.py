"""PySpark 4 JDBC reads and writes through MariaDB Connector/J against a live ShaleDB.

One local[2] SparkSession for the module (Spark start-up is slow). `spark.read.jdbc` of every
column type is compared with what pymysql reads from the same table (Spark takes the schema
from a zero-row `SELECT * FROM t WHERE 1=0`, so that result must carry full column metadata);
`df.write.jdbc` is checked in its three table-changing modes: overwrite that drops and
recreates the table with Spark's own MySQL DDL, append, and overwrite with truncate=true; and
in append and overwrite mode into a table that does not exist yet (Spark creates it when its
existence probe fails with MySQL's 1146, which ShaleDB sends for a missing table).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pymysql
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

CONNECTOR_JAR = Path("/usr/share/java/mariadb-java-client.jar")
DRIVER = "org.mariadb.jdbc.Driver"


@pytest.fixture(scope="module")
def spark():
    session = (
        SparkSession.builder.master("local[2]")
        .appName("shaledb-jdbc-tests")
        .config("spark.jars", str(CONNECTOR_JAR))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()


def jdbc_url(server, db: str) -> str:
    return f"jdbc:mysql://127.0.0.1:{server.port}/{db}"


PROPS = {"user": "root", "password": "", "driver": DRIVER}

ALL_TYPES_DDL = (
    "CREATE TABLE alltypes (id INT, flag BOOLEAN, ti TINYINT, si SMALLINT, bi BIGINT, f FLOAT, "
    "d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(38,10), dt DATE, ts DATETIME, ts6 DATETIME(6), "
    "c CHAR(5), v VARCHAR(20), s STRING, li LARGEINT) DUPLICATE KEY(id) "
    "DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES('replication_num'='1')"
)
ALL_TYPES_ROWS = (
    "(1, true, -128, 32767, 9000000000000000000, 1.5, -2.25e-300, 12345678.90, "
    "-1234567890.0123456789, '2024-02-29', '2024-02-29 01:02:03', '2024-02-29 01:02:03.123456', "
    "'ab', 'it''s', 'long \\n text', 170141183460469231731687303715884105727), "
    "(2, false, 127, -32768, -9000000000000000000, -0.25, 1e300, -0.01, 0.0000000001, "
    "'0001-01-01', '9999-12-31 23:59:59', '1970-01-01 00:00:00.000001', 'abcde', '', '日本語', "
    "-170141183460469231731687303715884105728), "
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL), "
    "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'é', NULL, NULL, "
    "-9223372036854775809)"
)
EXPECTED_SCHEMA = [
    ("id", T.IntegerType()),
    ("ti", T.ByteType()),
    ("si", T.ShortType()),
    ("bi", T.LongType()),
    ("f", T.FloatType()),
    ("d", T.DoubleType()),
    ("dec1", T.DecimalType(10, 2)),
    ("dec2", T.DecimalType(38, 10)),
    ("dt", T.DateType()),
    ("ts", T.TimestampNTZType()),
    ("ts6", T.TimestampNTZType()),
    ("c", T.StringType()),
    ("v", T.StringType()),
    ("s", T.StringType()),
    # LARGEINT: a text column (server/results.py), exact digits beyond BIGINT, unpadded.
    ("li", T.StringType()),
]
CHAR_LENGTH = 5  # of column c


def test_read_every_column_type(server, spark, db, db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute(ALL_TYPES_DDL)
        cur.execute(f"INSERT INTO alltypes VALUES {ALL_TYPES_ROWS}")
        cur.execute("SELECT * FROM alltypes ORDER BY id")
        names = [d[0] for d in cur.description]
        reference = cur.fetchall()
    df = spark.read.jdbc(
        jdbc_url(server, db), "alltypes", properties={**PROPS, "preferTimestampNTZ": "true"}
    )
    schema = {f.name: f.dataType for f in df.schema.fields}
    assert [f.name for f in df.schema.fields] == names
    assert [(n, schema[n]) for n, _ in EXPECTED_SCHEMA] == EXPECTED_SCHEMA
    rows = [r.asDict() for r in df.orderBy("id").collect()]
    assert len(rows) == len(reference)
    # LARGEINT values beyond BIGINT's range arrive as their exact digits.
    assert [r["li"] for r in rows] == [str(2**127 - 1), str(-(2**127)), None, str(-(2**63) - 1)]
    for got, want in zip(rows, reference):
        want = dict(zip(names, want))
        # CHAR(5): Spark's read-side char padding pads to the column's 5 characters, as it
        # does for a MySQL CHAR(5) (not to 85, what a 255-byte announcement would mean); the
        # stored value is unpadded.
        want_c = want.pop("c")
        assert got.pop("c") == (None if want_c is None else want_c.ljust(CHAR_LENGTH))
        # BOOLEAN arrives as TINYINT (0/1), as pymysql reads it too.
        assert got.pop("flag") == want.pop("flag")
        assert got == want

    # The schema alone (Spark's `WHERE 1=0` probe) of an empty table: same column types.
    with db_conn.cursor() as cur:
        cur.execute(ALL_TYPES_DDL.replace("alltypes", "empty_types"))
    empty = spark.read.jdbc(
        jdbc_url(server, db), "empty_types", properties={**PROPS, "preferTimestampNTZ": "true"}
    )
    assert empty.schema == df.schema
    assert empty.count() == 0

    # A pushed-down filter and a query instead of a table.
    subset = spark.read.jdbc(
        jdbc_url(server, db), "(SELECT id, v FROM alltypes WHERE id < 3) q", properties=PROPS
    )
    assert sorted(r.id for r in subset.filter("v <> ''").collect()) == [1]


def _frame(spark):
    data = [
        (
            1,
            "a",
            1.5,
            True,
            0.25,
            10**15,
            Decimal("12.34"),
            dt.date(2024, 1, 2),
            "2024-01-02 03:04:05",
        ),
        (2, 'b\'c "q"', None, False, None, -7, None, None, None),
        (
            3,
            "日本",
            -2.5e-8,
            None,
            -1.0,
            None,
            Decimal("-0.01"),
            dt.date(1999, 12, 31),
            "1999-12-31 23:59:59",
        ),
    ]
    schema = (
        "id INT, name STRING, amount DOUBLE, flag BOOLEAN, ratio FLOAT, big BIGINT, "
        "price DECIMAL(12,2), day DATE, ts_text STRING"
    )
    df = spark.createDataFrame(data, schema)
    return df.selectExpr("*", "to_timestamp(ts_text) AS ts").drop("ts_text")


def _expected(copies: int) -> list[tuple[object, ...]]:
    base = [
        (
            1,
            "a",
            1.5,
            1,
            0.25,
            10**15,
            Decimal("12.34"),
            dt.date(2024, 1, 2),
            dt.datetime(2024, 1, 2, 3, 4, 5),
        ),
        (2, 'b\'c "q"', None, 0, None, -7, None, None, None),
        (
            3,
            "日本",
            -2.5e-8,
            None,
            -1.0,
            None,
            Decimal("-0.01"),
            dt.date(1999, 12, 31),
            dt.datetime(1999, 12, 31, 23, 59, 59),
        ),
    ]
    return sorted(base * copies, key=lambda r: r[0])


_COLUMNS = ("id", "name", "amount", "flag", "ratio", "big", "price", "day", "ts")


def _stored(db_conn, table: str = "target") -> list[tuple[object, ...]]:
    with db_conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(_COLUMNS)} FROM {table} ORDER BY id")
        return list(cur.fetchall())


def _create_table(db_conn, table: str = "target") -> str:
    with db_conn.cursor() as cur:
        cur.execute(f"SHOW CREATE TABLE {table}")
        return cur.fetchone()[1]


def test_write_overwrite_append_truncate(server, spark, db, db_conn) -> None:
    url = jdbc_url(server, db)
    props = {**PROPS, "rewriteBatchedStatements": "true", "batchsize": "2"}
    with db_conn.cursor() as cur:  # an older table of another shape, to be replaced
        cur.execute(
            "CREATE TABLE target (x INT) DISTRIBUTED BY HASH(x) BUCKETS 1 "
            "PROPERTIES('replication_num'='1')"
        )
        cur.execute("INSERT INTO target VALUES (42)")
    df = _frame(spark)

    # overwrite: Spark drops the table and recreates it with its MySQL DDL (INTEGER, LONGTEXT,
    # DOUBLE PRECISION, BIT(1), FLOAT, BIGINT, DECIMAL, DATE, TIMESTAMP), mapped to Doris types
    # in a DUPLICATE table with Doris' default key and distribution.
    df.write.jdbc(url, "target", mode="overwrite", properties=props)
    ddl = _create_table(db_conn)
    for column in (
        "`id` int NULL",
        "`name` text NULL",
        "`amount` double NULL",
        "`flag` boolean NULL",
        "`big` bigint NULL",
        "`price` decimal(12,2) NULL",
        "`day` date NULL",
        "`ts` datetime NULL",
    ):
        assert column in ddl, ddl
    assert "DUPLICATE KEY(`id`)" in ddl and "DISTRIBUTED BY RANDOM BUCKETS AUTO" in ddl
    ratio_type = next(line for line in ddl.splitlines() if "`ratio`" in line)
    assert ratio_type.split()[1] in ("float", "double")
    assert _stored(db_conn) == _expected(1)

    # append: the rows once more, same table.
    df.write.jdbc(url, "target", mode="append", properties=props)
    assert _stored(db_conn) == _expected(2)
    assert _create_table(db_conn) == ddl

    # overwrite + truncate=true: TRUNCATE TABLE keeps the definition; the rows once.
    df.write.jdbc(url, "target", mode="overwrite", properties={**props, "truncate": "true"})
    assert _create_table(db_conn) == ddl
    assert _stored(db_conn) == _expected(1)

    # And Spark reads back what it wrote.
    back = spark.read.jdbc(url, "target", properties={**PROPS, "preferTimestampNTZ": "true"})
    assert sorted(r.name for r in back.collect()) == sorted(r[1] for r in _expected(1))


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_write_creates_missing_table(server, spark, db, db_conn, mode: str) -> None:
    """Spark's existence probe of a table that is not there fails with 1146 (MySQL's code, which
    Spark's MySQL dialect takes for "no such table"), so Spark creates the table with its own
    MySQL DDL and writes the rows, in append as in overwrite mode."""
    url = jdbc_url(server, db)
    table = f"new_{mode}"
    with db_conn.cursor() as cur, pytest.raises(pymysql.MySQLError) as ei:
        cur.execute(f"SELECT 1 FROM {table} WHERE 1 = 0")
    assert ei.value.args == (
        1146,
        f"errCode = 2, detailMessage = Table [{table}] does not exist in database [{db}].",
    )
    props = {**PROPS, "rewriteBatchedStatements": "true", "batchsize": "2"}
    _frame(spark).write.jdbc(url, table, mode=mode, properties=props)

    ddl = _create_table(db_conn, table)
    assert "`id` int NULL" in ddl and "`name` text NULL" in ddl, ddl
    assert "DUPLICATE KEY(`id`)" in ddl and "DISTRIBUTED BY RANDOM BUCKETS AUTO" in ddl
    assert _stored(db_conn, table) == _expected(1)

    # Spark reads back what it wrote: the frame's columns and rows (BOOLEAN comes back as
    # TINYINT 0/1, as pymysql reads it too).
    back = spark.read.jdbc(url, table, properties={**PROPS, "preferTimestampNTZ": "true"})
    assert [f.name for f in back.schema.fields] == list(_COLUMNS)
    assert sorted((tuple(r) for r in back.collect()), key=lambda r: r[0]) == _expected(1)

    # A second write in the same mode: append adds the rows again, overwrite replaces them.
    _frame(spark).write.jdbc(url, table, mode=mode, properties=props)
    assert _stored(db_conn, table) == _expected(2 if mode == "append" else 1)
