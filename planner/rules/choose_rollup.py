"""Rule choose_rollup: pick the materialized index (base or rollup) each OLAP scan reads.

Seed 004 / Doris `SelectMaterializedIndexWithAggregate` / `...WithoutAggregate`:
1. Candidates contain every column the scan needs (outputs and filter columns).
2. DUPLICATE tables: rows of every index are the same rows (rollups only reorder / drop
   columns), so any candidate serves; PREAGGREGATION ON.
   AGGREGATE / UNIQUE tables: storage merges each index by its own keys, so a rollup with fewer
   keys returns coarser rows. The nearest aggregate above the scan is found through
   projections, filters and joins (Doris 3.1 `SetPreAggStatus`; any other node in between
   means no aggregate; `SET disable_nereids_rules = 'PREAGG_THROUGH_JOIN'` stops at joins as
   Doris 2.1 does). Without one only indexes with all the base keys are candidates (PREAGGREGATION
   OFF, "No aggregate on scan."). Under one, pre-aggregation is ON when group-by, filter and
   join-condition columns of this table are keys, every aggregate of its columns matches their
   aggregation type (sum/max/min of a SUM/MAX/MIN column, min/max/distinct of key columns)
   and, past a join, the other side's aggregates ignore duplicates (min, max,
   count(DISTINCT)); then any candidate serves. Otherwise PREAGGREGATION OFF with Doris'
   reason and the base index. count(*) never turns it on (seed 004).
Sync materialized views (CREATE MATERIALIZED VIEW) are chosen first, for a whole aggregate over
its scan, when one covers it (planner/materialized_view.py).
3. Among candidates: longest prefix-index match with the filters (leading index keys bound by
   equality, plus one range column), then fewest rows, then fewest columns; base index first
   on ties.
The choice, Doris' PREAGGREGATION status and reason are recorded on the scan for EXPLAIN; the
scan's ranges switch to the chosen index's tablets of the same partitions / buckets at the same
versions (every load writes every index in the same version).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from planner.logical import (
    LogicalAggregate,
    LogicalFilter,
    LogicalJoin,
    LogicalPlan,
    LogicalProject,
    LogicalScan,
    ScanRange,
)
from planner.materialized_view import rewrite_aggregate
from planner.repeat import LogicalRepeat
from planner.rules.prune_scans import ranges_row_count
from sql.binder.expressions import (
    SWAPPED_OP,
    AggregateCall,
    And,
    ColumnRef,
    Comparison,
    Expr,
    InList,
    Literal,
    column_names,
)
from storage.catalog.meta import AggType, KeysType, MaterializedIndexMeta, TableMeta

_MATCHING_AGG = {"sum": AggType.SUM, "max": AggType.MAX, "min": AggType.MIN}


def choose_rollup(plan: LogicalPlan, ctx: Any) -> LogicalPlan:
    catalog = getattr(ctx, "catalog", None)
    if not hasattr(catalog, "materialized_indexes") or not hasattr(catalog, "table_by_id"):
        return plan
    through_join = THROUGH_JOIN_SWITCH not in getattr(ctx, "disabled_rules", frozenset())
    bounds = getattr(ctx, "stored_bounds", None)
    return _walk(plan, catalog, None, through_join, bounds)


# `SET disable_nereids_rules = 'PREAGG_THROUGH_JOIN'`: Doris 2.1's behaviour, where a scan under
# a join never sees the aggregate above it (AdjustPreAggStatus knows only aggregate / project /
# filter / repeat chains); Doris 3.1 (SetPreAggStatus, apache/doris#48502) looks through joins,
# which is the default here.
THROUGH_JOIN_SWITCH = "preagg_through_join"


# A column of the other side of a join, renamed so it can never be taken for a column of the
# scan being decided (join sides may reuse names below their projections).
_FOREIGN = "\x00"


@dataclass(frozen=True, slots=True)
class AggContext:
    """What an aggregate above a scan needs from it, rewritten into the current node's names
    on the way down (Doris `SetPreAggStatus.PreAggInfoContext`): group keys, aggregate calls,
    filter conjuncts met between the aggregate and the scan, and the conditions of the joins
    passed (`via_join`)."""

    groups: tuple[Expr, ...]
    calls: tuple[Expr, ...]
    filters: tuple[Expr, ...] = ()
    joins: tuple[Expr, ...] = ()
    via_join: bool = False

    def transform(self, fn: Callable[[Expr], Expr | None]) -> AggContext:
        def each(es: tuple[Expr, ...]) -> tuple[Expr, ...]:
            return tuple(e.transform(fn) for e in es)

        return AggContext(each(self.groups), each(self.calls), each(self.filters),
                          each(self.joins), self.via_join)


def _conjuncts(e: Expr) -> tuple[Expr, ...]:
    return tuple(x for a in e.args for x in _conjuncts(a)) if isinstance(e, And) else (e,)


def _through_project(ctx: AggContext, proj: LogicalProject) -> AggContext:
    mapping = dict(proj.exprs)
    return ctx.transform(
        lambda x: mapping.get(x.name) if isinstance(x, ColumnRef) and x.name in mapping else None
    )


def _into_join_side(ctx: AggContext, join: LogicalJoin, side: LogicalPlan) -> AggContext:
    """The context seen from one input of `join`: its conditions join the context and the
    other input's columns become foreign."""
    conds: list[Expr] = [Comparison("=", lk, rk) for lk, rk in zip(join.left_keys, join.right_keys)]
    for e in (join.residual, join.condition):
        if e is not None:
            conds.extend(_conjuncts(e))
    if join.mark_keys is not None:
        conds.append(Comparison("=", *join.mark_keys))
    ctx = replace(ctx, joins=ctx.joins + tuple(conds), via_join=True)
    mine = set(side.names)
    return ctx.transform(
        lambda x: replace(x, name=_FOREIGN + x.name)
        if isinstance(x, ColumnRef) and x.name not in mine and not x.name.startswith(_FOREIGN)
        else None
    )


