"""Exchanges between fragment instances: the sending and receiving ends of each exchange.

Every instance of a fragment ends in a `Sender` for the exchange above its fragment; every
instance of the receiving fragment reads a `Receiver` through an `ExchangeSource` leaf
operator. A sender routes each output batch as the plan's exchange says
(planner/physical.py Exchange: its DataPartition and `replicated`): all to the single receiver
(gather), a copy to every receiver (broadcast), by a hash of the key columns (shuffle: both
sides of a join use the same hash, so equal keys meet in the same instance), or by Doris'
bucket function of the keys to the instance holding that bucket seq of the receiving
fragment's table (bucket shuffle). The
partial states of a two-phase aggregate travel the same way (executor/two_phase_aggregate.py).

Queues are bounded (back-pressure: a fast sender waits for its receiver), and a receiver takes
batches in arrival order from all its senders, so no instance waits on a sibling that is itself
blocked. A gather from leaf fragments (senders that receive nothing themselves) is read sender
by sender instead, which keeps the output order of plain scans stable at no risk of deadlock.
Every exchange counts the rows and bytes it moves (bytes: column buffers; a broadcast counts
each copy). A hand-off is the queue's condition: a waiting receiver (or a sender waiting for
room) is woken by the put (take) itself, not by a timer; the timed re-check only notices the
query's halt flag, so KILL, errors and early close stop everything. A waiting end gives back its
CPU slot (executor/cpu_pool.py) and takes one again when woken, so the instances of every query
share the cores without one blocked instance holding a slot another needs.
Upstream: Doris `VDataStreamSender` / `VDataStreamRecvr` (one queue per receiver, fed by all
senders), DuckDB exchange-less pipelines for comparison.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from executor.compile import compile_column
from executor.join_table import hash_keys
from executor.operator import Operator
from executor.scan_pool import get_polling, put_until
from planner.partitioning import DataPartition, PartitionKind
from sql.errors import QueryCancelled
from sql.functions.cast import cast_vec
from sql.functions.vector import Vec
from storage.batch import Batch, Column
from storage.distribution import bucket_of_rows

QUEUE_ITEMS = 8
_EOS = object()


class QueryRun:
    """What all instances of one query share: the halt flag and the first failure."""

    def __init__(self, cancel: threading.Event) -> None:
        self.cancel = cancel  # the session's token (KILL QUERY, query_timeout)
        self.halt = threading.Event()  # every instance's cancel token
        self.failure: BaseException | None = None
        self._lock = threading.Lock()

    def fail(self, error: BaseException) -> None:
        """Record an instance's error (the first real one wins over cancellations) and halt."""
        with self._lock:
            if self.failure is None or (isinstance(self.failure, QueryCancelled)
                                        and not isinstance(error, QueryCancelled)):
                self.failure = error
        self.halt.set()

    def check(self) -> None:
        if self.failure is not None:
            raise self.failure
        if self.cancel.is_set():
            self.halt.set()
            raise QueryCancelled()


@dataclass
class ExchangeCounters:
    rows: int = 0
    bytes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, rows: int, nbytes: int) -> None:
        with self.lock:
            self.rows += rows
            self.bytes += nbytes


class Receiver:
    """The receiving end of one exchange in one instance, fed by `senders` sender instances."""

    def __init__(self, run: QueryRun, senders: int, ordered: bool) -> None:
        self.run = run
        self.senders = senders
        self.ordered = ordered
        n = senders if ordered else 1
        self._queues: list[queue.Queue[object]] = [queue.Queue(QUEUE_ITEMS) for _ in range(n)]

    def put(self, sender: int, item: object) -> bool:
        """Queue `item` from sender `sender`; waits while full. False once the query halted."""
        return put_until(self._queues[sender if self.ordered else 0], item, self.run.halt)

    def _get(self, q: queue.Queue[object]) -> object:
        return get_polling(q, self._check)

    def _check(self) -> None:
        self.run.check()
        # A halted query (LIMIT satisfied, or another instance failed) stops its senders
        # without an end-of-stream mark, so a receiver waiting for one must stop too; without
        # this, a join fragment between a LIMIT and its inputs waited for query_timeout.
        if self.run.halt.is_set():
            raise QueryCancelled()

    def items(self) -> Iterator[Batch]:
        """The batches of every sender (senders put only Batches, then one end-of-stream)."""
        if self.ordered:
            for q in self._queues:
                while (item := self._get(q)) is not _EOS:
                    yield cast(Batch, item)
            return
        q = self._queues[0]
        open_senders = self.senders
        while open_senders:
            item = self._get(q)
            if item is _EOS:
                open_senders -= 1
                continue
            yield cast(Batch, item)


