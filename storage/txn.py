"""Load transactions: route rows to tablets, write rowsets, publish them atomically.

`LoadTxn` is what INSERT (and later Stream Load and the Spark job) drives:
`add_batch(batch)` routes each full-schema row to its partition (`partition.py`) and bucket
(`distribution.py`) and hands it to the rowset writer of every materialized index of the table;
`commit()` writes and fsyncs the rest of every rowset, then publishes them in ONE catalog
transaction that also bumps each touched partition's visible version and records the label.
Until that transaction commits nothing is visible. A two-phase load calls `precommit()`
instead: the same files, fsynced, recorded in the catalog as a PRECOMMITTED txn with its
pending rowsets (kept by the start-up GC), published later by the same `publish`
(storage/two_phase.py).

Memory is bounded twice: each writer flushes a segment when its memtable reaches
`write_buffer_size` (storage/rowset.py), and when the memtables of all running loads together
pass `load_process_max_memory_limit_bytes` the load adding rows flushes its own largest memtable
until it is under the limit or holds nothing. (Doris' MemTableMemoryLimiter flushes the largest
memtables of any load; here a load's writers belong to the thread driving it, so the load that
crosses the limit pays.) So a load bigger than memory succeeds, writing segments before its
commit; those files stay unreferenced until the publish, and a load that fails or is aborted
deletes them at once (`_LoadFiles`), or the engine's GC does at the next start after a crash.
A DUPLICATE tablet's memtable is also flushed early, on the flush pool, once it holds
`EARLY_FLUSH_ROWS` rows, so a large load builds most of its rowsets while its body still
streams and the commit builds only the last rows (each early flush is one more run).
`RunningTxns` tracks the loads begun and not finished (and the PRECOMMITTED ones), which ADD
ROLLUP jobs wait for.
Upstream: Doris `GlobalTransactionMgr`, `DeltaWriter`, `MemTableMemoryLimiter`, publish version.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from storage.auto_partition import AutoPartitions, missing_partitions
from storage.batch import Batch
from storage.catalog.catalog import Catalog
from storage.catalog.meta import (
    DatabaseMeta,
    DistributionType,
    MaterializedIndexMeta,
    PartitionMeta,
    PendingRowset,
    RowsetMeta,
    TableMeta,
    TabletMeta,
    TemporaryPartitionNames,
    TxnMeta,
    TxnStatus,
)
from storage.catalog.repository import Mutation
from storage.derived_columns import project_to_index
from storage.distribution import bucket_of_rows
from storage.engine import StorageEngine
from storage.errors import DorisError
from storage.faults import fault_point
from storage.partition import PartitionRouter
from storage.rowset import RowsetWriter
from storage.tablet_move import copy_files
from storage.view_routing import routes_by_own_keys, view_buckets

# Rowset writers of a load run side by side: each one's fsyncs (file, then directory) wait on
# the disk without the GIL, so a load touching many tablets pays about one fsync latency
# instead of one per tablet; ext4 also folds concurrent fsyncs into one journal commit.
_BUILD_THREADS = 8
_BUILD_POOL = ThreadPoolExecutor(_BUILD_THREADS, thread_name_prefix="rowset-build")
# Memtables a load flushes early (below) or over its memory limit are written on these threads
# while the load thread goes on parsing and routing (sorting, encoding and the two fsyncs of a
# segment leave the load thread free). One thread per core of the 2-core target.
_FLUSH_THREADS = 2
_FLUSH_POOL = ThreadPoolExecutor(_FLUSH_THREADS, thread_name_prefix="memtable-flush")
# Flushes a load may have queued or running before its thread waits for the oldest: enough
# for every tablet of a large load to reach EARLY_FLUSH_ROWS at about the same time (rows
# spread evenly over the tablets do) without stalling the load. The bytes those flushes hold
# beyond the load's own count (`buffered_bytes` drops when a flush is queued) are bounded
# too, so a load over its memory limit holds at most about that much more.
_FLUSHES_IN_FLIGHT = 128
_FLUSH_BYTES_IN_FLIGHT = 256 * 1024 * 1024
# A DUPLICATE memtable holding this many rows is flushed on the flush pool while the load goes
# on, so the rowset build overlaps the body instead of all of it waiting for the commit
# (the commit then builds only each tablet's last rows). Each early flush is one more sorted
# run of the tablet's rowset (OVERLAPPING): a DUPLICATE reader needs no merge of them to drop
# or combine rows, only the per-segment costs and key-range pruning per run, until
# compaction merges them. A load with fewer rows per tablet stays one run. SSB lineorder SF 1
# (~107k rows per tablet) makes 3 runs per tablet (docs/performance.md, branch csv14b).
# AGGREGATE / UNIQUE memtables are not flushed early: their runs would be merged on every read
# and pre-aggregation would see fewer rows at once. 0 turns early flushes off.
EARLY_FLUSH_ROWS = 50_000


def _build_one(writer: RowsetWriter) -> RowsetMeta:
    meta = writer.build()
    fault_point("load_after_first_rowset")
    return meta


def _build_all(writers: list[RowsetWriter]) -> list[RowsetMeta]:
    """Every writer's rowset (files written, fsynced and renamed into place), in order."""
    if len(writers) <= 1:
        return [_build_one(w) for w in writers]
    return list(_BUILD_POOL.map(_build_one, writers))


