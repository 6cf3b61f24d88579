"""Session and administration statements: USE, the transaction no-ops (BEGIN / COMMIT /
ROLLBACK: every statement commits on its own), ADMIN COMPACT TABLE and ADMIN SET FRONTEND
CONFIG. SET is set_statement.py's; KILL runs on the event loop (server/session.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import expressions as exp

from server.dynamic_partitions import DynamicPartitionScheduler
from server.export_jobs import property_map
from server.frontend_config import FrontendConfig
from server.privileges.enforce import authorize
from server.statements.common import table_parts
from server.statements.outcomes import OkOutcome
from server.statements.tables import TableUse, resolve_named
from sql.ddl.compaction_admin import analyze_admin_compact, compact_table
from sql.errors import DorisError, no_database_selected, unknown_database
from sql.parser.dialect import AdminCompact, AdminSetConfig
from sql.show import statements as sql_show

if TYPE_CHECKING:
    from server.statements.runner import StatementRunner


def use(runner: StatementRunner, name: str) -> None:
    """USE db and COM_INIT_DB."""
    if name.lower() != sql_show.INFORMATION_SCHEMA and \
            runner.engine.catalog.get_database(name) is None:
        raise unknown_database(name)
    if runner.access is not None:  # COM_INIT_DB comes here without run()
        authorize(runner.access, exp.Use(this=exp.to_identifier(name)), runner.database)
    runner.set_db(name)


def use_statement(runner: StatementRunner, stmt: exp.Use) -> OkOutcome:
    use(runner, stmt.this.name)
    return OkOutcome()


def transaction_no_op(runner: StatementRunner, stmt: exp.Expression) -> OkOutcome:
    return OkOutcome()


def admin_compact(runner: StatementRunner, stmt: AdminCompact) -> OkOutcome:
    """ADMIN COMPACT TABLE: starts the compactions and returns at once, as Doris does."""
    db, _ = table_parts(stmt.this)
    if not (db or runner.database):
        raise no_database_selected()  # Doris checks the name before the rest
    request = analyze_admin_compact(stmt)
    table = resolve_named(runner.engine, request.db or runner.database, request.table,
                          TableUse.DDL)
    compact_table(runner.engine, table, request.partitions, request.kind)
    return OkOutcome()


def admin_set_config(runner: StatementRunner, stmt: AdminSetConfig) -> OkOutcome:
    """ADMIN SET FRONTEND CONFIG ("key" = "value"): one item, as Doris' AdminSetConfigStmt."""
    settings = property_map(stmt.expressions)
    if len(settings) != 1:
        raise DorisError("config parameter size is not equal to 1")
    ((key, value),) = settings.items()
    FrontendConfig.of(runner.engine).set(key, value)
    # a new "today" or scheduler setting applies now, failures shown as warnings
    return runner.warn(DynamicPartitionScheduler.of(runner.engine).run())