def _walk(plan: LogicalPlan, catalog: Any, ctx: AggContext | None, joins: bool,
          bounds: Any = None) -> LogicalPlan:
    """Decide every scan, carrying the context of the nearest aggregate above it through
    projections, filters and (unless `joins` is off) joins; any other node (sort, limit,
    window, set operation, ...) changes which rows the aggregate sees, so below it a scan has
    no aggregate."""
    if isinstance(plan, LogicalScan):
        return _choose(plan, catalog, ctx)
    if isinstance(plan, LogicalAggregate):
        on_view = rewrite_aggregate(plan, catalog, bounds)  # a covering sync materialized view
        if on_view is not None:
            return on_view
        inner = AggContext(tuple(g for _, g in plan.group_by), tuple(a for _, a in plan.aggregates))
        return replace(plan, child=_walk(plan.child, catalog, inner, joins, bounds))
    if ctx is not None and isinstance(plan, LogicalProject):
        inner = _through_project(ctx, plan)
        return replace(plan, child=_walk(plan.child, catalog, inner, joins, bounds))
    if ctx is not None and isinstance(plan, LogicalRepeat):  # GROUPING SETS (Doris: repeat
        # chains too): its set id / GROUPING columns are constants per set, not scan columns
        added = set(plan.added_names)
        inner = replace(ctx, groups=tuple(g for g in ctx.groups if not column_names(g) & added))
        return replace(plan, child=_walk(plan.child, catalog, inner, joins, bounds))
    if ctx is not None and isinstance(plan, LogicalFilter):
        inner = replace(ctx, filters=ctx.filters + _conjuncts(plan.predicate))
        return replace(plan, child=_walk(plan.child, catalog, inner, joins, bounds))
    if ctx is not None and joins and isinstance(plan, LogicalJoin):
        return plan.with_children(
            _walk(plan.left, catalog, _into_join_side(ctx, plan, plan.left), joins, bounds),
            _walk(plan.right, catalog, _into_join_side(ctx, plan, plan.right), joins, bounds),
        )
    children = tuple(_walk(c, catalog, None, joins, bounds) for c in plan.children)
    return plan.with_children(*children) if children else plan


def visible_indexes(catalog: Any, table_id: int) -> list[MaterializedIndexMeta]:
    """Indexes queries may read as the table's columns: the base and finished rollups (not a
    rollup job's shadow; a materialized view only through planner/materialized_view.py)."""
    return [
        ix
        for ix in catalog.materialized_indexes(table_id)
        if getattr(ix, "state", "NORMAL") == "NORMAL"
        and not getattr(ix, "is_materialized_view", False)
    ]


