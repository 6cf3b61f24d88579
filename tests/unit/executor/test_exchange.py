"""Exchanges between fragment instances (executor/exchange.py): routing, ordering,
counting, and how failures and halts reach both ends."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from executor.exchange import (
    _EOS,
    ExchangeCounters,
    QueryRun,
    Receiver,
    Sender,
    hash_instances,
)
from planner.partitioning import UNPARTITIONED, DataPartition, PartitionKind, TableBucketing
from sql.binder.expressions import ColumnRef
from sql.errors import DorisError, QueryCancelled
from storage.batch import Batch, Column
from storage.distribution import bucket_of_rows
from storage.types import BIGINT, INT, varchar


def _batch(**cols: tuple[object, list[object]]) -> Batch:
    return Batch(tuple(cols), tuple(Column.from_physical(t, v) for t, v in cols.values()))


def _drain(r: Receiver) -> list[object]:
    return list(r.items())


def _sender(partition: DataPartition, receivers: list[Receiver], index: int = 0,
            bucket_instance: np.ndarray | None = None,
            replicated: bool = False) -> tuple[Sender, ExchangeCounters]:
    counters = ExchangeCounters()
    return Sender(partition, receivers, index, counters, threading.Event(), bucket_instance,
                  replicated=replicated), counters


def _rows(items: list[object]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for b in items:
        assert isinstance(b, Batch)
        out.extend(b.rows())
    return out


def test_hash_routing_sends_equal_keys_to_one_instance_and_keeps_every_row() -> None:
    run = QueryRun(threading.Event())
    receivers = [Receiver(run, 2, ordered=False) for _ in range(3)]
    spec = DataPartition(
        PartitionKind.HASH, (ColumnRef("k", INT), ColumnRef("s", varchar(4))))
    a, counters = _sender(spec, receivers, 0)
    b, _ = _sender(spec, receivers, 1)
    keys = [i % 7 for i in range(50)]
    words = ["x", "y", None, "zz", "x"]
    left = _batch(k=(INT, keys), s=(varchar(4), [words[i % 5] for i in range(50)]),
                  n=(INT, list(range(50))))
    right = _batch(k=(INT, keys[::-1]), s=(varchar(4), [words[i % 5] for i in range(50)][::-1]),
                   n=(INT, list(range(100, 150))))
    assert a.send(left) and b.send(right)
    a.finish()
    b.finish()
    got = [_rows(_drain(r)) for r in receivers]
    assert sorted((r for part in got for r in part), key=repr) == sorted(
        left.rows() + right.rows(), key=repr)
    home: dict[tuple[object, object], int] = {}
    for i, part in enumerate(got):
        for k, s, _ in part:
            assert home.setdefault((k, s), i) == i  # a key never lands in two instances
    assert len(set(home.values())) > 1  # and the keys really are spread
    assert counters.rows == 50 and counters.bytes > 0


def test_hash_instances_uses_the_high_hash_bits() -> None:
    col = Column.from_physical(BIGINT, list(range(1000)))
    target = hash_instances([col], 1000, 4)
    assert set(np.unique(target).tolist()) == {0, 1, 2, 3}
    counts = np.bincount(target)
    assert counts.min() > 150  # roughly uniform


def test_bucket_routing_matches_the_storage_bucket_of_the_partner_table() -> None:
    """Right-side INT keys are bucketed as the left table's BIGINT distribution column."""
    run = QueryRun(threading.Event())
    receivers = [Receiver(run, 1, ordered=False) for _ in range(2)]
    buckets = 5
    owner = np.array([0, 1, 1, 0, 1])  # bucket seq -> instance
    spec = DataPartition(PartitionKind.BUCKET_SHUFFLE, (ColumnRef("k", INT),),
                         TableBucketing(1, buckets, (BIGINT,)))
    s, _ = _sender(spec, receivers, 0, owner)
    keys = list(range(-20, 40))
    assert s.send(_batch(k=(INT, keys)))
    s.finish()
    got = [[r[0] for r in _rows(_drain(r))] for r in receivers]
    expect = bucket_of_rows([Column.from_physical(BIGINT, keys)], buckets)
    for k, b in zip(keys, expect.tolist()):
        assert k in got[owner[b]]
    assert sorted(got[0] + got[1]) == keys


def test_broadcast_copies_to_every_instance_and_counts_each_copy() -> None:
    run = QueryRun(threading.Event())
    receivers = [Receiver(run, 1, ordered=False) for _ in range(3)]
    s, counters = _sender(UNPARTITIONED, receivers, replicated=True)
    batch = _batch(k=(INT, [1, 2, 3]))
    assert s.send(batch)
    s.finish()
    assert all(_rows(_drain(r)) == batch.rows() for r in receivers)
    assert counters.rows == 9 and counters.bytes == 3 * batch.nbytes


def test_ordered_gather_reads_sender_by_sender() -> None:
    run = QueryRun(threading.Event())
    r = Receiver(run, 2, ordered=True)
    r.put(1, "b1")
    r.put(0, "a1")
    r.put(1, "b2")
    r.put(1, _EOS)
    r.put(0, "a2")
    r.put(0, _EOS)
    assert _drain(r) == ["a1", "a2", "b1", "b2"]


def test_a_failure_in_another_instance_is_raised_by_the_receiver() -> None:
    run = QueryRun(threading.Event())
    r = Receiver(run, 1, ordered=False)
    error = DorisError("Memory limit exceeded")
    threading.Timer(0.05, run.fail, args=(error,)).start()
    with pytest.raises(DorisError, match="Memory limit"):
        _drain(r)
    run.fail(QueryCancelled())  # a later cancellation does not hide the real error
    assert run.failure is error and run.halt.is_set()


def test_kill_reaches_waiting_receivers_and_halts_senders() -> None:
    cancel = threading.Event()
    run = QueryRun(cancel)
    r = Receiver(run, 1, ordered=False)
    threading.Timer(0.05, cancel.set).start()
    with pytest.raises(QueryCancelled):
        _drain(r)
    assert run.halt.is_set()
    full = Receiver(QueryRun(threading.Event()), 1, ordered=False)
    for i in range(8):
        assert full.put(0, i)
    threading.Timer(0.05, full.run.halt.set).start()
    assert full.put(0, "more") is False  # a blocked sender gives up once the query halts
