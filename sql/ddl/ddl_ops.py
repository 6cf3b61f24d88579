"""DDL analysis against the catalog: CREATE TABLE, ADD PARTITION, SET properties, ADD ROLLUP,
index DDL and the dynamic partition scheduler's ADD. Each turns its statement into a typed
request, checks it with Doris' messages (what needs only the statement or the catalog's current
state), and hands it to the catalog service, which commits one catalog transaction.

No module of sql/ writes the catalog: the writes live in `storage.catalog.service` (databases,
DROP / TRUNCATE, partitions, index jobs), `storage.catalog.new_table` (CREATE TABLE's objects),
`storage.catalog.alter_table` (properties, colocate moves, ADD ROLLUP) and
`storage.catalog.colocate` (colocate groups). Statement-level rules are in
`sql.ddl.create_table`.
Upstream: Doris `InternalCatalog.createOlapTable`, `Alter`, `SchemaChangeHandler`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from sql.ddl import properties as P
from sql.ddl.create_table import (
    RollupSpec,
    TableDefinition,
    _analyze_rollups,
    check_index_column,
    check_index_definition,
    rollup_key_columns,
    short_key_count,
)
from sql.ddl.partitions import PartitionSpec, resolve_list, resolve_range
from sql.ddl.specs import IndexClause, RollupClause
from sql.errors import DorisError, ErrorCode
from storage.catalog import alter_table as alter_service
from storage.catalog import new_table as create_service
from storage.catalog.colocate import check_group_buckets
from storage.catalog.meta import (
    ColumnMeta,
    DistributionType,
    IndexDef,
    KeysType,
    PartitionInfo,
    PartitionMeta,
    PartitionType,
    TableMeta,
)
from storage.catalog.new_table import NewIndex, NewPartition, NewTable
from storage.catalog.service import (
    check_alter_allowed,
    create_partition,
    reject_if_dynamic,
    start_index_job,
)
from storage.engine import StorageEngine
from storage.index_job import BLOOM_KEYS
from storage.staged_load import StagedTable

# ---- partitions (CREATE TABLE's, ADD PARTITION) --------------------------------------------------


def _resolve_partitions(info: PartitionInfo, columns: Sequence[ColumnMeta],
                        specs: Sequence[PartitionSpec], existing: Sequence[PartitionMeta]
                        ) -> list[NewPartition]:
    """Each spec's bounds resolved against the partitions before it (Doris' overlap and
    duplicate-name messages)."""
    by_name = {c.name.lower(): c for c in columns}
    types = [by_name[c.lower()].type for c in info.columns]
    resolved = []
    current = list(existing)
    for spec in specs:
        if any(p.name.lower() == spec.name.lower() for p in current):
            raise DorisError(f"Duplicate partition name {spec.name}", ErrorCode.SAME_NAME_PARTITION)
        lower = upper = None
        values: tuple[tuple[str | None, ...], ...] = ()
        if info.type is PartitionType.RANGE:
            lower, upper = resolve_range(types, spec, current)
        else:
            values = resolve_list(types, spec, current)
        current.append(PartitionMeta(0, 0, spec.name, 0, lower, upper, values))
        resolved.append(NewPartition(spec.name, lower, upper, values))
    return resolved


def _resolve_new_partition(table: TableMeta, spec: PartitionSpec,
                           existing: Sequence[PartitionMeta]) -> NewPartition:
    (new,) = _resolve_partitions(table.partition_info, table.columns, [spec], existing)
    return new


# ---- tables -------------------------------------------------------------------------------------


def _new_index(columns: Sequence[ColumnMeta], spec: RollupSpec, keys_type: KeysType) -> NewIndex:
    cols = rollup_key_columns(columns, spec, keys_type)
    return NewIndex(spec.name, tuple(c.name for c in cols), tuple(c.name for c in cols if c.is_key),
                    short_key_count(cols))


def table_request(engine: StorageEngine, db_name: str | None, defn: TableDefinition) -> NewTable:
    """The catalog's request for `defn`: replica count, index layouts and partition bounds."""
    replicas = P.replication_num(dict(defn.properties), len(engine.catalog.backends()))
    base = NewIndex(defn.name, tuple(c.name for c in defn.columns), defn.key_columns,
                    short_key_count(defn.columns))
    return NewTable(
        db=defn.db or db_name, name=defn.name, if_not_exists=defn.if_not_exists,
        keys_type=defn.keys_type, columns=defn.columns, base_index=base,
        rollups=tuple(_new_index(defn.columns, r, defn.keys_type) for r in defn.rollups),
        partition_info=defn.partition_info,
        partitions=tuple(_resolve_partitions(defn.partition_info, defn.columns, defn.partitions,
                                             [])),
        distribution=defn.distribution, indexes=defn.indexes, properties=defn.properties,
        comment=defn.comment, replicas=replicas,
        colocate_with=dict(defn.properties).get("colocate_with", "").strip(),
    )


