"""A client session: parses each COM_QUERY and runs its statements off the event loop.

`ShaleSession` keeps the per-connection state (current database, session variables, the
cancel token that KILL QUERY sets) and hands every statement to a worker thread through
`StatementRunner`, so a slow query never blocks the event loop or other connections. It answers
everything itself: none of mysql-mimic's built-in middlewares (which give MySQL, not Doris,
answers) run. `run_statements` also runs prepared statements with their parameters bound
(server/prepared.py); `handle_query` serves mysql-mimic's own callers (COM_FIELD_LIST) with
fully materialised results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mysql_mimic import ResultColumn, ResultSet
from mysql_mimic.constants import KillKind
from mysql_mimic.session import Session
from sqlglot import expressions as exp

from server.commands import OkOutcome, Outcome, RowsOutcome, StatementRunner, TextOutcome
from server.results import mysql_column_type
from server.variables import SessionVariables
from sql.dialect import SqlSyntaxError, parse
from sql.errors import ErrorCode, ShaleError
from storage.batch import Batch

if TYPE_CHECKING:
    from server.app import ShaleServer


class ShaleSession(Session):
    def __init__(self, server: ShaleServer) -> None:
        super().__init__(SessionVariables(server.global_vars))
        self.server = server
        self.middlewares = []  # we answer every statement ourselves
        self.runner: StatementRunner | None = None

    async def init(self, connection: Any) -> None:
        await super().init(connection)
        self.runner = StatementRunner(
            self.server.engine, self.variables, connection.connection_id,
            current_db=lambda: self.database, set_db=self._set_database,
            processlist=self.server.processlist, profiles=self.server.profiles,
        )
        self.runner.user = str(self.variables.get("external_user") or "root")
        self.server.stats.connections_total += 1

    def _set_database(self, name: str | None) -> None:
        self.database = name

    async def use(self, database: str) -> None:
        assert self.runner is not None
        await self.in_worker(self.runner.use, database)

    async def in_worker(self, fn: Any, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.server.pool, fn, *args)

    @staticmethod
    def parse(sql: str) -> list[exp.Expression]:
        try:
            return parse(sql)
        except SqlSyntaxError as e:
            raise ShaleError(str(e), ErrorCode.PARSE_ERROR) from None

    async def run_sql(self, sql: str) -> Outcome:
        """Run every statement of one COM_QUERY; the last statement's outcome is returned."""
        return await self.run_statements(self.parse(sql))

    async def run_statements(self, statements: list[exp.Expression]) -> Outcome:
        """Run parsed statements (a COM_QUERY's, or a prepared statement's with its parameters
        bound); the last statement's outcome is returned."""
        assert self.runner is not None
        self.server.stats.queries_total += 1
        outcome: Outcome = OkOutcome()
        for stmt in statements:
            self.runner.begin_statement(stmt.meta.get("sql", ""))
            if isinstance(stmt, exp.Kill):
                await self.kill(stmt)
                outcome = OkOutcome()
                continue
            outcome = await self.in_worker(self.runner.run, stmt)
        return outcome

    def statement_done(self) -> None:
        """Called once the last result has been written (results are produced lazily)."""
        if self.runner is not None:
            self.runner.statement_text = ""

    async def kill(self, stmt: exp.Kill) -> None:
        kind = (stmt.text("kind") or "CONNECTION").upper()
        try:
            target = int(stmt.this.name)
        except ValueError:
            raise ShaleError(f"Invalid KILL connection ID: {stmt.this.name}", ErrorCode.PARSE_ERROR) from None
        if not self.server.control.has(target):
            raise ShaleError(f"Unknown thread id: {target}", ErrorCode.NO_SUCH_THREAD)
        await self.server.control.kill(target, KillKind.QUERY if kind == "QUERY" else KillKind.CONNECTION)

    # mysql-mimic's own entry point (COM_FIELD_LIST): materialised results.
    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
        outcome = await self.run_sql(sql)
        if isinstance(outcome, OkOutcome):
            return None
        if isinstance(outcome, TextOutcome):
            return outcome.rows, outcome.names
        batches: list[Batch] = await self.in_worker(list, outcome.batches)
        rows = _python_rows(outcome, batches)
        columns = [ResultColumn(n, mysql_column_type(t)) for n, t in zip(outcome.names, outcome.types)]
        return ResultSet(rows, columns)


def _python_rows(outcome: RowsOutcome, batches: Sequence[Batch]) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for b in batches:
        cols = [[t.to_python(v) for v in c.to_pylist()] for t, c in zip(outcome.types, b.columns)]
        rows.extend(zip(*cols))
    return rows
