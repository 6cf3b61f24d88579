"""Catalog metadata: frozen dataclasses for databases, tables, indexes, partitions and tablets.

These are plain values (ids, names, types), never live objects: plans hold ids and look the
metadata up again. The SQLite repository (`repository.py`) is the only code that reads or writes
them to disk. Upstream concepts: Doris FE `Database`, `OlapTable`, `Column`, `MaterializedIndex`,
`Partition`, `RangePartitionItem`, `HashDistributionInfo`, `Tablet`, `ColocateGroupSchema`.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field, replace

from storage.types import DataType


class KeysType(enum.Enum):
    DUP_KEYS = "DUP_KEYS"
    AGG_KEYS = "AGG_KEYS"
    UNIQUE_KEYS = "UNIQUE_KEYS"

    @property
    def sql_keyword(self) -> str:
        return {"DUP_KEYS": "DUPLICATE", "AGG_KEYS": "AGGREGATE",
                "UNIQUE_KEYS": "UNIQUE"}[self.value]


class AggType(enum.Enum):
    NONE = "NONE"
    SUM = "SUM"
    MAX = "MAX"
    MIN = "MIN"
    REPLACE = "REPLACE"
    REPLACE_IF_NOT_NULL = "REPLACE_IF_NOT_NULL"
    HLL_UNION = "HLL_UNION"
    BITMAP_UNION = "BITMAP_UNION"
    QUANTILE_UNION = "QUANTILE_UNION"
    GENERIC = "GENERIC"


class PartitionType(enum.Enum):
    UNPARTITIONED = "UNPARTITIONED"
    RANGE = "RANGE"
    LIST = "LIST"


class DistributionType(enum.Enum):
    HASH = "HASH"
    RANDOM = "RANDOM"


@dataclass(frozen=True, slots=True)
class DatabaseMeta:
    db_id: int
    name: str
    create_time: float = 0.0


@dataclass(frozen=True, slots=True)
class ColumnMeta:
    """A column. `default` is the literal text of DEFAULT (None with has_default means NULL)."""

    name: str
    type: DataType
    nullable: bool = True
    is_key: bool = False
    agg_type: AggType | None = None
    has_default: bool = False
    default: str | None = None
    comment: str = ""
    # A column of a synchronous materialized view (Doris Column.defineExpr): the SQL text of the
    # expression over base-table columns it stores, as `.sql()` of the bound expression prints
    # it (`k1` in backquotes, CAST(`v` AS BIGINT), ...). "" for table columns.
    define_expr: str = ""


@dataclass(frozen=True, slots=True)
class IndexDef:
    """A secondary index declared with INDEX .. USING BITMAP / INVERTED / NGRAM_BF."""

    name: str
    columns: tuple[str, ...]
    index_type: str = "BITMAP"
    comment: str = ""


@dataclass(frozen=True, slots=True)
class MaterializedIndexMeta:
    """The base index or a rollup: an ordered subset of the table's columns, sorted by its keys."""

    index_id: int
    name: str
    columns: tuple[str, ...]
    keys_type: KeysType
    is_base: bool
    table_id: int = 0
    keys: tuple[str, ...] = ()  # sort-key columns of this index (a prefix of `columns`)
    short_key_column_count: int = 1
    schema_version: int = 0
    create_time: float = 0.0
    # NORMAL: visible to queries. SHADOW: being built by an ALTER TABLE ADD ROLLUP job; loads
    # already write it (so it misses no version) but queries never read it.
    state: str = "NORMAL"
    # A synchronous materialized view (CREATE MATERIALIZED VIEW): its own columns (`mv_..` keys,
    # `mva_<AGG>__..` values, each with its define_expr and aggregation); `columns` are their
    # names and `keys_type` is AGG_KEYS when it aggregates. Empty for the base index and rollups,
    # whose columns are the table's (storage/catalog/mv.py).
    schema: tuple[ColumnMeta, ...] = ()

    @property
    def is_materialized_view(self) -> bool:
        return bool(self.schema)


@dataclass(frozen=True, slots=True)
class DistributionInfo:
    type: DistributionType
    columns: tuple[str, ...]
    buckets: int
    auto_buckets: bool = False


