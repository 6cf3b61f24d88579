"""Session variables: the registry of Doris' variables with their names, types and defaults.

A `GlobalVariables` instance is shared by the server (SET GLOBAL writes it); each connection has
`SessionVariables` that fall back to the global values. Both follow mysql-mimic's `Variables`
interface so its connection code (charset, version, user) reads them unchanged. Converters are
explicit because `bool("false")` is True (LIBS.md 1.6). Names and defaults follow Doris 2.1's
`SessionVariable` / `GlobalVariable`.

It is the one place that knows a variable's name, default and parser: a bad value is refused at
SET (MySQL errors 1231 / 1232, as Doris), and `query_options` turns the values into the typed,
frozen `sql.options.QueryOptions` a statement is planned and run under; `connection_options`
does the same for what the protocol and session code reads (packet limit, timeouts, ...), so no
other module reads a variable by name or repeats its default.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mysql_mimic.variables import DEFAULT, Variables

from sql.errors import DorisError, ErrorCode, ShaleError
from sql.options import QueryOptions
from storage.group_commit import MODES as GROUP_COMMIT_MODES

SERVER_VERSION = "5.7.99"
VERSION_COMMENT = "ShaleDB 0.1.0 (Apache Doris 2.1 compatible)"


class VariableValueError(ShaleError):
    pass


def to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if value in (0, 1):
            return bool(value)
        raise ValueError(value)
    text = str(value).strip().lower()
    if text in ("1", "true", "on", "yes"):
        return True
    if text in ("0", "false", "off", "no"):
        return False
    raise ValueError(value)


def to_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    return int(str(value).strip())


def to_float(value: Any) -> float:
    return float(str(value).strip())


def to_str(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def to_choice(value: Any, choices: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in choices:
        raise ValueError(value)
    return text


# name: (converter, default, dynamic)
Schema = tuple[Callable[[Any], Any], Any, bool]

VARIABLES: dict[str, Schema] = {
    # --- MySQL compatibility (what drivers and BI tools read on connect) ---
    "auto_increment_increment": (to_int, 1, True),
    "autocommit": (to_bool, True, True),
    "character_set_client": (to_str, "utf8mb4", True),
    "character_set_connection": (to_str, "utf8mb4", True),
    "character_set_database": (to_str, "utf8mb4", True),
    "character_set_results": (to_str, "utf8mb4", True),
    "character_set_server": (to_str, "utf8mb4", True),
    "collation_connection": (to_str, "utf8mb4_0900_bin", True),
    "collation_database": (to_str, "utf8mb4_0900_bin", True),
    "collation_server": (to_str, "utf8mb4_0900_bin", True),
    # seconds a new connection may take to log in (server/connection.py), as MySQL's
    "connect_timeout": (to_int, 10, True),
    "default_storage_engine": (to_str, "olap", True),
    "default_tmp_storage_engine": (to_str, "olap", True),
    "div_precision_increment": (to_int, 4, True),
    "event_scheduler": (to_str, "OFF", True),
    "external_user": (to_str, "", False),
    "group_concat_max_len": (to_int, 2147483646, True),
    "have_query_cache": (to_str, "YES", False),
    "init_connect": (to_str, "", True),
    "interactive_timeout": (to_int, 3600, True),
    "language": (to_str, "/palo/share/english/", False),
    "license": (to_str, "Apache License, Version 2.0", False),
    "lower_case_table_names": (to_int, 0, False),
    "max_allowed_packet": (to_int, 16777216, True),
    "max_execution_time": (to_int, -1, True),
    "net_buffer_length": (to_int, 16384, True),
    "net_read_timeout": (to_int, 600, True),
    "net_write_timeout": (to_int, 600, True),
    "performance_schema": (to_bool, False, False),
    "query_cache_size": (to_int, 1048576, True),
    "query_cache_type": (to_int, 0, True),
    # refuse logins that do not use TLS (MySQL's error 3159); seeded from conf/shaledb.toml
    "require_secure_transport": (to_bool, False, True),
    "session_track_gtids": (to_str, "OFF", True),
    "session_track_schema": (to_bool, True, True),
    "session_track_state_change": (to_bool, False, True),
    # MySQL 8 drivers set these on connect (mysql-connector-python, Connector/J): accepted and
    # stored; ShaleDB does not send session-state-change info in OK packets.
    "session_track_system_variables": (to_str, "*", True),
    "session_track_transaction_info": (to_str, "OFF", True),
    "sql_auto_is_null": (to_bool, False, True),
    "sql_mode": (to_str, "ONLY_FULL_GROUP_BY", True),
    "sql_safe_updates": (to_int, 0, True),
    "sql_select_limit": (to_int, 9223372036854775807, True),
    "system_time_zone": (to_str, "UTC", False),
    "time_zone": (to_str, "UTC", True),
    "transaction_isolation": (to_str, "REPEATABLE-READ", True),
    "transaction_read_only": (to_bool, False, True),
    "tx_isolation": (to_str, "REPEATABLE-READ", True),
    "tx_read_only": (to_bool, False, True),
    "version": (to_str, SERVER_VERSION, False),
    "version_comment": (to_str, VERSION_COMMENT, False),
    "wait_timeout": (to_int, 28800, True),
    # --- Doris password policy defaults (GlobalVariable; PASSWORD_HISTORY / PASSWORD_EXPIRE
    # DEFAULT of an account use them; 0 = off) ---
    "password_history": (to_int, 0, True),
    "default_password_lifetime": (to_int, 0, True),
    # --- Doris execution ---
    "query_timeout": (to_int, 900, True),
    # Doris GlobalVariable: statements longer than this (UTF-8 bytes) are cut in the audit log.
    "audit_plugin_max_sql_length": (to_int, 4096, True),
    "insert_timeout": (to_int, 14400, True),
    "exec_mem_limit": (to_int, 2147483648, True),
    "load_mem_limit": (to_int, 2147483648, True),
    "batch_size": (to_int, 4064, True),
    "parallel_fragment_exec_instance_num": (to_int, 8, True),
    "parallel_pipeline_task_num": (to_int, 0, True),
    "enable_pipeline_engine": (to_bool, True, True),
    # ShaleDB: a scan fragment over fewer stored rows runs as one instance on the query's
    # thread (executor/coordinator.py: Python threads and queue hand-offs cost about a
    # millisecond each, more than the work below this); 0 spreads every fragment over the
    # backends
    "shaledb_small_fragment_rows": (to_int, 100000, True),
    "enable_pipeline_x_engine": (to_bool, True, True),
    "enable_local_shuffle": (to_bool, True, True),
    "enable_vectorized_engine": (to_bool, True, True),
    "enable_nereids_planner": (to_bool, True, True),
    "enable_fallback_to_original_planner": (to_bool, True, True),
    "enable_profile": (to_bool, False, True),
    # Doris 2.1: key lookups skip the planner (server/point_query.py: here any
    # `SELECT cols FROM t WHERE col = literal [AND ..]` whose plan is one OLAP scan)
    "enable_short_circuit_query": (to_bool, True, True),
    "enable_spilling": (to_bool, False, True),
    "enable_sql_cache": (to_bool, False, True),
    "enable_query_cache": (to_bool, False, True),
    "cpu_resource_limit": (to_int, -1, True),
    "resource_group": (to_str, "", True),
    "forward_to_master": (to_bool, True, True),
    "default_order_by_limit": (to_int, -1, True),
    "return_object_data_as_binary": (to_bool, False, True),
    "enable_decimal256": (to_bool, False, True),
    "enable_common_expr_pushdown": (to_bool, True, True),
    "enable_projection": (to_bool, True, True),
    "rewrite_count_distinct_to_bitmap_hll": (to_bool, True, True),
    "partition_pruning_expand_threshold": (to_int, 10, True),
    # --- Doris planning: joins, colocation, runtime filters ---
    "disable_colocate_plan": (to_bool, False, True),
    "disable_colocate_join": (to_bool, False, True),
    "enable_bucket_shuffle_join": (to_bool, True, True),
    "enable_bucket_shuffle_downgrade": (to_bool, False, True),
    "disable_join_reorder": (to_bool, False, True),
    "prefer_join_method": (to_str, "broadcast", True),
    "broadcast_row_count_limit": (to_int, 30000000, True),
    "auto_broadcast_join_threshold": (to_float, 0.8, True),
    "runtime_filter_mode": (to_str, "GLOBAL", True),
    "runtime_filter_type": (to_str, "IN_OR_BLOOM_FILTER,MIN_MAX", True),
    "runtime_filter_wait_time_ms": (to_int, 1000, True),
    "runtime_bloom_filter_size": (to_int, 2097152, True),
    "runtime_filter_max_in_num": (to_int, 1024, True),
    "enable_runtime_filter_prune": (to_bool, True, True),
    "disable_nereids_rules": (to_str, "", True),
    # --- Doris loading and DML ---
    "enable_insert_strict": (to_bool, True, True),
    "insert_max_filter_ratio": (to_float, 1.0, True),
    "delete_without_partition": (to_bool, False, True),
    "enable_unique_key_partial_update": (to_bool, False, True),
    "show_hidden_columns": (to_bool, False, True),
    "send_batch_parallelism": (to_int, 1, True),
    "insert_visible_timeout_ms": (to_int, 60000, True),
    "group_commit": (lambda v: to_choice(v, GROUP_COMMIT_MODES), "off_mode", True),
    "max_allowed_in_element_num_of_delete": (to_int, 1024, True),
}


@dataclass(frozen=True)
class ConnectionOptions:
    """The variables the connection and session code reads (server/connection.py, session.py,
    prepared.py, local_infile.py, statement_audit.py), typed. A timeout is in seconds, None when
    the variable is 0 or less (no limit)."""

    max_allowed_packet: int
    connect_timeout: float | None  # the login (read from the global value: no session yet)
    wait_timeout: float | None  # between commands
    net_read_timeout: float | None  # within one packet, and between LOAD DATA LOCAL packets
    require_secure_transport: bool
    version: str  # what the handshake announces
    default_password_lifetime: int  # days; 0 = passwords do not expire
    audit_plugin_max_sql_length: int
    enable_short_circuit_query: bool  # point lookups by statement shape (server/point_query.py)
    return_object_data_as_binary: bool  # BITMAP / HLL as bytes, else NULL (object_columns.py)


def _timeout(seconds: int) -> float | None:
    return float(seconds) if seconds > 0 else None


def build_connection_options(variables: Variables) -> ConnectionOptions:
    get = variables.get_variable  # each value went through its converter at SET
    return ConnectionOptions(
        max_allowed_packet=get("max_allowed_packet"),
        connect_timeout=_timeout(get("connect_timeout")),
        wait_timeout=_timeout(get("wait_timeout")),
        net_read_timeout=_timeout(get("net_read_timeout")),
        require_secure_transport=get("require_secure_transport"),
        version=get("version"),
        default_password_lifetime=get("default_password_lifetime"),
        audit_plugin_max_sql_length=get("audit_plugin_max_sql_length"),
        enable_short_circuit_query=get("enable_short_circuit_query"),
        return_object_data_as_binary=get("return_object_data_as_binary"),
    )


class GlobalVariables(Variables):
    """Server-wide values (SET GLOBAL); defaults come from VARIABLES."""

    def __init__(self, schema: dict[str, Schema] | None = None) -> None:
        self._schema = dict(schema or VARIABLES)
        self._changes = 0  # counts SETs: the cached QueryOptions are stale once it moves
        self._options: tuple[object, QueryOptions] | None = None
        self._connection: tuple[object, ConnectionOptions] | None = None
        super().__init__()

    @property
    def schema(self) -> dict[str, Schema]:
        return self._schema

    def get_schema(self, name: str) -> Schema:
        schema = self._schema.get(name.lower())
        if schema is None:
            raise ShaleError(f"Unknown system variable '{name}'", ErrorCode.UNKNOWN_SYSTEM_VARIABLE)
        return schema

    def set(self, name: str, value: Any, force: bool = False) -> None:
        name = name.lower()
        convert, _default, dynamic = self.get_schema(name)
        if not dynamic and not force:
            raise ShaleError(
                f"Variable '{name}' is a read only variable", ErrorCode.WRONG_VALUE_FOR_VAR
            )
        if value is DEFAULT or value is None:
            self._values[name] = self.default_of(name)
            self._changes += 1
            return
        try:
            converted = convert(value)
        except (TypeError, ValueError):
            if convert in (to_int, to_float):
                raise DorisError(
                    f"Incorrect argument type to variable '{name}'", ErrorCode.WRONG_TYPE_FOR_VAR
                ) from None
            raise DorisError(
                f"Variable '{name}' can't be set to the value of '{value}'",
                ErrorCode.WRONG_VALUE_FOR_VAR,
            ) from None
        if name == "time_zone":
            converted = check_time_zone(converted)
        self._values[name] = converted
        self._changes += 1

    def default_of(self, name: str) -> Any:
        return self.get_schema(name)[1]

    def changes(self) -> object:
        """A value that differs after any SET these values read (the cache key of
        `query_options`)."""
        return self._changes

    def query_options(self) -> QueryOptions:
        """`query_options(self)`, rebuilt only after a SET (about 20 us to build; most
        statements of a session run under unchanged variables)."""
        key = self.changes()
        if self._options is None or self._options[0] != key:
            self._options = (key, build_query_options(self))
        return self._options[1]

    def connection_options(self) -> ConnectionOptions:
        """The connection-level values, rebuilt only after a SET (read for every packet)."""
        key = self.changes()
        if self._connection is None or self._connection[0] != key:
            self._connection = (key, build_connection_options(self))
        return self._connection[1]


class SessionVariables(GlobalVariables):
    """One connection's values; unset names read the global value."""

    def __init__(self, global_variables: GlobalVariables) -> None:
        self.global_variables = global_variables
        super().__init__(global_variables.schema)

    def default_of(self, name: str) -> Any:
        return self.global_variables.get_variable(name)

    def changes(self) -> object:
        return (self._changes, self.global_variables.changes())  # SET GLOBAL counts too

    def get_variable(self, name: str) -> Any:
        name = name.lower()
        if name in self._values:
            return self._values[name]
        return self.global_variables.get_variable(name)


