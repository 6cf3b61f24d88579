"""Doris' text for what an OLAP scan reads: index, pre-aggregation, partitions, tablets.

`scan_lines(scan)` renders the facts the rules prune_scans and choose_rollup recorded on a
LogicalScan the way Doris 2.1 prints them in a `VOlapScanNode` (DORIS_REFERENCE.md a.3):
`TABLE: db.t(index), PREAGGREGATION: ON` (or `OFF. Reason: ..`), `partitions=k/n (names)` and
`tablets=k/n, tabletList=a,b,c ...` (at most 3 ids). The query profile shows them today; EXPLAIN
can print the same lines.
"""

from __future__ import annotations

from planner.logical import LogicalPlan, LogicalScan, walk


def scan_lines(scan: LogicalScan) -> list[str]:
    index = scan.index_name or scan.table
    preagg = "ON" if scan.preaggregation else f"OFF. Reason: {scan.preagg_reason}"
    lines = [f"TABLE: {scan.db}.{scan.table}({index}), PREAGGREGATION: {preagg}"]
    sel = scan.selection
    if sel is not None:
        names = ",".join(sel.partition_names)
        lines.append(f"partitions={len(sel.partition_ids)}/{sel.total_partitions} ({names})")
        ids = [str(t) for t in sel.tablet_ids]
        more = " ..." if len(ids) > 3 else ""
        shown = ",".join(ids[:3])
        lines.append(f"tablets={len(ids)}/{sel.total_tablets}, tabletList={shown}{more}")
    return lines


def plan_scan_lines(plan: LogicalPlan) -> list[tuple[str, str]]:
    """(`VOlapScanNode(<table>)`, facts) for every OLAP scan of a plan, in plan order."""
    out = []
    for node in walk(plan):
        if isinstance(node, LogicalScan):
            out.append((f"VOlapScanNode({node.table})", "; ".join(scan_lines(node))))
    return out
