"""Table PROPERTIES: the keys we know, their defaults and Doris' validation wording.

PROPERTIES are kept verbatim on the table (what the user wrote, in order); this module checks
the keys whose meaning we implement (replication, colocate_with, bloom filters,
dynamic_partition.*, merge-on-write) and lists the defaults SHOW CREATE TABLE prints.
Colocate group membership itself is checked in `ddl.py`, where the catalog is at hand.
Upstream: Doris `PropertyAnalyzer`, `DynamicPartitionUtil`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Sequence
from contextvars import ContextVar

from sql.ddl.dynamic_partition import parse_time_zone
from sql.errors import DorisError, ErrorCode
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
                      TypeKind.HLL, TypeKind.BITMAP, TypeKind.ARRAY, TypeKind.MAP,
                      TypeKind.STRUCT}

_TIME_UNITS = ("HOUR", "DAY", "WEEK", "MONTH", "YEAR")


def replication_num(props: dict[str, str], backends: int) -> int:
    """Replica count from replication_num / replication_allocation (default 1)."""
    num = 1
    if "replication_num" in props:
        num = _int_prop(props["replication_num"], "replication_num")
    if "replication_allocation" in props:
        m = re.fullmatch(r"\s*tag\.location\.(\w+)\s*:\s*(\d+)\s*", props["replication_allocation"])
        if not m:
            raise DorisError(
                f"Invalid replication allocation property: {props['replication_allocation']}")
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
                f"{col.type.kind.value} is not supported in bloom filter index. invalid column: "
                f"{name}"
            )
        if keys_type is KeysType.AGG_KEYS and not col.is_key:
            raise DorisError(
                "Bloom filter index should only be used in columns of UNIQUE_KEYS/DUP_KEYS table "
                "or "
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


# The FE config max_dynamic_partition_num for the statement being analysed (the server sets it
# around CREATE / ALTER from its frontend configs; 500 is Doris' default).
MAX_DYNAMIC_PARTITION_NUM: ContextVar[int] = ContextVar("max_dynamic_partition_num", default=500)


def validate_dynamic_partition(
    props: dict[str, str], partition_info: PartitionInfo, columns: Sequence[ColumnMeta],
    buckets: int | None = None, colocate: bool = False, max_partitions: int | None = None,
) -> None:
    """Checks in Doris' order and wording: DynamicPartitionUtil.checkInputDynamicPartitionProperties
    (the required keys, when any of the main ones is given), then analyzeDynamicPartition (one
    check per key in its fixed order). `buckets` / `colocate`: the table's bucket count and
    whether it is colocated (Doris: a colocate table's dynamic buckets must equal it)."""
    dyn = {k[len(DYNAMIC_PREFIX):]: v for k, v in props.items() if k.startswith(DYNAMIC_PREFIX)}
    if not dyn:
        return
    if max_partitions is None:
        max_partitions = MAX_DYNAMIC_PARTITION_NUM.get()
    unknown = [f"{DYNAMIC_PREFIX}{k}" for k in dyn if k not in DYNAMIC_KEYS]
    if unknown:
        raise DorisError(f"Invalid dynamic partition properties: {', '.join(unknown)}")
    if partition_info.type is not PartitionType.RANGE or len(partition_info.columns) != 1:
        raise DorisError("Dynamic partition only support single-column range partition")
    part_col = next(c for c in columns if c.name.lower() == partition_info.columns[0].lower())
    if not (part_col.type.is_temporal or part_col.type.is_integer):
        raise DorisError("Dynamic Partition Only Support DATE, DATETIME and INTEGER Type Now.")
    main = ("enable", "time_unit", "time_zone", "prefix", "start", "end", "buckets",
            "create_history_partition", "history_partition_num", "reserved_history_periods")
    if any(dyn.get(k) for k in main):
        for key in ("time_unit", "prefix", "end"):
            if not dyn.get(key):
                raise DorisError(f"Must assign dynamic_partition.{key} properties")
    if "time_unit" in dyn:
        unit = dyn["time_unit"].strip().upper()
        if unit not in _TIME_UNITS:
            raise DorisError(
                f"Unsupported time unit {dyn['time_unit']}. Expect HOUR/DAY/WEEK/MONTH/YEAR.")
        if unit == "HOUR" and part_col.type.kind is TypeKind.DATE:
            raise DorisError(
                f"dynamic_partition.time_unit could not be HOUR when type of partition column "
                f"{part_col.name} is DATE or DATEV2")
        if unit == "HOUR" and part_col.type.is_integer:
            raise DorisError(f"dynamic_partition.time_unit could not be HOUR when type of "
                             f"partition column {part_col.name} is Integer")
    if "prefix" in dyn and not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9_]*", dyn["prefix"]):
        raise DorisError(f"Invalid dynamic partition prefix: {dyn['prefix']}.")
    if "buckets" in dyn:
        if not dyn["buckets"].strip():
            raise DorisError("Dynamic partition buckets is empty")
        if _dyn_int(dyn["buckets"], "buckets") <= 0:
            raise DorisError("Dynamic partition buckets must greater than 0")
    enable = dyn.get("enable", "true")
    if enable.strip().lower() not in ("true", "false"):
        raise DorisError(f"Invalid dynamic partition enable: {enable}. Expected true or false")
    start = -2147483648
    if "start" in dyn:
        start = _dyn_int(dyn["start"], "start")
        if start >= 0:
            raise DorisError("Dynamic partition start must less than 0")
    end = None
    if "end" in dyn:
        if not dyn["end"].strip():
            raise DorisError("Dynamic partition end is empty")
        end = _dyn_int(dyn["end"], "end")
        # an AUTO PARTITION table may leave creation to its loads (end = 0, Doris 2.1.7)
        if end < 0 or (end == 0 and not partition_info.auto):
            raise DorisError("Dynamic partition end must greater than 0")
    history = dyn.get("create_history_partition", "false")
    if history.strip().lower() not in ("true", "false"):
        raise DorisError(f"Invalid dynamic partition create_history_partition: {history}. "
                         "Expected true or false")
    history_num = -1
    if "history_partition_num" in dyn:
        history_num = _plain_int(dyn["history_partition_num"], "history_partition_num")
        if history_num < 0 and history_num != -1:
            raise DorisError("Dynamic history partition num must greater than 0")
    lo = 0
    if history.strip().lower() == "true":
        lo = start if history_num == -1 else max(start, -history_num)
        if lo == -2147483648:
            raise DorisError("Provide start or history_partition_num property when "
                             "create_history_partition=true. Otherwise set "
                             "create_history_partition=false")
    if end is not None and end - lo > max_partitions and enable.strip().lower() == "true":
        raise DorisError(f"Too many dynamic partitions: {end - lo}. Limit: {max_partitions}")
    for key, top in (("start_day_of_month", 28), ("start_day_of_week", 7)):
        if key in dyn and not 1 <= _plain_int(dyn[key], key) <= top:
            raise DorisError(f"dynamic_partition.{key} should between 1 and {top}")
    if "time_zone" in dyn:
        try:
            parse_time_zone(dyn["time_zone"])
        except ValueError:
            raise DorisError(f"Unknown or incorrect time zone: '{dyn['time_zone']}'",
                             ErrorCode.UNKNOWN_TIME_ZONE) from None
    if "hot_partition_num" in dyn:
        try:
            hot = int(dyn["hot_partition_num"].strip())
        except ValueError:
            raise DorisError("Invalid dynamic_partition.hot_partition_num value") from None
        if hot < 0:
            raise DorisError("dynamic_partition.hot_partition_num must larger than 0.")
    if "replication_allocation" not in dyn and "replication_num" in dyn:
        value = dyn["replication_num"]
        if not value.strip():
            raise DorisError("Invalid properties: dynamic_partition.replication_num")
        try:
            replicas = int(value.strip())
        except ValueError:
            raise DorisError(f"Invalid dynamic partition replication num: {value}.") from None
        if replicas <= 0:
            raise DorisError("Dynamic partition replication num must greater than 0")
    if "reserved_history_periods" in dyn:
        _check_reserved_periods(dyn["reserved_history_periods"],
                                dyn.get("time_unit", "DAY").strip().upper())
    if "storage_medium" in dyn and dyn["storage_medium"].strip().upper() not in ("SSD", "HDD"):
        raise DorisError(f"invalid storage medium: {dyn['storage_medium']}. Should be SSD or HDD")
    if colocate and buckets is not None and "buckets" in dyn \
            and int(dyn["buckets"]) != buckets:
        raise DorisError("Dynamic partition buckets must equal the distribution buckets if "
                         f"creating a colocate table: {buckets}")


