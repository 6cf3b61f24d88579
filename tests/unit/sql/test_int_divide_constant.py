"""`x DIV c` by a positive integer constant (sql/functions/operators.py
`_divide_by_positive_constant`, the GROUP BY key `lo_orderdate DIV 10000`) equals the general
truncating division and a pure-Python reference: every integer width, negative dividends,
NULLs, empty inputs; divisors that are not one positive constant take the general path."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sql.functions.operators import _divide_by_positive_constant, arithmetic
from sql.functions.vector import Vec
from storage import types as T

WIDTHS = [(T.TINYINT, np.int8), (T.SMALLINT, np.int16), (T.INT, np.int32),
          (T.BIGINT, np.int64)]


def py_div(x: int, y: int) -> int:
    """MySQL / Doris DIV: truncation toward zero."""
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


@settings(max_examples=150, deadline=None)
@given(width=st.sampled_from(WIDTHS), data=st.data(),
       divisor=st.integers(1, 20000), nulls=st.booleans())
def test_positive_constant_divisor_matches_python(width, data, divisor: int,
                                                  nulls: bool) -> None:
    t, dtype = width
    info = np.iinfo(dtype)
    xs = data.draw(st.lists(st.integers(int(info.min), int(info.max)), max_size=50))
    x = np.asarray(xs, dtype)
    valid = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(xs),
                                          max_size=len(xs))), np.bool_) if nulls else None
    y = np.full(len(xs), divisor, np.int16 if divisor < 2**15 else np.int32)
    got = arithmetic("DIV", Vec(t, x, valid), Vec(T.INT, y), T.BIGINT)
    assert got.data.dtype == np.int64
    assert got.data.tolist() == [py_div(a, divisor) for a in xs]
    if valid is not None:
        assert got.validity is not None and got.validity.tolist() == valid.tolist()
    else:
        assert got.validity is None


def test_fast_path_is_taken_only_for_one_positive_constant() -> None:
    x = np.array([19930101, -19930101, 7, -7, 0], np.int32)
    assert _divide_by_positive_constant(x, np.full(5, 10000, np.int16)).tolist() == \
        [1993, -1993, 0, 0, 0]
    assert _divide_by_positive_constant(x, np.array([1, 2, 1, 1, 1])) is None
    assert _divide_by_positive_constant(x, np.full(5, -3)) is None
    assert _divide_by_positive_constant(x, np.zeros(5, np.int64)) is None
    assert _divide_by_positive_constant(x[:0], np.zeros(0, np.int64)) is None
    assert _divide_by_positive_constant(x.astype(np.float64), np.full(5, 3)) is None


def test_general_divisors_keep_their_semantics() -> None:
    x = Vec(T.INT, np.array([7, -7, 7, 5], np.int32))
    y = Vec(T.INT, np.array([2, 2, 0, -2], np.int32))
    got = arithmetic("DIV", x, y, T.INT)
    assert got.data[[0, 1, 3]].tolist() == [3, -3, -2]
    assert got.validity is not None and got.validity.tolist() == [True, True, False, True]
