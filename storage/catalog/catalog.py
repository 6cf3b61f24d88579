"""Catalog: the in-memory view of all metadata, loaded from and written through the repository.

Reads are lock-free lookups in dictionaries; every change goes through `commit(mutation)`, which
writes one SQLite transaction and then updates memory under a lock. Objects are immutable, so a
reader holding a `PartitionMeta` keeps a consistent snapshot (its visible version) while loads
publish newer ones. Publishing adds rowsets before it bumps partition versions, so any version a
reader can see has its rowsets present.
"""

from __future__ import annotations

import operator
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from storage.catalog.meta import (
    AlterJobMeta,
    Backend,
    ColocateGroup,
    DatabaseMeta,
    MaterializedIndexMeta,
    PartitionMeta,
    RoleMeta,
    RowsetMeta,
    TableMeta,
    TabletMeta,
    TxnMeta,
    TxnStatus,
    UserMeta,
)
from storage.catalog.repository import KINDS, CatalogRepository, Mutation, identity

_start_version = operator.attrgetter("start_version")

# Order in which puts reach memory: children before the things that make them visible.
_APPLY_ORDER = ("rowset", "tablet", "index", "colocate", "backend", "db", "table", "partition",
                "txn", "alter_job", "user", "role")


class Catalog:
    def __init__(self, path: Path) -> None:
        self.repo = CatalogRepository(path)
        self._lock = threading.RLock()
        self._objects: dict[str, dict[str, Any]] = defaultdict(dict)
        self._children: dict[tuple[str, int], dict[str, None]] = defaultdict(dict)
        for obj in self.repo.load_all():
            self._put_memory(obj)
        # Called after every commit that adds or removes rowsets, with the tablet ids touched
        # (the compaction producer's wake-up; storage/compaction/scheduler.py).
        self.rowset_listeners: list[Callable[[set[int]], None]] = []
        # Bumped after every commit that changes more than rowsets (DDL, publishes, DELETE,
        # view states, users, backends), once memory shows the change: a plan made when this
        # was `g` may be reused while it is still `g` (server/plan_cache.py). Commits of
        # rowsets alone (compaction, index rewrites) keep every visible version's rows.
        self.generation = 0

    def close(self) -> None:
        self.repo.close()

    # ---- memory indexes ---------------------------------------------------------------------
    def _put_memory(self, obj: Any) -> None:
        kind, ident, parent = identity(obj)
        self._objects[kind][ident] = obj
        if parent is not None:
            self._children[(kind, parent)][ident] = None

    def _delete_memory(self, kind: str, ident: str) -> None:
        obj = self._objects[kind].pop(ident, None)
        if obj is None:
            return
        _, _, parent = identity(obj)
        if parent is not None:
            self._children[(kind, parent)].pop(ident, None)

    def _children_of(self, kind: str, parent: int) -> list[Any]:
        objs = self._objects[kind]
        return [objs[i] for i in list(self._children.get((kind, parent), {})) if i in objs]

    # ---- writes -----------------------------------------------------------------------------
    def next_ids(self, count: int = 1) -> list[int]:
        return self.repo.next_ids(count)

    def next_id(self) -> int:
        return self.repo.next_ids(1)[0]

    def commit(self, mutation: Mutation, on_durable: Callable[[], None] | None = None) -> None:
        """Write `mutation` in one SQLite transaction, then show it in memory. `on_durable`
        runs between the two: after nothing can undo the change, before any reader sees it
        (INSERT OVERWRITE registers the rowsets it replaces there, storage/staged_load.py)."""
        with self._lock:
            self.repo.apply(mutation)
            if on_durable is not None:
                on_durable()
            touched = self._swap_rowsets(mutation)
            for kind, ident in mutation.deletes:
                if kind != "rowset":
                    self._delete_memory(kind, ident)
            for obj in sorted(mutation.puts, key=lambda o: _APPLY_ORDER.index(KINDS[type(o)][0])):
                if not isinstance(obj, RowsetMeta):
                    self._put_memory(obj)
            if any(not isinstance(obj, RowsetMeta) for obj in mutation.puts) or any(
                    kind != "rowset" for kind, _ in mutation.deletes):
                self.generation += 1
        if touched:
            for listener in list(self.rowset_listeners):
                listener(touched)

    def _swap_rowsets(self, mutation: Mutation) -> set[int]:
        """Apply the rowset part of a commit so that a reader listing a tablet's rowsets (no
        lock) sees the set before or the set after, never a state in between: the new rowset
        objects are stored first, then each touched tablet's child index is replaced in one
        assignment, then the removed objects go. (Removing a compaction's or an overwrite's old
        rowsets before adding the new one would show a reader an empty tablet.)"""
        rowsets = self._objects["rowset"]
        gone: dict[int, list[str]] = defaultdict(list)
        for kind, ident in mutation.deletes:
            if kind == "rowset" and ident in rowsets:
                gone[rowsets[ident].tablet_id].append(ident)
        added: dict[int, list[RowsetMeta]] = defaultdict(list)
        for obj in mutation.puts:
            if isinstance(obj, RowsetMeta):
                added[obj.tablet_id].append(obj)
                rowsets[obj.rowset_id] = obj
        for tablet_id in set(gone) | set(added):
            key = ("rowset", tablet_id)
            children = dict(self._children.get(key, {}))
            for ident in gone.get(tablet_id, ()):
                children.pop(ident, None)
            for obj in added.get(tablet_id, ()):
                children[obj.rowset_id] = None
            self._children[key] = children
        for idents in gone.values():
            for ident in idents:
                rowsets.pop(ident, None)
        return set(gone) | set(added)

    @property
    def lock(self) -> threading.RLock:
        """Held by DDL and publish code while they read-validate-commit."""
        return self._lock

    # ---- reads: databases and tables --------------------------------------------------------
    def get_database(self, name: str) -> DatabaseMeta | None:
        for db in self._objects["db"].values():
            if db.name == name:
                return db
        return None

    def database_by_id(self, db_id: int) -> DatabaseMeta | None:
        return self._objects["db"].get(str(db_id))

    def list_databases(self) -> list[DatabaseMeta]:
        return sorted(self._objects["db"].values(), key=lambda d: d.name)

    def get_table(self, db: str, name: str) -> TableMeta | None:
        database = self.get_database(db)
        if database is None:
            return None
        for t in self._children_of("table", database.db_id):
            if t.name == name:
                return t
        return None

    def table_by_id(self, table_id: int) -> TableMeta | None:
        return self._objects["table"].get(str(table_id))

    def list_tables(self, db: str) -> list[TableMeta]:
        database = self.get_database(db)
        if database is None:
            return []
        return sorted(self._children_of("table", database.db_id), key=lambda t: t.name)

    # ---- reads: physical layout -------------------------------------------------------------
    def partitions(self, table_id: int, temporary: bool = False) -> list[PartitionMeta]:
        """Formal partitions (`temporary`: the temporary ones) in range order (by creation id,
        which DDL keeps in range order)."""
        parts = [p for p in self._children_of("partition", table_id) if p.temporary == temporary]
        return sorted(parts, key=lambda p: p.partition_id)

    def all_partitions(self, table_id: int) -> list[PartitionMeta]:
        """Formal and temporary partitions (what publish and DROP TABLE deal with)."""
        return sorted(self._children_of("partition", table_id), key=lambda p: p.partition_id)

    def partition_by_id(self, partition_id: int) -> PartitionMeta | None:
        return self._objects["partition"].get(str(partition_id))

    def materialized_indexes(self, table_id: int) -> list[MaterializedIndexMeta]:
        """Base index first, then rollups in creation order."""
        idx = self._children_of("index", table_id)
        return sorted(idx, key=lambda i: (not i.is_base, i.index_id))

    def tablets(
        self, table_id: int, partition_id: int | None = None, index_id: int | None = None
    ) -> list[TabletMeta]:
        tablets = [
            t
            for t in self._children_of("tablet", table_id)
            if (partition_id is None or t.partition_id == partition_id)
            and (index_id is None or t.index_id == index_id)
        ]
        return sorted(tablets, key=lambda t: (t.partition_id, t.index_id, t.bucket_seq))

    def rowsets(self, tablet_id: int, max_version: int | None = None) -> list[RowsetMeta]:
        # One pass, no intermediate lists: the planner asks for every tablet of every scanned
        # table on each query (LogicalScan.row_count), so this is on a point lookup's path.
        objs = self._objects["rowset"]
        ids = self._children.get(("rowset", tablet_id))
        if not ids:
            return []
        rows = [r for r in map(objs.get, list(ids))
                if r is not None and (max_version is None or r.end_version <= max_version)]
        rows.sort(key=_start_version)
        return rows

    def backends(self) -> list[Backend]:
        return sorted(self._objects["backend"].values(), key=lambda b: b.backend_id)

    def backend(self, backend_id: int) -> Backend:
        return self._objects["backend"][str(backend_id)]

    def colocate_groups(self, db_id: int | None = None) -> list[ColocateGroup]:
        groups = list(self._objects["colocate"].values())
        return [g for g in groups if db_id is None or g.db_id == db_id]

    def colocate_group(self, group_id: int) -> ColocateGroup | None:
        return self._objects["colocate"].get(str(group_id))

    def txns(self, db_id: int) -> list[TxnMeta]:
        return sorted(self._children_of("txn", db_id), key=lambda t: t.txn_id)

    def alter_jobs(self, db_id: int | None = None) -> list[AlterJobMeta]:
        """ALTER TABLE ADD ROLLUP jobs (of one database), oldest first."""
        jobs = list(self._objects["alter_job"].values())
        mine = (j for j in jobs if db_id is None or j.db_id == db_id)
        return sorted(mine, key=lambda j: j.job_id)

    def alter_job(self, job_id: int) -> AlterJobMeta | None:
        return self._objects["alter_job"].get(str(job_id))

    def tablet_by_id(self, tablet_id: int) -> TabletMeta | None:
        return self._objects["tablet"].get(str(tablet_id))

    def all_tablets(self) -> list[TabletMeta]:
        return list(self._objects["tablet"].values())

    def all_rowsets(self) -> list[RowsetMeta]:
        return list(self._objects["rowset"].values())

    def users(self) -> list[UserMeta]:
        """Every user identity (server/privileges/ owns what they mean)."""
        return list(self._objects["user"].values())

    def roles(self) -> list[RoleMeta]:
        return list(self._objects["role"].values())

    def tables_in_group(self, group_id: int) -> list[TableMeta]:
        return [t for t in self._objects["table"].values() if t.colocate_group_id == group_id]

    def txn_by_label(self, db_id: int, label: str) -> TxnMeta | None:
        """The txn holding `label` in the database: an aborted txn frees its label (Doris)."""
        for t in self._children_of("txn", db_id):
            if t.label == label and t.status is not TxnStatus.ABORTED:
                return t
        return None

    def txns_by_label(self, db_id: int, label: str) -> list[TxnMeta]:
        """Every txn that used `label` (aborted ones included), oldest first."""
        return sorted((t for t in self._children_of("txn", db_id) if t.label == label),
                      key=lambda t: t.txn_id)

    def txn_by_id(self, txn_id: int) -> TxnMeta | None:
        return self._objects["txn"].get(str(txn_id))

    def precommitted_txns(self) -> list[TxnMeta]:
        """Two-phase loads waiting for their commit or abort (their files are not garbage)."""
        return sorted((t for t in self._objects["txn"].values()
                       if t.status is TxnStatus.PRECOMMITTED), key=lambda t: t.txn_id)


def delete_tablets(cat: Catalog, m: Mutation, tablets: list[TabletMeta]) -> None:
    """Add the deletes of `tablets` and of all their rowsets to `m` (dropping a partition or
    a materialized index)."""
    for t in tablets:
        for rs in cat.rowsets(t.tablet_id):
            m.delete(rs)
        m.delete(t)
