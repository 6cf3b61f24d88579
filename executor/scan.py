"""Scan operator: reads the captured tablets of one table from storage and applies its filters.

`TabletSource` is the storage engine's read entry point (storage.engine.StorageEngine implements
it). The scan reads every captured (tablet, version) range with `ReadOptions(columns,
predicates)`; predicates are pruning hints only, so the scan always evaluates the full filter
itself. Upstream: Doris `OlapScanNode` / BE `OlapScanner`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from executor.compile import compile_predicate
from executor.operator import Operator
from planner.logical import LogicalScan
from sql.expressions import make_and
from storage.batch import Batch
from storage.catalog.meta import TabletMeta
from storage.reader import ReadOptions
from storage.scan_stats import ScanStats


class TabletSource(Protocol):
    def read_tablet(self, tablet: TabletMeta, version: int, options: ReadOptions,
                    stats: ScanStats | None = None) -> Iterator[Batch]: ...


class Scan(Operator):
    def __init__(self, plan: LogicalScan) -> None:
        super().__init__()
        self.plan = plan

    def produce(self) -> Iterator[Batch]:
        ctx = self.ctx
        if ctx.storage is None:
            raise RuntimeError("scan needs a storage handle in the ExecContext")
        plan = self.plan
        predicate = make_and(list(plan.filters))
        keep = compile_predicate(predicate, ctx.cancel) if predicate is not None else None
        options = ReadOptions(columns=plan.columns, predicates=plan.predicates,
                              batch_size=ctx.batch_size)
        for rng in plan.ranges:
            ctx.check_cancelled()
            for batch in ctx.storage.read_tablet(rng.tablet, rng.version, options, ctx.scan_stats):
                ctx.check_cancelled()
                if batch.num_rows == 0:
                    continue
                if batch.names != plan.columns:
                    batch = batch.rename(plan.columns)  # storage may spell names differently
                if keep is not None:
                    mask = keep(batch)
                    if not mask.all():
                        batch = batch.filter(mask)
                        if batch.num_rows == 0:
                            continue
                yield batch
