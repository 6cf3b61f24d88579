"""Where a hash join's runtime filters go: the scans under its probe side that its keys read.

`probe_targets(join)` follows each probe key that is a plain column down from the join's left
child, through renaming Projects, Filters and the preserved sides of other joins, to the
LogicalScan that produces it. Only joins that drop unmatched probe rows (INNER, LEFT SEMI,
RIGHT OUTER/SEMI/ANTI) have targets; LEFT/FULL OUTER, LEFT ANTI and mark joins must keep every
probe row. A target's `path` lists child indexes from the join's left child to the scan, so
the executor finds the same scan in its operator tree (which mirrors the plan node for node)
and EXPLAIN can print `RF<n> -> column` on it.
Upstream: Doris `RuntimeFilterGenerator` (target pushdown through project/join).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.logical import LogicalFilter, LogicalJoin, LogicalPlan, LogicalProject, LogicalScan
from sql.expressions import ColumnRef

FILTERING_KINDS = ("inner", "left_semi", "right", "right_semi", "right_anti")


@dataclass(frozen=True, slots=True)
class RuntimeFilterTarget:
    key_index: int  # which of the join's probe keys
    path: tuple[int, ...]  # child indexes from the join's left child down to the scan
    scan: LogicalScan
    column: str  # the scan column the key reads


def probe_targets(join: LogicalJoin) -> list[RuntimeFilterTarget]:
    if join.kind not in FILTERING_KINDS:
        return []
    out = []
    for i, key in enumerate(join.left_keys):
        if isinstance(key, ColumnRef):
            hit = _resolve(join.left, key.name)
            if hit is not None:
                out.append(RuntimeFilterTarget(i, *hit))
    return out


def _resolve(plan: LogicalPlan, name: str) -> tuple[tuple[int, ...], LogicalScan, str] | None:
    path: list[int] = []
    while True:
        if isinstance(plan, LogicalScan):
            return (tuple(path), plan, name) if name in plan.columns else None
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