@dataclass(frozen=True, slots=True)
class PartitionMeta:
    """One partition. Range bounds and list values are literal texts, one per partition column.

    Range: `lower` None = type minimum, `upper` None = MAXVALUE, semantics [lower, upper).
    List: `list_values` holds one tuple per accepted value tuple (None: NULL, which an AUTO
    LIST partition `pX` accepts).
    The single partition of an unpartitioned table has the table's own name.
    A temporary partition (Doris' ADD TEMPORARY PARTITION) is invisible to queries and loads
    that do not name it; it may overlap formal partitions and becomes one through REPLACE.
    """

    partition_id: int
    table_id: int
    name: str
    buckets: int
    lower: tuple[str, ...] | None = None
    upper: tuple[str, ...] | None = None
    list_values: tuple[tuple[str | None, ...], ...] = ()
    visible_version: int = 1
    visible_version_time: float = 0.0
    replication_num: int = 1
    temporary: bool = False
    # Doris' DataProperty: SSD/HDD and, for SSD, the time it cools down to HDD ("" = never;
    # SHOW PARTITIONS prints 9999-12-31 23:59:59). Set by dynamic_partition.hot_partition_num /
    # storage_medium; one medium here, so it is what SHOW PARTITIONS reports, nothing moves.
    storage_medium: str = "HDD"
    cooldown_time: str = ""


class TemporaryPartitionNames(tuple[str, ...]):
    """The partitions a load names with `TEMPORARY PARTITION (..)` / `temporary_partitions`:
    a tuple of names that also says which of the table's partition sets they belong to."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    type: PartitionType
    columns: tuple[str, ...] = ()
    # AUTO PARTITION: loads create the partitions their rows need (storage/auto_partition.py);
    # auto_unit is the date_trunc unit of an AUTO RANGE table ("month", ...), None for LIST.
    auto: bool = False
    auto_unit: str | None = None


@dataclass(frozen=True, slots=True)
class TabletMeta:
    tablet_id: int
    table_id: int
    partition_id: int
    index_id: int
    bucket_seq: int
    backend_id: int


@dataclass(frozen=True, slots=True)
class DeleteCondition:
    """One conjunct of a DELETE's WHERE: `column op values` with physical values.

    Mirrors `storage.predicates.ColumnPredicate` (kept separate so the catalog layer holds plain
    data); `op` is one of "=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null",
    "is_not_null".
    """

    column: str
    op: str
    values: tuple[object, ...] = ()


@dataclass(frozen=True, slots=True)
class RowsetMeta:
    """A published rowset of one tablet: versions [start_version, end_version], its segment files.

    `files` are paths relative to the owning backend's storage root.
    """

    rowset_id: str
    tablet_id: int
    start_version: int
    end_version: int
    num_rows: int
    data_size: int
    files: tuple[str, ...]
    create_time: float = 0.0
    # A delete version (DELETE FROM ... WHERE) has no files and hides the rows of all LOWER
    # versions that match every one of these predicates.
    delete_predicates: tuple[DeleteCondition, ...] = ()
    # Doris SegmentsOverlapPB: False (NONOVERLAPPING) when the segments together form one
    # key-sorted run (one memtable flush, or a compaction output); True (OVERLAPPING) when each
    # segment is its own sorted run (a load that flushed its memtable more than once).
    segments_overlap: bool = False
    # The user-declared indexes (bitmap / bloom filter) its segments were written with:
    # storage.indexes.spec.spec_signature of the writer's SegmentIndexSpec ("" for none). An
    # index-building job (storage/index_job.py) rewrites the rowsets whose signature differs
    # from what their table now declares.
    index_spec: str = ""

    @property
    def num_segments(self) -> int:
        return len(self.files)

    @property
    def compaction_score(self) -> int:
        """Doris RowsetMeta::get_compaction_score: 1 for a non-overlapping rowset, else the
        number of segments (each is a run a merge must open)."""
        return max(1, len(self.files)) if self.segments_overlap else 1


class TxnStatus(enum.Enum):
    PREPARE = "PREPARE"
    COMMITTED = "COMMITTED"
    VISIBLE = "VISIBLE"
    ABORTED = "ABORTED"
    # Two-phase commit (Stream Load `two_phase_commit: true`): files written and fsynced, the
    # txn persisted with its pending rowsets, nothing visible until a commit publishes them.
    PRECOMMITTED = "PRECOMMITTED"


@dataclass(frozen=True, slots=True)
class PendingRowset:
    """A rowset a precommitted txn wrote and has not published: the backend it was written
    on and its tablet's partition, so the publish (maybe after a restart) needs nothing else."""

    rowset: RowsetMeta
    backend_id: int
    partition_id: int


