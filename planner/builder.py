"""Builder: `BoundSelect` -> logical plan.

The shape is fixed by SQL's evaluation order: source (Scan / Values) -> Filter(WHERE) ->
Aggregate(GROUP BY + aggregates) -> Filter(HAVING) -> Project(select list + hidden sort keys)
-> Aggregate(DISTINCT) -> Sort -> Limit -> Project(drop hidden sort keys). The scan captures the
snapshot to read: each partition's visible version and the base index's tablets at plan time,
so a query never sees a load that publishes while it runs.
Upstream: Doris Nereids `BindRelation` + `LogicalPlanBuilder` output shape.
"""

from __future__ import annotations

from sql.binder import BoundSelect, CatalogView, TableSource
from sql.expressions import ColumnRef
from planner.logical import (
    LogicalAggregate, LogicalFilter, LogicalLimit, LogicalPlan, LogicalProject, LogicalScan,
    LogicalSort, LogicalValues, ScanRange, SortKey,
)


def build_scan(src: TableSource, catalog: CatalogView) -> LogicalScan:
    meta = src.table
    indexes = catalog.materialized_indexes(meta.table_id)
    base = next((ix for ix in indexes if ix.is_base), None)
    index_id = base.index_id if base is not None else meta.base_index_id
    ranges: list[ScanRange] = []
    parts: list[tuple[int, int]] = []
    for p in catalog.partitions(meta.table_id):
        parts.append((p.partition_id, p.visible_version))
        for t in catalog.tablets(meta.table_id, p.partition_id, index_id):
            ranges.append(ScanRange(t, p.visible_version))
    return LogicalScan(
        db=src.db, table=meta.name, table_id=meta.table_id, index_id=index_id,
        columns=tuple(c.name for c in meta.columns),
        column_types=tuple(c.type for c in meta.columns),
        ranges=tuple(ranges), partitions=tuple(parts),
    )


def build_logical(bound: BoundSelect, catalog: CatalogView) -> LogicalPlan:
    src = bound.source
    plan: LogicalPlan
    if isinstance(src, TableSource):
        plan = build_scan(src, catalog)
    else:
        plan = LogicalValues(src.names, src.types, src.rows)
    if bound.where is not None:
        plan = LogicalFilter(plan, bound.where)
    if bound.is_aggregate:
        plan = LogicalAggregate(plan, bound.group_by, bound.aggregates)
        if bound.having is not None:
            plan = LogicalFilter(plan, bound.having)
    plan = LogicalProject(plan, bound.projections)
    visible = bound.projections[: bound.visible]
    if bound.distinct:
        plan = LogicalAggregate(plan, tuple((n, ColumnRef(n, e.type)) for n, e in visible), ())
    if bound.order_by:
        plan = LogicalSort(plan, tuple(SortKey(s.expr, s.desc, s.nulls_first)
                                       for s in bound.order_by))
    if bound.limit is not None or bound.offset:
        plan = LogicalLimit(plan, bound.limit, bound.offset)
    if len(bound.projections) > bound.visible:
        plan = LogicalProject(plan, tuple((n, ColumnRef(n, e.type)) for n, e in visible))
    return plan
