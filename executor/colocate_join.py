"""Colocate join: a join of tables in one colocate group, executed bucket by bucket.

When planner/distribute.py chose COLOCATE for a join, the equi keys pair the bucket columns of
both sides, so a row can only meet rows in the same bucket sequence: bucket seq b of the left
table holds exactly the keys that bucket seq b of the right table holds (seed 000). This
operator runs the join once per bucket seq, each run a normal HashJoin subtree whose scans read
only that bucket's tablets (of every partition): hash tables are per bucket, nothing crosses
buckets (no exchange), and the buckets are independent fragment instances, run on up to
`parallelism` worker threads (executor/exchange.py keeps the output in bucket order). Inner,
outer, semi and anti joins are all correct per bucket because a row with no partner in its own
bucket has none anywhere. Upstream: Doris colocate join (one fragment instance per bucket seq).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial

from executor.exchange import ordered_exchange
from executor.operator import ExecContext, Operator
from planner.logical import LogicalJoin, LogicalPlan, LogicalScan, walk, with_scan_ranges
from storage.batch import Batch
from storage.scan_stats import ScanStats


def bucket_seqs(plan: LogicalPlan) -> list[int]:
    return sorted({r.tablet.bucket_seq for n in walk(plan) if isinstance(n, LogicalScan)
                   for r in n.ranges})


def restrict_to_bucket(plan: LogicalPlan, bucket: int) -> LogicalPlan:
    """`plan` with every scan reading only the tablets of bucket seq `bucket`."""
    return with_scan_ranges(plan, lambda scan: tuple(r for r in scan.ranges
                                                     if r.tablet.bucket_seq == bucket))


class ColocateJoin(Operator):
    def __init__(self, plan: LogicalJoin, build: Callable[[LogicalPlan], Operator]) -> None:
        super().__init__()
        self.plan = plan
        self._build = build
        self._exchange: Iterator[Batch] | None = None
        self.instances = 0

    def _run_bucket(self, bucket: int, ctx: ExecContext) -> Iterator[Batch]:
        op = self._build(restrict_to_bucket(self.plan, bucket))
        op.open(ctx)
        try:
            yield from op.batches()
        finally:
            op.close()
            if ctx.scan_stats is not self.ctx.scan_stats:
                with self.ctx.stats_lock:
                    self.ctx.scan_stats.add(ctx.scan_stats)

    def produce(self) -> Iterator[Batch]:
        ctx = self.ctx
        buckets = bucket_seqs(self.plan)
        self.instances = len(buckets)
        parallel = ctx.parallelism > 1 and len(buckets) > 1
        tasks = []
        for b in buckets:
            # each instance scans on its own thread with its own counters (merged at its end)
            sub = replace(ctx, scan_stats=ScanStats(), parallelism=1) if parallel else ctx
            tasks.append(partial(self._run_bucket, b, sub))
        if not parallel:
            for task in tasks:
                ctx.check_cancelled()
                yield from task()
            return
        self._exchange = ordered_exchange(tasks, ctx.parallelism, ctx.cancel)
        yield from self._exchange

    def close(self) -> None:
        if self._exchange is not None:
            self._exchange.close()  # type: ignore[attr-defined]
            self._exchange = None
        super().close()
