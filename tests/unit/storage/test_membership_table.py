"""The branch-free membership kernels (storage/membership.py `MembershipTable`) against a
Python set: byte tables and packed words, 32-bit and 64-bit offsets, sets near the integer
types' extremes, values far below and above the set (offsets that wrap), NULL rows through
the `in_bitmap` predicate."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import membership
from storage.batch import Column
from storage.membership import MembershipTable, bitmap_contains, bitmap_contains_reference
from storage.predicates import ColumnPredicate, IntegerSet, evaluate
from storage.types import BIGINT, INT

_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]
_I64 = (-(2 ** 63), 2 ** 63 - 1)


@st.composite
def cases(draw):  # type: ignore[no-untyped-def]
    dtype = np.dtype(draw(st.sampled_from(_DTYPES)))
    info = np.iinfo(dtype)
    # the key set: anywhere in int64 (build keys may be wider than the probe column)
    base = draw(st.one_of(st.integers(-300, 300), st.integers(*_I64),
                          st.sampled_from([int(info.min), int(info.max) - 40,
                                           -(2 ** 31), 2 ** 31 - 41, _I64[0], _I64[1] - 40])))
    offsets = draw(st.lists(st.integers(0, 40), min_size=1, max_size=12))
    keys = [min(max(base + o, _I64[0]), _I64[1]) for o in offsets]
    values = draw(st.lists(st.one_of(
        st.integers(int(info.min), int(info.max)),
        st.sampled_from([int(info.min), int(info.max), 0, -1 if info.min < 0 else 0]),
        st.sampled_from([min(max(k + d, int(info.min)), int(info.max))
                         for k in keys for d in (-1, 0, 1)])), max_size=60))
    return dtype, keys, values


@settings(max_examples=400, deadline=None)
@given(case=cases(), packed=st.booleans())
def test_membership_table_matches_a_python_set(case, packed: bool) -> None:  # type: ignore[no-untyped-def]
    dtype, keys, values = case
    s = IntegerSet.of(np.array(keys, np.int64))
    data = np.array(values, dtype)
    saved = membership.BYTE_TABLE_MAX_SPAN
    membership.BYTE_TABLE_MAX_SPAN = 0 if packed else saved
    try:
        table = MembershipTable(s.lo, s.bits)
    finally:
        membership.BYTE_TABLE_MAX_SPAN = saved
    assert table.packed == (packed and len(s.bits) > 0)
    expected = [v in set(keys) for v in values]
    assert table.contains(data).tolist() == expected
    assert s.contains(data).tolist() == expected


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.integers(0, 3_000_000), min_size=1, max_size=50),
       values=st.lists(st.integers(-5, 3_000_005), max_size=200))
def test_wide_spans_use_packed_words(keys: list[int], values: list[int]) -> None:
    s = IntegerSet.of(np.array(keys, np.int64))
    table = MembershipTable(s.lo, s.bits)
    assert table.packed == (len(s.bits) > membership.BYTE_TABLE_MAX_SPAN)
    for dtype in (np.int32, np.int64):
        data = np.array(values, dtype)
        assert table.contains(data).tolist() == [v in set(keys) for v in values]
        assert np.array_equal(bitmap_contains(data, s.lo, s.bits),
                              bitmap_contains_reference(data, s.lo, s.bits))


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.integers(-1000, 1000), max_size=20),
       values=st.lists(st.one_of(st.none(), st.integers(-1100, 1100)), max_size=50),
       wide=st.booleans())
def test_in_bitmap_predicate_with_nulls(keys: list[int], values: list[int | None],
                                        wide: bool) -> None:
    col = Column.from_physical(BIGINT if wide else INT, values)
    pred = ColumnPredicate("c", "in_bitmap", (IntegerSet.of(np.array(keys, np.int64)),))
    assert evaluate(pred, col).tolist() == [v is not None and v in set(keys) for v in values]


def test_empty_sets_and_empty_columns() -> None:
    empty = IntegerSet.of(np.zeros(0, np.int64))
    assert not empty.contains(np.arange(5, dtype=np.int32)).any()
    assert len(empty) == 0
    s = IntegerSet.of(np.array([3, 7]))
    assert s.contains(np.zeros(0, np.int32)).shape == (0,)
    assert len(s) == 2 and len(s) == 2  # counted once, then remembered
