"""AUTO PARTITION across restarts: the partitions loads created survive a restart, and a load
killed (-9) after writing its files but before its publish leaves none of the partitions it
was creating, nor their files."""

from __future__ import annotations

import threading
from pathlib import Path

from support.server import ServerProcess

DDL = ("CREATE TABLE t (k DATE NOT NULL, v INT) DUPLICATE KEY(k) "
       "AUTO PARTITION BY RANGE (date_trunc(k, 'month')) () "
       "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ('replication_num' = '1')")


def segment_files(data_dir: Path) -> set[str]:
    return {str(p.relative_to(data_dir)) for p in data_dir.glob("be/*/data/**/*") if p.is_file()}


def state(srv: ServerProcess) -> tuple:
    with srv.connect("crashdb") as conn, conn.cursor() as cur:
        cur.execute("SHOW PARTITIONS FROM t")
        parts = sorted((r[1], r[6]) for r in cur.fetchall())
        cur.execute("SELECT count(*), sum(v) FROM t")
        return parts, cur.fetchone()


def test_partitions_survive_restart_and_a_killed_load_leaves_none(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ServerProcess(data) as srv:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE crashdb")
            cur.execute("USE crashdb")
            cur.execute(DDL)
            cur.execute("INSERT INTO t VALUES ('2024-01-10', 1), ('2024-02-10', 2)")
        before = state(srv)
    assert [n for n, _ in before[0]] == ["p20240101000000", "p20240201000000"]
    files_before = segment_files(data)

    crashing = ServerProcess(data, env={"SHALEDB_FAULT_POINT": "load_before_publish"}).start()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with crashing.connect("crashdb") as c, c.cursor() as cur:
                cur.execute("INSERT INTO t VALUES ('2024-01-11', 3), ('2024-07-01', 4)")
        except BaseException as e:  # noqa: BLE001 - the connection dies with the server
            errors.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    crashing.wait_for_stderr("FAULT POINT load_before_publish reached", timeout=120)
    assert segment_files(data) - files_before, "the load wrote its files before the crash"
    crashing.kill()
    worker.join(timeout=30)
    assert errors, "the client saw the load fail"

    with ServerProcess(data) as srv:
        assert state(srv) == before  # the restart kept the partitions, not the crashed ones
        assert segment_files(data) == files_before
        with srv.connect("crashdb") as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES ('2024-01-11', 3), ('2024-07-01', 4)")
        parts, counts = state(srv)
        assert [n for n, _ in parts] == ["p20240101000000", "p20240201000000",
                                         "p20240701000000"]
        assert counts == (4, 10)
