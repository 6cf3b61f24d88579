"""What an OLAP scan reads, as plain data captured at plan time: the tablets with the partition
version to read each at (`ScanRange`) and what partition / bucket pruning kept
(`ScanSelection`). Shared by the logical scan (planner/logical.py LogicalScan, where the
builder and the rules choose_rollup / prune_scans fill them) and the physical one
(planner/physical.py OlapScan, which the executor reads).
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.catalog.meta import TabletMeta


@dataclass(frozen=True, slots=True)
class ScanRange:
    """One tablet of the scan and the partition version to read it at (captured at plan time)."""

    tablet: TabletMeta
    version: int


@dataclass(frozen=True, slots=True)
class ScanSelection:
    """What partition / bucket pruning kept (planner/rules/prune_scans.py), for EXPLAIN's
    `partitions=k/n (names)` and `tablets=k/n, tabletList=..`; `ranges` already hold only these.
    `total_tablets` counts the tablets of the selected partitions (Doris' n), before buckets
    were pruned."""

    partition_ids: tuple[int, ...]
    partition_names: tuple[str, ...]
    total_partitions: int
    tablet_ids: tuple[int, ...]
    total_tablets: int