_OFFSET = re.compile(r"^[+-](\d{1,2}):(\d{2})$")


def check_time_zone(value: str) -> str:
    """Accept IANA names, UTC/GMT/SYSTEM and +hh:mm offsets, as Doris' TimeUtils does."""
    text = value.strip()
    if text.upper() in ("UTC", "GMT", "SYSTEM", "CST"):
        return text
    m = _OFFSET.match(text)
    if m and int(m.group(1)) <= 14 and int(m.group(2)) < 60:
        return text
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise DorisError(
            f"Unknown or incorrect time zone: '{value}'", ErrorCode.UNKNOWN_TIME_ZONE
        ) from None
    return text


def query_options(variables: Variables) -> QueryOptions:
    """The session's values as one statement sees them (built once per statement)."""
    if isinstance(variables, GlobalVariables):
        return variables.query_options()
    return build_query_options(variables)


def build_query_options(variables: Variables) -> QueryOptions:
    get = variables.get_variable
    return QueryOptions(
        version=get("version"),
        disable_join_reorder=get("disable_join_reorder"),
        disable_nereids_rules=rule_names(get("disable_nereids_rules")),
        disable_colocate_plan=get("disable_colocate_plan"),
        disable_colocate_join=get("disable_colocate_join"),
        enable_bucket_shuffle_join=get("enable_bucket_shuffle_join"),
        broadcast_row_count_limit=get("broadcast_row_count_limit"),
        # Doris' modes are OFF, LOCAL and GLOBAL; every mode but OFF builds the filters
        runtime_filters=get("runtime_filter_mode").strip().upper() != "OFF",
        parallel_fragment_exec_instance_num=get("parallel_fragment_exec_instance_num"),
        exec_mem_limit=get("exec_mem_limit"),
        small_fragment_rows=get("shaledb_small_fragment_rows"),
        query_timeout=get("query_timeout"),
        enable_profile=get("enable_profile"),
        enable_insert_strict=get("enable_insert_strict"),
        insert_max_filter_ratio=get("insert_max_filter_ratio"),
        group_commit=get("group_commit"),
        delete_without_partition=get("delete_without_partition"),
        max_allowed_in_element_num_of_delete=get("max_allowed_in_element_num_of_delete"),
    )


def default_query_options() -> QueryOptions:
    """The options of a session that set nothing (the registry's defaults)."""
    return query_options(GlobalVariables())


def rule_names(value: str) -> frozenset[str]:
    """`disable_nereids_rules = 'A, b'` -> {"A", "B"} (Doris compares rule names upper case)."""
    return frozenset(n.strip().upper() for n in value.split(",") if n.strip())


def display(value: Any) -> str:
    """Text of a variable value as SHOW VARIABLES prints it (Doris: true/false for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