def _partitions_used(part_idx: np.ndarray) -> list[int]:
    """The distinct partition indexes >= 0 of `part_idx`, ascending (a bincount: partition
    indexes are small, and np.unique sorts)."""
    placed = part_idx[part_idx >= 0] if len(part_idx) and part_idx.min() < 0 else part_idx
    if not len(placed):
        return []
    return np.flatnonzero(np.bincount(placed)).tolist()


def _tablet_groups(part_idx: np.ndarray, buckets: np.ndarray
                   ) -> list[tuple[tuple[int, int], np.ndarray | None]]:
    """((partition index, bucket seq), row positions in input order) of each tablet the rows
    go to, ordered by partition then bucket; positions None: every row goes there. A counting
    sort: group ids are small dense ints, so numpy's stable sort of a uint16 array is a radix
    sort (an int64 argsort plus np.unique's own sort were a fifth of a Stream Load's CPU,
    docs/performance.md)."""
    width = int(buckets.max()) + 1 if len(buckets) else 1
    groups = part_idx * width + buckets
    counts = np.bincount(groups)
    present = np.flatnonzero(counts)
    if len(present) == 1:
        g = int(present[0])
        return [(divmod(g, width), None)]
    if len(counts) <= np.iinfo(np.uint16).max:
        order = np.argsort(groups.astype(np.uint16), kind="stable")
    else:
        order = np.argsort(groups, kind="stable")
    ends = np.cumsum(counts[present])
    starts = ends - counts[present]
    return [(divmod(int(g), width), order[lo:hi])
            for g, lo, hi in zip(present.tolist(), starts.tolist(), ends.tolist(), strict=True)]


