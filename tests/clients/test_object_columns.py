"""BITMAP / HLL columns over the MySQL protocol (server/object_columns.py): NULL by default, as
Doris sends them, and their stored bytes (what bitmap_to_base64 / hll_to_base64 encode) in a
binary column with `SET return_object_data_as_binary = true`, through pymysql's text protocol,
mysql-connector's prepared statements and the short-circuit point lookup."""

from __future__ import annotations

import base64

import mysql.connector
import pymysql

ROWS = [(1, "1,2,3"), (2, "7"), (3, "")]


def _setup(cur) -> None:  # noqa: ANN001
    cur.execute("""CREATE TABLE objs (k INT NOT NULL, bm BITMAP BITMAP_UNION,
                   h HLL HLL_UNION, n BIGINT SUM)
                   AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2""")
    values = ", ".join(
        f"({k}, bitmap_from_string('{bits}'), hll_hash({k}), {k})" for k, bits in ROWS)
    cur.execute(f"INSERT INTO objs VALUES {values}")


def _expected_bytes(cur) -> dict[int, tuple[bytes, bytes]]:  # noqa: ANN001
    cur.execute("SELECT k, bitmap_to_base64(bm), hll_to_base64(h) FROM objs")
    return {k: (base64.b64decode(b), base64.b64decode(h)) for k, b, h in cur.fetchall()}


def test_object_columns_are_null_unless_asked_as_binary(server, db: str) -> None:
    with pymysql.connect(host="127.0.0.1", port=server.port, user="root", database=db,
                         autocommit=True) as conn, conn.cursor() as cur:
        _setup(cur)
        expected = _expected_bytes(cur)
        assert all(b and h for b, h in expected.values())
        cur.execute("SELECT k, bm, h, n FROM objs ORDER BY k")
        assert cur.fetchall() == tuple((k, None, None, k) for k, _ in ROWS)
        # the text forms are how a user reads them
        cur.execute("SELECT k, bitmap_to_string(bm) FROM objs ORDER BY k")
        assert cur.fetchall() == tuple((k, bits) for k, bits in ROWS)
        # a point lookup (short-circuit path once learned) hides them too
        for _ in range(3):
            cur.execute("SELECT * FROM objs WHERE k = 2")
            assert cur.fetchall() == ((2, None, None, 2),)

        cur.execute("SET return_object_data_as_binary = true")
        cur.execute("SELECT k, bm, h FROM objs ORDER BY k")
        got = cur.fetchall()
        assert [(k, bytes(b), bytes(h)) for k, b, h in got] == [
            (k, *expected[k]) for k, _ in ROWS]
        for _ in range(3):
            cur.execute("SELECT k, bm FROM objs WHERE k = 1")
            assert cur.fetchall() == ((1, expected[1][0]),)


def test_prepared_statements_follow_the_variable(server, db: str) -> None:
    with pymysql.connect(host="127.0.0.1", port=server.port, user="root", database=db,
                         autocommit=True) as conn, conn.cursor() as cur:
        _setup(cur)
        expected = _expected_bytes(cur)
    conn2 = mysql.connector.connect(host="127.0.0.1", port=server.port, user="root",
                                    database=db)
    try:
        cur2 = conn2.cursor(prepared=True)
        cur2.execute("SELECT k, bm, h FROM objs WHERE k = ?", (3,))
        assert cur2.fetchall() == [(3, None, None)]
        plain = conn2.cursor()
        plain.execute("SET return_object_data_as_binary = true")
        cur2.execute("SELECT k, bm, h FROM objs WHERE k = ?", (3,))
        ((k, b, h),) = cur2.fetchall()
        assert (k, bytes(b), bytes(h)) == (3, *expected[3])
    finally:
        conn2.close()
