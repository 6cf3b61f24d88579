"""The Arrow Flight SQL server: pyarrow.flight's FlightServerBase speaking the Flight SQL
commands (messages.py) on `arrow_flight_sql_port`.

Auth is header based, as Doris' Flight SQL and the ADBC driver do it: the client's Handshake
(or any first call) carries `authorization: Basic ...`; the server answers with `authorization:
Bearer <token>` and every later call must carry that bearer (sessions.py). A query runs in two
calls: GetFlightInfo plans it (errors in the SQL surface there) and returns its schema and a
ticket; DoGet streams the executor's batches as Arrow record batches while the executor
produces them. Metadata commands are answered at DoGet from the command itself (the ticket).
DoPut runs CommandStatementUpdate (DDL / DML, its count in DoPutUpdateResult) and binds a
prepared statement's parameters.

gRPC runs every call on its own threads, never on the MySQL / HTTP event loop; the statement
work of a call runs on the server's worker pools (admission.py). Errors reach the client with
the gRPC status of their kind and the MySQL error's text (errors.py). A result's stream ends
with OK only when every batch was sent: a KILL, a failure or a server stop mid-stream ends it
with an error status, so no client takes a cut-off result for a complete one.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pyarrow as pa
from pyarrow import flight

from server.flight_sql import messages as m
from server.flight_sql import metadata
from server.flight_sql.admission import CallSlots, CallWork
from server.flight_sql.errors import (
    flight_error,
    internal,
    invalid_argument,
    unimplemented,
)
from server.flight_sql.sessions import (
    FlightSession,
    FlightSessions,
    StatementResult,
    close_result,
)
from server.services import SessionServices
from sql.errors import ErrorCode, QueryCancelled, ShaleError

logger = logging.getLogger(__name__)

AUTH_MIDDLEWARE = "shaledb-auth"
ACTION_CREATE_PREPARED = "CreatePreparedStatement"
ACTION_CLOSE_PREPARED = "ClosePreparedStatement"
F = TypeVar("F", bound=Callable[..., Any])
STOPPING = ("ShaleDB is stopping: the result was not sent completely; "
            "run the statement again once the server is back")


def _status(error: BaseException) -> BaseException:
    """The exception a call ends with for `error`: a Flight error as it is, ours as errors.py
    maps them, anything else INTERNAL (and logged)."""
    if isinstance(error, (flight.FlightError, pa.ArrowInvalid, pa.ArrowKeyError,
                          pa.ArrowNotImplementedError)):
        return error  # already a status (errors.py's INVALID_ARGUMENT / NOT_FOUND / ...)
    if isinstance(error, ShaleError):
        return flight_error(error)
    logger.error("internal error in a Flight SQL call", exc_info=error)
    return internal(error)


# pyarrow appends the frames of a ValueError / KeyError / NotImplementedError to the status
# message a client reads; the RPC methods and result streams are wrapped by these functions,
# compiled without a source file, so those frames are pyarrow's and `<flight_sql>`: no server
# path, no source line.
_BOUNDARY_SOURCE = """
def boundary(method):
    def flight_sql_call(self, *args):
        try:
            return method(self, *args)
        except BaseException as e:
            error = status(e)
        raise error.with_traceback(None) from None
    flight_sql_call.__name__ = method.__name__
    flight_sql_call.__doc__ = method.__doc__
    return flight_sql_call

def stream_boundary(batches):
    try:
        yield from batches
    except GeneratorExit:
        raise
    except BaseException as e:
        error = status(e)
    else:
        return
    raise error.with_traceback(None) from None
