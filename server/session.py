"""A client session: parses each COM_QUERY and runs its statements off the event loop.

`ShaleSession` keeps the per-connection state (current database, session variables, the
cancel token that KILL QUERY sets) and hands every statement to a worker thread through
`StatementRunner`, so a slow query never blocks the event loop or other connections; statements
that read no table go to a separate session pool, so they never queue behind queries
(`reads_no_table`: drivers' connect-time statements must answer at once). It answers
everything itself: none of mysql-mimic's built-in middlewares (which give MySQL, not Doris,
answers) run. `run_statements` also runs prepared statements with their parameters bound
(server/prepared.py). Statements of constants and session variables (`SELECT 1`, `SET x = 1`,
`SELECT @@var`: `runs_inline`) are answered on the event loop, which costs less than the two
thread crossings of a hand-off; parse trees are cached by text (server/statement_cache.py).
`handle_query` serves mysql-mimic's own callers (COM_FIELD_LIST) with
fully materialised results.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from types import SimpleNamespace
from typing import Any

from mysql_mimic import ResultColumn, ResultSet
from mysql_mimic.constants import KillKind
from mysql_mimic.session import Session
from sqlglot import expressions as exp

from executor.load import error_log
from server import plan_cache, tls
from server.local_infile import LocalInfileOutcome
from server.object_columns import hide_object_values
from server.point_query import PointTemplate
from server.point_session import UNKNOWN, Learn, PointLookups, counted
from server.privileges import Access
from server.privileges.enforce import authorize, may_manage_sessions
from server.privileges.model import Identity
from server.privileges.statements import is_account_statement, seconds_until_expiry
from server.results import mysql_column_type
from server.services import SessionServices
from server.statement_audit import StatementAudit, audit_login
from server.statement_cache import (
    CONSTANT_RESULTS_PER_SESSION,
    is_constant_select,
    runs_inline,
)
from server.statements import (
    OkOutcome,
    Outcome,
    PendingOutcome,
    RowsOutcome,
    StatementRunner,
    TextOutcome,
    load_ok,
)
from server.statements.tables import TableUse, resolve_table
from server.variables import SessionVariables
from sql.errors import DorisError, ErrorCode, ShaleError
from sql.parser.dialect import SqlSyntaxError, parse
from sql.show.information_schema import is_information_schema, virtual_table
from storage.batch import Batch
from storage.catalog.meta import ColumnMeta
from storage.scan_stats import ScanStats
from storage.types import DataType, TypeKind

# The text protocol's first step of a result set, run on the statement's worker thread
# (server/connection.py ShaleConnection.start_rows).
StartRows = Callable[[RowsOutcome], Outcome]


class ShaleSession(Session):
    # mysql-mimic's Session (untyped) keeps what it is given; declared so reads are checked
    variables: SessionVariables
    database: str | None

    def __init__(self, services: SessionServices) -> None:
        super().__init__(SessionVariables(services.global_vars))
        self.services = services
        self.middlewares: list[Any] = []  # we answer every statement ourselves
        self.runner: StatementRunner | None = None
        # Where the current statement (and the result it streams) runs: the query pool, or the
        # session pool for statements that read no table (`reads_no_table`).
        self.pool: Executor = services.pool
        # The account this login matched ('name'@'host-pattern') and where it came from; set
        # by `admit` after the password check.
        # Until a login is admitted the session is nobody, who holds no privilege (fail closed).
        self.identity = Identity("", "")
        self.client_ip = "127.0.0.1"
        self.logged_in = False
        # The audit log's view of this session's statements (server/statement_audit.py).
        self.statement_audit = StatementAudit(services.audit, services.stats)
        self.opened = time.monotonic()
        # short-circuit point lookups: learned templates (server/point_session.py)
        self.points = PointLookups(self)
        # constant SELECTs' rows by text: (query options, names, types, batches)
        self.constant_results: dict[str, tuple[object, list[str], list[DataType],
                                               list[Batch]]] = {}

    @property
    def access(self) -> Access:
        """Who runs the next statement; grants are read live, so a GRANT or REVOKE from
        another session applies from this session's next statement."""
        return Access(self.services.privileges, self.identity, self.client_ip)

    def admit(self, user: Any, host: str, secure: bool) -> ShaleError | None:
        """After a correct password: the account's lock, password expiry, REQUIRE SSL,
        max_user_connections and (for a database named at connect) its privilege. None
        admits the login and makes it this session's identity."""
        account = getattr(user, "account", None)
        if account is None:
            return None
        ident = Identity(account.name, account.host)
        manager = self.services.privileges
        now = time.time()
        if account.locked_until == -1 or account.locked_until > now:
            # Doris' text (ErrorCode 3955), then how to lift it
            lock = "unbounded" if account.password_lock_seconds < 0 else str(
                account.password_lock_seconds)
            left = "unbounded" if account.locked_until == -1 else str(
                int(account.locked_until - now))
            return ShaleError(
                f"Access denied for user '{account.name}'@'{host}'. Account is blocked for "
                f"{lock} second(s) ({left} second(s) remaining) due to "
                f"{account.failed_login_attempts} consecutive failed logins. An administrator "
                f"unlocks it with ALTER USER '{account.name}'@'{account.host}' ACCOUNT_UNLOCK",
                ErrorCode.ACCOUNT_LOCKED)
        lifetime = self.services.global_vars.connection_options().default_password_lifetime
        left_s = seconds_until_expiry(account, lifetime)
        if left_s is not None and left_s <= 0:
            return ShaleError(
                "Your password has expired. To log in you must change it using a client that "
                "supports expired passwords.", ErrorCode.PASSWORD_EXPIRED)
        if account.require_ssl and not secure:
            return ShaleError(
                f"Access denied for user '{account.name}'@'{host}': the account requires "
                "SSL (REQUIRE SSL); connect with TLS (mariadb --ssl, pymysql ssl=...)",
                ErrorCode.ACCESS_DENIED)
        open_sessions = sum(1 for s in self.services.connections.sessions()
                            if s is not self and getattr(s, "logged_in", False)
                            and getattr(s, "identity", None) == ident)
        if open_sessions >= account.max_user_connections:
            return ShaleError(f"User {account.name} already has more than "
                              "'max_user_connections' active connections",
                              ErrorCode.TOO_MANY_USER_CONNECTIONS)
        access = Access(manager, ident, host)
        if self.database and self.database.lower() != "information_schema" and (
            self.services.database_exists(self.database)
            and not manager.can_see_database(ident, self.database)
        ):
            return DorisError(f"Access denied for user {ident} to database '{self.database}'",
                              ErrorCode.DBACCESS_DENIED)
        manager.login_succeeded(account)
        self.identity, self.client_ip = access.identity, host
        self.logged_in = True
        if self.runner is not None:
            self.runner.access = access
        return None

    def login_failed(self, user: Any) -> None:
        account = getattr(user, "account", None)
        if account is not None:
            self.services.privileges.login_failed(account)

    async def init(self, connection: Any) -> None:
        await super().init(connection)
        self.statement_audit.bind(connection)
        self.runner = StatementRunner(
            self.services.statements, self.variables, connection.connection_id,
            current_db=lambda: self.database, set_db=self._set_database,
            current_user=self._user_name,
        )
        self.runner.status_rows = lambda: list(tls.status_rows(connection))
        self.runner.error_log_url = self._insert_error_log
        self.runner.access = self.access  # every statement of this session is checked
        self.services.stats.connections_total += 1

    def _insert_error_log(self, reasons: list[str]) -> str:
        """A failed INSERT's filtered rows as an error log served by the HTTP listener
        (`/api/_load_error_log`, executor/load/error_log.py); its URL."""
        name = error_log.write_error_log(self.services.engine.data_dir, "insert", 0, reasons)
        return self.services.error_log_url(name)

    def _set_database(self, name: str | None) -> None:
        self.database = name

    def _user_name(self) -> str:
        """Who runs the statements: the name the login (or COM_CHANGE_USER) authenticated."""
        return str(self.username or self.variables.get("external_user") or "root")

    async def use(self, database: str) -> None:
        assert self.runner is not None
        await self.in_session_pool(self.runner.use, database)

    async def in_worker(self, fn: Any, *args: Any) -> Any:
        """Run `fn` on the current statement's pool (the query pool between statements)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, fn, *args)

    async def in_session_pool(self, fn: Any, *args: Any) -> Any:
        """Run a catalog lookup (COM_INIT_DB, COM_FIELD_LIST) on the session pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.services.session_pool, fn, *args)

    def parse(self, sql: str) -> list[exp.Expression]:
        """The statements of `sql` (parse trees cached by text, server/statement_cache.py)."""
        try:
            return self.services.parse_cache.parse(sql, parse)
        except SqlSyntaxError as e:
            raise ShaleError(str(e), ErrorCode.PARSE_ERROR) from None

    async def run_sql(self, sql: str, start_rows: StartRows | None = None) -> Outcome:
        """Run every statement of one COM_QUERY; the last statement's outcome is returned.
        One audit line per call (it ends in `statement_done` or the next call). `start_rows`:
        see `run_statements`."""
        self._audit_begin(sql)
        outcome = await self._run_sql(sql, start_rows)
        self._audit_outcome(outcome)
        return outcome

    async def _run_sql(self, sql: str, start_rows: StartRows | None = None) -> Outcome:
        """CREATE/DROP USER and INSERT VALUES statements the fast path recognises skip the
        parser."""
        assert self.runner is not None
        if is_account_statement(sql):  # CREATE USER, GRANT, ... (server/privileges/statements.py)
            self.services.stats.queries_total += 1
            self.runner.begin_statement(sql[:200])
            self.pool = self.services.session_pool
            result = await self.in_worker(self.services.account_statements.run, self.access, sql)
            if result.names is None:
                return OkOutcome()
            return TextOutcome(result.names, result.rows or [])
        if sql.lstrip()[:6].upper() == "INSERT":  # INSERT VALUES fast path, else parse below
            self.runner.begin_statement(sql[:200])
            self.pool = self.services.pool
            fast = await self.in_worker(self.runner.try_fast_insert, sql)
            if fast is not None:
                self.services.stats.queries_total += 1
                self.services.stats.insert_fast_path_total += 1
                return await _settled(fast)
        learn = None
        shape = self.points.shape(sql)
        if shape is not None:  # a point lookup answered without the planner (point_query.py)
            key = self.points.key(shape)
            template = self.points.template(key)
            if isinstance(template, PointTemplate):
                self.runner.begin_statement(sql[:200])
                self.pool = self.services.pool
                fast = await self.points.run(key, template, shape, start_rows)
                if fast is not None:
                    counted(self)
                    return fast
                if self.points.template(key) is UNKNOWN:  # it was stale: learn from this run
                    learn = (key, shape)
            elif template is UNKNOWN:
                learn = (key, shape)
        return await self.run_statements(self._statements(sql), start_rows, learn,
                                         from_text=True)

    def _statements(self, sql: str) -> list[exp.Expression]:
        """A COM_QUERY's statements: the plan cache's own (read-only) tree when a plan of this
        text is kept (no parse copy), else a parsed copy, marked as the text's when it is
        the only statement (server/plan_cache.py keys plans by it)."""
        kept = self.services.statements.plan_cache.statement(sql)
        if kept is not None:
            return [kept]
        statements = self.parse(sql)
        if len(statements) == 1:
            statements[0].meta[plan_cache.META] = plan_cache.TEXT
        return statements

    async def run_point_prepared(self, sql: str, params: list[object],
                                 start_rows: StartRows) -> tuple[Outcome | None, Learn | None]:
        """COM_STMT_EXECUTE of a point lookup by its learned template: (outcome, None); or
        (None, what `run_statements` should learn from its normal run, if anything)."""
        assert self.runner is not None
        shape = self.points.prepared_shape(sql, params)
        if shape is None:
            return None, None
        key = self.points.key(shape)
        template = self.points.template(key)
        if template is UNKNOWN:
            return None, (key, shape)
        if not isinstance(template, PointTemplate):
            return None, None
        self._audit_begin(sql)
        self.runner.begin_statement(sql[:200])
        self.pool = self.services.pool
        fast = await self.points.run(key, template, shape, start_rows)
        if fast is None:
            return None, ((key, shape) if self.points.template(key) is UNKNOWN else None)
        counted(self)
        self._audit_outcome(fast)
        return fast, None

    async def run_statements(self, statements: list[exp.Expression],
                             start_rows: StartRows | None = None,
                             learn: Learn | None = None, from_text: bool = False) -> Outcome:
        """Run parsed statements (a COM_QUERY's, or a prepared statement's with its parameters
        bound); the last statement's outcome is returned. `start_rows` (the text protocol's
        first result step, server/connection.py) runs on the same worker thread right after a
        statement that returns rows, so a small result needs one hand-off to a worker, not
        two."""
        assert self.runner is not None
        self.services.stats.queries_total += 1
        if statements and not self.statement_audit.in_flight:  # a prepared statement's execution
            self._audit_begin(statements[0].meta.get("sql", "") or statements[0].sql())
        outcome: Outcome = OkOutcome()
        for stmt in statements:
            self.runner.begin_statement(stmt.meta.get("sql", ""))
            self.pool = self.services.session_pool if reads_no_table(stmt) else self.services.pool
            if isinstance(stmt, exp.Kill):
                await self.kill(stmt)
                outcome = OkOutcome()
                continue
            if runs_inline(stmt):  # constants, session variables: no hand-off to a worker
                outcome = self._run_inline(stmt, start_rows, from_text)
            else:
                outcome = await _settled(await self.in_worker(
                    self._run_one, stmt, start_rows, learn if len(statements) == 1 else None))
        self._audit_outcome(outcome)
        return outcome

    def _run_inline(self, stmt: exp.Expression, start_rows: StartRows | None,
                    from_text: bool) -> Outcome:
        """A statement `runs_inline` chose, on the event loop. A constant SELECT's rows are
        kept by text and query options (`SELECT 1` from connection pools: no bind, plan or
        executor set-up after the first); only a COM_QUERY's text says all of the statement
        (a prepared statement's text has `?` where its parameters go)."""
        runner = self.runner
        assert runner is not None
        text = stmt.meta.get("sql", "")
        if not from_text or not text or not is_constant_select(stmt):
            return self._run_one(stmt, start_rows)
        options = runner.options()
        kept = self.constant_results.get(text)
        if kept is None or kept[0] != options:
            outcome = runner.run(stmt)
            if not isinstance(outcome, RowsOutcome):  # pragma: no cover - a SELECT has rows
                return outcome
            batches = list(outcome.batches)  # one row of constants
            kept = (options, outcome.names, outcome.types, batches)
            if len(self.constant_results) >= CONSTANT_RESULTS_PER_SESSION:
                self.constant_results.clear()
            self.constant_results[text] = kept
        else:
            runner.last_warnings = []  # as StatementRunner.run does
            runner.scan_stats = ScanStats()
        _, names, types, batches = kept
        rows = RowsOutcome(list(names), list(types), iter(batches))
        return start_rows(rows) if start_rows is not None else rows

    def _run_one(self, stmt: exp.Expression, start_rows: StartRows | None,
                 learn: Learn | None = None) -> Outcome:
        assert self.runner is not None
        pristine = stmt.copy() if learn is not None else None
        outcome = self.runner.run(stmt)
        if pristine is not None and learn is not None and isinstance(outcome, RowsOutcome):
            self.points.learn(learn, pristine)
        if isinstance(outcome, RowsOutcome):
            outcome = self.client_rows(outcome)
            if start_rows is not None:
                return start_rows(outcome)
        return outcome

    def client_rows(self, outcome: RowsOutcome) -> RowsOutcome:
        """A result as this protocol sends it: BITMAP / HLL values NULL unless
        return_object_data_as_binary (server/object_columns.py)."""
        as_binary = self.variables.connection_options().return_object_data_as_binary
        return hide_object_values(outcome, as_binary)

    # ---- audit log (server/audit.py) ----------------------------------------------------------
    def _audit_begin(self, sql: str) -> None:
        self._audit_end()  # the previous statement of a multi-statement COM_QUERY
        max_sql_length = self.variables.connection_options().audit_plugin_max_sql_length
        self.statement_audit.begin(sql, self.runner.user if self.runner else "", self.database,
                                   max_sql_length)

    def _audit_outcome(self, outcome: Outcome) -> None:
        if isinstance(outcome, TextOutcome):
            self.statement_audit.outcome("EOF", False, len(outcome.rows))
        elif isinstance(outcome, (OkOutcome, LocalInfileOutcome)):
            self.statement_audit.outcome("OK", False)
        else:  # a query's result set: its rows are counted as they are sent
            self.statement_audit.outcome("EOF", True)

    def audit_login(self, connection: Any, user: str, code: int = 0, message: str = "") -> None:
        """A login attempt (server/connection.py): its `[connection]` audit line."""
        audit_login(self.services.audit, self.services.stats, connection, user, self.database,
                    int((time.monotonic() - self.opened) * 1000), code, message)

    def field_list_table(self, name: str) -> Any:
        """The current database's table `name` for COM_FIELD_LIST (1146 when it is missing)."""
        assert self.runner is not None
        if is_information_schema(self.database):
            vt = virtual_table(name)
            if vt is not None:
                columns = [ColumnMeta(n, t) for n, t in vt.columns]
                return SimpleNamespace(name=vt.name, columns=columns)
        if self.runner.access is not None:  # the columns are DESC's: any privilege on it
            authorize(self.runner.access, exp.Describe(this=exp.table_(name, self.database)),
                      self.database)
        return resolve_table(self.services.engine, exp.to_identifier(name), self.database,
                             TableUse.QUERY)

    def statement_done(self) -> None:
        """Called once the last result has been written (results are produced lazily)."""
        self._audit_end()
        if self.runner is not None:
            self.runner.statement_text = ""
        self.pool = self.services.pool

    def _audit_end(self) -> None:
        if self.runner is not None:
            self.statement_audit.end(self.runner.scan_stats, self.runner.cancel.is_set(),
                                     self.database)

    def cancel_statement(self) -> None:
        """KILL QUERY / KILL CONNECTION of this session: its running statement stops at its
        next cancellation check (the token is fresh per statement, runner.begin_statement)."""
        if self.runner is not None:
            self.runner.cancel.set()

    async def kill(self, stmt: exp.Kill) -> None:
        kind = (stmt.text("kind") or "CONNECTION").upper()
        try:
            target = int(stmt.this.name)
        except ValueError:
            raise ShaleError(
                f"Invalid KILL connection ID: {stmt.this.name}", ErrorCode.PARSE_ERROR
            ) from None
        connections = self.services.connections
        if not connections.has(target):
            raise ShaleError(f"Unknown thread id: {target}", ErrorCode.NO_SUCH_THREAD)
        other = connections.session_of(target)
        if getattr(other, "identity", None) != self.identity and not may_manage_sessions(
            self.access
        ):
            raise DorisError(f"You are not owner of thread {target}", ErrorCode.KILL_DENIED)
        await connections.kill(target, KillKind.QUERY if kind == "QUERY" else KillKind.CONNECTION)

    # mysql-mimic's own entry point (COM_FIELD_LIST): materialised results.
    async def handle_query(self, sql: str, attrs: dict[str, str]) -> Any:
        outcome = await self.run_sql(sql)
        if isinstance(outcome, TextOutcome):
            return outcome.rows, outcome.names
        if not isinstance(outcome, RowsOutcome):
            return None  # OK (LOAD DATA LOCAL needs the command phase's file exchange)
        batches: list[Batch] = await self.in_worker(list, outcome.batches)
        rows = _python_rows(outcome, batches)
        types = [mysql_column_type(t) for t in outcome.types]
        return ResultSet(rows, [ResultColumn(n, t) for n, t in zip(outcome.names, types)])


