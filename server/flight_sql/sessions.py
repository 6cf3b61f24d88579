"""Flight SQL logins and sessions: basic auth against our accounts returns a bearer token, and
each token is one session (Doris' Arrow Flight SQL does the same: a token per login, cached
for `arrow_flight_token_alive_time`, at most `arrow_flight_token_cache_size` of them).

A `FlightSession` is what a MySQL connection is to its statements: its own session variables,
current database, user and privileges, and a `StatementRunner` (server/statements/) through
which every statement runs, exactly as on the MySQL port. Statements of one session run one at
a time (a lock, as one MySQL connection runs one statement at a time); a query's result is kept
under a random handle until the client fetches it with DoGet (server/flight_sql/service.py):
server-wide, not per token, since a client may fetch an endpoint over another connection (a
client that sends basic auth on every call gets a new token each time); only the same user may
fetch it.

Each session is a connection of the server's: SHOW PROCESSLIST lists it (server/app.py's
connection list asks `FlightSessions` through `register_sessions`), with its running statement
from GetFlightInfo until its result is streamed, and `KILL [QUERY] id` on the MySQL port
cancels its statements (`kill`).

A session counts against its user's `max_user_connections` (SET PROPERTY) from its login (the
basic-auth call or Handshake that returned its bearer token) until it ends: KILL CONNECTION,
its token dropped past `arrow_flight_token_cache_size`, its token's alive time over, idle
(no call, nothing running or streaming) for its `wait_timeout` (as Doris' connection checker
ends any idle connection, its Arrow Flight ones included), or a server stop. MySQL logins count
the user's Flight sessions and Flight logins its MySQL connections. A Flight login that would
pass the limit first ends the user's least recently used idle Flight session (Doris likewise
evicts a user's oldest bearer token, its per-user LRU in FlightTokenManagerImpl), so a client
that logs in again per call never locks itself out; with none idle it is refused with MySQL's
1203 and Doris' text, `User <name> already has more than 'max_user_connections' active
connections` (gRPC PERMISSION_DENIED).
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from pyarrow import flight
from sqlglot import expressions as exp

from server.flight_sql.admission import CallWork
from server.flight_sql.arrow_results import record_batches, result_schema, text_table
from server.flight_sql.errors import flight_error, not_found
from server.local_infile import LocalInfileOutcome
from server.prepared import bind, describe_result, number_placeholders
from server.privileges import Access
from server.privileges.http_auth import password_matches
from server.privileges.model import Identity
from server.privileges.statements import is_account_statement
from server.services import SessionServices
from server.session import reads_no_table
from server.statement_audit import StatementAudit
from server.statements import (
    OkOutcome,
    Outcome,
    PendingOutcome,
    RowsOutcome,
    StatementRunner,
    TextOutcome,
)
from server.variables import SessionVariables
from sql.errors import ErrorCode, ShaleError
from sql.parser.dialect import SqlSyntaxError, parse
from storage.scan_stats import ScanStats

# Doris FE defaults: arrow_flight_token_alive_time (4320 minutes; Doris 3's
# arrow_flight_token_alive_time_second, our setting) and arrow_flight_token_cache_size.
TOKEN_ALIVE_SECONDS = 4320 * 60
TOKEN_CACHE_SIZE = 512
# Results planned (GetFlightInfo) but never fetched are dropped past this many (oldest first).
MAX_PENDING_RESULTS = 64
# Flight sessions have connection ids of their own (CONNECTION_ID(), the audit log), above
# those the MySQL listener hands out from 1.
FIRST_CONNECTION_ID = 1 << 24
# The one-row answer of a statement that returns no rows (DDL, INSERT) sent as a query.
AFFECTED_ROWS_COLUMN = "affected_rows"


@dataclass(eq=False)
class StatementResult:
    """A statement's answer as Arrow: the schema, and the record batches (lazily produced by
    the executor for a query)."""

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]
    affected_rows: int = -1  # an OK's count, -1 for a result set
    # a query's audit line, ended (with its scan counters) once its rows are sent
    audit: StatementAudit | None = None
    scan: ScanStats | None = None
    # the statement's cancel token (KILL QUERY, the client's cancel, a server stop)
    cancel: threading.Event = field(default_factory=threading.Event)
    # called once the result is streamed or dropped (the session's PROCESSLIST row)
    on_done: Callable[[], None] | None = None
    # its batches are pulled on the session pool: the statement reads no table
    light: bool = False
    streaming: bool = False  # fetched (DoGet): its rows are being sent

    def rows_sent(self, rows: int) -> None:
        if self.audit is not None:
            self.audit.add_returned(rows)

    def failed(self, error: ShaleError) -> None:
        if self.audit is not None:
            self.audit.error(error.code, error.message)

    def finished(self) -> None:
        if self.audit is not None:
            self.audit.end(self.scan, self.cancel.is_set())
            self.audit = None
        done, self.on_done = self.on_done, None
        if done is not None:
            done()

    def __hash__(self) -> int:  # a session's open results are a set of these
        return id(self)


@dataclass
class PreparedFlightStatement:
    sql: str
    statements: list[exp.Expression]  # `?` markers numbered (server/prepared.py)
    num_params: int
    dataset_schema: pa.Schema | None
    parameter_rows: list[list[object]] = field(default_factory=list)


def _ok_result(affected: int) -> StatementResult:
    table = pa.table({AFFECTED_ROWS_COLUMN: pa.array([affected], pa.int64())})
    return StatementResult(table.schema, iter(table.to_batches()), affected)


def outcome_result(outcome: Outcome) -> StatementResult:
    """A statement's outcome as Arrow (a query's batches converted as they are pulled)."""
    if isinstance(outcome, RowsOutcome):
        schema = result_schema(outcome.names, outcome.types)
        return StatementResult(schema, record_batches(schema, outcome.types, outcome.batches))
    if isinstance(outcome, TextOutcome):
        table = text_table(outcome.names, outcome.rows)
        return StatementResult(table.schema, iter(table.to_batches()))
    if isinstance(outcome, OkOutcome):
        return _ok_result(outcome.affected_rows)
    raise ShaleError("This command is not supported over Arrow Flight SQL",
                     ErrorCode.NOT_SUPPORTED_YET)


class FlightSession:
    """One login's session (one bearer token)."""

    def __init__(self, token: str, services: SessionServices, access: Access,
                 connection_id: int) -> None:
        self.token = token
        self.connection_id = connection_id
        self.services = services
        self.access = access
        self.database: str | None = None
        self.variables = SessionVariables(services.global_vars)
        self.runner = StatementRunner(
            services.statements, self.variables, connection_id,
            current_db=lambda: self.database, set_db=self._set_database,
            current_user=lambda: access.identity.name)
        self.runner.access = access  # every statement is checked, as on the MySQL port
        self.lock = threading.Lock()
        self.created = time.monotonic()  # tokens expire this long after the login (Doris)
        self.logged_in = True  # a connection of its user (max_user_connections counts it)
        # idle from `last_used` for `idle_limit` seconds (wait_timeout, re-read after each
        # statement since SET wait_timeout may change it), the session ends
        self.last_used = self.created
        self.idle_limit = self._wait_timeout()
        self.prepared: dict[bytes, PreparedFlightStatement] = {}
        # results planned and not yet streamed to the end (KILL QUERY cancels them all)
        self._open: set[StatementResult] = set()
        self._open_lock = threading.Lock()

    @property
    def busy(self) -> bool:
        """A statement runs or a result is being streamed (an expired token's session is
        ended only once idle)."""
        with self._open_lock:
            return any(r.streaming for r in self._open) or self.lock.locked()

    @property
    def identity(self) -> Identity:
        """Who logged in (KILL of another user's session needs ADMIN_PRIV)."""
        return self.access.identity

    def _set_database(self, name: str | None) -> None:
        self.database = name

    def _wait_timeout(self) -> float | None:
        return self.variables.connection_options().wait_timeout

    def touch(self, reread: bool = False) -> None:
        """A call came in or a statement ended: the idle clock starts again (`reread`:
        wait_timeout too, a statement may have SET it)."""
        self.last_used = time.monotonic()
        if reread:
            self.idle_limit = self._wait_timeout()

    def idle_expired(self, now: float) -> bool:
        """Idle past its wait_timeout (the caller checks it is not busy)."""
        limit = self.idle_limit
        return limit is not None and limit > 0 and now - self.last_used >= limit

    # ---- statements -------------------------------------------------------------------------
    def run_sql(self, sql: str, work: CallWork) -> StatementResult:
        """Every statement of `sql`, as a COM_QUERY runs them, on the server's workers; the
        last one's answer."""
        with self.lock:
            self.services.stats.queries_total += 1
            try:
                return self._audited(sql, lambda: self._run_sql(sql, work))
            finally:
                self.touch(reread=True)

    def _run_sql(self, sql: str, work: CallWork) -> StatementResult:
        if is_account_statement(sql):  # CREATE USER, GRANT, ... have their own parser
            self.runner.begin_statement(sql[:200])
            result = work.run(self.runner.cancel, self.services.account_statements.run,
                              self.access, sql, light=True)
            if result.names is None:
                return _ok_result(0)
            return outcome_result(TextOutcome(result.names, result.rows or []))
        try:
            statements = parse(sql)
        except SqlSyntaxError as e:
            raise ShaleError(str(e), ErrorCode.PARSE_ERROR) from None
        return self._run_statements(statements, work)

    def _audited(self, sql: str, run: Callable[[], StatementResult]) -> StatementResult:
        """One fe.audit.log line per statement call, as the MySQL port writes (a query's
        once its rows are sent: the service calls `finished`)."""
        audit = StatementAudit(self.services.audit, self.services.stats)
        audit.client, audit.fe_ip = self.access.client_ip, ""
        max_sql = self.variables.connection_options().audit_plugin_max_sql_length
        audit.begin(sql, self.access.identity.name, self.database, max_sql)
        try:
            result = run()
        except Exception as e:  # logged whatever failed; the caller turns it into its error
            code, message = (e.code, e.message) if isinstance(e, ShaleError) else (
                ErrorCode.UNKNOWN_ERROR, f"Internal error: {e}")
            audit.error(code, message)
            audit.end(self.runner.scan_stats, self.runner.cancel.is_set(), db=self.database)
            self.runner.statement_text = ""
            raise
        if result.affected_rows >= 0:
            audit.outcome("OK", False)
            audit.end(db=self.database)
            self.runner.statement_text = ""
        else:
            audit.outcome("EOF", True)
            result.audit, result.scan = audit, self.runner.scan_stats
            self._track(result)
        return result

    def _track(self, result: StatementResult) -> None:
        """`result` is open until streamed: the session shows its statement meanwhile, and
        KILL QUERY reaches it through its cancel token."""
        result.cancel = self.runner.cancel
        text = self.runner.statement_text
        with self._open_lock:
            self._open.add(result)

        def done() -> None:
            self.touch()  # a long stream ended: idle from now
            with self._open_lock:
                self._open.discard(result)
                idle = not self._open
            if idle and self.runner.statement_text == text and not self.lock.locked():
                self.runner.statement_text = ""

        result.on_done = done

    def kill_query(self) -> None:
        """KILL QUERY: the running statement and the results being streamed stop (their
        clients get CANCELLED); results not fetched yet are closed now (executors closed,
        audit lines written; fetched later, they answer CANCELLED)."""
        self.runner.cancel.set()
        with self._open_lock:
            open_results = list(self._open)
        for result in open_results:
            result.cancel.set()
        for result in open_results:
            if not result.streaming:
                close_result(result)

    def _run_statements(self, statements: list[exp.Expression],
                        work: CallWork) -> StatementResult:
        outcome: Outcome = OkOutcome()
        for i, stmt in enumerate(statements):
            self.runner.begin_statement(stmt.meta.get("sql", ""))
            if isinstance(stmt, exp.Kill):
                raise ShaleError("KILL is not supported over Arrow Flight SQL",
                                 ErrorCode.NOT_SUPPORTED_YET)
            outcome = _settled(work.run(self.runner.cancel, self.runner.run, stmt,
                                        light=reads_no_table(stmt)))
            if isinstance(outcome, LocalInfileOutcome):
                raise ShaleError("LOAD DATA LOCAL INFILE needs the MySQL protocol",
                                 ErrorCode.NOT_SUPPORTED_YET)
            if isinstance(outcome, RowsOutcome) and i < len(statements) - 1:
                # an earlier statement's rows: run, not sent
                work.run(self.runner.cancel, _drain, outcome.batches)
        result = outcome_result(outcome)
        result.light = bool(statements) and reads_no_table(statements[-1])
        return result

    def prepare(self, sql: str, work: CallWork) -> tuple[bytes, PreparedFlightStatement]:
        with self.lock:
            numbered, count = number_placeholders(sql)
            try:
                statements = parse(numbered)
            except SqlSyntaxError as e:
                raise ShaleError(str(e), ErrorCode.PARSE_ERROR) from None
            if len(statements) != 1:
                raise ShaleError("A prepared statement is one statement",
                                 ErrorCode.NOT_SUPPORTED_YET)
            for stmt in statements:
                stmt.meta["sql"] = sql
            names, types = work.run(None, describe_result, self.runner, statements[0], count)
            schema = result_schema(names, types) if names else None
            handle = secrets.token_bytes(16)
            prepared = PreparedFlightStatement(sql, statements, count, schema)
            self.prepared[handle] = prepared
            return handle, prepared

    def prepared_statement(self, handle: bytes) -> PreparedFlightStatement:
        prepared = self.prepared.get(handle)
        if prepared is None:
            raise not_found("Unknown prepared statement handle")
        return prepared

    def run_prepared(self, prepared: PreparedFlightStatement, values: list[object],
                     work: CallWork) -> StatementResult:
        if len(values) != prepared.num_params:
            raise ShaleError(f"The prepared statement has {prepared.num_params} parameter(s), "
                             f"{len(values)} bound", ErrorCode.WRONG_VALUE_COUNT)
        with self.lock:
            self.services.stats.queries_total += 1
            try:
                return self._audited(prepared.sql, lambda: self._run_statements(
                    bind(prepared.statements, values), work))
            finally:
                self.touch(reread=True)

    def close(self) -> None:
        """KILL QUERY, and the prepared statements dropped."""
        self.kill_query()
        self.prepared.clear()


