"""Query deadlines (`query_timeout`) served by one timer thread.

Doris cancels a query once `query_timeout` seconds have passed (default 900). Each statement
used to start a `threading.Timer`: a new OS thread per query, and `Thread.start` waits until
that thread runs, which cost 0.3-1 ms of a 2 ms point lookup on a busy machine
(docs/performance.md, "Point lookups"). `Deadlines` keeps the pending deadlines in a heap that
one daemon thread serves, started with the first deadline; arming one is a heap push, disarming
it a flag (the heap is rebuilt when disarmed entries are most of it, so a long timeout with
many short queries does not grow it without bound).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

# Rebuild the heap once disarmed entries are more than half of it and at least this many.
_COMPACT_MIN = 256


class Deadline:
    """One armed deadline: `action` runs on the timer thread at `when` unless disarmed."""

    __slots__ = ("_owner", "action", "disarmed", "when")

    def __init__(self, when: float, action: Callable[[], None], owner: Deadlines) -> None:
        self.when = when
        self.action = action
        self.disarmed = False
        self._owner = owner

    def disarm(self) -> None:
        """Never run the action (no effect once it ran)."""
        if not self.disarmed:
            self._owner._disarm(self)


class Deadlines:
    """Pending deadlines of one server (or one in-process statement runner)."""

    def __init__(self, name: str = "shaledb-deadlines") -> None:
        self._name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._seq = itertools.count()
        self._disarmed = 0
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, action: Callable[[], None]) -> Deadline:
        """Run `action` (quick, non-blocking) in `seconds` unless the returned deadline is
        disarmed first."""
        deadline = Deadline(time.monotonic() + seconds, action, self)
        with self._cond:
            heapq.heappush(self._heap, (deadline.when, next(self._seq), deadline))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
            elif self._heap[0][2] is deadline:
                self._cond.notify()  # earlier than what the thread sleeps towards
        return deadline

    def pending(self) -> int:
        """Armed deadlines not yet run nor disarmed."""
        with self._cond:
            return len(self._heap) - self._disarmed

    def _disarm(self, deadline: Deadline) -> None:
        with self._cond:
            if deadline.disarmed:
                return  # disarmed before, or taken off the heap to run
            deadline.disarmed = True
            self._disarmed += 1
            if self._disarmed >= _COMPACT_MIN and self._disarmed * 2 > len(self._heap):
                self._heap = [e for e in self._heap if not e[2].disarmed]
                heapq.heapify(self._heap)
                self._disarmed = 0

    def _next_due(self) -> Deadline:
        """Wait for the earliest armed deadline to fall due and take it off the heap."""
        with self._cond:
            while True:
                while self._heap and self._heap[0][2].disarmed:
                    heapq.heappop(self._heap)
                    self._disarmed -= 1
                if not self._heap:
                    self._cond.wait()
                    continue
                delay = self._heap[0][0] - time.monotonic()
                if delay <= 0:
                    deadline = heapq.heappop(self._heap)[2]
                    deadline.disarmed = True  # it runs now: a later disarm is a no-op
                    return deadline
                self._cond.wait(delay)

    def _serve(self) -> None:
        while True:
            deadline = self._next_due()
            try:
                deadline.action()
            except Exception:  # one failing action must not end every later timeout
                logger.exception("query deadline action failed")
