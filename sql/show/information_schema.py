"""information_schema: the virtual SCHEMATA, TABLES and COLUMNS tables, built from the catalog
(and STATISTICS, VIEWS, KEY_COLUMN_USAGE, REFERENTIAL_CONSTRAINTS, ROUTINES, TABLE_PRIVILEGES,
COLUMN_PRIVILEGES: empty as in Doris; tools and JDBC DatabaseMetaData query them).

The binder asks `virtual_table(name)` for the column list and `virtual_rows(name, catalog)` for
the rows (physical values, storage/types.py layouts) at bind time; the planner turns them into a
`LogicalValues`, so WHERE / ORDER BY / GROUP BY work on them like on any table. Column lists
follow MySQL's, with Doris' spellings: TABLE_CATALOG is 'internal', ENGINE is 'Doris' for OLAP
tables, COLUMN_KEY is 'DUP' / 'AGG' / 'UNI' for key columns, and the Doris-only COLUMN_SIZE /
DECIMAL_DIGITS columns are present. `information_schema` itself is listed as a database.
Upstream: Doris `SchemaTable` (FE) and the BE schema scanners.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sql.functions.coercion import INT_DIGITS
from storage.catalog.meta import ColumnMeta, KeysType, TableMeta
from storage.types import BIGINT, DataType, TypeKind, datetime, datetime_to_micros, varchar

if TYPE_CHECKING:
    from storage.catalog.view import CatalogView

INFORMATION_SCHEMA = "information_schema"
CATALOG_NAME = "internal"
CHARSET = "utf8mb4"
COLLATION = "utf8mb4_0900_bin"

_S = varchar(64)
_L = varchar(512)
_N = BIGINT
_T = datetime(0)


@dataclass(frozen=True, slots=True)
class VirtualTable:
    name: str
    columns: tuple[tuple[str, DataType], ...]


def _vt(name: str, cols: list[tuple[str, DataType]]) -> VirtualTable:
    return VirtualTable(name, tuple(cols))


_TABLES: dict[str, VirtualTable] = {
    "schemata": _vt("SCHEMATA", [
        ("CATALOG_NAME", _S), ("SCHEMA_NAME", _S), ("DEFAULT_CHARACTER_SET_NAME", _S),
        ("DEFAULT_COLLATION_NAME", _S), ("SQL_PATH", _L)]),
    "tables": _vt("TABLES", [
        ("TABLE_CATALOG", _S), ("TABLE_SCHEMA", _S), ("TABLE_NAME", _S), ("TABLE_TYPE", _S),
        ("ENGINE", _S), ("VERSION", _N), ("ROW_FORMAT", _S), ("TABLE_ROWS", _N),
        ("AVG_ROW_LENGTH", _N), ("DATA_LENGTH", _N), ("MAX_DATA_LENGTH", _N),
        ("INDEX_LENGTH", _N), ("DATA_FREE", _N), ("AUTO_INCREMENT", _N), ("CREATE_TIME", _T),
        ("UPDATE_TIME", _T), ("CHECK_TIME", _T), ("TABLE_COLLATION", _S), ("CHECKSUM", _N),
        ("CREATE_OPTIONS", _L), ("TABLE_COMMENT", varchar(2048))]),
    "columns": _vt("COLUMNS", [
        ("TABLE_CATALOG", _S), ("TABLE_SCHEMA", _S), ("TABLE_NAME", _S), ("COLUMN_NAME", _S),
        ("ORDINAL_POSITION", _N), ("COLUMN_DEFAULT", _L), ("IS_NULLABLE", varchar(3)),
        ("DATA_TYPE", _S), ("CHARACTER_MAXIMUM_LENGTH", _N), ("CHARACTER_OCTET_LENGTH", _N),
        ("NUMERIC_PRECISION", _N), ("NUMERIC_SCALE", _N), ("DATETIME_PRECISION", _N),
        ("CHARACTER_SET_NAME", _S), ("COLLATION_NAME", _S), ("COLUMN_TYPE", _L),
        ("COLUMN_KEY", varchar(3)), ("EXTRA", varchar(27)), ("PRIVILEGES", varchar(80)),
        ("COLUMN_COMMENT", varchar(255)), ("COLUMN_SIZE", _N), ("DECIMAL_DIGITS", _N),
        ("GENERATION_EXPRESSION", _L), ("SRS_ID", _N)]),
    # Doris has no secondary indexes MySQL tools could use, no views here and no constraints:
    # these exist (tools query them: Connector/J getIndexInfo, BI schema browsers) and are
    # empty, as in Doris.
    "statistics": _vt("STATISTICS", [
        ("TABLE_CATALOG", _L), ("TABLE_SCHEMA", _S), ("TABLE_NAME", _S), ("NON_UNIQUE", _N),
        ("INDEX_SCHEMA", _S), ("INDEX_NAME", _S), ("SEQ_IN_INDEX", _N), ("COLUMN_NAME", _S),
        ("COLLATION", varchar(1)), ("CARDINALITY", _N), ("SUB_PART", _N),
        ("PACKED", varchar(10)), ("NULLABLE", varchar(3)), ("INDEX_TYPE", varchar(16)),
        ("COMMENT", varchar(16)), ("INDEX_COMMENT", varchar(1024))]),
    "views": _vt("VIEWS", [
        ("TABLE_CATALOG", _L), ("TABLE_SCHEMA", _S), ("TABLE_NAME", _S),
        ("VIEW_DEFINITION", varchar(8096)), ("CHECK_OPTION", varchar(8)),
        ("IS_UPDATABLE", varchar(3)), ("DEFINER", varchar(77)), ("SECURITY_TYPE", varchar(7)),
        ("CHARACTER_SET_CLIENT", _S), ("COLLATION_CONNECTION", _S)]),
    "key_column_usage": _vt("KEY_COLUMN_USAGE", [
        ("CONSTRAINT_CATALOG", _L), ("CONSTRAINT_SCHEMA", _S), ("CONSTRAINT_NAME", _S),
        ("TABLE_CATALOG", _L), ("TABLE_SCHEMA", _S), ("TABLE_NAME", _S), ("COLUMN_NAME", _S),
        ("ORDINAL_POSITION", _N), ("POSITION_IN_UNIQUE_CONSTRAINT", _N),
        ("REFERENCED_TABLE_SCHEMA", _S), ("REFERENCED_TABLE_NAME", _S),
        ("REFERENCED_COLUMN_NAME", _S)]),
    "referential_constraints": _vt("REFERENTIAL_CONSTRAINTS", [
        ("CONSTRAINT_CATALOG", _L), ("CONSTRAINT_SCHEMA", _S), ("CONSTRAINT_NAME", _S),
        ("UNIQUE_CONSTRAINT_CATALOG", _L), ("UNIQUE_CONSTRAINT_SCHEMA", _S),
        ("UNIQUE_CONSTRAINT_NAME", _S), ("MATCH_OPTION", _S), ("UPDATE_RULE", _S),
        ("DELETE_RULE", _S), ("TABLE_NAME", _S), ("REFERENCED_TABLE_NAME", _S)]),
    "routines": _vt("ROUTINES", [
        ("SPECIFIC_NAME", _S), ("ROUTINE_CATALOG", _S), ("ROUTINE_SCHEMA", _S),
        ("ROUTINE_NAME", _S), ("ROUTINE_TYPE", varchar(9)), ("DATA_TYPE", _S),
        ("CHARACTER_MAXIMUM_LENGTH", _N), ("CHARACTER_OCTET_LENGTH", _N),
        ("NUMERIC_PRECISION", _N), ("NUMERIC_SCALE", _N), ("DATETIME_PRECISION", _N),
        ("CHARACTER_SET_NAME", _S), ("COLLATION_NAME", _S), ("DTD_IDENTIFIER", _L),
        ("ROUTINE_BODY", varchar(8)), ("ROUTINE_DEFINITION", _L), ("EXTERNAL_NAME", _S),
        ("EXTERNAL_LANGUAGE", _S), ("PARAMETER_STYLE", varchar(8)),
        ("IS_DETERMINISTIC", varchar(3)), ("SQL_DATA_ACCESS", _S), ("SQL_PATH", _S),
        ("SECURITY_TYPE", varchar(7)), ("CREATED", _T), ("LAST_ALTERED", _T),
        ("SQL_MODE", varchar(8192)), ("ROUTINE_COMMENT", _L), ("DEFINER", varchar(93)),
        ("CHARACTER_SET_CLIENT", varchar(32)), ("COLLATION_CONNECTION", varchar(32)),
        ("DATABASE_COLLATION", varchar(32))]),
    "table_privileges": _vt("TABLE_PRIVILEGES", [
        ("GRANTEE", varchar(81)), ("TABLE_CATALOG", _L), ("TABLE_SCHEMA", _S),
        ("TABLE_NAME", _S), ("PRIVILEGE_TYPE", _S), ("IS_GRANTABLE", varchar(3))]),
    "column_privileges": _vt("COLUMN_PRIVILEGES", [
        ("GRANTEE", varchar(81)), ("TABLE_CATALOG", _L), ("TABLE_SCHEMA", _S),
        ("TABLE_NAME", _S), ("COLUMN_NAME", _S), ("PRIVILEGE_TYPE", _S),
        ("IS_GRANTABLE", varchar(3))]),
}
_EMPTY = frozenset({"statistics", "views", "key_column_usage", "referential_constraints",
                    "routines", "table_privileges", "column_privileges"})


def is_information_schema(db: str | None) -> bool:
    return db is not None and db.lower() == INFORMATION_SCHEMA


def table_names() -> list[str]:
    return [t.name for t in _TABLES.values()]


def virtual_table(name: str) -> VirtualTable | None:
    return _TABLES.get(name.lower())


def virtual_rows(name: str, catalog: CatalogView) -> list[tuple[object, ...]]:
    key = name.lower()
    if key == "schemata":
        return _schemata(catalog)
    if key == "tables":
        return _tables(catalog)
    if key == "columns":
        return _columns(catalog)
    if key in _EMPTY:
        return []
    raise KeyError(name)


def _db_names(catalog: CatalogView) -> list[str]:
    names = [d.name for d in catalog.list_databases()]
    if not any(is_information_schema(n) for n in names):
        names.append(INFORMATION_SCHEMA)
    return sorted(names, key=str.lower)


def _schemata(catalog: CatalogView) -> list[tuple[object, ...]]:
    return [(CATALOG_NAME, n, CHARSET, COLLATION, None) for n in _db_names(catalog)]


def _timestamp(epoch: float) -> int | None:
    if not epoch:
        return None
    return datetime_to_micros(_dt.datetime.fromtimestamp(epoch).replace(microsecond=0))


def _user_tables(catalog: CatalogView) -> list[tuple[str, TableMeta]]:
    out = []
    for db in _db_names(catalog):
        if is_information_schema(db):
            continue
        for t in sorted(catalog.list_tables(db), key=lambda m: m.name):
            out.append((db, t))
    return out


def _tables(catalog: CatalogView) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for db, t in _user_tables(catalog):
        parts = catalog.partitions(t.table_id)
        updated = max((p.visible_version_time for p in parts), default=0.0) or t.create_time
        rows.append((
            CATALOG_NAME, db, t.name, "BASE TABLE", "Doris" if t.engine == "OLAP" else t.engine,
            None, None, 0, 0, 0, None, None, None, None, _timestamp(t.create_time),
            _timestamp(updated), None, COLLATION, None, "", t.comment,
        ))
    for vt in _TABLES.values():
        rows.append((
            CATALOG_NAME, INFORMATION_SCHEMA, vt.name, "SYSTEM VIEW", None, None, None, 0, 0, 0,
            None, None, None, None, None, None, None, COLLATION, None, "", "",
        ))
    return rows


_KEY_LABEL = {KeysType.DUP_KEYS: "DUP", KeysType.AGG_KEYS: "AGG", KeysType.UNIQUE_KEYS: "UNI"}


def _column_row(db: str, table: str, pos: int, c: ColumnMeta, keys: KeysType | None
                ) -> tuple[object, ...]:
    t = c.type
    data_type = t.sql() if t.is_nested else t.sql().split("(")[0]  # nested: element types too
    char_len = t.length if t.is_string else None
    octets = char_len * 4 if char_len is not None else None
    num_prec: int | None = None
    num_scale: int | None = None
    if t.is_decimal:
        num_prec, num_scale = t.precision, t.scale
    elif t.is_integer or t.kind is TypeKind.BOOLEAN:
        num_prec, num_scale = INT_DIGITS[t.kind], 0
    elif t.kind is TypeKind.FLOAT:
        num_prec = 7
    elif t.kind is TypeKind.DOUBLE:
        num_prec = 15
    dt_prec = t.scale if t.kind is TypeKind.DATETIME else None
    key = _KEY_LABEL[keys] if (c.is_key and keys is not None) else ""
    extra = c.agg_type.value if (c.agg_type is not None and c.agg_type.value != "NONE") else ""
    size = num_prec if num_prec is not None else char_len
    if t.is_temporal:
        size = 10 if t.kind is TypeKind.DATE else 19
    return (
        CATALOG_NAME, db, table, c.name, pos, c.default if c.has_default else None,
        "YES" if c.nullable else "NO", data_type, char_len, octets, num_prec, num_scale,
        dt_prec, CHARSET if t.is_string else None, COLLATION if t.is_string else None,
        t.sql(), key, extra, "SELECT", c.comment, size, num_scale, None, None,
    )


def _columns(catalog: CatalogView) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for db, t in _user_tables(catalog):
        for i, c in enumerate(t.columns, start=1):
            rows.append(_column_row(db, t.name, i, c, t.keys_type))
    for vt in _TABLES.values():
        for i, (name, typ) in enumerate(vt.columns, start=1):
            rows.append(_column_row(INFORMATION_SCHEMA, vt.name, i, ColumnMeta(name, typ), None))
    return rows