# SHOW statements answered from memory (session, catalog, connection list): no table is read.
_SESSION_SHOWS = frozenset({
    "VARIABLES", "WARNINGS", "ERRORS", "STATUS", "PROCESSLIST", "DATABASES", "SCHEMAS",
    "COLLATION", "CHARSET", "CHARACTER SET", "ENGINES",
})


def reads_no_table(stmt: exp.Expression) -> bool:
    """Statements that touch no table data: SET, USE, transaction no-ops, the SHOWs above and a
    SELECT with no table (`SELECT @@max_allowed_packet, ...`, `SELECT 1 FROM dual`). They run on
    the server's session pool, so they never queue behind running queries on the query pool:
    a client's connect-time statements must answer at once however busy the server is
    (MariaDB Connector/J gives them 500 ms, docs/clients.md)."""
    if isinstance(stmt, (exp.Set, exp.Use, exp.Transaction, exp.Commit, exp.Rollback)):
        return True
    if isinstance(stmt, exp.Show):
        return stmt.name.upper() in _SESSION_SHOWS
    if isinstance(stmt, exp.Select):
        return all(t.name.lower() == "dual" and not t.text("db") for t in stmt.find_all(exp.Table))
    return False


def _python_rows(outcome: RowsOutcome, batches: Sequence[Batch]) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for b in batches:
        cols = [
            [_wire_value(t, v) for v in c.to_pylist()] for t, c in zip(outcome.types, b.columns)
        ]
        rows.extend(zip(*cols))
    return rows


def _wire_value(dtype: DataType, physical: object) -> object:
    value = dtype.to_python(physical)
    # LARGEINT travels as a string column (server/results.py), so its values are text too.
    return str(value) if dtype.kind is TypeKind.LARGEINT and value is not None else value


async def _settled(outcome: Outcome) -> Outcome:
    """Wait (on the event loop, holding no worker thread) for an INSERT's group commit."""
    if isinstance(outcome, PendingOutcome):
        result = await asyncio.wrap_future(outcome.future)
        return load_ok(result.rows, result.label, result.txn_id, outcome.filtered)
    return outcome
