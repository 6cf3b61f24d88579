"""The process-wide CPU pool: every query's fragment instances and scan workers share it.

Two parts, kept apart on purpose so that a bounded pool can never deadlock:
- **CPU slots** (as many as the cores): a thread runs operator code only while it holds a
  slot, so across all queries at most `slots` threads compete for the GIL and the cores,
  however many queries and instances are running. A thread gives its slot back whenever it
  is about to wait for another instance (an empty or full exchange queue, a shared join build,
  a runtime filter: `blocked()`), and between result batches on the caller's thread. A slot
  is therefore only ever held by a thread that can make progress, so whatever waits for a
  slot gets one as soon as some running thread finishes a batch or blocks: instances of one
  query that wait on each other through exchanges cannot starve each other of slots.
- **Reusable threads**: `spawn()` runs a task on an idle pooled thread (a new one only when
  none is idle; idle threads retire after `_IDLE_SECONDS`). Threads are not the bounded
  resource (slots are), so an instance never waits for a thread to become free.
The slot count is the CPU count (`os.sched_getaffinity`); the environment variables
`SHALEDB_CORES` and `SHALEDB_CPU_POOL_SLOTS` override the cores instances are sized by and the
slot count (tests run more instances than slots with them).
Upstream: Doris' pipeline task scheduler (a fixed pool of cores running tasks, a blocked task
yields its core), DuckDB's TaskScheduler.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_IDLE_SECONDS = 30.0


def _env_int(name: str) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else 0


def _cores() -> int:
    if forced := _env_int("SHALEDB_CORES"):  # tests: size instances as on a bigger machine
        return forced
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


# The cores instances are sized by (os.sched_getaffinity reads /proc: once per process).
CORES = _cores()


class CpuPool:
    """CPU slots shared by every running thread of every query, and the threads to run on."""

    def __init__(self, slots: int) -> None:
        self._slots = max(1, slots)
        self._in_use = 0
        self._lock = threading.Lock()
        # threads waiting for a slot, oldest first: a freed slot is handed to the oldest
        # directly (a thread that just gave one back cannot barge ahead and starve others);
        # each waits on its own locked lock, released when it is granted the slot
        self._waiters: deque[threading.Lock] = deque()
        self._local = threading.local()
        self._idle: deque[_Worker] = deque()
        self._idle_lock = threading.Lock()
        self.peak = 0  # most slots held at once

    @property
    def slots(self) -> int:
        return self._slots

    # ---- slots -----------------------------------------------------------------------------
    def holds(self) -> bool:
        return getattr(self._local, "held", False)

    def _acquire(self) -> None:
        with self._lock:
            if self._in_use < self._slots and not self._waiters:
                self._in_use += 1
                self.peak = max(self.peak, self._in_use)
                self._local.held = True
                return
            grant = threading.Lock()
            grant.acquire()
            self._waiters.append(grant)
        grant.acquire()  # released by `_release` handing this thread its slot
        self._local.held = True

    def _release(self) -> None:
        self._local.held = False
        with self._lock:
            if self._waiters and self._in_use <= self._slots:
                self._waiters.popleft().release()  # the slot passes on, still in use
            else:
                self._in_use -= 1

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold a slot for the block (re-entrant: a thread already holding one keeps it)."""
        if self.holds():
            yield
            return
        self._acquire()
        try:
            yield
        finally:
            self._release()

    @contextmanager
    def blocked(self) -> Iterator[None]:
        """Give the slot back while this thread waits on another instance; take one again
        before it runs operator code."""
        if not self.holds():
            yield
            return
        self._release()
        try:
            yield
        finally:
            self._acquire()

    # ---- threads ---------------------------------------------------------------------------
    def spawn(self, task: Callable[[], None], name: str) -> Join:
        """Run `task` holding a slot on a pooled thread; the returned handle joins it."""
        done = threading.Event()

        def run() -> None:
            with self.slot():
                task()

        with self._idle_lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker(self)
        worker.give(run, done, name)
        return Join(self, done)

    def _park(self, worker: _Worker) -> None:
        with self._idle_lock:
            self._idle.append(worker)

    def _retire(self, worker: _Worker) -> bool:
        """Take an idle worker off the idle list; False when spawn() just claimed it."""
        with self._idle_lock:
            try:
                self._idle.remove(worker)
            except ValueError:
                return False
            return True


class Join:
    """A spawned task's handle."""

    def __init__(self, pool: CpuPool, done: threading.Event) -> None:
        self._pool = pool
        self._done = done

    def join(self) -> None:
        """Wait for the task to end, without holding a slot (it may need one to finish)."""
        if self._done.is_set():
            return
        with self._pool.blocked():
            self._done.wait()


class _Worker:
    """One pooled thread: runs the tasks given to it, one at a time."""

    def __init__(self, pool: CpuPool) -> None:
        self.pool = pool
        self._task: Callable[[], None] | None = None
        self._done: threading.Event | None = None
        self._ready = threading.Condition(threading.Lock())
        self._thread = threading.Thread(target=self._loop, name="cpu-pool", daemon=True)
        self._started = False

    def give(self, task: Callable[[], None], done: threading.Event, name: str) -> None:
        with self._ready:
            self._task, self._done = task, done
            self._ready.notify()
        self._thread.name = name
        if not self._started:
            self._started = True
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._ready:
                while self._task is None:
                    timed_out = not self._ready.wait(_IDLE_SECONDS)
                    if timed_out and self._task is None and self.pool._retire(self):
                        return
                task, self._task = self._task, None
                done, self._done = self._done, None
            try:
                task()
            except BaseException:  # noqa: BLE001, S110 - tasks report their own errors
                pass
            self._thread.name = "cpu-pool"
            # idle again before the task counts as done: a spawn right after join() reuses it
            self.pool._park(self)
            assert done is not None
            done.set()


# SHALEDB_CPU_POOL_SLOTS: fewer slots than instances (tests of deadlock freedom)
POOL = CpuPool(_env_int("SHALEDB_CPU_POOL_SLOTS") or CORES)
