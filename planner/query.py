"""Planning entry point: a SELECT (or set operation) bound, optimized and distributed under the
statement's `QueryOptions`.

`plan_select` binds (sql/binder/select.py, with the session for DATABASE(), @@name, ...) and
`plan_bound` plans the bound statement under the options alone, on the caller's thread
(analysis errors surface at once); the `PlannedQuery` is what EXPLAIN prints and
executor/query.py runs. Every session knob the planner honours arrives as a typed field of
`QueryOptions` (sql/options.py); nothing here reads a variable by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from sqlglot import exp

from planner.builder import build_logical
from planner.distribute import DistributeOptions, distribute
from planner.fragment import DistributedPlan
from planner.logical import LogicalPlan
from planner.lower import lower
from planner.optimizer import OptimizerContext, optimize
from sql.binder.bind_expressions import not_supported
from sql.binder.relations import BoundQuery
from sql.binder.select import CatalogView, bind_query
from sql.options import QueryOptions, SessionContext
from storage.types import DataType

# `SET disable_nereids_rules = 'A,B'`: Doris rule names (and our own rule names) -> our rules.
_DORIS_RULES = {
    "OLAP_SCAN_PARTITION_PRUNE": "prune_scans", "OLAP_SCAN_TABLET_PRUNE": "prune_scans",
    "PARTITION_PRUNE": "prune_scans",
    "MATERIALIZED_INDEX_AGG_SCAN": "choose_rollup", "MATERIALIZED_INDEX_SCAN": "choose_rollup",
    "ROLLUP_WITH_OUT_AGG": "choose_rollup", "ROLLUP_AGG_SCAN": "choose_rollup",
}


@dataclass(frozen=True)
class PlannedQuery:
    plan: LogicalPlan
    names: tuple[str, ...]
    types: tuple[DataType, ...]
    disabled_rules: frozenset[str]
    dplan: DistributedPlan  # fragments of physical nodes (planner/lower.py)

    def explain(self) -> list[str]:
        return self.plan.explain()


def plan_select(select_ast: exp.Expression, catalog: CatalogView, ctx: SessionContext,
                sql: str | None = None,
                disabled_rules: frozenset[str] = frozenset()) -> PlannedQuery:
    """Bind and plan a SELECT under `ctx.options`. `sql` (optional) is the statement text, used
    for the MySQL-style column labels (else `select_ast.meta["sql"]`, else labels are regenerated
    from the AST). `disabled_rules` switches off optimizer rules on top of the session's
    `disable_nereids_rules` (tests). Raises ShaleError for analysis errors."""
    if isinstance(select_ast, exp.Subquery):
        select_ast = cast(exp.Expression, select_ast.unnest())
    if not isinstance(select_ast, (exp.Select, exp.SetOperation)):
        raise not_supported(f"statement {type(select_ast).__name__}")
    bound = bind_query(select_ast, catalog, ctx, sql=sql)
    return plan_bound(bound, catalog, ctx.options, disabled_rules, ctx.stored_bounds)


def plan_bound(bound: BoundQuery, catalog: CatalogView, options: QueryOptions,
               disabled_rules: frozenset[str] = frozenset(),
               stored_bounds: Any = None) -> PlannedQuery:
    """Plan a bound statement under `options`: logical plan, optimizer rules (minus those the
    session or `disabled_rules` switched off), fragments and exchanges."""
    disabled_rules = disabled_rules | optimizer_rules_off(options)
    plan = optimize(build_logical(bound, catalog),
                    OptimizerContext(disabled_rules, catalog, stored_bounds))
    decided = distribute(plan, catalog, distribute_options(options, catalog))
    dplan = lower(decided, list(bound.names))
    return PlannedQuery(plan, bound.names, bound.types, disabled_rules, dplan)


def optimizer_rules_off(options: QueryOptions) -> frozenset[str]:
    """Our optimizer rules the session switched off: `disable_nereids_rules` (Doris' rule names
    mapped to ours, other names taken as ours) and `disable_join_reorder`."""
    rules = {_DORIS_RULES.get(name, name.lower()) for name in options.disable_nereids_rules}
    if options.disable_join_reorder:
        rules.add("reorder_joins")
    return frozenset(rules)


def distribute_options(options: QueryOptions, catalog: object) -> DistributeOptions:
    """The session's join-distribution switches and the number of backends to plan for."""
    # CatalogView does not declare backends() (the review's duck-typed catalog, left as found)
    backends = getattr(catalog, "backends", None)
    return DistributeOptions(
        disable_colocate=options.disable_colocate_plan or options.disable_colocate_join,
        bucket_shuffle=options.enable_bucket_shuffle_join,
        broadcast_row_limit=options.broadcast_row_count_limit,
        backends=len(backends()) if callable(backends) else 1)
