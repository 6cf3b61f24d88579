"""Loads that publish more than rows: a new table with its data (CTAS) and a partition swap
(INSERT OVERWRITE), each in the one catalog transaction of `LoadTxn.commit`.

- `TableCreatingLoad` writes into a table that exists only in memory (`StagedTable`: the
  TableMeta, its materialized indexes, partitions and tablets built by DDL analysis). Its publish
  puts the table, its layout and its rowsets at once, so the table appears with its rows or not
  at all; a failure before the publish leaves nothing but unreferenced files, which the load
  deletes (or the start-up GC does after a crash).
- `OverwriteLoad` loads into an existing table and at publish *replaces* the contents of the
  target partitions: every live rowset of their tablets (all indexes) goes, one rowset per
  tablet holding the new rows takes versions [first, v+1], and each partition's visible version
  becomes v+1. The replaced rowsets are retired as stale rowsets, exactly as compaction retires
  its inputs (storage/compaction/stale.py): a query planned at version v still reads the old
  rows (its path expands the new rowset into the retired ones), a query at v+1 reads only the
  new rows; nobody sees a mix or an empty table, and the old files go once no reader needs them.

Upstream: Doris `CreateTableCommand` (CTAS) and `InsertOverwriteTableCommand`, which build a
temporary table / temporary partitions and swap them in with `replacePartition`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from storage.catalog.meta import (
    ColocateGroup,
    DatabaseMeta,
    MaterializedIndexMeta,
    PartitionMeta,
    PendingRowset,
    RowsetMeta,
    TableMeta,
    TabletMeta,
    TxnMeta,
    TxnStatus,
)
from storage.catalog.repository import Mutation
from storage.engine import StorageEngine
from storage.errors import DorisError, ErrorCode
from storage.txn import LoadTxn, _follow_tablet_move, put_created_partitions


def _commit_visible(load: LoadTxn, m: Mutation, txn: TxnMeta,
                    on_durable: Callable[[], None] | None = None) -> TxnMeta:
    """Record the txn VISIBLE with the changes `m` in one catalog transaction (the caller
    holds the catalog lock); from here on only the start-up GC may delete the load's files."""
    done = replace(txn, status=TxnStatus.VISIBLE, finish_time=time.time())
    m.put(done)
    load._files.begin_publish()
    load.catalog.commit(m, on_durable)
    return done


@dataclass(frozen=True, slots=True)
class StagedTable:
    """A table built by CREATE TABLE analysis and not yet in the catalog."""

    table: TableMeta
    indexes: tuple[MaterializedIndexMeta, ...]
    partitions: tuple[PartitionMeta, ...]
    tablets: tuple[TabletMeta, ...]
    new_group: ColocateGroup | None = None  # a colocate group this table creates


