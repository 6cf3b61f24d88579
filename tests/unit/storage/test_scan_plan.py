"""Scan plans kept per segment (storage/segment/scan_plan.py): a scan that finds its plan does
not prune again, returns the rows a pure-Python evaluation returns and reports the same row and
skip counters as the scan that pruned.

Random segments: a sorted integer key (every width, NULLs first), an integer value of every
width with NULLs, a string column mixing DICT and PLAIN pages (empty strings, unicode, NULLs)
with a bitmap index and bloom filters; random conjunctions of every storage operator, read
twice with and without a page cache: the second read must come from the plan (pruning is
patched to fail) and equal the first.
"""

from __future__ import annotations

import tempfile
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.predicate_reference import holds

from storage import types as T
from storage.batch import Batch, Column
from storage.indexes.spec import SegmentIndexSpec
from storage.page_cache import PageCache
from storage.predicates import ColumnPredicate
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, scan_plan, write_segment, writer
from storage.segment.iterator import SegmentIterator

NAMES = ("k", "v", "s")
INT_TYPES = [T.TINYINT, T.SMALLINT, T.INT, T.BIGINT]
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null"]
POOL = ["", "a", "AIR", "ASIA", "é", "日本", "🙂", "MAIL", "ÆØÅ"]
INDEXES = SegmentIndexSpec(frozenset({"s"}), frozenset({"s", "v"}))


@st.composite
def case(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    ktype = draw(st.sampled_from(INT_TYPES))
    vtype = draw(st.sampled_from(INT_TYPES))
    n = draw(st.integers(1, scan_plan.MAX_SELECTION_ROWS))  # a bitmap selection is kept
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    lo = draw(st.integers(-50, 24))  # lo + width + 3 stays inside TINYINT
    width = draw(st.sampled_from([0, 5, 100]))
    null_share = draw(st.sampled_from([0.0, 0.1]))
    null_keys = int(n * null_share * rng.random())
    keys = [None] * null_keys + sorted(int(x) for x in rng.integers(lo, lo + width + 1,
                                                                    n - null_keys))
    values = [None if rng.random() < null_share else int(x)
              for x in rng.integers(lo, lo + width + 1, n)]
    strings: list[str | None] = []
    while len(strings) < n:  # runs of few distinct values (DICT pages) or distinct ones (PLAIN)
        m = int(rng.integers(1, 500))
        if rng.random() < 0.5:
            pool = list(rng.choice(POOL, size=int(rng.integers(1, 4))))
            run = [str(rng.choice(pool)) for _ in range(m)]
        else:
            run = [f"{rng.choice(POOL)}#{len(strings) + i}" for i in range(m)]
        strings.extend(None if rng.random() < null_share else s for s in run)
    strings = strings[:n]
    ints = st.integers(lo - 3, lo + width + 3)
    texts = st.sampled_from(POOL + ["AIR#3", "nope"])
    preds = []
    for _ in range(draw(st.integers(1, 3))):
        column = draw(st.sampled_from(["k", "v", "s"]))
        consts = texts if column == "s" else ints
        op = draw(st.sampled_from(OPS))
        if op in ("is_null", "is_not_null"):
            preds.append((column, op, ()))
        elif op in ("in", "not_in"):
            preds.append((column, op, tuple(draw(st.lists(consts, min_size=1, max_size=4)))))
        else:
            preds.append((column, op, (draw(consts),)))
    return ktype, vtype, keys, values, strings, preds


def _read(path: Path, types: dict[str, T.DataType], preds: list[ColumnPredicate],
          cache: PageCache | None, batch_size: int) -> tuple[list[tuple[object, ...]], ScanStats]:
    stats = ScanStats()
    with SegmentReader(path, types, page_cache=cache) as reader:
        rows = [r for b in reader.read(list(NAMES), preds, stats=stats, batch_size=batch_size)
                for r in b.rows()]
    return rows, stats


def _fail(self: SegmentIterator) -> None:
    raise AssertionError("pruned again: the scan plan was not used")


@settings(max_examples=60, deadline=None)
@given(case=case(), page_size=st.sampled_from([64, 4096, 65536]),
       batch_size=st.sampled_from([7, 1000, 65536]))
def test_a_cached_plan_returns_the_rows_and_counters_of_pruning(case, page_size: int,
                                                                batch_size: int) -> None:
    ktype, vtype, keys, values, strings, spec = case
    expected = [(k, v, s) for k, v, s in zip(keys, values, strings)
                if all(holds(op, {"k": k, "v": v, "s": s}[col], c) for col, op, c in spec)]
    preds = [ColumnPredicate(col, op, c) for col, op, c in spec]
    types = {"k": ktype, "v": vtype, "s": T.varchar(40)}
    batch = Batch(NAMES, (Column.from_physical(ktype, keys), Column.from_physical(vtype, values),
                          Column.from_physical(T.varchar(40), strings)))
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)
        path = Path(d) / "seg.seg"
        write_segment(path, batch, ["k"], 1, INDEXES)
        for cache in (None, PageCache(1 << 22)):
            first, pruned = _read(path, types, preds, cache, batch_size)
            with pytest.MonkeyPatch.context() as no_pruning:
                no_pruning.setattr(SegmentIterator, "_prune", _fail)
                again, planned = _read(path, types, preds, cache, batch_size)
            assert first == expected  # rows come out in key order
            assert again == expected
            for name in scan_plan.REPLAYED:
                assert getattr(planned, name) == getattr(pruned, name), name


