"""The Flight SQL metadata commands: GetSqlInfo (what the ADBC driver asks at connect),
GetCatalogs, GetDbSchemas, GetTables (with the tables' Arrow schemas when asked) and
GetTableTypes, each as an Arrow table in the schema FlightSql.proto prescribes.

ShaleDB has one catalog, Doris' `internal`; its schemas are the databases the user may see
(plus `information_schema`, whose tables are SYSTEM VIEWs), its tables the user's visible
tables, with the columns' Arrow types as a query returns them (arrow_results.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from server.flight_sql.arrow_results import arrow_type
from sql.show.information_schema import INFORMATION_SCHEMA, table_names, virtual_table
from storage.types import DataType

CATALOG = "internal"  # Doris' built-in catalog

CATALOGS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string(), nullable=False)])
DB_SCHEMAS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string()),
                               pa.field("db_schema_name", pa.string(), nullable=False)])
TABLES_SCHEMA = pa.schema([pa.field("catalog_name", pa.string()),
                           pa.field("db_schema_name", pa.string()),
                           pa.field("table_name", pa.string(), nullable=False),
                           pa.field("table_type", pa.string(), nullable=False)])
TABLES_WITH_SCHEMA = TABLES_SCHEMA.append(pa.field("table_schema", pa.binary(), nullable=False))
TABLE_TYPES_SCHEMA = pa.schema([pa.field("table_type", pa.string(), nullable=False)])
TABLE_TYPES = ("SYSTEM VIEW", "TABLE")

# GetSqlInfo: <info_name: uint32, value: dense_union<...>> with the union members in this order
_INFO_VALUE = pa.dense_union([
    pa.field("string_value", pa.string()),
    pa.field("bool_value", pa.bool_()),
    pa.field("bigint_value", pa.int64()),
    pa.field("int32_bitmask", pa.int32()),
    pa.field("string_list", pa.list_(pa.field("item", pa.string()))),
    pa.field("int32_to_int32_list_map",
             pa.map_(pa.int32(), pa.list_(pa.field("item", pa.int32())))),
])
SQL_INFO_SCHEMA = pa.schema([pa.field("info_name", pa.uint32(), nullable=False),
                             pa.field("value", _INFO_VALUE, nullable=False)])
_STRING, _BOOL, _INT32 = 0, 1, 3  # union member codes used below


def sql_info(server_version: str) -> dict[int, tuple[int, object]]:
    """SqlInfo id -> (union member, value), FlightSql.proto's SqlInfo enum numbers."""
    return {
        0: (_STRING, "ShaleDB"),  # FLIGHT_SQL_SERVER_NAME
        1: (_STRING, server_version),  # FLIGHT_SQL_SERVER_VERSION
        2: (_STRING, pa.__version__),  # FLIGHT_SQL_SERVER_ARROW_VERSION
        3: (_BOOL, False),  # FLIGHT_SQL_SERVER_READ_ONLY
        4: (_BOOL, True),  # FLIGHT_SQL_SERVER_SQL
        5: (_BOOL, False),  # FLIGHT_SQL_SERVER_SUBSTRAIT
        8: (_INT32, 0),  # FLIGHT_SQL_SERVER_TRANSACTION: none (BEGIN / COMMIT are no-ops)
        9: (_BOOL, False),  # FLIGHT_SQL_SERVER_CANCEL
        100: (_INT32, 0),  # FLIGHT_SQL_SERVER_STATEMENT_TIMEOUT: none
        101: (_INT32, 0),  # FLIGHT_SQL_SERVER_TRANSACTION_TIMEOUT
        500: (_BOOL, False),  # SQL_DDL_CATALOG
        501: (_BOOL, True),  # SQL_DDL_SCHEMA (CREATE / DROP DATABASE)
        502: (_BOOL, True),  # SQL_DDL_TABLE
        504: (_STRING, "`"),  # SQL_IDENTIFIER_QUOTE_CHAR
    }


