"""Which table a statement names, and the one error when it does not exist.

Every statement handler resolves its table here (`resolve_table`), saying how it uses it
(`TableUse`); the use decides the error, following the Doris path that reports it:

- `TableUse.QUERY` (SELECT, INSERT, DELETE, DESC, SHOW CREATE TABLE / COLUMNS / INDEX /
  PARTITIONS / TABLETS, COM_FIELD_LIST): Doris' Nereids binder text
  `Table [t] does not exist in database [db].` (`table_not_found`; the binder raises the
  same one for a SELECT), with MySQL's 1146 / 42S02 rather than Doris' 1105 so JDBC tools and
  SQLAlchemy recognise "no such table" (storage/errors.py says why).
- `TableUse.DDL` (ALTER TABLE, CREATE / DROP INDEX, CANCEL ALTER, ADMIN COMPACT, TRUNCATE,
  CREATE TABLE LIKE, DESC ... ALL): Doris' `Database.getTableOrDdlException`,
  ERR_BAD_TABLE_ERROR 1051 `Unknown table 't'`.
- `TableUse.DROP` (DROP TABLE without IF EXISTS): Doris' `InternalCatalog.dropTable`,
  ERR_UNKNOWN_TABLE 1109 `Unknown table 't' in db`.

A missing database is 1049 `Unknown database 'db'` and no database at all 1046 `No database
selected`, whatever the use.
"""

from __future__ import annotations

from enum import Enum

from sqlglot import expressions as exp

from server.statements.common import table_parts
from sql.errors import (
    DorisError,
    ErrorCode,
    ShaleError,
    table_not_found,
)
from storage.catalog.meta import TableMeta
from storage.catalog.service import require_database
from storage.engine import StorageEngine


class TableUse(Enum):
    QUERY = "query"
    DDL = "ddl"
    DROP = "drop"


def table_does_not_exist(db: str, name: str, use: TableUse) -> ShaleError:
    """The error for a statement that names table `db`.`name`, which does not exist."""
    if use is TableUse.DDL:
        return DorisError(f"Unknown table '{name}'", ErrorCode.BAD_TABLE_ERROR)
    if use is TableUse.DROP:
        return DorisError(f"Unknown table '{name}' in {db}", ErrorCode.UNKNOWN_TABLE_IN_DB)
    return table_not_found(db, name)


def resolve_named(engine: StorageEngine, db: str | None, name: str,
                  use: TableUse) -> TableMeta:
    """Table `name` of database `db` (the statement's, else the session's current one)."""
    database = require_database(engine, db)
    table = engine.catalog.get_table(database.name, name)
    if table is None:
        raise table_does_not_exist(database.name, name, use)
    return table


def resolve_table(engine: StorageEngine, node: exp.Expression, current_db: str | None,
                  use: TableUse) -> TableMeta:
    """The table a Table / Schema / Identifier node names, [db.]name with the session's
    database `current_db` as the default."""
    db, name = table_parts(node)
    return resolve_named(engine, db or current_db, name, use)
