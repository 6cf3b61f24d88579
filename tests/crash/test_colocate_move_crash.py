"""kill -9 in the middle of ALTER TABLE t SET ("colocate_with" = ..), which moves tablets
between backends (storage/tablet_move.py): after restart the catalog shows either the old or
the new placement, every row is there, and the other placement's files are collected.

The server runs with a fault point that holds the move after the files are copied but before
the catalog switches (`colocate_move_before_commit`), or after the switch but before the old
copies are removed (`colocate_move_before_cleanup`); the test kills the process there.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from support.server import ServerProcess

T1 = """CREATE TABLE t1 (id INT, v VARCHAR(8)) DUPLICATE KEY(id)
    DISTRIBUTED BY HASH(id) BUCKETS 6 PROPERTIES ("colocate_with" = "g")"""
T2 = """CREATE TABLE t2 (id INT, v VARCHAR(8)) DUPLICATE KEY(id)
    PARTITION BY RANGE(id) (PARTITION p1 VALUES LESS THAN ("100"),
      PARTITION p2 VALUES LESS THAN MAXVALUE)
    DISTRIBUTED BY HASH(id) BUCKETS 6 ROLLUP (r_v(v, id))"""


def tablet_dirs(data: Path) -> set[tuple[str, str]]:
    """(backend id, tablet id) of every tablet directory holding files."""
    return {
        (d.parent.parent.name, d.name)
        for d in data.glob("be/*/data/*")
        if d.is_dir() and any(d.iterdir())
    }


def placement(srv: ServerProcess, tables: tuple[str, ...] = ("t1", "t2")) -> dict[str, str]:
    """Tablet id -> backend id of every tablet of the tables (all indexes)."""
    conn = srv.connect("movedb")
    try:
        with conn.cursor() as cur:
            out = {}
            for t in tables:
                cur.execute(f"SHOW TABLETS FROM {t}")
                out.update({str(r[0]): str(r[2]) for r in cur.fetchall()})
            return out
    finally:
        conn.close()


def snapshot(srv: ServerProcess) -> tuple:
    conn = srv.connect("movedb")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*), sum(id), min(v), max(v) FROM t2")
            totals = cur.fetchone()
            cur.execute("SELECT v, count(*) FROM t2 GROUP BY v ORDER BY v")  # the rollup r_v
            by_v = cur.fetchall()
            cur.execute("SELECT count(*) FROM t1 JOIN t2 ON t1.id = t2.id")
            joined = cur.fetchone()
        return totals, by_v, joined
    finally:
        conn.close()


@pytest.mark.parametrize("point", ["colocate_move_before_commit", "colocate_move_before_cleanup"])
def test_kill_9_during_colocate_move(tmp_path: Path, point: str) -> None:
    data = tmp_path / "data"
    with ServerProcess(data) as srv:
        conn = srv.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE movedb")
            cur.execute("USE movedb")
            cur.execute(T1)
            # one more tablet on the least loaded backend, so t2's buckets start elsewhere
            cur.execute("CREATE TABLE t0 (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
            cur.execute(T2)
            cur.execute("INSERT INTO t1 VALUES " + ", ".join(f"({i}, 'a{i % 7}')" for i in range(300)))
            for start in (0, 150):  # two versions per tablet
                cur.execute("INSERT INTO t2 VALUES " + ", ".join(
                    f"({i}, 'b{i % 5}')" for i in range(start, start + 150)))
        conn.close()
        before = snapshot(srv)
        old = placement(srv)
        t1_tablets = set(placement(srv, ("t1",)))
    old_dirs = tablet_dirs(data)
    assert {(be, t) for t, be in old.items()} >= old_dirs  # a clean start: no stray copies
    t1_backends = {be for t, be in old.items() if t in t1_tablets}
    assert len(t1_backends) == 3

    crashing = ServerProcess(data, env={"SHALEDB_FAULT_POINT": point}).start()
    errors: list[BaseException] = []

    def move() -> None:
        try:
            c = crashing.connect("movedb")
            with c.cursor() as cur:
                cur.execute('ALTER TABLE t2 SET ("colocate_with" = "g")')
        except BaseException as e:  # noqa: BLE001 - the connection dies with the server
            errors.append(e)

    mover = threading.Thread(target=move, daemon=True)
    mover.start()
    crashing.wait_for_stderr(f"FAULT POINT {point} reached", timeout=60)
    # both placements' files exist on disk at the fault point
    leftovers = tablet_dirs(data) - old_dirs
    assert leftovers, "the move copied tablets to other backends before the crash"
    crashing.kill()
    mover.join(timeout=30)
    assert errors, "the client saw the ALTER fail"

    with ServerProcess(data) as srv:
        now = placement(srv)
        assert snapshot(srv) == before
        moved = {t for t in old if now[t] != old[t]}
        if point == "colocate_move_before_commit":
            assert not moved  # the catalog never switched: the old placement
        else:
            assert moved  # the catalog switched: the new placement, all at once
            assert {t for _, t in leftovers} <= moved
        # only the catalog's placement is left on disk: the other copies were collected
        assert tablet_dirs(data) == {(now[t], t) for _, t in old_dirs}
        conn = srv.connect("movedb")
        with conn.cursor() as cur:  # the move can be (re)done and the table keeps working
            cur.execute('ALTER TABLE t2 SET ("colocate_with" = "g")')
            cur.execute("INSERT INTO t2 VALUES (1000, 'z')")
            cur.execute("SELECT count(*) FROM t2")
            assert cur.fetchone()[0] == before[0][0] + 1
        conn.close()
        final = placement(srv)
        on_disk = tablet_dirs(data)
        assert all(final.get(t) == be for be, t in on_disk)  # no copy off its backend
        assert all((final[t], t) in on_disk for _, t in old_dirs)
