"""ALTER TABLE's catalog half for table properties and ADD ROLLUP: one catalog transaction each.

- `set_table_properties`: the table's new property set (validated by `sql.ddl.ddl_ops`), with a
  change of colocate group when "colocate_with" changes: tablets whose bucket belongs on
  another backend have their files copied there before the catalog switches, and the old copies
  removed after (storage/tablet_move.py).
- `add_rollup_indexes`: each new rollup as a SHADOW materialized index with its tablets (next
  to the base tablet of the same bucket) plus a PENDING rollup job that storage/rollup_job.py
  runs.
Statement analysis (known keys, Doris' messages about values, rollup column rules) stays in
sql/ddl; the checks here need only the catalog.
Upstream: Doris `Env.modifyTableColocate`, `MaterializedViewHandler.processBatchAddRollup`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from storage.catalog.colocate import change_colocate_group
from storage.catalog.meta import (
    AlterJobMeta,
    ColocateGroup,
    MaterializedIndexMeta,
    PartitionMeta,
    TableMeta,
    TabletMeta,
)
from storage.catalog.new_table import NewIndex
from storage.catalog.repository import Mutation
from storage.catalog.service import alter_state, rollup_job_running
from storage.errors import DorisError
from storage.tablet_move import copy_tablets, remove_old_copies

if TYPE_CHECKING:
    from storage.engine import StorageEngine


def set_table_properties(engine: StorageEngine, table: TableMeta,
                         properties: tuple[tuple[str, str], ...], colocate_with: str | None
                         ) -> None:
    """Commit `table` with `properties`; `colocate_with` (not None) also moves it to that
    colocate group ("" leaves its group)."""
    if colocate_with is None:
        _commit_properties(engine, table, properties, None)
        return
    # A colocate move copies the tablets' files: no compaction may swap rowsets meanwhile
    # (taken before the catalog lock, which a finishing compaction needs to swap).
    ids = [t.tablet_id for t in engine.catalog.tablets(table.table_id)]
    with engine.compaction.exclusive(ids):
        _commit_properties(engine, table, properties, colocate_with)


def _commit_properties(engine: StorageEngine, table: TableMeta,
                       properties: tuple[tuple[str, str], ...], colocate_with: str | None) -> None:
    cat = engine.catalog
    moved: list[tuple[TabletMeta, int]] = []
    with cat.lock:
        m = Mutation()
        if colocate_with is not None:
            table, moved = change_colocate_group(engine, m, table, colocate_with)
        copy_tablets(engine, moved)  # durable copies before the catalog switches (crash-safe)
        m.put(replace(table, properties=properties))
        cat.commit(m)
    remove_old_copies(engine, moved)  # a crash before this: the GC removes the old copies


@dataclass(frozen=True, slots=True)
class NewRollup:
    """A rollup to add: its index (columns, keys, short key) and its job's timeout (seconds)."""

    index: NewIndex
    timeout: int


def check_no_alter_running(engine: StorageEngine, table: TableMeta) -> None:
    """ADD ROLLUP is refused while the table runs another ALTER job (Doris' wording)."""
    cat = engine.catalog
    if rollup_job_running(cat, table):
        raise DorisError(f"Table[{table.name}]'s state({alter_state(cat, table)}) is not "
                         "NORMAL. Do not allow doing ALTER ops")


def add_rollup_indexes(engine: StorageEngine, table: TableMeta, rollups: Sequence[NewRollup]
                       ) -> list[int]:
    """Create, in one catalog transaction, each rollup as a SHADOW index with its tablets plus a
    PENDING job; returns the job ids (the caller starts them)."""
    cat = engine.catalog
    with cat.lock:
        table = cat.table_by_id(table.table_id) or table
        check_no_alter_running(engine, table)
        base_index = next(ix for ix in cat.materialized_indexes(table.table_id) if ix.is_base)
        group = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
        m = Mutation()
        now = time.time()
        job_ids = []
        for rollup in rollups:
            new = rollup.index
            index_id, job_id = cat.next_ids(2)
            index = MaterializedIndexMeta(
                index_id=index_id, name=new.name, columns=new.columns,
                keys_type=new.keys_type or table.keys_type, is_base=False,
                table_id=table.table_id, keys=new.keys,
                short_key_column_count=new.short_key_column_count, create_time=now,
                state="SHADOW", schema=new.schema,
            )
            m.put(index)
            for part in cat.partitions(table.table_id):
                _add_index_tablets(engine, m, table, part, index, group)
            m.put(AlterJobMeta(
                job_id=job_id, db_id=table.db_id, table_id=table.table_id, table_name=table.name,
                base_index_id=base_index.index_id, base_index_name=base_index.name,
                rollup_index_id=index_id, rollup_index_name=new.name, create_time=now,
                transaction_id=cat.next_id(), timeout=rollup.timeout,
            ))
            job_ids.append(job_id)
        cat.commit(m)
    return job_ids


def _add_index_tablets(engine: StorageEngine, m: Mutation, table: TableMeta, part: PartitionMeta,
                       index: MaterializedIndexMeta, group: ColocateGroup | None) -> None:
    """One tablet per bucket of `part` for `index`, on the backend of the base tablet of the same
    bucket (Doris places a rollup replica next to its base replica)."""
    base = {t.bucket_seq: t for t in engine.catalog.tablets(table.table_id, part.partition_id)
            if t.index_id == table.base_index_id}
    ids = engine.catalog.next_ids(part.buckets)
    fallback = engine.pick_backends(part.buckets)
    for seq, tablet_id in enumerate(ids):
        if group is not None:
            be = group.backends_per_bucket[seq][0]
        elif seq in base:
            be = base[seq].backend_id
        else:
            be = fallback[seq]
        m.put(TabletMeta(tablet_id, table.table_id, part.partition_id, index.index_id, seq, be))