class RunningTxns:
    """The load transactions of one engine that have begun and not finished (Doris
    `GlobalTransactionMgr`'s running set). An ADD ROLLUP job waits in WAITING_TXN until every
    load of its table with a txn id below its watershed is gone (storage/rollup_job.py).

    Entries are weak: a load abandoned by an error (never committed) is dropped when its
    LoadTxn is freed, so it cannot hold a job forever. A crash ends every load, so a restarted
    process starts with none."""

    def __init__(self, catalog: Catalog | None = None) -> None:
        self._catalog = catalog  # for the PRECOMMITTED two-phase loads, which count as running
        self._txns: weakref.WeakValueDictionary[int, LoadTxn] = weakref.WeakValueDictionary()
        self.changed = threading.Condition()  # notified when a load finishes

    def add(self, txn: LoadTxn) -> None:
        with self.changed:
            self._txns[txn.txn_id] = txn

    def finish(self, txn: LoadTxn) -> None:
        with self.changed:
            self._txns.pop(txn.txn_id, None)
            self.changed.notify_all()

    def label_holder(self, db_id: int, label: str) -> int | None:
        """The first-begun running load of the database with `label` (smallest txn id), if
        any. Stream Load lets only that one run: a retry of a running load is `Label Already
        Exists` with ExistingJobStatus RUNNING at once, not after loading its body too."""
        with self.changed:
            ids = [t.txn_id for t in list(self._txns.values())
                   if t.db.db_id == db_id and t.label == label]
            return min(ids) if ids else None

    def buffered_bytes(self) -> int:
        """Memtable bytes all running loads hold."""
        with self.changed:
            return sum(t.buffered_bytes for t in list(self._txns.values()))

    def before(self, table_id: int, watershed: int) -> list[int]:
        """Ids of running loads into `table_id` that began before txn id `watershed`. A
        two-phase load waiting PRECOMMITTED counts (also after a restart): it wrote no shadow
        index, so an ADD ROLLUP job must wait for its commit or abort, as Doris' does."""
        with self.changed:
            ids = {i for i, t in list(self._txns.items())
                   if i < watershed and t.table.table_id == table_id}
        if self._catalog is not None:
            ids.update(t.txn_id for t in self._catalog.precommitted_txns()
                       if t.txn_id < watershed and table_id in t.table_ids)
        return sorted(ids)


class _LoadFiles:
    """A load's rowset writers and whether their files may still be deleted: until the load
    tries to publish, no catalog object references them. Kept apart from LoadTxn so a
    finalizer can discard the files of a load dropped without commit or abort."""

    def __init__(self) -> None:
        self.writers: dict[int, RowsetWriter] = {}
        self._lock = threading.Lock()
        self._publishing = False  # from the catalog commit on, only the GC may delete them
        self._discarded = False

    def begin_publish(self) -> None:
        with self._lock:
            if self._discarded:
                raise DorisError("The load was aborted")
            self._publishing = True

    def discard(self) -> None:
        with self._lock:
            if self._publishing:
                return
            self._discarded = True
        for w in list(self.writers.values()):
            w.discard()


class LabelAlreadyUsed(DorisError):
    """Doris LabelAlreadyUsedException (Stream Load reports it as "Label Already Exists")."""

    def __init__(self, label: str, txn_id: int) -> None:
        super().__init__(f"Label [{label}] has already been used, relate to txn [{txn_id}]")


@dataclass(frozen=True)
class SplitBatch:
    """A batch's rows cut by tablet (`LoadTxn.split`): (partition, index, bucket seq, rows) of
    each tablet index the rows go to, and the batch's row count."""

    pieces: list[tuple[PartitionMeta, MaterializedIndexMeta, int, Batch]]
    num_rows: int