# ---- pre-aggregation (AGGREGATE / UNIQUE) ------------------------------------------------------
def _doris_sql(e: Expr) -> str:
    """Expression text as Doris' Nereids `toSql()` prints slots (no backquotes)."""
    return e.sql().replace("`", "").replace(_FOREIGN, "")


def _own(e: Expr) -> set[str]:
    """Columns of the scan being decided that `e` reads (not the other join side's)."""
    return {c for c in column_names(e) if not c.startswith(_FOREIGN)}


def preaggregation(table: TableMeta, scan: LogicalScan, ctx: AggContext | None) -> tuple[bool, str]:
    """(ON?, Doris' reason when OFF) for a scan of an AGGREGATE / UNIQUE table under the
    aggregate context `ctx` (None: no aggregate above the scan).

    ON means the aggregate gives the same result whether the scan's rows are merged by the
    table's keys or only partly (any index holding the columns): group keys, filters and join
    conditions read only key columns of this table, each aggregate of its columns matches their
    aggregation type (or is min / max / DISTINCT of keys), and, past a join, every aggregate of
    the other side ignores duplicates (min, max, count(DISTINCT ..)), since each partial row
    of one key meets the same rows of the other side (Doris `SetPreAggStatus`)."""
    if ctx is None or (not ctx.calls and not ctx.groups):
        return False, "No aggregate on scan."
    keys = {c.name.lower() for c in table.columns if c.is_key}
    for g in ctx.groups:
        values = sorted(c for c in _own(g) if c.lower() not in keys)
        if values:
            return False, f"Grouping expression {_doris_sql(g)} contains value column {values[0]}"
    for f in (*ctx.filters, *scan.filters):
        values = sorted(c for c in _own(f) if c.lower() not in keys)
        if values:
            return False, f"Predicate {_doris_sql(f)} contains value column {values[0]}"
    if ctx.via_join:
        conds = [j for j in ctx.joins if _own(j)]
        values = sorted({c for j in conds for c in _own(j) if c.lower() not in keys})
        if values:
            text = ", ".join(_doris_sql(j) for j in conds)
            return False, f"Join conjuncts [{text}] contains non-key column [{', '.join(values)}]"
    for call in ctx.calls:
        if ctx.via_join and not _own(call):
            if isinstance(call, AggregateCall) and (
                call.name in ("max", "min") or (call.name == "count" and call.distinct)
            ):
                continue  # the other side's rows may repeat: only duplicate-blind aggregates
            return False, (
                f"can't turn preAgg on because aggregate function {_doris_sql(call)} "
                "in other table"
            )
        ok, reason = _check_aggregate(table, call, keys)
        if not ok:
            return False, reason
    return True, ""


def _check_aggregate(table: TableMeta, call: Expr, keys: set[str]) -> tuple[bool, str]:
    if not isinstance(call, AggregateCall):
        return False, f"can't turn preAgg on for aggregate function {_doris_sql(call)}"
    slots = set().union(*(column_names(a) for a in call.args)) if call.args else set()
    if not slots:
        return False, f"can't turn preAgg on for aggregate function {_doris_sql(call)}"
    if all(s.lower() in keys for s in slots):
        if call.name in ("max", "min") or call.distinct:
            return True, ""
        return False, f"{_doris_sql(call)} is not distinct."
    if (
        any(s.lower() in keys for s in slots)
        or len(call.args) != 1
        or not isinstance(call.args[0], ColumnRef)
    ):
        return False, f"can't turn preAgg on for aggregate function {_doris_sql(call)}"
    col = table.column(call.args[0].name)
    agg_type = col.agg_type or AggType.NONE
    want = _MATCHING_AGG.get(call.name)
    if want is None:
        return False, f"{_doris_sql(call)} is not supported."
    if want is not agg_type or call.distinct:
        return False, (
            f"{_doris_sql(call)} is not match agg mode {agg_type.value} or has distinct param"
        )
    return True, ""


