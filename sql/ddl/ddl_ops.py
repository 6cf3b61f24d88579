"""DDL that still mixes analysis with catalog writes: CREATE TABLE (with its materialized indexes,
partitions and one tablet per partition x index x bucket, placed on backends, and colocate
groups), ADD PARTITION, SET properties, ADD / DROP ROLLUP, index DDL, the dynamic partition
scheduler's ADD. Each validates against the catalog, then commits one catalog transaction.

The catalog-only mutations (databases, DROP / TRUNCATE TABLE, DROP PARTITION, new partitions'
tablets, "is an ALTER running") live in `storage.catalog.service`; statement-level rules in
`sql.ddl.create_table`. What is left here moves to the service as its analysis is separated
(issue 16 point 6).
Upstream: Doris `InternalCatalog.createOlapTable`, `ColocateTableIndex`, `Alter`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from sql.ddl import properties as P
from sql.ddl.create_table import (
    TableDefinition,
    check_index_column,
    check_index_definition,
    rollup_key_columns,
    short_key_count,
)
from sql.ddl.partitions import PartitionSpec, resolve_list, resolve_range
from sql.errors import DorisError, ErrorCode
from storage.catalog.meta import (
    AlterJobMeta,
    ColocateGroup,
    DatabaseMeta,
    DistributionType,
    IndexDef,
    MaterializedIndexMeta,
    PartitionMeta,
    PartitionType,
    TableMeta,
    TabletMeta,
)
from storage.catalog.repository import Mutation
from storage.catalog.service import (
    alter_state,
    check_alter_allowed,
    create_partition,
    new_partition,
    reject_if_dynamic,
    require_database,
    rollup_job_running,
    start_index_job,
)
from storage.engine import StorageEngine
from storage.index_job import BLOOM_KEYS
from storage.staged_load import StagedTable
from storage.tablet_move import copy_tablets, remove_old_copies

GLOBAL_GROUP_PREFIX = "__global__"


# ---- databases ----------------------------------------------------------------------------


# ---- tables -------------------------------------------------------------------------------


def _group_name(db: DatabaseMeta, name: str) -> str:
    return name if name.startswith(GLOBAL_GROUP_PREFIX) else f"{db.db_id}_{name}"


def _find_group(engine: StorageEngine, db: DatabaseMeta, name: str) -> ColocateGroup | None:
    full = _group_name(db, name)
    for g in engine.catalog.colocate_groups():
        if g.name == full:
            return g
    return None


def _colocate_error(detail: str) -> DorisError:
    return DorisError(detail, ErrorCode.COLOCATE)


def _check_colocate(group: ColocateGroup, table: TableMeta, replicas: int, buckets: Sequence[int]) -> None:
    """The Colocation Group Schema check (Doris ColocateGroupSchema), all errors 5063."""
    dist = table.distribution
    if dist.type is not DistributionType.HASH:
        raise _colocate_error("Colocate tables must have same distribution type: HASH should be RANDOM")
    for b in buckets:
        if b != group.buckets:
            raise _colocate_error(f"Colocate tables must have same bucket num: {b} should be {group.buckets}")
    types = [table.column(c).type for c in dist.columns]
    if len(types) != len(group.column_types):
        raise _colocate_error(
            f"Colocate tables distribution columns size must be same: {len(types)} should be "
            f"{len(group.column_types)}"
        )
    for t, g in zip(types, group.column_types):
        if t != g:
            raise _colocate_error(
                f"Colocate tables distribution columns must have the same data type: {t.sql()} "
                f"should be {g.sql()}"
            )
    if replicas != group.replication_num:
        raise _colocate_error(
            "Colocate tables must have same replication allocation: "
            f"{{ tag.location.default: {replicas} }} should be "
            f"{{ tag.location.default: {group.replication_num} }}"
        )


def _resolve_partitions(
    table: TableMeta, specs: Sequence[PartitionSpec], existing: Sequence[PartitionMeta]
) -> list[tuple[PartitionSpec, tuple[str, ...] | None, tuple[str, ...] | None, tuple[tuple[str, ...], ...]]]:
    types = [table.column(c).type for c in table.partition_info.columns]
    resolved = []
    current = list(existing)
    for spec in specs:
        if any(p.name.lower() == spec.name.lower() for p in current):
            raise DorisError(f"Duplicate partition name {spec.name}", ErrorCode.SAME_NAME_PARTITION)
        lower = upper = None
        values: tuple[tuple[str, ...], ...] = ()
        if table.partition_info.type is PartitionType.RANGE:
            lower, upper = resolve_range(types, spec, current)
        else:
            values = resolve_list(types, spec, current)
        current.append(PartitionMeta(0, table.table_id, spec.name, 0, lower, upper, values))
        resolved.append((spec, lower, upper, values))
    return resolved


def create_table(engine: StorageEngine, db_name: str | None, defn: TableDefinition,
                 check: Callable[[StagedTable], None] | None = None) -> None:
    """`check`: the caller's last word on the staged table before it is committed (the
    dynamic partition scheduler's first-run conflicts)."""
    cat = engine.catalog
    with cat.lock:
        staged = stage_table(engine, db_name, defn)
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


