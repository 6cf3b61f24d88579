"""What one statement runs under: the typed `QueryOptions` and the `SessionContext` around them.

`QueryOptions` is Doris' `TQueryOptions` (DuckDB's `ClientConfig`): every session variable the
binder, planner, executor and DML code reads, as a typed field, frozen, built once per statement
by `server.variables.query_options` from the session's values. That registry alone knows the
variables' names, defaults and parsers; a bad value is refused at SET, so nothing here (or in a
reader of these fields) parses text or falls back to a default. The dataclass has no defaults on
purpose: a default written here would be a second copy of the registry's.

`SessionContext` adds the session's identity (DATABASE(), USER(), CONNECTION_ID()), the cancel
token (KILL QUERY, SLEEP()), the `FROM local(..)` resolver and the `@@name` lookup that a query's
text may use to read any variable by name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sql.binder.table_functions import FileFunctionResolver


@dataclass(frozen=True, slots=True)
class QueryOptions:
    """Session variables as the query sees them (the variable each field comes from in its
    comment; server/variables.py builds it)."""

    # --- binding ---
    version: str  # version: what VERSION() returns
    # --- planning ---
    disable_join_reorder: bool  # disable_join_reorder
    # disable_nereids_rules: the rule names listed, upper case (planner/query.py maps Doris'
    # names to ours)
    disable_nereids_rules: frozenset[str]
    disable_colocate_plan: bool  # disable_colocate_plan
    disable_colocate_join: bool  # disable_colocate_join
    enable_bucket_shuffle_join: bool  # enable_bucket_shuffle_join
    broadcast_row_count_limit: int  # broadcast_row_count_limit
    runtime_filters: bool  # runtime_filter_mode: False when OFF
    # --- execution ---
    parallel_fragment_exec_instance_num: int  # parallel_fragment_exec_instance_num
    exec_mem_limit: int  # exec_mem_limit (bytes)
    small_fragment_rows: int  # shaledb_small_fragment_rows
    query_timeout: int  # query_timeout (seconds)
    enable_profile: bool  # enable_profile
    # --- DML ---
    enable_insert_strict: bool  # enable_insert_strict
    insert_max_filter_ratio: float  # insert_max_filter_ratio
    group_commit: str  # group_commit: off_mode | sync_mode | async_mode
    delete_without_partition: bool  # delete_without_partition
    max_allowed_in_element_num_of_delete: int  # max_allowed_in_element_num_of_delete


# `@@name` (or `@@global.name`) as written in a query -> the variable's typed value; raises the
# 1193 "Unknown system variable" ShaleError for a name the registry does not have.
SystemVariableLookup = Callable[[str], object]


@dataclass(frozen=True)
class SessionContext:
    database: str | None  # current db (may be None)
    connection_id: int
    user: str  # e.g. "root"
    current_user: str  # e.g. "'root'@'%'"
    options: QueryOptions  # built once for this statement
    cancel: threading.Event
    # `SELECT @@name` only; None: a query naming a variable gets "Unknown system variable"
    system_variables: SystemVariableLookup | None = None
    # resolves `FROM local(..)` (executor/file_scan.py LocalFiles); None: no table functions
    table_functions: FileFunctionResolver | None = None
    # storage/stored_bounds.py StoredBounds: the materialized-view rewrite's zone-map proofs
    # (planner/materialized_view.py); None: nothing is proved from stored data
    stored_bounds: Any = None
