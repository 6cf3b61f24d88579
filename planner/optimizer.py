"""Optimizer: applies the rewrite rules in `RULES`, in order, once each.

Each rule lives in `planner/rules/<name>.py` and exports `<name>(plan, ctx) -> plan`. A rule can
be switched off by name (session variable / tests) through `OptimizerContext.disabled_rules`.
Upstream: sqlglot `optimizer.RULES`, Doris Nereids rule sets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planner.logical import LogicalPlan
from planner.rules.anti_join_not_in import anti_join_not_in
from planner.rules.choose_rollup import choose_rollup
from planner.rules.commute_semi_joins import commute_semi_joins
from planner.rules.fold_constants import fold_constants
from planner.rules.prune_columns import prune_columns
from planner.rules.prune_scans import prune_scans
from planner.rules.push_down_filters import push_down_filters
from planner.rules.push_down_join_predicates import push_down_join_predicates
from planner.rules.reorder_joins import reorder_joins

Rule = Callable[[LogicalPlan, "OptimizerContext"], LogicalPlan]

RULES: tuple[Rule, ...] = (
    fold_constants,  # first: the rules after it see folded literals (storage predicates)
    anti_join_not_in,  # before push_down_join_predicates: its `x = y` becomes a hash key
    push_down_join_predicates,
    reorder_joins,
    push_down_filters,
    commute_semi_joins,  # after the filters reached the scans: estimates see them
    prune_columns,
    prune_scans,  # partitions / buckets a scan reads (needs ctx.catalog)
    choose_rollup,  # after column pruning: the columns a scan needs decide the index
)


@dataclass(frozen=True, slots=True)
class OptimizerContext:
    disabled_rules: frozenset[str] = frozenset()
    catalog: Any = None  # storage Catalog; rules that need partitions / indexes skip without it
    # storage/stored_bounds.py StoredBounds (zone-map proofs for the materialized-view rewrite)
    stored_bounds: Any = None


def optimize(plan: LogicalPlan, ctx: OptimizerContext | None = None) -> LogicalPlan:
    ctx = ctx or OptimizerContext()
    for rule in RULES:
        if rule.__name__ in ctx.disabled_rules:
            continue
        plan = rule(plan, ctx)
    return plan