class LoadTxn:
    def __init__(
        self, engine: StorageEngine, db: DatabaseMeta, table: TableMeta, label: str | None = None,
        label_prefix: str = "insert", partitions: Sequence[str] | None = None,
        source_type: str = "FRONTEND",
    ) -> None:
        self.engine = engine
        self.catalog = engine.catalog
        self.db = db
        self.table = table
        self.label = label or f"{label_prefix}_{uuid.uuid4().hex[:16]}_{uuid.uuid4().hex[:16]}"
        self.source_type = source_type  # Doris LoadJobSourceType, for SHOW TRANSACTION
        self._named_partitions = partitions
        self.create_time = time.time()
        self._check_label()
        # The id, the indexes this load writes and its registration are taken under the catalog
        # lock, where ADD ROLLUP takes its watershed id and adds the shadow index: a load with a
        # smaller id never writes the shadow index, one with a larger id always does.
        with self.catalog.lock:
            self.txn_id = self.catalog.next_id()
            self.partitions, self.indexes, tablets = self._layout()
            self._tablets: dict[tuple[int, int, int], TabletMeta] = {
                (t.partition_id, t.index_id, t.bucket_seq): t for t in tablets
            }
            engine.txns.add(self)
        self._router = PartitionRouter(table, self.partitions)
        # AUTO PARTITION: partitions this load creates, published with it (auto_partition.py)
        self._created: dict[int, tuple[PartitionMeta, tuple[TabletMeta, ...]]] = {}
        self._reserved_names: list[str] = []
        # INSERT ... PARTITION (p1, p2): rows routed elsewhere are rejected like unpartitioned rows.
        self._allowed: set[int] | None = None
        if partitions:
            by_name = {p.name.lower(): i for i, p in enumerate(self.partitions)}
            missing = [n for n in partitions if n.lower() not in by_name]
            if missing:
                raise DorisError(f"Unknown partition '{missing[0]}' in table '{table.name}'")
            self._allowed = {by_name[n.lower()] for n in partitions}
        self._files = _LoadFiles()
        self._writers = self._files.writers
        # A load an error dropped without abort() leaves no files while the server runs. Not at
        # interpreter exit: a daemon thread may be publishing this very load then.
        weakref.finalize(self, self._files.discard).atexit = False
        self._write_buffer_size = engine.compaction_config.write_buffer_size
        self._memory_limit = engine.compaction_config.load_process_max_memory_limit_bytes
        self.buffered_bytes = 0  # memtable bytes of this load's writers
        self._touched: set[int] = set()
        self.num_rows = 0
        self._random_bucket: dict[int, int] = {}
        self._route_lock = threading.Lock()
        # flushes queued or running, oldest first, with the bytes each took off buffered_bytes
        self._flushing: list[tuple[RowsetWriter, Future[None], int]] = []

    def _layout(self) -> tuple[list[PartitionMeta], list[MaterializedIndexMeta], list[TabletMeta]]:
        """The partitions, materialized indexes and tablets this load writes (read under the
        catalog lock). A load into a table that is not published yet (CTAS, storage/staged.py)
        supplies its own."""
        tid = self.table.table_id
        # a load into `TEMPORARY PARTITION (..)` routes among the temporary partitions only
        temporary = isinstance(self._named_partitions, TemporaryPartitionNames)
        return (self.catalog.partitions(tid, temporary=temporary),
                self.catalog.materialized_indexes(tid),
                self.catalog.tablets(tid))

    def _writer(self, tablet: TabletMeta, index: MaterializedIndexMeta) -> RowsetWriter:
        w = self._writers.get(tablet.tablet_id)
        if w is None:
            w = RowsetWriter(
                self.engine.backend_root(tablet.backend_id),
                tablet.tablet_id,
                f"{self.txn_id}_{tablet.tablet_id}",
                index,
                self.table,
                write_buffer_size=self._write_buffer_size,
            )
            self._writers[tablet.tablet_id] = w
        return w

    def describe_unplaced(self, batch: Batch, rows: Sequence[int]) -> list[str]:
        """The nearest partitions of rows `route` gave no partition (for the error text)."""
        return self._router.describe_misses(batch, rows)

    def route(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        """Partition index and bucket seq of each row (partition -1 = no partition). Safe on
        several threads at once: an AUTO PARTITION table's routing (which may add partitions
        to this load) takes `_route_lock`; partitions are only appended, so an index a thread
        got stays valid."""
        if self.table.partition_info.auto and self._allowed is None:
            with self._route_lock:
                part_idx = self._router.route(batch)
                if (part_idx < 0).any():
                    part_idx = self._place_auto(batch, part_idx)
        else:
            part_idx = self._router.route(batch)
        if self._allowed is not None:
            part_idx[~np.isin(part_idx, list(self._allowed))] = -1
        dist = self.table.distribution
        used = _partitions_used(part_idx)
        if dist.type is DistributionType.HASH:
            if len(used) == 1 and int(part_idx.min()) >= 0:
                # every row in one partition (an unpartitioned table, or a load of one
                # partition's rows): hash the columns as they are, no per-partition copies
                cols = [batch.column(c) for c in dist.columns]
                return part_idx, bucket_of_rows(cols, self.partitions[used[0]].buckets)
            buckets = np.zeros(batch.num_rows, dtype=np.int64)
            for p_i in used:
                mask = part_idx == p_i
                cols = [batch.column(c).filter(mask) for c in dist.columns]
                buckets[mask] = bucket_of_rows(cols, self.partitions[p_i].buckets)
        else:
            # RANDOM distribution: Doris writes one load to one tablet per partition.
            buckets = np.zeros(batch.num_rows, dtype=np.int64)
            for p_i in used:
                seq = self._random_bucket.setdefault(
                    p_i, random.randrange(self.partitions[p_i].buckets)
                )
                buckets[part_idx == p_i] = seq
        return part_idx, buckets

    def _place_auto(self, batch: Batch, part_idx: np.ndarray) -> np.ndarray:
        """Route the rows no partition took into the auto partitions they need, reserved
        for this load (visible only with its publish)."""
        needs = missing_partitions(self.table, batch, np.flatnonzero(part_idx < 0))
        if not needs:
            return part_idx
        auto = AutoPartitions.of(self.engine)
        with self.catalog.lock:
            for need in needs:
                self._check_overlap(need.name, need.lower, need.upper)
                part, tablets, created = auto.reserve(self.table, need, self.indexes)
                if created:
                    self._reserved_names.append(need.name)
                    self._created[part.partition_id] = (part, tablets)
                if any(p.partition_id == part.partition_id for p in self.partitions):
                    continue
                self.partitions.append(part)
                for t in tablets:
                    self._tablets[(t.partition_id, t.index_id, t.bucket_seq)] = t
        self._router = PartitionRouter(self.table, self.partitions)
        return self._router.route(batch)

    def _check_overlap(self, name: str, lower: tuple[str, ...] | None,
                       upper: tuple[str, ...] | None) -> None:
        """An AUTO RANGE partition may not overlap a partition added by hand (Doris refuses
        to create it and the load fails)."""
        if lower is None or upper is None:
            return
        p = self._router.overlapping(lower, upper)
        if p is not None and p.name.lower() != name.lower():
            raise DorisError(
                f"Range [{lower[0]}, {upper[0]}) of the auto partition {name} is "
                f"intersected with partition {p.name}")

    def _release_auto(self) -> None:
        if self._reserved_names:
            with self.catalog.lock:
                AutoPartitions.of(self.engine).release(self.table.table_id,
                                                       self._reserved_names)
            self._reserved_names = []

    def add_batch(self, batch: Batch,
                  routing: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Buffer a batch holding every column of the table (already type-checked). A batch
        the load rejects ends the load (the caller does not commit after an error).
        `routing` is the batch's `route()` when the caller already computed it (a Stream Load
        routes first to filter the rows no partition takes)."""
        try:
            self.add_split(self.split(batch, routing))
        except BaseException:
            self.abort()
            raise

    def split(self, batch: Batch,
              routing: tuple[np.ndarray, np.ndarray] | None = None) -> SplitBatch:
        """`batch`'s rows cut by tablet (every materialized index's rows), for `add_split`.
        Reads only what a load fixes at its start (and partitions `route` appends), so a Stream
        Load splits batches on several threads while one thread inserts them in order
        (executor/load/prefetch.py). Raises DorisError for a row no partition takes."""
        pieces: list[tuple[PartitionMeta, MaterializedIndexMeta, int, Batch]] = []
        if batch.num_rows == 0:
            return SplitBatch(pieces, 0)
        part_idx, buckets = routing if routing is not None else self.route(batch)
        if (part_idx < 0).any():
            bad = int(np.flatnonzero(part_idx < 0)[0])
            values = ", ".join(
                f"{c}={batch.column(c).value_at(bad)!r}" for c in self.table.partition_info.columns
            )
            raise DorisError(
                "Insert has filtered data in strict mode. Reason: no partition for this tuple "
                f"({values}) in table [{self.table.name}]; "
                f"{self.describe_unplaced(batch, [bad])[0]}. Use `SHOW PARTITIONS FROM "
                f"{self.table.name}` to see the partitions of this table."
            )
        # each index's rows (a materialized view's derived columns) computed once per batch
        projected = [project_to_index(self.engine, self.table, index, batch)
                     for index in self.indexes]
        # a finished view places its rows by its own keys (storage/view_routing.py)
        own = [routes_by_own_keys(index) for index in self.indexes]
        for (p_i, seq), take in _tablet_groups(part_idx, buckets):
            part = self.partitions[p_i]
            for index, rows, by_keys in zip(self.indexes, projected, own, strict=True):
                if not by_keys:
                    pieces.append((part, index, seq, rows if take is None else rows.take(take)))
        if any(own):
            part_buckets = np.array([p.buckets for p in self.partitions], dtype=np.int64)
            for index, rows, by_keys in zip(self.indexes, projected, own, strict=True):
                if by_keys:
                    seqs = view_buckets(index, rows, part_buckets[part_idx])
                    for (p_i, seq), take in _tablet_groups(part_idx, seqs):
                        pieces.append((self.partitions[p_i], index, seq,
                                       rows if take is None else rows.take(take)))
        return SplitBatch(pieces, batch.num_rows)

    def add_split(self, split: SplitBatch) -> None:
        """Buffer the rows of `split` in their tablets' memtables (splits are added in the
        order of their rows in the load: a UNIQUE key's last row wins)."""
        for part, index, seq, rows in split.pieces:
            self._touched.add(part.partition_id)
            self._write(part, index, seq, rows)
        self.num_rows += split.num_rows
        self._limit_memory()

    def _write(self, part: PartitionMeta, index: MaterializedIndexMeta, seq: int,
               rows: Batch) -> None:
        writer = self._writer(self._tablets[(part.partition_id, index.index_id, seq)], index)
        before = writer.buffered_bytes
        writer.add_batch(rows)  # may flush
        self.buffered_bytes += writer.buffered_bytes - before
        if EARLY_FLUSH_ROWS and writer.buffered_rows >= EARLY_FLUSH_ROWS \
                and writer.keeps_every_row and not self._is_flushing(writer):
            held = writer.buffered_bytes
            self._flush_in_background(writer, held)
            self.buffered_bytes -= held

    def _limit_memory(self) -> None:
        """Flush this load's largest memtables while all loads together hold too much."""
        running = self.engine.txns
        while self.buffered_bytes and running.buffered_bytes() > self._memory_limit:
            largest = max(self._writers.values(), key=lambda w: w.buffered_bytes)
            held = largest.buffered_bytes
            if not held:  # nothing left to flush (the count is exact; this only guards the loop)
                self.buffered_bytes = 0
                break
            self._flush_in_background(largest, held)
            self.buffered_bytes -= held

    def _is_flushing(self, writer: RowsetWriter) -> bool:
        """Whether a flush of `writer` is queued or running (an early flush waits for it: the
        rows that arrived meanwhile go with it if it has not started yet)."""
        return any(w is writer and not f.done() for w, f, _ in self._flushing)

    def _flush_in_background(self, writer: RowsetWriter, held: int) -> None:
        """Flush `writer` (holding `held` bytes) on the flush pool; first wait for its previous
        flush and for the oldest ones past _FLUSHES_IN_FLIGHT / _FLUSH_BYTES_IN_FLIGHT
        (re-raising their errors, which end the load)."""
        for w, f, _ in list(self._flushing):
            if w is writer or f.done():
                f.result()
        self._flushing = [e for e in self._flushing if e[0] is not writer and not e[1].done()]
        while self._flushing and (
                len(self._flushing) >= _FLUSHES_IN_FLIGHT
                or sum(e[2] for e in self._flushing) + held > _FLUSH_BYTES_IN_FLIGHT):
            self._flushing.pop(0)[1].result()
        self._flushing.append((writer, _FLUSH_POOL.submit(writer.flush), held))

    def _wait_flushes(self, raise_errors: bool = True) -> None:
        flushing, self._flushing = self._flushing, []
        for _, f, _ in flushing:
            try:
                f.result()
            except BaseException:
                if raise_errors:
                    raise

    def _check_label(self) -> None:
        prev = self.catalog.txn_by_label(self.db.db_id, self.label)
        if prev is not None:
            raise LabelAlreadyUsed(self.label, prev.txn_id)

    def commit(self) -> TxnMeta:
        """Write all rowsets (fsynced), then publish them with new partition versions at once.
        Succeeded or failed, the load is finished afterwards (no longer running); failed
        before the publish, its files are deleted."""
        try:
            return self._commit()
        except BaseException:
            self._files.discard()  # a no-op once the catalog commit was attempted
            raise
        finally:
            self.buffered_bytes = 0
            self._release_auto()
            self.engine.txns.finish(self)

    def abort(self) -> None:
        """Give up the load: nothing is published and the segments it flushed are deleted."""
        self._wait_flushes(raise_errors=False)
        self._files.discard()
        self.buffered_bytes = 0
        self._release_auto()
        self.engine.txns.finish(self)

    def precommit(self, timeout_ms: int = 0) -> TxnMeta:
        """Two-phase commit, phase one (Doris PRECOMMITTED): write and fsync every rowset and
        persist the txn with them, publishing nothing. storage/two_phase.py publishes them
        later (maybe after a restart) through `publish`, as `commit` does, or deletes them on
        an abort or timeout. Failed before the catalog write, its files are deleted."""
        try:
            pending = self._build()
            now = time.time()
            with self.catalog.lock:
                self._check_label()
                txn = TxnMeta(
                    txn_id=self.txn_id, db_id=self.db.db_id, label=self.label,
                    table_ids=(self.table.table_id,), status=TxnStatus.PRECOMMITTED,
                    num_rows=self.num_rows, create_time=self.create_time, precommit_time=now,
                    pending=tuple(pending), source_type=self.source_type, timeout_ms=timeout_ms,
                )
                mutation = Mutation()
                mutation.put(txn)
                # 2PC: its auto partitions are added now (empty until the txn is committed)
                put_created_partitions(self.catalog, self.table, mutation,
                                       list(self._created.values()))
                self._files.begin_publish()  # the txn record owns the files from here on
                self.catalog.commit(mutation)
            return txn
        except BaseException:
            self._files.discard()
            raise
        finally:
            self.buffered_bytes = 0
            self._release_auto()
            self.engine.txns.finish(self)

    def _build(self) -> list[PendingRowset]:
        """Every rowset of the load written and fsynced, with where it was written."""
        self._wait_flushes()
        # Back-pressure before any file is written: a tablet with too many versions first
        # waits for its compaction; past max_tablet_version_num the load fails (E-235).
        self.engine.compaction.admit_load(
            tid for tid, w in self._writers.items() if w.num_rows)
        metas = _build_all(list(self._writers.values()))
        fault_point("load_before_publish")
        by_tablet = {t.tablet_id: t for t in self._tablets.values()}
        return [PendingRowset(m, by_tablet[m.tablet_id].backend_id,
                              by_tablet[m.tablet_id].partition_id) for m in metas]

    def _commit(self) -> TxnMeta:
        pending = self._build()
        with self.catalog.lock:
            self._check_label()  # a concurrent load may have taken the label meanwhile
            txn = TxnMeta(
                txn_id=self.txn_id, db_id=self.db.db_id, label=self.label,
                table_ids=(self.table.table_id,), status=TxnStatus.VISIBLE,
                num_rows=self.num_rows, create_time=self.create_time,
                source_type=self.source_type,
            )
            # Past the catalog commit the files may be published even if it raises (after
            # the SQLite COMMIT): only the GC at the next start, which reads the catalog, may
            # remove them.
            return self._publish(txn, pending)

    def _publish(self, txn: TxnMeta, pending: list[PendingRowset]) -> TxnMeta:
        """Make the load visible (under the catalog lock). A load that publishes more than
        rows, a CTAS's table or an INSERT OVERWRITE's swap, overrides it
        (storage/staged_load.py)."""
        return publish(self.engine, txn, pending, self._touched, self._files.begin_publish,
                       created=list(self._created.values()))


