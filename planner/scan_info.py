"""Doris' text for what an OLAP scan reads: index, pre-aggregation, partitions, tablets.

One renderer for these lines (DORIS_REFERENCE.md a.3), used by EXPLAIN's `VOlapScanNode`
(planner/distribute.py, which knows the catalog's partition names and totals) and by the
query profile (`plan_scan_lines`, from what the rules prune_scans and choose_rollup recorded
on each LogicalScan): `TABLE: db.t(index), PREAGGREGATION: ON` (or `OFF. Reason: ..`),
`partitions=k/n (names)` and `tablets=k/n, tabletList=a,b,c ...` (at most 3 ids).

(The scan contract, which filters storage applies and which the scan evaluates, is stated
once, where the scan node is built: planner/lower.py `split_scan_filters`.)
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.logical import LogicalPlan, LogicalScan, walk


def table_line(db: str, table: str, index: str, preagg_off_reason: str | None) -> str:
    preagg = "ON" if preagg_off_reason is None else f"OFF. Reason: {preagg_off_reason}"
    return f"TABLE: {db}.{table}({index}), PREAGGREGATION: {preagg}"


def partitions_line(names: Sequence[str], total: int) -> str:
    return f"partitions={len(names)}/{total} ({','.join(names)})"


def tablets_line(tablet_ids: Sequence[int], total: int) -> str:
    shown = ",".join(str(t) for t in tablet_ids[:3])
    more = " ..." if len(tablet_ids) > 3 else ""
    return f"tablets={len(tablet_ids)}/{total}, tabletList={shown}{more}"


def scan_lines(scan: LogicalScan) -> list[str]:
    reason = None if scan.preaggregation else scan.preagg_reason
    lines = [table_line(scan.db, scan.table, scan.index_name or scan.table, reason)]
    sel = scan.selection
    if sel is not None:
        lines.append(partitions_line(sel.partition_names, sel.total_partitions))
        lines.append(tablets_line(sel.tablet_ids, sel.total_tablets))
    return lines


def plan_scan_lines(plan: LogicalPlan) -> list[tuple[str, str]]:
    """(`VOlapScanNode(<table>)`, facts) for every OLAP scan of a plan, in plan order."""
    out = []
    for node in walk(plan):
        if isinstance(node, LogicalScan):
            out.append((f"VOlapScanNode({node.table})", "; ".join(scan_lines(node))))
    return out
