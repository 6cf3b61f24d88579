"""kill -9 at each step of a compaction: after restart no row is lost or duplicated and no
orphan file is left (issue 11 point 8).

The server runs with a fault point (storage/faults.py) that holds the background compaction at
a chosen step: after its first output segment is written, after all of them are written and
before the catalog swap, or right after the swap (before the replaced inputs are retired). The
test kills the process there, restarts it on the same data dir with compaction off, and checks
the table's rows against what was committed, that every segment file on disk belongs to a
published rowset, and that the tablet holds either the inputs (before the swap) or the one
merged rowset (after it).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from support.server import ServerProcess

from storage.catalog.catalog import Catalog

DDL = ("CREATE TABLE t (k INT, v BIGINT SUM, s VARCHAR(10) REPLACE) AGGREGATE KEY(k) "
       "DISTRIBUTED BY HASH(k) BUCKETS 1")
LOADS = 8


def insert_sql(i: int) -> str:
    rows = ", ".join(f"({k}, {i * 10 + k}, 's{i}_{k}')" for k in range(i % 3, 40, 3))
    return f"INSERT INTO t VALUES {rows}"


def table_rows(srv: ServerProcess) -> list[tuple]:
    conn = srv.connect("crashdb")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT k, v, s FROM t ORDER BY k")
            return list(cur.fetchall())
    finally:
        conn.close()


def on_disk(data: Path) -> set[str]:
    return {f"data/{p.parent.name}/{p.name}" for p in data.glob("be/*/data/*/*") if p.is_file()}


def published(data: Path) -> tuple[set[str], list[tuple[int, int]]]:
    """(files of the catalog's rowsets, (start, end) versions of the data rowsets)."""
    cat = Catalog(data / "fe" / "catalog.db")
    try:
        rowsets = cat.all_rowsets()
        files = {f for r in rowsets for f in r.files}
        versions = sorted((r.start_version, r.end_version) for r in rowsets if r.files)
        return files, versions
    finally:
        cat.close()


@pytest.mark.parametrize("point", ["compaction_after_first_segment", "compaction_before_swap",
                                   "compaction_after_swap"])
def test_kill_9_during_compaction_loses_nothing(tmp_path: Path, point: str) -> None:
    data = tmp_path / "data"
    off = tmp_path / "off.toml"
    off.write_text("[compaction]\ndisable_auto_compaction = true\n")
    with ServerProcess(data, backends=1, extra_args=("--conf", str(off))) as srv:
        conn = srv.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE crashdb")
            cur.execute("USE crashdb")
            cur.execute(DDL)
            for i in range(LOADS):
                cur.execute(insert_sql(i))
        conn.close()
        committed = table_rows(srv)
    _, versions_before = published(data)
    assert len(versions_before) == LOADS and len(committed) == 40

    # Auto compaction on (the default conf): the producer picks the tablet's 8 small deltas
    # and the fault point stops the task at `point`.
    crashing = ServerProcess(data, backends=1, env={"SHALEDB_FAULT_POINT": point}).start()
    reader_errors: list[BaseException] = []

    def read_meanwhile() -> None:
        try:
            assert table_rows(crashing) == committed
        except BaseException as e:  # noqa: BLE001 - reported below unless the kill caused it
            reader_errors.append(e)

    crashing.wait_for_stderr(f"FAULT POINT {point} reached", timeout=120)
    reader = threading.Thread(target=read_meanwhile, daemon=True)
    reader.start()
    reader.join(timeout=60)
    assert not reader_errors, reader_errors  # a query during the compaction sees every row
    crashing.kill()

    with ServerProcess(data, backends=1, extra_args=("--conf", str(off))) as srv:
        assert table_rows(srv) == committed
        files, versions = published(data)
        assert on_disk(data) == files  # nothing orphaned: GC removed the loser of the crash
        if point == "compaction_after_swap":
            assert versions == [(2, LOADS + 1)]
        else:
            assert versions == versions_before
