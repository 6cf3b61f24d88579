"""Constant folding of a scan's residual filter (executor/scan_filters.py): folded conjuncts that
become column-vs-constant tests go to storage, the rest stays residual (folded), and nothing
row-dependent or non-deterministic is folded. Every case is checked against evaluating the
original filter on a batch (the folded form must keep exactly the same rows)."""

from __future__ import annotations

import datetime as dt

import numpy as np

from executor.compile import compile_predicate
from executor.scan_filters import fold_constants, fold_residual
from sql.binder.expressions import (
    And,
    Arithmetic,
    Call,
    Cast,
    ColumnRef,
    Comparison,
    Literal,
    Negate,
)
from storage.batch import Batch, Column
from storage.predicates import evaluate
from storage.types import BIGINT, DATE, DOUBLE, STRING, date_to_days, decimal

SHIPDATE = ColumnRef("d", DATE)
DISCOUNT = ColumnRef("m", decimal(15, 2))
QTY = ColumnRef("q", BIGINT)
D1994 = Literal(date_to_days(dt.date(1994, 1, 1)), DATE)


def _date_add(base: Literal, amount: int, unit: str) -> Call:
    return Call("date_add", (base, Literal(amount, BIGINT), Literal(unit, STRING)), DATE)


def _batch() -> Batch:
    days = [date_to_days(dt.date(1993, 6, 1)) + 7 * i for i in range(120)]
    m = [None if i % 11 == 0 else (i * 3) % 12 for i in range(120)]  # 0.00 .. 0.11, NULLs
    q = [i % 50 for i in range(120)]
    return Batch(("d", "m", "q"), (Column.from_physical(DATE, days),
                                    Column.from_physical(decimal(15, 2), m),
                                    Column.from_physical(BIGINT, q)))


def _same_rows(original, pushed, residual) -> None:  # type: ignore[no-untyped-def]
    b = _batch()
    want = compile_predicate(original)(b)
    got = np.ones(b.num_rows, np.bool_)
    for p in pushed:
        got &= evaluate(p, b.column(p.column))
    if residual is not None:
        got &= compile_predicate(residual)(b)
    assert (got == want).all()
    assert want.any() and not want.all()  # the case tests something


def test_date_interval_and_decimal_arithmetic_are_pushed() -> None:
    """TPC-H Q6's filter: every conjunct folds into a storage predicate."""
    dec = decimal(15, 2)
    lo = Cast(Arithmetic("-", Literal(6, dec), Literal(1, dec), dec), dec)
    hi = Cast(Arithmetic("+", Literal(6, dec), Literal(1, dec), dec), dec)
    conds = [Comparison(">=", SHIPDATE, D1994),
             Comparison("<", SHIPDATE, _date_add(D1994, 1, "YEAR")),
             Comparison(">=", DISCOUNT, lo), Comparison("<=", DISCOUNT, hi),
             Comparison("<", QTY, Literal(24, BIGINT))]
    original = And(tuple(conds))
    pushed, residual = fold_residual(original)
    assert residual is None
    assert [(p.column, p.op, p.values) for p in pushed[1:4]] == [
        ("d", "<", (date_to_days(dt.date(1995, 1, 1)),)), ("m", ">=", (5,)), ("m", "<=", (7,))]
    _same_rows(original, pushed, residual)


def test_negative_day_interval() -> None:
    """TPC-H Q1: `l_shipdate <= date '1998-12-01' - interval '90' day` (0 - 90 folded too)."""
    amount = Arithmetic("-", Literal(0, BIGINT), Literal(90, BIGINT), BIGINT)
    bound = Call("date_add", (Literal(date_to_days(dt.date(1994, 12, 1)), DATE), amount,
                              Literal("DAY", STRING)), DATE)
    original = Comparison("<=", SHIPDATE, bound)
    pushed, residual = fold_residual(original)
    assert residual is None
    assert pushed[0].values == (date_to_days(dt.date(1994, 9, 2)),)
    _same_rows(original, pushed, residual)


def test_row_dependent_parts_stay_residual_but_folded() -> None:
    """`q * 2 < 10 + 30`: the constant side folds, the conjunct stays a residual filter."""
    original = Comparison("<", Arithmetic("*", QTY, Literal(2, BIGINT), BIGINT),
                          Arithmetic("+", Literal(10, BIGINT), Literal(30, BIGINT), BIGINT))
    pushed, residual = fold_residual(original)
    assert pushed == ()
    assert residual == Comparison("<", original.left, Literal(40, BIGINT))
    _same_rows(original, pushed, residual)


def test_non_deterministic_and_unknown_calls_are_not_folded() -> None:
    rand = Call("rand", (), DOUBLE)
    e = Comparison("<", rand, Literal(2.0, DOUBLE))
    assert fold_constants(e) is e
    neg = Negate(Literal(3, BIGINT), BIGINT)
    assert fold_constants(neg) == Literal(-3, BIGINT)


def test_null_constant_stays_residual() -> None:
    """A comparison with a NULL constant keeps no row; it is not a storage predicate."""
    null_plus = Arithmetic("+", Literal(None, BIGINT), Literal(1, BIGINT), BIGINT)
    original = Comparison("<", QTY, null_plus)
    pushed, residual = fold_residual(original)
    assert pushed == ()
    assert residual == Comparison("<", QTY, Literal(None, BIGINT))
    assert not compile_predicate(residual)(_batch()).any()


def test_out_of_range_date_folds_to_null() -> None:
    """A constant past 9999-12-31 is NULL (Doris 2.1), folded as such: no row qualifies."""
    original = Comparison("<", SHIPDATE, _date_add(D1994, 100_000, "YEAR"))
    pushed, residual = fold_residual(original)
    assert pushed == ()
    assert residual is not None
    assert not compile_predicate(residual)(_batch()).any()
    assert not compile_predicate(original)(_batch()).any()
