"""Selection-vector windows (storage/segment/selection.py, SegmentIterator._scan_selected).

The kernels against their numpy twins (every integer width, NULLs, excluded values, empty and
full selections); and whole scans whose windows run on selection vectors (column-wise scans:
dictionary-coded and plain string pages with empty strings and unicode, integer columns of every
width with NULLs) against a pure-Python evaluation, checking that the selection-vector path ran.
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
from storage.page_cache import PageCache
from storage.predicates import ColumnPredicate
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, write_segment, writer
from storage.segment import selection as K
from storage.segment.iterator import SegmentIterator

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64]


@settings(max_examples=80, deadline=None)
@given(dtype=st.sampled_from(INT_DTYPES), n=st.integers(0, 300), seed=st.integers(0, 2**31),
       nulls=st.booleans(), lo=st.integers(-130, 130), width=st.integers(-3, 60),
       excluded=st.lists(st.integers(-130, 130), max_size=3), narrow=st.booleans())
def test_range_kernels_match_numpy(dtype, n, seed, nulls, lo, width, excluded, narrow) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    values = rng.integers(max(info.min, -128), min(info.max, 127) + 1, n).astype(dtype)
    validity = rng.random(n) > 0.3 if nulls else None
    lo = min(max(lo, info.min), info.max)  # IntegerRange.of keeps bounds inside the type
    hi = min(lo + width, info.max)
    ex = np.array(excluded, np.int64)
    rows = np.flatnonzero(rng.random(n) < 0.5) if narrow else None
    v = validity if validity is not None else np.ones(0, np.bool_)
    got = (K.range_first(values, v, validity is not None, dtype(lo), dtype(hi), ex)
           if rows is None else
           K.range_next(values, v, validity is not None, dtype(lo), dtype(hi), ex, rows))
    assert got.dtype == np.int64
    assert got.tolist() == K.range_reference(values, validity, lo, hi, ex, rows).tolist()


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 300), entries=st.integers(1, 300), seed=st.integers(0, 2**31),
       nulls=st.booleans(), narrow=st.booleans(), share=st.sampled_from([0.0, 0.1, 0.5, 1.0]))
def test_code_kernels_match_numpy(n, entries, seed, nulls, narrow, share) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, entries, n).astype(np.uint8 if entries <= 256 else np.uint16)
    table = rng.random(entries) < share
    validity = rng.random(n) > 0.3 if nulls else None
    rows = np.flatnonzero(rng.random(n) < 0.5) if narrow else None
    v = validity if validity is not None else np.ones(0, np.bool_)
    got = (K.codes_first(codes, table, v, validity is not None) if rows is None
           else K.codes_next(codes, table, v, validity is not None, rows))
    assert got.tolist() == K.codes_reference(codes, table, validity, rows).tolist()


NAMES = ("k", "v", "w", "s")
POOL = ["", "a", "AIR", "é", "日本", "🙂", "ÆØÅ", "MAIL"]
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null"]


@st.composite
def case(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    vtype = draw(st.sampled_from([T.TINYINT, T.SMALLINT, T.INT, T.BIGINT]))
    wtype = draw(st.sampled_from([T.TINYINT, T.SMALLINT, T.INT, T.BIGINT]))
    n = draw(st.integers(1, 2500))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    null = draw(st.sampled_from([0.0, 0.15]))
    v = [None if rng.random() < null else int(x) for x in rng.integers(-20, 21, n)]
    w = [None if rng.random() < null else int(x) for x in rng.integers(0, 6, n)]
    s: list[str | None] = []
    while len(s) < n:  # DICT runs (few values) and PLAIN runs (distinct values)
        m = int(rng.integers(1, 600))
        if rng.random() < 0.6:
            pool = list(rng.choice(POOL, size=int(rng.integers(1, 4))))
            run = [str(rng.choice(pool)) for _ in range(m)]
        else:
            run = [f"{rng.choice(POOL)}{len(s) + i}" for i in range(m)]
        s.extend(None if rng.random() < null else x for x in run)
    s = s[:n]
    preds = []
    for _ in range(draw(st.integers(1, 4))):
        col = draw(st.sampled_from(["v", "w", "s"]))
        consts = st.sampled_from(POOL + ["zz"]) if col == "s" else st.integers(-22, 22)
        op = draw(st.sampled_from(OPS))
        if op in ("is_null", "is_not_null"):
            preds.append((col, op, ()))
        elif op in ("in", "not_in"):
            preds.append((col, op, tuple(draw(st.lists(consts, min_size=1, max_size=3)))))
        else:
            preds.append((col, op, (draw(consts),)))
    return vtype, wtype, v, w, s, preds


@settings(max_examples=60, deadline=None)
@given(case=case(), page_size=st.sampled_from([128, 4096, 65536]),
       batch_size=st.sampled_from([100, 1000, 65536]))
def test_selection_vector_windows_return_the_rows(case, page_size: int, batch_size: int) -> None:  # type: ignore[no-untyped-def]
    vtype, wtype, v, w, s, spec = case
    n = len(v)
    rows = [(i, v[i], w[i], s[i]) for i in range(n)]
    expected = [r for r in rows
                if all(holds(op, r[NAMES.index(col)], c) for col, op, c in spec)]
    preds = [ColumnPredicate(col, op, c) for col, op, c in spec]
    batch = Batch(NAMES, (Column(T.BIGINT, np.arange(n, dtype=np.int64)),
                          Column.from_physical(vtype, v), Column.from_physical(wtype, w),
                          Column.from_physical(T.varchar(40), s)))
    types = {"k": T.BIGINT, "v": vtype, "w": wtype, "s": T.varchar(40)}
    used = []
    real = SegmentIterator._scan_selected

    def spy(self, window):  # type: ignore[no-untyped-def]
        used.append(1)
        return real(self, window)

    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)
        mp.setattr(SegmentIterator, "_scan_selected", spy)
        path = Path(d) / "seg.seg"
        write_segment(path, batch, ["k"], 1)
        for cache in (None, PageCache(1 << 24)):
            used.clear()
            stats = ScanStats()
            with SegmentReader(path, types, page_cache=cache) as reader:
                got = [r for b in reader.read(list(NAMES), preds, stats=stats,
                                              batch_size=batch_size) for r in b.rows()]
            assert got == expected
            assert stats.rows_returned == len(expected)
            assert stats.rows_total == (stats.rows_returned + stats.rows_filtered_predicate
                                        + stats.rows_skipped_short_key
                                        + stats.rows_skipped_zone_map
                                        + stats.rows_skipped_bitmap_index
                                        + stats.rows_skipped_bloom_filter)
            if stats.segments_read and stats.rows_returned + stats.rows_filtered_predicate == n:
                assert used  # the whole segment read: column-wise, on selection vectors
