"""Table PROPERTIES: the keys we know, their defaults and Doris' validation wording.

PROPERTIES are kept verbatim on the table (what the user wrote, in order); this module checks
the keys whose meaning we implement (replication, colocate_with, bloom filters,
dynamic_partition.*, merge-on-write) and lists the defaults SHOW CREATE TABLE prints.
Colocate group membership itself is checked in `ddl.py`, where the catalog is at hand.
Upstream: Doris `PropertyAnalyzer`, `DynamicPartitionUtil`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sql.errors import DorisError
from storage.catalog.meta import ColumnMeta, KeysType, PartitionInfo, PartitionType
from storage.types import TypeKind

DYNAMIC_PREFIX = "dynamic_partition."

DYNAMIC_KEYS = (
    "enable", "time_unit", "time_zone", "start", "end", "prefix", "buckets", "replication_num",
    "replication_allocation", "create_history_partition", "history_partition_num",
    "start_day_of_week", "start_day_of_month", "reserved_history_periods", "hot_partition_num",
    "storage_medium", "storage_policy",
)

# Keys accepted on CREATE TABLE / ALTER TABLE SET besides dynamic_partition.*.
KNOWN_KEYS = frozenset({
    "replication_num", "replication_allocation", "colocate_with", "bloom_filter_columns",
    "bloom_filter_fpp", "storage_medium", "storage_cooldown_time", "storage_format",
    "storage_policy", "light_schema_change", "disable_auto_compaction", "compression",
    "in_memory", "enable_unique_key_merge_on_write", "function_column.sequence_col",
    "function_column.sequence_type", "store_row_column", "is_being_synced", "compaction_policy",
    "time_series_compaction_goal_size_mbytes", "time_series_compaction_file_count_threshold",
    "time_series_compaction_time_threshold_seconds", "skip_write_index_on_load",
    "enable_single_replica_compaction", "group_commit_interval_ms", "group_commit_data_bytes",
    "estimate_partition_size", "min_load_replica_num", "enable_mow_light_delete",
    "enable_duplicate_without_keys_by_default", "binlog.enable", "auto_bucket",
    "inverted_index_storage_format",
})

_BLOOM_UNSUPPORTED = {TypeKind.TINYINT, TypeKind.FLOAT, TypeKind.DOUBLE, TypeKind.BOOLEAN,
                      TypeKind.HLL, TypeKind.BITMAP}

_TIME_UNITS = ("HOUR", "DAY", "WEEK", "MONTH", "YEAR")


def replication_num(props: dict[str, str], backends: int) -> int:
    """Replica count from replication_num / replication_allocation (default 1)."""
    num = 1
    if "replication_num" in props:
        num = _int_prop(props["replication_num"], "replication_num")
    if "replication_allocation" in props:
        m = re.fullmatch(r"\s*tag\.location\.(\w+)\s*:\s*(\d+)\s*", props["replication_allocation"])
        if not m:
            raise DorisError(f"Invalid replication allocation property: {props['replication_allocation']}")
        num = int(m.group(2))
    if num <= 0:
        raise DorisError("Total replication num should between 1 and 32767")
    if num > backends:
        raise DorisError(
            "Failed to find enough backend, please check the replication num,replication tag and "
            f"storage medium and avail capacity of backends.\nCreate failed replications:\n"
            f"replication tag: {{\"location\" : \"default\"}}, replication num: {num}, "
            f"storage medium: HDD, available backends: {backends}"
        )
    return num


def _int_prop(value: str, name: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise DorisError(f"Invalid {name} value: {value}") from None


def validate_known(props: dict[str, str]) -> None:
    unknown = {
        k: v for k, v in props.items()
        if k not in KNOWN_KEYS and not k.startswith(DYNAMIC_PREFIX)
    }
    if unknown:
        text = ", ".join(f"{k}={v}" for k, v in unknown.items())
        raise DorisError(f"Unknown properties: {{{text}}}")


def validate_bloom_filter(
    props: dict[str, str], columns: Sequence[ColumnMeta], keys_type: KeysType
) -> tuple[str, ...]:
    """Doris `PropertyAnalyzer.analyzeBloomFilterColumns` then `analyzeBloomFilterFpp` (checks
    and messages in Doris' order; on AGG_KEYS tables only key columns qualify)."""
    raw = props.get("bloom_filter_columns")
    names: list[str] = []
    if raw is not None and raw.strip():
        names = [n.strip() for n in raw.split(",")]
    by_name = {c.name.lower(): c for c in columns}
    seen: set[str] = set()
    for name in names:
        col = by_name.get(name.lower())
        if col is None:
            raise DorisError(f"Bloom filter column does not exist in table. invalid column: {name}")
        if col.type.kind in _BLOOM_UNSUPPORTED:
            raise DorisError(
                f"{col.type.kind.value} is not supported in bloom filter index. invalid column: {name}"
            )
        if keys_type is KeysType.AGG_KEYS and not col.is_key:
            raise DorisError(
                "Bloom filter index should only be used in columns of UNIQUE_KEYS/DUP_KEYS table or "
                f"key columns of AGG_KEYS table. invalid column: {name}"
            )
        if name.lower() in seen:
            raise DorisError(f"Reduplicated bloom filter column: {name}")
        seen.add(name.lower())
    if "bloom_filter_fpp" in props:
        try:
            fpp = float(props["bloom_filter_fpp"])
        except ValueError:
            raise DorisError("Bloom filter fpp is not Double") from None
        if not 0.0001 <= fpp <= 0.05:
            # Java prints the bounds with Double.toString
            raise DorisError("Bloom filter fpp should in [1.0E-4, 0.05]")
    return tuple(names)


def validate_dynamic_partition(
    props: dict[str, str], partition_info: PartitionInfo, columns: Sequence[ColumnMeta]
) -> None:
    """Checks in Doris' order (DynamicPartitionUtil.checkInputDynamicPartitionProperties)."""
    dyn = {k[len(DYNAMIC_PREFIX):]: v for k, v in props.items() if k.startswith(DYNAMIC_PREFIX)}
    if not dyn:
        return
    unknown = [f"{DYNAMIC_PREFIX}{k}" for k in dyn if k not in DYNAMIC_KEYS]
    if unknown:
        raise DorisError(f"Invalid dynamic partition properties: {', '.join(unknown)}")
    if partition_info.type is not PartitionType.RANGE or len(partition_info.columns) != 1:
        raise DorisError("Dynamic partition only support single-column range partition")
    part_col = next(c for c in columns if c.name.lower() == partition_info.columns[0].lower())
    if not (part_col.type.is_temporal or part_col.type.is_integer):
        raise DorisError("Dynamic Partition Only Support DATE, DATETIME and INTEGER Type Now.")
    enable = dyn.get("enable", "true")
    if enable.lower() not in ("true", "false"):
        raise DorisError(f"Invalid dynamic partition enable: {enable}. Expected true or false")
    if "time_unit" not in dyn:
        raise DorisError("Must assign dynamic_partition.time_unit properties")
    if "prefix" not in dyn:
        raise DorisError("Must assign dynamic_partition.prefix properties")
    if "end" not in dyn:
        raise DorisError("Must assign dynamic_partition.end properties")
    unit = dyn["time_unit"].upper()
    if unit not in _TIME_UNITS:
        raise DorisError(f"Unsupported time unit {dyn['time_unit']}. Expect HOUR/DAY/WEEK/MONTH/YEAR.")
    if unit == "HOUR" and part_col.type.kind is TypeKind.DATE:
        raise DorisError(
            f"dynamic_partition.time_unit could not be HOUR when type of partition column "
            f"{part_col.name} is DATE or DATEV2"
        )
    if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", dyn["prefix"]):
        raise DorisError(f"Invalid dynamic partition prefix: {dyn['prefix']}.")
    start = -2147483648
    if "start" in dyn:
        start = _dyn_int(dyn["start"], "start")
        if start >= 0:
            raise DorisError("Dynamic partition start must less than 0")
    end = _dyn_int(dyn["end"], "end")
    if end <= 0:
        raise DorisError("Dynamic partition end must greater than 0")
    if "buckets" in dyn and _dyn_int(dyn["buckets"], "buckets", "buckets") <= 0:
        raise DorisError("Dynamic partition buckets must greater than 0")
    history = dyn.get("create_history_partition", "false").lower()
    if history not in ("true", "false"):
        raise DorisError(f"Invalid dynamic partition create_history_partition: {history}. "
                         "Expected true or false")
    if "start_day_of_week" in dyn and not 1 <= _dyn_int(dyn["start_day_of_week"], "start_day_of_week") <= 7:
        raise DorisError("dynamic_partition.start_day_of_week should between 1 and 7")
    if "start_day_of_month" in dyn and not 1 <= _dyn_int(dyn["start_day_of_month"], "start_day_of_month") <= 28:
        raise DorisError("dynamic_partition.start_day_of_month should between 1 and 28")
    lo = start if history == "true" else 0
    if history == "true" and "history_partition_num" in dyn:
        num = _dyn_int(dyn["history_partition_num"], "history_partition_num")
        if num > 0:
            lo = max(start, -num)
    if end - lo > 500:
        raise DorisError(f"Too many dynamic partitions: {end - lo}. Limit: 500")


def _dyn_int(value: str, name: str, what: str | None = None) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise DorisError(f"Invalid dynamic partition {what or name} {value}") from None


def default_properties(keys_type: KeysType, props: dict[str, str], replicas: int) -> list[tuple[str, str]]:
    """PROPERTIES as SHOW CREATE TABLE prints them: defaults merged with the user's values."""
    out: list[tuple[str, str]] = [
        ("replication_allocation", f"tag.location.default: {replicas}"),
        ("min_load_replica_num", props.get("min_load_replica_num", "-1")),
        ("is_being_synced", props.get("is_being_synced", "false")),
        ("storage_medium", props.get("storage_medium", "hdd")),
        ("storage_format", props.get("storage_format", "V2")),
        ("inverted_index_storage_format", "V1"),
    ]
    if keys_type is KeysType.UNIQUE_KEYS:
        out.append(("enable_unique_key_merge_on_write",
                    props.get("enable_unique_key_merge_on_write", "true")))
    out += [
        ("light_schema_change", props.get("light_schema_change", "true")),
        ("disable_auto_compaction", props.get("disable_auto_compaction", "false")),
        ("enable_single_replica_compaction", props.get("enable_single_replica_compaction", "false")),
        ("group_commit_interval_ms", props.get("group_commit_interval_ms", "10000")),
        ("group_commit_data_bytes", props.get("group_commit_data_bytes", "134217728")),
    ]
    emitted = {k for k, _ in out} | {"replication_num", "replication_allocation"}
    for k, v in props.items():
        if k == "bloom_filter_columns":  # Doris prints its column set joined by ", "
            v = ", ".join(n.strip() for n in v.split(",") if n.strip())
        if k not in emitted:
            out.append((k, v))
    return out
