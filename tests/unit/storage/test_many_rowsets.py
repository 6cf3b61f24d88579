"""Many small rowsets stay cheap to read: segment metadata is cached (and forgotten with the
files), rowsets the zone maps exclude are skipped without changing any result, and the merge of
many small runs equals the one-`combine` definition of merge-on-read.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from segment_data import value_strategy
from support.seeds import property_seeds
from support.tables import create_table

import storage.reader as reader_mod
import storage.segment.reader as segment_reader_mod
from storage import types as T
from storage.batch import Batch, Column
from storage.catalog.meta import AggType, DeleteCondition, KeysType, TableMeta
from storage.delete import publish_delete
from storage.engine import StorageEngine
from storage.indexes.zone_map import NotIndexable, index_value
from storage.merge import MergeSpec, combine, merge_runs
from storage.page_cache import PageCache
from storage.predicates import ColumnPredicate, Disjunction, ReadOptions
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, write_segment
from storage.segment.encoding import layout_of
from storage.segment.meta_cache import SEGMENT_META_CACHE, SegmentMetaCache
from storage.segment.prune import ZonePruner

TYPES = {"k": T.BIGINT, "v": T.BIGINT}


def _segment(path: Path, lo: int, n: int = 100) -> None:
    k = np.arange(lo, lo + n, dtype=np.int64)
    write_segment(path, Batch(("k", "v"), (Column(T.BIGINT, k), Column(T.BIGINT, k * 3))),
                  ["k"], 1)


def _read(path: Path, preds: tuple[ColumnPredicate, ...] = ()) -> list[tuple]:
    with SegmentReader(path, TYPES) as r:
        return [row for b in r.read(["k", "v"], preds) for row in b.rows()]


# ---- (a) the metadata cache -------------------------------------------------------------------
def test_second_open_hits_the_metadata_cache(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.seg"
    _segment(path, 0)
    parses = []
    real = segment_reader_mod.read_footer
    monkeypatch.setattr(segment_reader_mod, "read_footer",
                        lambda buf: parses.append(1) or real(buf))
    preds = (ColumnPredicate("k", ">=", (10,)), ColumnPredicate("k", "<", (20,)))
    first = _read(path, preds)
    with SegmentReader(path, TYPES) as r:
        meta = r.meta
    assert len(parses) == 1 and "k" in meta.zone_maps and "k" in meta.ordinals
    hits = SEGMENT_META_CACHE.hits
    zone_map, ordinal = meta.zone_maps["k"], meta.ordinals["k"]
    assert _read(path, preds) == first == [(i, 3 * i) for i in range(10, 20)]
    assert len(parses) == 1  # no footer parsed again
    assert SEGMENT_META_CACHE.hits > hits
    with SegmentReader(path, TYPES) as r:  # the same parsed indexes, not new ones
        assert r.meta is meta and r.zone_map(r.column("k")) is zone_map
        assert r.ordinal(r.column("k")) is ordinal


def test_a_file_rewritten_in_place_is_a_new_entry(tmp_path: Path) -> None:
    path = tmp_path / "b.seg"
    _segment(path, 0)
    assert _read(path)[0] == (0, 0)
    _segment(path, 1000, 50)  # another version of the file at the same path
    assert _read(path) == [(i, 3 * i) for i in range(1000, 1050)]
    assert SEGMENT_META_CACHE.latest(str(path)).num_rows == 50  # type: ignore[union-attr]


def test_deleted_files_are_forgotten(tmp_path: Path) -> None:
    tablet = tmp_path / "tablet"
    tablet.mkdir()
    keep, gone = tmp_path / "keep.seg", tablet / "gone.seg"
    _segment(keep, 0)
    _segment(gone, 0)
    _read(keep), _read(gone)
    assert SEGMENT_META_CACHE.latest(str(gone)) is not None
    SEGMENT_META_CACHE.forget_files([tablet])  # a directory: every file under it
    assert SEGMENT_META_CACHE.latest(str(gone)) is None
    assert SEGMENT_META_CACHE.latest(str(keep)) is not None


def test_engine_forgets_the_files_of_removed_tablets(tmp_path: Path) -> None:
    engine = StorageEngine(tmp_path / "data", backends=1)
    try:
        table = _create(engine, "CREATE TABLE {name} (k INT, v INT) DUPLICATE KEY(k) "
                                "DISTRIBUTED BY HASH(k) BUCKETS 1")
        _load(engine, table, [(i, i) for i in range(10)])
        assert len(_read_table(engine, table)) == 10
        (tablet,) = engine.catalog.tablets(table.table_id)
        root = engine.backend_root(tablet.backend_id)
        paths = [str(root / f) for r in engine.catalog.rowsets(tablet.tablet_id) for f in r.files]
        assert paths and all(SEGMENT_META_CACHE.latest(p) is not None for p in paths)
        tablet_dir = root / "data" / str(tablet.tablet_id)
        assert engine.page_cache.registered_ids(tablet_dir) > 0  # the scan's pages
        engine.remove_tablet_files([tablet])
        assert all(SEGMENT_META_CACHE.latest(p) is None for p in paths)
        assert engine.page_cache.registered_ids(tablet_dir) == 0
    finally:
        engine.close()


def test_the_cache_is_bounded_by_count_and_bytes(tmp_path: Path) -> None:
    cache = SegmentMetaCache(capacity=3, capacity_bytes=1 << 30)
    metas = []
    for i in range(5):
        _segment(tmp_path / f"{i}.seg", i * 100)
        with SegmentReader(tmp_path / f"{i}.seg", TYPES) as r:
            metas.append(r.meta)
        cache.put(metas[-1])
    assert len(cache) == 3 and cache.get(metas[0].identity) is None
    assert cache.latest(metas[0].path) is None and cache.latest(metas[4].path) is metas[4]
    cache.resize(100, capacity_bytes=2 * metas[0].nbytes())
    assert len(cache) == 2 and cache.used <= cache.capacity_bytes


# ---- (b) skipping rowsets by their zone maps ---------------------------------------------------
@st.composite
def zone_cases(draw: st.DrawFn) -> tuple[T.DataType, list[object], str, list[object]]:
    dtype = draw(st.sampled_from([T.INT, T.BIGINT, T.DOUBLE, T.FLOAT, T.varchar(80), T.DATE,
                                  T.LARGEINT, T.decimal(9, 2)]))
    values = draw(st.lists(st.one_of(st.none(), value_strategy(dtype)), min_size=1,
                           max_size=30))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null",
                               "is_not_null"]))
    consts = draw(st.lists(value_strategy(dtype), min_size=0 if op in ("in", "not_in") else 1,
                           max_size=3))
    return dtype, values, op, consts


@settings(max_examples=300, deadline=None)
@given(case=zone_cases())
def test_segment_entry_check_equals_the_page_array_check(case: tuple) -> None:
    """`entry_may_match` (Python scalars, what pruning uses) == `ZoneMap.may_match(...)[-1]`."""
    dtype, values, op, consts = case
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "z.seg"
        write_segment(path, Batch(("c",), (Column.from_physical(dtype, values),)), [], 0)
        with SegmentReader(path, {"c": dtype}) as r:
            zm = r.zone_map(r.column("c"))
    try:
        index_values = [index_value(dtype, layout_of(dtype), v) for v in consts]
    except NotIndexable:
        return
    assert zm.segment_may_match(op, index_values) == bool(zm.may_match(op, index_values)[-1])


_names = (f"t{i}" for i in itertools.count())


def _create(engine: StorageEngine, ddl: str) -> TableMeta:
    return create_table(engine, ddl, next(_names))


def _load(engine: StorageEngine, table: TableMeta, rows: list[tuple]) -> None:
    from storage.txn import LoadTxn

    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    txn.add_batch(Batch(table.column_names, tuple(
        Column.from_physical(c.type, list(v)) for c, v in zip(table.columns, zip(*rows)))))
    txn.commit()


def _read_table(engine: StorageEngine, table: TableMeta,
                preds: tuple[ColumnPredicate, ...] = (), stats: ScanStats | None = None
                ) -> list[tuple]:
    rows: list[tuple] = []
    for p in engine.catalog.partitions(table.table_id):
        for tablet in engine.catalog.tablets(table.table_id, p.partition_id):
            for b in engine.read_tablet(tablet, p.visible_version,
                                        ReadOptions(table.column_names, preds, 7), stats):
                rows += b.rows()
    return sorted(rows, key=repr)


MODELS = {
    "dup": "DUPLICATE KEY(k1, k2)",
    "agg": "AGGREGATE KEY(k1, k2)",
    "uniq": "UNIQUE KEY(k1, k2)",
}


def _ddl(model: str) -> str:
    values = ("s BIGINT SUM, r INT REPLACE, d DOUBLE SUM" if model == "agg"
              else "s BIGINT, r INT, d DOUBLE")
    return (f"CREATE TABLE {{name}} (k1 INT, k2 VARCHAR(8), {values}) {MODELS[model]} "
            "DISTRIBUTED BY HASH(k2) BUCKETS 2")


@pytest.fixture(scope="module")
def engine() -> Iterator[StorageEngine]:
    with tempfile.TemporaryDirectory() as d:
        eng = StorageEngine(Path(d), backends=2)
        yield eng
        eng.close()


def _unpruned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read as before rowset skipping: every rowset opened and scanned by a SegmentIterator
    (which still skips a segment by its zone map, as it always did)."""
    monkeypatch.setattr(ZonePruner, "__bool__", lambda self: False)
    monkeypatch.setattr(reader_mod, "SMALL_SEGMENT_ROWS", 0)


