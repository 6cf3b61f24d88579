"""Scan pool: run independent batch producers (one per tablet) on a bounded thread pool
(the local, ordered fan-out inside one scan; the exchange between fragments is exchange.py).

`ordered_pool(tasks, workers, cancel)` starts up to `workers` tasks on the process-wide CPU
pool (executor/cpu_pool.py: pooled threads, each running only while it holds one of the
pool's CPU slots); each takes the next
unstarted task (in task order), pulls its batches and puts them into that task's bounded queue
(`_QUEUE_BATCHES` batches: back-pressure, so memory stays about workers x queue x batch size).
The consumer reads the task queues in task order, so output order equals the sequential scan
(results of queries without ORDER BY stay deterministic) while later tablets are decoded ahead
on the other cores (numpy and the numba kernels release the GIL). Cancellation: workers check
the cancel token between batches and stop; the consumer polls it while waiting, so KILL QUERY
and query_timeout stop a scan within one batch. An error in a worker is re-raised in the
consumer; closing the consumer early (LIMIT) stops and joins every worker.
Upstream: Doris pipeline `LocalExchangeSourceOperator` / scanner scheduler with a bounded
block queue (`ScannerContext`), DuckDB parallel table scans.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterator

from executor.cpu_pool import POOL, Join
from sql.errors import QueryCancelled
from storage.batch import Batch

Task = Callable[[], Iterator[Batch]]

_QUEUE_BATCHES = 4
_POLL_SECONDS = 0.05
_DONE = object()


def put_until(q: queue.Queue[object], item: object, stop: threading.Event) -> bool:
    """Put with back-pressure, polling `stop`; False when it was set before the put. While
    the queue is full this thread waits without its CPU slot (executor/cpu_pool.py)."""
    if stop.is_set():
        return False
    try:
        q.put_nowait(item)
        return True
    except queue.Full:
        pass
    # The queue's condition wakes the put as soon as the consumer takes an item; the timeout
    # only bounds how late a halt is noticed.
    with POOL.blocked():
        while not stop.is_set():
            try:
                q.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
    return False


def get_polling(q: queue.Queue[object], check: Callable[[], None]) -> object:
    """Get, calling `check` (which raises to give up: cancel, failure) between waits. While
    the queue is empty this thread waits without its CPU slot (executor/cpu_pool.py)."""
    check()
    try:
        return q.get_nowait()
    except queue.Empty:
        pass
    with POOL.blocked():
        while True:
            try:
                return q.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                check()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class _Pool:
    """Workers and per-task queues of one exchange."""

    def __init__(self, tasks: list[Task], workers: int, cancel: threading.Event) -> None:
        self.tasks = tasks
        self.cancel = cancel
        self.stop = threading.Event()
        self.queues: list[queue.Queue[object]] = [queue.Queue(_QUEUE_BATCHES) for _ in tasks]
        self._next = 0
        self._lock = threading.Lock()
        self.workers = min(workers, len(tasks))
        self.threads: list[Join] = []

    def _claim(self) -> int | None:
        with self._lock:
            if self._next >= len(self.tasks) or self.stop.is_set():
                return None
            i = self._next
            self._next += 1
            return i

    def _put(self, q: queue.Queue[object], item: object) -> bool:
        """Put with back-pressure; False when the exchange stopped meanwhile."""
        return put_until(q, item, self.stop)

    def _work(self) -> None:
        while (i := self._claim()) is not None:
            q = self.queues[i]
            batches = self.tasks[i]()
            try:
                for batch in batches:
                    if self.cancel.is_set():
                        raise QueryCancelled()
                    if not self._put(q, batch):
                        return
                item: object = _DONE
            except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
                item = _Failure(e)
            finally:
                close = getattr(batches, "close", None)
                if close is not None:
                    close()
            if not self._put(q, item):
                return

    def _check(self) -> None:
        if self.cancel.is_set():
            raise QueryCancelled()

    def _get(self, q: queue.Queue[object]) -> object:
        return get_polling(q, self._check)

    def run(self) -> Iterator[Batch]:
        # the workers run on the process-wide pool's threads, each holding a CPU slot
        self.threads = [POOL.spawn(self._work, f"scan-worker-{i}")
                        for i in range(self.workers)]
        try:
            for q in self.queues:
                while True:
                    item = self._get(q)
                    if item is _DONE:
                        break
                    if isinstance(item, _Failure):
                        raise item.error
                    assert isinstance(item, Batch)
                    yield item
        finally:
            self.stop.set()
            for t in self.threads:
                t.join()


def ordered_pool(tasks: list[Task], workers: int, cancel: threading.Event
                     ) -> Generator[Batch, None, None]:
    """Batches of every task, in task order, produced by up to `workers` threads."""
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield from task()
        return
    yield from _Pool(tasks, workers, cancel).run()
