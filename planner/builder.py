"""Builder: bound query (`BoundSelect` / `BoundSetOp`) -> logical plan.

The shape is fixed by SQL's evaluation order: source (Scan / Values / join tree) ->
Filter(WHERE) -> Aggregate(GROUP BY + aggregates) -> Filter(HAVING) -> Project(select list +
hidden sort keys) -> Aggregate(DISTINCT) -> Sort -> Limit -> Project(drop hidden sort keys). The
scan captures the snapshot to read: each partition's visible version and the base index's
tablets at plan time, so a query never sees a load that publishes while it runs.
Multi-table sources: every table / derived table of a join tree is renamed to the binder's
unique internal names by a Project over its plan; the ON condition stays on the LogicalJoin
for the rule push_down_join_predicates to split. Subqueries in expressions become joins
(planner/subqueries.py). Set operations cast every branch to the unified column types.
Upstream: Doris Nereids `BindRelation` + `LogicalPlanBuilder` output shape.
"""

from __future__ import annotations

from planner.logical import (
    LogicalAggregate,
    LogicalFileScan,
    LogicalGenerate,
    LogicalJoin,
    LogicalLimit,
    LogicalPlan,
    LogicalProject,
    LogicalScan,
    LogicalSetOp,
    LogicalSort,
    LogicalValues,
    LogicalWindow,
    ScanRange,
    SortKey,
)
from planner.repeat import LogicalEmptyGroupingSets, empty_set_rows, plan_grouping_sets
from sql.binder.bind_expressions import coerce, not_supported
from sql.binder.expressions import ColumnRef, Expr, SubqueryExpr
from sql.binder.relations import (
    BoundDerived,
    BoundFileRel,
    BoundJoin,
    BoundLateral,
    BoundQuery,
    BoundRelation,
    BoundSetOp,
    BoundTable,
)
from sql.binder.select import BoundSelect, CatalogView, TableSource, ValuesSource
from sql.binder.table_functions import FileSource
from storage.catalog.meta import TemporaryPartitionNames


def build_scan(src: TableSource, catalog: CatalogView) -> LogicalScan:
    meta = src.table
    indexes = catalog.materialized_indexes(meta.table_id)
    base = next((ix for ix in indexes if ix.is_base), None)
    index_id = base.index_id if base is not None else meta.base_index_id
    ranges: list[ScanRange] = []
    parts: list[tuple[int, int]] = []
    rows = 0
    only = {n.lower() for n in src.partitions}
    temporary = isinstance(src.partitions, TemporaryPartitionNames)
    for p in catalog.partitions(meta.table_id, temporary=temporary):
        if only and p.name.lower() not in only:
            continue  # FROM t PARTITION (..) names the partitions to read
        parts.append((p.partition_id, p.visible_version))
        for t in catalog.tablets(meta.table_id, p.partition_id, index_id):
            if src.tablets and t.tablet_id not in src.tablets:
                continue  # FROM t TABLET (..) names the tablets to read (sparkrest)
            ranges.append(ScanRange(t, p.visible_version))
            rows += sum(r.num_rows for r in catalog.rowsets(t.tablet_id, p.visible_version))
    return LogicalScan(
        db=src.db, table=meta.name, table_id=meta.table_id, index_id=index_id,
        columns=tuple(c.name for c in meta.columns),
        column_types=tuple(c.type for c in meta.columns),
        ranges=tuple(ranges), partitions=tuple(parts), row_count=rows,
    )


def build_file_scan(src: FileSource) -> LogicalFileScan:
    return LogicalFileScan(src.function, src.paths, src.format, src.options, src.names,
                           src.types, src.names, src.types, src.row_estimate)


def build_relation(rel: BoundRelation, catalog: CatalogView) -> LogicalPlan:
    if isinstance(rel, BoundFileRel):
        return LogicalProject(build_file_scan(rel.source), tuple(
            (c.internal, ColumnRef(c.name, c.type)) for c in rel.columns))
    if isinstance(rel, BoundTable):
        scan = build_scan(rel.source, catalog)
        return LogicalProject(scan, tuple((c.internal, ColumnRef(c.name, c.type))
                                          for c in rel.columns))
    if isinstance(rel, BoundDerived):
        inner = build_logical(rel.query, catalog)
        return LogicalProject(inner, tuple((c.internal, ColumnRef(f"_c{i}", c.type))
                                           for i, c in enumerate(rel.columns)))
    if isinstance(rel, BoundLateral):
        if any(_has_subquery(a) for a in rel.args):
            raise not_supported("subquery in a LATERAL VIEW function")
        return LogicalGenerate(build_relation(rel.input, catalog), rel.function, rel.args,
                               tuple(c.internal for c in rel.columns),
                               tuple(c.type for c in rel.columns))
    if isinstance(rel, BoundJoin):
        if _has_subquery(rel.condition):
            raise not_supported("subquery in a JOIN ... ON condition")
        left = build_relation(rel.left, catalog)
        right = build_relation(rel.right, catalog)
        return LogicalJoin(left, right, rel.kind, rel.condition, hint=rel.hint)
    src = rel.source
    return LogicalValues(tuple(c.internal for c in rel.columns), src.types, src.rows)


