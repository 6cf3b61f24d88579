"""Two-phase load transactions, phase two (Doris `commitTransaction2PC` / `abortTransaction2PC`):
find a txn by id or label, commit a PRECOMMITTED one through the one publish path
(storage/txn.py `publish`, the same as a direct commit; also after a restart, since the txn and
its pending rowsets are in the catalog), abort one (its label is free again, its files
deleted), and abort those left PRECOMMITTED past `stream_load_default_precommit_timeout_second`.
Phase one is `LoadTxn.precommit`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from storage.catalog.meta import DatabaseMeta, TxnMeta, TxnStatus
from storage.catalog.repository import Mutation
from storage.engine import StorageEngine
from storage.errors import DorisError
from storage.txn import publish


class TxnNotFound(DorisError):
    """No transaction of that id (or label) in the database."""


class TxnStateError(DorisError):
    """A two-phase operation on a txn in the wrong state (already visible, aborted, ...)."""


def find_txn(engine: StorageEngine, db: DatabaseMeta, txn_id: int | None = None,
             label: str | None = None) -> TxnMeta:
    """The txn of `db` with this id, or the latest one that used this label."""
    if txn_id is not None:
        txn = engine.catalog.txn_by_id(txn_id)
        if txn is None or txn.db_id != db.db_id:
            raise TxnNotFound(f"transaction [{txn_id}] not found")
        return txn
    found = engine.catalog.txns_by_label(db.db_id, label or "")
    if not found:
        raise TxnNotFound(f"label [{label}] not found")
    return found[-1]


def commit_precommitted(engine: StorageEngine, txn: TxnMeta) -> TxnMeta:
    """Two-phase commit, phase two: publish a PRECOMMITTED txn's rowsets (the same publish as
    a direct commit). A txn whose table or partition is gone is aborted instead."""
    with engine.catalog.lock:
        current = engine.catalog.txn_by_id(txn.txn_id)
        if current is None:
            raise TxnNotFound(f"transaction [{txn.txn_id}] not found")
        if current.status is TxnStatus.VISIBLE:
            raise TxnStateError(f"transaction [{txn.txn_id}] is already visible, "
                                "not pre-committed.")
        if current.status is TxnStatus.ABORTED:
            raise TxnStateError(f"transaction [{txn.txn_id}] is already aborted. abort "
                                f"reason: {current.reason}")
        if current.status is not TxnStatus.PRECOMMITTED:
            raise TxnStateError(f"transaction [{txn.txn_id}] is not pre-committed")
        touched = {p.partition_id for p in current.pending if p.rowset.num_rows}
        try:
            return publish(engine, current, current.pending, touched)
        except DorisError as e:
            abort_precommitted(engine, current, e.detail)
            raise


def commit_precommitted_many(engine: StorageEngine, txns: Sequence[TxnMeta]) -> list[TxnMeta]:
    """Phase two of several PRECOMMITTED txns of one table at once (ShaleDB's extension of
    `_stream_load_2pc`: `txn_id: 1,2,3`): all their rowsets are published in one catalog
    transaction, at one new version per touched partition, so readers see all of them or none.
    Every txn is checked before anything is published; one in the wrong state fails them all
    with nothing changed."""
    if len(txns) == 1:
        return [commit_precommitted(engine, txns[0])]
    with engine.catalog.lock:
        current: list[TxnMeta] = []
        for txn in txns:
            now = engine.catalog.txn_by_id(txn.txn_id)
            if now is None:
                raise TxnNotFound(f"transaction [{txn.txn_id}] not found")
            if now.status is not TxnStatus.PRECOMMITTED:
                raise TxnStateError(f"transaction [{txn.txn_id}] is already "
                                    f"{now.status.value}, not pre-committed.")
            current.append(now)
        if len({t.table_ids for t in current}) != 1:
            raise TxnStateError("transactions committed together must load the same table")
        pending = [p for t in current for p in t.pending]
        touched = {p.partition_id for p in pending if p.rowset.num_rows}
        try:
            first = publish(engine, current[0], pending, touched, also_visible=current[1:])
        except DorisError as e:
            for t in current:
                abort_precommitted(engine, t, e.detail)
            raise
    return [first] + [engine.catalog.txn_by_id(t.txn_id) or t for t in current[1:]]


def abort_precommitted(engine: StorageEngine, txn: TxnMeta, reason: str = "user abort") -> TxnMeta:
    """Discard a PRECOMMITTED txn: record it ABORTED (its label is free again), then delete its
    files (a crash in between leaves them to the GC at the next start)."""
    with engine.catalog.lock:
        current = engine.catalog.txn_by_id(txn.txn_id)
        if current is None:
            raise TxnNotFound(f"transaction [{txn.txn_id}] not found")
        if current.status is not TxnStatus.PRECOMMITTED:
            raise TxnStateError(f"transaction [{txn.txn_id}] is already "
                                f"{current.status.value}, could not abort.")
        done = replace(current, status=TxnStatus.ABORTED, pending=(), finish_time=time.time(),
                       reason=reason)
        mutation = Mutation()
        mutation.put(done)
        engine.catalog.commit(mutation)
    for p in current.pending:
        root = engine.backend_root(p.backend_id)
        for rel in p.rowset.files:
            (root / rel).unlink(missing_ok=True)
    return done


def abort_expired(engine: StorageEngine, default_timeout_s: float,
                  now: float | None = None) -> list[TxnMeta]:
    """Abort every PRECOMMITTED txn precommitted `default_timeout_s` ago or earlier (Doris
    aborts a precommitted txn never committed after
    `stream_load_default_precommit_timeout_second`)."""
    now = time.time() if now is None else now
    aborted = []
    for txn in engine.catalog.precommitted_txns():
        # Doris reads the config at check time (TransactionState.isTimeout), not the load's
        # own `timeout`, which bounded only its first phase.
        if now - txn.precommit_time >= default_timeout_s:
            try:
                aborted.append(abort_precommitted(engine, txn, "timeout by txn manager"))
            except DorisError:  # committed or aborted meanwhile
                continue
    return aborted