def stage_table(engine: StorageEngine, db_name: str | None, defn: TableDefinition
                ) -> StagedTable | None:
    """Every catalog object of a new table (ids taken, tablets placed), not yet committed:
    CREATE TABLE commits them at once, CTAS together with its rows (storage/staged_load.py).
    None when the table exists and IF NOT EXISTS was given."""
    cat = engine.catalog
    with cat.lock:
        db = require_database(engine, defn.db or db_name)
        if cat.get_table(db.name, defn.name) is not None:
            if defn.if_not_exists:
                return None
            raise DorisError(f"Table '{defn.name}' already exists", ErrorCode.TABLE_EXISTS_ERROR)
        props = dict(defn.properties)
        backends = len(cat.backends())
        replicas = P.replication_num(props, backends)
        table_id, base_id = cat.next_ids(2)
        now = time.time()
        table = TableMeta(
            table_id=table_id, db_id=db.db_id, name=defn.name, keys_type=defn.keys_type,
            columns=defn.columns, partition_info=defn.partition_info, distribution=defn.distribution,
            base_index_id=base_id, properties=defn.properties, indexes=defn.indexes,
            comment=defn.comment, create_time=now,
        )
        m = Mutation()
        group = None
        new_group = None
        colocate = props.get("colocate_with", "").strip()
        if colocate:
            group = _find_group(engine, db, colocate)
            buckets = [defn.distribution.buckets]
            if group is not None:
                _check_colocate(group, table, replicas, buckets)
            else:
                if defn.distribution.type is not DistributionType.HASH:
                    raise _colocate_error("Colocate tables must have same distribution type: HASH should be RANDOM")
                placement = engine.pick_backends(defn.distribution.buckets)
                group = new_group = ColocateGroup(
                    group_id=cat.next_id(), db_id=db.db_id, name=_group_name(db, colocate),
                    buckets=defn.distribution.buckets,
                    column_types=tuple(table.column(c).type for c in defn.distribution.columns),
                    replication_num=replicas, backends_per_bucket=tuple((b,) for b in placement),
                )
            table = replace(table, colocate_group_id=group.group_id)
        indexes = [MaterializedIndexMeta(
            index_id=base_id, name=defn.name, columns=tuple(c.name for c in defn.columns),
            keys_type=defn.keys_type, is_base=True, table_id=table_id,
            keys=defn.key_columns, short_key_column_count=short_key_count(defn.columns),
            create_time=now,
        )]
        for spec, rid in zip(defn.rollups, cat.next_ids(len(defn.rollups)) if defn.rollups else []):
            cols = rollup_key_columns(defn.columns, spec, defn.keys_type)
            indexes.append(MaterializedIndexMeta(
                index_id=rid, name=spec.name, columns=tuple(c.name for c in cols),
                keys_type=defn.keys_type, is_base=False, table_id=table_id,
                keys=tuple(c.name for c in cols if c.is_key),
                short_key_column_count=short_key_count(cols), create_time=now,
            ))
        buckets = defn.distribution.buckets
        if defn.partition_info.type is PartitionType.UNPARTITIONED:
            new_partition(engine, m, table, indexes, defn.name, buckets, replicas, group)
        else:
            for spec, lower, upper, values in _resolve_partitions(table, defn.partitions, []):
                new_partition(engine, m, table, indexes, spec.name, buckets, replicas, group, lower, upper, values)
    return StagedTable(
        table, tuple(indexes),
        tuple(o for o in m.puts if isinstance(o, PartitionMeta)),
        tuple(o for o in m.puts if isinstance(o, TabletMeta)), new_group,
    )


