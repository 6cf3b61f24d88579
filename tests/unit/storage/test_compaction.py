"""Compaction tasks on a real engine: merging per data model, the swap, stale rowsets for readers
pinned to older versions, delete versions, back-pressure and E-235, and the crash clean-up."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from sql.ddl import ddl_ops
from sql.ddl import specs as V
from sql.ddl.create_table import analyze_create_table
from sql.parser.dialect import parse_one
from storage import types as T
from storage.batch import Batch, Column
from storage.catalog import service as catalog_service
from storage.catalog.meta import DeleteCondition
from storage.compaction import policy, scheduler
from storage.compaction.config import CompactionConfig
from storage.compaction.merger import merge_rowsets, swap
from storage.compaction.scheduler import TooManyVersions, describe_rowset
from storage.delete import publish_delete
from storage.engine import StorageEngine
from storage.reader import ReadOptions
from storage.txn import LoadTxn

MODELS = {
    "dup": "CREATE TABLE t (k INT, v INT, s VARCHAR(20)) DUPLICATE KEY(k) "
           "DISTRIBUTED BY HASH(k) BUCKETS 1",
    "agg": "CREATE TABLE t (k INT, v INT SUM, s VARCHAR(20) REPLACE) AGGREGATE KEY(k) "
           "DISTRIBUTED BY HASH(k) BUCKETS 1",
    "uniq": "CREATE TABLE t (k INT, v INT, s VARCHAR(20)) UNIQUE KEY(k) "
            "DISTRIBUTED BY HASH(k) BUCKETS 1",
}


def engine_with(tmp_path: Path, sql: str, **cfg: object) -> StorageEngine:
    engine = StorageEngine(tmp_path, backends=1, compaction=replace(CompactionConfig(), **cfg))
    catalog_service.create_database(engine, "db", False)
    defn = analyze_create_table(V.describe_create_table(parse_one(sql)), 1)
    ddl_ops.create_table(engine, "db", defn)
    return engine


def load(engine: StorageEngine, rows: list[tuple[int, int | None, str | None]],
         batches: int = 1) -> None:
    table = engine.catalog.get_table("db", "t")
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    for part in (rows[i::batches] for i in range(batches)):
        txn.add_batch(Batch(("k", "v", "s"), (
            Column.from_physical(T.INT, [r[0] for r in part]),
            Column.from_physical(T.INT, [r[1] for r in part]),
            Column.from_physical(T.varchar(20),
                                 [None if r[2] is None else r[2].encode() for r in part]),
        )))
    txn.commit()


def tablet(engine: StorageEngine):
    table = engine.catalog.get_table("db", "t")
    return engine.catalog.tablets(table.table_id)[0]


def version(engine: StorageEngine) -> int:
    table = engine.catalog.get_table("db", "t")
    return engine.catalog.partitions(table.table_id)[0].visible_version


def read(engine: StorageEngine, at: int | None = None) -> list[tuple]:
    table = engine.catalog.get_table("db", "t")
    v = version(engine) if at is None else at
    rows: list[tuple] = []
    for b in engine.read_tablet(tablet(engine), v, ReadOptions(table.column_names)):
        rows += b.rows()
    return sorted(rows, key=repr)


def many_loads(engine: StorageEngine, n: int) -> None:
    for i in range(n):
        load(engine, [(i % 7, i, f"s{i}"), (100 + i, None, None), (i % 3, 1, f"x{i}")])


@pytest.mark.parametrize("model", sorted(MODELS))
def test_full_compaction_keeps_every_result(tmp_path: Path, model: str) -> None:
    engine = engine_with(tmp_path, MODELS[model])
    many_loads(engine, 12)
    before = read(engine)
    t = tablet(engine)
    assert len(engine.catalog.rowsets(t.tablet_id)) == 12
    assert engine.compaction.compact(t.tablet_id, "full")
    rowsets = engine.catalog.rowsets(t.tablet_id)
    assert len(rowsets) == 1
    assert (rowsets[0].start_version, rowsets[0].end_version) == (0, version(engine))
    assert not rowsets[0].segments_overlap
    assert read(engine) == before
    engine.close()


@pytest.mark.parametrize("model", sorted(MODELS))
def test_cumulative_compaction_merges_small_deltas(tmp_path: Path, model: str) -> None:
    engine = engine_with(tmp_path, MODELS[model])
    many_loads(engine, 8)
    before = read(engine)
    t = tablet(engine)
    manager = engine.compaction
    assert manager.compact(t.tablet_id, "cumulative")
    rowsets = engine.catalog.rowsets(t.tablet_id)
    assert len(rowsets) == 1 and rowsets[0].start_version == 2
    assert read(engine) == before
    # Fewer than cumulative_compaction_min_deltas small rowsets: nothing to do.
    many_loads(engine, 2)
    assert not manager.compact(t.tablet_id, "cumulative")
    engine.close()


def test_merge_follows_the_data_model(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["agg"])
    load(engine, [(1, 5, "a"), (2, 1, "b")])
    load(engine, [(1, 7, "c"), (2, None, None)])
    load(engine, [(1, None, "d")])
    t = tablet(engine)
    assert engine.compaction.compact(t.tablet_id, "full")
    out = engine.catalog.rowsets(t.tablet_id)
    assert out[0].num_rows == 2  # merged physically, not just at read time
    assert read(engine) == [(1, 12, "d"), (2, 1, None)]
    engine.close()


def test_duplicate_output_is_sorted_by_key(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["dup"])
    for i in range(6):
        load(engine, [(50 - i, i, None), (i, i, None)])
    t = tablet(engine)
    assert engine.compaction.compact(t.tablet_id, "full")
    table = engine.catalog.get_table("db", "t")
    keys = [r[0] for b in engine.read_tablet(t, version(engine), ReadOptions(table.column_names))
            for r in b.rows()]
    assert keys == sorted(keys) and len(keys) == 12
    engine.close()


@pytest.mark.parametrize("model", ["dup", "uniq"])
def test_base_compaction_drops_deleted_rows(tmp_path: Path, model: str) -> None:
    engine = engine_with(tmp_path, MODELS[model])
    many_loads(engine, 6)
    table = engine.catalog.get_table("db", "t")
    publish_delete(engine, engine.catalog.get_database("db"), table,
                   engine.catalog.partitions(table.table_id),
                   [DeleteCondition("k", ">=", (100,))], "k GE \"100\"")
    many_loads(engine, 2)  # rows loaded after the delete are not hidden by it
    before = read(engine)
    assert any(r[0] >= 100 for r in before)
    t = tablet(engine)
    assert engine.compaction.compact(t.tablet_id, "full")
    rowsets = engine.catalog.rowsets(t.tablet_id)
    assert len(rowsets) == 1 and not rowsets[0].delete_predicates
    assert rowsets[0].num_rows == len(before)  # deleted rows are physically gone
    assert read(engine) == before
    engine.close()


def test_cumulative_compaction_stops_at_a_delete_version(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["dup"])
    many_loads(engine, 6)
    table = engine.catalog.get_table("db", "t")
    publish_delete(engine, engine.catalog.get_database("db"), table,
                   engine.catalog.partitions(table.table_id),
                   [DeleteCondition("k", "=", (1,))], "k EQ \"1\"")
    delete_version = version(engine)
    many_loads(engine, 6)
    before = read(engine)
    t = tablet(engine)
    assert engine.compaction.compact(t.tablet_id, "cumulative")
    rowsets = engine.catalog.rowsets(t.tablet_id)
    # The delete version survives as a version of its own: cumulative compaction keeps it.
    assert any(r.delete_predicates and r.start_version == delete_version for r in rowsets)
    assert all(not (r.start_version < delete_version < r.end_version) for r in rowsets)
    assert read(engine) == before
    engine.close()


def test_reader_pinned_to_an_older_version_reads_stale_rowsets(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["uniq"], tablet_rowset_stale_sweep_time_sec=0)
    many_loads(engine, 5)
    old_version = version(engine)
    old_rows = read(engine)
    t = tablet(engine)
    manager = engine.compaction
    with engine.reading():
        many_loads(engine, 5)
        assert manager.compact(t.tablet_id, "full")
        many_loads(engine, 5)
        assert manager.compact(t.tablet_id, "full")  # a second level: output of an output
        assert len(engine.catalog.rowsets(t.tablet_id)) == 1
        assert read(engine, old_version) == old_rows
        assert manager.sweep_stale() == 0  # a reader that began before the swap still runs
    new_rows = read(engine)
    files = {p.name for p in tmp_path.glob("be/*/data/*/*.seg")}
    assert manager.sweep_stale() > 0
    left = {p.name for p in tmp_path.glob("be/*/data/*/*.seg")}
    assert left < files
    live = {f.rsplit("/", 1)[1] for r in engine.catalog.rowsets(t.tablet_id) for f in r.files}
    assert left == live
    assert read(engine) == new_rows
    engine.close()


def test_swap_refuses_inputs_that_changed(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["dup"])
    many_loads(engine, 6)
    t = tablet(engine)
    manager = engine.compaction
    task = manager.prepare(t, "full")
    assert task is not None
    merged = merge_rowsets(engine, t, task.inputs)
    assert merged is not None
    assert manager.compact(t.tablet_id, "cumulative")  # someone else merged them meanwhile
    before = read(engine)
    assert not swap(engine, t, task.inputs, merged.output)
    on_disk = {p.name for p in tmp_path.glob("be/*/data/*/*.seg")}
    assert not any(rel.rsplit("/", 1)[1] in on_disk for rel in merged.output.files)
    assert read(engine) == before
    engine.close()


def test_unswapped_output_is_collected_at_restart(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["agg"])
    many_loads(engine, 6)
    before = read(engine)
    t = tablet(engine)
    task = engine.compaction.prepare(t, "full")
    merged = merge_rowsets(engine, t, task.inputs)  # written, never swapped: a crash here
    engine.close()
    reopened = StorageEngine(tmp_path, backends=1)
    on_disk = {p.name for p in tmp_path.glob("be/*/data/*/*.seg")}
    assert not any(rel.rsplit("/", 1)[1] in on_disk for rel in merged.output.files)
    assert read(reopened) == before
    reopened.close()


def test_too_many_versions_fails_with_e235_when_compaction_is_off(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["dup"], max_tablet_version_num=6,
                         disable_auto_compaction=True)
    for i in range(6):
        load(engine, [(i, i, None)])
    with pytest.raises(TooManyVersions, match=r"\[E-235\]failed to init rowset builder. version "
                       r"count: 7, exceed limit: 6, tablet: \d+\. .*group_commit"):
        load(engine, [(9, 9, None)])
    assert len(read(engine)) == 6  # the failed load left nothing
    engine.close()


def test_back_pressure_compacts_before_the_limit(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["dup"], max_tablet_version_num=10,
                         load_back_pressure_version_threshold=50)
    for i in range(40):
        load(engine, [(i, i, None)])
    t = tablet(engine)
    manager = engine.compaction
    assert manager.version_count(t.tablet_id) <= 10
    assert manager.stats.back_pressure_waits > 0
    assert len(read(engine)) == 40
    engine.close()


def test_status_lists_rowsets_as_doris_prints_them(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["dup"])
    many_loads(engine, 3)
    t = tablet(engine)
    status = engine.compaction.status(t.tablet_id)
    assert status is not None
    assert status["rowsets"][0].startswith("[0-1] 0 DATA NONOVERLAPPING")
    assert status["rowsets"][1].startswith("[2-2] 1 DATA NONOVERLAPPING ")
    assert status["cumulative point"] == 2
    assert status["version count"] == 4
    rs = engine.catalog.rowsets(t.tablet_id)[0]
    assert describe_rowset(rs).endswith(("KB", " B"))
    engine.close()


def test_a_quiet_tablet_merges_its_leftover_deltas(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["dup"], cumulative_compaction_quiet_seconds=30)
    many_loads(engine, 3)  # fewer than cumulative_compaction_min_deltas
    t = tablet(engine)
    manager = engine.compaction
    rowsets = engine.catalog.rowsets(t.tablet_id)
    point = policy.calculate_cumulative_point(rowsets, -1, engine.compaction_config)
    newest = max(r.create_time for r in rowsets)
    assert manager._quiet_inputs(rowsets, point, newest + 5) == ()  # loads are still coming
    assert manager._quiet_inputs(rowsets, point, newest + 31) == tuple(rowsets)
    off = replace(engine.compaction_config, cumulative_compaction_quiet_seconds=0)
    manager.cfg = off
    assert manager._quiet_inputs(rowsets, point, newest + 3600) == ()
    engine.close()


@pytest.mark.parametrize("model", sorted(MODELS))
def test_overlapping_rowsets_compact_into_one_sorted_run(tmp_path: Path, model: str) -> None:
    """A load that flushed its memtable several times (OVERLAPPING) merges like separate ones."""
    engine = engine_with(tmp_path, MODELS[model], write_buffer_size=64)
    for i in range(3):
        load(engine, [(k * 7 % 23, k + i, f"s{k}") for k in range(40)], batches=4)
    t = tablet(engine)
    assert any(r.segments_overlap for r in engine.catalog.rowsets(t.tablet_id))
    before = read(engine)
    assert engine.compaction.compact(t.tablet_id, "full")
    (out,) = engine.catalog.rowsets(t.tablet_id)
    assert not out.segments_overlap
    assert read(engine) == before
    table = engine.catalog.get_table("db", "t")
    keys = [r[0] for b in engine.read_tablet(t, version(engine), ReadOptions(table.column_names))
            for r in b.rows()]
    assert keys == sorted(keys)
    engine.close()


def test_permits_bound_the_tasks_running_at_once(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, MODELS["dup"], total_permits_for_compaction_score=10)
    manager = engine.compaction
    held, second_in, release = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with manager._permits(8):
            held.set()
            release.wait(30)

    def second(n: int) -> None:
        with manager._permits(n):
            second_in.set()

    a = threading.Thread(target=first)
    a.start()
    assert held.wait(30)
    b = threading.Thread(target=second, args=(5,))  # 8 + 5 > 10: waits for the first
    b.start()
    assert not second_in.wait(0.3)
    release.set()
    assert second_in.wait(30)
    a.join()
    b.join()
    # A task needing more than all permits runs alone, once nothing else holds any.
    second_in.clear()
    c = threading.Thread(target=second, args=(50,))
    c.start()
    assert second_in.wait(30)
    c.join()
    engine.close()


def test_compaction_yields_to_running_queries(tmp_path: Path, monkeypatch) -> None:
    engine = engine_with(tmp_path, MODELS["dup"])
    slept: list[float] = []
    monkeypatch.setattr(scheduler.time, "sleep", slept.append)
    throttle = scheduler.Throttle(engine, share=0.25)
    throttle._since -= 0.01  # 10 ms of merging since the last batch
    throttle()
    assert slept == []  # no query running: full speed
    with engine.reading():
        throttle._since -= 0.01
        throttle()
    assert len(slept) == 1 and 0.025 <= slept[0] <= 0.2  # 3x the work at a 25% share
    engine.close()


def test_the_producer_merges_a_quiet_tablets_leftovers(tmp_path: Path) -> None:
    """End to end through the producer thread: three loads (below min_deltas, so the size
    policy keeps them) become one rowset once the tablet has been quiet for a second."""
    engine = engine_with(tmp_path, MODELS["agg"], cumulative_compaction_quiet_seconds=1,
                         generate_compaction_tasks_interval_ms=50)
    # Sizes a level apart each: the size policy's level rule drops every one of them, so the
    # tablet's cumulative score is 0 and only the quiet rule can merge them.
    for n in (6000, 900, 60):
        load(engine, [(k, k, f"v{k}") for k in range(n)])
    before = read(engine)
    t = tablet(engine)
    manager = engine.compaction
    assert manager.version_count(t.tablet_id) == 4
    assert manager._score(t)[0] == 0
    manager.start()
    assert manager.wait_versions([t.tablet_id], 2, timeout=60)
    assert manager.version_count(t.tablet_id) == 2  # the virtual [0-1] and one rowset
    assert read(engine) == before
    engine.close()


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_producer_merges_one_overlapping_rowset_of_a_quiet_tablet(
        tmp_path: Path, model: str) -> None:
    """One load flushed in several runs (a small write_buffer_size stands in for a big load's
    early / memory-limit flushes) leaves ONE overlapping rowset: score below min_deltas, so the
    size policy never picks it. Once the tablet is quiet the producer merges its runs into one
    non-overlapping rowset, with the same rows (incl. NULLs, duplicate keys, a delete version
    on top)."""
    engine = engine_with(tmp_path, MODELS[model], cumulative_compaction_quiet_seconds=1,
                         generate_compaction_tasks_interval_ms=50, write_buffer_size=4096)
    rows = [(k % 997, None if k % 7 == 0 else k, None if k % 5 == 0 else f"ü{k}")
            for k in range(3000)]
    load(engine, rows, batches=6)
    t = tablet(engine)
    manager = engine.compaction
    (rs,) = engine.catalog.rowsets(t.tablet_id)
    assert policy.is_overlapping(rs) and rs.num_segments >= 2
    assert manager._score(t)[0] < engine.compaction_config.cumulative_compaction_min_deltas
    before = read(engine)
    manager.start()
    with manager._cond:  # notified on every rowset change (as wait_versions is)
        manager._cond.wait_for(
            lambda: not policy.is_overlapping(engine.catalog.rowsets(t.tablet_id)[0]),
            timeout=60)
    (rs,) = engine.catalog.rowsets(t.tablet_id)
    assert not policy.is_overlapping(rs)
    assert read(engine) == before
    engine.close()


def test_a_tablet_with_an_overlapping_rowset_is_rechecked_when_it_turns_quiet(
        tmp_path: Path) -> None:
    """A producer round before the tablet is quiet must not park a one-rowset tablet for the
    60 s idle recheck: its overlapping rowset is looked at again once the tablet is quiet."""
    engine = engine_with(tmp_path, MODELS["dup"], cumulative_compaction_quiet_seconds=30,
                         write_buffer_size=4096)
    load(engine, [(k % 97, k, f"s{k}") for k in range(2000)], batches=4)
    t = tablet(engine)
    (rs,) = engine.catalog.rowsets(t.tablet_id)
    assert policy.is_overlapping(rs)
    manager = engine.compaction
    assert not manager._submit_auto(t, scheduler.CUMULATIVE)  # not quiet yet
    assert manager.state(t.tablet_id).idle_until[scheduler.CUMULATIVE] <= rs.create_time + 31
    engine.close()