@dataclass(frozen=True, slots=True)
class TxnMeta:
    """A load transaction; its label is unique per database (Doris label dedup)."""

    txn_id: int
    db_id: int
    label: str
    table_ids: tuple[int, ...]
    status: TxnStatus
    num_rows: int = 0
    create_time: float = 0.0
    finish_time: float = 0.0
    kind: str = "LOAD"  # LOAD | DELETE
    detail: str = ""  # DELETE: the condition as SHOW DELETE prints it
    partition_names: tuple[str, ...] = ()
    # Two-phase commit and SHOW TRANSACTION (Doris TransactionState): the rowsets waiting for
    # the commit (PRECOMMITTED only), when the first phase ended, the txn's source
    # (LoadJobSourceType), its timeout and why it was aborted.
    pending: tuple[PendingRowset, ...] = ()
    precommit_time: float = 0.0
    source_type: str = ""
    timeout_ms: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Backend:
    backend_id: int
    host: str
    root_path: str  # relative to the data dir (storage/data_dir.py)
    heartbeat_port: int = 9050
    be_port: int = 9060
    http_port: int = 8040
    alive: bool = True


@dataclass(frozen=True, slots=True)
class ColocateGroup:
    """Colocation Group Schema (seed 000): buckets, distribution column types,
    bucket -> backends."""

    group_id: int
    db_id: int
    name: str
    buckets: int
    column_types: tuple[DataType, ...]
    replication_num: int = 1
    backends_per_bucket: tuple[tuple[int, ...], ...] = ()
    # Doris marks a group unstable while the balancer moves its buckets; colocate joins then
    # fall back. Embedded backends never move on their own: only the debug API changes it.
    stable: bool = True

    @property
    def is_stable(self) -> bool:
        return self.stable


@dataclass(frozen=True, slots=True)
class AlterJobMeta:
    """An ALTER TABLE job. `job_type` "ROLLUP": ADD ROLLUP (storage/rollup_job.py), listed by
    SHOW ALTER TABLE ROLLUP; "SCHEMA_CHANGE": ADD / DROP INDEX or SET bloom filter properties
    (storage/index_job.py), listed by SHOW ALTER TABLE COLUMN.

    `state`: PENDING -> WAITING_TXN -> RUNNING -> FINISHED, or CANCELLED (with `msg`).
    `rollup_index_id` is the shadow index the job builds; `base_index_id` the index it reads
    (a schema change job names the base index in both).
    """

    job_id: int
    db_id: int
    table_id: int
    table_name: str
    base_index_id: int
    base_index_name: str
    rollup_index_id: int
    rollup_index_name: str
    state: str = "PENDING"
    msg: str = ""
    create_time: float = 0.0
    finish_time: float = 0.0
    transaction_id: int = 0  # watershed: loads with a higher txn id write the shadow index
    timeout: int = 86400
    progress: str = "N/A"
    job_type: str = "ROLLUP"
    # SCHEMA_CHANGE: the table's index definitions and bloom filter properties before the job,
    # restored by CANCEL
    old_indexes: tuple[IndexDef, ...] = ()
    old_properties: tuple[tuple[str, str], ...] = ()
    schema_version: int = 0


