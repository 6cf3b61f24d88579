"""KILL QUERY and query_timeout stop a long-running aggregation (real work, not SLEEP) promptly,
through the live server; the connection survives and the next query runs normally."""

from __future__ import annotations

import threading
import time

import pymysql
import pytest

ROWS_LOG2 = 17  # 131072 rows in 8 tablets (about 16K rows, one batch, per tablet)
TERMS = 12  # string casts per row: the GROUP BY key is deliberately expensive to compute
MIN_SECONDS = 2.0  # the uninterrupted query must run at least this long (TERMS doubles until)


def _run(conn, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def,type-arg]
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _long_query(terms_count: int) -> str:
    terms = ", '/', ".join(f"cast(k * {i} + v AS STRING)" for i in range(1, terms_count + 1))
    return (f"SELECT concat({terms}) AS g, count(*), sum(v), max(k) FROM big "
            "GROUP BY g ORDER BY g LIMIT 1")


@pytest.fixture
def big_db(server, db: str) -> str:  # type: ignore[no-untyped-def]
    with server.connect(db) as c:
        _run(c, "CREATE TABLE big (k BIGINT NOT NULL, v BIGINT) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 8")
        _run(c, "INSERT INTO big VALUES (0, 1), (1, 2)")
        for p in range(1, ROWS_LOG2):
            _run(c, f"INSERT INTO big SELECT k + {1 << p}, v + k FROM big")
    return db


def _calibrate(conn) -> tuple[str, float]:  # type: ignore[no-untyped-def]
    """(query, seconds it runs uninterrupted): more terms until it runs MIN_SECONDS."""
    terms = TERMS
    while True:
        query = _long_query(terms)
        t0 = time.monotonic()
        rows = _run(conn, query)
        seconds = time.monotonic() - t0
        assert len(rows) == 1 and rows[0][1] == 1
        if seconds >= MIN_SECONDS or terms >= 8 * TERMS:
            return query, seconds
        terms *= 2


def test_kill_and_timeout_stop_long_aggregation(  # type: ignore[no-untyped-def]
        server, big_db: str) -> None:
    with server.connect(big_db) as c:
        query, full = _calibrate(c)
    assert full >= 1.5, f"the long query takes only {full:.2f}s"
    _check_kill(server, big_db, query, full)
    _check_timeout(server, big_db, query, full)


def _check_kill(server, big_db: str, query: str,  # type: ignore[no-untyped-def]
                full: float) -> None:
    victim = server.connect(big_db)
    outcome: dict[str, object] = {}
    done = threading.Event()

    def run_victim() -> None:
        t0 = time.monotonic()
        try:
            _run(victim, query)
            outcome["result"] = "completed"
        except pymysql.MySQLError as e:
            outcome["result"] = "error"
            outcome["code"] = e.args[0]
        outcome["elapsed"] = time.monotonic() - t0
        done.set()

    t = threading.Thread(target=run_victim, name="kill-long-aggregation")
    t.start()
    try:
        with server.connect() as killer:
            # KILL repeatedly until the victim reports its end: a KILL that lands before the
            # statement starts has nothing to cancel, the next one does. Bounded by time, not
            # by a count: on a loaded machine the statement may take seconds to start running.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                _run(killer, f"KILL QUERY {victim.thread_id()}")
                if done.wait(0.1):
                    break
        assert done.wait(30), "victim still running"
        assert outcome["result"] == "error", outcome
        assert _run(victim, "SELECT count(*) FROM big") == [(1 << ROWS_LOG2,)]
    finally:
        t.join(60)
        victim.close()


def _check_timeout(server, big_db: str, query: str,  # type: ignore[no-untyped-def]
                   full: float) -> None:
    with server.connect(big_db) as c:
        _run(c, "SET query_timeout = 1")
        with pytest.raises(pymysql.MySQLError) as err:
            _run(c, query)
        assert err.value.args[0] == 1105
        # Only the executor's own cancel check turns into this error: a query that ignored the
        # token would have returned its row instead (the timer cannot interrupt it otherwise).
        assert "Query exceeded time limit of 1 seconds" in err.value.args[1]
        _run(c, "SET query_timeout = 900")
        assert _run(c, "SELECT count(*) FROM big") == [(1 << ROWS_LOG2,)]
