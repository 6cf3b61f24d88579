"""storage/memtable.py duplicate_sort_order: the key-at-a-time stable sort of a DUPLICATE
memtable equals np.lexsort by the keys with ties in input order (the order `combine` gives),
for every integer width, narrow and wide key ranges, keys already in order, and booleans;
keys it does not handle (NULLs, strings, floats) answer None."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Batch, Column
from storage.memtable import duplicate_sort_order

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.bool_]
KIND_OF = {np.int8: T.TINYINT, np.int16: T.SMALLINT, np.int32: T.INT, np.int64: T.BIGINT,
           np.bool_: T.BOOLEAN}


@st.composite
def key_column(draw: st.DrawFn, n: int) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    if dtype.kind == "b":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype)
    info = np.iinfo(dtype)
    span = draw(st.sampled_from([3, 1000, 70000, None]))  # narrow, radix, wide, full range
    lo = draw(st.integers(int(info.min), int(info.max)))
    hi = int(info.max) if span is None else min(int(info.max), lo + span)
    values = np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype)
    if draw(st.booleans()):
        values.sort()  # a key the rows already follow
    return values


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_matches_lexsort_with_input_order_ties(data: st.DataObject) -> None:
    n = data.draw(st.integers(0, 300))
    nkeys = data.draw(st.integers(1, 3))
    keys = [data.draw(key_column(n)) for _ in range(nkeys)]
    names = [f"k{i}" for i in range(nkeys)]
    batch = Batch(tuple(names) + ("v",), tuple(
        [Column(KIND_OF.get(k.dtype.type, T.BIGINT), k) for k in keys]
        + [Column(T.BIGINT, np.arange(n, dtype=np.int64))]))
    order = duplicate_sort_order(batch, names)
    want = np.lexsort([np.arange(n)] + [k for k in reversed(keys)])
    assert order is not None
    assert np.array_equal(order, want)


def test_other_keys_go_to_the_general_sort() -> None:
    with_null = Column(T.INT, np.array([2, 1], np.int32), np.array([True, False]))
    floats = Column(T.DOUBLE, np.array([2.0, 1.0]))
    strings = Column.from_physical(T.STRING, ["b", "a"])
    for col in (with_null, floats, strings):
        assert duplicate_sort_order(Batch(("k",), (col,)), ["k"]) is None
