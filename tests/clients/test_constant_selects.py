"""Constant SELECTs answered on the event loop and kept by text per session
(server/statement_cache.py, server/session.py `_run_inline`): repeated executions give the same
rows and column metadata as the first; a prepared `SELECT ?` (whose text does not say its
values) is never answered from what an earlier execution returned."""

from __future__ import annotations

import mysql.connector


def _run(conn, sql: str) -> tuple[object, list[tuple[object, ...]]]:  # type: ignore[no-untyped-def]
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.description, list(cur.fetchall())


def test_repeated_constant_selects_keep_rows_and_metadata(conn) -> None:  # type: ignore[no-untyped-def]
    for sql, rows in [("SELECT 1", [(1,)]), ("SELECT 2", [(2,)]),
                      ("SELECT -1.5 AS x, 'it''s', NULL, TRUE", None),
                      ("select   1", [(1,)])]:
        first = _run(conn, sql)
        assert all(_run(conn, sql) == first for _ in range(3)), sql
        if rows is not None:
            assert first[1] == rows
    desc, rows = _run(conn, "SELECT -1.5 AS x, 'it''s', NULL, TRUE")
    assert desc[0][0] == "x" and rows[0][1] == "it's" and rows[0][2] is None


def test_constant_select_follows_the_session_options(conn) -> None:  # type: ignore[no-untyped-def]
    assert _run(conn, "SELECT 1")[1] == [(1,)]
    _run(conn, "SET query_timeout = 77")  # new query options: the kept row is not reused blindly
    assert _run(conn, "SELECT 1")[1] == [(1,)]
    assert _run(conn, "SELECT @@query_timeout")[1] == [(77,)]  # variables are never kept


def test_prepared_constant_select_binds_every_execution(server) -> None:  # type: ignore[no-untyped-def]
    c = mysql.connector.connect(host="127.0.0.1", port=server.port, user="root", password="",
                                autocommit=True)
    try:
        cur = c.cursor(prepared=True)
        for value in (1, 2, 3, "x", 2):
            cur.execute("SELECT ?", (value,))
            assert [tuple(r) for r in cur.fetchall()] == [(value,)]
    finally:
        c.close()