_RESERVED_INVALID = (
    'Invalid " dynamic_partition.reserved_history_periods " value {}. It must be like '
    '"[yyyy-MM-dd,yyyy-MM-dd],[...,...]" while time_unit is DAY/WEEK/MONTH or '
    '"[yyyy-MM-dd HH:mm:ss,yyyy-MM-dd HH:mm:ss],[...,...]" while time_unit is HOUR.')


def _check_reserved_periods(text: str, unit: str) -> None:
    """DynamicPartitionUtil.checkReservedHistoryPeriodValidate."""
    if not text.strip():
        raise DorisError("Dynamic reserved history periods is empty.")
    if text == "NULL":
        return
    if not (text.startswith("[") and text.endswith("]")):
        raise DorisError(_RESERVED_INVALID.format(text))
    if unit == "HOUR":
        pattern = (r"\[([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}),"
                   r"([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})\]")
        fmt = "%Y-%m-%d %H:%M:%S"
    else:
        pattern = r"\[([0-9]{4}-[0-9]{2}-[0-9]{2}),([0-9]{4}-[0-9]{2}-[0-9]{2})\]"
        fmt = "%Y-%m-%d"
    pairs = re.findall(pattern, text)
    for lo, hi in pairs:
        if lo > hi:
            raise DorisError(f"The first date is larger than the second date, [{lo},{hi}] is "
                             "invalid.")
    if len(pairs) != len(text.split("],[")):
        raise DorisError(_RESERVED_INVALID.format(text))
    for lo, hi in pairs:
        for value in (lo, hi):
            try:
                dt.datetime.strptime(value, fmt)
            except ValueError:
                raise DorisError(
                    "Invalid dynamic_partition.reserved_history_periods value. It must be "
                    'correct DATE value "[yyyy-MM-dd,yyyy-MM-dd],[...,...]" while time_unit is '
                    'DAY/WEEK/MONTH or "[yyyy-MM-dd HH:mm:ss,yyyy-MM-dd HH:mm:ss],[...,...]" '
                    "while time_unit is HOUR.") from None


