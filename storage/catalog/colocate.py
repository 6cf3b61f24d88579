"""Colocate groups: naming, lookup, the Colocation Group Schema check, and a table joining or
leaving a group (ALTER TABLE t SET ("colocate_with" = ..)) as catalog changes.

A group is named per database (`<db_id>_<name>`) unless its name starts with `__global__`.
Every error here is Doris' error 5063 with Doris' wording (ColocateGroupSchema). Moving the
tablets' files is not done here: `change_colocate_group` returns the tablets to move and
`storage.catalog.alter_table` copies them before the catalog switches.
Upstream: Doris `ColocateTableIndex`, `ColocateGroupSchema`, `Env.modifyTableColocate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from storage.catalog.catalog import Catalog
from storage.catalog.meta import (
    ColocateGroup,
    DatabaseMeta,
    DistributionType,
    TableMeta,
    TabletMeta,
)
from storage.catalog.repository import Mutation
from storage.errors import DorisError, ErrorCode

if TYPE_CHECKING:
    from storage.engine import StorageEngine

GLOBAL_GROUP_PREFIX = "__global__"


def group_name(db: DatabaseMeta, name: str) -> str:
    """The catalog name of group `name` as written in `db`'s DDL."""
    return name if name.startswith(GLOBAL_GROUP_PREFIX) else f"{db.db_id}_{name}"


def find_group(cat: Catalog, db: DatabaseMeta, name: str) -> ColocateGroup | None:
    full = group_name(db, name)
    return next((g for g in cat.colocate_groups() if g.name == full), None)


def colocate_error(detail: str) -> DorisError:
    return DorisError(detail, ErrorCode.COLOCATE)


def _not_hash_error() -> DorisError:
    return colocate_error("Colocate tables must have same distribution type: HASH should be RANDOM")


def check_group_buckets(group: ColocateGroup | None, buckets: int) -> None:
    """A partition added to a colocated table keeps the group's bucket count."""
    if group is not None and buckets != group.buckets:
        raise colocate_error(
            f"Colocate tables must have same bucket num: {buckets} should be {group.buckets}")


def check_colocate(group: ColocateGroup, table: TableMeta, replicas: int,
                   buckets: Sequence[int]) -> None:
    """The Colocation Group Schema check (Doris ColocateGroupSchema), all errors 5063."""
    dist = table.distribution
    if dist.type is not DistributionType.HASH:
        raise _not_hash_error()
    for b in buckets:
        check_group_buckets(group, b)
    types = [table.column(c).type for c in dist.columns]
    if len(types) != len(group.column_types):
        raise colocate_error(
            f"Colocate tables distribution columns size must be same: {len(types)} should be "
            f"{len(group.column_types)}"
        )
    for t, g in zip(types, group.column_types, strict=True):
        if t != g:
            raise colocate_error(
                f"Colocate tables distribution columns must have the same data type: {t.sql()} "
                f"should be {g.sql()}"
            )
    if replicas != group.replication_num:
        raise colocate_error(
            "Colocate tables must have same replication allocation: "
            f"{{ tag.location.default: {replicas} }} should be "
            f"{{ tag.location.default: {group.replication_num} }}"
        )


def join_or_create_group(engine: StorageEngine, db: DatabaseMeta, table: TableMeta, name: str,
                         replicas: int) -> tuple[ColocateGroup, bool]:
    """CREATE TABLE .. ("colocate_with" = name): (the existing group after the schema check,
    False), or (a new group whose buckets are placed afresh, True): the new table is its parent
    and the caller commits the group with it."""
    group = find_group(engine.catalog, db, name)
    buckets = table.distribution.buckets
    if group is not None:
        check_colocate(group, table, replicas, [buckets])
        return group, False
    if table.distribution.type is not DistributionType.HASH:
        raise _not_hash_error()
    placement = engine.pick_backends(buckets)
    return _new_group(engine, db, table, name, buckets, replicas, placement), True


def _new_group(engine: StorageEngine, db: DatabaseMeta, table: TableMeta, name: str,
               buckets: int, replicas: int, placement: Sequence[int]) -> ColocateGroup:
    return ColocateGroup(
        group_id=engine.catalog.next_id(), db_id=db.db_id, name=group_name(db, name),
        buckets=buckets,
        column_types=tuple(table.column(c).type for c in table.distribution.columns),
        replication_num=replicas, backends_per_bucket=tuple((b,) for b in placement),
    )


def change_colocate_group(engine: StorageEngine, m: Mutation, table: TableMeta, name: str
                          ) -> tuple[TableMeta, list[tuple[TabletMeta, int]]]:
    """ALTER TABLE t SET ("colocate_with" = "g" | ""): leave the current group (dropping it when
    it empties) and join / create `g` (Doris `Env.modifyTableColocate`). Tablets whose bucket
    seq lives elsewhere in the group's bucket -> backend map are relocated (returned as
    (tablet before the move, new backend) so the caller moves their files)."""
    cat = engine.catalog
    db = cat.database_by_id(table.db_id)
    assert db is not None, f"table {table.name} without its database"
    old = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
    if name and old is not None and old.name == group_name(db, name):
        return table, []
    parts = cat.partitions(table.table_id)
    buckets = sorted({p.buckets for p in parts})
    replicas = parts[0].replication_num if parts else 1
    if name:
        if table.distribution.type is not DistributionType.HASH:
            raise _not_hash_error()
        if len(buckets) > 1:
            raise DorisError(f"Partitions in table {table.name} have different buckets number")
    if old is not None:
        others = [t for t in cat.tables_in_group(old.group_id) if t.table_id != table.table_id]
        if not others:
            m.delete(old)
    if not name:
        return replace(table, colocate_group_id=None), []
    group = find_group(cat, db, name)
    if group is not None and old is not None and group.group_id == old.group_id:
        group = None
    nbuckets = buckets[0] if buckets else table.distribution.buckets
    if group is not None:
        check_colocate(group, table, replicas, [nbuckets])
    else:
        # The table becomes the group's parent: its first partition's base tablets define the
        # bucket seq -> backend map (seed 000 section 1).
        first = cat.tablets(table.table_id, parts[0].partition_id) if parts else []
        base = {t.bucket_seq: t.backend_id for t in first if t.index_id == table.base_index_id}
        placed = [base.get(seq) for seq in range(nbuckets)]
        placement = ([b for b in placed if b is not None] if None not in placed
                     else engine.pick_backends(nbuckets))
        group = _new_group(engine, db, table, name, nbuckets, replicas, placement)
        m.put(group)
    moved: list[tuple[TabletMeta, int]] = []
    for t in cat.tablets(table.table_id):
        want = group.backends_per_bucket[t.bucket_seq][0]
        if t.backend_id != want:
            moved.append((t, want))
            m.put(replace(t, backend_id=want))
    return replace(table, colocate_group_id=group.group_id), moved
