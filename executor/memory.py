"""Per-query memory tracker for the state held by blocking operators (exec_mem_limit).

Pipeline breakers (hash aggregate state, sort buffer, join build side) report the bytes they
hold with `MemTracker.set(consumer, node, nbytes)` after each batch they absorb; the tracker
keeps the current total and the peak and raises Doris' "Memory limit exceeded" error (1105)
once the total passes the session's `exec_mem_limit`. Streaming operators hold one batch at a
time and are not tracked. Upstream: Doris `MemTrackerLimiter` (query tracker) and
`QueryContext::exec_mem_limit`.
"""

from __future__ import annotations

import threading

from sql.errors import DorisError
from storage.batch import Batch, Column


class MemTracker:
    """Bytes held per consumer for one query, checked against a limit (<= 0: unlimited)."""

    # A query's tracker gets the session's exec_mem_limit (executor/query.py); one made
    # without a limit (an operator run on its own) is unlimited.
    def __init__(self, limit: int = 0, query_id: str = "0-0") -> None:
        self.limit = limit
        self.query_id = query_id
        self.current = 0
        self.peak = 0
        self._held: dict[int, int] = {}
        self._lock = threading.Lock()

    def set(self, consumer: object, node: str, nbytes: int) -> None:
        """Record that `consumer` (an operator) now holds `nbytes`; raise past the limit."""
        with self._lock:
            key = id(consumer)
            self.current += nbytes - self._held.get(key, 0)
            self._held[key] = nbytes
            self.peak = max(self.peak, self.current)
            over = 0 < self.limit < self.current
            current, peak = self.current, self.peak
        if over:
            raise DorisError(
                f"Memory limit exceeded:<consuming tracker:<Query#Id={self.query_id}>, "
                f"peak used {peak}, current used {current}, exec node:<{node}>>, "
                f"query limit {self.limit} bytes (exec_mem_limit). "
                f"Set exec_mem_limit to a bigger value (e.g. SET exec_mem_limit = "
                f"{_suggest(current)}) and retry"
            )

    def release(self, consumer: object) -> None:
        """Forget what `consumer` held (it finished or was closed)."""
        with self._lock:
            self.current -= self._held.pop(id(consumer), 0)


def _suggest(current: int) -> int:
    """A round limit comfortably above `current` (next power of two, at least doubled)."""
    n = 1
    while n < 2 * current:
        n *= 2
    return n


def column_bytes(c: Column) -> int:
    """Bytes of a column's arrays (object arrays counted at 8 bytes a value; a DictColumn's
    codes and dictionary, without decoding it)."""
    return c.nbytes


def batch_bytes(batch: Batch) -> int:
    """Bytes of a batch's arrays (what a blocking operator holding it should report)."""
    return sum(column_bytes(c) for c in batch.columns)


class BufferedInput:
    """Input buffering shared by the blocking operators (sort, window, hash-join build).

    Keeps every sunk batch and reports the bytes held to the query's memory tracker under
    `memory_node`, so `exec_mem_limit` sees them; `close` releases them. Mixed into an
    Operator, which provides `ctx`/`_ctx`.
    """

    memory_node = "Operator"

    def _init_buffer(self) -> None:
        self._batches: list[Batch] = []
        self._bytes = 0

    def sink(self, batch: Batch) -> None:
        self._batches.append(batch)
        self._bytes += batch_bytes(batch)
        self.ctx.memory.set(self, self.memory_node, self._bytes)  # type: ignore[attr-defined]

    def combine(self, other: object) -> None:
        """Take over a twin's buffered rows (a SinkOperator's parallel partial sink)."""
        assert isinstance(other, BufferedInput)
        self._batches.extend(other._batches)
        self._bytes += other._bytes
        other._batches = []
        self.ctx.memory.set(self, self.memory_node, self._bytes)  # type: ignore[attr-defined]

    def take_buffered(self) -> list[Batch]:
        """The sunk batches, handed over once (the buffer is emptied)."""
        batches, self._batches = self._batches, []
        return batches

    def close(self) -> None:
        if self._ctx is not None:  # type: ignore[attr-defined]
            self._ctx.memory.release(self)  # type: ignore[attr-defined]
        super().close()  # type: ignore[misc]