def sql_info_table(requested: Iterable[int], server_version: str) -> pa.Table:
    info = sql_info(server_version)
    ids = [i for i in (list(requested) or sorted(info)) if i in info]
    members: list[list[object]] = [[] for _ in _INFO_VALUE]
    type_ids, offsets = [], []
    for i in ids:
        member, value = info[i]
        type_ids.append(member)
        offsets.append(len(members[member]))
        members[member].append(value)
    children = [pa.array(values, f.type) for values, f in zip(members, _INFO_VALUE)]
    value = pa.UnionArray.from_dense(
        pa.array(type_ids, pa.int8()), pa.array(offsets, pa.int32()), children,
        [f.name for f in _INFO_VALUE], list(range(len(children))))
    return pa.Table.from_arrays([pa.array(ids, pa.uint32()), value], schema=SQL_INFO_SCHEMA)


def like_matcher(pattern: str | None) -> Callable[[str], bool]:
    """A Flight SQL filter pattern (`%`, `_`, backslash escapes) as a predicate; None: all.
    Names compare case-insensitively, as MySQL's LIKE on identifiers does."""
    if pattern is None:
        return lambda name: True
    parts, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    regex = re.compile("".join(parts), re.IGNORECASE | re.DOTALL)
    return lambda name: regex.fullmatch(name) is not None


def _optional(command: Any, name: str) -> str | None:
    return getattr(command, name) if command.HasField(name) else None


def _catalog_matches(command: Any) -> bool:
    catalog = _optional(command, "catalog")
    return catalog is None or catalog == CATALOG


def catalogs_table() -> pa.Table:
    return pa.Table.from_pylist([{"catalog_name": CATALOG}], schema=CATALOGS_SCHEMA)


def _schema_names(catalog: Any) -> list[str]:
    return sorted([INFORMATION_SCHEMA] + [d.name for d in catalog.list_databases()])


def db_schemas_table(command: Any, catalog: Any) -> pa.Table:
    matches = like_matcher(_optional(command, "db_schema_filter_pattern"))
    names = [n for n in _schema_names(catalog) if matches(n)] if _catalog_matches(command) else []
    return pa.Table.from_pylist([{"catalog_name": CATALOG, "db_schema_name": n} for n in names],
                                schema=DB_SCHEMAS_SCHEMA)


def _table_schema(db: str, table: str, columns: Iterable[tuple[str, DataType, bool]]) -> bytes:
    fields = [pa.field(name, arrow_type(t), nullable=nullable, metadata={
        "ARROW:FLIGHT:SQL:CATALOG_NAME": CATALOG, "ARROW:FLIGHT:SQL:DB_SCHEMA_NAME": db,
        "ARROW:FLIGHT:SQL:TABLE_NAME": table, "ARROW:FLIGHT:SQL:TYPE_NAME": t.desc_sql()})
        for name, t, nullable in columns]
    return bytes(pa.schema(fields).serialize().to_pybytes())


def tables_table(command: Any, catalog: Any) -> pa.Table:
    schema_matches = like_matcher(_optional(command, "db_schema_filter_pattern"))
    table_matches = like_matcher(_optional(command, "table_name_filter_pattern"))
    types = {t.upper() for t in command.table_types}
    include_schema = command.include_schema
    rows: list[dict[str, object]] = []
    if not _catalog_matches(command):
        names: list[str] = []
    else:
        names = [n for n in _schema_names(catalog) if schema_matches(n)]
    for db in names:
        if db == INFORMATION_SCHEMA:
            kind = "SYSTEM VIEW"
            tables = [(name, [(c, t, True) for c, t in virtual_table(name).columns])  # type: ignore[union-attr]
                      for name in table_names()]
        else:
            kind = "TABLE"
            tables = [(t.name, [(c.name, c.type, c.nullable) for c in t.columns])
                      for t in catalog.list_tables(db)]
        if types and kind not in types:
            continue
        for name, columns in sorted(tables, key=lambda nc: nc[0]):
            if not table_matches(name):
                continue
            row: dict[str, object] = {"catalog_name": CATALOG, "db_schema_name": db,
                                      "table_name": name, "table_type": kind}
            if include_schema:
                row["table_schema"] = _table_schema(db, name, columns)
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=TABLES_WITH_SCHEMA if include_schema
                                else TABLES_SCHEMA)


def table_types_table() -> pa.Table:
    return pa.Table.from_pylist([{"table_type": t} for t in TABLE_TYPES],
                                schema=TABLE_TYPES_SCHEMA)