def _drain(batches: Iterator[object]) -> None:
    for _ in batches:
        pass


def close_result(result: StatementResult) -> None:
    """A result streamed, failed or dropped: its executor closed (what it holds released) and
    its audit line written."""
    close = getattr(result.batches, "close", None)
    if close is not None:
        try:
            close()
        except ValueError:  # being pulled on a worker right now: its stream closes it
            pass
    result.finished()


def _settled(outcome: Outcome) -> Outcome:
    """An INSERT waiting for its group commit: wait here (a Flight thread, not the loop)."""
    if isinstance(outcome, PendingOutcome):
        from server.statements import load_ok

        result = outcome.future.result()
        return load_ok(result.rows, result.label, result.txn_id, outcome.filtered)
    return outcome


class FlightSessions:
    """The bearer tokens handed out by logins, each with its session: at most `cache_size` of
    them (the least recently used is dropped past that), each valid for `alive_seconds` after
    its login; a dropped or expired session's statements are cancelled and it leaves SHOW
    PROCESSLIST (expired ones once idle, found at the next login, lookup or listing)."""

    def __init__(self, services: SessionServices, alive_seconds: float = TOKEN_ALIVE_SECONDS,
                 cache_size: int = TOKEN_CACHE_SIZE) -> None:
        self.services = services
        self.alive_seconds = alive_seconds
        self.cache_size = max(1, cache_size)
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, FlightSession] = OrderedDict()
        self._by_id: dict[int, FlightSession] = {}
        self._ids = itertools.count(FIRST_CONNECTION_ID)
        self.stopping = False  # set at server stop: open streams end with UNAVAILABLE
        # statement handle -> (the session whose query it is, its result awaiting DoGet)
        self._results: OrderedDict[bytes, tuple[FlightSession, StatementResult]] = OrderedDict()

    def login(self, user: str, password: str, host: str) -> FlightSession:
        """Check the password as the MySQL and HTTP ports do; a new session on success."""
        manager = self.services.privileges
        account = manager.login_account(user, host)
        denied = (f"Access denied for user '{user}'@'{host}' "
                  f"(using password: {'YES' if password else 'NO'})")
        if account is None or not password_matches(account.native_hash, password):
            self.services.stats.login_failed_total += 1
            if account is not None:
                manager.login_failed(account)
            raise flight.FlightUnauthenticatedError(denied)
        if account.locked_until == -1 or account.locked_until > time.time():
            raise flight.FlightUnauthenticatedError(f"{denied}: the account is locked")
        ident = Identity(account.name, account.host)
        # the user's MySQL connections (listed before taking our lock: the list asks us too)
        mysql_open = sum(1 for s in self.services.connections.sessions()
                         if not isinstance(s, FlightSession) and getattr(s, "logged_in", False)
                         and getattr(s, "identity", None) == ident)
        access = Access(manager, ident, host)
        token = secrets.token_urlsafe(24)
        session = FlightSession(token, self.services, access, next(self._ids))
        with self._lock:
            ended = self._expired()
            try:
                ended += self._make_room(ident, account.max_user_connections - mysql_open)
            except ShaleError:
                refused = True
            else:
                refused = False
                self._sessions[token] = session
                self._by_id[session.connection_id] = session
                while len(self._sessions) > self.cache_size:
                    ended.append(self._forget(next(iter(self._sessions))))
        for old in ended:
            old.close()
        if refused:
            raise flight_error(ShaleError(
                f"User {account.name} already has more than 'max_user_connections' active "
                "connections", ErrorCode.TOO_MANY_USER_CONNECTIONS))
        manager.login_succeeded(account)
        self.services.stats.connections_total += 1
        return session

    def _make_room(self, ident: Identity, flight_limit: int) -> list[FlightSession]:
        """Room for one more Flight session of `ident` when it may have `flight_limit` of them
        (holding the lock): its least recently used idle sessions are dropped (returned, for
        the caller to close); ShaleError when the busy ones alone fill the limit."""
        mine = [s for s in self._sessions.values() if s.identity == ident]  # LRU first
        excess = len(mine) - max(0, flight_limit) + 1
        if excess <= 0:
            return []
        idle = [s for s in mine if not s.busy]
        if len(idle) < excess:
            raise ShaleError("max_user_connections", ErrorCode.TOO_MANY_USER_CONNECTIONS)
        return [self._forget(s.token) for s in idle[:excess]]

    def _expired(self) -> list[FlightSession]:
        """Drop the idle sessions whose token expired (holding the lock); the caller closes
        them."""
        now = time.monotonic()
        deadline = now - self.alive_seconds
        expired = [t for t, s in self._sessions.items()
                   if (s.created <= deadline or s.idle_expired(now)) and not s.busy]
        return [self._forget(token) for token in expired]

    def _forget(self, token: str) -> FlightSession:
        """Drop a token and its results' handles (holding the lock); the caller closes the
        session, which closes those results."""
        session = self._sessions.pop(token)
        self._by_id.pop(session.connection_id, None)
        for handle in [h for h, (owner, _) in self._results.items() if owner is session]:
            del self._results[handle]
        return session

    def session(self, token: str) -> FlightSession:
        with self._lock:
            ended = self._expired()
            session = self._sessions.get(token)
            if session is not None:
                if session.created <= time.monotonic() - self.alive_seconds:  # busy right now
                    session = None
                else:
                    self._sessions.move_to_end(token)
                    session.touch()
        for old in ended:
            old.close()
        if session is None:
            raise flight.FlightUnauthenticatedError(
                "Invalid or expired bearer token: log in again with basic auth "
                f"(tokens live arrow_flight_token_alive_time_second = {self.alive_seconds:g} "
                f"s, at most arrow_flight_token_cache_size = {self.cache_size} of them)")
        return session

    def keep_result(self, session: FlightSession, result: StatementResult) -> bytes:
        handle = secrets.token_bytes(16)
        with self._lock:
            self._results[handle] = (session, result)
            dropped = []
            while len(self._results) > MAX_PENDING_RESULTS:
                dropped.append(self._results.popitem(last=False)[1][1])
        for old in dropped:
            close_result(old)
        return handle

    def take_result(self, session: FlightSession, handle: bytes) -> StatementResult:
        with self._lock:
            entry = self._results.get(handle)
            # the same user may fetch it over another session (a client that logs in per call)
            if entry is not None and entry[0].identity == session.identity:
                del self._results[handle]
            else:
                entry = None
        if entry is None:
            raise not_found(
                "Unknown or already fetched statement handle (a ticket is fetched once)")
        entry[1].streaming = True
        return entry[1]

    # ---- the server's connection list (SHOW PROCESSLIST, KILL) ----------------------------------
    def session_of(self, connection_id: int) -> FlightSession | None:
        with self._lock:
            return self._by_id.get(connection_id)

    def sessions(self) -> list[object]:
        """Every logged-in session, in connection id order."""
        with self._lock:
            ended = self._expired()
            listed: list[object] = [self._by_id[i] for i in sorted(self._by_id)]
        for old in ended:
            old.close()
        return listed

    def kill(self, connection_id: int, query_only: bool) -> None:
        """KILL QUERY: the session's statements stop (its client gets CANCELLED); KILL
        [CONNECTION] also ends the session (its token is refused from then on)."""
        with self._lock:
            session = self._by_id.get(connection_id)
            if session is not None and not query_only:
                self._forget(session.token)
        if session is not None:
            if query_only:
                session.kill_query()
            else:
                session.close()

    def close_all(self) -> None:
        with self._lock:
            self.stopping = True
            sessions = list(self._sessions.values())
            self._sessions.clear()
            self._by_id.clear()
            results = [r for _, r in self._results.values()]
            self._results.clear()
        for session in sessions:
            session.close()
        for result in results:
            close_result(result)