class TableExists(DorisError):
    """The name was taken while the CTAS ran (checked again at publish)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Table '{name}' already exists", ErrorCode.TABLE_EXISTS_ERROR)


class TableCreatingLoad(LoadTxn):
    def __init__(self, engine: StorageEngine, db: DatabaseMeta, staged: StagedTable,
                 label: str | None = None) -> None:
        self.staged = staged
        super().__init__(engine, db, staged.table, label=label)

    def _layout(self) -> tuple[list[PartitionMeta], list[MaterializedIndexMeta], list[TabletMeta]]:
        s = self.staged
        return list(s.partitions), list(s.indexes), list(s.tablets)

    def _publish(self, txn: TxnMeta, pending: list[PendingRowset]) -> TxnMeta:
        s = self.staged
        now = time.time()
        if self.catalog.database_by_id(self.db.db_id) is None:
            raise DorisError(f"Unknown database '{self.db.name}'")
        if any(t.name == s.table.name for t in self.catalog.list_tables(self.db.name)):
            raise TableExists(s.table.name)
        if s.table.colocate_group_id is not None and s.new_group is None and \
                self.catalog.colocate_group(s.table.colocate_group_id) is None:
            raise DorisError(f"Colocate group of table [{s.table.name}] was dropped meanwhile")
        m = Mutation()
        if s.new_group is not None:
            m.put(s.new_group)
        for obj in (*s.indexes, *s.tablets):
            m.put(obj)
        # AUTO PARTITION: the partitions the rows needed are created with the table
        created = [part for part, _ in self._created.values()]
        for _, tablets in self._created.values():
            for obj in tablets:
                m.put(obj)
        version = {p.partition_id: p.visible_version + (p.partition_id in self._touched)
                   for p in (*s.partitions, *created)}
        for p in (*s.partitions, *created):
            if p.partition_id in self._touched:
                p = replace(p, visible_version=version[p.partition_id], visible_version_time=now)
            m.put(p)
        for written in pending:
            if written.rowset.num_rows:
                v = version[written.partition_id]
                m.put(replace(written.rowset, start_version=v, end_version=v))
        m.put(replace(s.table, create_time=now))
        return _commit_visible(self, m, txn)


class OverwriteLoad(LoadTxn):
    """`partitions` limits the rows to those partitions (INSERT OVERWRITE .. PARTITION (..)),
    which are also the ones replaced; `auto_detect` (PARTITION (*)) replaces only the partitions
    the new rows fall into; neither: every partition of the table is replaced."""

    def __init__(self, engine: StorageEngine, db: DatabaseMeta, table: TableMeta,
                 partitions: Sequence[str] | None = None, auto_detect: bool = False,
                 label: str | None = None) -> None:
        super().__init__(engine, db, table, label=label, label_prefix="insert",
                         partitions=partitions or None)
        self._auto_detect = auto_detect
        names = {n.lower() for n in partitions or ()}
        self._targets = {p.partition_id for p in self.partitions
                         if not names or p.name.lower() in names}
        self._index_ids = {i.index_id for i in self.indexes}
        self._retired: list[tuple[TabletMeta, list[RowsetMeta], RowsetMeta]] = []

    def _publish(self, txn: TxnMeta, pending: list[PendingRowset]) -> TxnMeta:
        cat = self.catalog
        tid = self.table.table_id
        now = time.time()
        if cat.table_by_id(tid) is None:
            raise DorisError(f"Table [{self.table.name}] was dropped during the load")
        if {i.index_id for i in cat.materialized_indexes(tid)} != self._index_ids:
            raise DorisError(f"The rollups of table [{self.table.name}] changed during the "
                             "INSERT OVERWRITE; run it again")
        m = Mutation()
        # AUTO PARTITION: partitions created for the new rows are added, and replaced (empty)
        added = put_created_partitions(cat, self.table, m, list(self._created.values()))
        # temporary partitions too: INSERT OVERWRITE TABLE t TEMPORARY PARTITION (tp) ..
        current = {p.partition_id: p for p in cat.all_partitions(tid)}
        current.update((p.partition_id, p) for p in added)
        new_tablets = {pid: tablets for pid, (_, tablets) in self._created.items()}
        targets = self._touched if self._auto_detect else self._targets | set(new_tablets)
        new_rowset = {p.rowset.tablet_id: p for p in pending if p.rowset.num_rows}
        self._retired = []
        for pid in sorted(targets):
            part = current.get(pid)
            if part is None:
                raise DorisError(
                    f"Partition of table [{self.table.name}] was dropped during the load")
            version = part.visible_version + 1
            for tablet in cat.tablets(tid, partition_id=pid) or new_tablets.get(pid, ()):
                old = cat.rowsets(tablet.tablet_id)  # also a concurrent load's: replaced too
                first = min((r.start_version for r in old), default=version)
                written = new_rowset.get(tablet.tablet_id)
                if written is None:
                    if not old:
                        continue  # empty before and after: nothing to replace
                    # No new rows here: an empty rowset marks the versions the old ones held.
                    meta = RowsetMeta(f"o{uuid.uuid4().hex}", tablet.tablet_id, first, version,
                                      0, 0, (), create_time=time.time())
                else:
                    meta = written.rowset
                    _follow_tablet_move(self.engine, meta, written.backend_id, tablet.backend_id)
                out = replace(meta, start_version=first, end_version=version)
                for r in old:
                    m.delete(r)
                m.put(out)
                self._retired.append((tablet, old, out))
            m.put(replace(part, visible_version=version, visible_version_time=now))
        return _commit_visible(self, m, txn, self._retire_replaced)

    def _retire_replaced(self) -> None:
        """Readers of the previous version read the replaced rowsets until they finish:
        registered before the new rowsets become visible, so no reader finds the new rowset
        without the path back to the old ones."""
        for tablet, old, out in self._retired:
            if old:
                root = self.engine.backend_root(tablet.backend_id)
                self.engine.stale_rowsets.retire(root, old, out)
        self._retired = []