"""
_BOUNDARIES: dict[str, Any] = {"status": _status}
exec(compile(_BOUNDARY_SOURCE, "<flight_sql>", "exec"), _BOUNDARIES)  # noqa: S102
_status_boundary: Callable[[F], F] = _BOUNDARIES["boundary"]
_stream_boundary: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]] = \
    _BOUNDARIES["stream_boundary"]


def _result_stream(result: StatementResult, work: CallWork,
                   sessions: FlightSessions) -> Iterator[pa.RecordBatch]:
    """A result's batches, each pulled from the executor on a worker. The stream ends OK only
    after the last batch: a KILL, an error or a server stop ends it with an error status (the
    client never takes a cut-off stream for a complete one). Closed early (the client
    cancelled or went away), the executor is closed and releases what it holds. The
    statement's audit line is written when the stream ends."""
    batches = result.batches
    try:
        while True:
            if sessions.stopping:
                raise flight.FlightUnavailableError(STOPPING)
            if result.cancel.is_set():
                raise QueryCancelled()
            batch = work.run(result.cancel, next, batches, None, light=result.light)
            if batch is None:
                return
            result.rows_sent(batch.num_rows)
            yield batch
    except GeneratorExit:  # dropped by gRPC: the client cancelled or is gone
        result.cancel.set()
        raise
    except flight.FlightError as e:
        result.failed(ShaleError(str(e), ErrorCode.QUERY_INTERRUPTED))
        raise
    except ShaleError as e:
        result.failed(e)
        if sessions.stopping:
            raise flight.FlightUnavailableError(STOPPING) from None
        error = flight_error(e)
    except Exception as e:
        result.failed(ShaleError(f"Internal error: {e}"))
        if sessions.stopping:  # the worker pool shut down under it
            raise flight.FlightUnavailableError(STOPPING) from None
        logger.exception("internal error while streaming a Flight SQL result")
        error = internal(e)
    finally:
        close_result(result)
    raise error


class _BearerMiddleware(flight.ServerMiddleware):
    """The call's session, and its call slot (admission.py) given back when the call
    completed (a result stream once it ended)."""

    def __init__(self, session: FlightSession, slots: CallSlots) -> None:
        self.session = session
        self.slots: CallSlots | None = slots

    def sending_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.session.token}"}

    def call_completed(self, exception: Any) -> None:
        slots, self.slots = self.slots, None
        if slots is not None:
            slots.release()


class _AuthMiddlewareFactory(flight.ServerMiddlewareFactory):
    """Every call first takes a call slot (waits its turn, or is refused past the queue),
    then logs in: basic credentials log in (a new session); a bearer token finds its
    session."""

    def __init__(self, sessions: FlightSessions, slots: CallSlots) -> None:
        self.sessions = sessions
        self.slots = slots

    def start_call(self, info: Any, headers: dict[str, list[str]]) -> _BearerMiddleware:
        self.slots.acquire()
        try:
            return _BearerMiddleware(self._session(info, headers), self.slots)
        except BaseException:
            self.slots.release()  # refused calls never complete through the middleware
            raise

    def _session(self, info: Any, headers: dict[str, list[str]]) -> FlightSession:
        values = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
        if not values:
            raise flight.FlightUnauthenticatedError(
                "Need auth information: log in with basic auth (user and password)")
        scheme, _, credential = values[0].partition(" ")
        if scheme.lower() == "bearer":
            return self.sessions.session(credential.strip())
        if scheme.lower() != "basic":
            raise flight.FlightUnauthenticatedError(f"Unsupported authorization scheme {scheme}")
        try:
            # Go's Flight client (the ADBC driver) sends base64 without its `=` padding
            encoded = credential.strip()
            encoded += "=" * (-len(encoded) % 4)
            user, _, password = base64.b64decode(encoded).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise flight.FlightUnauthenticatedError("Malformed basic auth header") from None
        return self.sessions.login(user, password, _client_host(info))


def _client_host(info: Any) -> str:
    """The caller's address (a gRPC peer `ipv4:127.0.0.1:5555`); loopback when unknown."""
    peer = getattr(info, "peer", "") or ""
    if isinstance(peer, bytes):
        peer = peer.decode(errors="replace")
    if peer.startswith("ipv4:"):
        return peer[5:].rsplit(":", 1)[0]
    if peer.startswith("ipv6:"):
        return peer[5:].rsplit(":", 1)[0].strip("[]")
    return "127.0.0.1"


class _HeaderOnlyAuth(flight.ServerAuthHandler):
    """The Handshake call itself exchanges nothing: the middleware reads the headers."""

    def authenticate(self, outgoing: Any, incoming: Any) -> None:
        pass

    def is_valid(self, token: bytes) -> str:
        return ""


_METADATA_COMMANDS = ("CommandGetSqlInfo", "CommandGetCatalogs", "CommandGetDbSchemas",
                      "CommandGetTables", "CommandGetTableTypes")