def put_created_partitions(catalog: Catalog, table: TableMeta, mutation: Mutation,
                           created: Sequence[tuple[PartitionMeta, Sequence[TabletMeta]]]
                           ) -> list[PartitionMeta]:
    """Add to `mutation` the auto partitions a load created that no concurrent load
    published first (same ids: auto_partition.py reserves them per table and name); called
    under the catalog lock. Returns those added."""
    current = {p.partition_id: p for p in catalog.partitions(table.table_id)}
    names = {p.name.lower(): p.partition_id for p in current.values()}
    added = []
    for part, tablets in created:
        if part.partition_id in current:
            continue
        if part.name.lower() in names:
            raise DorisError(f"Duplicate partition name {part.name} in table {table.name}: "
                             "it was added during the load")
        mutation.put(part)
        for t in tablets:
            mutation.put(t)
        added.append(part)
    return added


def publish(engine: StorageEngine, txn: TxnMeta, pending: Sequence[PendingRowset],
             touched: set[int], before_commit: Callable[[], None] | None = None,
             created: Sequence[tuple[PartitionMeta, Sequence[TabletMeta]]] = (),
             also_visible: Sequence[TxnMeta] = ()) -> TxnMeta:
    """The one publish of a load (direct or two-phase): under the catalog lock, in one catalog
    transaction, add its rowsets at new versions of the partitions it touched and record the
    txn VISIBLE. Raises DorisError when its table or a partition was dropped meanwhile.
    `also_visible`: other txns of the same table whose rowsets are in `pending` too, recorded
    VISIBLE in the same catalog transaction (a multi-txn two-phase commit: one version)."""
    catalog = engine.catalog
    now = time.time()
    table_id = txn.table_ids[0]
    with catalog.lock:
        table = catalog.table_by_id(table_id)
        if table is None:
            raise DorisError(f"Table [{table_id}] was dropped during the load")
        # Re-read partitions under the lock: a concurrent load may have published meanwhile.
        mutation = Mutation()
        added = put_created_partitions(catalog, table, mutation, created)
        # temporary partitions too: a load may name them (TEMPORARY PARTITION (..))
        current = {p.partition_id: p for p in catalog.all_partitions(table_id)}
        current.update((p.partition_id, p) for p in added)
        new_parts: dict[int, PartitionMeta] = {}
        for pid in sorted(touched):
            part = current.get(pid)
            if part is None:
                raise DorisError(f"Partition of table [{table.name}] was dropped during the load")
            new_parts[pid] = replace(
                part, visible_version=part.visible_version + 1, visible_version_time=now
            )
        now_on = {t.tablet_id: t.backend_id for t in catalog.tablets(table_id)}
        now_on.update((t.tablet_id, t.backend_id) for part, tablets in created
                      if part in added for t in tablets)
        # An ADD ROLLUP job that began after this load waits in WAITING_TXN until this
        # publish, then converts these base rowsets itself (storage/rollup_job.py).
        for p in pending:
            meta = p.rowset
            if not meta.num_rows or meta.tablet_id not in now_on:  # DROP ROLLUP may remove it
                continue
            version = new_parts[p.partition_id].visible_version
            _follow_tablet_move(engine, meta, p.backend_id, now_on.get(meta.tablet_id))
            mutation.put(replace(meta, start_version=version, end_version=version))
        for part in new_parts.values():
            mutation.put(part)
        done = replace(txn, status=TxnStatus.VISIBLE, pending=(), finish_time=time.time())
        mutation.put(done)
        for other in also_visible:
            mutation.put(replace(other, status=TxnStatus.VISIBLE, pending=(),
                                 finish_time=done.finish_time))
        if before_commit is not None:
            before_commit()
        catalog.commit(mutation)
    return done


def _follow_tablet_move(engine: StorageEngine, meta: RowsetMeta, wrote_on: int | None,
                        backend_id: int | None) -> None:
    """ALTER TABLE .. SET ("colocate_with") may have moved a tablet to another backend while
    this load wrote it: copy the rowset's files there before publishing."""
    if backend_id is None or wrote_on is None or wrote_on == backend_id:
        return
    copy_files(engine.backend_root(wrote_on), engine.backend_root(backend_id),
               meta.files)  # durable before the publish; the old copy is GC'd at restart
