"""Where a Flight SQL call's statement work runs: on the server's own worker pools, as the MySQL
port's statements do (server/session.py `in_worker`), never on gRPC's threads.

gRPC serves each call on a thread of its own; those threads only wait here. The work itself
(running a statement, pulling the executor's next batch) goes to the `worker_threads` pool, or
to the small session pool for statements that read no table (`reads_no_table`, as on the
MySQL port), so Flight statements share the MySQL port's admission and never add threads that
run queries. While it waits, the call watches its client: a client that cancelled the call or
went away cancels the statement (its executor stops at its next cancellation check and
releases what it holds).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

from sql.errors import QueryCancelled

T = TypeVar("T")
# How often a waiting call looks at its client (a cancel is noticed within this).
CLIENT_POLL_SECONDS = 0.1


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
