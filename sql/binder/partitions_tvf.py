"""`FROM partitions("catalog" = "internal", "database" = "db", "table" = "t")`.

Owns Doris 2.1's `partitions` table-valued function: the rows of SHOW PARTITIONS FROM db.t as a
relation, so a query can pick columns (`SELECT PartitionName, Range ..`), filter and order them.
The SQL corpus uses it to compare partition names and ranges without the ids and timestamps
SHOW PARTITIONS also prints. Upstream: Doris `PartitionsTableValuedFunction` (the same twenty
columns as SHOW PARTITIONS, `internal` catalog only here).
"""

from __future__ import annotations

from sql.binder.relations import CatalogView, ValuesSource
from sql.errors import DorisError, table_not_found, unknown_database
from sql.show.information_schema import CATALOG_NAME
from sql.show.statements import show_partitions
from storage.types import BIGINT, BOOLEAN, INT, DataType, varchar

FUNCTION = "partitions"
REQUIRED = ("catalog", "database", "table")
_INTEGER_COLUMNS = {"PartitionId": BIGINT, "VisibleVersion": BIGINT, "Buckets": INT,
                    "ReplicationNum": INT}
_BOOLEAN_COLUMNS = frozenset({"IsInMemory", "IsMutable", "SyncWithBaseTables"})


def _column_type(name: str) -> DataType:
    if name in _INTEGER_COLUMNS:
        return _INTEGER_COLUMNS[name]
    if name in _BOOLEAN_COLUMNS:
        return BOOLEAN
    return varchar(1024)


def _value(name: str, value: object) -> object:
    if value is None:
        return None
    if name in _INTEGER_COLUMNS:
        return int(str(value))
    if name in _BOOLEAN_COLUMNS:
        return 1 if str(value).lower() == "true" else 0
    return value


def partitions_source(catalog: CatalogView, props: dict[str, str], alias: str) -> ValuesSource:
    """Bind one `partitions(..)` call to its rows (the formal partitions of the table)."""
    for key in props:
        if key not in REQUIRED:
            raise DorisError(f"{key} is invalid property")
    if any(not props.get(key, "").strip() for key in REQUIRED):
        raise DorisError("Invalid partitions metadata query")
    if props["catalog"].strip().lower() != CATALOG_NAME:
        raise DorisError(f"Unknown catalog '{props['catalog'].strip()}'")
    db, name = props["database"].strip(), props["table"].strip()
    if catalog.get_database(db) is None:
        raise unknown_database(db)
    table = catalog.get_table(db, name)
    if table is None:
        raise table_not_found(db, name)
    shown = show_partitions(catalog, table)
    types = tuple(_column_type(n) for n in shown.names)
    rows = tuple(tuple(_value(n, v) for n, v in zip(shown.names, row, strict=True))
                 for row in shown.rows)
    return ValuesSource(alias, tuple(shown.names), types, rows)