def create_table(engine: StorageEngine, db_name: str | None, defn: TableDefinition,
                 check: Callable[[StagedTable], None] | None = None) -> None:
    """`check`: the caller's last word on the staged table before it is committed (the
    dynamic partition scheduler's first-run conflicts)."""
    with engine.catalog.lock:  # the existence checks hold until the commit
        if _exists_already(engine, db_name, defn):
            return
        create_service.create_table(engine, table_request(engine, db_name, defn), check)


def stage_table(engine: StorageEngine, db_name: str | None, defn: TableDefinition
                ) -> StagedTable | None:
    """Every catalog object of a new table (ids taken, tablets placed), not yet committed:
    CREATE TABLE commits them at once, CTAS together with its rows (storage/staged_load.py).
    None when the table exists and IF NOT EXISTS was given."""
    with engine.catalog.lock:
        if _exists_already(engine, db_name, defn):
            return None
        return create_service.stage_table(engine, table_request(engine, db_name, defn))


def _exists_already(engine: StorageEngine, db_name: str | None, defn: TableDefinition) -> bool:
    """Doris checks the database and the name before the properties: an unknown database or a
    taken name is the error even when the definition has others too."""
    db = create_service.database_for_new_table(engine, defn.db or db_name, defn.name,
                                               defn.if_not_exists)
    return db is None


def add_partition(engine: StorageEngine, table: TableMeta, spec: PartitionSpec,
                  dist_columns: Sequence[str] | None, buckets: int | None) -> None:
    cat = engine.catalog
    with cat.lock:
        if table.partition_info.type is PartitionType.UNPARTITIONED:
            raise DorisError(
                f"Table[{table.name}] is not a partitioned table, can not add partition")
        reject_if_dynamic(table)
        if dist_columns is not None and table.distribution.type is DistributionType.HASH:
            want = [c.lower() for c in table.distribution.columns]
            if [c.lower() for c in dist_columns] != want:
                raise DorisError(
                    "Cannot assign hash distribution with different distribution cols. new is: "
                    f"[{', '.join(dist_columns)}] default is: "
                    f"[{', '.join(table.distribution.columns)}]"
                )
        nbuckets = buckets if buckets is not None else table.distribution.buckets
        if nbuckets <= 0:
            raise DorisError("Number of hash distribution should be greater than zero.")
        group = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
        check_group_buckets(group, nbuckets)
        existing = cat.partitions(table.table_id)
        new = _resolve_new_partition(table, spec, existing)
        replicas = existing[0].replication_num if existing else 1
        create_partition(engine, table, new.name, nbuckets, replicas, new.lower, new.upper,
                         new.values)


# ---- properties (ALTER TABLE t SET (..)) --------------------------------------------------------


