"""Doris' `query_timeout` session variable: a query's batches are cancelled after that many
seconds, counted from the first batch pulled to the last, on the server's one timer thread
(server/deadlines.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from server.deadlines import Deadlines
from sql.errors import DorisError, QueryCancelled
from storage.batch import Batch


def with_timeout(batches: Iterator[Batch], cancel: threading.Event, seconds: int,
                 deadlines: Deadlines) -> Iterator[Batch]:
    """`batches`, cancelled through `cancel` once `seconds` pass; the deadline is disarmed with
    the statement. seconds <= 0: no limit."""
    if seconds <= 0:
        yield from batches
        return
    fired = threading.Event()

    def expire() -> None:
        fired.set()
        cancel.set()

    deadline = deadlines.arm(seconds, expire)
    try:
        yield from batches
    except QueryCancelled:
        if fired.is_set():
            raise DorisError(
                f"Query exceeded time limit of {seconds} seconds (query_timeout); raise it with "
                "SET query_timeout = <seconds>"
            ) from None
        raise
    finally:
        deadline.disarm()