@dataclass(frozen=True, slots=True)
class TableMeta:
    """An OLAP table. `properties` keeps the user's PROPERTIES verbatim, in declaration order."""

    table_id: int
    db_id: int
    name: str
    keys_type: KeysType
    columns: tuple[ColumnMeta, ...]
    partition_info: PartitionInfo
    distribution: DistributionInfo
    base_index_id: int
    properties: tuple[tuple[str, str], ...] = ()
    indexes: tuple[IndexDef, ...] = ()
    comment: str = ""
    create_time: float = 0.0
    engine: str = "OLAP"
    colocate_group_id: int | None = None
    extra: tuple[tuple[str, str], ...] = field(default=())

    @property
    def key_columns(self) -> tuple[ColumnMeta, ...]:
        return tuple(c for c in self.columns if c.is_key)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> ColumnMeta:
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        raise KeyError(name)

    def has_column(self, name: str) -> bool:
        low = name.lower()
        return any(c.name.lower() == low for c in self.columns)

    def property(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.properties:
            if k == key:
                return v
        return default

    def with_properties(self, updates: dict[str, str]) -> TableMeta:
        props = dict(self.properties)
        props.update(updates)
        return replace(self, properties=tuple(props.items()))


# ---- accounts and privileges (server/privileges/ owns their meaning) ------------------------
@dataclass(frozen=True, slots=True)
class GrantMeta:
    """Privileges on one resource pattern: `ctl.db.tbl` with `*` for "every" (Doris'
    TablePattern), privilege names as Doris spells them (`SELECT_PRIV`, ...)."""

    ctl: str
    db: str
    tbl: str
    privileges: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class UserMeta:
    """One user identity `'name'@'host'` (Doris' UserIdentity + its password and properties).
    `ident` is `name@host`, the repository key."""

    ident: str
    name: str
    host: str
    plugin: str = "mysql_native_password"
    native_hash: str = ""  # hex SHA1(SHA1(password)); "" = empty password
    sha2_salt: str = ""
    sha2_hash: str = ""
    roles: tuple[str, ...] = ()
    grants: tuple[GrantMeta, ...] = ()
    comment: str = ""
    require_ssl: bool = False
    # password policy (Doris PasswordPolicy); -1 = DEFAULT/unset, 0 = NEVER/off
    failed_login_attempts: int = 0
    password_lock_seconds: int = 0  # -1 = UNBOUNDED
    password_expire_days: int = -1  # -1 = DEFAULT (global default_password_lifetime), 0 = NEVER
    password_history: int = -1  # -1 = DEFAULT (global password_history)
    password_changed_at: float = 0.0
    password_hash_history: tuple[str, ...] = ()
    locked_until: float = 0.0  # epoch seconds; -1 = until unlocked by ALTER USER
    max_user_connections: int = 100  # Doris' default user property


@dataclass(frozen=True, slots=True)
class RoleMeta:
    """A role (Doris' Role): a name and its grants."""

    name: str
    grants: tuple[GrantMeta, ...] = ()
    comment: str = ""


@dataclass(frozen=True, slots=True)
class LoadRecordMeta:
    """One ended (or two-phase, waiting) load as SHOW LOAD / SHOW STREAM LOAD print it (Doris'
    StreamLoadRecord / LoadJob info): kept in memory by executor/load/records.py and in the
    repository's `load_records` table, keyed by `job_id`."""

    label: str
    db: str
    table: str
    load_type: str
    state: str
    status: str
    message: str = ""
    txn_id: int = -1
    total_rows: int = 0
    loaded_rows: int = 0
    filtered_rows: int = 0
    unselected_rows: int = 0
    load_bytes: int = 0
    error_url: str = ""
    user: str = ""
    client_ip: str = ""
    comment: str = ""
    timeout_s: int = 0
    start_time: float = field(default_factory=time.time)
    finish_time: float = field(default_factory=time.time)
    max_filter_ratio: float = 0.0
    job_id: int = 0  # assigned when recorded (executor/load/records.py)


@dataclass(frozen=True, slots=True)
class ExportJobMeta:
    """One EXPORT job's SHOW EXPORT row as it was last shown (server/export_jobs.py; Doris'
    ExportJob in the FE journal). Kept in the repository's `export_jobs` table by `job_id`."""

    job_id: int
    db: str
    label: str
    state: str
    row: tuple[str, ...] = ()
