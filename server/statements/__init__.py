"""What each parsed statement does, run in a worker thread: Doris' StmtExecutor, ShowExecutor
and DdlExecutor, one module per statement family.

    runner.py          StatementRunner: the per-connection state and `run(stmt)`
    dispatch.py        the {statement type: handler} table
    query.py           SELECT, EXPLAIN, SELECT .. INTO OUTFILE, DESC FUNCTION
    dml.py             INSERT, DELETE, LOAD DATA LOCAL INFILE, EXPORT / CANCEL EXPORT
    ddl.py             CREATE / DROP / TRUNCATE / ALTER / CANCEL ALTER
    show.py            SHOW (its own {kind: handler} table) and DESC
    set_statement.py   SET's semantics
    admin.py           USE, BEGIN / COMMIT / ROLLBACK, ADMIN ...
    tables.py          which table a statement names, and the error when it does not exist
    outcomes.py        the Outcome a handler returns
    query_timeout.py   the query_timeout timer
    show_where.py      the SHOW ... WHERE evaluator
    processlist.py     SHOW PROCESSLIST rows

The session (server/session.py) decides threading and encoding; nothing here holds a socket.
"""

from server.statements.outcomes import (
    LoadDone,
    OkOutcome,
    Outcome,
    PendingOutcome,
    RowsOutcome,
    TextOutcome,
    load_ok,
)
from server.statements.runner import StatementRunner, StatementServices

__all__ = ["LoadDone", "OkOutcome", "Outcome", "PendingOutcome", "RowsOutcome", "StatementRunner",
           "StatementServices", "TextOutcome", "load_ok"]
