"""Where a Flight SQL call's statement work runs: on the server's own worker pools, as the MySQL
port's statements do (server/session.py `in_worker`), never on gRPC's threads.

gRPC serves each call on a thread of its own; those threads only wait here. The work itself
(running a statement, pulling the executor's next batch) goes to the `worker_threads` pool, or
to the small session pool for statements that read no table (`reads_no_table`, as on the
MySQL port), so Flight statements share the MySQL port's admission and never add threads that
run queries. While it waits, the call watches its client: a client that cancelled the call or
went away cancels the statement (its executor stops at its next cancellation check and
releases what it holds).

gRPC's synchronous server (pyarrow exposes none of its settings) serves each call in flight on
a thread of its own and creates threads without bound. `CallSlots` bounds them: at most
`arrow_flight_sql_max_calls` calls are served at once (a result stream holds its slot until it
ends), at most `arrow_flight_sql_call_queue_size` more wait for a slot (each waiting on its
gRPC thread), and a call past both is refused at once with UNAVAILABLE and MySQL's 1040 text,
its thread handed back to gRPC. So a flood of Flight clients costs at most max_calls +
queue_size gRPC threads; it queues, then fails clearly, and never exhausts the server.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

from pyarrow import flight

from sql.errors import QueryCancelled

T = TypeVar("T")
# How often a waiting call looks at its client (a cancel is noticed within this).
CLIENT_POLL_SECONDS = 0.1
# Defaults of arrow_flight_sql_max_calls / arrow_flight_sql_call_queue_size (conf/shaledb.toml)
MAX_CALLS = 64
CALL_QUEUE_SIZE = 256


class CallSlots:
    """The Flight calls served at once (`max_calls`) and waiting for a turn (`queue_size`).
    `acquire` when a call starts (before its login), `release` once it completed, its result
    stream included."""

    def __init__(self, max_calls: int = MAX_CALLS, queue_size: int = CALL_QUEUE_SIZE) -> None:
        self.max_calls = max(1, max_calls)
        self.queue_size = max(0, queue_size)
        self._cond = threading.Condition()
        self.running = 0
        self.waiting = 0
        self.refused_total = 0  # calls turned away with the queue full
        self.queued_total = 0  # calls that waited for a slot
        self.closed = False  # the server stops: waiting and new calls are refused

    def acquire(self) -> None:
        """A slot for this call, waiting (FIFO is not promised) while all are taken; with the
        queue full too, FlightUnavailableError (ERROR 1040, retry later)."""
        with self._cond:
            if self.closed:
                raise flight.FlightUnavailableError("ShaleDB is stopping")
            if self.running < self.max_calls and not self.waiting:
                self.running += 1
                return
            if self.waiting >= self.queue_size:
                self.refused_total += 1
                raise flight.FlightUnavailableError(
                    "ERROR 1040 (08004): Too many connections: ShaleDB's Arrow Flight SQL "
                    f"port serves {self.max_calls} calls at once (arrow_flight_sql_max_calls) "
                    f"and {self.queue_size} more are waiting (arrow_flight_sql_call_queue_size"
                    "); retry later")
            self.waiting += 1
            self.queued_total += 1
            try:
                # a call whose client left meanwhile still takes its turn: its statement work
                # notices the client is gone (CallWork) and ends at once
                while self.running >= self.max_calls and not self.closed:
                    self._cond.wait()
                if self.closed:
                    raise flight.FlightUnavailableError("ShaleDB is stopping")
                self.running += 1
            finally:
                self.waiting -= 1

    def release(self) -> None:
        with self._cond:
            self.running -= 1
            self._cond.notify()

    def close(self) -> None:
        """Server stop: the waiting calls end with UNAVAILABLE, new ones too."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()


class CallWork:
    """One Flight call's way of running statement work on the server's pools."""

    def __init__(self, pool: Executor, light_pool: Executor,
                 client_gone: Callable[[], bool] = lambda: False) -> None:
        self.pool = pool
        self.light_pool = light_pool
        self.client_gone = client_gone

    def run(self, cancel: threading.Event | None, fn: Callable[..., T], *args: object,
            light: bool = False) -> T:
        """`fn(*args)` on a worker (the session pool when `light`), waited for. A client gone
        meanwhile sets `cancel` (the work then ends with its own QueryCancelled); work still
        queued when its client is gone or `cancel` is set (KILL QUERY) never runs."""
        future = (self.light_pool if light else self.pool).submit(fn, *args)
        while True:
            try:
                return future.result(timeout=CLIENT_POLL_SECONDS)
            except concurrent.futures.CancelledError:  # the pool shut down (server stop)
                raise QueryCancelled() from None
            except concurrent.futures.TimeoutError:
                gone = self.client_gone()
                if gone and cancel is not None:
                    cancel.set()
                killed = cancel is not None and cancel.is_set()  # KILL QUERY, a stop
                if (gone or killed) and future.cancel():  # still queued: it never runs
                    raise QueryCancelled() from None
                if gone:
                    return future.result()  # the work sees the cancel and ends
