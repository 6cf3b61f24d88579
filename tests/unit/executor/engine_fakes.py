"""In-memory test doubles of the storage layer: a CatalogView and a TabletSource.

`MemoryEngine.create_table(db, name, columns, rows, tablets=..)` registers a DUPLICATE table
whose rows (physical values) are split round-robin over several tablets in two partitions; each
tablet yields small batches, so operators see multi-batch, multi-tablet input.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import threading
from collections.abc import Iterator, Sequence

import numpy as np

from storage.batch import Batch, Column
from storage.catalog.meta import (
    ColumnMeta, DatabaseMeta, DistributionInfo, DistributionType, KeysType,
    MaterializedIndexMeta, PartitionInfo, PartitionMeta, PartitionType, RowsetMeta, TableMeta, TabletMeta,
)
from storage.predicates import evaluate, evaluate_disjunction
from storage.reader import ReadOptions
from storage.types import DataType


class MemoryEngine:
    def __init__(self) -> None:
        self.dbs: dict[str, DatabaseMeta] = {}
        self.tables: dict[tuple[str, str], TableMeta] = {}
        self.parts: dict[int, list[PartitionMeta]] = {}
        self.tablet_list: dict[int, list[TabletMeta]] = {}
        self.data: dict[int, list[tuple[object, ...]]] = {}
        self.read_log: list[ReadOptions] = []
        self._next = 100
        self.batch_rows = 7

    def _id(self) -> int:
        self._next += 1
        return self._next

    def create_database(self, name: str) -> None:
        self.dbs.setdefault(name, DatabaseMeta(self._id(), name))

    def create_table(self, db: str, name: str, columns: Sequence[tuple[str, DataType]],
                     rows: Sequence[tuple[object, ...]], tablets: int = 3,
                     partitions: int = 2) -> TableMeta:
        self.create_database(db)
        tid = self._id()
        cols = tuple(ColumnMeta(n, t, nullable=True, is_key=(i == 0))
                     for i, (n, t) in enumerate(columns))
        meta = TableMeta(
            table_id=tid, db_id=self.dbs[db].db_id, name=name, keys_type=KeysType.DUP_KEYS,
            columns=cols, partition_info=PartitionInfo(PartitionType.UNPARTITIONED),
            distribution=DistributionInfo(DistributionType.RANDOM, (), tablets),
            base_index_id=tid + 1,
        )
        self._next += 1
        self.tables[(db, name)] = meta
        plist, tlist = [], []
        for p in range(partitions):
            pid = self._id()
            plist.append(PartitionMeta(pid, tid, f"p{p}", tablets, visible_version=2 + p))
            for b in range(tablets):
                t = TabletMeta(self._id(), tid, pid, meta.base_index_id, b, 1)
                tlist.append(t)
                self.data[t.tablet_id] = []
        self.parts[tid] = plist
        self.tablet_list[tid] = tlist
        for i, r in enumerate(rows):
            self.data[tlist[i % len(tlist)].tablet_id].append(tuple(r))
        return meta

    # ---- CatalogView -----------------------------------------------------------------------
    def get_database(self, name: str) -> DatabaseMeta | None:
        return self.dbs.get(name)

    def list_databases(self) -> list[DatabaseMeta]:
        return list(self.dbs.values())

    def get_table(self, db: str, name: str) -> TableMeta | None:
        return self.tables.get((db, name))

    def list_tables(self, db: str) -> list[TableMeta]:
        return [t for (d, _), t in self.tables.items() if d == db]

    def partitions(self, table_id: int, temporary: bool = False) -> list[PartitionMeta]:
        if temporary:  # no temporary partitions here
            return []
        return list(self.parts.get(table_id, []))

    def materialized_indexes(self, table_id: int) -> list[MaterializedIndexMeta]:
        meta = next(t for t in self.tables.values() if t.table_id == table_id)
        return [MaterializedIndexMeta(meta.base_index_id, meta.name, meta.column_names,
                                      meta.keys_type, True)]

    def rowsets(self, tablet_id: int, max_version: int | None = None) -> list[RowsetMeta]:
        # one rowset per tablet: its row count is what the planner's statistics read
        return [RowsetMeta(f"mem{tablet_id}", tablet_id, 2, 2, len(self.data[tablet_id]), 0, ())]

    def tablets(self, table_id: int, partition_id: int | None = None,
                index_id: int | None = None) -> list[TabletMeta]:
        return [t for t in self.tablet_list.get(table_id, [])
                if (partition_id is None or t.partition_id == partition_id)
                and (index_id is None or t.index_id == index_id)]

    # ---- TabletSource ----------------------------------------------------------------------
    def reading(self) -> AbstractContextManager[None]:
        return nullcontext()

    def read_tablet(self, tablet: TabletMeta, version: int, options: ReadOptions,
                    stats: object = None) -> Iterator[Batch]:
        self.read_log.append(options)
        meta = next(t for t in self.tables.values() if t.table_id == tablet.table_id)
        idx = [meta.column_names.index(c) for c in options.columns]
        types = [meta.columns[i].type for i in idx]
        rows = self.data[tablet.tablet_id]
        step = self.batch_rows
        for start in range(0, len(rows), step):
            chunk = rows[start: start + step]
            cols = tuple(Column.from_physical(t, [r[i] for r in chunk]) for t, i in zip(types, idx))
            batch = Batch(tuple(options.columns), cols)
            # like storage: exactly the rows that satisfy every pushed predicate and disjunction
            def column(name: str, chunk: list = chunk) -> Column:  # type: ignore[type-arg]
                i = meta.column_names.index(name)
                return Column.from_physical(meta.columns[i].type, [r[i] for r in chunk])

            mask = np.ones(len(chunk), np.bool_)
            for p in options.predicates:
                mask &= evaluate(p, column(p.column))
            for d in options.disjunctions:
                mask &= evaluate_disjunction(d, column, len(chunk))
            yield batch if mask.all() else batch.filter(mask)


def session(db: str | None = "db", variables: dict[str, object] | None = None,
            cancel: threading.Event | None = None):  # type: ignore[no-untyped-def]
    from server.variables import GlobalVariables, SessionVariables, query_options
    from sql.options import SessionContext
    from storage.errors import ShaleError

    values = {"version_comment": "Doris version doris-2.1.7 (ShaleDB)", "version": "5.7.99",
              "autocommit": True, "sql_mode": "ONLY_FULL_GROUP_BY"}
    values.update(variables or {})
    registry = SessionVariables(GlobalVariables())  # the options: defaults and parsers as SET's
    for name, value in (variables or {}).items():
        registry.set(name, value)

    def lookup(name: str) -> object:
        key = name.lower()
        if key not in values:
            raise ShaleError(f"Unknown system variable '{name}'", 1193)
        return values[key]

    return SessionContext(db, 7, "root", "'root'@'%'", query_options(registry),
                          cancel or threading.Event(), lookup)


def run(engine: MemoryEngine, sql: str, db: str | None = "db",
        **kw: object) -> tuple[list[str], list[tuple]]:  # type: ignore[type-arg]
    """Plan and execute `sql`; returns (column names, rows of physical values)."""
    import sqlglot

    from executor.query import execute
    from planner.query import plan_select

    ctx = kw.pop("ctx", None) or session(db, **kw)
    ast = sqlglot.parse_one(sql, read="doris")
    prepared = plan_select(ast, engine, ctx, sql=sql)
    result = execute(prepared, engine, ctx)
    rows: list[tuple] = []
    for b in result.batches:
        rows.extend(b.rows())
    return result.names, rows
