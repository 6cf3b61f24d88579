"""Rule prune_scans: which partitions and tablets (buckets) each OLAP scan reads.

Partition pruning evaluates the scan's filter conjuncts against each partition's bounds:
a partition is kept unless the filter can never be TRUE for a row in it. Each partition is
described as one or more "boxes" (per partition column an interval of physical values): a RANGE
partition [lower, upper) is covered by up to three boxes over its first two columns (keys are
compared lexicographically, see `_range_boxes`), a LIST partition by one point box per value
tuple. Conjuncts
`col op constant` (=, <, <=, >, >=), `col IN (..)` and BETWEEN (bound as two comparisons)
combined with AND / OR are understood; anything else counts as "may be TRUE", so pruning only
ever removes partitions that cannot hold a matching row (the scan still applies every filter).

Bucket pruning (Doris `HashDistributionPruner`): when every distribution column is bound by `=`
or `IN` in the top-level AND, only the buckets those value combinations hash to
(`storage.distribution.bucket_of_rows`, Doris' CRC32) are read, per kept partition.

The result is data on the scan: `ranges` keep only the chosen tablets, `partitions` only the
chosen partitions, and `selection` (planner.logical.ScanSelection) records names / ids and
totals for EXPLAIN (`partitions=k/n (names)`, `tablets=k/n, tabletList=..`).
Upstream: Doris Nereids `PruneOlapScanPartition`, `PruneOlapScanTablet`, `PartitionPruner`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.logical import LogicalPlan, LogicalScan, ScanSelection
from sql.expressions import SWAPPED_OP, And, ColumnRef, Comparison, Expr, InList, Literal, Or
from storage.catalog.meta import DistributionType, PartitionMeta, PartitionType, TableMeta
from storage.types import DataType

# Most value combinations bucket pruning enumerates (Doris caps the IN-list product too).
MAX_BUCKET_COMBINATIONS = 1024


@dataclass(frozen=True, slots=True)
class Interval:
    """Physical values lo..hi; None = unbounded on that side."""

    lo: Any = None
    lo_incl: bool = True
    hi: Any = None
    hi_incl: bool = False

    def may_satisfy(self, op: str, v: Any) -> bool:
        """Can some x in the interval satisfy `x op v`?"""
        lo, hi = self.lo, self.hi
        if op == "=":
            above_lo = lo is None or lo < v or (self.lo_incl and lo == v)
            below_hi = hi is None or v < hi or (self.hi_incl and hi == v)
            return above_lo and below_hi
        if op == "<":
            return lo is None or lo < v
        if op == "<=":
            return lo is None or lo < v or (self.lo_incl and lo == v)
        if op == ">":
            return hi is None or hi > v
        if op == ">=":
            return hi is None or hi > v or (self.hi_incl and hi == v)
        return True


Box = dict[str, Interval]  # partition column (lower-case) -> interval; missing = unbounded


def _same_type(col: DataType, lit: DataType) -> bool:
    if col == lit:
        return True
    return col.is_string and lit.is_string  # VARCHAR(10) vs VARCHAR(3) literal: same values


def _column_constant(e: Comparison) -> tuple[str, str, Any] | None:
    """`col op constant` (either side) as (column, op, physical value), else None."""
    left, right, op = e.left, e.right, e.op
    if isinstance(left, Literal) and isinstance(right, ColumnRef):
        left, right, op = right, left, SWAPPED_OP[op]
    if (
        isinstance(left, ColumnRef)
        and isinstance(right, Literal)
        and right.value is not None
        and _same_type(left.type, right.type)
    ):
        return left.name.lower(), op, right.value
    return None


def may_be_true(e: Expr, box: Box) -> bool:
    """False only when `e` is never TRUE for a row whose partition columns lie in `box`."""
    if isinstance(e, And):
        return all(may_be_true(a, box) for a in e.args)
    if isinstance(e, Or):
        return any(may_be_true(a, box) for a in e.args)
    if isinstance(e, Comparison) and e.op in ("=", "<", "<=", ">", ">="):
        cc = _column_constant(e)
        if cc is None or cc[0] not in box:
            return True
        col, op, v = cc
        try:
            return box[col].may_satisfy(op, v)
        except TypeError:  # incomparable physical values: do not prune
            return True
    if isinstance(e, InList) and not e.negated and isinstance(e.arg, ColumnRef):
        col = e.arg.name.lower()
        if col not in box:
            return True
        values = []
        for v in e.values:
            if not isinstance(v, Literal) or not _same_type(e.arg.type, v.type):
                return True
            if v.value is not None:
                values.append(v.value)
        try:
            return any(box[col].may_satisfy("=", v) for v in values)
        except TypeError:
            return True
    # WHERE FALSE never holds; anything else not understood may
    return not (isinstance(e, Literal) and e.value is not None and not e.value)


def partition_boxes(table: TableMeta, part: PartitionMeta) -> list[Box]:
    """The boxes covering every row `part` can hold."""
    info = table.partition_info
    cols = [c.lower() for c in info.columns]
    types = [table.column(c).type for c in info.columns]
    if info.type is PartitionType.LIST:
        boxes: list[Box] = []
        for tup in part.list_values:
            box: Box = {}
            for c, t, text in zip(cols, types, tup):
                v = t.to_physical(text)
                box[c] = Interval(v, True, v, True)
            boxes.append(box)
        return boxes
    if info.type is PartitionType.RANGE and cols:
        return _range_boxes(cols, types, part.lower, part.upper)
    return [{}]


def _range_boxes(
    cols: list[str],
    types: list[DataType],
    lower: tuple[str, ...] | None,
    upper: tuple[str, ...] | None,
) -> list[Box]:
    """Boxes covering the keys k with lower <= k < upper (lexicographic; a bound with fewer
    values than columns is padded with MIN, which no value is below). Over the first two columns:
      A: k0 = L0 and k1 >= L1           (keys starting at the lower bound's first value)
      B: L0 < k0 < U0                   (anything in between)
      C: k0 = U0 and k1 < U1            (only when U has a second value; `<=` when U has more,
                                         since then k1 = U1 is allowed with smaller later values)
    (one box k0 = L0 = U0, L1 <= k1 < U1 when both bounds share the first value). Deeper
    columns are left unbounded, so the union is a superset and pruning stays safe."""

    def phys(i: int, bound: tuple[str, ...] | None) -> object:
        return types[i].to_physical(bound[i]) if bound is not None and len(bound) > i else None

    two = len(cols) > 1
    l0, u0 = phys(0, lower), phys(0, upper)
    l1 = phys(1, lower) if two else None
    u1 = phys(1, upper) if two else None
    c_strict = upper is not None and len(upper) == 2
    if l0 is not None and u0 is not None and l0 == u0:
        box: Box = {cols[0]: Interval(l0, True, l0, True)}
        if two and (l1 is not None or u1 is not None):
            box[cols[1]] = Interval(l1, True, u1, not c_strict)
        return [box]
    boxes: list[Box] = [{cols[0]: Interval(l0, l0 is None, u0, False)}]
    if l0 is not None:
        a: Box = {cols[0]: Interval(l0, True, l0, True)}
        if l1 is not None:
            a[cols[1]] = Interval(l1, True, None, False)
        boxes.append(a)
    if u0 is not None and upper is not None and len(upper) > 1:
        c: Box = {cols[0]: Interval(u0, True, u0, True)}
        if u1 is not None:
            c[cols[1]] = Interval(None, True, u1, not c_strict)
        boxes.append(c)
    return boxes


def _filter_expr(filters: Sequence[Expr]) -> Expr | None:
    if not filters:
        return None
    return filters[0] if len(filters) == 1 else And(tuple(filters))


def bound_values(filters: Sequence[Expr], column: str, dtype: DataType) -> list[Any] | None:
    """Values a top-level conjunct `column = v` / `column IN (..)` restricts `column` to
    (intersected over conjuncts), or None when no conjunct binds it."""
    found: set[Any] | None = None
    for f in filters:
        vals: set[Any] | None = None
        if isinstance(f, Comparison) and f.op == "=":
            cc = _column_constant(f)
            if cc is not None and cc[0] == column.lower():
                vals = {cc[2]}
        elif (
            isinstance(f, InList)
            and not f.negated
            and isinstance(f.arg, ColumnRef)
            and f.arg.name.lower() == column.lower()
        ) and all(isinstance(v, Literal) and _same_type(dtype, v.type) for v in f.values):
            lits = [v for v in f.values if isinstance(v, Literal)]
            vals = {v.value for v in lits if v.value is not None}
        if vals is not None:
            found = vals if found is None else found & vals
    return None if found is None else sorted(found, key=repr)


def selected_buckets(table: TableMeta, filters: Sequence[Expr], buckets: int) -> set[int] | None:
    """Bucket seqs the filters allow, or None for all of them."""
    from storage.batch import Column
    from storage.distribution import bucket_of_rows

    dist = table.distribution
    if dist.type is not DistributionType.HASH or not dist.columns:
        return None
    per_column = []
    total = 1
    for c in dist.columns:
        dtype = table.column(c).type
        vals = bound_values(filters, c, dtype)
        if vals is None:
            return None
        per_column.append((dtype, vals))
        total *= max(len(vals), 1)
        if total > MAX_BUCKET_COMBINATIONS:
            return None
    if any(not vals for _, vals in per_column):
        return set()  # an empty IN intersection: no row can match
    combos = list(itertools.product(*(vals for _, vals in per_column)))
    try:
        columns = [
            Column.from_physical(dtype, [combo[i] for combo in combos])
            for i, (dtype, _) in enumerate(per_column)
        ]
    except Exception:  # noqa: BLE001 - a constant that does not fit the column: do not prune
        return None
    return {int(b) for b in bucket_of_rows(columns, buckets)}


def ranges_row_count(catalog: Any, ranges: Sequence[Any]) -> int:
    """Rows of the rowsets the ranges capture (LogicalScan.row_count, the planner's statistic)."""
    return sum(
        r.num_rows for rng in ranges for r in catalog.rowsets(rng.tablet.tablet_id, rng.version)
    )


def prune_scan(
    scan: LogicalScan, table: TableMeta, parts: Sequence[PartitionMeta], catalog: Any = None
) -> LogicalScan:
    by_id = {p.partition_id: p for p in parts}
    expr = _filter_expr(scan.filters)
    kept_parts: list[tuple[int, int]] = []
    buckets_of: dict[int, set[int] | None] = {}
    for pid, version in scan.partitions:
        part = by_id.get(pid)
        if part is None:
            continue
        if expr is not None and table.partition_info.type is not PartitionType.UNPARTITIONED:
            try:
                boxes = partition_boxes(table, part)
            except Exception:  # noqa: BLE001 - unparsable bound text: keep the partition
                boxes = [{}]
            if not any(may_be_true(expr, b) for b in boxes):
                continue
        kept_parts.append((pid, version))
        buckets_of[pid] = selected_buckets(table, scan.filters, part.buckets)
    ranges = []
    in_kept = 0  # Doris' tablets=k/n: n counts the tablets of the selected partitions
    for r in scan.ranges:
        if r.tablet.partition_id not in buckets_of:
            continue
        in_kept += 1
        allowed = buckets_of[r.tablet.partition_id]
        if allowed is None or r.tablet.bucket_seq in allowed:
            ranges.append(r)
    selection = ScanSelection(
        partition_ids=tuple(pid for pid, _ in kept_parts),
        partition_names=tuple(by_id[pid].name for pid, _ in kept_parts),
        total_partitions=len(scan.partitions),
        tablet_ids=tuple(r.tablet.tablet_id for r in ranges),
        total_tablets=in_kept,
    )
    out = replace(scan, ranges=tuple(ranges), partitions=tuple(kept_parts), selection=selection)
    if catalog is not None and len(ranges) != len(scan.ranges):
        out = replace(out, row_count=ranges_row_count(catalog, ranges))
    return out


def prune_scans(plan: LogicalPlan, ctx: Any) -> LogicalPlan:
    catalog = getattr(ctx, "catalog", None)
    children = tuple(prune_scans(c, ctx) for c in plan.children)
    if children:
        plan = plan.with_children(*children)
    if not isinstance(plan, LogicalScan) or not hasattr(catalog, "table_by_id"):
        return plan  # no catalog (e.g. an in-memory test engine): read everything
    table = catalog.table_by_id(plan.table_id)
    if table is None:
        return plan
    return prune_scan(plan, table, catalog.partitions(plan.table_id), catalog)
