"""Delete versions: publishing `DELETE FROM t WHERE ...` as a new version of each partition.

A DELETE writes no data files. Every tablet (of every materialized index) of each affected
partition gets a rowset with no files and the delete conditions; the partition's visible version
advances in the same catalog transaction, so readers see the delete all at once. Readers hide
rows of LOWER versions that match every condition (`storage/reader.py`); rows loaded later are
not affected, as in Doris. Upstream: Doris `DeleteHandler`, delete predicates on rowsets.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import replace

from storage.catalog.meta import (
    DatabaseMeta,
    DeleteCondition,
    MaterializedIndexMeta,
    PartitionMeta,
    RowsetMeta,
    TableMeta,
    TxnMeta,
    TxnStatus,
)
from storage.catalog.mv import key_for_base_column
from storage.catalog.repository import Mutation
from storage.engine import StorageEngine
from storage.errors import DorisError


def publish_delete(
    engine: StorageEngine, db: DatabaseMeta, table: TableMeta, partitions: Sequence[PartitionMeta],
    conditions: Sequence[DeleteCondition], condition_text: str,
) -> TxnMeta:
    cat = engine.catalog
    engine.compaction.admit_load(
        t.tablet_id for p in partitions
        for t in cat.tablets(table.table_id, partition_id=p.partition_id))
    txn_id = cat.next_id()
    label = f"delete_{uuid.uuid4()}"
    now = time.time()
    with cat.lock:
        # temporary partitions too: DELETE FROM t TEMPORARY PARTITION (tp) WHERE ..
        current = {p.partition_id: p for p in cat.all_partitions(table.table_id)}
        if cat.table_by_id(table.table_id) is None:
            raise DorisError(f"Table [{table.name}] was dropped during the delete")
        m = Mutation()
        # a materialized view names a base key column `mv_<k>` (storage/catalog/mv.py)
        per_index = {ix.index_id: _conditions_on(ix, conditions)
                     for ix in cat.materialized_indexes(table.table_id)}
        for part in partitions:
            live = current.get(part.partition_id)
            if live is None:
                raise DorisError(f"Partition [{part.name}] was dropped during the delete")
            version = live.visible_version + 1
            for tablet in cat.tablets(table.table_id, partition_id=part.partition_id):
                m.put(RowsetMeta(
                    rowset_id=f"{txn_id}_{tablet.tablet_id}", tablet_id=tablet.tablet_id,
                    start_version=version, end_version=version, num_rows=0, data_size=0,
                    files=(), create_time=now,
                    delete_predicates=per_index.get(tablet.index_id, tuple(conditions)),
                ))
            m.put(replace(live, visible_version=version, visible_version_time=now))
        txn = TxnMeta(
            txn_id=txn_id, db_id=db.db_id, label=label, table_ids=(table.table_id,),
            status=TxnStatus.VISIBLE, create_time=now, finish_time=time.time(), kind="DELETE",
            detail=condition_text, partition_names=tuple(p.name for p in partitions),
        )
        m.put(txn)
        cat.commit(m)
    return txn


def _conditions_on(index: MaterializedIndexMeta, conditions: Sequence[DeleteCondition]
                   ) -> tuple[DeleteCondition, ...]:
    """The conditions in `index`'s column names (the binder checked every index has them)."""
    out = []
    for c in conditions:
        name = key_for_base_column(index, c.column)
        if name is None:
            raise DorisError(f"Column [{c.column}] of the delete condition does not exist in "
                             f"rollup [{index.name}]")
        out.append(replace(c, column=name))
    return tuple(out)
