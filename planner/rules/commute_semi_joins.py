"""Rule commute_semi_joins: build a semi / anti join's hash table on its smaller side.

The builder plans `x IN (SELECT ..)` / `EXISTS` as LEFT SEMI and `NOT EXISTS` as LEFT ANTI
joins with the subquery as the build (right) side. When the outer side is the smaller one
(TPC-H Q4: a quarter of orders EXISTS in all of lineitem; Q22: some customers NOT EXISTS in
orders) the join is turned around into RIGHT SEMI / RIGHT ANTI with the outer side as build:
the hash table holds the few outer rows, the big subquery side streams through it, and the
outer side's keys become a runtime filter on the subquery's scan. Semantics are unchanged:
RIGHT SEMI outputs each build row that some probe row matches (once), RIGHT ANTI each build
row none matches; a NULL key matches nothing on either side, exactly as before.
Only hash joins (with equi keys) and without a join hint are turned; mark joins (NOT IN, IN
under OR, ...) keep their shape (their null-aware output needs the outer side as probe).
Upstream: Doris Nereids `SemiJoinCommute` / `LogicalJoinSemiJoinTranspose` (cost-based there;
here the row estimates of planner/statistics.py decide).
"""

from __future__ import annotations

from dataclasses import replace

from planner.logical import LogicalJoin, LogicalPlan
from planner.statistics import estimate_rows

_COMMUTED = {"left_semi": "right_semi", "left_anti": "right_anti"}


def commute_semi_joins(plan: LogicalPlan, ctx: object) -> LogicalPlan:
    children = tuple(commute_semi_joins(c, ctx) for c in plan.children)
    if children:
        plan = plan.with_children(*children)
    if (isinstance(plan, LogicalJoin) and plan.kind in _COMMUTED and plan.left_keys
            and not plan.hint and estimate_rows(plan.left) < estimate_rows(plan.right)):
        return replace(plan, left=plan.right, right=plan.left, kind=_COMMUTED[plan.kind],
                       left_keys=plan.right_keys, right_keys=plan.left_keys)
    return plan
