"""Operator contract, execution context and per-operator statistics.

An `Operator` is opened once with an `ExecContext`, then pulled for batches through
`batches()`, then closed. Pipeline breakers (aggregate, sort) additionally implement
`sink(batch)` (consume one input batch), `combine(other)` (merge the state of a parallel twin)
and `finalize()` (produce output). Cancellation is cooperative: the context's cancel token is
checked between batches and raises `QueryCancelled`, so KILL QUERY stops a running query at the
next batch boundary. Upstream: DuckDB `PhysicalOperator` (source / sink / operator),
BusTub `AbstractExecutor` (Init / Next), Doris `ExecNode`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from executor.memory import MemTracker
from sql.errors import QueryCancelled
from storage.batch import DEFAULT_BATCH_SIZE, Batch
from storage.scan_stats import ScanStats

if TYPE_CHECKING:
    from executor.scan import TabletSource


@dataclass
class OperatorStats:
    rows: int = 0
    batches: int = 0
    seconds: float = 0.0  # inclusive: pulling from children counts too
    bytes: int = 0  # column buffer bytes of the output batches


@dataclass
class ExecContext:
    """What every operator of one query shares: the cancel token, the storage handle, the
    memory tracker of blocking operators (exec_mem_limit) and the scan parallelism
    (parallel_fragment_exec_instance_num, already capped at the CPU count)."""

    cancel: threading.Event = field(default_factory=threading.Event)
    storage: TabletSource | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    # Storage counters of every scan of the query (segments, pages, rows skipped per index).
    scan_stats: ScanStats = field(default_factory=ScanStats)
    # guards `scan_stats` against parallel scan workers adding their per-tablet counters
    stats_lock: threading.Lock = field(default_factory=threading.Lock)
    memory: MemTracker = field(default_factory=MemTracker)
    parallelism: int = 1

    def check_cancelled(self) -> None:
        if self.cancel.is_set():
            raise QueryCancelled()


class Operator:
    """Base operator: subclasses implement `produce()`; `batches()` adds cancel checks and stats."""

    def __init__(self, *children: Operator) -> None:
        self.children: tuple[Operator, ...] = children
        self.stats = OperatorStats()
        self._ctx: ExecContext | None = None

    @property
    def ctx(self) -> ExecContext:
        if self._ctx is None:
            raise RuntimeError(f"{type(self).__name__} used before open()")
        return self._ctx

    def open(self, ctx: ExecContext) -> None:
        self._ctx = ctx
        for c in self.children:
            c.open(ctx)

    def batches(self) -> Iterator[Batch]:
        ctx = self.ctx
        ctx.check_cancelled()
        start = time.perf_counter()
        for batch in self.produce():
            ctx.check_cancelled()
            self.stats.rows += batch.num_rows
            self.stats.batches += 1
            self.stats.bytes += batch.nbytes
            self.stats.seconds += time.perf_counter() - start
            yield batch
            start = time.perf_counter()
        self.stats.seconds += time.perf_counter() - start

    def produce(self) -> Iterator[Batch]:
        raise NotImplementedError

    def close(self) -> None:
        for c in self.children:
            c.close()

    def child_batches(self) -> Iterator[Batch]:
        (child,) = self.children
        return child.batches()


class SinkOperator(Operator):
    """A pipeline breaker: consumes all input, then emits the result."""

    def sink(self, batch: Batch) -> None:
        raise NotImplementedError

    def combine(self, other: SinkOperator) -> None:
        raise NotImplementedError

    def finalize(self) -> Iterator[Batch]:
        raise NotImplementedError

    def produce(self) -> Iterator[Batch]:
        for batch in self.child_batches():
            if batch.num_rows:
                self.sink(batch)
        yield from self.finalize()


def chunks(batch: Batch, size: int) -> Iterator[Batch]:
    """Split a batch into pieces of at most `size` rows (at least one piece, maybe empty)."""
    n = batch.num_rows
    if n <= size:
        yield batch
        return
    for start in range(0, n, size):
        yield batch.slice(start, min(start + size, n))
