"""kill -9 in the middle of a multi-tablet load: after restart the load is all-or-nothing.

The server runs with a fault point (storage/faults.py) that holds the load at a chosen step:
after some of its segment files are written, or after all are fsynced but before the catalog
publishes them. The test kills the process there, restarts it on the same data dir and checks
that committed data is complete, the crashed load invisible, its label free again, and no
orphan segment files remain.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from support.server import ServerProcess

DDL = (
    "CREATE TABLE t (dt DATE NOT NULL, k INT NOT NULL, v VARCHAR(20)) DUPLICATE KEY(dt, k) "
    "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
    "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 4"
)


def rows_sql(start: int, count: int) -> str:
    values = ", ".join(
        f"('2024-0{1 + i % 2}-{1 + i % 28:02d}', {i}, 'v{i}')" for i in range(start, start + count)
    )
    return f"INSERT INTO t VALUES {values}"


def segment_files(data_dir: Path) -> set[str]:
    return {str(p.relative_to(data_dir)) for p in data_dir.glob("be/*/data/*/*") if p.is_file()}


def snapshot(srv: ServerProcess) -> tuple:
    conn = srv.connect("crashdb")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*), sum(k), min(v), max(v) FROM t")
            totals = cur.fetchone()
            cur.execute("SHOW PARTITIONS FROM t")
            cols = [d[0] for d in cur.description]
            versions = sorted((r[cols.index("PartitionName")], r[cols.index("VisibleVersion")]) for r in cur.fetchall())
        return totals, versions
    finally:
        conn.close()


@pytest.mark.parametrize("point", ["load_after_first_rowset", "load_before_publish"])
def test_kill_9_during_load_is_all_or_nothing(tmp_path: Path, point: str) -> None:
    data = tmp_path / "data"
    with ServerProcess(data) as srv:
        conn = srv.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE crashdb")
            cur.execute("USE crashdb")
            cur.execute(DDL)
            cur.execute(rows_sql(0, 200))
        conn.close()
        committed = snapshot(srv)
    files_before = segment_files(data)
    assert committed[0][0] == 200 and files_before

    crashing = ServerProcess(data, env={"SHALEDB_FAULT_POINT": point}).start()
    errors: list[BaseException] = []

    def load() -> None:
        try:
            c = crashing.connect("crashdb")
            with c.cursor() as cur:
                cur.execute("INSERT INTO t WITH LABEL crash_label " + rows_sql(1000, 500)[len("INSERT INTO t "):])
        except BaseException as e:  # noqa: BLE001 - the connection dies with the server
            errors.append(e)

    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    crashing.wait_for_stderr(f"FAULT POINT {point} reached", timeout=120)
    if point == "load_before_publish":
        assert segment_files(data) - files_before, "the load wrote its files before the crash"
    crashing.kill()
    loader.join(timeout=30)
    assert errors, "the client saw the load fail"

    with ServerProcess(data) as srv:
        assert snapshot(srv) == committed
        assert segment_files(data) == files_before  # orphans of the crashed load were removed
        conn = srv.connect("crashdb")
        with conn.cursor() as cur:  # the label was never committed, so it can be used now
            cur.execute("INSERT INTO t WITH LABEL crash_label " + rows_sql(1000, 500)[len("INSERT INTO t "):])
            cur.execute("SELECT count(*) FROM t")
            assert cur.fetchone()[0] == 700
        conn.close()