class ExchangeSource(Operator):
    """A leaf operator yielding the Batches its receiver gets (rows, or the serialized partial
    states of an aggregate), under the receiving plan's column `names`."""

    def __init__(self, receiver: Receiver, names: tuple[str, ...]) -> None:
        super().__init__()
        self.receiver = receiver
        self.names = names

    def produce(self) -> Iterator[Batch]:
        for item in self.receiver.items():
            if item.names != self.names:
                item = item.rename(self.names)
            yield item


class InlineExchange(Operator):
    """An exchange between one sender instance and one receiver: the sender's operators run
    on the receiver's thread, pulled through this node, which counts what crosses."""

    def __init__(self, sender: Operator, counters: ExchangeCounters,
                 names: tuple[str, ...]) -> None:
        super().__init__(sender)
        self.counters = counters
        self.names = names

    def produce(self) -> Iterator[Batch]:
        for item in self.child_batches():
            self.counters.add(item.num_rows, item.nbytes)
            if item.names != self.names:
                item = item.rename(self.names)
            yield item


def hash_instances(cols: list[Column], n: int, instances: int) -> np.ndarray:
    """Receiving instance of each row for a shuffle: the high half of the join-table hash
    (the low bits pick the hash-table bucket inside the instance, so they stay uniform)."""
    h = hash_keys(cols, n)
    return ((h >> np.uint64(32)) % np.uint64(instances)).astype(np.int64)


class Sender:
    """The sending end of one exchange for one sender instance."""

    def __init__(self, partition: DataPartition, receivers: list[Receiver], index: int,
                 counters: ExchangeCounters, cancel: threading.Event,
                 bucket_instance: np.ndarray | None = None, *, replicated: bool = False) -> None:
        self.partition = partition
        self.replicated = replicated  # UNPARTITIONED to several receivers: a copy to each
        self.receivers = receivers
        self.index = index
        self.counters = counters
        self._keys: list[Callable[[Batch], Column]] = [compile_column(e, cancel)
                                                       for e in partition.exprs]
        self._bucket_instance = bucket_instance

    def _put(self, target: int, item: Batch) -> bool:
        self.counters.add(item.num_rows, item.nbytes)
        return self.receivers[target].put(self.index, item)

    def send(self, item: Batch) -> bool:
        """Route one batch; False once the query halted."""
        n = len(self.receivers)
        if self.replicated:
            return all(self._put(i, item) for i in range(n))
        if self.partition.kind is PartitionKind.UNPARTITIONED or n == 1:
            return self._put(0, item)
        target = self._targets(item)
        order = np.argsort(target, kind="stable")
        counts = np.bincount(target, minlength=n)
        ordered = item.take(order)
        start = 0
        for i, c in enumerate(counts.tolist()):
            if c and not self._put(i, ordered.slice(start, start + c)):
                return False
            start += c
        return True

    def _targets(self, batch: Batch) -> np.ndarray:
        cols = [fn(batch) for fn in self._keys]
        bucketing = self.partition.bucketing
        if self.partition.kind is PartitionKind.BUCKET_SHUFFLE:
            assert self._bucket_instance is not None and bucketing is not None
            typed = [c if c.type == t else cast_vec(Vec.from_column(c), t).to_column()
                     for c, t in zip(cols, bucketing.column_types)]
            return self._bucket_instance[bucket_of_rows(typed, bucketing.buckets)]
        return hash_instances(cols, batch.num_rows, len(self.receivers))

    def finish(self) -> None:
        """End of stream to every receiver."""
        for r in self.receivers:
            r.put(self.index, _EOS)
