"""RowRanges (the row-id interval sets segment scans prune with) against Python sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.segment.row_ranges import RowRanges, sorted_span

pairs = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200)), max_size=12)


def rows_of(pairs: list[tuple[int, int]]) -> set[int]:
    return {r for a, b in pairs for r in range(a, b)}


def as_set(r: RowRanges) -> set[int]:
    return set(r.row_ids().tolist())


@settings(max_examples=300, deadline=None)
@given(a=pairs, b=pairs, max_rows=st.integers(1, 50))
def test_row_ranges_match_sets(
    a: list[tuple[int, int]], b: list[tuple[int, int]], max_rows: int
) -> None:
    ra, rb = RowRanges.of(a), RowRanges.of(b)
    assert as_set(ra) == rows_of(a) and ra.count == len(rows_of(a))
    assert np.all(ra.starts[1:] > ra.stops[:-1]) and np.all(ra.stops > ra.starts)  # normalized
    assert as_set(ra.intersect(rb)) == rows_of(a) & rows_of(b)
    row_ids = ra.row_ids()
    assert row_ids.tolist() == sorted(rows_of(a))
    windows = list(ra.windows(max_rows))
    assert all(0 < w.count <= max_rows for w in windows)
    assert (
        np.concatenate([w.row_ids() for w in windows] or [np.zeros(0, np.int64)]).tolist()
        == row_ids.tolist()
    )
    starts = np.array([s for s, _ in b], dtype=np.int64)
    stops = np.array([max(s + 1, e) for s, e in b], dtype=np.int64)
    expected = [
        bool(rows_of([(s, e)]) & rows_of(a)) for s, e in zip(starts.tolist(), stops.tolist())
    ]
    assert ra.overlaps(starts, stops).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(keep=st.lists(st.booleans(), min_size=1, max_size=20), size=st.integers(1, 5))
def test_from_pages(keep: list[bool], size: int) -> None:
    starts = np.arange(len(keep), dtype=np.int64) * size
    stops = starts + size
    r = RowRanges.from_pages(starts, stops, np.array(keep))
    assert as_set(r) == rows_of([(int(s), int(e)) for s, e, k in zip(starts, stops, keep) if k])
    assert r == RowRanges.of([(int(s), int(e)) for s, e, k in zip(starts, stops, keep) if k])


@settings(max_examples=300, deadline=None)
@given(a=pairs, picks=st.lists(st.integers(0, 10_000), max_size=30))
def test_take_is_row_ids_at_positions(a: list[tuple[int, int]], picks: list[int]) -> None:
    r = RowRanges.of(a)
    ids = r.row_ids()
    positions = np.array(sorted({p % len(ids) for p in picks}) if len(ids) else [], np.int64)
    assert r.take(positions).tolist() == ids[positions].tolist()


_DTYPES = st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16])
_BOUND = st.one_of(st.none(), st.tuples(st.integers(-(2 ** 64), 2 ** 64), st.booleans()),
                   st.tuples(st.integers(-300, 300), st.booleans()))


@settings(max_examples=500, deadline=None)
@given(dtype=_DTYPES, values=st.lists(st.integers(-300, 300), max_size=40), lo=_BOUND,
       hi=_BOUND)
def test_sorted_span_matches_comparisons(dtype, values: list[int], lo, hi) -> None:
    """Binary search bounds (constants of any size, cast to the column's type) keep exactly
    the rows a Python comparison keeps, at the type's extremes too."""
    info = np.iinfo(dtype)
    data = np.array(sorted(min(max(v, info.min), info.max) for v in values), dtype)
    start, stop = sorted_span(data, lo, hi)

    def keep(v: int) -> bool:
        if lo is not None and not (v >= lo[0] if lo[1] else v > lo[0]):
            return False
        return hi is None or (v <= hi[0] if hi[1] else v < hi[0])

    expected = [i for i, v in enumerate(data.tolist()) if keep(v)]
    assert list(range(start, stop)) == expected
