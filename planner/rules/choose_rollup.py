"""Rule choose_rollup: pick the materialized index (base or rollup) each OLAP scan reads.

Seed 004 / Doris `SelectMaterializedIndexWithAggregate` / `...WithoutAggregate`:
1. Candidates contain every column the scan needs (outputs and filter columns).
2. DUPLICATE tables: rows of every index are the same rows (rollups only reorder / drop
   columns), so any candidate serves; PREAGGREGATION ON.
   AGGREGATE / UNIQUE tables: storage merges each index by its own keys, so a rollup with fewer
   keys returns coarser rows. Without an aggregate directly above the scan only indexes with all
   the base keys are candidates (PREAGGREGATION OFF, "No aggregate on scan."). Under an
   aggregate, pre-aggregation is ON when group-by and filter columns are keys and every
   aggregate matches its column's aggregation type (sum/max/min of a SUM/MAX/MIN column,
   min/max/distinct of key columns); then any candidate serves. Otherwise PREAGGREGATION OFF
   with Doris' reason and the base index. count(*) never turns it on (seed 004).
3. Among candidates: longest prefix-index match with the filters (leading index keys bound by
   equality, plus one range column), then fewest rows, then fewest columns; base index first
   on ties.
The choice, Doris' PREAGGREGATION status and reason are recorded on the scan for EXPLAIN; the
scan's ranges switch to the chosen index's tablets of the same partitions / buckets at the same
versions (every load writes every index in the same version).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planner.logical import (
    LogicalAggregate,
    LogicalPlan,
    LogicalProject,
    LogicalScan,
    ScanRange,
)
from planner.rules.prune_scans import ranges_row_count
from sql.expressions import (
    SWAPPED_OP,
    AggregateCall,
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
    return _walk(plan, catalog)


def _walk(plan: LogicalPlan, catalog: Any) -> LogicalPlan:
    if isinstance(plan, LogicalAggregate):
        chain, scan = _scan_below(plan.child)
        if scan is not None:
            new_scan = _choose(scan, catalog, plan, chain)
            return replace(plan, child=_rebuild(plan.child, new_scan))
    if isinstance(plan, LogicalScan):
        return _choose(plan, catalog, None, [])
    children = tuple(_walk(c, catalog) for c in plan.children)
    return plan.with_children(*children) if children else plan


def _scan_below(plan: LogicalPlan) -> tuple[list[LogicalProject], LogicalScan | None]:
    """The scan directly under an aggregate, through projections only."""
    chain: list[LogicalProject] = []
    while isinstance(plan, LogicalProject):
        chain.append(plan)
        plan = plan.child
    return (chain, plan) if isinstance(plan, LogicalScan) else (chain, None)


def _rebuild(plan: LogicalPlan, scan: LogicalScan) -> LogicalPlan:
    if isinstance(plan, LogicalScan):
        return scan
    return plan.with_children(_rebuild(plan.children[0], scan))


def _resolve(e: Expr, chain: list[LogicalProject]) -> Expr:
    """Rewrite `e` (over the top projection's outputs) into scan columns."""
    for proj in chain:
        mapping = dict(proj.exprs)
        e = e.transform(
            lambda x, m=mapping: (
                m.get(x.name)  # type: ignore[misc]
                if isinstance(x, ColumnRef) and x.name in m
                else None
            )
        )
    return e


def visible_indexes(catalog: Any, table_id: int) -> list[MaterializedIndexMeta]:
    """Indexes queries may read: the base and finished rollups (not a rollup job's shadow)."""
    return [
        ix
        for ix in catalog.materialized_indexes(table_id)
        if getattr(ix, "state", "NORMAL") == "NORMAL"
    ]


# ---- pre-aggregation (AGGREGATE / UNIQUE) ------------------------------------------------------
def _doris_sql(e: Expr) -> str:
    """Expression text as Doris' Nereids `toSql()` prints slots (no backquotes)."""
    return e.sql().replace("`", "")


def preaggregation(
    table: TableMeta, scan: LogicalScan, agg: LogicalAggregate | None, chain: list[LogicalProject]
) -> tuple[bool, str]:
    """(ON?, Doris' reason when OFF) for a scan of an AGGREGATE / UNIQUE table."""
    if agg is None:
        return False, "No aggregate on scan."
    keys = {c.name.lower() for c in table.columns if c.is_key}
    calls = [_resolve(a, chain) for _, a in agg.aggregates]
    groups = [_resolve(g, chain) for _, g in agg.group_by]
    if not calls and not groups:
        return False, "No aggregate on scan."
    for g in groups:
        values = sorted(c for c in column_names(g) if c.lower() not in keys)
        if values:
            return False, f"Grouping expression {_doris_sql(g)} contains value column {values[0]}"
    for f in scan.filters:
        values = sorted(c for c in column_names(f) if c.lower() not in keys)
        if values:
            return False, f"Predicate {_doris_sql(f)} contains value column {values[0]}"
    for call in calls:
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


def _choose(
    scan: LogicalScan, catalog: Any, agg: LogicalAggregate | None, chain: list[LogicalProject]
) -> LogicalScan:
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
        on, reason = preaggregation(table, scan, agg, chain)
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
