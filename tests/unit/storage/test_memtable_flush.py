"""Memtables flush by size: a load writes many segments, bounded in memory, atomic, read back exact.

Every differential test runs one random plan (loads of several batches, delete versions in
between) against two engines: one whose loads flush a segment as soon as a tablet's memtable
holds `write_buffer_size` bytes (tiny here, so a load's rowset is OVERLAPPING: one sorted run
per segment) and one whose buffer never fills (one run per rowset, cut into several segments by
a small SEGMENT_ROWS). Reading both through `StorageEngine.read_tablet` must give the same rows
for DUPLICATE, AGGREGATE (SUM/MAX/MIN/REPLACE/REPLACE_IF_NOT_NULL, a rollup), and UNIQUE tables
with and without a sequence column, with keys repeated inside a load (so across flushes) and
across loads, and with predicates (value predicates must wait for the merge).
Real segment files, real catalog; nothing of ours is mocked.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.seeds import property_seeds
from support.tables import create_table
from test_models_merge import delete, read

from storage import rowset as rowset_mod
from storage.batch import Batch, Column
from storage.catalog import service as catalog_service
from storage.catalog.meta import DeleteCondition, RowsetMeta, TableMeta
from storage.compaction.config import CompactionConfig
from storage.engine import StorageEngine
from storage.errors import DorisError
from storage.predicates import ColumnPredicate
from storage.txn import LoadTxn

UNLIMITED = 1 << 40
SEEDS = property_seeds(tuple(range(8)))


@pytest.fixture(autouse=True)
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    # The unlimited engine's single run is cut into several segments of one NONOVERLAPPING
    # rowset, so both ways of cutting a rowset into segments are read back.
    monkeypatch.setattr(rowset_mod, "SEGMENT_ROWS", 3)


def new_engine(path: Path, write_buffer_size: int = UNLIMITED,
               load_limit: int = UNLIMITED) -> StorageEngine:
    engine = StorageEngine(path, backends=2, compaction=CompactionConfig(
        write_buffer_size=write_buffer_size, load_process_max_memory_limit_bytes=load_limit))
    if engine.catalog.get_database("db") is None:
        catalog_service.create_database(engine, "db", False)
    return engine


@pytest.fixture(params=[1, 200], ids=["flush-every-batch", "flush-by-200-bytes"])
def engines(request: pytest.FixtureRequest, tmp_path: Path
            ) -> Iterator[tuple[StorageEngine, StorageEngine]]:
    small = new_engine(tmp_path / "small", write_buffer_size=request.param)
    big = new_engine(tmp_path / "big")
    yield small, big
    small.close()
    big.close()


def create(engine: StorageEngine, ddl: str, name: str = "t") -> TableMeta:
    return create_table(engine, ddl, name)


def to_batch(table: TableMeta, rows: list[tuple]) -> Batch:
    cols = list(zip(*rows))
    return Batch(table.column_names, tuple(
        Column.from_physical(c.type, list(v)) for c, v in zip(table.columns, cols)))


def load(engine: StorageEngine, table: TableMeta, batches: list[list[tuple]]) -> None:
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    for rows in batches:
        txn.add_batch(to_batch(table, rows))
    txn.commit()


def data_rowsets(engine: StorageEngine, table: TableMeta) -> list[RowsetMeta]:
    return [r for t in engine.catalog.tablets(table.table_id)
            for r in engine.catalog.rowsets(t.tablet_id) if r.files]


def segment_files(root: Path) -> set[Path]:
    return set(root.glob("be/*/data/*/*.seg"))


# ---- random plans --------------------------------------------------------------------------
def maybe(rng: random.Random, value: object, null_share: float = 0.2) -> object:
    return None if rng.random() < null_share else value


def plan(rng: random.Random, row: Callable[[random.Random], tuple],
         deletes: list[list[DeleteCondition]]) -> list:
    """2..4 loads of 2..6 batches of 1..8 rows each, a delete version between some loads."""
    steps: list = []
    for i in range(rng.randint(2, 4)):
        if i and deletes and rng.random() < 0.4:
            steps.append(("delete", rng.choice(deletes)))
        batches = [[row(rng) for _ in range(rng.randint(1, 8))] for _ in range(rng.randint(2, 6))]
        steps.append(("load", batches))
    return steps


def run(engine: StorageEngine, table: TableMeta, steps: list) -> None:
    for kind, payload in steps:
        if kind == "load":
            load(engine, table, payload)
        else:
            delete(engine, table, payload)


def compare(small: StorageEngine, big: StorageEngine, ddl: str, steps: list,
            predicates: list[tuple[ColumnPredicate, ...]], index: str | None = None) -> None:
    t_small, t_big = create(small, ddl), create(big, ddl)
    run(small, t_small, steps)
    run(big, t_big, steps)
    want = read(big, t_big, index=index)
    assert want, "the plan loads rows"
    assert read(small, t_small, index=index) == want
    assert read(small, t_small, index=index, batch_size=1) == want
    for preds in predicates:
        assert read(small, t_small, index=index, predicates=preds) == \
            read(big, t_big, index=index, predicates=preds)
    # the tiny buffer really wrote OVERLAPPING rowsets (a one-byte one does whenever a load sends
    # one tablet rows in two batches: so far for every seed), the unlimited one never did
    overlapping = [r for r in data_rowsets(small, t_small) if r.segments_overlap]
    assert overlapping or small.compaction_config.write_buffer_size > 1
    assert all(r.num_segments > 1 and r.compaction_score == r.num_segments for r in overlapping)
    assert not any(r.segments_overlap for r in data_rowsets(big, t_big))


# ---- DUPLICATE -----------------------------------------------------------------------------
DUP = """CREATE TABLE {name} (k1 INT, k2 VARCHAR(8), v1 INT) DUPLICATE KEY(k1, k2)
DISTRIBUTED BY HASH(k2) BUCKETS 2"""


def dup_row(rng: random.Random) -> tuple:
    return (maybe(rng, rng.randint(0, 3)), maybe(rng, rng.choice(["", "a", "b", "é"])),
            maybe(rng, rng.randint(-5, 5)))


@pytest.mark.parametrize("seed", SEEDS)
def test_duplicate_reads_the_same(engines: tuple[StorageEngine, StorageEngine], seed: int) -> None:
    rng = random.Random(seed)
    deletes = [[DeleteCondition("k1", "=", (1,))], [DeleteCondition("v1", ">", (2,))]]
    compare(*engines, DUP, plan(rng, dup_row, deletes),
            [(ColumnPredicate("v1", ">=", (0,)),), (ColumnPredicate("k2", "=", ("a",)),)])


# ---- AGGREGATE -----------------------------------------------------------------------------
AGG = """CREATE TABLE {name} (k1 INT, k2 VARCHAR(8), s BIGINT SUM, mx INT MAX, mn INT MIN,
  r INT REPLACE, rn INT REPLACE_IF_NOT_NULL, smax VARCHAR(8) MAX)
