"""Server-side prepared statements: COM_STMT_PREPARE, EXECUTE, SEND_LONG_DATA, FETCH, RESET, CLOSE.

Replaces mysql-mimic 3.0.5's handling, which splices parameter values into the SQL text
unescaped (a value `it's` breaks the statement; an injection hole), rejects DECIMAL parameters,
leaves DATE/DATETIME undecoded and ends the parameter definitions with an EOF even when the
client set CLIENT_DEPRECATE_EOF (docs/mysql-mimic-fixes.md).

PREPARE parses the statement once: every `?` token (found by the tokenizer, so a `?` inside a
string literal or comment is not one) is renamed to a numbered placeholder before parsing, so
the parameters are numbered in source order whatever the AST shape. EXECUTE binds typed values
by substituting literal AST nodes for the placeholders of a copy of that parse (strings stay
string literals whatever they contain, DATE/DATETIME values become CASTs of their ISO text,
DOUBLEs become double literals, DECIMALs exact decimal literals) and runs the bound statements
through the session like any other. Results use the binary protocol, with the same column
definitions as the text protocol (server/binary_protocol.py). A query's result columns are
already described in the PREPARE response (planned with NULL parameters, not run).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from mysql_mimic import packets as mm_packets
from mysql_mimic.errors import MysqlError
from mysql_mimic.types import ColumnType, ServerStatus
from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from planner.query import plan_select
from server import packets
from server.binary_protocol import (
    ParamType,
    binary_column_definition,
    binary_rows,
    binary_text_rows,
    read_execute,
)
from server.privileges.enforce import authorize
from server.results import ok_packet
from server.statements import OkOutcome, Outcome, RowsOutcome, StatementRunner, TextOutcome
from server.text_encoding import frame_payload
from sql.errors import DorisError, ErrorCode, ShaleError
from sql.parser.dialect import LoadDataInfile, ShaleDoris
from storage.types import STRING, DataType

if TYPE_CHECKING:
    from server.session import ShaleSession

logger = logging.getLogger(__name__)

_PARAM_PREFIX = "shale_param_"
ER_UNKNOWN_STMT_HANDLER = 1243
ER_UNSUPPORTED_PS = 1295
_MAX_STMT_ID = 2**32 - 1
BINARY_HEADERS_PER_CONNECTION = 64


@dataclass
class Prepared:
    stmt_id: int
    sql: str
    statements: list[exp.Expression]  # placeholders renamed `shale_param_<i>`
    num_params: int
    param_types: list[ParamType] | None = None
    long_data: dict[int, bytearray] = field(default_factory=dict)
    cursor: list[bytes] | None = None


def number_placeholders(sql: str) -> tuple[str, int]:
    """Rename each `?` parameter marker to `:shale_param_<i>` (i in source order)."""
    try:
        tokens = ShaleDoris().tokenize(sql)
    except TokenError as e:
        raise DorisError(str(e), ErrorCode.PARSE_ERROR) from None
    parts: list[str] = []
    pos = 0
    count = 0
    for tok in tokens:
        if tok.token_type is TokenType.PLACEHOLDER and tok.text == "?":
            parts.append(sql[pos : tok.start])
            parts.append(f" :{_PARAM_PREFIX}{count} ")
            pos = tok.end + 1
            count += 1
    parts.append(sql[pos:])
    return "".join(parts), count


def _param_index(node: exp.Placeholder) -> int:
    name = node.name
    if not name.startswith(_PARAM_PREFIX):
        raise DorisError(f"Unsupported parameter marker :{name}", ErrorCode.PARSE_ERROR)
    return int(name[len(_PARAM_PREFIX) :])


def literal(value: object) -> exp.Expression:
    """The typed SQL literal of one parameter value (never re-parsed text)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Literal.number(int(value))
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return exp.Cast(this=exp.Literal.string(repr(value)), to=exp.DataType.build("DOUBLE"))
        text = repr(value)
        if "e" not in text and "E" not in text:
            text += "e0"  # an exponent makes it a DOUBLE literal, not a DECIMAL one
        lit = exp.Literal.number(text.lstrip("-"))
        return exp.Neg(this=lit) if text.startswith("-") else lit
    if isinstance(value, Decimal):
        text = format(value, "f")
        lit = exp.Literal.number(text.lstrip("-"))
        return exp.Neg(this=lit) if text.startswith("-") else lit
    if isinstance(value, _dt.datetime):
        scale = 6 if value.microsecond else 0
        to = exp.DataType.build(f"DATETIME({scale})" if scale else "DATETIME", dialect=ShaleDoris)
        text = value.isoformat(sep=" ", timespec="microseconds" if scale else "seconds")
        return exp.Cast(this=exp.Literal.string(text), to=to)
    if isinstance(value, _dt.date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
    if isinstance(value, _dt.timedelta):
        total = int(value.total_seconds())
        sign = "-" if total < 0 else ""
        h, rest = divmod(abs(total), 3600)
        return exp.Literal.string(f"{sign}{h:02d}:{rest // 60:02d}:{rest % 60:02d}")
    return exp.Literal.string(str(value))


def bind(statements: list[exp.Expression], values: list[object]) -> list[exp.Expression]:
    """Copies of `statements` with each numbered placeholder replaced by its value's literal."""
    bound = []
    for stmt in statements:
        copy = stmt.copy()
        for node in list(copy.find_all(exp.Placeholder)):
            replacement = literal(values[_param_index(node)])
            if node is copy:  # pragma: no cover - a bare `?` is not a statement
                raise DorisError("Syntax error", ErrorCode.PARSE_ERROR)
            node.replace(replacement)
        copy.meta.update(stmt.meta)
        bound.append(copy)
    return bound


def describe_result(
    runner: StatementRunner, stmt: exp.Expression, num_params: int
) -> tuple[list[str], list[DataType]]:
    """Result columns of a query for the PREPARE response, planned (not run) with NULL for every
    parameter; ([], []) for other statements or when that plan fails (a parameter in LIMIT,
    say), in which case the columns are only described by EXECUTE, as MySQL allows."""
    if not isinstance(stmt, (exp.Select, exp.SetOperation)):
        return [], []
    try:
        [bound] = bind([stmt], [None] * num_params)
        if runner.access is not None:  # no column metadata of tables the user may not read
            authorize(runner.access, bound, runner.database)
        query = plan_select(
            bound, runner.visible_catalog(), runner.context(), sql=stmt.meta.get("sql")
        )
    except Exception:
        logger.debug("no result description at PREPARE", exc_info=True)
        return [], []
    return list(query.names), list(query.types)


class PreparedStatements:
    """Mixin for ShaleConnection: the COM_STMT_* commands (it uses the connection's session,
    stream, capabilities and error writing)."""

    session: ShaleSession
    stream: Any
    capabilities: Any
    status_flags: Any

    def _statements(self) -> dict[int, Prepared]:
        stmts: dict[int, Prepared] | None = getattr(self, "_shale_prepared", None)
        if stmts is None:
            stmts = {}
            self._shale_prepared = stmts
            self._shale_next_id = 0
        return stmts

    def _stmt(self, stmt_id: int) -> Prepared:
        stmt = self._statements().get(stmt_id)
        if stmt is None:
            raise ShaleError(
                f"Unknown prepared statement handler ({stmt_id}) given to mysqld_stmt_execute",
                ER_UNKNOWN_STMT_HANDLER,
            )
        return stmt

    async def handle_stmt_prepare(self, data: bytes) -> None:
        sql = packets.text(data)
        try:
            numbered, count = number_placeholders(sql)
            try:
                statements = self.session.parse(numbered)
            except ShaleError:
                self.session.parse(sql)  # report a syntax error in the client's own text
                raise
            # LOAD DATA needs the LOCAL INFILE exchange, which MySQL has only for COM_QUERY
            if len(statements) != 1 or isinstance(statements[0], LoadDataInfile):
                raise ShaleError(
                    "This command is not supported in the prepared statement protocol yet",
                    ER_UNSUPPORTED_PS,
                )
        except ShaleError as e:
            await self.write_error(e)  # type: ignore[attr-defined]
            return
        for stmt in statements:
            stmt.meta["sql"] = sql
        stmts = self._statements()
        self._shale_next_id = self._shale_next_id % _MAX_STMT_ID + 1
        stmt_id = self._shale_next_id
        stmts[stmt_id] = Prepared(stmt_id, sql, statements, count)
        names, types = await self.session.in_worker(
            describe_result, self.session.runner, statements[0], count
        )
        out = [
            b"\x00"
            + stmt_id.to_bytes(4, "little")
            + len(names).to_bytes(2, "little")
            + count.to_bytes(2, "little")
            + b"\x00"
            + (0).to_bytes(2, "little")
        ]
        if count:
            out += [
                mm_packets.make_column_definition_41(
                    server_charset=self.server_charset,  # type: ignore[attr-defined]
                    name="?",
                    column_type=ColumnType.VAR_STRING,
                )
                for _ in range(count)
            ]
            # Fix: mysql-mimic always ends the parameter definitions with an EOF; a client that
            # set CLIENT_DEPRECATE_EOF does not read one and takes it for the next response.
            if not self.deprecate_eof():  # type: ignore[attr-defined]
                out.append(self.eof())  # type: ignore[attr-defined]
        if names:  # result columns, so getMetaData() works before the first execution
            charset = self.server_charset  # type: ignore[attr-defined]
            out += [binary_column_definition(n, t, charset) for n, t in zip(names, types)]
            if not self.deprecate_eof():  # type: ignore[attr-defined]
                out.append(self.eof())  # type: ignore[attr-defined]
        self.stream.write_many(out)
        await self.stream.drain()

    async def handle_stmt_send_long_data(self, data: bytes) -> None:
        try:
            stmt_id, param, chunk = packets.parse_send_long_data(data)
        except ShaleError:
            return  # the command has no response, errors included (mysqld stores the error)
        stmt = self._statements().get(stmt_id)
        if stmt is not None and param < stmt.num_params:
            buffer = stmt.long_data.setdefault(param, bytearray())
            # the data of one parameter is bounded like one packet (mysqld: ER_NET_PACKET_TOO_LARGE)
            limit = self.session.variables.connection_options().max_allowed_packet
            if len(buffer) + len(chunk) <= limit:
                buffer.extend(chunk)

    async def handle_stmt_reset(self, data: bytes) -> None:
        try:
            stmt = self._stmt(packets.parse_stmt_id(data))
        except ShaleError as e:
            await self.write_error(e)  # type: ignore[attr-defined]
            return
        stmt.long_data.clear()
        stmt.cursor = None
        await self.stream.write(self.ok())  # type: ignore[attr-defined]

    async def handle_stmt_close(self, data: bytes) -> None:
        try:
            self._statements().pop(packets.parse_stmt_id(data), None)
        except ShaleError:
            pass  # COM_STMT_CLOSE has no response, errors included

    async def handle_stmt_execute(self, data: bytes) -> None:
        stmts = self._statements()
        try:
            request = read_execute(
                data,
                self.capabilities,
                self.client_charset,  # type: ignore[attr-defined]
                num_params=lambda i: self._stmt(i).num_params,
                previous_types=lambda i: stmts[i].param_types,
                long_data=lambda i: stmts[i].long_data,
            )
            stmt = stmts[request.stmt_id]
            if request.types is not None:
                stmt.param_types = request.types
            stmt.long_data = {}
            # a learned point lookup runs from its template (server/point_query.py); either way
            # the rows are encoded on the statement's worker thread: one hand-off per execution
            outcome, learn = await self.session.run_point_prepared(
                stmt.sql, request.values, _encode_first)
            if outcome is None:
                bound = bind(stmt.statements, request.values)
                outcome = await self.session.run_statements(bound, _encode_first, learn)
            await self._write_binary_outcome(stmt, outcome, request.use_cursor)
        except ShaleError as e:
            await self.write_error(e)  # type: ignore[attr-defined]
        except (MysqlError, asyncio.CancelledError):
            raise
        except ConnectionError:
            logger.info("client disconnected while receiving a result")
        except Exception as e:
            logger.exception("internal error executing a prepared statement")
            await self.write_error(  # type: ignore[attr-defined]
                DorisError(f"Internal error: {e}")
            )
        finally:
            self.session.statement_done()

    async def _write_binary_outcome(
        self, stmt: Prepared, outcome: Outcome, use_cursor: bool
    ) -> None:
        if isinstance(outcome, OkOutcome):
            await self.stream.write(
                ok_packet(self.capabilities, self.status_flags, outcome.affected_rows, outcome.info)
            )
            return
        if isinstance(outcome, TextOutcome):
            names, types = outcome.names, [STRING] * len(outcome.names)
            rows = binary_text_rows(outcome.rows)
        else:
            assert isinstance(outcome, RowsOutcome)
            names, types = outcome.names, outcome.types
            if isinstance(outcome, EncodedRows):
                rows = outcome.encoded
            else:
                rows = await self.session.in_worker(_encode_all, outcome)
            self.session.statement_audit.add_returned(len(rows))  # server/audit.py ReturnRows
        header = list(self._binary_header(names, types))
        if use_cursor:
            stmt.cursor = rows
            header.append(self.ok_or_eof(flags=ServerStatus.SERVER_STATUS_CURSOR_EXISTS))  # type: ignore[attr-defined]
            self.stream.write_many(header)
            await self.stream.drain()
            return
        if not self.deprecate_eof():  # type: ignore[attr-defined]
            header.append(self.eof())  # type: ignore[attr-defined]
        # header, rows and end in one write (one send), as the text protocol's small results
        stream = self.stream
        seq = stream.seq.value
        parts = []
        for packet in (*header, *rows, self.end_packet()):  # type: ignore[attr-defined]
            framed, seq = frame_payload(packet, seq)
            parts.append(framed)
        stream.seq.value = seq
        stream.writer.writelines(parts)
        await stream.writer.drain()

    def _binary_header(self, names: list[str], types: list[DataType]) -> tuple[bytes, ...]:
        """Column count and definitions of a binary result set, kept per connection by names
        and types: a prepared point lookup returns the same columns every execution."""
        charset = self.server_charset  # type: ignore[attr-defined]
        key = (tuple(names), tuple(types), self.capabilities, charset)
        cache: dict[object, tuple[bytes, ...]] | None = getattr(self, "_shale_headers", None)
        if cache is None:
            cache = {}
            self._shale_headers = cache
        header = cache.get(key)
        if header is None:
            header = (mm_packets.make_column_count(capabilities=self.capabilities,
                                                   column_count=len(names)),
                      *(binary_column_definition(n, t, charset) for n, t in zip(names, types)))
            if len(cache) >= BINARY_HEADERS_PER_CONNECTION:
                cache.clear()
            cache[key] = header
        return header

    async def handle_stmt_fetch(self, data: bytes) -> None:
        try:
            stmt_id, wanted = packets.parse_stmt_fetch(data)
            stmt = self._stmt(stmt_id)
        except ShaleError as e:
            await self.write_error(e)  # type: ignore[attr-defined]
            return
        rows = stmt.cursor or []
        batch, stmt.cursor = rows[:wanted], rows[wanted:]
        done = not stmt.cursor
        flags = (
            ServerStatus.SERVER_STATUS_LAST_ROW_SENT
            if done
            else ServerStatus.SERVER_STATUS_CURSOR_EXISTS
        )
        self.stream.write_many(batch)
        await self.stream.write(self.ok_or_eof(flags=flags))  # type: ignore[attr-defined]


@dataclass
class EncodedRows(RowsOutcome):
    """A result set already encoded in the binary protocol on the statement's worker thread."""

    encoded: list[bytes] = field(default_factory=list)


def _encode_first(outcome: RowsOutcome) -> EncodedRows:
    """Run with the statement (ShaleSession's `start_rows`): its whole result, encoded."""
    return EncodedRows(outcome.names, outcome.types, iter(()), _encode_all(outcome))


def _encode_all(outcome: RowsOutcome) -> list[bytes]:
    rows: list[bytes] = []
    for batch in outcome.batches:
        if batch.num_rows:
            rows.extend(binary_rows(batch))
    return rows
