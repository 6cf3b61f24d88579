"""Scans with bitmap indexes and bloom filters (storage/segment/iterator.py): over random data
(NULLs, unicode strings, dates, decimals, LARGEINT; several segments, tiny pages) and random
predicate lists plus disjunctions, the rows read with the bitmap index only, bloom filters
only, both, and none are identical and equal a pure-Python evaluation; the row counters
partition rows_total; and on selective predicates the counters prove the pruning."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from segment_data import random_values
from support.predicate_reference import holds as py_holds

from storage import types as T
from storage.batch import Batch, Column
from storage.errors import ShaleError
from storage.indexes import bitmap_index
from storage.indexes.spec import SegmentIndexSpec
from storage.predicates import ColumnPredicate, Disjunction, IntegerSet
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, write_segment, writer

MENU = [T.INT, T.BIGINT, T.LARGEINT, T.DATE, T.datetime(6), T.decimal(9, 2),
        T.decimal(38, 6), T.varchar(32), T.STRING, T.BOOLEAN]
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null"]
NAMES = ("k", "a", "b", "c")


def py_rows(rows: list[tuple[object, ...]], preds: list[ColumnPredicate],
            disjunctions: list[Disjunction]) -> list[tuple[object, ...]]:
    def ok(row: tuple[object, ...]) -> bool:
        def holds(p: ColumnPredicate) -> bool:
            return py_holds(p.op, row[NAMES.index(p.column)], p.values)
        return all(map(holds, preds)) and all(
            any(all(map(holds, b)) for b in d.branches) for d in disjunctions)
    return [r for r in rows if ok(r)]


@st.composite
def case(draw: st.DrawFn) -> tuple[list[Batch], list[ColumnPredicate], list[Disjunction]]:
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    types = [draw(st.sampled_from(MENU)) for _ in range(3)]
    segments = []
    pools: list[list[object]] = [[] for _ in types]
    start = 0
    for _ in range(draw(st.integers(1, 3))):
        n = int(rng.integers(1, 1500))
        cols = [Column(T.BIGINT, np.arange(start, start + n, dtype=np.int64))]
        start += n
        for i, t in enumerate(types):
            values = random_values(rng, t, n, float(rng.choice([0.0, 0.1, 0.5])))
            pools[i].extend(v for v in values[:50] if v is not None)
            cols.append(Column.from_physical(t, values))
        segments.append(Batch(NAMES, tuple(cols)))

    def pred() -> ColumnPredicate:
        i = draw(st.integers(0, 2))
        op = draw(st.sampled_from(OPS))
        pool = pools[i] or random_values(rng, types[i], 3, 0.0)
        pick = st.sampled_from(pool)
        if op in ("is_null", "is_not_null"):
            return ColumnPredicate(NAMES[i + 1], op)
        if op in ("in", "not_in"):
            values = tuple(draw(st.lists(pick, max_size=4)))
            if (op == "in" and values and types[i] in (T.INT, T.BIGINT, T.DATE)
                    and max(values) - min(values) < 10**6 and draw(st.booleans())):
                keys = IntegerSet.of(np.array(values, dtype=np.int64))
                return ColumnPredicate(NAMES[i + 1], "in_bitmap", (keys,))
            return ColumnPredicate(NAMES[i + 1], op, values)
        return ColumnPredicate(NAMES[i + 1], op, (draw(pick),))

    preds = [pred() for _ in range(draw(st.integers(0, 2)))]
    disjunctions = [Disjunction(tuple(tuple(pred() for _ in range(draw(st.integers(1, 2))))
                                      for _ in range(draw(st.integers(1, 3)))))
                    for _ in range(draw(st.integers(0, 2)))]
    return segments, preds, disjunctions


SPECS = {
    "none": SegmentIndexSpec(),
    "bitmap": SegmentIndexSpec(bitmap_columns=frozenset(NAMES[1:])),
    "bloom": SegmentIndexSpec(bloom_filter_columns=frozenset(NAMES[1:]), bloom_filter_fpp=0.05),
    "both": SegmentIndexSpec(frozenset(NAMES[1:]), frozenset(NAMES[1:]), 0.01),
}


def scan(paths: list[Path], types: dict[str, T.DataType], preds: list[ColumnPredicate],
         disjunctions: list[Disjunction], batch_size: int = 65536
         ) -> tuple[list[tuple[object, ...]], ScanStats]:
    stats = ScanStats()
    rows = []
    for path in paths:
        with SegmentReader(path, types) as reader:
            for b in reader.read(list(NAMES), preds, stats=stats, batch_size=batch_size,
                                 disjunctions=disjunctions):
                rows.extend(b.rows())
    assert stats.rows_total == (
        stats.rows_skipped_short_key + stats.rows_skipped_zone_map
        + stats.rows_skipped_bitmap_index + stats.rows_skipped_bloom_filter
        + stats.rows_filtered_predicate + stats.rows_returned), stats
    assert stats.rows_returned == len(rows)
    return rows, stats


@settings(max_examples=40, deadline=None)
@given(case=case(), page_size=st.sampled_from([64, 512, 65536]),
       batch_size=st.sampled_from([7, 100, 65536]))
def test_every_index_combination_returns_the_same_rows(
        case: tuple[list[Batch], list[ColumnPredicate], list[Disjunction]],
        page_size: int, batch_size: int) -> None:
    segments, preds, disjunctions = case
    types = dict(zip(NAMES, segments[0].types))
    expected = sorted(py_rows([r for b in segments for r in b.rows()], preds, disjunctions),
                      key=lambda r: r[0])  # type: ignore[arg-type, return-value]
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)
        mp.setattr(bitmap_index, "DICT_PAGE_BYTES", 48)
        mp.setattr(bitmap_index, "BITMAP_PAGE_BYTES", 64)
        mp.setattr(bitmap_index, "ROARING_MIN_ROWS", 3)
        for name, spec in SPECS.items():
            paths = []
            for i, b in enumerate(segments):
                paths.append(Path(d) / f"{name}-{i}.seg")
                write_segment(paths[-1], b, ["k"], 1, indexes=spec)
            got, _ = scan(paths, types, preds, disjunctions, batch_size)
            assert sorted(got, key=lambda r: r[0]) == expected, name  # type: ignore[arg-type, return-value]


# ---- deterministic: the counters prove the pruning --------------------------------------
N = 120_000


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], Batch]:
    rng = np.random.default_rng(5)
    city = Column.from_physical(T.STRING, [f"城市{int(x)}" for x in rng.integers(0, 250, N)])
    order = rng.permutation(N).astype(np.int64) * 3  # unique, unsorted: bloom filter column
    mode = rng.integers(0, 7, N).astype(np.int32)
    batch = Batch(("k", "city", "orderkey", "mode"),
                  (Column(T.BIGINT, np.arange(N, dtype=np.int64)), city,
                   Column(T.BIGINT, order), Column(T.INT, mode)))
    d = tmp_path_factory.mktemp("idx")
    paths = {}
    for name, spec in (("none", SegmentIndexSpec()),
                       ("both", SegmentIndexSpec(frozenset({"city", "mode"}),
                                                 frozenset({"orderkey"})))):
        paths[name] = d / f"{name}.seg"
        write_segment(paths[name], batch, ["k"], 1, indexes=spec)
    return paths, batch


def run(path: Path, batch: Batch, preds: list[ColumnPredicate],
        disjunctions: list[Disjunction] = ()) -> tuple[list[int], ScanStats]:  # type: ignore[assignment]
    stats = ScanStats()
    with SegmentReader(path, dict(zip(batch.names, batch.types))) as reader:
        keys = [int(k) for b in reader.read(["k", "city"], preds, stats=stats,
                                            disjunctions=disjunctions)
                for k in b.column("k").data]
    return keys, stats


def test_bitmap_index_prunes_rows_and_pages(indexed: tuple[dict[str, Path], Batch]) -> None:
    paths, batch = indexed
    preds = [ColumnPredicate("city", "=", ("城市17",)), ColumnPredicate("mode", "in", (2, 3))]
    plain, plain_stats = run(paths["none"], batch, preds)
    got, stats = run(paths["both"], batch, preds)
    assert got == plain and plain
    assert stats.rows_skipped_bitmap_index >= N - len(got) - stats.rows_skipped_zone_map
    assert stats.rows_filtered_predicate == 0  # the bitmaps answered both predicates exactly
    assert plain_stats.rows_filtered_predicate == N - len(got)
    assert stats.bitmap_index_filter_ns > 0


def test_point_lookup_decodes_few_pages(indexed: tuple[dict[str, Path], Batch]) -> None:
    paths, batch = indexed
    city = batch.column("city").value_at(4321)
    preds = [ColumnPredicate("city", "=", (city,)), ColumnPredicate("mode", "=", (
        int(batch.column("mode").data[4321]),))]
    plain, plain_stats = run(paths["none"], batch, preds)
    got, stats = run(paths["both"], batch, preds)
    assert got == plain and 4321 in got
    assert stats.pages_read < plain_stats.pages_read
    assert stats.pages_skipped_bitmap_index > 0


def test_bloom_filter_skips_pages(indexed: tuple[dict[str, Path], Batch]) -> None:
    paths, batch = indexed
    key = int(batch.column("orderkey").data[77_777])
    for preds in ([ColumnPredicate("orderkey", "=", (key,))],
                  [ColumnPredicate("orderkey", "in", (key, 1, 4))]):
        plain, plain_stats = run(paths["none"], batch, preds)
        got, stats = run(paths["both"], batch, preds)
        assert got == plain == [77_777]
        assert stats.pages_skipped_bloom_filter > 0
        assert stats.rows_skipped_bloom_filter > N // 2
        assert stats.pages_read < plain_stats.pages_read
        assert stats.bloom_filter_ns > 0


def test_disjunction_answered_by_bitmaps(indexed: tuple[dict[str, Path], Batch]) -> None:
    paths, batch = indexed
    d = Disjunction(((ColumnPredicate("city", "=", ("城市3",)),),
                     (ColumnPredicate("city", "=", ("城市4",)),
                      ColumnPredicate("mode", "!=", (1,)))))
    plain, _ = run(paths["none"], batch, [], [d])
    got, stats = run(paths["both"], batch, [], [d])
    assert got == plain and plain
    assert stats.rows_skipped_bitmap_index > 0 and stats.rows_filtered_predicate == 0


def test_wide_selection_falls_back(indexed: tuple[dict[str, Path], Batch]) -> None:
    """A selection keeping most rows is not walked: the predicates are evaluated instead."""
    paths, batch = indexed
    preds = [ColumnPredicate("mode", "in", (0, 1, 2, 3, 4, 5))]
    plain, _ = run(paths["none"], batch, preds)
    got, stats = run(paths["both"], batch, preds)
    assert got == plain
    assert stats.rows_skipped_bitmap_index == 0
    assert stats.rows_filtered_predicate == N - len(got)


def test_corrupt_index_page_in_a_scan_names_the_file(
        indexed: tuple[dict[str, Path], Batch], tmp_path: Path) -> None:
    paths, batch = indexed
    raw = paths["both"].read_bytes()
    types = dict(zip(batch.names, batch.types))
    with SegmentReader(paths["both"], types) as r:
        bitmap = r.column("city").footer.bitmap_index
        bloom = r.column("orderkey").footer.bloom_filter
    assert bitmap is not None and bloom is not None
    for pointer, pred in ((bitmap, ColumnPredicate("city", "=", ("城市1",))),
                          (bloom, ColumnPredicate("orderkey", "=", (3,)))):
        broken = bytearray(raw)
        broken[pointer.offset + pointer.size // 3] ^= 0x11
        path = tmp_path / "broken.seg"
        path.write_bytes(bytes(broken))
        with SegmentReader(path, types, tablet_id=9) as r, pytest.raises(ShaleError) as info:
            list(r.read(["k"], [pred]))
        assert info.value.message.startswith(
            f"errCode = 2, detailMessage = Corrupted segment file {path} of tablet 9: ")


def test_runtime_key_sets_use_both_indexes(indexed: tuple[dict[str, Path], Batch]) -> None:
    """A join's runtime filter (`in_bitmap`, a small key set) is probed like an IN list."""
    paths, batch = indexed
    keys = np.array([int(batch.column("orderkey").data[i]) for i in (10, 50_000)] + [3 * N + 1])
    got_keys, stats = run(paths["both"], batch,
                          [ColumnPredicate("orderkey", "in_bitmap", (IntegerSet.of(keys),))])
    plain, _ = run(paths["none"], batch,
                   [ColumnPredicate("orderkey", "in_bitmap", (IntegerSet.of(keys),))])
    assert got_keys == plain == [10, 50_000]
    assert stats.pages_skipped_bloom_filter > 0
    modes = IntegerSet.of(np.array([3, 9]))
    got, stats = run(paths["both"], batch, [ColumnPredicate("mode", "in_bitmap", (modes,)),
                                            ColumnPredicate("city", "=", ("城市8",))])
    plain, _ = run(paths["none"], batch, [ColumnPredicate("mode", "in_bitmap", (modes,)),
                                          ColumnPredicate("city", "=", ("城市8",))])
    assert got == plain and got
    assert stats.rows_filtered_predicate == 0  # both answered by the bitmap indexes


def test_zone_maps_prune_disjunctions(indexed: tuple[dict[str, Path], Batch]) -> None:
    """k is sorted: an OR of two narrow k ranges (no bitmap index on k) keeps two page runs."""
    paths, batch = indexed
    d = Disjunction(((ColumnPredicate("k", "<", (100,)),),
                     (ColumnPredicate("k", ">=", (N - 50,)), ColumnPredicate("mode", "!=", (9,)))))
    for name in ("none", "both"):
        got, stats = run(paths[name], batch, [], [d])
        assert got == list(range(100)) + list(range(N - 50, N))
        assert stats.rows_skipped_zone_map > N // 2
    nothing = Disjunction(((ColumnPredicate("k", "<", (-5,)),),
                           (ColumnPredicate("k", ">", (N + 5,)),)))
    got, stats = run(paths["none"], batch, [], [nothing])
    assert got == [] and stats.segments_skipped == 1
