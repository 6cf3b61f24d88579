"""Expression compiler: every node type against a plain-Python reference, NULLs included."""

from __future__ import annotations

import datetime as dt
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.compile import compile_column, compile_expr, compile_predicate
from sql.binder.expressions import (
    And,
    Arithmetic,
    Call,
    Case,
    Cast,
    ColumnRef,
    Comparison,
    InList,
    IsNull,
    Like,
    Literal,
    Negate,
    Not,
    Or,
)
from storage.batch import Batch, Column
from storage.errors import QueryCancelled
from storage.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TINYINT,
    date_to_days,
    datetime,
    datetime_to_micros,
    decimal,
    varchar,
)


def batch(**cols: tuple[object, list[object]]) -> Batch:
    return Batch(tuple(cols), tuple(Column.from_physical(t, v) for t, v in cols.values()))


def values(expr, b: Batch) -> list[object]:  # type: ignore[no-untyped-def]
    return compile_column(expr)(b).to_pylist()


A = ColumnRef("a", BIGINT)
B = ColumnRef("b", BIGINT)
S = ColumnRef("s", STRING)


def ints(a: list[object], b: list[object]) -> Batch:
    return batch(a=(BIGINT, a), b=(BIGINT, b))


# ---- arithmetic ----------------------------------------------------------------------------
def _ref(op: str, x: int | None, y: int | None) -> object:
    if x is None or y is None:
        return None
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0:
        return None
    if op == "/":
        return x / y
    if op == "%":
        return int(np.fmod(x, y))
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q  # DIV truncates toward zero


