"""Group commit: small INSERTs into one table from many sessions share one load and one version.

Doris 2.1's `group_commit` session variable (`off_mode` by default, `sync_mode`,
`async_mode`) with the table properties `group_commit_interval_ms` (default 10000) and
`group_commit_data_bytes` (default 128 MB). The first INSERT into a table opens a group; a
timer closes it when the interval has passed since the group opened or the group holds
`group_commit_data_bytes`, then writes every member's rows through one `LoadTxn`, so all of
them become visible together in one new version per partition. Every member's session waits
(on the event loop, not in a worker thread) for that publish (sync_mode: the INSERT returns
once its rows are visible) and gets the shared label and transaction id.

async_mode returns before the publish in Doris, which keeps the rows in a write-ahead log
until then. ShaleDB has no such log yet, so async_mode waits for the publish too: an
acknowledged row is always durable (the only difference is that Doris' reply would come
earlier).

If the shared load fails (for instance one member's row has no partition), the flush loads
each member's rows in a transaction of its own, so only the statement at fault gets the error.
Upstream: Doris `GroupCommitManager`, `GroupCommitTable` (BE) and `group_commit` docs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field

from storage.batch import Batch
from storage.catalog.meta import TableMeta
from storage.errors import DorisError

DEFAULT_INTERVAL_MS = 10000
DEFAULT_DATA_BYTES = 134217728
MODES = ("off_mode", "sync_mode", "async_mode")


@dataclass(frozen=True, slots=True)
class GroupCommitOptions:
    interval_s: float
    max_bytes: int

    @staticmethod
    def for_table(table: TableMeta) -> GroupCommitOptions:
        interval = int(table.property("group_commit_interval_ms") or DEFAULT_INTERVAL_MS)
        size = int(table.property("group_commit_data_bytes") or DEFAULT_DATA_BYTES)
        return GroupCommitOptions(interval / 1000.0, size)


@dataclass(frozen=True, slots=True)
class LoadResult:
    rows: int
    label: str
    txn_id: int


# Loads a list of batches as one transaction and returns (label, txn id).
LoadFn = Callable[[Sequence[Batch]], tuple[str, int]]


@dataclass
class _Group:
    table_id: int
    load: LoadFn
    batches: list[Batch] = field(default_factory=list)
    futures: list[Future[LoadResult]] = field(default_factory=list)
    nbytes: int = 0
    closed: bool = False
    timer: threading.Timer | None = None


def _batch_bytes(batch: Batch) -> int:
    return sum(c.data.nbytes for c in batch.columns)


class GroupCommitter:
    """One per storage engine (`StorageEngine.group_commit`): the open group of each table.

    Nothing waits in a statement worker thread: `submit` returns a Future at once and the
    group is written by a timer thread when its interval ends (or by the submitting thread's
    helper when it is full), so sessions await their rows' publish without holding a worker.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[int, _Group] = {}
        self._closed = False
        self._flushing = 0  # groups being written (by a timer, a size trigger or close)
        self._idle = threading.Condition(self._lock)  # notified when a write ends
        self.loads = 0  # shared loads written (for tests and metrics)

    def close(self) -> None:
        """Engine shutdown: write every open group now (its members are waiting for it, and
        the catalog is still open), wait for the flushes already running, and refuse new
        members. Idempotent."""
        with self._lock:
            self._closed = True
            groups = list(self._groups.values())
        for group in groups:
            self._flush(group)
        with self._idle:
            self._idle.wait_for(lambda: self._flushing == 0)

    def submit(self, table_id: int, batch: Batch, options: GroupCommitOptions,
               load: LoadFn) -> Future[LoadResult]:
        """Add `batch` to the table's open group (opening one if needed); the Future resolves
        once the group is published (or to this member's error)."""
        future: Future[LoadResult] = Future()
        flush_now: _Group | None = None
        with self._lock:
            if self._closed:
                raise DorisError("group commit is unavailable: the storage engine is shut down")
            group = self._groups.get(table_id)
            if group is None:
                group = _Group(table_id, load)
                self._groups[table_id] = group
                group.timer = threading.Timer(options.interval_s, self._flush, (group,))
                group.timer.daemon = True
                group.timer.start()
            group.batches.append(batch)
            group.futures.append(future)
            group.nbytes += _batch_bytes(batch)
            if group.nbytes >= options.max_bytes:
                flush_now = group
        if flush_now is not None:
            threading.Thread(target=self._flush, args=(flush_now,), daemon=True,
                             name="group-commit-flush").start()
        return future

    def _flush(self, group: _Group) -> None:
        with self._lock:
            if group.closed:
                return  # the timer and a size trigger both fired
            group.closed = True
            if self._groups.get(group.table_id) is group:
                del self._groups[group.table_id]
            if group.timer is not None:
                group.timer.cancel()
            self._flushing += 1
        try:
            self._write(group)
        finally:
            with self._idle:
                self._flushing -= 1
                self._idle.notify_all()

    def _write(self, group: _Group) -> None:
        batches, futures = group.batches, group.futures
        try:
            label, txn_id = group.load(batches)
            self.loads += 1
            for b, f in zip(batches, futures, strict=True):
                _settle(f, LoadResult(b.num_rows, label, txn_id))
        except Exception:  # noqa: BLE001 - retry one by one so only the faulty member fails
            for b, f in zip(batches, futures, strict=True):
                try:
                    label, txn_id = group.load([b])
                    self.loads += 1
                    _settle(f, LoadResult(b.num_rows, label, txn_id))
                except Exception as e:  # noqa: BLE001 - reported to that member's session
                    _settle(f, e)


def _settle(future: Future[LoadResult], outcome: LoadResult | BaseException) -> None:
    """Resolve a member's future unless its session gave up on it (KILL cancels the future;
    its rows are loaded all the same: the group was already sealed)."""
    try:
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
    except InvalidStateError:
        pass  # cancelled meanwhile