# ---- choice --------------------------------------------------------------------------------
def _prefix_match(index: MaterializedIndexMeta, filters: tuple[Expr, ...]) -> int:
    """Leading prefix-index columns bound by `=` / IN, plus one bound by a range (Doris
    `matchPrefixIndex`)."""
    equal: set[str] = set()
    ranged: set[str] = set()
    for f in filters:
        if isinstance(f, Comparison) and f.op != "<=>":
            left, right, op = f.left, f.right, f.op
            if isinstance(left, Literal) and isinstance(right, ColumnRef):
                left, right, op = right, left, SWAPPED_OP[op]
            if isinstance(left, ColumnRef) and isinstance(right, Literal):
                (equal if op == "=" else ranged if op != "!=" else set()).add(left.name.lower())
        elif isinstance(f, InList) and not f.negated and isinstance(f.arg, ColumnRef):
            equal.add(f.arg.name.lower())
    n = 0
    # the prefix index: the first short-key columns (at most 3, 36 bytes, ends at a VARCHAR)
    prefix = index.columns[: max(index.short_key_column_count, 1)]
    for k in prefix:
        low = k.lower()
        if low in equal:
            n += 1
            continue
        if low in ranged:
            n += 1
        break
    return n


def _row_count(catalog: Any, scan: LogicalScan, index: MaterializedIndexMeta) -> int:
    parts = {pid: v for pid, v in scan.partitions}
    total = 0
    for t in catalog.tablets(scan.table_id, index_id=index.index_id):
        if t.partition_id in parts:
            total += sum(r.num_rows for r in catalog.rowsets(t.tablet_id, parts[t.partition_id]))
    return total


def _choose(scan: LogicalScan, catalog: Any, ctx: AggContext | None) -> LogicalScan:
    table = catalog.table_by_id(scan.table_id)
    if table is None:
        return scan
    indexes = visible_indexes(catalog, scan.table_id)
    base = next((ix for ix in indexes if ix.index_id == scan.index_id), None)
    if base is None:
        return scan
    need = {c.lower() for c in scan.columns}
    for f in scan.filters:
        need |= {c.lower() for c in column_names(f)}
    on, reason = True, ""
    if table.keys_type is not KeysType.DUP_KEYS:
        on, reason = preaggregation(table, scan, ctx)
    if table.keys_type is KeysType.DUP_KEYS or on:
        candidates = indexes
    elif reason == "No aggregate on scan.":
        base_keys = len(base.keys)
        candidates = [ix for ix in indexes if len(ix.keys) == base_keys]
    else:
        candidates = [base]
    candidates = [ix for ix in candidates if need <= {c.lower() for c in ix.columns}]
    seq = table.property("function_column.sequence_col")
    if table.keys_type is KeysType.UNIQUE_KEYS and seq:
        # a rollup without the sequence column merges by load order, not by sequence value
        candidates = [ix for ix in candidates if seq.lower() in {c.lower() for c in ix.columns}]
    if len(candidates) > 1:

        def rank(ix: MaterializedIndexMeta) -> tuple[int, int, int, int]:
            return (
                -_prefix_match(ix, scan.filters),
                _row_count(catalog, scan, ix),
                len(ix.columns),
                0 if ix.is_base else 1,
            )

        chosen = min(candidates, key=rank)
    else:
        chosen = candidates[0] if candidates else base
    out = replace(scan, index_name=chosen.name, preaggregation=on, preagg_reason=reason)
    if chosen.index_id == scan.index_id:
        return out
    by_slot = {
        (t.partition_id, t.bucket_seq): t
        for t in catalog.tablets(scan.table_id, index_id=chosen.index_id)
    }
    ranges = []
    for r in scan.ranges:
        t = by_slot.get((r.tablet.partition_id, r.tablet.bucket_seq))
        if t is None:  # layout changed under the plan (e.g. TRUNCATE): keep the base index
            return out
        ranges.append(ScanRange(t, r.version))
    selection = scan.selection
    if selection is not None:
        selection = replace(selection, tablet_ids=tuple(r.tablet.tablet_id for r in ranges))
    return replace(
        out,
        index_id=chosen.index_id,
        ranges=tuple(ranges),
        selection=selection,
        row_count=ranges_row_count(catalog, ranges),
    )