def _plain_int(value: str, key: str) -> int:
    """Doris' `Invalid properties: dynamic_partition.<key>` for an empty or non-integer value."""
    try:
        return int(value.strip())
    except ValueError:
        raise DorisError(f"Invalid properties: dynamic_partition.{key}") from None


def _dyn_int(value: str, name: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise DorisError(f"Invalid dynamic partition {name} {value}") from None


def dynamic_partition_properties(props: dict[str, str], replicas: int, buckets: int | None
                                 ) -> list[tuple[str, str]]:
    """The dynamic_partition.* block of SHOW CREATE TABLE as Doris 2.1 prints it: every key
    with its default, in Doris' order (start_day_of_week / _of_month only for WEEK / MONTH);
    [] when the table has no dynamic partition rule."""
    dyn = {k[len(DYNAMIC_PREFIX):]: v for k, v in props.items() if k.startswith(DYNAMIC_PREFIX)}
    if not dyn.get("time_unit"):
        return []
    if "replication_allocation" in dyn:
        allocation = dyn["replication_allocation"]
    elif "replication_num" in dyn:
        allocation = f"tag.location.default: {dyn['replication_num'].strip()}"
    else:
        allocation = f"tag.location.default: {replicas}"
    out = [
        ("enable", dyn.get("enable", "true")), ("time_unit", dyn["time_unit"]),
        ("time_zone", dyn.get("time_zone") or local_zone_name()),
        ("start", dyn.get("start", "-2147483648")), ("end", dyn.get("end", "")),
        ("prefix", dyn.get("prefix", "")), ("replication_allocation", allocation),
        ("buckets", dyn.get("buckets", str(buckets) if buckets is not None else "")),
        ("create_history_partition", dyn.get("create_history_partition", "false")),
        ("history_partition_num", dyn.get("history_partition_num", "-1")),
        ("hot_partition_num", dyn.get("hot_partition_num", "0")),
        ("reserved_history_periods", dyn.get("reserved_history_periods", "NULL")),
        ("storage_policy", dyn.get("storage_policy", "")),
    ]
    if dyn.get("storage_medium"):
        out.append(("storage_medium", dyn["storage_medium"].upper()))
    unit = dyn["time_unit"].strip().upper()
    if unit == "WEEK":
        out.append(("start_day_of_week", dyn.get("start_day_of_week", "1")))
    elif unit == "MONTH":
        out.append(("start_day_of_month", dyn.get("start_day_of_month", "1")))
    return [(DYNAMIC_PREFIX + k, v) for k, v in out]


def local_zone_name() -> str:
    """The server's IANA time zone name (Doris prints TimeUtils.getSystemTimeZone's id)."""
    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        return name
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    return "Etc/UTC"


def default_properties(keys_type: KeysType, props: dict[str, str], replicas: int,
                       buckets: int | None = None) -> list[tuple[str, str]]:
    """PROPERTIES as SHOW CREATE TABLE prints them: defaults merged with the user's values.
    `buckets`: the table's bucket count (the default of dynamic_partition.buckets)."""
    dynamic = dynamic_partition_properties(props, replicas, buckets)
    out: list[tuple[str, str]] = [
        ("replication_allocation", f"tag.location.default: {replicas}"),
        ("min_load_replica_num", props.get("min_load_replica_num", "-1")),
        ("is_being_synced", props.get("is_being_synced", "false")),
        *dynamic,
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
        ("enable_single_replica_compaction",
         props.get("enable_single_replica_compaction", "false")),
        ("group_commit_interval_ms", props.get("group_commit_interval_ms", "10000")),
        ("group_commit_data_bytes", props.get("group_commit_data_bytes", "134217728")),
    ]
    emitted = {k for k, _ in out} | {"replication_num", "replication_allocation"}
    for k, v in props.items():
        if k == "bloom_filter_columns":  # Doris prints its column set joined by ", "
            v = ", ".join(n.strip() for n in v.split(",") if n.strip())
        if k not in emitted and not (dynamic and k.startswith(DYNAMIC_PREFIX)):
            out.append((k, v))
    return out
