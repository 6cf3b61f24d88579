"""Result metadata per Doris type, as drivers see it: type code, length, decimals, flags and
character set of every column, on results with rows and on zero-row results (Spark and
Connector/J read a table's schema from `SELECT * FROM t WHERE 1=0`).

The expected values are Doris 2.1's (`MysqlSerializer.writeField`: `PrimitiveType.toMysqlType`,
`getMysqlTypeLength`, `getMysqlDecimals`, `Type.getMysqlResultSetFieldCharsetIndex`, flags 0),
with documented deviations (server/results.py): STRING carries the text charset (33), not
binary (63), so drivers decode TEXT columns to str; VARCHAR and LARGEINT are VAR_STRING (253)
and CHAR(n) announces n x 3 bytes as MySQL does, so JDBC (and Spark) see VARCHAR, not a CHAR
that Spark pads with spaces, and CHAR(n) rather than CHAR(85)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import mysql.connector
import MySQLdb
import pytest

UTF8, BINARY = 33, 63
# column type -> (MySQL type code, column length, decimals, charset id), value, Python value
TYPES = [
    ("BOOLEAN", (1, 1, 0, BINARY), "true", 1),
    ("TINYINT", (1, 4, 0, BINARY), "-128", -128),
    ("SMALLINT", (2, 6, 0, BINARY), "32767", 32767),
    ("INT", (3, 11, 0, BINARY), "-2147483648", -2147483648),
    ("BIGINT", (8, 20, 0, BINARY), "9223372036854775807", 9223372036854775807),
    ("LARGEINT", (253, 255, 0, UTF8), "-170141183460469231731687303715884105728",
     "-170141183460469231731687303715884105728"),
    ("FLOAT", (4, 12, 31, BINARY), "1.5", 1.5),
    ("DOUBLE", (5, 22, 31, BINARY), "-2.25e100", -2.25e100),
    ("DECIMAL(10, 2)", (246, 12, 2, BINARY), "12345678.91", Decimal("12345678.91")),
    ("DECIMAL(27, 9)", (246, 29, 9, BINARY), "-123456789012345678.123456789",
     Decimal("-123456789012345678.123456789")),
    ("DECIMAL(5, 0)", (246, 6, 0, BINARY), "99999", Decimal("99999")),
    ("DATE", (10, 10, 0, BINARY), "'2024-02-29'", dt.date(2024, 2, 29)),
    ("DATETIME", (12, 19, 0, BINARY), "'2024-02-29 23:59:58'", dt.datetime(2024, 2, 29, 23, 59, 58)),
    ("DATETIME(3)", (12, 19, 3, BINARY), "'2024-02-29 23:59:58.125'",
     dt.datetime(2024, 2, 29, 23, 59, 58, 125000)),
    ("CHAR(5)", (254, 15, 0, UTF8), "'ab'", "ab"),  # 5 x utf8's 3 bytes, as MySQL announces
    ("VARCHAR(20)", (253, 255, 0, UTF8), "'héllo'", "héllo"),  # MySQL's VAR_STRING (see results.py)
    ("STRING", (252, 255, 0, UTF8), "'a longer text ✓'", "a longer text ✓"),
]


@pytest.fixture(scope="module")
def typed_table(server):
    from support.names import unique_db_name  # noqa: PLC0415

    db = unique_db_name("metadata")
    cols = ", ".join(f"c{i} {t}" for i, (t, *_rest) in enumerate(TYPES))
    values = ", ".join(v for _t, _m, v, _p in TYPES)
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.t (k INT, {cols}) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute(f"INSERT INTO {db}.t VALUES (1, {values})")
    yield db
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")


def _pymysql_fields(server, db: str, sql: str):
    conn = server.connect(db)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur._result.fields, cur.description, cur.fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("where", ["", " WHERE 1 = 0"], ids=["rows", "zero_rows"])
def test_pymysql_field_packets_per_type(server, typed_table, where: str) -> None:
    sql = "SELECT " + ", ".join(f"c{i}" for i in range(len(TYPES))) + f" FROM t{where}"
    fields, description, rows = _pymysql_fields(server, typed_table, sql)
    got = [(f.type_code, f.length, f.scale, f.charsetnr, f.flags) for f in fields]
    assert got == [(*meta, 0) for _t, meta, _v, _p in TYPES]
    # what pymysql reports to applications (DB-API description)
    assert [d[1] for d in description] == [m[0] for _t, m, _v, _p in TYPES]
    assert [d[5] for d in description] == [m[2] for _t, m, _v, _p in TYPES]
    assert all(d[6] for d in description)  # null_ok: Doris sends no NOT_NULL flag
    if where:
        assert rows == ()
    else:
        assert list(rows[0]) == [p for _t, _m, _v, p in TYPES]


@pytest.mark.parametrize("where", ["", " WHERE 1 = 0"], ids=["rows", "zero_rows"])
def test_mysqlclient_description_per_type(server, typed_table, where: str) -> None:
    sql = "SELECT " + ", ".join(f"c{i}" for i in range(len(TYPES))) + f" FROM t{where}"
    conn = MySQLdb.connect(host="127.0.0.1", port=server.port, user="root", database=typed_table)
    try:
        cur = conn.cursor()
        cur.execute(sql)
        description = cur.description
        rows = cur.fetchall()
    finally:
        conn.close()
    # (name, type_code, display_size, internal_size, precision, scale, null_ok)
    assert [(d[1], d[3], d[5]) for d in description] == [(m[0], m[1], m[2]) for _t, m, _v, _p in TYPES]
    if not where:
        # LARGEINT is a string column in Doris, so mysqlclient hands it over as text
        assert list(rows[0]) == [p for _t, _m, _v, p in TYPES]


@pytest.mark.parametrize("pure", [True, False], ids=["pure", "cext"])
def test_mysql_connector_description_and_values(server, typed_table, pure: bool) -> None:
    sql = "SELECT " + ", ".join(f"c{i}" for i in range(len(TYPES))) + " FROM t"
    conn = mysql.connector.connect(host="127.0.0.1", port=server.port, user="root",
                                   database=typed_table, use_pure=pure, ssl_disabled=True)
    try:
        cur = conn.cursor()
        cur.execute(sql)
        rows = cur.fetchall()
        description = cur.description
        cur.execute(sql + " WHERE 1 = 0")
        empty = cur.fetchall()
        empty_description = cur.description
    finally:
        conn.close()
    assert [d[1] for d in description] == [m[0] for _t, m, _v, _p in TYPES]
    assert [d[1] for d in empty_description] == [m[0] for _t, m, _v, _p in TYPES]
    assert empty == []
    expected = [p for _t, _m, _v, p in TYPES]
    got = list(rows[0])
    # Connector/Python reads FLOAT text as float and LARGEINT (a string column) as str
    assert got == expected


def test_show_results_are_varchar_columns(server, typed_table) -> None:
    fields, _d, rows = _pymysql_fields(server, typed_table, "SHOW TABLES")
    assert [(f.type_code, f.charsetnr) for f in fields] == [(253, UTF8)]  # VAR_STRING
    assert rows == (("t",),)