def add_partition(
    engine: StorageEngine, table: TableMeta, spec: PartitionSpec, dist_columns: Sequence[str] | None,
    buckets: int | None,
) -> None:
    cat = engine.catalog
    with cat.lock:
        if table.partition_info.type is PartitionType.UNPARTITIONED:
            raise DorisError(f"Table[{table.name}] is not a partitioned table, can not add partition")
        reject_if_dynamic(table)
        if dist_columns is not None and table.distribution.type is DistributionType.HASH:
            want = [c.lower() for c in table.distribution.columns]
            if [c.lower() for c in dist_columns] != want:
                raise DorisError(
                    "Cannot assign hash distribution with different distribution cols. new is: "
                    f"[{', '.join(dist_columns)}] default is: [{', '.join(table.distribution.columns)}]"
                )
        nbuckets = buckets if buckets is not None else table.distribution.buckets
        if nbuckets <= 0:
            raise DorisError("Number of hash distribution should be greater than zero.")
        group = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
        if group is not None and nbuckets != group.buckets:
            raise _colocate_error(f"Colocate tables must have same bucket num: {nbuckets} should be {group.buckets}")
        existing = cat.partitions(table.table_id)
        (spec, lower, upper, values), = _resolve_partitions(table, [spec], existing)
        replicas = existing[0].replication_num if existing else 1
        create_partition(engine, table, spec.name, nbuckets, replicas, lower, upper, values)


def set_properties(engine: StorageEngine, table: TableMeta, updates: dict[str, str]) -> None:
    if "colocate_with" in updates:
        # A colocate move copies the tablets' files: no compaction may swap rowsets meanwhile
        # (taken before the catalog lock, which a finishing compaction needs to swap).
        ids = [t.tablet_id for t in engine.catalog.tablets(table.table_id)]
        with engine.compaction.exclusive(ids):
            _set_properties(engine, table, updates)
    else:
        _set_properties(engine, table, updates)


def _set_properties(engine: StorageEngine, table: TableMeta, updates: dict[str, str]) -> None:
    cat = engine.catalog
    with cat.lock:
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
        moved: list[tuple[TabletMeta, int]] = []
        m = Mutation()
        if "colocate_with" in updates:
            target = updates["colocate_with"].strip()
            table, moved = _change_colocate_group(engine, m, table, target)
            if not updates["colocate_with"].strip():
                merged.pop("colocate_with", None)
        mow = "enable_unique_key_merge_on_write"
        if mow in updates and updates[mow] != table.property(mow, "true"):
            raise DorisError(f"Can not change property {mow}")
        if "replication_num" in updates or "replication_allocation" in updates:
            P.replication_num(merged, len(cat.backends()))
        copy_tablets(engine, moved)  # durable copies before the catalog switches (crash-safe)
        m.put(replace(table, properties=tuple(merged.items())))
        cat.commit(m)
    remove_old_copies(engine, moved)  # a crash before this: the GC removes the old copies


