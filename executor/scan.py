"""Scan operator: reads the captured tablets of one table from storage and applies its filters.

`TabletSource` is the storage engine's read entry point (storage.engine.StorageEngine implements
it). The scan reads every captured (tablet, version) range with `ReadOptions(columns,
predicates)`; storage returns exactly the rows that satisfy those predicates (see
storage/predicates.py), so the scan evaluates only the filters that have no storage form
(the node's `residual_filter`; planner/lower.py `split_scan_filters` states this contract). With
`ctx.parallelism` > 1 the per-tablet reads (decode + filter) run on a bounded pool
of worker threads (executor/scan_pool.py), still yielding batches in tablet order; each tablet
counts into its own ScanStats, added to the query's and to the scan's own (`scan_stats`, the
profile's per-scan counters) when the tablet is done.
Upstream: Doris `OlapScanNode` / BE `OlapScanner` (one scanner per tablet range, run by the
scanner scheduler).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from contextlib import AbstractContextManager
from functools import partial
from typing import Protocol

from executor.compile import compile_predicate
from executor.operator import Operator
from executor.runtime_filter import filter_type
from executor.scan_pool import Task, ordered_pool
from executor.state import RuntimeFilterState
from planner.physical import OlapScan
from planner.scan_ranges import ScanRange
from storage.batch import Batch
from storage.catalog.meta import TabletMeta
from storage.predicates import ColumnPredicate
from storage.reader import ReadOptions
from storage.scan_stats import ScanStats

# A scan goes parallel once its first tablet(s) took this long on the calling thread.
PARALLEL_AFTER_SECONDS = 0.003


class TabletSource(Protocol):
    def read_tablet(self, tablet: TabletMeta, version: int, options: ReadOptions,
                    stats: ScanStats | None = None) -> Iterator[Batch]: ...

    def reading(self) -> AbstractContextManager[None]:
        """Held while a query reads: the versions it planned against stay readable."""
        ...


class Scan(Operator):
    def __init__(self, plan: OlapScan, ranges: tuple[ScanRange, ...] | None = None,
                 global_filters: list[RuntimeFilterState] | None = None) -> None:
        super().__init__()
        self.plan = plan
        # this instance's share of the planned ranges (None: all of them)
        self.ranges = plan.ranges if ranges is None else ranges
        self._pool: Generator[Batch, None, None] | None = None
        self._runtime: list[tuple[float, int, list[ColumnPredicate]]] = []
        # runtime filters from joins in other fragments, awaited before reading
        self.global_filters = global_filters if global_filters is not None else []
        # this scan's own storage counters (the query profile's per-scan row); every tablet's
        # counters are added here and to the query's `ctx.scan_stats`
        self.scan_stats = ScanStats()
        # Doris' type of each runtime filter applied (`in`, `bloom`, `min_max`, `bitmap`)
        self.runtime_filter_types: list[str] = []

    def add_runtime_filter(self, predicates: list[ColumnPredicate], keep: float = 1.0) -> None:
        """Predicates a join published before this scan started (executor/runtime_filter.py);
        `keep` estimates the fraction of rows they let through (most selective tested first)."""
        self._runtime.append((keep, len(self._runtime), predicates))
        if predicates:  # LARGEINT keys and float keys with NaN send none
            self.runtime_filter_types.append(filter_type(predicates))

    def produce(self) -> Iterator[Batch]:
        ctx = self.ctx
        if ctx.storage is None:
            raise RuntimeError("scan needs a storage handle in the ExecContext")
        storage = ctx.storage
        plan = self.plan
        for gf in self.global_filters:
            predicates = gf.wait(ctx.cancel)
            if predicates:
                self.add_runtime_filter(predicates, gf.keep)
        # Filters storage evaluates exactly (plain column-vs-constant conjuncts handed down as
        # ColumnPredicates, OR trees of them as Disjunctions) need no second pass here: the
        # scan contract is stated once, in planner/lower.py `split_scan_filters`.
        # Constant subexpressions were folded at plan time (planner/rules/fold_constants.py),
        # so a conjunct whose constant side was an expression is a storage predicate already.
        predicate = plan.residual_filter
        keep = compile_predicate(predicate, ctx.cancel) if predicate is not None else None
        options = ReadOptions(columns=plan.columns,
                              predicates=plan.storage_predicates + tuple(
                                  p for _, _, ps in sorted(self._runtime) for p in ps),
                              batch_size=ctx.batch_size,
                              disjunctions=plan.disjunctions)
        parallel = ctx.parallelism > 1 and len(self.ranges) > 1

        def read(rng: ScanRange) -> Iterator[Batch]:
            stats = ScanStats()
            try:
                for batch in storage.read_tablet(rng.tablet, rng.version, options, stats):
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
            finally:
                with ctx.stats_lock:
                    ctx.scan_stats.add(stats)
                    self.scan_stats.add(stats)

        tasks: list[Task] = [partial(read, rng) for rng in self.ranges]
        # Adaptive: the first tablet runs on this thread; only when it took long enough to pay
        # for worker threads and GIL hand-offs do the remaining tablets go to the pool (small
        # or well-pruned scans finish sooner without them).
        started = time.perf_counter()
        done = 0
        for task in tasks:
            if parallel and done and time.perf_counter() - started >= PARALLEL_AFTER_SECONDS:
                break
            ctx.check_cancelled()
            yield from task()
            done += 1
        if done == len(tasks):
            return
        self._pool = ordered_pool(tasks[done:], ctx.parallelism, ctx.cancel)
        yield from self._pool

    def close(self) -> None:
        """Stop and join the scan workers (the query may end before the scan does)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        super().close()
