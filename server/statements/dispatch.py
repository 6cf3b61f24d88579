"""The `{statement type: handler}` table: which family module answers each statement the
parser produces (sql/parser/dialect_nodes.py STATEMENT_TYPES). A statement's type is looked up along
its class hierarchy, so `exp.Query` covers SELECT, UNION and a parenthesised query.
tests/unit/server/test_statement_dispatch.py checks that every parsed statement type is here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlglot import expressions as exp

from server.statements import admin, ddl, dml, query, show
from server.statements.common import not_supported
from server.statements.set_statement import set_statement
from sql.parser.dialect import (
    AdminCompact,
    AdminSetConfig,
    AdminShowConfig,
    CancelAlter,
    CancelExport,
    DescAll,
    DescFunction,
    DorisExplain,
    DorisExport,
    DorisOutfile,
    LoadDataInfile,
)

if TYPE_CHECKING:
    from server.statements.outcomes import Outcome
    from server.statements.runner import StatementRunner

Handler = Callable[["StatementRunner", Any], "Outcome"]


def _unsupported(name: str) -> Handler:
    def refuse(runner: StatementRunner, stmt: exp.Expression) -> Outcome:
        raise not_supported(name)
    return refuse


def _kill(runner: StatementRunner, stmt: exp.Expression) -> Outcome:
    # KILL waits on the event loop for the other connection (server/session.py kill); a
    # runner without a connection (in-process tests) cannot kill anything.
    raise not_supported("KILL outside a client connection")


HANDLERS: dict[type[exp.Expr], Handler] = {
    # query
    exp.Query: query.run_query,
    DorisExplain: query.explain_statement,
    DorisOutfile: query.outfile,
    DescFunction: query.describe_function,
    # dml (data in and out)
    exp.Insert: dml.recorded_insert,
    exp.Delete: dml.delete,
    exp.Update: _unsupported("Statement UPDATE"),
    LoadDataInfile: dml.load_data_local,
    DorisExport: dml.export,
    CancelExport: dml.cancel_export,
    # ddl
    exp.Create: ddl.create,
    exp.Drop: ddl.drop,
    exp.TruncateTable: ddl.truncate,
    exp.Alter: ddl.alter,
    CancelAlter: ddl.cancel_alter,
    # show
    exp.Show: show.show,
    exp.Describe: show.describe,
    DescAll: show.describe_all,
    AdminShowConfig: show.show_frontend_config,
    # session and admin
    exp.Use: admin.use_statement,
    exp.Set: set_statement,
    exp.Transaction: admin.transaction_no_op,
    exp.Commit: admin.transaction_no_op,
    exp.Rollback: admin.transaction_no_op,
    exp.Kill: _kill,
    AdminCompact: admin.admin_compact,
    AdminSetConfig: admin.admin_set_config,
}


def handler_of(statement_type: type[exp.Expr]) -> Handler | None:
    """The handler of a statement type (or of its nearest base class in the table)."""
    for cls in statement_type.__mro__:
        handler = HANDLERS.get(cls)
        if handler is not None:
            return handler
    return None


def handler_for(stmt: exp.Expression) -> Handler:
    handler = handler_of(type(stmt))
    if handler is None:
        raise not_supported(f"Statement {type(stmt).__name__.upper()}")
    return handler
