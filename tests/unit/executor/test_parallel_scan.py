"""Parallel scans (executor/scan_pool.py), the memory tracker and cancellation of a long
aggregation, without a server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from executor.hash_aggregate import HashAggregate
from executor.memory import MemTracker
from executor.operator import ExecContext, Operator
from executor.scan_pool import ordered_pool
from planner.logical import LogicalAggregate, LogicalValues
from sql.binder.expressions import AggregateCall, ColumnRef
from sql.errors import DorisError, QueryCancelled
from storage.batch import Batch, Column
from storage.types import BIGINT


def _batch(start: int, n: int) -> Batch:
    return Batch(("k",), (Column(BIGINT, np.arange(start, start + n, dtype=np.int64)),))


def _task(tablet: int, batches: int, delay: float = 0.0):  # type: ignore[no-untyped-def]
    def run() -> Iterator[Batch]:
        for b in range(batches):
            if delay:
                time.sleep(delay * ((tablet * 7 + b) % 3))  # uneven speeds across workers
            yield _batch(tablet * 1000 + b * 10, 10)
    return run


@pytest.mark.parametrize("workers", [1, 2, 8])
def test_exchange_keeps_task_order(workers: int) -> None:
    tasks = [_task(t, 5, 0.001) for t in range(9)]
    out = [b.column("k").data[0] for b in ordered_pool(tasks, workers, threading.Event())]
    assert out == [t * 1000 + b * 10 for t in range(9) for b in range(5)]


def _scan_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("scan-worker")]


def test_exchange_propagates_worker_errors_and_joins_workers() -> None:
    def bad() -> Iterator[Batch]:
        yield _batch(0, 1)
        raise ValueError("corrupt segment")

    with pytest.raises(ValueError, match="corrupt segment"):
        list(ordered_pool([_task(0, 3), bad, _task(2, 50)], 2, threading.Event()))
    assert not _scan_threads()


def test_exchange_early_close_stops_workers_with_bounded_read_ahead() -> None:
    produced = []

    def endless(t: int):  # type: ignore[no-untyped-def]
        def run() -> Iterator[Batch]:
            i = 0
            while True:
                produced.append(t)
                yield _batch(i, 1)
                i += 1
        return run

    gen = ordered_pool([endless(t) for t in range(4)], 2, threading.Event())
    next(gen)
    deadline = time.monotonic() + 5
    while len(produced) < 8 and time.monotonic() < deadline:  # both workers fill their queues
        threading.Event().wait(0.005)
    gen.close()
    assert not _scan_threads()
    assert len(produced) < 40  # back-pressure: workers wait on full queues


def test_exchange_stops_promptly_on_cancel() -> None:
    cancel = threading.Event()

    def slow() -> Iterator[Batch]:
        while True:
            time.sleep(0.01)
            yield _batch(0, 1)

    threading.Timer(0.2, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(QueryCancelled):
        for _ in ordered_pool([slow, slow, slow], 2, cancel):
            pass
    assert time.monotonic() - t0 < 2
    assert not _scan_threads()


# ---- memory tracker ---------------------------------------------------------------------------
def test_mem_tracker_raises_doris_wording_past_limit() -> None:
    tracker = MemTracker(1000, "abc-def")
    a, b = object(), object()
    tracker.set(a, "HashAggregate", 600)
    tracker.set(a, "HashAggregate", 400)  # replaces, not adds
    tracker.set(b, "Sort", 500)
    assert tracker.current == 900 and tracker.peak == 900
    with pytest.raises(DorisError) as err:
        tracker.set(b, "Sort", 700)
    msg = err.value.message
    assert msg.startswith("errCode = 2, detailMessage = Memory limit exceeded:<consuming "
                          "tracker:<Query#Id=abc-def>, peak used 1100, current used 1100, "
                          "exec node:<Sort>>")
    assert "exec_mem_limit" in msg and err.value.code == 1105
    tracker.release(a)
    tracker.release(b)
    assert tracker.current == 0


# ---- a long aggregation stops at the next batch when cancelled --------------------------------
class _Endless(Operator):
    def produce(self) -> Iterator[Batch]:
        rng = np.random.default_rng(0)
        while True:
            yield Batch(("k",), (Column(BIGINT, rng.integers(0, 1 << 40, 65536)),))


def _endless_aggregate(ctx: ExecContext) -> HashAggregate:
    k = ColumnRef("k", BIGINT)
    plan = LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), (("k", k),),
                            (("c", AggregateCall("count", (), False, BIGINT)),))
    op = HashAggregate(plan, _Endless())
    op.open(ctx)
    return op


def test_cancel_stops_a_long_aggregation_promptly() -> None:
    ctx = ExecContext(cancel=threading.Event())
    op = _endless_aggregate(ctx)
    threading.Timer(0.5, ctx.cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(QueryCancelled):
        list(op.batches())
    assert time.monotonic() - t0 < 3
    op.close()
    assert ctx.memory.current == 0


def test_aggregate_state_hits_exec_mem_limit() -> None:
    ctx = ExecContext(cancel=threading.Event(), memory=MemTracker(1 << 20, "q-1"))
    op = _endless_aggregate(ctx)
    with pytest.raises(DorisError, match="Memory limit exceeded.*exec node:<HashAggregate>"):
        list(op.batches())
    op.close()