class ShaleFlightSqlServer(flight.FlightServerBase):
    def __init__(self, location: str, services: SessionServices, server_version: str,
                 tls_certificates: list[tuple[bytes, bytes]] | None = None,
                 sessions: FlightSessions | None = None,
                 slots: CallSlots | None = None) -> None:
        self.services = services
        self.sessions = sessions or FlightSessions(services)
        self.slots = slots or CallSlots()
        self.server_version = server_version
        super().__init__(location, auth_handler=_HeaderOnlyAuth(),
                         middleware={AUTH_MIDDLEWARE: _AuthMiddlewareFactory(self.sessions,
                                                                             self.slots)},
                         tls_certificates=tls_certificates or [])

    def _work(self, context: Any) -> CallWork:
        """How this call runs its statement work: on the server's pools, watching its client."""
        return CallWork(self.services.pool, self.services.session_pool, context.is_cancelled)

    # ---- helpers ------------------------------------------------------------------------------
    @staticmethod
    def _session(context: Any) -> FlightSession:
        middleware = context.get_middleware(AUTH_MIDDLEWARE)
        if middleware is None:  # pragma: no cover - the factory refuses calls without one
            raise flight.FlightUnauthenticatedError("Not logged in")
        return middleware.session

    @staticmethod
    def _command(data: bytes) -> Any:
        command = m.unpack_command(data) if data else None  # a path descriptor has none
        if command is None:
            raise invalid_argument("Unknown or malformed Flight SQL command")
        return command

    def _metadata_schema(self, name: str, command: Any) -> pa.Schema:
        if name == "CommandGetSqlInfo":
            return metadata.SQL_INFO_SCHEMA
        if name == "CommandGetCatalogs":
            return metadata.CATALOGS_SCHEMA
        if name == "CommandGetDbSchemas":
            return metadata.DB_SCHEMAS_SCHEMA
        if name == "CommandGetTables":
            return metadata.TABLES_WITH_SCHEMA if command.include_schema \
                else metadata.TABLES_SCHEMA
        return metadata.TABLE_TYPES_SCHEMA

    def _metadata_table(self, session: FlightSession, name: str, command: Any) -> pa.Table:
        catalog = session.runner.visible_catalog()
        if name == "CommandGetSqlInfo":
            return metadata.sql_info_table(command.info, self.server_version)
        if name == "CommandGetCatalogs":
            return metadata.catalogs_table()
        if name == "CommandGetDbSchemas":
            return metadata.db_schemas_table(command, catalog)
        if name == "CommandGetTables":
            return metadata.tables_table(command, catalog)
        return metadata.table_types_table()

    def _statement_info(self, session: FlightSession, descriptor: Any,
                        result: StatementResult) -> flight.FlightInfo:
        handle = self.sessions.keep_result(session, result)
        ticket = flight.Ticket(m.pack(m.TicketStatementQuery(statement_handle=handle)))
        return flight.FlightInfo(result.schema, descriptor, [flight.FlightEndpoint(ticket, [])],
                                 -1, -1)

    def _run_prepared_query(self, session: FlightSession, handle: bytes,
                            work: CallWork) -> StatementResult:
        prepared = session.prepared_statement(handle)
        rows = prepared.parameter_rows or [[]]
        if len(rows) > 1:
            raise invalid_argument("A query binds one set of parameters at a time")
        return session.run_prepared(prepared, rows[0], work)

    # ---- RPCs -------------------------------------------------------------------------------
    @_status_boundary
    def get_flight_info(self, context: Any, descriptor: Any) -> flight.FlightInfo:
        session = self._session(context)
        call = self._work(context)
        command = self._command(descriptor.command)
        name = m.message_name(command)
        if name == "CommandStatementQuery":
            return self._statement_info(session, descriptor,
                                        session.run_sql(command.query, call))
        if name == "CommandPreparedStatementQuery":
            result = self._run_prepared_query(session, command.prepared_statement_handle,
                                              call)
            return self._statement_info(session, descriptor, result)
        if name in _METADATA_COMMANDS:
            schema = self._metadata_schema(name, command)
            ticket = flight.Ticket(descriptor.command)  # answered at DoGet
            return flight.FlightInfo(schema, descriptor,
                                     [flight.FlightEndpoint(ticket, [])], -1, -1)
        raise unimplemented(f"{name} is not supported by ShaleDB")

    @_status_boundary
    def get_schema(self, context: Any, descriptor: Any) -> flight.SchemaResult:
        session = self._session(context)
        command = self._command(descriptor.command)
        name = m.message_name(command)
        if name in _METADATA_COMMANDS:
            return flight.SchemaResult(self._metadata_schema(name, command))
        if name == "CommandPreparedStatementQuery":
            prepared = session.prepared_statement(command.prepared_statement_handle)
            if prepared.dataset_schema is not None:
                return flight.SchemaResult(prepared.dataset_schema)
        raise unimplemented(f"GetSchema of {name} is not supported by ShaleDB")

    @_status_boundary
    def do_get(self, context: Any, ticket: Any) -> flight.FlightDataStream:
        session = self._session(context)
        call = self._work(context)
        command = self._command(ticket.ticket)
        name = m.message_name(command)
        if name == "TicketStatementQuery":
            result = self.sessions.take_result(session, command.statement_handle)
            return flight.GeneratorStream(result.schema, _stream_boundary(
                _result_stream(result, call, self.sessions)))
        if name in _METADATA_COMMANDS:
            table = call.run(None, self._metadata_table, session, name, command, light=True)
            return flight.RecordBatchStream(table)
        raise unimplemented(f"DoGet of {name} is not supported by ShaleDB")

    @_status_boundary
    def do_put(self, context: Any, descriptor: Any, reader: Any, writer: Any) -> None:
        session = self._session(context)
        call = self._work(context)
        command = self._command(descriptor.command)
        name = m.message_name(command)
        if name == "CommandStatementUpdate":
            count = _run_update(session.run_sql(command.query, call))
            writer.write(pa.py_buffer(m.DoPutUpdateResult(
                record_count=count).SerializeToString()))
            return
        if name == "CommandPreparedStatementQuery":
            prepared = session.prepared_statement(command.prepared_statement_handle)
            prepared.parameter_rows = _parameter_rows(reader.read_all())
            return
        if name == "CommandPreparedStatementUpdate":
            prepared = session.prepared_statement(command.prepared_statement_handle)
            rows = _parameter_rows(reader.read_all()) or [[]]
            total = 0
            for values in rows:
                total += max(0, _run_update(session.run_prepared(prepared, values, call)))
            writer.write(pa.py_buffer(m.DoPutUpdateResult(
                record_count=total).SerializeToString()))
            return
        raise unimplemented(f"DoPut of {name} is not supported by ShaleDB")

    @_status_boundary
    def do_action(self, context: Any, action: Any) -> list[flight.Result]:
        session = self._session(context)
        call = self._work(context)
        body = action.body.to_pybytes() if action.body is not None else b""
        if action.type == ACTION_CREATE_PREPARED:
            request = self._command(body)
            handle, prepared = session.prepare(request.query, call)
            result = m.ActionCreatePreparedStatementResult(prepared_statement_handle=handle)
            if prepared.dataset_schema is not None:
                result.dataset_schema = prepared.dataset_schema.serialize().to_pybytes()
            return [flight.Result(m.pack(result))]
        if action.type == ACTION_CLOSE_PREPARED:
            request = self._command(body)
            session.prepared.pop(request.prepared_statement_handle, None)
            return []
        raise unimplemented(f"Action {action.type} is not supported by ShaleDB")

    def list_actions(self, context: Any) -> list[tuple[str, str]]:
        return [(ACTION_CREATE_PREPARED, "Prepare a SQL statement"),
                (ACTION_CLOSE_PREPARED, "Close a prepared statement")]

    def close_sessions(self) -> None:
        """Stop every session's running statement (before shutdown): a result being streamed
        ends with UNAVAILABLE at its next batch, never as if it were complete; calls waiting
        for a call slot end with UNAVAILABLE."""
        self.slots.close()
        self.sessions.close_all()


def _run_update(result: StatementResult) -> int:
    """A statement sent as an update: its count (a query's rows are run, not sent)."""
    if result.affected_rows < 0:
        close_result(result)
    return result.affected_rows


def _parameter_rows(table: pa.Table) -> list[list[object]]:
    """Bound parameter sets, one per row, as Python values (bound as SQL literals)."""
    if table.num_columns == 0:
        return []
    columns = [c.to_pylist() for c in table.columns]
    return [list(row) for row in zip(*columns)]
