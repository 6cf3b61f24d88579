"""Load records: what every finished (or failed) load leaves for SHOW LOAD, SHOW STREAM LOAD,
`get_load_state` and `/metrics`.

Every load path calls `record_load(engine, LoadRecordMeta(...))` once, when the load ends
(Stream Load from server/stream_load.py; INSERT and LOAD DATA from their executors). Records
are kept per engine, newest last, at most `max_stream_load_record_size` of them (Doris FE's
bound for stream load records), in memory and in the catalog's `load_records` table
(storage/catalog/repository.py: one small SQLite write per record, which also drops the rows
that fell out of the bound), which a restart reads back. A two-phase load's later commit or
abort rewrites its row. The records are informational: a failed write is logged, never fails a
load (the txn records in the catalog are what SHOW TRANSACTION and `get_load_state` trust).
A data dir from before the catalog kept them, `<data_dir>/fe/load_records.jsonl`, is imported
once on open (the last line of a job wins; a line cut by a crash is skipped) and renamed to
`load_records.jsonl.imported`.

The running totals (`LoadCounters`) feed the Doris metrics on `/metrics` (server/metrics.py).
Upstream: Doris `StreamLoadRecordMgr`, `LoadManager`, `LoadJob.getShowInfo`.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from storage.catalog.meta import LoadRecordMeta, TxnStatus
from storage.catalog.repository import CatalogRepository
from storage.engine import StorageEngine
from storage.per_engine import PerEngine

log = logging.getLogger(__name__)

# SHOW LOAD's State column (Doris JobState) for a load that ended.
FINISHED = "FINISHED"
CANCELLED = "CANCELLED"
# SHOW LOAD's State for a two-phase Stream Load waiting for its commit (Doris shows the job
# LOADING until the txn is published).
LOADING = "LOADING"


@dataclass
class LoadCounters:
    """Totals since start, for /metrics (Doris' doris_fe_txn_*, load and stream load figures)."""

    txn_begin: int = 0
    txn_success: int = 0
    txn_failed: int = 0
    load_rows: int = 0
    load_bytes: int = 0
    stream_load_requests: int = 0
    stream_load_failed: int = 0
    stream_load_rows: int = 0  # rows Stream Loads loaded (including ones awaiting 2PC commit)
    stream_load_bytes: int = 0  # body bytes Stream Loads received
    loads_by_type: dict[str, int] = field(default_factory=dict)


class LoadRecords:
    """The records and counters of one engine (thread-safe). With a `repo` the records are
    stored in the catalog and read back from it; `legacy_file` (the JSON lines file of earlier
    versions) is imported into it once."""

    def __init__(self, limit: int, repo: CatalogRepository | None = None,
                 legacy_file: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._limit = max(1, limit)
        self._records: collections.deque[LoadRecordMeta] = collections.deque(maxlen=self._limit)
        self._next_job_id = 1
        self._repo = repo
        self.counters = LoadCounters()  # since this start, as Doris' metrics
        if repo is not None:
            if legacy_file is not None and legacy_file.exists():
                self._import(repo, legacy_file)
            stored = repo.load_records()
            for meta in stored[-self._limit:]:
                self._records.append(meta)
            self._next_job_id = (stored[-1].job_id + 1) if stored else 1

    def _import(self, repo: CatalogRepository, path: Path) -> None:
        """Move the records of `load_records.jsonl` into the catalog (once: the file is renamed
        to *.imported afterwards, so a restart does not import it again)."""
        by_job: dict[int, LoadRecordMeta] = {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    r = LoadRecordMeta(**json.loads(line))
                except (ValueError, TypeError):  # a line cut by a crash
                    continue
                by_job[r.job_id] = r
        kept = [by_job[job_id] for job_id in sorted(by_job)[-self._limit:]]
        if kept:
            repo.put_load_records(kept, keep_from=kept[0].job_id)
        os.replace(path, path.with_name(path.name + ".imported"))

    def _persist(self, record: LoadRecordMeta) -> None:
        """Store the record and drop the rows past the bound (caller holds the lock)."""
        if self._repo is None:
            return
        try:
            self._repo.put_load_records([record], keep_from=self._records[0].job_id)
        except (OSError, sqlite3.Error) as e:  # informational: must not fail a load
            log.warning("cannot store load record %s: %s", record.label, e)

    def add(self, record: LoadRecordMeta) -> LoadRecordMeta:
        with self._lock:
            record = dataclasses.replace(record, job_id=self._next_job_id)
            self._next_job_id += 1
            self._records.append(record)
            self._persist(record)
            c = self.counters
            c.loads_by_type[record.load_type] = c.loads_by_type.get(record.load_type, 0) + 1
            if record.txn_id >= 0:
                c.txn_begin += 1
                if record.state == CANCELLED:
                    c.txn_failed += 1
                elif record.state == FINISHED:
                    c.txn_success += 1
            if record.state == FINISHED:
                c.load_rows += record.loaded_rows
                c.load_bytes += record.load_bytes
            if record.load_type == STREAM_LOAD:
                c.stream_load_requests += 1
                c.stream_load_bytes += record.load_bytes
                c.stream_load_rows += record.loaded_rows
                if record.state == CANCELLED:
                    c.stream_load_failed += 1
        return record

    def count_refused_stream_load(self) -> None:
        """A Stream Load refused without a job (a used label): counted, not recorded."""
        with self._lock:
            self.counters.stream_load_requests += 1
            self.counters.stream_load_failed += 1

    def update_state(self, db: str, label: str, state: str, message: str | None = None) -> None:
        """A two-phase load committed or aborted later: its record follows."""
        with self._lock:
            for i in range(len(self._records) - 1, -1, -1):
                r = self._records[i]
                if r.db == db and r.label == label and r.state == LOADING:
                    r = dataclasses.replace(r, state=state, finish_time=time.time(),
                                            message=r.message if message is None else message)
                    self._records[i] = r
                    self._persist(r)
                    c = self.counters
                    if state == FINISHED:
                        c.txn_success += 1
                        c.load_rows += r.loaded_rows
                        c.load_bytes += r.load_bytes
                    else:
                        c.txn_failed += 1
                    return

    def list(self, db: str | None = None) -> list[LoadRecordMeta]:
        with self._lock:
            return [r for r in self._records if db is None or r.db == db]


STREAM_LOAD = "STREAM_LOAD"


# where earlier versions kept the records (imported once, then renamed to *.imported)
LEGACY_RECORDS_FILE = ("fe", "load_records.jsonl")


def _records_for(engine: StorageEngine) -> LoadRecords:
    return LoadRecords(engine.compaction_config.max_stream_load_record_size,
                       engine.catalog.repo, engine.data_dir.joinpath(*LEGACY_RECORDS_FILE))


_RECORDS: PerEngine[LoadRecords] = PerEngine(_records_for)


def load_records(engine: StorageEngine) -> LoadRecords:
    return _RECORDS(engine)


def record_load(engine: StorageEngine, record: LoadRecordMeta) -> LoadRecordMeta:
    """Record one load that ended (or, two-phase, that waits for its commit). The one function
    every load path calls; cheap (an append under a lock)."""
    return _RECORDS(engine).add(record)


def state_of_label(engine: StorageEngine, db_name: str, label: str) -> str:
    """Doris' load state of a label (get_load_state): UNKNOWN, PREPARE, PRECOMMITTED,
    COMMITTED, VISIBLE or ABORTED, from the catalog's txn records (they survive a restart) and,
    for a load that never reached the catalog, its in-memory record."""
    db = engine.catalog.get_database(db_name)
    if db is not None:
        txns = engine.catalog.txns_by_label(db.db_id, label)
        if txns:
            return txns[-1].status.value
    for r in reversed(_RECORDS(engine).list(db_name)):
        if r.label == label:
            return {FINISHED: TxnStatus.VISIBLE.value, LOADING: TxnStatus.PREPARE.value}.get(
                r.state, TxnStatus.ABORTED.value)
    return "UNKNOWN"


def record_insert(engine: StorageEngine, db: str, table: str, label: str | None, txn_id: int,
                  rows: int, error: str | None = None, user: str = "",
                  started: float | None = None, load_type: str = "INSERT") -> LoadRecordMeta:
    """Record an INSERT (or LOAD DATA: `load_type="MYSQL_LOAD"`) that ended: FINISHED with
    its rows, or CANCELLED with its error. SHOW LOAD lists it with Type INSERT as Doris."""
    now = time.time()
    return record_load(engine, LoadRecordMeta(
        label=label or "", db=db, table=table, load_type=load_type,
        state=CANCELLED if error else FINISHED, status="Fail" if error else "Success",
        message=error or "", txn_id=txn_id, total_rows=rows, loaded_rows=0 if error else rows,
        user=user, start_time=started or now, finish_time=now))


def record_file_load(engine: StorageEngine, db: str, table: str, label: str, load_type: str,
                     stats: object | None, error: str | None, user: str = "",
                     started: float | None = None, max_filter_ratio: float = 0.0
                     ) -> LoadRecordMeta:
    """Record a file load that ended (LOAD DATA: `load_type="MYSQL_LOAD"`) from its LoadStats
    (executor/load/spec.py; any object with its counters): FINISHED, or CANCELLED with
    `error`."""
    now = time.time()
    return record_load(engine, LoadRecordMeta(
        label=label, db=db, table=table, load_type=load_type,
        state=CANCELLED if error else FINISHED, status="Fail" if error else "Success",
        message=error or "", txn_id=getattr(stats, "txn_id", -1),
        total_rows=getattr(stats, "total_rows", 0),
        loaded_rows=0 if error else getattr(stats, "loaded_rows", 0),
        filtered_rows=getattr(stats, "filtered_rows", 0),
        unselected_rows=getattr(stats, "unselected_rows", 0),
        load_bytes=getattr(stats, "load_bytes", 0), user=user, start_time=started or now,
        finish_time=now, max_filter_ratio=max_filter_ratio))
