"""`x NOT IN (SELECT y ..)` over columns that cannot be NULL -> a plain LEFT ANTI hash join.

The binder plans `NOT IN` as a mark join (null-aware: a NULL `x`, or a NULL among the `y`s,
makes the IN NULL, so NOT IN keeps no row) filtered by `NOT mark`. When `x` and `y` are both
columns declared NOT NULL (followed through renaming projections, filters and the preserved
sides of joins to their scans, as runtime filters follow keys: planner/runtime_filters.py),
the mark is never NULL, so `NOT mark` keeps exactly the rows without a match: a LEFT ANTI
join on `x = y` plus the mark join's own (correlation) condition, with `x = y` a hash key
(push_down_join_predicates splits it, so this rule runs before it). The anti join's output is
given the mark column back as FALSE (the value every row the filter kept had), and the
`NOT mark` conjunct is dropped. TPC-H Q16: `ps_suppkey NOT IN (SELECT s_suppkey ..)`.
Needs the catalog (declared nullability); without one the plan stays as it is.
Upstream: Doris Nereids `InApplyToJoin` (NULL_AWARE_LEFT_ANTI_JOIN only when a side is
nullable), DuckDB's mark join -> anti join rewrite for non-NULL keys.
"""

from __future__ import annotations

from typing import Any

from planner.logical import LogicalFilter, LogicalJoin, LogicalPlan, LogicalProject
from planner.runtime_filters import resolve_scan_column
from sql.binder.expressions import (
    ColumnRef,
    Comparison,
    Expr,
    Literal,
    Not,
    column_names,
    conjuncts,
    make_and,
)
from storage.types import BOOLEAN


def anti_join_not_in(plan: LogicalPlan, ctx: Any) -> LogicalPlan:
    catalog = getattr(ctx, "catalog", None)
    if catalog is None or not hasattr(catalog, "table_by_id"):
        return plan  # no catalog (e.g. an in-memory test engine): no declared nullability
    return _rewrite(plan, catalog)


def _rewrite(plan: LogicalPlan, catalog: Any) -> LogicalPlan:
    if plan.children:
        kids = tuple(_rewrite(c, catalog) for c in plan.children)
        if any(a is not b for a, b in zip(kids, plan.children)):
            plan = plan.with_children(*kids)
    if not isinstance(plan, LogicalFilter):
        return plan
    parts = conjuncts(plan.predicate)
    negated = {p.arg.name: p for p in parts
               if isinstance(p, Not) and isinstance(p.arg, ColumnRef)}
    if not negated:
        return plan
    child, done = _chain(plan.child, negated, parts, catalog)
    if not done:
        return plan
    rest = make_and([p for p in parts if not any(p is negated[m] for m in done)])
    return child if rest is None else LogicalFilter(child, rest)


def _chain(node: LogicalPlan, negated: dict[str, Not], parts: list[Expr],
           catalog: Any) -> tuple[LogicalPlan, set[str]]:
    """The mark joins stacked on their left sides under the filter, those filtered by
    `NOT mark` over NOT NULL keys turned into anti joins; the marks turned."""
    if not (isinstance(node, LogicalJoin) and node.kind == "mark"):
        return node, set()
    left, done = _chain(node.left, negated, parts, catalog)
    if left is not node.left:
        node = node.with_children(left, node.right)
    assert isinstance(node, LogicalJoin)
    mark = node.mark_name
    if (mark is None or mark not in negated or node.mark_keys is None
            or sum(mark in column_names(p) for p in parts) != 1):
        return node, done
    x, y = node.mark_keys
    if not (_not_null(node.left, x, catalog) and _not_null(node.right, y, catalog)):
        return node, done
    cond = make_and([*conjuncts(node.condition), Comparison("=", x, y)])
    anti = LogicalJoin(node.left, node.right, "left_anti", cond, hint=node.hint)
    keep = tuple((n, ColumnRef(n, t)) for n, t in zip(anti.names, anti.types))
    return LogicalProject(anti, keep + ((mark, Literal(0, BOOLEAN)),)), done | {mark}


def _not_null(plan: LogicalPlan, key: Expr, catalog: Any) -> bool:
    """Whether `key` is a column of `plan` read from a scan column declared NOT NULL (and not
    from the NULL-extended side of an outer join)."""
    if not isinstance(key, ColumnRef):
        return False
    hit = resolve_scan_column(plan, key.name)
    if hit is None:
        return False
    scan, column = hit
    table = catalog.table_by_id(scan.table_id)
    if table is None:
        return False
    for c in table.columns:
        if c.name.lower() == column.lower():
            return not c.nullable
    return False



