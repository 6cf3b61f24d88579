"""Index-building ALTER jobs: ADD / DROP INDEX and SET ("bloom_filter_columns" / "_fpp").

Design (change the definition first, then rewrite what was written without it):
1. `create_index_job` (in the ALTER statement, under the catalog lock) stores the table with its
   new index definitions / bloom filter properties together with a PENDING `AlterJobMeta`
   (job_type SCHEMA_CHANGE, the previous definitions kept for CANCEL) in one catalog
   transaction. From then on every writer that starts (loads, compaction, rollup conversion:
   they call `index_spec_of` on the table they hold) writes the new indexes, and records what
   it wrote in `RowsetMeta.index_spec` (`spec_signature`). A table without data rowsets needs
   no rewrite: its job is stored FINISHED at once.
2. A background thread (`IndexJobs`) moves the job to WAITING_TXN until every load of the table
   that began before the job (txn id below the watershed `transaction_id`: its writers hold the
   old definitions) has published or failed (`storage.txn.RunningTxns`), then RUNNING rewrites
   every visible rowset whose `index_spec` differs from what its materialized index now
   declares: segment by segment (same rows in the same order, same key columns and short key
   count, new files; versions, overlap flag and delete versions untouched), and swaps it in with
   `storage.compaction.merger.swap` (one catalog transaction; the replaced rowset stays readable
   for readers in flight as a stale rowset). Compaction is kept off a tablet while its rowsets
   are rewritten (`CompactionManager.exclusive`); a rowset replaced meanwhile anyway (TRUNCATE,
   a load replacing the tablet) fails the swap, and the next pass looks again. The job ends
   FINISHED when a pass finds nothing left to rewrite.
3. CANCEL restores the previous definitions and marks the job CANCELLED; rowsets already
   rewritten stay (they record what they hold, and a scan uses only the indexes a segment has).
Restart: the job's state is in the catalog; an unfinished job runs again from step 2 (a crash
ended every load). Files of a rewrite that was not swapped in are removed by the engine's
start-up garbage collection (no catalog rowset references them).
Upstream: Doris `SchemaChangeHandler` / `SchemaChangeJobV2` (bitmap index changes are schema
changes, SHOW ALTER TABLE COLUMN; CANCEL ALTER TABLE COLUMN).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

from storage.alter_job_runner import FINAL_STATES, AlterJobRunner, JobCancelled
from storage.catalog.meta import (
    AlterJobMeta,
    IndexDef,
    MaterializedIndexMeta,
    RowsetMeta,
    TableMeta,
    TabletMeta,
)
from storage.catalog.repository import Mutation
from storage.compaction.merger import remove_files, swap
from storage.engine import StorageEngine
from storage.faults import fault_point
from storage.indexes.spec import index_spec_of, spec_signature
from storage.rowset import segment_path
from storage.segment import read_segment, write_segment
from storage.segment.reader import SegmentReader
from storage.types import parse_type

SCHEMA_CHANGE = "SCHEMA_CHANGE"
BLOOM_KEYS = ("bloom_filter_columns", "bloom_filter_fpp")
DEFAULT_TIMEOUT = 86400  # Doris alter_table_timeout_second


def is_running(job: AlterJobMeta) -> bool:
    return job.job_type == SCHEMA_CHANGE and job.state not in FINAL_STATES


def _bloom_properties(table: TableMeta) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in table.properties if k in BLOOM_KEYS)


def create_index_job(
    engine: StorageEngine, m: Mutation, table: TableMeta, indexes: tuple[IndexDef, ...],
    properties: tuple[tuple[str, str], ...],
) -> AlterJobMeta:
    """Put into `m` the table with its new `indexes` / `properties` and the job that rewrites
    its data for them (FINISHED at once when the table holds no data and no load into it is
    under way). The caller holds the catalog lock and commits `m`."""
    cat = engine.catalog
    base = next(ix for ix in cat.materialized_indexes(table.table_id) if ix.is_base)
    new_table = replace(table, indexes=indexes, properties=properties)
    m.put(new_table)
    job_id, watershed = cat.next_ids(2)
    now = time.time()
    version = 1 + max((j.schema_version for j in cat.alter_jobs(table.db_id)
                       if j.table_id == table.table_id and j.job_type == SCHEMA_CHANGE),
                      default=0)
    job = AlterJobMeta(
        job_id=job_id, db_id=table.db_id, table_id=table.table_id, table_name=table.name,
        base_index_id=base.index_id, base_index_name=base.name,
        rollup_index_id=base.index_id, rollup_index_name=base.name, create_time=now,
        transaction_id=watershed, timeout=DEFAULT_TIMEOUT, job_type=SCHEMA_CHANGE,
        old_indexes=table.indexes, old_properties=_bloom_properties(table),
        schema_version=version,
    )
    has_data = any(r.files for t in cat.tablets(table.table_id) for r in cat.rowsets(t.tablet_id))
    if not has_data and not engine.txns.before(table.table_id, watershed):
        job = replace(job, state="FINISHED", finish_time=now)
    m.put(job)
    return job


def stale_rowsets(engine: StorageEngine, table: TableMeta
                  ) -> list[tuple[TabletMeta, MaterializedIndexMeta, RowsetMeta]]:
    """Visible rowsets with data written with other indexes than their index declares now."""
    cat = engine.catalog
    out = []
    for index in cat.materialized_indexes(table.table_id):
        if index.state != "NORMAL":
            continue  # a rollup being built: its job writes it with the table's current spec
        want = spec_signature(index_spec_of(table, index))
        for tablet in cat.tablets(table.table_id, index_id=index.index_id):
            for r in cat.rowsets(tablet.tablet_id):
                if r.files and r.index_spec != want:
                    out.append((tablet, index, r))
    return out


def rewrite_rowset(engine: StorageEngine, table: TableMeta, index: MaterializedIndexMeta,
                   tablet: TabletMeta, rowset: RowsetMeta) -> RowsetMeta:
    """A copy of `rowset` whose segments carry the indexes `table` declares now: each segment
    read whole and written again with the same columns, rows and row order. The files are
    fsynced but invisible until the returned meta is swapped in."""
    root = engine.backend_root(tablet.backend_id)
    spec = index_spec_of(table, index)
    rowset_id = f"ix{uuid.uuid4().hex}"
    files: list[str] = []
    size = rows = 0
    try:
        for rel in rowset.files:
            # Exactly what the segment stores (its columns as stored, its keys and short key
            # prefix), whatever the table's schema says now: only the indexes change.
            with SegmentReader(root / rel, {}) as reader:
                footer = reader.footer
            names = [c.name for c in footer.columns]
            types = [parse_type(c.type_sql) for c in footer.columns]
            batch = read_segment(root / rel, names, types)
            short_keys = (len(footer.short_key.columns) if footer.short_key is not None
                          else index.short_key_column_count)
            out = segment_path(tablet.tablet_id, rowset_id, len(files))
            info = write_segment(root / out, batch, key_columns=footer.key_columns,
                                 short_key_columns=short_keys, indexes=spec)
            files.append(out)
            size += info.size
            rows += info.num_rows
    except BaseException:
        remove_files(root, files)
        raise
    return replace(rowset, rowset_id=rowset_id, files=tuple(files), num_rows=rows,
                   data_size=size, create_time=time.time(), index_spec=spec_signature(spec))


class IndexJobs(AlterJobRunner):
    """The index-building (SCHEMA_CHANGE) jobs of one engine: runs each on its own thread."""

    JOB_TYPE = SCHEMA_CHANGE

    def _work(self, job: AlterJobMeta) -> None:
        self._rewrite(job)

    def _table(self, job: AlterJobMeta) -> TableMeta:
        table = self.engine.catalog.table_by_id(job.table_id)
        if table is None:
            raise JobCancelled(f"Table[{job.table_name}] does not exist")
        return table

    def _rewrite(self, job: AlterJobMeta) -> None:
        """RUNNING: rewrite stale rowsets, pass after pass, until none is left; FINISHED."""
        done = 0
        while True:
            todo = stale_rowsets(self.engine, self._table(job))
            total = done + len(todo)
            for tablet, index, rowset in todo:
                self._check(job)
                self._rewrite_one(self._table(job), index, tablet, rowset)
                done += 1
                job = self._set(job, progress=f"{done}/{total}")
                fault_point("index_job_running")  # crash tests: kill -9 with the job half done
            cat = self.engine.catalog
            with cat.lock:
                self._check(job)
                if stale_rowsets(self.engine, self._table(job)):
                    continue  # a load published during the pass: another pass (outside the lock)
                current = cat.alter_job(job.job_id) or job
                if current.state in FINAL_STATES:
                    return
                m = Mutation()
                m.put(replace(current, state="FINISHED", finish_time=time.time(), msg="",
                              progress="N/A"))
                cat.commit(m)
                return

    def _rewrite_one(self, table: TableMeta, index: MaterializedIndexMeta, tablet: TabletMeta,
                     rowset: RowsetMeta) -> None:
        cat = self.engine.catalog

        def live() -> bool:
            return rowset.rowset_id in {r.rowset_id for r in cat.rowsets(tablet.tablet_id)}

        with self.engine.compaction.exclusive([tablet.tablet_id]):
            if not live():
                return  # merged or replaced meanwhile: the next pass sees what replaced it
            try:
                new = rewrite_rowset(self.engine, table, index, tablet, rowset)
            except Exception:
                if live():
                    raise
                return  # dropped meanwhile (TRUNCATE, DROP PARTITION)
            fault_point("index_job_before_swap")  # crash tests: files written, not swapped in
            swap(self.engine, tablet, [rowset], new)  # False (files removed) if it went away

    def _finish_cancel(self, job_id: int, msg: str) -> None:
        """Give the table back its index definitions from before the job; job CANCELLED."""
        cat = self.engine.catalog
        with cat.lock:
            job = cat.alter_job(job_id)
            if job is None or job.state in FINAL_STATES:
                return
            m = Mutation()
            table = cat.table_by_id(job.table_id)
            if table is not None:
                props = [(k, v) for k, v in table.properties if k not in BLOOM_KEYS]
                m.put(replace(table, indexes=job.old_indexes,
                              properties=tuple(props) + job.old_properties))
            m.put(replace(job, state="CANCELLED", msg=msg, finish_time=time.time()))
            cat.commit(m)
