"""CREATE TABLE's catalog half: a new table's catalog objects (table, materialized indexes,
partitions, one tablet per partition x index x bucket placed on backends, and a colocate group
it creates), staged with fresh ids and then committed in one catalog transaction.

The caller (`sql.ddl.ddl_ops`) analyses the statement into a `NewTable`: columns, key and
short-key columns of each index, resolved partition bounds, replica count. Nothing here parses
SQL or properties; the checks here are the ones that need the catalog (database and table
existence, the colocate group schema). CTAS stages the objects and publishes them with its rows
(storage/staged_load.py); CREATE TABLE commits them at once.
Upstream: Doris `InternalCatalog.createOlapTable`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from storage.catalog.colocate import join_or_create_group
from storage.catalog.meta import (
    ColumnMeta,
    DatabaseMeta,
    DistributionInfo,
    IndexDef,
    KeysType,
    MaterializedIndexMeta,
    PartitionInfo,
    PartitionMeta,
    PartitionType,
    TableMeta,
    TabletMeta,
)
from storage.catalog.repository import Mutation
from storage.catalog.service import new_partition, require_database
from storage.errors import DorisError, ErrorCode
from storage.staged_load import StagedTable

if TYPE_CHECKING:
    from storage.engine import StorageEngine


@dataclass(frozen=True, slots=True)
class NewIndex:
    """A materialized index to create (a new table's rollup, or ADD ROLLUP): its columns in
    order, its sort-key columns and the short-key prefix length, as DDL analysis decided."""

    name: str
    columns: tuple[str, ...]
    keys: tuple[str, ...]
    short_key_column_count: int
    # CREATE MATERIALIZED VIEW: the view's own columns (MaterializedIndexMeta.schema) and keys
    # type (AGG_KEYS when it aggregates); None / () for a rollup of the table's columns
    schema: tuple[ColumnMeta, ...] = ()
    keys_type: KeysType | None = None


@dataclass(frozen=True, slots=True)
class NewPartition:
    """A partition with its bounds already resolved and checked against its siblings."""

    name: str
    lower: tuple[str, ...] | None = None
    upper: tuple[str, ...] | None = None
    values: tuple[tuple[str | None, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class NewTable:
    """An analysed CREATE TABLE. `partitions` is empty for an unpartitioned table (which gets
    one partition named after it); `colocate_with` is "" when the table joins no group."""

    db: str | None
    name: str
    if_not_exists: bool
    keys_type: KeysType
    columns: tuple[ColumnMeta, ...]
    base_index: NewIndex
    rollups: tuple[NewIndex, ...]
    partition_info: PartitionInfo
    partitions: tuple[NewPartition, ...]
    distribution: DistributionInfo
    indexes: tuple[IndexDef, ...]
    properties: tuple[tuple[str, str], ...]
    comment: str
    replicas: int
    colocate_with: str


def database_for_new_table(engine: StorageEngine, db_name: str | None, name: str,
                           if_not_exists: bool) -> DatabaseMeta | None:
    """The database to create table `name` in; None when the table exists and IF NOT EXISTS was
    given. Doris' errors for an unknown database and an existing table."""
    db = require_database(engine, db_name)
    if engine.catalog.get_table(db.name, name) is not None:
        if if_not_exists:
            return None
        raise DorisError(f"Table '{name}' already exists", ErrorCode.TABLE_EXISTS_ERROR)
    return db


def stage_table(engine: StorageEngine, request: NewTable) -> StagedTable | None:
    """Every catalog object of the new table (ids taken, tablets placed), not yet committed.
    None when the table exists and IF NOT EXISTS was given."""
    cat = engine.catalog
    with cat.lock:
        db = database_for_new_table(engine, request.db, request.name, request.if_not_exists)
        if db is None:
            return None
        table_id, base_id = cat.next_ids(2)
        now = time.time()
        table = TableMeta(
            table_id=table_id, db_id=db.db_id, name=request.name, keys_type=request.keys_type,
            columns=request.columns, partition_info=request.partition_info,
            distribution=request.distribution, base_index_id=base_id,
            properties=request.properties, indexes=request.indexes, comment=request.comment,
            create_time=now,
        )
        m = Mutation()
        group = new_group = None
        if request.colocate_with:
            group, created = join_or_create_group(engine, db, table, request.colocate_with,
                                                  request.replicas)
            new_group = group if created else None
            table = replace(table, colocate_group_id=group.group_id)
        ids = [base_id, *(cat.next_ids(len(request.rollups)) if request.rollups else [])]
        indexes = [
            MaterializedIndexMeta(
                index_id=index_id, name=ix.name, columns=ix.columns,
                keys_type=request.keys_type, is_base=index_id == base_id, table_id=table_id,
                keys=ix.keys, short_key_column_count=ix.short_key_column_count, create_time=now,
            )
            for index_id, ix in zip(ids, (request.base_index, *request.rollups), strict=True)
        ]
        buckets = request.distribution.buckets
        if request.partition_info.type is PartitionType.UNPARTITIONED:
            new_partition(engine, m, table, indexes, request.name, buckets, request.replicas,
                          group)
        else:
            for p in request.partitions:
                new_partition(engine, m, table, indexes, p.name, buckets, request.replicas,
                              group, p.lower, p.upper, p.values)
    return StagedTable(
        table, tuple(indexes),
        tuple(o for o in m.puts if isinstance(o, PartitionMeta)),
        tuple(o for o in m.puts if isinstance(o, TabletMeta)), new_group,
    )


def create_table(engine: StorageEngine, request: NewTable,
                 check: Callable[[StagedTable], None] | None = None) -> None:
    """Stage and commit the new table in one catalog transaction. `check`: the caller's last
    word on the staged table before it is committed (the dynamic partition scheduler's first-run
    conflicts)."""
    cat = engine.catalog
    with cat.lock:
        staged = stage_table(engine, request)
        if staged is None:
            return
        if check is not None:
            check(staged)
        m = Mutation()
        if staged.new_group is not None:
            m.put(staged.new_group)
        for obj in (*staged.indexes, *staged.tablets, *staged.partitions, staged.table):
            m.put(obj)
        cat.commit(m)
