"""A LARGEINT SUM that leaves LARGEINT's range while storage aggregates it (an AGGREGATE KEY
table's memtable, a materialized view's memtable on load, a materialized view built over
existing rows) fails with Doris' overflow text and MySQL's out-of-range code (1690) in a real
error packet, never an internal error; nothing of the failed load becomes visible."""

from __future__ import annotations

import pymysql
import pytest

from support.alter_jobs import wait_alter_job

LARGEINT_MAX = 2**127 - 1
LARGEINT_MIN = -(2**127)
OVERFLOW = (f"Arithmetic overflow, convert failed from {LARGEINT_MAX + 10}, expected data is "
            f"[{LARGEINT_MIN}, {LARGEINT_MAX}]")
DDL_TAIL = "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num' = '1')"


def run(conn: pymysql.connections.Connection, sql: str) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def error_of(conn: pymysql.connections.Connection, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as ei:
        run(conn, sql)
    return ei.value.args[0], ei.value.args[1]


def view_job(conn: pymysql.connections.Connection, view: str) -> tuple[str, str]:
    """(State, Msg) of `view`'s build job once it ended (bounded wait)."""
    with conn.cursor() as cur:
        job = wait_alter_job(cur, view, kind="MATERIALIZED VIEW")
    return job["State"], job["Msg"]


def test_aggregate_key_sum_overflow_is_an_error_packet(db_conn) -> None:
    run(db_conn, f"CREATE TABLE agg (k INT, v LARGEINT SUM) AGGREGATE KEY(k) {DDL_TAIL}")
    code, text = error_of(db_conn, f"INSERT INTO agg VALUES (1, {LARGEINT_MAX}), (1, 10)")
    assert (code, text) == (1690, f"errCode = 2, detailMessage = {OVERFLOW}")
    assert run(db_conn, "SELECT count(*) FROM agg") == [(0,)]
    # the boundary itself still fits: a sum equal to the maximum loads
    run(db_conn, f"INSERT INTO agg VALUES (2, {LARGEINT_MAX - 1}), (2, 1), (3, {LARGEINT_MIN})")
    assert run(db_conn, "SELECT k, v FROM agg ORDER BY k") == [
        (2, str(LARGEINT_MAX)), (3, str(LARGEINT_MIN))]


def test_view_memtable_sum_overflow_on_load(db_conn) -> None:
    run(db_conn, f"CREATE TABLE base (k INT, v LARGEINT) DUPLICATE KEY(k) {DDL_TAIL}")
    run(db_conn, "CREATE MATERIALIZED VIEW sums AS SELECT k, SUM(v) FROM base GROUP BY k")
    assert view_job(db_conn, "sums")[0] == "FINISHED"
    code, text = error_of(db_conn, f"INSERT INTO base VALUES (1, {LARGEINT_MAX}), (1, 10)")
    assert (code, text) == (1690, f"errCode = 2, detailMessage = {OVERFLOW}")
    assert run(db_conn, "SELECT count(*) FROM base") == [(0,)]
    run(db_conn, "INSERT INTO base VALUES (1, 5), (1, 6)")  # the table still loads
    assert run(db_conn, "SELECT k, SUM(v) FROM base GROUP BY k") == [(1, "11")]


def test_view_build_over_overflowing_rows_is_cancelled_with_the_overflow(db_conn) -> None:
    run(db_conn, f"CREATE TABLE rows_in (k INT, v LARGEINT) DUPLICATE KEY(k) {DDL_TAIL}")
    run(db_conn, f"INSERT INTO rows_in VALUES (1, {LARGEINT_MAX}), (1, 10), (2, 3)")
    run(db_conn, "CREATE MATERIALIZED VIEW sums2 AS SELECT k, SUM(v) FROM rows_in GROUP BY k")
    assert view_job(db_conn, "sums2") == ("CANCELLED", OVERFLOW)
    assert run(db_conn, "SELECT count(*) FROM rows_in") == [(3,)]
