"""Table resolution for statements: the database and table a statement names, and the error
when it does not exist."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import expressions as exp

from server.statements.common import table_parts
from sql import ddl_ops
from sql.errors import table_not_found
from storage.catalog.meta import TableMeta

if TYPE_CHECKING:
    from server.statements.runner import StatementRunner


def ddl_table(runner: StatementRunner, node: exp.Expression) -> TableMeta:
    db, name = table_parts(node)
    return ddl_ops.require_table(runner.engine, db or runner.database, name)


def metadata_table(runner: StatementRunner, target: exp.Expression, db: str | None) -> TableMeta:
    """The table of DESC / SHOW CREATE TABLE / SHOW COLUMNS / SHOW INDEX. A missing one is
    the same error as in a SELECT (`table_not_found`: Doris' text, MySQL's 1146 / 42S02):
    SQLAlchemy's inspector and `has_table` take exactly that code to mean "no such table"."""
    tdb, name = table_parts(target)
    database = ddl_ops.require_database(runner.engine, tdb or db)
    table = runner.engine.catalog.get_table(database.name, name)
    if table is None:
        raise table_not_found(database.name, name)
    return table