AGGREGATE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 2 ROLLUP (r_k2 (k2, s, mx))"""


def agg_row(rng: random.Random) -> tuple:
    def v() -> object:
        return maybe(rng, rng.randint(-5, 5))
    return (maybe(rng, rng.randint(0, 2), 0.1), maybe(rng, rng.choice(["a", "b"]), 0.1),
            v(), v(), v(), v(), v(), maybe(rng, rng.choice(["", "x", "yy"])))


@pytest.mark.parametrize("seed", SEEDS)
def test_aggregate_reads_the_same(engines: tuple[StorageEngine, StorageEngine], seed: int) -> None:
    rng = random.Random(seed)
    # The rollup lacks k1, so deletes name k2 only (a delete naming a missing key is rejected).
    deletes = [[DeleteCondition("k2", "=", ("a",))], [DeleteCondition("k2", "is_null")]]
    steps = plan(rng, agg_row, deletes)
    preds = [(ColumnPredicate("s", ">", (2,)),), (ColumnPredicate("k2", "=", ("b",)),),
             (ColumnPredicate("mn", "<", (0,)), ColumnPredicate("k1", "!=", (1,)))]
    compare(*engines, AGG, steps, preds)
    small, big = engines
    assert read(small, small.catalog.get_table("db", "t"), index="r_k2") == \
        read(big, big.catalog.get_table("db", "t"), index="r_k2")


# ---- UNIQUE --------------------------------------------------------------------------------
UNIQ = """CREATE TABLE {name} (k1 INT, k2 VARCHAR(8), v1 INT, v2 VARCHAR(8), sq INT)
UNIQUE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 2 {props}"""
SEQUENCE = 'PROPERTIES ("function_column.sequence_col" = "sq")'


def uniq_row(rng: random.Random) -> tuple:
    return (maybe(rng, rng.randint(0, 2), 0.1), maybe(rng, rng.choice(["a", "b"]), 0.1),
            maybe(rng, rng.randint(-5, 5)), maybe(rng, rng.choice(["p", "q"])),
            maybe(rng, rng.randint(0, 4)))


@pytest.mark.parametrize("sequence", [False, True], ids=["last-wins", "sequence-col"])
@pytest.mark.parametrize("seed", SEEDS)
def test_unique_reads_the_same(engines: tuple[StorageEngine, StorageEngine], seed: int,
                               sequence: bool) -> None:
    rng = random.Random(seed)
    # A delete naming a value column applies to the merged rows below it (_merge_by_epoch).
    deletes = [[DeleteCondition("k1", "=", (1,))], [DeleteCondition("v1", ">", (1,))],
               [DeleteCondition("v2", "=", ("p",)), DeleteCondition("k2", "=", ("a",))]]
    ddl = UNIQ.replace("{props}", SEQUENCE if sequence else "")
    compare(*engines, ddl, plan(rng, uniq_row, deletes),
            [(ColumnPredicate("v1", ">", (0,)),), (ColumnPredicate("k1", "in", (0, 2)),)])


# ---- one OVERLAPPING rowset is not "already merged" ----------------------------------------
def test_value_predicates_wait_for_the_merge_of_one_overlapping_rowset(tmp_path: Path) -> None:
    engine = new_engine(tmp_path, write_buffer_size=1)
    uniq = create(engine, UNIQ.replace("{props}", ""), "u")
    load(engine, uniq, [[(1, "a", 5, "old", None)], [(1, "a", 1, "new", None)]])
    (rs,) = data_rowsets(engine, uniq)
    assert rs.segments_overlap and rs.num_segments == 2
    assert read(engine, uniq) == [(1, "a", 1, "new", None)]
    # pushed into the first segment alone, v1 > 3 would revive the replaced row
    assert read(engine, uniq, predicates=(ColumnPredicate("v1", ">", (3,)),)) == []
    agg = create(engine, AGG, "g")
    row = (1, "a", 3, 3, 3, 3, 3, "x")
    load(engine, agg, [[row], [row]])
    assert read(engine, agg, columns=("k1", "s"), predicates=(ColumnPredicate("s", ">", (5,)),)
                ) == [(1, 6)]
    engine.close()


def test_segments_overlap_survives_a_restart(tmp_path: Path) -> None:
    engine = new_engine(tmp_path, write_buffer_size=1)
    table = create(engine, DUP)
    load(engine, table, [[(1, "a", 1)], [(2, "a", 2)], [(3, "a", 3)]])
    before = data_rowsets(engine, table)
    engine.close()
    reopened = new_engine(tmp_path)
    after = data_rowsets(reopened, reopened.catalog.get_table("db", "t"))
    assert after == before and any(r.segments_overlap for r in after)
    reopened.close()


# ---- bounded memory ------------------------------------------------------------------------
BIG = """CREATE TABLE {name} (k BIGINT, v BIGINT, s VARCHAR(16)) DUPLICATE KEY(k)
DISTRIBUTED BY HASH(k) BUCKETS 3"""


def big_rows(start: int, n: int) -> list[tuple]:
    return [(i, i * 7, f"row{i}") for i in range(start, start + n)]


@pytest.mark.parametrize("in_key_order", [False, True])
def test_a_writer_never_buffers_more_than_write_buffer_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_key_order: bool) -> None:
    """Rows out of key order: every flush is a run (an OVERLAPPING rowset). Rows in key order
    (streamed, storage/rowset.py): the flushes write consecutive segments of ONE run."""
    monkeypatch.setattr(rowset_mod, "STREAM_ROWS", 1 << 20)  # streaming on
    limit = 4096
    engine = new_engine(tmp_path, write_buffer_size=limit)
    table = create(engine, BIG)
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    loaded: list[tuple] = []
    for b in range(200):
        rows = big_rows(b * 50, 50) if in_key_order else big_rows((199 - b) * 50, 50)[::-1]
        txn.add_batch(to_batch(table, rows))
        loaded += rows
        writers = list(txn._writers.values())
        assert all(w.buffered_bytes < limit for w in writers)
        assert txn.buffered_bytes == sum(w.buffered_bytes for w in writers)
    flushes = [w.num_flushes for w in txn._writers.values()]
    assert all(f == 1 for f in flushes) if in_key_order else all(f > 10 for f in flushes)
    assert read(engine, table) == []  # flushed segments are not visible before the publish
    txn.commit()
    assert read(engine, table) == sorted(loaded, key=repr)
    rowsets = data_rowsets(engine, table)
    assert all(len(r.files) > 10 for r in rowsets)
    assert all(r.segments_overlap is not in_key_order for r in rowsets)
    engine.close()


def test_the_load_limit_flushes_the_largest_memtable(tmp_path: Path) -> None:
    engine = new_engine(tmp_path)  # no per-tablet flush: only the load limit flushes
    table = create(engine, BIG)
    db = engine.catalog.get_database("db")
    txn = LoadTxn(engine, db, table)
    big = to_batch(table, [(1, i, "x" * 16) for i in range(1000)])  # one tablet
    _, bucket_of_1 = txn.route(big)
    other = next(k for k in range(2, 100)
                 if txn.route(to_batch(table, [(k, 0, "")]))[1][0] != bucket_of_1[0])
    small = to_batch(table, [(other, i, "y") for i in range(100)])
    limit = big.nbytes + small.nbytes - 1
    engine.compaction_config = CompactionConfig(write_buffer_size=UNLIMITED,
                                                load_process_max_memory_limit_bytes=limit)
    txn = LoadTxn(engine, db, table)  # reads the limit when it begins
    txn.add_batch(big)
    assert txn.buffered_bytes == big.nbytes  # under the limit: nothing flushed
    txn.add_batch(small)  # over it now: the largest memtable (the big tablet's) is flushed
    txn._wait_flushes()  # ... on a background thread
    by_flushes = sorted(txn._writers.values(), key=lambda w: w.num_flushes)
    assert [w.num_flushes for w in by_flushes] == [0, 1]
    assert by_flushes[1].buffered_bytes == 0 and by_flushes[0].buffered_bytes == small.nbytes
    assert engine.txns.buffered_bytes() == small.nbytes <= limit
    # The limit counts every running load: a second load crossing it flushes its own memtable.
    second = LoadTxn(engine, db, table)
    second.add_batch(big)
    second._wait_flushes()
    (w,) = second._writers.values()
    assert w.num_flushes == 1 and engine.txns.buffered_bytes() == small.nbytes
    second.commit()
    txn.commit()
    assert len(read(engine, table)) == 2 * big.num_rows + small.num_rows
    engine.close()


# ---- atomicity -----------------------------------------------------------------------------
def test_an_aborted_load_publishes_nothing_and_deletes_its_segments(tmp_path: Path) -> None:
    engine = new_engine(tmp_path, write_buffer_size=1)
    table = create(engine, BIG)
    load(engine, table, [big_rows(0, 10), big_rows(10, 10)])
    committed, files = read(engine, table), segment_files(tmp_path)
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    for b in range(5):
        txn.add_batch(to_batch(table, big_rows(100 + b * 10, 10)))
    assert segment_files(tmp_path) - files  # flushed before the commit
    assert read(engine, table) == committed
    txn.abort()
    assert segment_files(tmp_path) == files
    assert read(engine, table) == committed
    engine.close()


def test_a_failed_commit_deletes_the_flushed_segments(tmp_path: Path) -> None:
    engine = new_engine(tmp_path, write_buffer_size=1)
    table = create(engine, BIG)
    db = engine.catalog.get_database("db")
    first = LoadTxn(engine, db, table, label="same")
    second = LoadTxn(engine, db, table, label="same")  # both begin before either publishes
    for txn in (first, second):
        txn.add_batch(to_batch(table, big_rows(0, 10)))
        txn.add_batch(to_batch(table, big_rows(10, 10)))
    first.commit()
    files = segment_files(tmp_path)
    with pytest.raises(DorisError, match="has already been used"):
        second.commit()
    # only the published segments are left: the second load's went with its failed commit
    published = {f for r in data_rowsets(engine, table) for f in r.files}
    assert {str(p.relative_to(p.parents[2])) for p in segment_files(tmp_path)} == published
    assert len(files) > len(published)
    assert read(engine, table) == sorted(big_rows(0, 20), key=repr)
    engine.close()


def test_a_load_dropped_without_abort_deletes_its_segments(tmp_path: Path) -> None:
    engine = new_engine(tmp_path, write_buffer_size=1)
    table = create(engine, BIG)
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    txn.add_batch(to_batch(table, big_rows(0, 10)))
    assert segment_files(tmp_path)
    del txn  # an error elsewhere in the statement dropped it
    gc.collect()
    assert segment_files(tmp_path) == set()
    assert engine.txns.buffered_bytes() == 0
    engine.close()