def _change_colocate_group(engine: StorageEngine, m: Mutation, table: TableMeta, name: str
                           ) -> tuple[TableMeta, list[tuple[TabletMeta, int]]]:
    """ALTER TABLE t SET ("colocate_with" = "g" | ""): leave the current group (dropping it when
    it empties) and join / create `g` (Doris `Env.modifyTableColocate`). Tablets whose bucket
    seq lives elsewhere in the group's bucket -> backend map are relocated (returned as
    (tablet before the move, new backend) so the caller moves their files)."""
    cat = engine.catalog
    db = cat.database_by_id(table.db_id)
    assert db is not None
    old = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
    if name and old is not None and old.name == _group_name(db, name):
        return table, []
    if name:
        if table.distribution.type is not DistributionType.HASH:
            raise _colocate_error(
                "Colocate tables must have same distribution type: HASH should be RANDOM")
        parts = cat.partitions(table.table_id)
        buckets = sorted({p.buckets for p in parts})
        if len(buckets) > 1:
            raise DorisError(f"Partitions in table {table.name} have different buckets number")
        replicas = parts[0].replication_num if parts else 1
    if old is not None:
        others = [t for t in cat.tables_in_group(old.group_id) if t.table_id != table.table_id]
        if not others:
            m.delete(old)
    if not name:
        return replace(table, colocate_group_id=None), []
    group = _find_group(engine, db, name)
    if group is not None and old is not None and group.group_id == old.group_id:
        group = None
    nbuckets = buckets[0] if buckets else table.distribution.buckets
    if group is not None:
        _check_colocate(group, table, replicas, [nbuckets])
    else:
        # The table becomes the group's parent: its first partition's base tablets define the
        # bucket seq -> backend map (seed 000 section 1).
        first = cat.tablets(table.table_id, parts[0].partition_id) if parts else []
        base = {t.bucket_seq: t.backend_id for t in first if t.index_id == table.base_index_id}
        placement = [base.get(seq) for seq in range(nbuckets)]
        if any(b is None for b in placement):
            placement = engine.pick_backends(nbuckets)
        group = ColocateGroup(
            group_id=cat.next_id(), db_id=db.db_id, name=_group_name(db, name), buckets=nbuckets,
            column_types=tuple(table.column(c).type for c in table.distribution.columns),
            replication_num=replicas, backends_per_bucket=tuple((b,) for b in placement),
        )
        m.put(group)
    moved: list[tuple[TabletMeta, int]] = []
    for t in cat.tablets(table.table_id):
        want = group.backends_per_bucket[t.bucket_seq][0]
        if t.backend_id != want:
            moved.append((t, want))
            m.put(replace(t, backend_id=want))
    return replace(table, colocate_group_id=group.group_id), moved


# ---- rollups (ALTER TABLE ADD / DROP ROLLUP, CANCEL ALTER TABLE ROLLUP) -------------------------


