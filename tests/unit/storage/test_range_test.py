"""storage/segment/range_test.py: the one-pass test of an integer column's comparisons equals
the general conjunction (`storage.predicates.evaluate`, the reference) for every integer
width, NULLs, empty windows, contradictory and boundary ranges; predicates it does not cover
give None (the general test runs)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.batch import Column
from storage.predicates import ColumnPredicate, evaluate
from storage.segment.range_test import IntegerRange
from storage.types import BIGINT, DATE, INT, SMALLINT, TINYINT, DataType, decimal

TYPES = [TINYINT, SMALLINT, INT, BIGINT, DATE, decimal(15, 2)]
OPS = ["=", "!=", "<", "<=", ">", ">="]


def _reference(preds: list[ColumnPredicate], col: Column) -> np.ndarray:
    hit = np.ones(len(col), np.bool_)
    for p in preds:
        hit &= evaluate(p, col)
    return hit


@settings(max_examples=200, deadline=None)
@given(data=st.data(), t=st.sampled_from(TYPES), n=st.sampled_from([0, 1, 5, 300]))
def test_matches_the_general_conjunction(data, t: DataType, n: int) -> None:  # type: ignore[no-untyped-def]
    info = np.iinfo(t.numpy_dtype)
    lo, hi = int(info.min), int(info.max)
    near = st.one_of(st.integers(-20, 20), st.sampled_from([lo, hi, lo + 1, hi - 1]))
    values = data.draw(st.lists(st.one_of(st.none(), near), min_size=n, max_size=n))
    col = Column.from_physical(t, values)
    preds = [ColumnPredicate("c", op, (v,)) for op, v in data.draw(
        st.lists(st.tuples(st.sampled_from(OPS), near), min_size=1, max_size=4))]
    rng = IntegerRange.of(preds, col.data.dtype)
    assert rng is not None
    np.testing.assert_array_equal(rng.mask(col.data, col.validity), _reference(preds, col))


@pytest.mark.parametrize("pred", [
    ColumnPredicate("c", "in", (1, 2)),
    ColumnPredicate("c", "is_null"),
    ColumnPredicate("c", "<", (2.5,)),
    ColumnPredicate("c", "=", (True,)),
])
def test_other_predicates_keep_the_general_test(pred: ColumnPredicate) -> None:
    assert IntegerRange.of([ColumnPredicate("c", ">", (0,)), pred], np.dtype(np.int32)) is None


def test_float_columns_keep_the_general_test() -> None:
    assert IntegerRange.of([ColumnPredicate("c", ">", (0,))], np.dtype(np.float64)) is None
