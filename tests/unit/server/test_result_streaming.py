"""Streamed text results and prepared (binary) results over a live server (`server` fixture).

Covers what the byte-level tests in test_result_encoding.py cannot: the sequence counter shared
with mysql-mimic's stream across the header, several batches (4 buckets) and the final EOF/OK,
as read by libmariadb (mysqlclient) and pymysql; and COM_STMT_PREPARE/EXECUTE, which goes
through `ShaleSession.handle_query` and mysql-mimic's binary protocol.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import MySQLdb
import MySQLdb.cursors
import pytest
from pymysql.constants import COMMAND

ROWS = 600  # > 256 row packets: the sequence id wraps


def _expected(i: int) -> tuple:
    if i % 10 == 3:
        return (i, None, None, None, None, None, None)
    return (
        i, i * 1_000_000_007 - 2**40, i / 8 - 3.5, "" if i % 10 == 5 else f"s{i}é",
        dt.date(2024, 1, 1) + dt.timedelta(days=i),
        dt.datetime(2024, 1, 1, 12, 0, 0, 123000) + dt.timedelta(seconds=i * 61),
        Decimal(i * 37 - 5000).scaleb(-2),
    )


def _literal(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, (str, dt.date)):
        return f"'{v}'"
    return str(v)


@pytest.fixture(scope="module")
def stream_db(server):
    name = "result_streaming_db"
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"USE {name}")
        cur.execute(
            "CREATE TABLE t (k INT, b BIGINT, d DOUBLE, s VARCHAR(20), dd DATE, ts DATETIME(3), "
            "m DECIMAL(10, 2)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4"
        )
        rows = ",".join("(" + ",".join(_literal(v) for v in _expected(i)) + ")" for i in range(ROWS))
        cur.execute(f"INSERT INTO t VALUES {rows}")
    yield name
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")


def test_mysqlclient_reads_streamed_rows(server, stream_db) -> None:
    conn = MySQLdb.connect(host="127.0.0.1", port=server.port, user="root", passwd="", db=stream_db,
                           charset="utf8mb4")
    try:
        for cursor_class in (MySQLdb.cursors.Cursor, MySQLdb.cursors.SSCursor):
            cur = conn.cursor(cursor_class)
            cur.execute("SELECT * FROM t")  # no ORDER BY: one batch per bucket
            assert sorted(cur.fetchall(), key=lambda r: r[0]) == [_expected(i) for i in range(ROWS)]
            cur.close()
        cur = conn.cursor()
        cur.execute("SELECT k FROM t WHERE k < 0")  # empty result after a large one
        assert cur.fetchall() == ()
        cur.execute("SELECT COUNT(*) FROM t")
        assert cur.fetchall() == ((ROWS,),)
    finally:
        conn.close()


def test_pymysql_reads_streamed_rows(server, stream_db) -> None:
    with server.connect(stream_db) as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM t")
        assert sorted(cur.fetchall(), key=lambda r: r[0]) == [_expected(i) for i in range(ROWS)]
        cur.execute("SELECT * FROM t ORDER BY k")
        assert list(cur.fetchall()) == [_expected(i) for i in range(ROWS)]
        cur.execute("SELECT s, k FROM t WHERE k = 5")
        assert cur.fetchall() == (("", 5),)


def _read_packets_until_eof(conn) -> list[bytes]:
    out = []
    while True:
        pkt = conn._read_packet()
        if pkt.is_eof_packet():
            return out
        out.append(pkt.get_all_data())


def test_prepared_statement_binary_result(server, stream_db) -> None:
    with server.connect(stream_db) as conn:
        conn._execute_command(COMMAND.COM_STMT_PREPARE, "SELECT k, s, d FROM t WHERE k > ? ORDER BY k")
        ok = conn._read_packet().get_all_data()
        assert ok[0] == 0
        stmt_id, cols, params = struct.unpack_from("<IHH", ok, 1)
        assert (cols, params) == (3, 1)  # result columns are described at PREPARE
        _read_packets_until_eof(conn)  # the parameter definition
        assert len(_read_packets_until_eof(conn)) == 3  # the result column definitions
        # EXECUTE: flags 0, iterations 1, null bitmap, new-params-bound 1, LONGLONG, value 590
        payload = struct.pack("<IBI", stmt_id, 0, 1) + b"\x00\x01" + b"\x08\x00" + struct.pack("<q", 590)
        conn._execute_command(COMMAND.COM_STMT_EXECUTE, payload)
        assert conn._read_packet().get_all_data() == b"\x03"  # three columns
        assert len(_read_packets_until_eof(conn)) == 3
        rows = []
        for raw in _read_packets_until_eof(conn):
            assert raw[0] == 0
            nulls = raw[1]  # null bitmap, column c at bit c + 2
            k = struct.unpack_from("<i", raw, 2)[0]
            pos = 6
            s = d = None
            if not nulls & 0b1000:
                n = raw[pos]
                s = raw[pos + 1: pos + 1 + n].decode()
                pos += 1 + n
            if not nulls & 0b10000:
                d = struct.unpack_from("<d", raw, pos)[0]
            rows.append((k, s, d))
        assert rows == [(e[0], e[3], e[2]) for e in map(_expected, range(591, ROWS))]
        with conn.cursor() as cur:  # the connection is still in step
            cur.execute("SELECT 1")
            assert cur.fetchall() == ((1,),)
