"""Parallel aggregate: partial aggregation per tablet group on the worker pool, then one merge.

For an aggregate whose input is a plain scan pipeline (Projects and Filters over one OLAP
scan) of many rows, the scan's tablets are dealt round-robin into `parallelism` groups; each
group runs its own copy of the pipeline and a HashAggregate twin on a worker thread (the
update phase: decode, filter, hash and fold, mostly in numpy and numba `nogil` kernels), then
the twins are combined into the first one (the merge phase) and it finalizes. Output order is
by group key either way, so results do not depend on the split. Doris runs the same shape as
`VAGGREGATE (update serialize)` instances below a merging aggregate.
Upstream: Doris two-phase aggregation, DuckDB's parallel hash aggregate (thread-local tables,
combine, finalize).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

from executor.hash_aggregate import HashAggregate
from executor.operator import ExecContext, Operator
from planner.logical import (
    LogicalAggregate, LogicalFilter, LogicalPlan, LogicalProject, LogicalScan, with_scan_ranges,
)
from storage.batch import Batch
from storage.scan_stats import ScanStats

# Below this many stored rows a single pipeline is faster than starting workers.
PARALLEL_MIN_ROWS = 200_000


def scan_pipeline(plan: LogicalAggregate) -> LogicalScan | None:
    """The scan under a chain of Projects / Filters below `plan`, else None."""
    node: LogicalPlan = plan.child
    while isinstance(node, (LogicalProject, LogicalFilter)):
        node = node.child
    return node if isinstance(node, LogicalScan) else None


class ParallelAggregate(Operator):
    def __init__(self, plan: LogicalAggregate, scan: LogicalScan,
                 build: Callable[[LogicalPlan], Operator]) -> None:
        super().__init__()
        self.plan = plan
        self.scan = scan
        self._build = build
        self.instances = 0
        self._twins: list[Operator] = []

    def produce(self) -> Iterator[Batch]:
        ctx = self.ctx
        ranges = self.scan.ranges
        k = min(ctx.parallelism, len(ranges))
        if k <= 1 or self.scan.row_count < PARALLEL_MIN_ROWS:
            op = self._build(self.plan)  # one ordinary pipeline
            self._twins = [op]
            op.open(ctx)
            yield from op.batches()
            return
        self.instances = k
        twins: list[HashAggregate] = []
        contexts: list[ExecContext] = []
        for i in range(k):
            share = ranges[i::k]
            op = self._build(with_scan_ranges(self.plan, lambda _s, share=share: share))
            assert isinstance(op, HashAggregate)
            sub = replace(ctx, scan_stats=ScanStats(), parallelism=1)
            op.open(sub)
            twins.append(op)
            contexts.append(sub)
        self._twins = list(twins)
        errors: list[BaseException] = []
        stop = threading.Event()  # one worker failed: the others stop at their next batch

        def update(op: HashAggregate) -> None:
            try:
                for batch in op.children[0].batches():
                    if stop.is_set():
                        return
                    if batch.num_rows:
                        op.sink(batch)
            except BaseException as e:  # noqa: BLE001 - re-raised on the query's thread
                errors.append(e)
                stop.set()

        threads = [threading.Thread(target=update, args=(op,), name=f"agg-{i}", daemon=True)
                   for i, op in enumerate(twins)]
        for t in threads:
            t.start()
        for t in threads:  # KILL / timeout: the workers see the same cancel token and stop
            t.join()
        ctx.check_cancelled()
        for sub in contexts:
            with ctx.stats_lock:
                ctx.scan_stats.add(sub.scan_stats)
        if errors:
            raise errors[0]
        first = twins[0]
        for other in twins[1:]:
            first.combine(other)
        yield from first.finalize()

    def close(self) -> None:
        for op in self._twins:
            op.close()
        self._twins = []
        super().close()