def add_rollups(engine: StorageEngine, table: TableMeta, rollups: Sequence[object]) -> list[int]:
    """Validate ADD ROLLUP r(..)[, ..] and create, in one catalog transaction, each rollup as a
    SHADOW index with its tablets plus a PENDING job; returns the job ids (storage/rollup_job.py
    builds them). Doris `MaterializedViewHandler.processBatchAddRollup` checks and messages."""
    from sql.ddl.create_table import _analyze_rollups  # noqa: PLC0415 - shared rollup column rules

    cat = engine.catalog
    with cat.lock:
        table = cat.table_by_id(table.table_id) or table
        if rollup_job_running(cat, table):
            raise DorisError(f"Table[{table.name}]'s state({alter_state(cat, table)}) is not "
                             "NORMAL. Do not allow doing ALTER ops")
        indexes = cat.materialized_indexes(table.table_id)
        names = {ix.name.lower(): ix for ix in indexes}
        seen: set[str] = set()
        for r in rollups:
            name = r.name  # type: ignore[attr-defined]
            if name.lower() in names or name.lower() in seen:
                raise DorisError(f"Rollup index[{name}] already exists")
            seen.add(name.lower())
            base_name = getattr(r, "from_index", None) or table.name
            base = names.get(base_name.lower())
            if base is None or base.state != "NORMAL":
                raise DorisError(f"Base index[{base_name}] does not exist")
            for c in r.columns:  # type: ignore[attr-defined]
                if c.lower() not in {x.lower() for x in base.columns}:
                    raise DorisError(f"Column[{c}] does not exist")
        specs = _analyze_rollups(list(rollups), table.name, table.columns, table.keys_type)
        timeouts = []
        for spec in specs:
            props = dict(spec.properties)
            text = props.pop("timeout", "86400")
            if not str(text).isdigit() or int(text) <= 0:
                raise DorisError(f"Invalid timeout: {text}")
            unknown = [k for k in props if k not in ("storage_type", "schema_version")]
            if unknown:
                raise DorisError(f"Unknown properties: {{{unknown[0]}={props[unknown[0]]}}}")
            timeouts.append(int(text))
        base_index = next(ix for ix in indexes if ix.is_base)
        group = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
        m = Mutation()
        now = time.time()
        job_ids = []
        for spec, timeout in zip(specs, timeouts):
            cols = rollup_key_columns(table.columns, spec, table.keys_type)
            index_id, job_id = cat.next_ids(2)
            index = MaterializedIndexMeta(
                index_id=index_id, name=spec.name, columns=tuple(c.name for c in cols),
                keys_type=table.keys_type, is_base=False, table_id=table.table_id,
                keys=tuple(c.name for c in cols if c.is_key),
                short_key_column_count=short_key_count(cols), create_time=now, state="SHADOW",
            )
            m.put(index)
            for part in cat.partitions(table.table_id):
                _add_index_tablets(engine, m, table, part, index, group)
            m.put(AlterJobMeta(
                job_id=job_id, db_id=table.db_id, table_id=table.table_id, table_name=table.name,
                base_index_id=base_index.index_id, base_index_name=base_index.name,
                rollup_index_id=index_id, rollup_index_name=spec.name, create_time=now,
                transaction_id=cat.next_id(), timeout=timeout,
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
        spec = PartitionSpec(name, "FIXED", lower=(lower,), upper=(upper,))
        (spec, lo, up, values), = _resolve_partitions(table, [spec], existing)
        group = cat.colocate_group(table.colocate_group_id) if table.colocate_group_id else None
        nbuckets = buckets if buckets is not None else table.distribution.buckets
        if group is not None and nbuckets != group.buckets:
            raise _colocate_error(
                f"Colocate tables must have same bucket num: {nbuckets} should be {group.buckets}")
        if replicas is None:
            replicas = existing[0].replication_num if existing else P.replication_num(
                dict(table.properties), len(cat.backends()))
        create_partition(engine, table, spec.name, nbuckets, replicas, lo, up, values,
                         storage_medium=storage_medium, cooldown_time=cooldown_time)
    return True


# ---- indexes (ADD / DROP INDEX, CREATE / DROP INDEX, SET bloom filter; CANCEL ALTER .. COLUMN) --


def _index_def(table: TableMeta, index: object) -> IndexDef:
    """Doris `SchemaChangeHandler.processAddIndex` checks (messages verbatim)."""
    itype = check_index_definition(index)
    name = index.name  # type: ignore[attr-defined]
    columns = tuple(index.columns)  # type: ignore[attr-defined]
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
    return IndexDef(name, tuple(resolved), itype, index.comment or "")  # type: ignore[attr-defined]


def alter_indexes(engine: StorageEngine, table: TableMeta, add: Sequence[object] = (),
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
            if if_not_exists and any(i.name.lower() == index.name.lower()  # type: ignore[attr-defined]
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