PREDICATES = [
    (ColumnPredicate("k1", "=", (5,)),),
    (ColumnPredicate("k1", ">=", (40,)), ColumnPredicate("k1", "<", (47,))),
    (ColumnPredicate("k1", "in", (3, 77, 200)),),
    (ColumnPredicate("k2", "=", ("b",)),),
    (ColumnPredicate("k1", "is_null"),),
    (ColumnPredicate("s", ">", (50,)),),  # a value column: never skips an AGG/UNIQUE rowset
    (ColumnPredicate("r", "<=", (3,)), ColumnPredicate("k1", "<", (30,))),
    (ColumnPredicate("d", "!=", (1.5,)),),
]


@pytest.mark.parametrize("seed", property_seeds((1, 2, 3)))
@pytest.mark.parametrize("model", ["dup", "agg", "uniq"])
def test_skipping_rowsets_never_changes_results(engine: StorageEngine, model: str, seed: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Loads each covering a band of keys (some keys loaded again later, so AGG/UNIQUE merge
    across rowsets), delete versions on key and value columns in between: every predicate
    gives the same rows with and without skipping, and the selective ones skip rowsets."""
    rng = np.random.default_rng(seed)
    table = _create(engine, _ddl(model))
    for load in range(30):
        lo = int(rng.integers(0, 90))
        rows = [(None if rng.random() < 0.05 else int(k), str(rng.choice(["a", "b", "", "c"])),
                 int(rng.integers(0, 100)), int(rng.integers(0, 10)),
                 float(rng.choice([0.5, 1.5, 0.1])))
                for k in rng.integers(lo, lo + 8, int(rng.integers(1, 12)))]
        _load(engine, table, rows)
        if load % 9 == 4:  # a delete on keys, then one on a value column (UNIQUE/DUP only)
            cond = (DeleteCondition("k1", "<", (int(rng.integers(0, 40)),)) if load < 10 or
                    model == "agg" else DeleteCondition("r", "=", (int(rng.integers(0, 10)),)))
            publish_delete(engine, engine.catalog.get_database("db"), table,
                           engine.catalog.partitions(table.table_id), [cond], "test")
    skipped = 0
    for preds in PREDICATES:
        stats = ScanStats()
        got = _read_table(engine, table, preds, stats)
        skipped += stats.rowsets_skipped
        assert stats.rows_total == (stats.rows_skipped_short_key + stats.rows_skipped_zone_map
                                    + stats.rows_filtered_predicate + stats.rows_returned)
        with monkeypatch.context() as mp:
            _unpruned(mp)
            reference = ScanStats()
            assert got == _read_table(engine, table, preds, reference), preds
        assert reference.rowsets_skipped == 0
    assert skipped > 0


def test_a_point_lookup_skips_every_other_rowset(engine: StorageEngine) -> None:
    table = _create(engine, "CREATE TABLE {name} (k INT, v INT) UNIQUE KEY(k) "
                            "DISTRIBUTED BY HASH(k) BUCKETS 1")
    for load in range(20):
        _load(engine, table, [(k, load) for k in range(load * 10, load * 10 + 10)])
    stats = ScanStats()
    assert _read_table(engine, table, (ColumnPredicate("k", "=", (123,)),), stats) == [(123, 12)]
    assert stats.rowsets_skipped == 19 and stats.rowsets_read == 1
    # one page per column read, of the one rowset left
    assert stats.segments_skipped_zone_map == 19
    assert stats.pages_read == len(table.column_names)


def _holds(p: ColumnPredicate, v: object) -> bool:
    if p.op == "is_null":
        return v is None
    if v is None:
        return False
    if p.op == "in":
        return v in p.values
    return {"=": v == p.values[0], "<": v < p.values[0],  # type: ignore[operator]
            ">=": v >= p.values[0], "!=": v != p.values[0]}[p.op]  # type: ignore[operator]


DISJUNCTIONS = [
    Disjunction(((ColumnPredicate("k1", "=", (5,)),), (ColumnPredicate("k1", ">=", (85,)),))),
    Disjunction(((ColumnPredicate("k1", "<", (3,)), ColumnPredicate("k2", "=", ("b",))),
                 (ColumnPredicate("k1", "is_null"),))),
    # value columns: AGG / UNIQUE must apply these after the merge
    Disjunction(((ColumnPredicate("s", ">=", (150,)),), (ColumnPredicate("k1", "=", (7,)),))),
    Disjunction(((ColumnPredicate("r", "=", (3,)), ColumnPredicate("k2", "!=", ("a",))),
                 (ColumnPredicate("s", "<", (5,)),))),
]


@pytest.mark.parametrize("model", ["dup", "agg", "uniq"])
def test_disjunctions_equal_filtering_the_merged_rows(engine: StorageEngine, model: str) -> None:
    """ReadOptions.disjunctions give exactly the merged rows (all rows, read without them)
    that satisfy them, with rowsets and segments skipped by key-only ORs."""
    rng = np.random.default_rng(17)
    table = _create(engine, _ddl(model))
    for load in range(25):
        lo = int(rng.integers(0, 90))
        rows = [(None if rng.random() < 0.05 else int(k), str(rng.choice(["a", "b", "", "c"])),
                 int(rng.integers(0, 100)), int(rng.integers(0, 10)),
                 float(rng.choice([0.5, 1.5])))
                for k in rng.integers(lo, lo + 8, int(rng.integers(1, 12)))]
        _load(engine, table, rows)
    names = list(table.column_names)
    everything = _read_table(engine, table)
    skipped = 0
    for d in DISJUNCTIONS:
        want = sorted((r for r in everything if any(
            all(_holds(p, r[names.index(p.column)]) for p in b) for b in d.branches)), key=repr)
        stats = ScanStats()
        rows: list[tuple] = []
        for p in engine.catalog.partitions(table.table_id):
            for tablet in engine.catalog.tablets(table.table_id, p.partition_id):
                rows += [r for b in engine.read_tablet(
                    tablet, p.visible_version,
                    ReadOptions(table.column_names, (), 7, disjunctions=(d,)), stats)
                    for r in b.rows()]
        assert sorted(rows, key=repr) == want, (model, d)
        skipped += stats.rowsets_skipped
    assert skipped > 0


# ---- (c) merging many small runs --------------------------------------------------------------
def _spec(unique: bool, sequence: bool) -> MergeSpec:
    if unique:
        rules = {"s": AggType.REPLACE, "d": AggType.REPLACE, "q": AggType.REPLACE}
        return MergeSpec(KeysType.UNIQUE_KEYS, ("k",), rules, "q" if sequence else None)
    return MergeSpec(KeysType.AGG_KEYS, ("k",), {"s": AggType.SUM, "d": AggType.SUM,
                                                 "q": AggType.REPLACE_IF_NOT_NULL})


def _run(keys: list[int], rng: np.random.Generator) -> Batch:
    n = len(keys)
    q = rng.integers(0, 3, n)
    q_valid = rng.random(n) < 0.8
    return Batch(("k", "s", "d", "q"), (
        Column(T.INT, np.array(sorted(keys), np.int32)),
        Column(T.BIGINT, rng.integers(-5, 5, n)),
        Column(T.DOUBLE, rng.normal(size=n) * 1e8),  # float sums: order-sensitive
        Column(T.INT, np.where(q_valid, q, 0).astype(np.int32), q_valid),
    ))


def _split(b: Batch, cuts: list[int]) -> list[Batch]:
    bounds = sorted({0, b.num_rows, *(c % (b.num_rows + 1) for c in cuts)})
    return [b.slice(lo, hi) for lo, hi in itertools.pairwise(bounds)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=st.lists(st.tuples(st.sets(st.integers(0, 60), max_size=40),
                               st.lists(st.integers(0, 50), max_size=4)), min_size=1,
                     max_size=12),
       unique=st.booleans(), sequence=st.booleans(), seed=st.integers(0, 2**31))
def test_merge_runs_equals_one_combine(runs: list, unique: bool, sequence: bool,
                                       seed: int) -> None:
    """Streaming merge of runs (some one batch, some many, some empty) == the definition:
    every run concatenated and combined once, arrival order = run order. Exact, floats too."""
    rng = np.random.default_rng(seed)
    spec = _spec(unique, sequence)
    batches = [_run(sorted(keys), rng) for keys, _ in runs]
    merged = list(merge_runs([iter(_split(b, cuts)) for b, (_, cuts) in zip(batches, runs)],
                             spec))
    tags = np.concatenate([np.full(b.num_rows, i, np.int64) for i, b in enumerate(batches)])
    expected = combine(Batch.concat(batches), spec, tags)
    got = Batch.concat(merged) if merged else expected.slice(0, 0)
    assert got.rows() == expected.rows()  # key-sorted, so the order is comparable too


def test_many_single_batch_runs_merge_in_one_step(monkeypatch: pytest.MonkeyPatch) -> None:
    import storage.merge as merge_mod

    calls = []
    real = merge_mod.combine
    monkeypatch.setattr(merge_mod, "combine", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(0)
    runs = [_run(list(range(i * 5, i * 5 + 5)), rng) for i in range(200)]
    out = list(merge_runs([iter([b]) for b in runs], _spec(False, False)))
    assert len(calls) == 1 and sum(b.num_rows for b in out) == 1000


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.tuples(st.one_of(st.none(), st.integers(-3, 3)), st.integers(0, 3)),
                     max_size=30),
       seed=st.integers(0, 2**31))
def test_combine_skips_sorting_only_when_keys_already_increase(keys: list, seed: int) -> None:
    """Rows in key order with unique keys (disjoint small loads, concatenated) come back as
    they are; the result always equals combining the same rows shuffled (the sorting path)."""
    rng = np.random.default_rng(seed)
    rows = sorted(keys, key=lambda k: ((k[0] is not None), k[0] or 0, k[1]))
    if rng.random() < 0.5:  # often unique, sometimes with repeats
        rows = list(dict.fromkeys(rows))
    n = len(rows)
    k1 = Column.from_physical(T.INT, [r[0] for r in rows])
    batch = Batch(("k1", "k2", "s"), (k1, Column(T.TINYINT, np.array([r[1] for r in rows],
                                                                     np.int8)),
                                      Column(T.BIGINT, rng.integers(0, 9, n))))
    spec = MergeSpec(KeysType.AGG_KEYS, ("k1", "k2"), {"s": AggType.SUM})
    perm = rng.permutation(n)
    assert combine(batch, spec).rows() == combine(batch.take(perm), spec, perm).rows()


def test_a_forgotten_page_cache_id_only_misses_and_is_renewed(tmp_path: Path) -> None:
    """Small segments are read from the page-cache keys kept in their metadata; a key whose id
    the page cache no longer knows reads the segment again and renews the key."""
    from storage.segment.reader import read_whole

    path = tmp_path / "w.seg"
    _segment(path, 0)
    cache = PageCache(1 << 20)
    with SegmentReader(path, TYPES, page_cache=cache) as r:
        r.read_all(["k", "v"])
        meta = r.meta
    target, info, key = meta.infos["v"]
    meta.infos["v"] = (target, info, (10**12, -1))  # an id the cache never issued
    (cols,) = read_whole([(str(path), meta)], ["k", "v"], TYPES, page_cache=cache)
    assert cols[1].to_pylist() == [3 * i for i in range(100)]
    assert meta.infos["v"][2] == key
    stats = ScanStats()
    read_whole([(str(path), meta)], ["k", "v"], TYPES, stats=stats, page_cache=cache)
    assert stats.pages_cached == stats.pages_read == 2 and stats.segments_read == 1