nullable_ints = st.lists(st.one_of(st.none(), st.integers(-1000, 1000)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_integer_arithmetic_matches_python(data) -> None:  # type: ignore[no-untyped-def]
    xs = data.draw(nullable_ints)
    ys = data.draw(st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=len(xs),
                            max_size=len(xs)))
    b = ints(xs, ys)
    for op in ("+", "-", "*", "/", "%", "DIV"):
        t = DOUBLE if op == "/" else BIGINT
        got = values(Arithmetic(op, A, B, t), b)
        want = [_ref(op, x, y) for x, y in zip(xs, ys)]
        assert got == pytest.approx(want), op


def test_decimal_arithmetic_is_exact() -> None:
    d = decimal(10, 2)
    b = batch(x=(d, [150, -250, None]), y=(d, [25, 100, 5]))
    x, y = ColumnRef("x", d), ColumnRef("y", d)
    assert values(Arithmetic("+", x, y, decimal(11, 2)), b) == [175, -150, None]
    assert values(Arithmetic("*", x, y, decimal(20, 4)), b) == [3750, -25000, None]
    # 1.50 / 0.25 = 6.000000 at scale 2 + 4
    assert values(Arithmetic("/", x, y, decimal(16, 6)), b) == [6000000, -2500000, None]


def test_negate_and_division_by_zero_is_null() -> None:
    b = ints([5, None, -3], [0, 1, 2])
    assert values(Negate(A, BIGINT), b) == [-5, None, 3]
    assert values(Arithmetic("/", A, B, DOUBLE), b) == [None, None, -1.5]


# ---- comparisons and logic -----------------------------------------------------------------
def test_comparisons_with_nulls_and_null_safe_equality() -> None:
    b = ints([1, 2, None, None], [1, 3, 1, None])
    assert values(Comparison("=", A, B), b) == [1, 0, None, None]
    assert values(Comparison("<", A, B), b) == [0, 1, None, None]
    assert values(Comparison("<=>", A, B), b) == [1, 0, 0, 1]
    assert values(Comparison(">", A, Literal(1, BIGINT)), b) == [0, 1, None, None]
    assert values(Comparison(">", Literal(1, BIGINT), A), b) == [0, 0, None, None]


def test_string_comparison_is_bytewise() -> None:
    b = batch(s=(STRING, ["a", "B", "", None, "ab"]))
    assert values(Comparison("<", S, Literal("a", STRING)), b) == [0, 1, 1, None, 0]


def test_three_valued_logic() -> None:
    T, F, N = Literal(1, BOOLEAN), Literal(0, BOOLEAN), Literal(None, BOOLEAN)
    b = ints([1], [1])
    table = [(T, T), (T, F), (T, N), (F, N), (N, N), (F, F)]
    ref_and = [1, 0, None, 0, None, 0]
    ref_or = [1, 1, 1, None, None, 0]
    for (x, y), ra, ro in zip(table, ref_and, ref_or):
        assert values(And((x, y)), b) == [ra]
        assert values(Or((x, y)), b) == [ro]
    assert values(Not(N), b) == [None]
    assert values(Not(T), b) == [0]


def test_predicate_mask_drops_null() -> None:
    b = ints([1, None, 3], [0, 0, 0])
    mask = compile_predicate(Comparison(">", A, Literal(0, BIGINT)))(b)
    assert mask.tolist() == [True, False, True]


def test_is_null() -> None:
    b = ints([1, None], [0, 0])
    assert values(IsNull(A), b) == [0, 1]
    assert values(IsNull(A, negated=True), b) == [1, 0]


@pytest.mark.parametrize("pattern,expected", [
    ("a%", [1, 1, 0, 0, None]),
    ("%b%", [1, 0, 1, 0, None]),
    ("_b_", [1, 0, 1, 0, None]),
    ("abc", [1, 0, 0, 0, None]),
    ("%", [1, 1, 1, 1, None]),
    ("a\\%", [0, 0, 0, 0, None]),
    ("%\\_", [0, 0, 0, 1, None]),
])
def test_like(pattern: str, expected: list[object]) -> None:
    b = batch(s=(STRING, ["abc", "a", "xbx", "q_", None]))
    assert values(Like(S, Literal(pattern, STRING)), b) == expected
    negated = [None if e is None else 1 - e for e in expected]  # type: ignore[operator]
    assert values(Like(S, Literal(pattern, STRING), negated=True), b) == negated


def test_in_list_null_semantics() -> None:
    b = ints([1, 2, None], [0, 0, 0])
    one, null = Literal(1, BIGINT), Literal(None, BIGINT)
    assert values(InList(A, (one,)), b) == [1, 0, None]
    assert values(InList(A, (one, null)), b) == [1, None, None]
    assert values(InList(A, (one,), negated=True), b) == [0, 1, None]
    assert values(InList(A, (one, null), negated=True), b) == [0, None, None]
    # non-constant list
    assert values(InList(A, (B, one)), ints([1, 2, 3], [9, 2, None])) == [1, 1, None]


def test_in_list_strings() -> None:
    b = batch(s=(STRING, ["x", "y", None]))
    assert values(InList(S, (Literal("y", STRING),)), b) == [0, 1, None]


# ---- CASE / functions ----------------------------------------------------------------------
def test_case_first_true_branch_wins_and_null_condition_falls_through() -> None:
    b = ints([1, 5, None], [0, 0, 0])
    e = Case(((Comparison("<", A, Literal(3, BIGINT)), Literal("small", STRING)),
              (Comparison("<", A, Literal(10, BIGINT)), Literal("mid", STRING))),
             Literal("other", STRING), STRING)
    assert values(e, b) == ["small", "mid", "other"]
    no_else = Case(((Comparison("<", A, Literal(3, BIGINT)), A),), None, BIGINT)
    assert values(no_else, b) == [1, None, None]


def test_coalesce_nullif_concat() -> None:
    b = batch(a=(BIGINT, [None, 2, None]), b=(BIGINT, [7, 8, None]), s=(STRING, ["x", None, "z"]))
    assert values(Call("coalesce", (A, B, Literal(0, BIGINT)), BIGINT), b) == [7, 2, 0]
    assert values(Call("nullif", (B, Literal(8, BIGINT)), BIGINT), b) == [7, None, None]
    assert values(Call("concat", (S, Literal("-", STRING)), STRING), b) == ["x-", None, "z-"]
    assert values(Call("concat_ws", (Literal(",", STRING), S, S), STRING), b) == ["x,x", "", "z,z"]


@pytest.mark.parametrize("s,pos,length,want", [
    ("hello", 2, None, "ello"), ("hello", 2, 3, "ell"), ("hello", -3, 2, "ll"),
    ("hello", 0, 2, ""), ("hello", 9, 1, ""), ("hello", 1, -1, ""), ("héllo", 2, 2, "él"),
])
def test_substr_mysql_semantics(s: str, pos: int, length: int | None, want: str) -> None:
    b = batch(s=(STRING, [s]))
    args = [S, Literal(pos, BIGINT)] + ([Literal(length, BIGINT)] if length is not None else [])
    assert values(Call("substr", tuple(args), STRING), b) == [want]


def test_string_functions() -> None:
    b = batch(s=(STRING, ["Héllo", "", None]))
    assert values(Call("upper", (S,), STRING), b) == ["HÉLLO", "", None]
    assert values(Call("length", (S,), INT), b) == [6, 0, None]  # bytes, as MySQL
    assert values(Call("char_length", (S,), INT), b) == [5, 0, None]
    assert values(Call("lpad", (S, Literal(7, BIGINT), Literal("*", STRING)), STRING), b) == [
        "**Héllo", "*******", None]


def test_round_floor_ceil() -> None:
    d = decimal(6, 3)
    b = batch(x=(DOUBLE, [2.5, -2.5, 1.04]), m=(d, [2345, -2345, 1050]))
    x, m = ColumnRef("x", DOUBLE), ColumnRef("m", d)
    assert values(Call("round", (x,), DOUBLE), b) == [3.0, -3.0, 1.0]
    assert values(Call("round", (m, Literal(2, BIGINT)), decimal(6, 2)), b) == [235, -235, 105]
    assert values(Call("truncate", (m, Literal(1, BIGINT)), decimal(6, 1)), b) == [23, -23, 10]
    assert values(Call("floor", (x,), DOUBLE), b) == [2.0, -3.0, 1.0]
    assert values(Call("ceil", (m,), decimal(4, 0)), b) == [3, -2, 2]


def test_date_functions() -> None:
    days = [date_to_days(dt.date(2020, 2, 29)), date_to_days(dt.date(1999, 12, 31)), None]
    b = batch(d=(DATE, days))
    d = ColumnRef("d", DATE)
    assert values(Call("year", (d,), INT), b) == [2020, 1999, None]
    assert values(Call("month", (d,), INT), b) == [2, 12, None]
    assert values(Call("day", (d,), INT), b) == [29, 31, None]
    assert values(Call("dayofweek", (d,), INT), b) == [7, 6, None]  # Saturday, Friday
    plus_year = values(Call("date_add", (d, Literal(1, BIGINT), Literal("YEAR", STRING)), DATE), b)
    assert plus_year[:2] == [date_to_days(dt.date(2021, 2, 28)),
                             date_to_days(dt.date(2000, 12, 31))]
    fmt = values(Call("date_format", (d, Literal("%Y/%m/%d %a", STRING)), STRING), b)
    assert fmt == ["2020/02/29 Sat", "1999/12/31 Fri", None]


# ---- casts ---------------------------------------------------------------------------------
def test_casts_follow_doris_non_strict_rules() -> None:
    b = batch(s=(STRING, ["12", " 7 ", "x", "1.5", None]),
              x=(DOUBLE, [1.9, -1.9, 1e30, 2.5, 0.0]))
    assert values(Cast(S, INT), b) == [12, 7, None, 1, None]
    assert values(Cast(S, DOUBLE), b) == [12.0, 7.0, None, 1.5, None]
    assert values(Cast(ColumnRef("x", DOUBLE), INT), b) == [1, -1, None, 2, 0]
    assert values(Cast(ColumnRef("x", DOUBLE), decimal(5, 1)), b) == [19, -19, None, 25, 0]
    assert values(Cast(Literal(300, BIGINT), TINYINT), b)[0] is None  # out of range -> NULL


def test_cast_decimal_rescale_and_to_string() -> None:
    d = decimal(10, 3)
    b = batch(m=(d, [1235, -1235, None]))
    m = ColumnRef("m", d)
    assert values(Cast(m, decimal(10, 2)), b) == [124, -124, None]
    assert values(Cast(m, STRING), b) == ["1.235", "-1.235", None]
    assert values(Cast(m, BIGINT), b) == [1, -1, None]


def test_cast_strings_to_temporal() -> None:
    b = batch(s=(STRING, ["2020-01-02", "2020-01-02 03:04:05", "bad", None]))
    assert values(Cast(S, DATE), b) == [date_to_days(dt.date(2020, 1, 2))] * 2 + [None, None]
    micros = values(Cast(S, datetime(0)), b)
    assert micros[1] == datetime_to_micros(dt.datetime(2020, 1, 2, 3, 4, 5))
    assert micros[2:] == [None, None]


def test_literal_strings_are_broadcast() -> None:
    b = ints([1, 2, 3], [0, 0, 0])
    out = compile_column(Literal("ab", varchar(2)))(b)
    assert out.to_pylist() == ["ab", "ab", "ab"]


# ---- SLEEP and cancellation ----------------------------------------------------------------
def test_sleep_returns_false_and_is_interrupted_by_cancel() -> None:
    b = ints([1], [1])
    cancel = threading.Event()
    fn = compile_expr(Call("sleep", (Literal(0.0, DOUBLE),), BOOLEAN), cancel)
    assert fn(b).data.tolist() == [0]
    slow = compile_expr(Call("sleep", (Literal(30.0, DOUBLE),), BOOLEAN), cancel)
    threading.Timer(0.05, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(QueryCancelled):
        slow(b)
    assert time.monotonic() - start < 5


def test_large_decimals_use_python_ints() -> None:
    d = decimal(38, 2)
    big = 10**36 + 7
    b = batch(m=(d, [big, None]))
    m = ColumnRef("m", d)
    assert values(Arithmetic("+", m, m, decimal(38, 2)), b) == [2 * big, None]
    assert values(Cast(m, STRING), b) == ["1" + "0" * 33 + "0.07", None]
