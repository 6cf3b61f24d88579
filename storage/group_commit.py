"""Group commit: small INSERTs into one table from many sessions share one load and one version.

Doris 2.1's `group_commit` session variable (`off_mode` by default, `sync_mode`,
`async_mode`) with the table properties `group_commit_interval_ms` (default 10000) and
`group_commit_data_bytes` (default 128 MB). The first INSERT into a table opens a group and
leads it: it waits until the interval has passed since the group opened or the group holds
`group_commit_data_bytes`, then writes every member's rows through one `LoadTxn`, so all of
them become visible together in one new version per partition. The other members wait for
that publish (sync_mode: the INSERT returns once its rows are visible) and get the shared
label and transaction id.

async_mode returns before the publish in Doris, which keeps the rows in a write-ahead log
until then. ShaleDB has no such log yet, so async_mode waits for the publish too: an
acknowledged row is always durable (the only difference is that Doris' reply would come
earlier).

If the shared load fails (for instance one member's row has no partition), the leader loads
each member's rows in a transaction of its own, so only the statement at fault gets the error.
Upstream: Doris `GroupCommitManager`, `GroupCommitTable` (BE) and `group_commit` docs.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from storage.batch import Batch
from storage.catalog.meta import TableMeta

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
    opened: float
    batches: list[Batch] = field(default_factory=list)
    nbytes: int = 0
    closed: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    results: dict[int, tuple[str, int] | BaseException] = field(default_factory=dict)


def _batch_bytes(batch: Batch) -> int:
    return sum(c.data.nbytes for c in batch.columns)


class GroupCommitter:
    """One per storage engine: the open group of each table."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._full = threading.Condition(self._lock)
        self._groups: dict[int, _Group] = {}
        self.loads = 0  # shared loads written (for tests and metrics)

    def submit(self, table_id: int, batch: Batch, options: GroupCommitOptions, load: LoadFn) -> LoadResult:
        """Add `batch` to the table's open group; returns once the rows are published."""
        with self._lock:
            group = self._groups.get(table_id)
            leader = group is None or group.closed
            if leader:
                group = _Group(opened=time.monotonic())
                self._groups[table_id] = group
            assert group is not None
            member = len(group.batches)
            group.batches.append(batch)
            group.nbytes += _batch_bytes(batch)
            if group.nbytes >= options.max_bytes:
                self._full.notify_all()
        if leader:
            self._lead(table_id, group, options, load)
        else:
            group.done.wait()
        outcome = group.results[member]
        if isinstance(outcome, BaseException):
            raise outcome
        label, txn_id = outcome
        return LoadResult(batch.num_rows, label, txn_id)

    def _lead(self, table_id: int, group: _Group, options: GroupCommitOptions, load: LoadFn) -> None:
        deadline = group.opened + options.interval_s
        with self._lock:
            while group.nbytes < options.max_bytes:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._full.wait(left)
            group.closed = True
            if self._groups.get(table_id) is group:
                del self._groups[table_id]
            batches = list(group.batches)
        try:
            shared = load(batches)
            self.loads += 1
            for i in range(len(batches)):
                group.results[i] = shared
        except Exception:  # noqa: BLE001 - retry one by one so only the faulty member fails
            for i, b in enumerate(batches):
                try:
                    group.results[i] = load([b])
                    self.loads += 1
                except Exception as e:  # noqa: BLE001 - reported to that member's session
                    group.results[i] = e
        finally:
            for i in range(len(batches)):
                group.results.setdefault(i, RuntimeError("group commit did not run"))
            group.done.set()


_COMMITTERS: weakref.WeakKeyDictionary[object, GroupCommitter] = weakref.WeakKeyDictionary()
_COMMITTERS_LOCK = threading.Lock()


def committer_for(engine: object) -> GroupCommitter:
    """The group committer of a storage engine (made on first use)."""
    with _COMMITTERS_LOCK:
        committer = _COMMITTERS.get(engine)
        if committer is None:
            committer = _COMMITTERS[engine] = GroupCommitter()
        return committer
