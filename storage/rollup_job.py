"""ALTER TABLE ADD ROLLUP as an asynchronous job: build a rollup's tablets from existing data.

Design (shadow index, per-version back-fill):
1. `create_jobs` (in the ALTER statement, under the catalog lock) adds the rollup as a SHADOW
   materialized index with one tablet per partition x bucket, plus a PENDING `AlterJobMeta`,
   in one catalog transaction. From then on every load writes the shadow index too (LoadTxn
   writes every index of the table) and every DELETE adds its delete version to it; queries
   never read a SHADOW index (planner/rules/choose_rollup.py).
2. A background thread (`RollupJobs`) moves the job to WAITING_TXN and stays there until every
   load of the table that began before the job (txn id below the job's watershed
   `transaction_id`; such a load does not write the shadow index) has published or failed
   (`storage.txn.RunningTxns`). Then RUNNING converts
   every published base rowset whose version the shadow tablet lacks: it reads that one rowset
   (already merged by the base keys), projects the rollup's columns and writes a rollup rowset
   with the same version (the rollup's MemTable sorts / pre-aggregates by the rollup keys).
   Delete versions are copied as they are.
3. Finish, under the catalog lock: convert any version still missing (published while the
   back-fill ran without the shadow: e.g. a DELETE or a tablet replaced by TRUNCATE), then
   publish all converted rowsets, flip the index to NORMAL and the job to FINISHED in ONE
   catalog transaction, so the rollup becomes visible atomically with every version present.
A version is converted only when the shadow tablet lacks it, and loads that began after the
job wrote the shadow in their own version, so no row is lost or counted twice.
Restart: the job's state lives in the catalog; unfinished jobs are run again from step 2 (only
two-phase loads precommitted before the crash are left to wait for; converted-but-unpublished
files are garbage collected at start). CANCEL ALTER TABLE ROLLUP and
failures drop the shadow index and mark the job CANCELLED with a message. The thread, cancel
and state handling is storage/alter_job_runner.py, shared with the index jobs.
Upstream: Doris `MaterializedViewHandler`, `RollupJobV2` (PENDING/WAITING_TXN/RUNNING/FINISHED).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

from storage.alter_job_runner import FINAL_STATES, AlterJobRunner, JobCancelled
from storage.catalog.meta import (
    AlterJobMeta,
    MaterializedIndexMeta,
    RowsetMeta,
    TableMeta,
    TabletMeta,
)
from storage.catalog.mv import key_for_base_column
from storage.catalog.repository import Mutation
from storage.derived_columns import project_to_index
from storage.engine import StorageEngine
from storage.faults import fault_point
from storage.reader import ReadOptions, TabletReader
from storage.rowset import RowsetWriter


def _on_index(index: MaterializedIndexMeta, rowset: RowsetMeta) -> RowsetMeta | None:
    """A delete version's conditions in `index`'s column names (a materialized view names a
    base key `mv_k`), or None when the index lacks a column they test."""
    conds = []
    for c in rowset.delete_predicates:
        name = key_for_base_column(index, c.column)
        if name is None:
            return None
        conds.append(replace(c, column=name))
    return replace(rowset, delete_predicates=tuple(conds))


def convert_rowset(
    engine: StorageEngine,
    table: TableMeta,
    src_index: MaterializedIndexMeta,
    src_tablet: TabletMeta,
    rowset: RowsetMeta,
    dst_index: MaterializedIndexMeta,
    dst_tablet: TabletMeta,
) -> RowsetMeta | None:
    """The rollup rowset (same version) holding `rowset`'s rows projected onto `dst_index`, or
    None for a delete version the rollup cannot express. Delete versions published above
    `rowset` are applied while reading it (a delete naming a column the rollup lacks can only
    be honoured that way); delete versions on rollup columns are copied as well.
    Files are written and fsynced but invisible until the returned meta is published."""
    rowset_id = f"rollup_{uuid.uuid4().hex}"
    if not rowset.files:
        on_index = _on_index(dst_index, rowset) if rowset.delete_predicates else None
        if on_index is None:
            return None  # already applied to the older rows it hides
        return replace(
            on_index, rowset_id=rowset_id, tablet_id=dst_tablet.tablet_id, create_time=time.time()
        )
    deletes = [
        r
        for r in engine.catalog.rowsets(src_tablet.tablet_id)
        if r.delete_predicates and not r.files and r.start_version > rowset.end_version
    ]
    single = replace(rowset, delete_predicates=())
    reader = TabletReader(
        engine.backend_root(src_tablet.backend_id),
        table,
        src_index,
        [single, *deletes],
        # a materialized view computes its columns from the base ones (storage/derived_columns)
        ReadOptions(columns=src_index.columns if dst_index.schema else dst_index.columns),
    )
    writer = RowsetWriter(
        engine.backend_root(dst_tablet.backend_id),
        dst_tablet.tablet_id,
        rowset_id,
        dst_index,
        table,
        write_buffer_size=engine.compaction_config.write_buffer_size,
    )
    try:
        for batch in reader:
            writer.add_batch(project_to_index(engine, table, dst_index, batch))
        meta = writer.build()
    except BaseException:
        writer.discard()  # segments flushed before the error; nothing references them
        raise
    return replace(meta, start_version=rowset.start_version, end_version=rowset.end_version)


def missing_versions(
    engine: StorageEngine, src_tablet: TabletMeta, dst_tablet: TabletMeta, done: set[int]
) -> list[RowsetMeta]:
    """Published source rowsets whose version the destination tablet lacks (and that are not
    already converted in `done`, a set of start versions)."""
    have = {r.start_version for r in engine.catalog.rowsets(dst_tablet.tablet_id)} | done
    return [
        r
        for r in engine.catalog.rowsets(src_tablet.tablet_id)
        if r.start_version not in have and (r.files or r.delete_predicates)
    ]


class RollupJobs(AlterJobRunner):
    """The rollup jobs of one engine: runs each on its own daemon thread."""

    JOB_TYPE = "ROLLUP"

    def _work(self, job: AlterJobMeta) -> None:
        self._publish(job, self._backfill(job))

    def _pairs(self, job: AlterJobMeta) -> list[tuple[TabletMeta, TabletMeta]]:
        """(base tablet, shadow tablet) of the same partition and bucket."""
        cat = self.engine.catalog
        base = {
            (t.partition_id, t.bucket_seq): t
            for t in cat.tablets(job.table_id, index_id=job.base_index_id)
        }
        return [
            (base[(t.partition_id, t.bucket_seq)], t)
            for t in cat.tablets(job.table_id, index_id=job.rollup_index_id)
            if (t.partition_id, t.bucket_seq) in base
        ]

    def _indexes(
        self, job: AlterJobMeta
    ) -> tuple[TableMeta, MaterializedIndexMeta, MaterializedIndexMeta]:
        cat = self.engine.catalog
        table = cat.table_by_id(job.table_id)
        if table is None:
            raise JobCancelled(f"Table[{job.table_name}] does not exist")
        by_id = {ix.index_id: ix for ix in cat.materialized_indexes(job.table_id)}
        if job.base_index_id not in by_id or job.rollup_index_id not in by_id:
            raise JobCancelled(f"Rollup index[{job.rollup_index_name}] does not exist")
        return table, by_id[job.base_index_id], by_id[job.rollup_index_id]

    def _backfill(self, job: AlterJobMeta) -> dict[int, list[RowsetMeta]]:
        table, src, dst = self._indexes(job)
        pairs = self._pairs(job)
        converted: dict[int, list[RowsetMeta]] = {}
        for i, (base_t, shadow_t) in enumerate(pairs):
            self._check(job)
            out = converted.setdefault(shadow_t.tablet_id, [])
            try:
                for rs in missing_versions(self.engine, base_t, shadow_t, set()):
                    conv = convert_rowset(self.engine, table, src, base_t, rs, dst, shadow_t)
                    out.append(conv if conv is not None else rs)  # rs: handled, not copied
            except Exception:
                live = {
                    t.tablet_id
                    for t in self.engine.catalog.tablets(
                        job.table_id, shadow_t.partition_id, shadow_t.index_id
                    )
                }
                if shadow_t.tablet_id in live:
                    raise
                # TRUNCATE / DROP PARTITION removed this tablet (and its files) meanwhile; the
                # publish step converts whatever a replacement tablet misses.
                converted.pop(shadow_t.tablet_id, None)
            job = self._set(job, progress=f"{i + 1}/{len(pairs)}")
            fault_point("rollup_job_running")  # crash tests: kill -9 with the job half done
        return converted

    def _publish(self, job: AlterJobMeta, converted: dict[int, list[RowsetMeta]]) -> None:
        cat = self.engine.catalog
        with cat.lock:
            self._check(job)
            table, src, dst = self._indexes(job)
            m = Mutation()
            for base_t, shadow_t in self._pairs(job):
                done = converted.get(shadow_t.tablet_id, [])
                for rs in done:
                    if rs.tablet_id == shadow_t.tablet_id:
                        m.put(rs)
                for rs in missing_versions(
                    self.engine, base_t, shadow_t, {r.start_version for r in done}
                ):
                    conv = convert_rowset(self.engine, table, src, base_t, rs, dst, shadow_t)
                    if conv is not None:
                        m.put(conv)
            m.put(replace(dst, state="NORMAL"))
            current = cat.alter_job(job.job_id) or job
            m.put(
                replace(current, state="FINISHED", finish_time=time.time(), msg="", progress="N/A")
            )  # Doris shows done/total only while RUNNING
            cat.commit(m)

    def _finish_cancel(self, job_id: int, msg: str) -> None:
        """Drop the shadow index (tablets, rowsets, files) and mark the job CANCELLED."""
        cat = self.engine.catalog
        dropped: list[TabletMeta] = []
        with cat.lock:
            job = cat.alter_job(job_id)
            if job is None or job.state in FINAL_STATES:
                return
            m = Mutation()
            index = next(
                (
                    ix
                    for ix in cat.materialized_indexes(job.table_id)
                    if ix.index_id == job.rollup_index_id
                ),
                None,
            )
            if index is not None and index.state != "NORMAL":
                dropped = drop_index_objects(cat, m, job.table_id, index)
            m.put(replace(job, state="CANCELLED", msg=msg, finish_time=time.time()))
            cat.commit(m)
        self.engine.remove_tablet_files(dropped)


def drop_index_objects(
    cat: object, m: Mutation, table_id: int, index: MaterializedIndexMeta
) -> list[TabletMeta]:
    """Add the deletes of one materialized index (its tablets and rowsets) to `m`."""
    from storage.catalog.catalog import Catalog, delete_tablets

    assert isinstance(cat, Catalog)
    tablets = cat.tablets(table_id, index_id=index.index_id)
    delete_tablets(cat, m, tablets)
    m.delete(index)
    return tablets
