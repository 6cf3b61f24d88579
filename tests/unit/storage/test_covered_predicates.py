"""Predicates a whole segment satisfies (storage/segment/iterator.py `segment_satisfies`,
`SegmentIterator._drop_covered_predicates`): dropped before the short key, the page zone maps
and the row tests, with the same rows returned; and ranges on the leading key column found by
binary search over the cached column (`SegmentIterator._leading_key_rows`) instead of the
short key index (with a page cache: that path; without one: the short key).

Random integer key and value columns (every width, NULLs or not, narrow and wide value ranges)
under random conjunctions of every storage operator return the rows a pure-Python evaluation
returns, whether the segment zone maps cover the predicates or not; `segment_satisfies` agrees
with a brute-force check over the segment's values wherever it claims coverage.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.predicate_reference import holds

from storage import types as T
from storage.batch import Batch, Column
from storage.indexes.zone_map import EXACT, HAS_NOT_NULL, HAS_NULL, MAX_VALID, MIN_VALID
from storage.page_cache import PageCache
from storage.predicates import ColumnPredicate
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, write_segment, writer
from storage.segment.iterator import SegmentIterator, segment_satisfies

NAMES = ("k", "v", "s")
INT_TYPES = [T.TINYINT, T.SMALLINT, T.INT, T.BIGINT]
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null"]
BOUNDS = MIN_VALID | MAX_VALID | EXACT | HAS_NOT_NULL


@st.composite
def case(draw: st.DrawFn) -> tuple[T.DataType, list[int | None], list[int | None],
                                   list[tuple[str, str, tuple[int, ...]]]]:
    vtype = draw(st.sampled_from(INT_TYPES))
    n = draw(st.integers(1, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    # lo + width + 3 (the largest constant) stays inside TINYINT's range
    lo = draw(st.integers(-50, 24))
    width = draw(st.sampled_from([0, 1, 5, 100]))
    null_share = draw(st.sampled_from([0.0, 0.0, 0.1]))
    null_keys = int(n * null_share * rng.random())  # sorted first, as rowsets sort NULL
    keys: list[int | None] = [None] * null_keys + sorted(
        int(x) for x in rng.integers(lo, lo + width + 1, n - null_keys))
    values: list[int | None] = [None if rng.random() < null_share else int(x)
                                for x in rng.integers(lo, lo + width + 1, n)]
    consts = st.integers(lo - 3, lo + width + 3)
    preds = []
    for _ in range(draw(st.integers(1, 3))):
        column = draw(st.sampled_from(["k", "v"]))
        op = draw(st.sampled_from(OPS))
        if op in ("is_null", "is_not_null"):
            preds.append((column, op, ()))
        elif op in ("in", "not_in"):
            preds.append((column, op, tuple(draw(st.lists(consts, min_size=1, max_size=4)))))
        else:
            preds.append((column, op, (draw(consts),)))
    return vtype, keys, values, preds


def _batch(vtype: T.DataType, keys: list[int | None], values: list[int | None]) -> Batch:
    n = len(keys)
    return Batch(NAMES, (Column.from_physical(T.INT, keys),
                         Column.from_physical(vtype, values),
                         Column.from_physical(T.varchar(10), [f"r{i}" for i in range(n)])))


@settings(max_examples=60, deadline=None)
@given(case=case(), page_size=st.sampled_from([64, 4096, 65536]),
       batch_size=st.sampled_from([7, 1000, 65536]))
def test_covered_predicates_return_the_same_rows(case, page_size: int, batch_size: int) -> None:
    vtype, keys, values, spec = case
    expected = sorted(
        ((k, v, f"r{i}") for i, (k, v) in enumerate(zip(keys, values))
         if all(holds(op, k if col == "k" else v, c) for col, op, c in spec)),
        key=lambda r: r[2])
    preds = [ColumnPredicate(col, op, c) for col, op, c in spec]
    types = {"k": T.INT, "v": vtype, "s": T.varchar(10)}
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)
        path = Path(d) / "seg.seg"
        write_segment(path, _batch(vtype, keys, values), ["k"], 1)
        for cache in (None, PageCache(1 << 22)):
            stats = ScanStats()
            with SegmentReader(path, types, page_cache=cache) as reader:
                rows = [r for b in reader.read(list(NAMES), preds, stats=stats,
                                               batch_size=batch_size) for r in b.rows()]
            assert sorted(rows, key=lambda r: r[2]) == expected
            assert stats.rows_returned == len(expected)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(-5, 5), min_size=1, max_size=8),
       op=st.sampled_from(OPS), consts=st.lists(st.integers(-7, 7), min_size=1, max_size=3))
def test_segment_satisfies_only_what_every_value_satisfies(values: list[int], op: str,
                                                           consts: list[int]) -> None:
    entry = (BOUNDS, min(values), max(values))
    c = tuple(consts) if op in ("in", "not_in") else (() if "null" in op else (consts[0],))
    if segment_satisfies(entry, op, c):
        assert all(holds(op, v, c) for v in values)
    # a range that holds for every value in [min, max] is recognised
    if op in ("<", "<=", ">", ">=") and all(holds(op, v, c) for v in (min(values),
                                                                     max(values))):
        assert segment_satisfies(entry, op, c)


def test_segment_satisfies_needs_exact_bounds_and_no_null() -> None:
    assert segment_satisfies((BOUNDS, 3, 9), ">=", (3,))
    assert not segment_satisfies((BOUNDS | HAS_NULL, 3, 9), ">=", (3,))  # NULL fails it
    assert not segment_satisfies((BOUNDS & ~EXACT, 3, 9), ">=", (3,))
    assert not segment_satisfies((BOUNDS & ~MAX_VALID, 3, 9), "<=", (100,))
    assert not segment_satisfies((HAS_NULL, 0, 0), "is_not_null", ())  # all NULL
    assert segment_satisfies((BOUNDS, 3, 9), "is_not_null", ())
    assert segment_satisfies((BOUNDS, 4, 4), "in", (1, 4))
    assert not segment_satisfies((BOUNDS, 4, 5), "in", (4, 5))  # needs min == max
    assert segment_satisfies((BOUNDS, 4, 5), "not_in", (3, 6))


def test_a_covered_key_range_skips_the_short_key_and_the_row_test(tmp_path: Path) -> None:
    n = 5000
    keys = sorted(19930101 + (i % 365) for i in range(n))
    path = tmp_path / "year.seg"
    write_segment(path, _batch(T.INT, keys, list(range(n))), ["k"], 1)
    preds = [ColumnPredicate("k", ">=", (19930101,)), ColumnPredicate("k", "<=", (19931231,)),
             ColumnPredicate("v", "<", (10,))]
    with SegmentReader(path, {"k": T.INT, "v": T.INT}) as reader:
        it = SegmentIterator(reader, ["k", "v"], preds, ScanStats(), 1024)
        rows = [r for b in it for r in b.rows()]
        assert [p for _, p in it.predicates] == [preds[2]]  # the key range was dropped
    assert rows == [(k, v) for v, k in enumerate(keys) if v < 10]


def test_leading_key_range_by_binary_search_matches_the_short_key(tmp_path: Path) -> None:
    n = 9000
    keys = sorted(19920101 + (i * 7) % 2500 for i in range(n))
    path = tmp_path / "keys.seg"
    write_segment(path, _batch(T.INT, keys, list(range(n))), ["k"], 1)
    cases = [[(">=", 19920300), ("<=", 19920400)], [(">", 19920300), ("<", 19920400)],
             [("=", 19920507)], [(">=", 19930000)], [("<", 19920000)], [("<=", 19940000)],
             [(">", 19920300), (">=", 19920300), ("<", 19921000), ("<=", 19920999)]]
    for spec in cases:
        preds = [ColumnPredicate("k", op, (v,)) for op, v in spec]
        expected = [(k, v) for v, k in enumerate(keys) if all(holds(op, k, (c,))
                                                               for op, c in spec)]
        for cache in (None, PageCache(1 << 22)):
            stats = ScanStats()
            with SegmentReader(path, {"k": T.INT, "v": T.INT}, page_cache=cache) as reader:
                rows = [r for b in reader.read(["k", "v"], preds, stats=stats, batch_size=4096)
                        for r in b.rows()]
            assert rows == expected, spec
            assert stats.rows_skipped_short_key + stats.rows_skipped_zone_map >= \
                n - len(expected) - 1024 * 2, spec  # the index skipped all but <= 2 blocks


def test_indexed_constants_are_remembered_per_type_and_constant_kind() -> None:
    from storage.indexes.zone_map import NotIndexable, index_value
    from storage.segment.encoding import layout_of
    from storage.segment.prune import indexed_constants

    for t, consts in ((T.INT, (3, 19930101)), (T.TINYINT, (3,)), (T.varchar(5), ("é", ""))):
        layout = layout_of(t)
        want = [index_value(t, layout, v) for v in consts]
        assert indexed_constants(t, layout, "in", consts) == want
        assert indexed_constants(t, layout, "in", consts) == want  # from the memo
    layout = layout_of(T.INT)
    assert indexed_constants(T.INT, layout, ">=", (3,)) == [3]
    with pytest.raises(NotIndexable):  # 3.0 == 3, but a float constant is not an INT index value
        indexed_constants(T.INT, layout, ">=", (3.0,))
    with pytest.raises(NotIndexable):  # out of TINYINT's range, remembered as such
        indexed_constants(T.TINYINT, layout_of(T.TINYINT), "<", (300,))
    with pytest.raises(NotIndexable):
        indexed_constants(T.TINYINT, layout_of(T.TINYINT), "<", (300,))


def test_binary_search_answers_ranges_and_leaves_points_to_the_short_key(
        tmp_path: Path) -> None:
    n = 6000
    keys = sorted(i // 3 for i in range(n))
    path = tmp_path / "points.seg"
    write_segment(path, _batch(T.INT, keys, list(range(n))), ["k"], 1)
    types = {"k": T.INT, "v": T.INT}
    cache = PageCache(1 << 22)
    with SegmentReader(path, types, page_cache=cache) as reader:
        ranged = SegmentIterator(reader, ["k"], [ColumnPredicate("k", ">", (10,)),
                                                 ColumnPredicate("k", "<=", (20,))],
                                 ScanStats(), 1024)
        got = ranged._leading_key_rows(reader.column("k"), n)
        assert got is not None and (int(got.starts[0]), int(got.stops[0])) == (33, 63)
        point = SegmentIterator(reader, ["k"], [ColumnPredicate("k", "=", (10,))],
                                ScanStats(), 1024)
        assert point._leading_key_rows(reader.column("k"), n) is None
    with SegmentReader(path, types) as reader:  # no page cache: the short key
        it = SegmentIterator(reader, ["k"], [ColumnPredicate("k", ">", (10,))], ScanStats(), 1024)
        assert it._leading_key_rows(reader.column("k"), n) is None
