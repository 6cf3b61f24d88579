"""Constant folding of a scan's residual filter, and the storage predicates it yields.

A residual filter (planner/lower.py `split_scan_filters`: the conjuncts without a storage form)
is evaluated per batch by the scan. Conjuncts like TPC-H's `l_shipdate < DATE '1994-01-01' +
INTERVAL 1 YEAR` or `l_discount >= CAST(0.06 - 0.01 AS DECIMAL(15,2))` have no storage form
only because their constant side is an expression: evaluated per batch it costs a full-length
constant array and a date computation per row (py-spy: 30% of TPC-H Q6's server samples),
and storage cannot use it for zone maps or page skipping. `fold_residual` evaluates every
constant subexpression once, when the scan starts, and hands the conjuncts that became
`column op literal` tests to storage (where the zone maps, indexes and the segment iterator's
late materialisation use them); the rest stays residual, folded.

Only deterministic, row-independent expressions are folded: literals combined by casts,
arithmetic, negation and the whitelisted pure functions of `FOLDABLE_CALLS`. A constant whose
evaluation fails (overflow, invalid date) is left as it was, so the error surfaces exactly when
it did before (only if some row is evaluated).
Upstream: Doris Nereids `FoldConstantRule` (the FE folds constant expressions before
predicates are pushed to the scan).
"""

from __future__ import annotations

import numpy as np

from executor.compile import compile_expr
from planner.rules.push_down_filters import storage_predicate
from sql.binder.expressions import (
    Arithmetic,
    Call,
    Cast,
    Expr,
    Literal,
    Negate,
    conjuncts,
    make_and,
)
from storage.batch import Batch, Column
from storage.predicates import ColumnPredicate
from storage.types import INT

# Pure functions of their arguments (no session state, no randomness, no side effects).
FOLDABLE_CALLS = frozenset({"date_add"})
# Evaluating a constant needs a batch of one row (compile_expr wants >= 1 column).
_ONE_ROW = Batch(("__fold",), (Column(INT, np.zeros(1, np.int32)),))


def _constant(e: Expr) -> bool:
    """`e` is built from literals by foldable operations only."""
    if isinstance(e, Literal):
        return True
    if isinstance(e, Call):
        if e.name not in FOLDABLE_CALLS:
            return False
    elif not isinstance(e, Arithmetic | Cast | Negate):
        return False
    return all(_constant(c) for c in e.children())


def _fold(e: Expr) -> Expr | None:
    """`e` as one Literal (None: not a foldable constant, or its evaluation failed)."""
    if isinstance(e, Literal) or not _constant(e):
        return None
    try:
        result = compile_expr(e)(_ONE_ROW)
    except Exception:  # noqa: BLE001 - left to fail (or not) as it did before folding
        return e  # stop descending: the subtree stays as written
    if result.type != e.type:  # an evaluation type the plan does not name: keep it as written
        return e
    return Literal(result.to_column().value_at(0), e.type)


def fold_constants(e: Expr) -> Expr:
    """`e` with every maximal foldable constant subexpression replaced by its Literal."""
    return e.transform(_fold)


def fold_residual(residual: Expr | None) -> tuple[tuple[ColumnPredicate, ...], Expr | None]:
    """(storage predicates, remaining residual filter) of a scan's residual filter after
    folding its constants: conjuncts that became column-vs-constant tests go to storage."""
    if residual is None:
        return (), None
    pushed: list[ColumnPredicate] = []
    rest: list[Expr] = []
    for c in conjuncts(residual):
        folded = fold_constants(c)
        p = storage_predicate(folded)
        if p is not None:
            pushed.append(p)
        else:
            rest.append(folded)
    return tuple(pushed), make_and(rest)
