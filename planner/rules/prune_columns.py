"""Rule prune_columns: read and carry only the columns some ancestor needs.

Walks the plan top-down with the set of column names the parent requires. Scans and Values keep
only required columns (plus those their own filters read), keeping at least one column so a
batch still knows its row count (e.g. for COUNT(*)); inner projections drop unused outputs; the
root keeps its full output. Upstream: Doris Nereids `ColumnPruning`.
"""

from __future__ import annotations

from dataclasses import replace

from planner.logical import (
    LogicalAggregate,
    LogicalFileScan,
    LogicalFilter,
    LogicalGenerate,
    LogicalJoin,
    LogicalLimit,
    LogicalPlan,
    LogicalProject,
    LogicalScan,
    LogicalSort,
    LogicalValues,
    LogicalWindow,
)
from planner.repeat import LogicalRepeat
from sql.binder.expressions import Expr, column_names
from storage.types import DataType


def prune_columns(plan: LogicalPlan, ctx: object) -> LogicalPlan:
    return _prune(plan, None)


def _narrowest(names: tuple[str, ...], types: tuple[DataType, ...]) -> int:
    """Index of the cheapest column to read when none is needed (fixed width, smallest)."""
    best, cost = 0, float("inf")
    for i, t in enumerate(types):
        c = t.fixed_width or 64
        if c < cost:
            best, cost = i, c
    return best


def _prune(plan: LogicalPlan, required: set[str] | None) -> LogicalPlan:
    if isinstance(plan, LogicalScan):
        need = set(plan.columns) if required is None else set(required)
        for f in plan.filters:
            need |= column_names(f)
        keep = [i for i, n in enumerate(plan.columns) if n in need]
        if not keep:
            keep = [_narrowest(plan.columns, plan.column_types)]
        return replace(plan, columns=tuple(plan.columns[i] for i in keep),
                       column_types=tuple(plan.column_types[i] for i in keep))
    if isinstance(plan, LogicalFileScan):
        if required is None:
            return plan
        keep = [i for i, n in enumerate(plan.columns) if n in required]
        if not keep:
            keep = [0]
        return replace(plan, columns=tuple(plan.columns[i] for i in keep),
                       column_types=tuple(plan.column_types[i] for i in keep))
    if isinstance(plan, LogicalValues):
        if required is None:
            return plan
        keep = [i for i, n in enumerate(plan.value_names) if n in required]
        if not keep:
            keep = [_narrowest(plan.value_names, plan.value_types)]
        return LogicalValues(tuple(plan.value_names[i] for i in keep),
                             tuple(plan.value_types[i] for i in keep),
                             tuple(tuple(r[i] for i in keep) for r in plan.rows))
    if isinstance(plan, LogicalProject):
        exprs = plan.exprs
        if required is not None:
            kept = tuple((n, e) for n, e in exprs if n in required)
            exprs = kept or exprs[:1]
        need = set()
        for _, e in exprs:
            need |= column_names(e)
        return LogicalProject(_prune(plan.child, need), exprs)
    if isinstance(plan, LogicalFilter):
        need = (set(plan.child.names) if required is None else set(required))
        need |= column_names(plan.predicate)
        return LogicalFilter(_prune(plan.child, need), plan.predicate)
    if isinstance(plan, LogicalAggregate):
        need = set()
        for _, e in plan.group_by:
            need |= column_names(e)
        for _, a in plan.aggregates:
            need |= column_names(a)
        return replace(plan, child=_prune(plan.child, need))
    if isinstance(plan, LogicalSort):
        need = set(plan.child.names) if required is None else set(required)
        for k in plan.keys:
            need |= column_names(k.expr)
        return replace(plan, child=_prune(plan.child, need))
    if isinstance(plan, LogicalLimit):
        return replace(plan, child=_prune(plan.child, required))
    if isinstance(plan, LogicalGenerate):  # kept even when no generated column is read:
        need = set(plan.child.names) if required is None else set(required)  # it sets the rows
        need -= set(plan.gen_names)
        for arg in plan.args:
            need |= column_names(arg)
        return replace(plan, child=_prune(plan.child, need))
    if isinstance(plan, LogicalRepeat):  # keeps its keys: they decide the groups
        need = set(plan.child.names) if required is None else set(required)
        need = (need - set(plan.added_names)) | set(plan.key_names)
        return replace(plan, child=_prune(plan.child, need))
    if isinstance(plan, LogicalWindow):
        windows = plan.windows if required is None else tuple(
            (n, w) for n, w in plan.windows if n in required)
        need = set(plan.child.names) if required is None else set(required)
        need -= {n for n, _ in plan.windows}
        for _, w in windows:
            need |= column_names(w)
        if not windows:
            return _prune(plan.child, need)
        return replace(plan, child=_prune(plan.child, need), windows=windows)
    if isinstance(plan, LogicalJoin):
        need = set(plan.names) if required is None else set(required)
        key_exprs: list[Expr] = [*plan.left_keys, *plan.right_keys, *(plan.mark_keys or ())]
        key_exprs += [e for e in (plan.condition, plan.residual) if e is not None]
        for e in key_exprs:
            need |= column_names(e)
        left = _prune(plan.left, need & set(plan.left.names))
        right = _prune(plan.right, need & set(plan.right.names))
        return replace(plan, left=left, right=right)
    return plan.with_children(*(_prune(c, None) for c in plan.children))
