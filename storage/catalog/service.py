"""Catalog mutations of DDL: one catalog transaction per statement, on plain catalog objects.

Owns creating and dropping databases and tables, truncating, creating and dropping partitions
(with their tablets placed on backends), colocate group stability, and the checks that need
only the catalog (existence, "table is under ALTER"). Statement analysis stays in sql/ddl/
(`sql.ddl.ddl_ops` validates a definition, then calls the functions here or in the sibling
modules: `new_table` for CREATE TABLE, `alter_table` for SET properties and ADD ROLLUP,
`colocate` for colocate groups); nothing here imports sql/ (storage is the lowest layer), so
arguments are catalog metadata and plain values.
Errors are user-facing `DorisError`s with Doris' wording (storage/errors.py).

Upstream: Doris `InternalCatalog.createDb/dropDb/dropTable/truncateTable`,
`InternalCatalog.addPartition/dropPartition`, `ColocateTableIndex.markGroupStable`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from storage.catalog.catalog import Catalog, delete_tablets
from storage.catalog.meta import (
    ColocateGroup,
    DatabaseMeta,
    IndexDef,
    MaterializedIndexMeta,
    PartitionMeta,
    PartitionType,
    TableMeta,
    TabletMeta,
)
from storage.catalog.repository import Mutation
from storage.errors import DorisError, ErrorCode, no_database_selected, unknown_database
from storage.index_job import create_index_job, is_running
from storage.retired_tablets import retire_on_commit
from storage.rollup_job import drop_index_objects

if TYPE_CHECKING:
    from storage.engine import StorageEngine


def require_database(engine: StorageEngine, name: str | None) -> DatabaseMeta:
    if not name:
        raise no_database_selected()
    db = engine.catalog.get_database(name)
    if db is None:
        raise unknown_database(name)
    return db


def require_table(engine: StorageEngine, db_name: str | None, name: str) -> TableMeta:
    db = require_database(engine, db_name)
    table = engine.catalog.get_table(db.name, name)
    if table is None:
        raise DorisError(f"Unknown table '{name}'", ErrorCode.BAD_TABLE_ERROR)
    return table


def create_database(engine: StorageEngine, name: str, if_not_exists: bool) -> None:
    with engine.catalog.lock:
        if engine.catalog.get_database(name) is not None or name.lower() == "information_schema":
            if if_not_exists:
                return
            raise DorisError(f"Can't create database '{name}'; database exists",
                             ErrorCode.DB_CREATE_EXISTS)
        m = Mutation()
        m.put(DatabaseMeta(engine.catalog.next_id(), name, time.time()))
        engine.catalog.commit(m)


def drop_database(engine: StorageEngine, name: str, if_exists: bool) -> None:
    cat = engine.catalog
    with cat.lock:
        db = cat.get_database(name)
        if db is None:
            if if_exists:
                return
            raise DorisError(f"Can't drop database '{name}'; database doesn't exist",
                             ErrorCode.DB_DROP_EXISTS)
        m = Mutation()
        tablets: list[TabletMeta] = []
        for table in cat.list_tables(name):
            tablets += delete_table(cat, m, table)
        for group in cat.colocate_groups(db.db_id):
            m.delete(group)
        for txn in cat.txns(db.db_id):
            m.delete(txn)
        for job in cat.alter_jobs(db.db_id):
            m.delete(job)
        m.delete(db)
        cat.commit(m)
    engine.remove_tablet_files(tablets)


def delete_table(cat: Catalog, m: Mutation, table: TableMeta) -> list[TabletMeta]:
    tablets = cat.tablets(table.table_id)
    for t in tablets:
        for rs in cat.rowsets(t.tablet_id):
            m.delete(rs)
        m.delete(t)
    for p in cat.all_partitions(table.table_id):  # temporary ones too
        m.delete(p)
    for idx in cat.materialized_indexes(table.table_id):
        m.delete(idx)
    if table.colocate_group_id is not None:
        group = cat.colocate_group(table.colocate_group_id)
        others = [
            t for t in cat.tables_in_group(table.colocate_group_id) if t.table_id != table.table_id
        ]
        if group is not None and not others:
            m.delete(group)
    m.delete(table)
    return tablets


def drop_table(engine: StorageEngine, db_name: str | None, name: str, if_exists: bool) -> None:
    cat = engine.catalog
    with cat.lock:
        db = require_database(engine, db_name)
        table = cat.get_table(db.name, name)
        if table is None:
            if if_exists:
                return
            raise DorisError(f"Unknown table '{name}' in {db.name}", ErrorCode.UNKNOWN_TABLE_IN_DB)
        m = Mutation()
        tablets = delete_table(cat, m, table)
        cat.commit(m)
    engine.remove_tablet_files(tablets)


def new_partition(
    engine: StorageEngine, m: Mutation, table: TableMeta, indexes: Sequence[MaterializedIndexMeta],
    name: str, buckets: int, replicas: int, group: ColocateGroup | None,
    lower: tuple[str, ...] | None = None, upper: tuple[str, ...] | None = None,
    values: tuple[tuple[str | None, ...], ...] = (),
    storage_medium: str = "HDD", cooldown_time: str = "",
) -> PartitionMeta:
    ids = engine.catalog.next_ids(1 + buckets * len(indexes))
    part = PartitionMeta(
        partition_id=ids[0], table_id=table.table_id, name=name, buckets=buckets, lower=lower,
        upper=upper, list_values=values, visible_version=1, visible_version_time=time.time(),
        replication_num=replicas, storage_medium=storage_medium, cooldown_time=cooldown_time,
    )
    m.put(part)
    tablet_ids = iter(ids[1:])
    for index in indexes:
        if group is not None:
            placement = [group.backends_per_bucket[b][0] for b in range(buckets)]
        else:
            placement = engine.pick_backends(buckets)
        for seq in range(buckets):
            m.put(TabletMeta(next(tablet_ids), table.table_id, part.partition_id,
                             index.index_id, seq, placement[seq]))
    return part


def truncate_table(engine: StorageEngine, db_name: str | None, name: str,
                   partitions: Sequence[str]) -> None:
    """Replace the chosen partitions (all by default) with empty ones of the same definition."""
    cat = engine.catalog
    with cat.lock:
        table = require_table(engine, db_name, name)
        parts = cat.partitions(table.table_id)
        if partitions:
            by_name = {p.name.lower(): p for p in parts}
            chosen = []
            for pn in partitions:
                if pn.lower() not in by_name:
                    raise DorisError(f"Partition {pn} does not exist in table {name}")
                chosen.append(by_name[pn.lower()])
        else:
            chosen = parts
        indexes = cat.materialized_indexes(table.table_id)
        group = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
        m = Mutation()
        dropped: list[TabletMeta] = []
        if not partitions:  # Doris: truncating the whole table drops its temporary partitions
            for p in cat.partitions(table.table_id, temporary=True):
                dropped += delete_partition(cat, m, p)
        for p in chosen:
            dropped += delete_partition(cat, m, p)
            new_partition(engine, m, table, indexes, p.name, p.buckets, p.replication_num, group,
                           p.lower, p.upper, p.list_values, p.storage_medium, p.cooldown_time)
        # queries planned before the truncate keep reading the old tablets until they finish
        cat.commit(m, on_durable=retire_on_commit(engine, dropped))


def delete_partition(cat: Catalog, m: Mutation, part: PartitionMeta) -> list[TabletMeta]:
    tablets = cat.tablets(part.table_id, partition_id=part.partition_id)
    delete_tablets(cat, m, tablets)
    m.delete(part)
    return tablets


def reject_if_dynamic(table: TableMeta) -> None:
    if (table.property("dynamic_partition.enable", "false") or "false").lower() == "true" or (
        table.property("dynamic_partition.time_unit") is not None
        and (table.property("dynamic_partition.enable") or "true").lower() == "true"
    ):
        raise DorisError(
            "Cannot add/drop partition on a Dynamic Partition Table, Use command `ALTER TABLE "
            f"{table.name} SET (\"dynamic_partition.enable\" = \"false\")` firstly."
        )


def drop_partition(engine: StorageEngine, table: TableMeta, name: str, if_exists: bool) -> None:
    cat = engine.catalog
    with cat.lock:
        if table.partition_info.type is PartitionType.UNPARTITIONED:
            raise DorisError(
                f"Table[{table.name}] is not a partitioned table, can not drop partition")
        reject_if_dynamic(table)
        part = next(
            (p for p in cat.partitions(table.table_id) if p.name.lower() == name.lower()), None)
        if part is None:
            if if_exists:
                return
            raise DorisError(f"Error in list of partitions to {name}",
                             ErrorCode.DROP_PARTITION_NON_EXISTENT)
        m = Mutation()
        tablets = delete_partition(cat, m, part)
        # queries planned before the drop keep reading its tablets until they finish
        cat.commit(m, on_durable=retire_on_commit(engine, tablets))


def rollup_job_running(cat: Catalog, table: TableMeta) -> bool:
    return any(j.table_id == table.table_id and j.state not in ("FINISHED", "CANCELLED")
               for j in cat.alter_jobs(table.db_id))


def alter_state(cat: Catalog, table: TableMeta) -> str:
    running = [j for j in cat.alter_jobs(table.db_id)
               if j.table_id == table.table_id and j.state not in ("FINISHED", "CANCELLED")]
    return "SCHEMA_CHANGE" if any(j.job_type != "ROLLUP" for j in running) else "ROLLUP"


def running_rollup_jobs(engine: StorageEngine, table: TableMeta) -> list[int]:
    """CANCEL ALTER TABLE ROLLUP FROM t: the jobs to cancel (Doris' error when there is none)."""
    jobs = [j.job_id for j in engine.catalog.alter_jobs(table.db_id)
            if j.table_id == table.table_id and j.state not in ("FINISHED", "CANCELLED")
            and j.job_type == "ROLLUP"]
    if not jobs:
        raise DorisError(f"Table[{table.name}] is not under ROLLUP. Use 'ALTER TABLE DROP ROLLUP' "
                         "if you want to.")
    return jobs


def set_group_stable(engine: StorageEngine, db_id: int, group_id: int, stable: bool) -> None:
    """Mark a colocate group stable / unstable (Doris `/api/colocate/group_stable` POST /
    DELETE, a debug switch: a single-process engine never rebalances by itself)."""
    cat = engine.catalog
    with cat.lock:
        group = cat.colocate_group(group_id)
        if group is None or group.db_id != db_id:
            raise DorisError(f"Group {db_id}.{group_id} does not exist")
        m = Mutation()
        m.put(replace(group, stable=stable))
        cat.commit(m)


def drop_dynamic_partition(engine: StorageEngine, table_id: int, name: str) -> bool:
    """DROP PARTITION name for the scheduler, one catalog transaction (False: already gone)."""
    cat = engine.catalog
    with cat.lock:
        part = next((p for p in cat.partitions(table_id) if p.name.lower() == name.lower()), None)
        if part is None:
            return False
        remove_partition(engine, part)
    return True


def check_alter_allowed(cat: Catalog, table: TableMeta) -> None:
    """Doris refuses an ALTER while the table runs another ALTER job."""
    jobs = [j for j in cat.alter_jobs(table.db_id)
            if j.table_id == table.table_id and j.state not in ("FINISHED", "CANCELLED")]
    if jobs:
        state = "SCHEMA_CHANGE" if any(is_running(j) for j in jobs) else "ROLLUP"
        raise DorisError(f"Table[{table.name}]'s state({state}) is not NORMAL. Do not allow "
                         "doing ALTER ops")


def running_schema_change_jobs(engine: StorageEngine, table: TableMeta) -> list[int]:
    """CANCEL ALTER TABLE COLUMN FROM t: the jobs to cancel (Doris' error when there is none)."""
    jobs = [j.job_id for j in engine.catalog.alter_jobs(table.db_id)
            if j.table_id == table.table_id and is_running(j)]
    if not jobs:
        raise DorisError(f"Table[{table.name}] is not under SCHEMA_CHANGE.")
    return jobs


# ---- partitions as units (ADD [TEMPORARY] PARTITION, DROP, REPLACE .. WITH TEMPORARY) ----------
def create_partition(
    engine: StorageEngine, table: TableMeta, name: str, buckets: int, replicas: int,
    lower: tuple[str, ...] | None = None, upper: tuple[str, ...] | None = None,
    values: tuple[tuple[str | None, ...], ...] = (), temporary: bool = False,
    storage_medium: str = "HDD", cooldown_time: str = "",
) -> PartitionMeta:
    """Commit one new partition (bounds already resolved and checked by the caller, who holds
    the catalog lock across its checks and this call) with a tablet per index x bucket."""
    cat = engine.catalog
    with cat.lock:
        group = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
        m = Mutation()
        part = new_partition(engine, m, table, cat.materialized_indexes(table.table_id), name,
                             buckets, replicas, group, lower, upper, values, storage_medium,
                             cooldown_time)
        if temporary:
            at = m.puts.index(part)
            part = replace(part, temporary=True)
            m.puts[at] = part
        cat.commit(m)
    return part


def remove_partition(engine: StorageEngine, part: PartitionMeta) -> None:
    """Commit the removal of one partition (formal or temporary) and its tablets; queries planned
    before keep reading the tablets until they finish."""
    cat = engine.catalog
    with cat.lock:
        m = Mutation()
        tablets = delete_partition(cat, m, part)
        cat.commit(m, on_durable=retire_on_commit(engine, tablets))


def swap_partitions(engine: StorageEngine, old: Sequence[PartitionMeta],
                    new: Sequence[PartitionMeta], rename: bool) -> None:
    """REPLACE PARTITION (old..) WITH TEMPORARY PARTITION (new..) in one commit: the old ones are
    dropped, the temporary ones become formal (taking the old names when `rename`)."""
    cat = engine.catalog
    with cat.lock:
        m = Mutation()
        dropped: list[TabletMeta] = []
        for p in old:
            dropped += delete_partition(cat, m, p)
        for i, p in enumerate(new):
            m.put(replace(p, temporary=False, name=old[i].name if rename else p.name))
        # queries planned before the swap keep reading the old tablets until they finish
        cat.commit(m, on_durable=retire_on_commit(engine, dropped))


# ---- materialized indexes and secondary indexes (DROP ROLLUP, index DDL, bloom filters) ---------
def drop_rollups(engine: StorageEngine, table: TableMeta, names: Sequence[str]) -> list[int]:
    """DROP ROLLUP r[, ..] in one commit; a rollup still being built is left to its job: the
    returned job ids to cancel. The tablet files go after the catalog lock is released."""
    cat = engine.catalog
    to_cancel: list[int] = []
    dropped: list[TabletMeta] = []
    with cat.lock:
        indexes = {ix.name.lower(): ix for ix in cat.materialized_indexes(table.table_id)}
        targets = []
        for name in names:
            if name.lower() == table.name.lower():
                raise DorisError("Cannot drop base index by using DROP ROLLUP.")
            ix = indexes.get(name.lower())
            if ix is None:
                raise DorisError(f"Rollup index[{name}] does not exist in table[{table.name}]")
            targets.append(ix)
        m = Mutation()
        for ix in targets:
            if ix.state != "NORMAL":
                job = next((j for j in cat.alter_jobs(table.db_id)
                            if j.rollup_index_id == ix.index_id and j.state not in
                            ("FINISHED", "CANCELLED")), None)
                if job is not None:
                    to_cancel.append(job.job_id)
                    continue
            dropped += drop_index_objects(cat, m, table.table_id, ix)
        cat.commit(m)
    engine.remove_tablet_files(dropped)
    return to_cancel


def start_index_job(engine: StorageEngine, table: TableMeta, indexes: tuple[IndexDef, ...],
                    properties: tuple[tuple[str, str], ...]) -> int | None:
    """Commit the table's new index definitions / bloom filter properties (validated by the
    caller) with the job that rewrites the existing segments; its id while it still has to run,
    None when there was nothing to rewrite."""
    cat = engine.catalog
    with cat.lock:
        m = Mutation()
        job = create_index_job(engine, m, table, indexes, properties)
        cat.commit(m)
    return None if job.state == "FINISHED" else job.job_id
