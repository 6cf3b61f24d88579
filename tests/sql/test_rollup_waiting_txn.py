"""ALTER TABLE ADD ROLLUP waits in WAITING_TXN for the loads that began before it (Doris
`RollupJobV2`), over the wire with a real concurrent INSERT held open at the debug point
`load_before_publish` (POST /api/debug_point/add/.., storage/faults.py):
- SHOW ALTER TABLE ROLLUP shows WAITING_TXN while the old load is open, also after a newer
  load (which writes the new rollup itself) has published; releasing the old load lets the job
  finish, and the rollup then answers exactly what the base index answers (no lost or doubled
  rows);
- CANCEL ALTER TABLE ROLLUP ends a waiting job;
- a kill -9 while the job waits: the held load dies with the process, the job resumes after
  the restart and finishes.
Each test runs its own server (debug points are process-wide and enabled by
SHALEDB_ENABLE_DEBUG_POINTS=1)."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support.http import authorized
from support.server import ServerProcess

DEBUG = {"SHALEDB_ENABLE_DEBUG_POINTS": "1"}
DDL = """CREATE TABLE t (k1 INT, k2 INT, s BIGINT SUM, mx INT MAX) AGGREGATE KEY(k1, k2)
    DISTRIBUTED BY HASH(k1) BUCKETS 3"""


def _debug_point(srv: ServerProcess, op: str, name: str = "load_before_publish",
                 query: str = "") -> None:
    req = authorized(
        f"http://127.0.0.1:{srv.http_port}/api/debug_point/{op}/{name}{query}", method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200


def _job(cur, rollup: str) -> dict:
    cur.execute("SHOW ALTER TABLE ROLLUP")
    names = [d[0] for d in cur.description]
    return next(dict(zip(names, r)) for r in cur.fetchall() if r[names.index("RollupIndexName")] == rollup)


def _poll_state(cur, rollup: str, want: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = _job(cur, rollup)
        if job["State"] == want:
            return job
        assert job["State"] not in ("FINISHED", "CANCELLED") or want in ("FINISHED", "CANCELLED"), job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def _rows(k0: int, n: int) -> list[tuple[int, int, int, int]]:
    return [((k0 + i) % 11, (k0 + i) % 4, k0 + i, (k0 * 7 + i) % 97) for i in range(n)]


def _insert_sql(rows: list[tuple[int, int, int, int]]) -> str:
    return "INSERT INTO t VALUES " + ", ".join(f"({a}, {b}, {c}, {d})" for a, b, c, d in rows)


def _expected(rows: list[tuple[int, int, int, int]]) -> list[tuple]:
    """SELECT k2, sum(s), max(mx) ... GROUP BY k2 computed in Python."""
    out: dict[int, list[int]] = {}
    for _, k2, s, mx in rows:
        cur = out.setdefault(k2, [0, mx])
        cur[0] += s
        cur[1] = max(cur[1], mx)
    return sorted((k, v[0], v[1]) for k, v in out.items())


QUERY = "SELECT k2, sum(s), max(mx) FROM t GROUP BY k2 ORDER BY k2"


def _held_insert(srv: ServerProcess, rows, errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            c = srv.connect("wt")
            with c.cursor() as cur:
                cur.execute(_insert_sql(rows))
            c.close()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors.append(e)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    srv.wait_for_stderr("DEBUG POINT load_before_publish reached", timeout=60)
    return th


def _setup(srv: ServerProcess, base_rows) -> None:
    conn = srv.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE wt")
        cur.execute("USE wt")
        cur.execute(DDL)
        cur.execute(_insert_sql(base_rows))
    conn.close()


def test_rollup_job_waits_for_an_open_load(tmp_path: Path) -> None:
    base, old, new = _rows(0, 120), _rows(1000, 80), _rows(5000, 30)
    with ServerProcess(tmp_path / "data", env=DEBUG) as srv:
        _setup(srv, base)
        _debug_point(srv, "add", query="?execute=1")  # stop only the next load
        errors: list[BaseException] = []
        held = _held_insert(srv, old, errors)
        conn = srv.connect("wt")
        cur = conn.cursor()
        cur.execute("ALTER TABLE t ADD ROLLUP r(k2, s, mx)")
        job = _poll_state(cur, "r", "WAITING_TXN")
        cur.execute(_insert_sql(new))  # began after the job: writes the rollup itself
        assert _job(cur, "r")["State"] == "WAITING_TXN"  # the old load still holds it
        cur.execute("SELECT count(*) FROM t")  # queries keep working meanwhile (base index)
        assert cur.fetchone()[0] == len({(a, b) for a, b, _, _ in base + new})
        _debug_point(srv, "remove")
        held.join(60)
        assert not errors
        job = _poll_state(cur, "r", "FINISHED")
        assert int(job["TransactionId"]) > 0
        cur.execute("EXPLAIN " + QUERY)
        plan = "\n".join(r[0] for r in cur.fetchall())
        assert "t(r), PREAGGREGATION: ON" in plan
        cur.execute(QUERY)
        with_rollup = [tuple(int(x) for x in r) for r in cur.fetchall()]
        cur.execute("SET disable_nereids_rules = 'CHOOSE_ROLLUP'")
        cur.execute(QUERY)
        base_index = [tuple(int(x) for x in r) for r in cur.fetchall()]
        assert with_rollup == base_index == _expected(base + old + new)
        conn.close()


def test_cancel_a_waiting_rollup_job(tmp_path: Path) -> None:
    base, old = _rows(0, 50), _rows(300, 20)
    with ServerProcess(tmp_path / "data", env=DEBUG) as srv:
        _setup(srv, base)
        _debug_point(srv, "add", query="?execute=1")
        errors: list[BaseException] = []
        held = _held_insert(srv, old, errors)
        conn = srv.connect("wt")
        cur = conn.cursor()
        cur.execute("ALTER TABLE t ADD ROLLUP r(k2, s, mx)")
        _poll_state(cur, "r", "WAITING_TXN")
        cur.execute("CANCEL ALTER TABLE ROLLUP FROM t")
        assert _job(cur, "r")["State"] == "CANCELLED"
        _debug_point(srv, "remove")
        held.join(60)
        assert not errors  # the load publishes to the base index
        cur.execute("DESC t ALL")
        assert {r[0] for r in cur.fetchall() if r[0]} == {"t"}
        cur.execute(QUERY)
        assert [tuple(int(x) for x in r) for r in cur.fetchall()] == _expected(base + old)
        conn.close()


def test_restart_while_waiting_txn(tmp_path: Path) -> None:
    data = tmp_path / "data"
    base, old = _rows(0, 90), _rows(700, 40)
    srv = ServerProcess(data, env=DEBUG).start()
    try:
        _setup(srv, base)
        _debug_point(srv, "add", query="?execute=1")
        errors: list[BaseException] = []
        held = _held_insert(srv, old, errors)
        conn = srv.connect("wt")
        cur = conn.cursor()
        cur.execute("ALTER TABLE t ADD ROLLUP r(k2, s, mx)")
        _poll_state(cur, "r", "WAITING_TXN")
        conn.close()
    finally:
        srv.kill()
    held.join(30)
    assert errors  # the held load died with the process
    with ServerProcess(data) as srv2:
        conn = srv2.connect("wt")
        cur = conn.cursor()
        _poll_state(cur, "r", "FINISHED")
        cur.execute("EXPLAIN " + QUERY)
        assert "t(r), PREAGGREGATION: ON" in "\n".join(r[0] for r in cur.fetchall())
        cur.execute(QUERY)
        assert [tuple(int(x) for x in r) for r in cur.fetchall()] == _expected(base)
        conn.close()


def test_debug_points_are_off_unless_enabled(server) -> None:
    """The shared server runs without SHALEDB_ENABLE_DEBUG_POINTS: the API refuses (Doris'
    message for `enable_debug_points = false`)."""
    with pytest.raises(urllib.error.HTTPError) as e:
        _debug_point(server, "add")
    assert e.value.code == 400
    assert b"Disable debug points" in e.value.read()
