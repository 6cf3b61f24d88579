"""CAST between DECIMAL types that only widen (TPC-H Q1's DECIMAL(15,2) -> DECIMAL(16,2)
operands) skips the range test: same values as exact Python Decimal arithmetic, NULLs kept,
and narrowing casts still turn out-of-range values into NULL."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sql.functions.cast as cast_module
from sql.functions.cast import cast_vec
from sql.functions.vector import Vec
from storage.types import DataType, TypeKind


def dec(p: int, s: int) -> DataType:
    return DataType(TypeKind.DECIMAL, precision=p, scale=s)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 15), st.data())
def test_widening_decimal_cast_keeps_every_value(p: int, data: st.DataObject) -> None:
    s = data.draw(st.integers(0, p))
    ts = data.draw(st.integers(s, 18 - (p - s)))  # keeps integer digits p - s
    tp = data.draw(st.integers(ts + (p - s), 18))
    lim = 10**p - 1
    vals = data.draw(st.lists(st.integers(-lim, lim), max_size=30))
    nulls = data.draw(st.lists(st.booleans(), min_size=len(vals), max_size=len(vals)))
    valid = None if not any(nulls) else ~np.array(nulls, np.bool_)
    src = Vec(dec(p, s), np.array(vals, np.int64), valid)
    out = cast_vec(src, dec(tp, ts))
    assert out.type == dec(tp, ts) and out.data.dtype == np.int64
    want = [int(Decimal(x).scaleb(ts - s)) for x in vals]
    assert out.data.tolist() == want
    got_valid = out.validity if out.validity is not None else np.ones(len(vals), np.bool_)
    assert got_valid.tolist() == [not n for n in nulls]


def test_narrowing_decimal_cast_still_nulls_out_of_range() -> None:
    src = Vec(dec(15, 2), np.array([123456, -99, 10**14], np.int64))
    out = cast_vec(src, dec(5, 2))
    assert out.validity is not None and out.validity.tolist() == [False, True, False]
    assert out.data.tolist()[1] == -99


def test_widening_cast_takes_no_range_test(monkeypatch: pytest.MonkeyPatch) -> None:

    def no_range_test(*a: object) -> Vec:
        raise AssertionError("range test on a widening cast")

    monkeypatch.setattr(cast_module, "fit_range", no_range_test)
    out = cast_vec(Vec(dec(15, 2), np.array([5, -7], np.int64)), dec(16, 2))
    assert out.data.tolist() == [5, -7]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(10**15) + 1, 10**15 - 1), max_size=30), st.data())
def test_cast_to_wide_decimal_gives_python_ints(vals: list[int], data: st.DataObject) -> None:
    """DECIMAL(15,2) -> DECIMAL(38,4) (Q22's `CAST(c_acctbal AS decimal(38,4)) > avg`)."""
    nulls = data.draw(st.lists(st.booleans(), min_size=len(vals), max_size=len(vals)))
    valid = None if not any(nulls) else ~np.array(nulls, np.bool_)
    out = cast_vec(Vec(dec(15, 2), np.array(vals, np.int64), valid), dec(38, 4))
    assert out.data.dtype == np.dtype(object)
    assert all(type(x) is int for x in out.data.tolist())
    assert out.data.tolist() == [x * 100 for x in vals]
    got_valid = out.validity if out.validity is not None else np.ones(len(vals), np.bool_)
    assert got_valid.tolist() == [not n for n in nulls]


def test_cast_to_wide_decimal_converts_in_c(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_row_loop(values: object) -> np.ndarray:
        raise AssertionError("per-row conversion to Python ints")

    monkeypatch.setattr(cast_module, "object_array", no_row_loop)
    out = cast_vec(Vec(dec(15, 2), np.array([5, -7], np.int64)), dec(38, 4))
    assert out.data.tolist() == [500, -700]
