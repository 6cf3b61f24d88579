"""Column/Batch transforms keep every value, NULL and empty string."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Batch, Column

strings = st.lists(st.one_of(st.none(), st.text(max_size=8)), min_size=0, max_size=30)


@settings(max_examples=80, deadline=None)
@given(strings, st.data())
def test_string_take_filter_slice_concat(values: list, data: st.DataObject) -> None:
    col = Column.from_physical(T.STRING, values)
    assert col.to_pylist() == values
    idx = data.draw(st.lists(st.integers(0, max(len(values) - 1, 0)), max_size=20)) if values else []
    assert col.take(np.array(idx, dtype=np.int64)).to_pylist() == [values[i] for i in idx]
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values))), dtype=bool)
    assert col.filter(mask).to_pylist() == [v for v, m in zip(values, mask) if m]
    a, b = data.draw(st.integers(0, len(values))), data.draw(st.integers(0, len(values)))
    lo, hi = min(a, b), max(a, b)
    assert col.slice(lo, hi).to_pylist() == values[lo:hi]
    assert Column.concat([col.slice(0, lo), col.slice(lo, len(values))]).to_pylist() == values


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=30),
       st.lists(st.one_of(st.none(), st.text(max_size=5)), max_size=30))
def test_arrow_round_trip(ints: list, texts: list) -> None:
    n = min(len(ints), len(texts))
    batch = Batch(("a", "b"), (Column.from_physical(T.BIGINT, ints[:n]), Column.from_physical(T.varchar(9), texts[:n])))
    back = Batch.from_arrow(batch.to_arrow(), batch.types)
    assert back.rows() == batch.rows()


def test_largeint_and_wide_decimal_round_trip_through_arrow() -> None:
    values = [2**127 - 1, -(2**127), None, 0]
    col = Column.from_physical(T.LARGEINT, values)
    assert Column.from_arrow(T.LARGEINT, col.to_arrow()).to_pylist() == values
    dec = Column.from_physical(T.decimal(38, 9), [10**37, None, -5])
    assert Column.from_arrow(T.decimal(38, 9), dec.to_arrow()).to_pylist() == [10**37, None, -5]