def _has_subquery(e: Expr | None) -> bool:
    return e is not None and any(isinstance(x, SubqueryExpr) for x in e.walk())


def build_source(bound: BoundSelect, catalog: CatalogView) -> LogicalPlan:
    """FROM + WHERE of a SELECT."""
    from planner.subqueries import plan_where

    src = bound.source
    plan: LogicalPlan
    if isinstance(src, TableSource):
        plan = build_scan(src, catalog)
    elif isinstance(src, ValuesSource):
        plan = LogicalValues(src.names, src.types, src.rows)
    elif isinstance(src, FileSource):
        plan = build_file_scan(src)
    else:
        plan = build_relation(src, catalog)
    if bound.where is not None:
        plan = plan_where(plan, bound.where, catalog)
    return plan


def build_logical(bound: BoundQuery, catalog: CatalogView) -> LogicalPlan:
    if isinstance(bound, BoundSetOp):
        return _build_set_op(bound, catalog)
    from planner.subqueries import attach_subqueries, plan_where

    inside = [e for _, e in bound.group_by] + [a for _, a in bound.aggregates] + [
        s.expr for s in bound.order_by]
    if any(_has_subquery(e) for e in inside):
        raise not_supported("subquery in GROUP BY, ORDER BY or an aggregate argument")
    plan = build_source(bound, catalog)
    if bound.is_aggregate:
        if bound.repeat is not None:  # GROUPING SETS: one aggregate over a Repeat
            plan = plan_grouping_sets(plan, bound.repeat, bound.group_by, bound.aggregates)
        else:
            plan = LogicalAggregate(plan, bound.group_by, bound.aggregates)
        if bound.repeat is not None and () in bound.repeat.sets:
            plan = LogicalEmptyGroupingSets(plan, empty_set_rows(bound.repeat, len(
                bound.group_by)), bound.aggregates)
        if bound.having is not None:
            plan = plan_where(plan, bound.having, catalog)
    if bound.windows:
        if any(_has_subquery(w) for _, w in bound.windows):
            raise not_supported("subquery in a window function")
        plan = LogicalWindow(plan, bound.windows)
    projections = bound.projections
    if any(_has_subquery(e) for _, e in projections):
        plan, exprs = attach_subqueries(plan, [e for _, e in projections], catalog)
        projections = tuple((n, e) for (n, _), e in zip(projections, exprs))
    plan = LogicalProject(plan, projections)
    return _finish(plan, bound.projections, bound.visible, bound.distinct,
                   tuple(SortKey(s.expr, s.desc, s.nulls_first) for s in bound.order_by),
                   bound.limit, bound.offset)


def _finish(plan: LogicalPlan, projections: tuple[tuple[str, Expr], ...], visible_n: int,
            distinct: bool, order: tuple[SortKey, ...], limit: int | None,
            offset: int) -> LogicalPlan:
    visible = projections[:visible_n]
    if distinct:
        plan = LogicalAggregate(plan, tuple((n, ColumnRef(n, e.type)) for n, e in visible), ())
    if order:
        plan = LogicalSort(plan, order)
    if limit is not None or offset:
        plan = LogicalLimit(plan, limit, offset)
    if len(projections) > visible_n:
        plan = LogicalProject(plan, tuple((n, ColumnRef(n, e.type)) for n, e in visible))
    return plan


def _branch(q: BoundQuery, bound: BoundSetOp, catalog: CatalogView) -> LogicalPlan:
    plan = build_logical(q, catalog)
    exprs = tuple((f"_c{i}", coerce(ColumnRef(n, t0), t))
                  for i, (n, t0, t) in enumerate(zip(plan.names, plan.types, bound.types)))
    return LogicalProject(plan, exprs)


def _build_set_op(bound: BoundSetOp, catalog: CatalogView) -> LogicalPlan:
    left = _branch(bound.left, bound, catalog)
    right = _branch(bound.right, bound, catalog)
    plan: LogicalPlan
    if bound.op == "union":
        plan = LogicalSetOp("union_all", (left, right))
        if bound.distinct:
            plan = LogicalAggregate(plan, tuple((n, ColumnRef(n, t)) for n, t in
                                                zip(plan.names, plan.types)), ())
    else:
        plan = LogicalSetOp(bound.op, (left, right))
    exprs = tuple((n, ColumnRef(n, t)) for n, t in zip(plan.names, plan.types))
    return _finish(plan, exprs, len(exprs), False,
                   tuple(SortKey(s.expr, s.desc, s.nulls_first) for s in bound.order_by),
                   bound.limit, bound.offset)
