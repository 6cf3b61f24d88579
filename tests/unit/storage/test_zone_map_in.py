"""Zone maps with long IN lists (a join's runtime filter sends up to 1024 constants): the binary
search over the sorted constants keeps exactly the pages the one-pass-per-constant test keeps,
for integer, float and byte-string bounds, with missing bounds and pages without values."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.indexes.zone_map import (
    HAS_NOT_NULL,
    IN_SEARCH_MIN_VALUES,
    MAX_VALID,
    MIN_VALID,
    ZoneMap,
)


def _reference(zm: ZoneMap, values: list[object]) -> np.ndarray:
    out = []
    for f, lo, hi in zip(zm.flags, zm.mins, zm.maxs):
        ok = bool(f & HAS_NOT_NULL) and any(
            (not f & MIN_VALID or lo <= v) and (not f & MAX_VALID or hi >= v) for v in values)
        out.append(ok)
    return np.array(out, dtype=np.bool_)


def _zone_map(pages: list[tuple[object, object, int]], dtype: object) -> ZoneMap:
    flags = np.array([f for _, _, f in pages], dtype=np.uint8)
    mins = np.empty(len(pages), dtype=dtype)
    maxs = np.empty(len(pages), dtype=dtype)
    for i, (a, b, _) in enumerate(pages):
        mins[i], maxs[i] = min(a, b), max(a, b)  # type: ignore[type-var]
    return ZoneMap(flags, mins, maxs)


FLAGS = st.sampled_from([HAS_NOT_NULL | MIN_VALID | MAX_VALID] * 4 + [
    HAS_NOT_NULL | MIN_VALID, HAS_NOT_NULL | MAX_VALID, HAS_NOT_NULL, 0])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(-50, 50), FLAGS), min_size=1,
                max_size=20),
       st.lists(st.integers(-60, 60), min_size=IN_SEARCH_MIN_VALUES + 1, max_size=60))
def test_long_in_list_on_integer_bounds(pages, values) -> None:  # type: ignore[no-untyped-def]
    zm = _zone_map(pages, np.int32)
    assert (zm.may_match("in", values) == _reference(zm, values)).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5), FLAGS), min_size=1, max_size=20),
       st.lists(st.floats(-6, 6), min_size=IN_SEARCH_MIN_VALUES + 1, max_size=60))
def test_long_in_list_on_float_bounds(pages, values) -> None:  # type: ignore[no-untyped-def]
    zm = _zone_map(pages, np.float64)
    assert (zm.may_match("in", values) == _reference(zm, values)).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=4), st.binary(max_size=4), FLAGS), min_size=1,
                max_size=20),
       st.lists(st.binary(max_size=4), min_size=IN_SEARCH_MIN_VALUES + 1, max_size=60))
def test_long_in_list_on_string_bounds(pages, values) -> None:  # type: ignore[no-untyped-def]
    zm = _zone_map(pages, object)
    assert (zm.may_match("in", values) == _reference(zm, values)).all()


INT_TYPES = st.sampled_from(["TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT", "DOUBLE",
                             "VARCHAR(10)"])
CONSTANTS = st.one_of(
    st.integers(-(2**70), 2**70), st.booleans(), st.floats(allow_nan=True),
    st.integers(-300, 300).map(np.int64), st.text(max_size=3), st.none())


@settings(max_examples=150, deadline=None)
@given(INT_TYPES, st.lists(CONSTANTS, max_size=30))
def test_index_values_is_index_value_per_constant(type_name: str, values: list[object]) -> None:
    """The batched conversion of an IN list (with its fast path for integer columns) keeps and
    converts exactly what `index_value` one constant at a time keeps and converts."""
    from storage.indexes.zone_map import NotIndexable, index_value, index_values  # noqa: PLC0415
    from storage.segment.encoding import layout_of  # noqa: PLC0415
    from storage.types import parse_type  # noqa: PLC0415

    dtype = parse_type(type_name)
    layout = layout_of(dtype)
    expected = []
    for v in values:
        try:
            expected.append(index_value(dtype, layout, v))
        except NotIndexable:
            continue
    got = index_values(dtype, layout, values)
    assert got == expected
    assert [type(g) for g in got] == [type(e) for e in expected]
