"""Where a hash join's runtime filters go: the scans under its probe side that its keys read,
resolved once, at plan time, into `RuntimeFilterDesc`s with ids (`RF000`).

`runtime_filters(join, join_path, first_id)` follows each probe key that is a plain column
down from the join's left child, through renaming Projects, Filters and the preserved sides of
other joins, to the LogicalScan that produces it. Only joins that drop unmatched probe rows
(INNER, LEFT SEMI, RIGHT OUTER/SEMI/ANTI) have targets; LEFT/FULL OUTER, LEFT ANTI and mark
joins must keep every probe row. While planner/distribute.py walks the logical plan a filter
is a `PlannedFilter` naming its join and target scan by plan paths (child indexes from the
plan root); planner/lower.py turns each into a `RuntimeFilterDesc` that names them by
physical node id (`join_node`, `target_node`, planner/physical.py) and nothing else: EXPLAIN
prints `RF<n> -> column` on the scan, and the executor wires the join's operator to the
scan's (in the same fragment instance) or to a global filter (the scan runs in a fragment
below an exchange) from these descriptions and node ids only.
Upstream: Doris `RuntimeFilterGenerator` (target pushdown through project/join).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.logical import (
    LogicalAggregate,
    LogicalFilter,
    LogicalJoin,
    LogicalPlan,
    LogicalProject,
    LogicalScan,
)
from sql.binder.expressions import ColumnRef, Expr

FILTERING_KINDS = ("inner", "left_semi", "right", "right_semi", "right_anti")

PlanPath = tuple[int, ...]


def filter_name(filter_id: int) -> str:
    return f"RF{filter_id:03d}"


@dataclass(frozen=True, slots=True)
class RuntimeFilterDesc:
    """One runtime filter of the physical plan: the hash join `join_node` builds it from its
    equi key `key_index` (`build_key`), the OLAP scan `target_node` applies it to `column`
    (the scan column the probe key reads)."""

    id: int
    join_node: int
    key_index: int  # which of the join's equi keys
    build_key: Expr
    target_node: int
    column: str

    @property
    def name(self) -> str:
        return filter_name(self.id)


@dataclass(frozen=True, slots=True)
class PlannedFilter:
    """A runtime filter while the planner still walks the logical plan: its join and target
    scan by plan path (planner/lower.py resolves them to node ids)."""

    id: int
    join_path: PlanPath
    key_index: int
    build_key: Expr
    target_path: PlanPath
    column: str

    @property
    def name(self) -> str:
        return filter_name(self.id)


def runtime_filters(join: LogicalJoin, join_path: PlanPath,
                    first_id: int) -> list[PlannedFilter]:
    """The runtime filters of `join` (at `join_path`), numbered from `first_id`."""
    if join.kind not in FILTERING_KINDS:
        return []
    out: list[PlannedFilter] = []
    for i, key in enumerate(join.left_keys):
        if isinstance(key, ColumnRef):
            hit = _resolve(join.left, key.name)
            if hit is not None:
                below, column = hit
                out.append(PlannedFilter(first_id + len(out), join_path, i,
                                             join.right_keys[i], join_path + (0,) + below,
                                             column))
    return out


def resolve_scan_column(plan: LogicalPlan, name: str) -> tuple[LogicalScan, str] | None:
    """The scan and its column that `plan`'s output column `name` passes through unchanged
    (and never NULL-extended by an outer join), or None."""
    hit = _resolve(plan, name)
    if hit is None:
        return None
    path, column = hit
    for i in path:
        plan = plan.children[i]
    assert isinstance(plan, LogicalScan)
    return plan, column


def _resolve(plan: LogicalPlan, name: str) -> tuple[PlanPath, str] | None:
    path: list[int] = []
    while True:
        if isinstance(plan, LogicalScan):
            return (tuple(path), name) if name in plan.columns else None
        if isinstance(plan, LogicalFilter):
            path.append(0)
            plan = plan.child
            continue
        if isinstance(plan, LogicalProject):
            expr = dict(plan.exprs).get(name)
            if not isinstance(expr, ColumnRef):
                return None
            path.append(0)
            plan, name = plan.child, expr.name
            continue
        if isinstance(plan, LogicalAggregate):
            # a group key that is a plain input column: rows of groups the join drops anyway
            # need not be aggregated (Doris pushes runtime filters through aggregates too)
            expr = dict(plan.group_by).get(name)
            if not isinstance(expr, ColumnRef):
                return None
            path.append(0)
            plan, name = plan.child, expr.name
            continue
        if isinstance(plan, LogicalJoin):
            if name in plan.left.names and plan.kind not in ("right", "full", "right_semi",
                                                             "right_anti"):
                path.append(0)
                plan = plan.left
                continue
            if name in plan.right.names and plan.kind in ("inner", "cross"):
                path.append(1)
                plan = plan.right
                continue
        return None
