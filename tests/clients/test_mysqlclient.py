"""mysqlclient (MySQLdb, libmariadb underneath) against a live ShaleDB: connect, DDL, INSERT with
client-side parameters, SELECT with typed results (Decimal, date, datetime, None, LARGEINT),
the OK info string, and error codes."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import MySQLdb
import pytest

INFO_RE = re.compile(r"^\{'label':'insert_[0-9A-Za-z_-]+', 'status':'VISIBLE', 'txnId':'\d+'\}$")
LARGE_MAX = 2**127 - 1
LARGE_MIN = -(2**127)


def connect(server, db: str | None = None, **kw):
    params = {
        "host": "127.0.0.1",
        "port": server.port,
        "user": "root",
        "passwd": "",
        "connect_timeout": 30,
        "charset": "utf8mb4",
    }
    if db:
        params["db"] = db
    params.update(kw)
    return MySQLdb.connect(**params)


def fetch(conn, sql: str, args=None) -> list[tuple]:
    cur = conn.cursor()
    try:
        cur.execute(sql, args)
        return list(cur.fetchall())
    finally:
        cur.close()


def test_connect_with_library_defaults(server) -> None:
    # mysqlclient sends its own setup (autocommit off, character set) on connect
    conn = connect(server)
    try:
        assert fetch(conn, "SELECT 1") == [(1,)]
        assert fetch(conn, "SELECT DATABASE()") == [(None,)]
        assert conn.thread_id() == fetch(conn, "SELECT CONNECTION_ID()")[0][0]
    finally:
        conn.close()


def test_create_insert_select_flow(server, make_db) -> None:
    db = make_db("mysqlclient_flow")
    conn = connect(server, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute(f"USE `{db}`")
        cur.execute(
            "CREATE TABLE t (k INT NOT NULL, name VARCHAR(20), score INT) "
            "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2"
        )
        n = cur.execute("INSERT INTO t VALUES (1, 'a', 10), (2, 'b', NULL), (3, 'c', 30)")
        assert n == 3
        assert conn.affected_rows() == 3
        assert INFO_RE.match(conn.info() or ""), conn.info()
        cur.execute("SELECT k, name, score FROM t ORDER BY k")
        assert cur.fetchall() == ((1, "a", 10), (2, "b", None), (3, "c", 30))
        cur.execute("SELECT name, count(*), sum(score) FROM t GROUP BY name ORDER BY name")
        rows = cur.fetchall()
        assert [(r[0], r[1], None if r[2] is None else int(r[2])) for r in rows] == [
            ("a", 1, 10),
            ("b", 1, None),
            ("c", 1, 30),
        ]
        cur.close()
    finally:
        conn.close()


def test_types_round_trip_with_parameters(server, make_db) -> None:
    db = make_db("mysqlclient_types")
    conn = connect(server, db, autocommit=True)
    try:
        cur = conn.cursor()
        cur.execute(
            """CREATE TABLE typed (
                 k INT NOT NULL,
                 b BOOLEAN,
                 big BIGINT,
                 large LARGEINT,
                 d DECIMAL(20, 4),
                 f DOUBLE,
                 day DATE,
                 ts DATETIME,
                 ts3 DATETIME(3),
                 s VARCHAR(40)
               ) DUPLICATE KEY(k)
               DISTRIBUTED BY HASH(k) BUCKETS 1"""
        )
        rows = [
            (
                1,
                True,
                2**63 - 1,
                LARGE_MAX,
                Decimal("12345678.9012"),
                2.5,
                dt.date(2024, 2, 29),
                dt.datetime(2024, 2, 29, 23, 59, 58),
                dt.datetime(2024, 1, 2, 3, 4, 5, 678000),
                'it\'s "quoted" héllo',
            ),
            (
                2,
                False,
                -(2**63),
                LARGE_MIN,
                Decimal("-0.0001"),
                -0.125,
                dt.date(1970, 1, 1),
                dt.datetime(1970, 1, 1, 0, 0, 0),
                dt.datetime(1999, 12, 31, 23, 59, 59, 999000),
                "",
            ),
            (3, None, None, None, None, None, None, None, None, None),
        ]
        cur.executemany("INSERT INTO typed VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
        cur.execute("SELECT * FROM typed ORDER BY k")
        got = cur.fetchall()
        cur.close()
    finally:
        conn.close()

    assert len(got) == 3
    for want, have in zip(rows, got, strict=True):
        k, b, big, large, d, f, day, ts, ts3, s = have
        assert k == want[0]
        assert (None if b is None else int(b)) == (None if want[1] is None else int(want[1]))
        assert big == want[2] and (big is None or isinstance(big, int))
        # LARGEINT: the exact 128-bit value; clients may see it as int, Decimal or text
        if want[3] is None:
            assert large is None
        else:
            assert isinstance(large, (int, Decimal, str, bytes)), type(large)
            text = large.decode() if isinstance(large, bytes) else str(large)
            assert text == str(want[3])
            assert int(text) == want[3]
        assert d == want[4] and (d is None or isinstance(d, Decimal))
        if d is not None:
            assert d.as_tuple().exponent == -4, "DECIMAL(20,4) keeps its scale"
        assert f == want[5]
        assert day == want[6] and (day is None or type(day) is dt.date)
        assert ts == want[7] and (ts is None or isinstance(ts, dt.datetime))
        assert ts3 == want[8]
        assert s == want[9]


def test_errors_have_mysql_codes(server, make_db) -> None:
    db = make_db("mysqlclient_err")
    conn = connect(server, db, autocommit=True)
    try:
        with pytest.raises(MySQLdb.MySQLError) as ei:
            fetch(conn, "SELECT * FROM no_such_table")
        assert ei.value.args[0] == 1146
        assert ei.value.args[1] == (
            f"errCode = 2, detailMessage = Table [no_such_table] does not exist in database [{db}]."
        )
        with pytest.raises(MySQLdb.MySQLError) as ei:
            fetch(
                conn,
                "CREATE TABLE bad (k INT SUM, v INT SUM) AGGREGATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 1",
            )
        assert ei.value.args[0] == 1105
        assert "Key column can not set aggregation type: k" in ei.value.args[1]
        with pytest.raises(MySQLdb.MySQLError) as ei:
            conn.select_db("sqlt_no_such_db_xyz")
        assert ei.value.args[0] == 1049
        assert fetch(conn, "SELECT 1") == [(1,)]
    finally:
        conn.close()


def test_session_variables(server) -> None:
    conn = connect(server)
    try:
        fetch(conn, "SET query_timeout = 42")
        assert fetch(conn, "SELECT @@query_timeout") == [(42,)]
        fetch(conn, "SET disable_colocate_join = 'true'")
        assert fetch(conn, "SELECT @@disable_colocate_join") == [(1,)]
        rows = fetch(conn, "SHOW VARIABLES LIKE 'query_timeout'")
        assert [(r[0], str(r[1])) for r in rows] == [("query_timeout", "42")]
    finally:
        conn.close()