def test_constants_of_other_types_get_their_own_plans() -> None:
    """3, 3.0, True and Decimal(3) hash alike but do not index alike."""
    keys = {scan_plan.plan_key(("k",), [(("c", "k"), ColumnPredicate("k", "=", (v,)))], (),
                               lambda c: c)
            for v in (3, 3.0, True, Decimal(3))}
    assert len(keys) == 4 and None not in keys


def test_runtime_filters_and_unhashable_constants_are_not_kept() -> None:
    def key(p: ColumnPredicate) -> object:
        return scan_plan.plan_key(("k",), [(("c", "k"), p)], (), lambda c: c)
    assert key(ColumnPredicate("k", "in_bitmap", (object(),))) is None
    assert key(ColumnPredicate("k", "in_bloom", (object(),))) is None
    assert key(ColumnPredicate("k", "in", ([1, 2],))) is None  # a list: unhashable
    assert key(ColumnPredicate("k", "in", (1, 2))) is not None


def test_plans_per_segment_are_bounded() -> None:
    plans: dict[object, object] = {}
    counts = scan_plan.counts(ScanStats())
    for i in range(scan_plan.MAX_PLANS_PER_SEGMENT * 3):
        scan_plan.remember(plans, i, None, (), None, set(), counts, counts)
        assert len(plans) <= scan_plan.MAX_PLANS_PER_SEGMENT
    big = np.arange(scan_plan.MAX_SELECTION_ROWS + 1)
    scan_plan.remember(plans, "big", None, (), big, set(), counts, counts)
    assert "big" not in plans


def test_a_plan_keeps_the_bitmap_selection(tmp_path: Path) -> None:
    """A bitmap-index selection (few rows of a string column) is kept with the plan and gives
    the same rows from it, far into the segment (row ids past the first pages)."""
    n = 20_000
    strings = ["AIR" if i % 997 == 5 else f"x{i}" for i in range(n)]
    batch = Batch(NAMES, (Column(T.INT, np.arange(n, dtype=np.int32)),
                          Column(T.INT, np.arange(n, dtype=np.int32) % 7),
                          Column.from_physical(T.varchar(40), strings)))
    path = tmp_path / "seg.seg"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer, "PAGE_SIZE", 4096)
        write_segment(path, batch, ["k"], 1, INDEXES)
    types = {"k": T.INT, "v": T.INT, "s": T.varchar(40)}
    preds = [ColumnPredicate("s", "=", ("AIR",))]
    expected = [(i, i % 7, "AIR") for i in range(n) if i % 997 == 5]
    first, pruned = _read(path, types, preds, None, 1000)
    with SegmentReader(path, types) as reader:
        plans = [p for p in reader.meta.scan_plans.values()
                 if isinstance(p, scan_plan.ScanPlan)]
    assert plans and all(p.selection is not None and p.selection.dtype == np.uint32
                         for p in plans)
    with pytest.MonkeyPatch.context() as no_pruning:
        no_pruning.setattr(SegmentIterator, "_prune", _fail)
        again, planned = _read(path, types, preds, None, 1000)
    assert first == again == expected
    assert planned.rows_skipped_bitmap_index == pruned.rows_skipped_bitmap_index > 0