def set_properties(engine: StorageEngine, table: TableMeta, updates: dict[str, str]) -> None:
    """Validate ALTER TABLE t SET (..) against the table (Doris' messages), then commit the
    merged properties (and a colocate group change) through the catalog service."""
    unknown = [k for k in updates if k not in P.KNOWN_KEYS and not k.startswith(P.DYNAMIC_PREFIX)]
    if unknown:
        raise DorisError(f"Unknown table property: [{unknown[0]}]")
    merged = dict(table.properties)
    merged.update(updates)
    columns = table.columns
    if any(k.startswith(P.DYNAMIC_PREFIX) for k in updates):
        P.validate_dynamic_partition(merged, table.partition_info, columns,
                                     table.distribution.buckets,
                                     table.colocate_group_id is not None)
    if "bloom_filter_columns" in updates or "bloom_filter_fpp" in updates:
        P.validate_bloom_filter(merged, columns, table.keys_type)
    colocate_with = updates["colocate_with"].strip() if "colocate_with" in updates else None
    if colocate_with == "":
        merged.pop("colocate_with", None)
    mow = "enable_unique_key_merge_on_write"
    if mow in updates and updates[mow] != table.property(mow, "true"):
        raise DorisError(f"Can not change property {mow}")
    if "replication_num" in updates or "replication_allocation" in updates:
        P.replication_num(merged, len(engine.catalog.backends()))
    alter_service.set_table_properties(engine, table, tuple(merged.items()), colocate_with)


# ---- rollups (ALTER TABLE ADD ROLLUP; DROP / CANCEL are catalog-only: storage.catalog.service) ---


def add_rollups(engine: StorageEngine, table: TableMeta, rollups: Sequence[RollupClause]
                ) -> list[int]:
    """Validate ADD ROLLUP r(..)[, ..] (Doris `MaterializedViewHandler.processBatchAddRollup`
    checks and messages), then have the catalog create each rollup as a SHADOW index with its
    tablets plus a PENDING job; returns the job ids (storage/rollup_job.py builds them)."""
    cat = engine.catalog
    with cat.lock:  # the checks hold until the commit
        table = cat.table_by_id(table.table_id) or table
        alter_service.check_no_alter_running(engine, table)
        indexes = cat.materialized_indexes(table.table_id)
        names = {ix.name.lower(): ix for ix in indexes}
        seen: set[str] = set()
        for r in rollups:
            name = r.name
            if name.lower() in names or name.lower() in seen:
                raise DorisError(f"Rollup index[{name}] already exists")
            seen.add(name.lower())
            base_name = r.from_index or table.name
            base = names.get(base_name.lower())
            if base is None or base.state != "NORMAL":
                raise DorisError(f"Base index[{base_name}] does not exist")
            for c in r.columns:
                if c.lower() not in {x.lower() for x in base.columns}:
                    raise DorisError(f"Column[{c}] does not exist")
        specs = _analyze_rollups(list(rollups), table.name, table.columns, table.keys_type)
        requests = []
        for spec in specs:
            props = dict(spec.properties)
            text = props.pop("timeout", "86400")
            if not str(text).isdigit() or int(text) <= 0:
                raise DorisError(f"Invalid timeout: {text}")
            unknown = [k for k in props if k not in ("storage_type", "schema_version")]
            if unknown:
                raise DorisError(f"Unknown properties: {{{unknown[0]}={props[unknown[0]]}}}")
            requests.append(alter_service.NewRollup(
                _new_index(table.columns, spec, table.keys_type), int(text)))
        return alter_service.add_rollup_indexes(engine, table, requests)


# ---- dynamic partitions (the scheduler's ADD / DROP, server/dynamic_partitions.py) ---------------
def add_dynamic_partition(
    engine: StorageEngine, table_id: int, name: str, lower: str, upper: str,
    buckets: int | None, replicas: int | None, storage_medium: str = "HDD",
    cooldown_time: str = "",
) -> bool:
    """ADD PARTITION name VALUES [lower, upper) for the scheduler, one catalog transaction:
    the manual ADD PARTITION path without its "dynamic table" refusal. Returns False when the
    table is gone. Raises DorisError with Doris' overlap / duplicate-name messages."""
    cat = engine.catalog
    with cat.lock:
        table = cat.table_by_id(table_id)
        if table is None:
            return False
        existing = cat.partitions(table.table_id)
        new = _resolve_new_partition(
            table, PartitionSpec(name, "FIXED", lower=(lower,), upper=(upper,)), existing)
        group = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
        nbuckets = buckets if buckets is not None else table.distribution.buckets
        check_group_buckets(group, nbuckets)
        if replicas is None:
            replicas = existing[0].replication_num if existing else P.replication_num(
                dict(table.properties), len(cat.backends()))
        create_partition(engine, table, new.name, nbuckets, replicas, new.lower, new.upper,
                         new.values,
                         storage_medium=storage_medium, cooldown_time=cooldown_time)
    return True


