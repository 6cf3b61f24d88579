"""Rule fold_constants (planner/rules/fold_constants.py): constant subexpressions become
literals the later rules see (storage predicates), with exactly the value the executor computes
unfolded."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from test_optimizer import plan, scan_of

from executor.compile import compile_expr
from planner.logical import LogicalProject, walk
from planner.rules.fold_constants import fold_expression
from sql.binder.expressions import Call, Expr, Literal
from storage.batch import Batch, Column
from storage.reader import ColumnPredicate
from storage.types import BIGINT, DATE, INT, STRING, date_to_days


def _days(y: int, m: int, d: int) -> int:
    return date_to_days(dt.date(y, m, d))


def test_date_plus_interval_folds_into_a_storage_predicate() -> None:
    p = plan("SELECT a FROM t WHERE d >= date '1994-01-01' "
             "AND d < date '1994-01-01' + interval '3' month")
    s = scan_of(p)
    assert set(s.predicates) == {ColumnPredicate("d", ">=", (_days(1994, 1, 1),)),
                                 ColumnPredicate("d", "<", (_days(1994, 4, 1),))}
    assert not any(isinstance(x, Call) for f in s.filters for x in f.walk())
    # the rule switched off: DATE_ADD stays, the conjunct is no storage predicate
    s = scan_of(plan("SELECT a FROM t WHERE d < date '1994-01-01' + interval '3' month",
                     disabled=frozenset({"fold_constants"})))
    assert s.predicates == ()
    assert any(isinstance(x, Call) and x.name == "date_add" for f in s.filters for x in f.walk())


def test_folding_reaches_projections_and_leaves_columns_alone() -> None:
    p = plan("SELECT a + (1 + 2), upper(concat('x', 'é')), b FROM t")
    proj = next(n for n in walk(p) if isinstance(n, LogicalProject))
    exprs = [e for _, e in proj.exprs]
    assert exprs[0].sql() == "(CAST(`a` AS bigint) + 3)"
    assert isinstance(exprs[1], Literal) and exprs[1].value == "XÉ"


CONSTANT_EXPRS = [
    "date '2020-01-31' + interval '1' month",  # clamped to the month's end
    "date '1994-01-01' + interval '1' year",
    "date '1995-09-01' - interval '3' day",
    "date_add('2020-02-29', interval 1 year)",
    "date '9999-12-31' + interval '1' day",  # past Doris' range: NULL
    "date_sub(date '0000-01-01', interval 1 day)",
    "date_add(NULL, interval 1 day)",
    "1 + 2 * 3",
    "1 / 0",  # NULL in Doris
    "7 % 0",
    "-(5)",
    "0.1 + 0.2",
    "cast('12.5' as decimal(10, 2)) * 3",
    "cast('abc' as int)",
    "cast('2021-03-04' as date)",
    "substring('héllo wörld', 2, 4)",
    "substring('abc', 5)",
    "substring('', 1, 2)",
    "concat('a', NULL)",
    "upper('straße')",
    "length('日本語')",
    "coalesce(NULL, 3)",
    "abs(-2.5)",
    "round(2.345, 2)",
    "year(date '1998-12-01')",
    "datediff('2020-03-01', '2020-02-01')",
]


def _one_row() -> Batch:
    return Batch(("a",), (Column(INT, np.array([1], np.int32)),))


def _executor_value(e: Expr) -> object:
    v = compile_expr(e)(_one_row())
    if v.validity is not None and not v.validity[0]:
        return None
    x = v.data[0]
    return x.item() if hasattr(x, "item") else x


@pytest.mark.parametrize("sql", CONSTANT_EXPRS)
def test_folded_value_is_what_the_executor_computes(sql: str) -> None:
    p = plan(f"SELECT {sql} FROM t", optimized=False)
    proj = next(n for n in walk(p) if isinstance(n, LogicalProject))
    (_, e), = proj.exprs[:1]
    folded = fold_expression(e)
    assert isinstance(folded, Literal), (sql, folded)
    assert folded.type == e.type
    assert folded.value == _executor_value(e), sql


def test_volatile_and_failing_calls_are_not_folded() -> None:
    p = plan("SELECT rand(), rand(3) FROM t", optimized=False)
    proj = next(n for n in walk(p) if isinstance(n, LogicalProject))
    for _, e in proj.exprs[:2]:
        assert fold_expression(e) is e
    # an unsupported unit raises at evaluation: the call stays (raises when rows reach it)
    bad = Call("date_add", (Literal(_days(2020, 1, 1), DATE), Literal(1, BIGINT),
                            Literal("FORTNIGHT", STRING)), DATE)
    assert fold_expression(bad) is bad