# ---- indexes (ADD / DROP INDEX, CREATE / DROP INDEX, SET bloom filter; CANCEL ALTER .. COLUMN) --


def _index_def(table: TableMeta, index: IndexClause) -> IndexDef:
    """Doris `SchemaChangeHandler.processAddIndex` checks (messages verbatim)."""
    itype = check_index_definition(index)
    name = index.name
    columns = tuple(index.columns)
    wanted = {c.lower() for c in columns}
    for existing in table.indexes:
        if existing.name.lower() == name.lower():
            raise DorisError(f"index `{name}` already exist.")
        if {c.lower() for c in existing.columns} == wanted:
            raise DorisError(f"index for columns ({','.join(columns)} ) already exist.")
    resolved = []
    for cname in columns:
        col = next((c for c in table.columns if c.name.lower() == cname.lower()), None)
        if col is None:
            raise DorisError(f"BITMAP column does not exist in table. invalid column: {cname}")
        check_index_column(itype, name, col, table.keys_type)
        resolved.append(col.name)
    return IndexDef(name, tuple(resolved), itype, index.comment or "")


def alter_indexes(engine: StorageEngine, table: TableMeta, add: Sequence[IndexClause] = (),
                  drop: Sequence[tuple[str, bool]] = (), if_not_exists: bool = False
                  ) -> int | None:
    """ADD INDEX / DROP INDEX (also CREATE INDEX / DROP INDEX .. ON t): the table's index
    definitions change at once, and a job (storage/index_job.py) rewrites the existing data;
    returns its id when it still has to run (None when nothing changed or nothing to rewrite).
    `drop`: (name, if_exists) pairs."""
    cat = engine.catalog
    with cat.lock:
        table = cat.table_by_id(table.table_id) or table
        check_alter_allowed(cat, table)
        indexes = list(table.indexes)
        for name, if_exists in drop:
            found = next((i for i in indexes if i.name.lower() == name.lower()), None)
            if found is None:
                if if_exists:
                    continue
                raise DorisError(f"index {name} does not exist")
            indexes.remove(found)
        for index in add:
            probe = replace(table, indexes=tuple(indexes))
            if if_not_exists and any(i.name.lower() == index.name.lower()
                                     for i in indexes):
                continue
            indexes.append(_index_def(probe, index))
        if tuple(indexes) == table.indexes:
            return None
        return start_index_job(engine, table, tuple(indexes), table.properties)


def set_bloom_filter(engine: StorageEngine, table: TableMeta, updates: dict[str, str]
                     ) -> int | None:
    """ALTER TABLE t SET ("bloom_filter_columns" = "..", "bloom_filter_fpp" = ".."): validated
    as at CREATE, then the same kind of job as ADD INDEX rebuilds the existing segments."""
    cat = engine.catalog
    with cat.lock:
        table = cat.table_by_id(table.table_id) or table
        check_alter_allowed(cat, table)
        merged = dict(table.properties)
        merged.update(updates)
        if not merged.get("bloom_filter_columns", "").strip():
            merged.pop("bloom_filter_columns", None)  # "" drops every bloom filter
        P.validate_bloom_filter(merged, table.columns, table.keys_type)
        before = {k: v for k, v in table.properties if k in BLOOM_KEYS}
        after = {k: v for k, v in merged.items() if k in BLOOM_KEYS}
        if before == after:
            return None
        return start_index_job(engine, table, table.indexes, tuple(merged.items()))


