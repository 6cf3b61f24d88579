"""MySQL Load: `LOAD DATA LOCAL INFILE` through the MySQL protocol's local-infile exchange.

Doris' `MysqlLoadManager` turns the statement into a Stream Load; so do we, without HTTP: the
clauses become Stream Load properties (`column_separator`, `line_delimiter`, `skip_lines`,
`columns` = the column list plus the SET mappings, `partitions`, and PROPERTIES such as
`max_filter_ratio` / `strict_mode`) checked by executor/load/spec.py, and the file's bytes
stream into the same load core (executor/load/job.run_load).

The exchange (MySQL's LOCAL INFILE request): after COM_QUERY the server sends one packet
`0xFB <file name>`; the client answers with the file's content in packets and an empty packet
at the end; then the server sends OK (`Records: N  Deleted: 0  Skipped: M  Warnings: 0`) or an
error. The server never opens a path of its own file system. The packets are bridged to the
blocking reader the load's worker thread pulls from (`InfilePackets`): each read waits on the
event loop for the next packets, so the file is never held whole. Whatever happens to the load,
the rest of the upload is read (and dropped) up to the empty packet before the answer, so the
connection stays in step and usable; a client that hangs up mid-file ends only its connection.
Upstream: Doris `MysqlLoadManager`, `LoadJobRowResult`; MySQL `Protocol::LOCAL INFILE Request`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mysql_mimic.stream import ConnectionClosed
from mysql_mimic.types import Capabilities
from sqlglot import exp

from executor.load.chunks import READ_BLOCK, ForwardStream
from executor.load.job import run_load
from executor.load.records import record_file_load
from executor.load.spec import LoadFailed, LoadSpec, LoadStats, spec_from_properties
from server.packet_io import IdleTimeout
from server.results import ok_packet
from sql.errors import (
    DorisError,
    ShaleError,
    no_database_selected,
    table_not_found,
    unknown_database,
)
from sql.parser.dialect import LoadDataInfile, ShaleDoris
from storage.engine import StorageEngine

if TYPE_CHECKING:
    from server.connection import ShaleConnection
    from server.session import ShaleSession

log = logging.getLogger(__name__)

ER_NOT_ALLOWED_COMMAND = 1148
LOCAL_INFILE_REQUEST = b"\xfb"
# PROPERTIES of LOAD DATA that pass through as Stream Load properties (Doris' MysqlLoadManager
# forwards these; timezone is accepted as Doris accepts it)
_PASSED_PROPERTIES = ("max_filter_ratio", "strict_mode", "timezone", "exec_mem_limit",
                      "timeout", "trim_double_quotes", "enclose", "escape", "skip_lines")
# Other properties Doris' LoadStmt accepts (PROPERTIES_MAP); they change nothing here. Any
# other key is Doris' `<key> is invalid property`.
_ACCEPTED_PROPERTIES = ("load_parallelism", "send_batch_parallelism", "load_to_single_tablet",
                        "priority", "fuzzy_parse", "num_as_string", "read_json_by_line",
                        "strip_outer_array", "jsonpaths", "json_root", "partial_columns",
                        "cluster")


@dataclass
class LocalInfileOutcome:
    """A validated LOAD DATA LOCAL INFILE: the connection runs the exchange and the load."""

    engine: StorageEngine
    spec: LoadSpec
    file_name: str


def _string(node: exp.Expression | None) -> str | None:
    return None if node is None else str(node.this)


def load_properties(stmt: LoadDataInfile) -> dict[str, str]:
    """The statement's clauses as Stream Load properties (MysqlLoadManager's headers)."""
    props: dict[str, str] = {}
    for p in stmt.args.get("properties") or []:
        key = p.this.name if isinstance(p.this, (exp.Literal, exp.Identifier, exp.Var)) else ""
        if key.lower() in _PASSED_PROPERTIES:
            props[key.lower()] = p.args["value"].name
        elif key.lower() not in _ACCEPTED_PROPERTIES:
            raise DorisError(f"{key or p.sql()} is invalid property")
    for arg, prop in (("column_separator", "column_separator"),
                      ("line_delimiter", "line_delimiter"), ("enclose", "enclose"),
                      ("escape", "escape")):
        value = _string(stmt.args.get(arg))
        if value is not None:
            props[prop] = value
    if _string(stmt.args.get("line_prefix")):  # MySQL skips up to the prefix: no Doris property
        raise DorisError("LINES STARTING BY is not supported: the lines are loaded whole")
    ignore = stmt.args.get("ignore_lines")
    if ignore is not None:
        props["skip_lines"] = ignore.name
    columns = stmt.args.get("columns") or []
    mappings = stmt.args.get("mappings") or []
    if columns or mappings:
        # `@var` is a temporary column: the same name without `@` (Doris' file field names)
        names = [exp.column(c.name, quoted=c.quoted).sql(dialect=ShaleDoris) for c in columns]
        exprs = [m.transform(_variable_as_column).sql(dialect=ShaleDoris) for m in mappings]
        props["columns"] = ", ".join(names + exprs)
    partitions = stmt.args.get("partitions")
    if partitions:
        key = "temporary_partitions" if stmt.args.get("temporary") else "partitions"
        props[key] = ", ".join(p.name for p in partitions)
    return props


def _variable_as_column(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Parameter):
        return exp.column(node.name)
    return node


def prepare(engine: StorageEngine, stmt: LoadDataInfile, current_db: str | None
            ) -> LocalInfileOutcome:
    """Everything checked before the client is asked for the file (runs on a worker thread)."""
    if not stmt.args.get("local"):
        raise DorisError("LOAD DATA INFILE reads a file of the server, which ShaleDB never "
                         "does: use LOAD DATA LOCAL INFILE (the client sends the file)")
    table_node = stmt.this
    db_name = table_node.text("db") or current_db
    if not db_name:
        raise no_database_selected()
    catalog = engine.catalog
    if catalog.get_database(db_name) is None:
        raise unknown_database(db_name)
    table = catalog.get_table(db_name, table_node.name)
    if table is None:
        raise table_not_found(db_name, table_node.name)
    try:
        spec = spec_from_properties(catalog, db_name, table, load_properties(stmt))
    except LoadFailed as e:
        raise load_error(e) from None
    return LocalInfileOutcome(engine, spec, str(stmt.args["file"].this))


def load_error(e: LoadFailed) -> DorisError:
    """Doris sends the Stream Load's Message as `errCode = 2, detailMessage = <message>`; the
    first bad rows are named (the client has no ErrorURL to open)."""
    message = e.message
    if "detailMessage = " in message:  # an analysis error of the properties: its detail only
        message = message.split("detailMessage = ", 1)[1]
    stats = e.stats
    if stats is not None and stats.first_errors and "filtered rows" in message:
        shown = stats.first_errors[:3]
        message += (f". {stats.filtered_rows} rows filtered of {stats.total_rows}; first: "
                    + " | ".join(shown))
    return DorisError(message)


def info(stats: LoadStats) -> str:
    """The OK packet's info string (Doris' LoadJobRowResult)."""
    return (f"Records: {stats.loaded_rows}  Deleted: 0  Skipped: {stats.filtered_rows}  "
            "Warnings: 0")


class InfilePackets(ForwardStream):
    """A blocking file-like over the client's file packets, for the load's worker thread: each
    `read(n)` waits on the event loop for packets until `n` bytes or the empty end packet.

    pyarrow's CSV reader reads ahead on a thread of its own, so a read may still be in flight
    after the load failed: reads take a lock, and once `drain` started they return nothing, so
    exactly one reader ever consumes the connection's packets."""

    def __init__(self, connection: ShaleConnection, loop: asyncio.AbstractEventLoop) -> None:
        self._connection = connection
        self._loop = loop
        self._lock = asyncio.Lock()
        self._pending = b""
        self._abandoned = False  # the load is over: the rest of the upload is dropped
        self._killed = False  # KILL QUERY: the load's next read fails, so it aborts
        self.finished = False  # the empty packet arrived

    async def _next_packet(self) -> bytes:
        """The next file packet (b"" once the client ended the file)."""
        if self.finished:
            return b""
        wait = self._connection.session.variables.connection_options().net_read_timeout
        data = await self._connection.read_packet(idle_timeout=wait)
        if not data:
            self.finished = True
        return data

    async def _read(self, n: int) -> bytes:
        async with self._lock:
            out = bytearray(self._pending)
            self._pending = b""
            while len(out) < n and not self._abandoned:
                data = await self._next_packet()
                if not data:
                    break
                out += data
            if self._abandoned:
                return b""
            if len(out) > n:
                self._pending = bytes(out[n:])
                del out[n:]
            return bytes(out)

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = READ_BLOCK
        if self._killed:
            raise ConnectionAbortedError("LOAD DATA was killed")
        if self._abandoned:
            return b""
        return asyncio.run_coroutine_threadsafe(self._read(n), self._loop).result()

    def kill(self) -> None:
        self._killed = True
        self._abandoned = True

    async def drain(self) -> None:
        """Read and drop the rest of the upload, up to the empty packet."""
        self._abandoned = True
        async with self._lock:
            self._pending = b""
            while await self._next_packet():
                pass


def _record(outcome: LocalInfileOutcome, stats: LoadStats | None, error: str | None,
             session: ShaleSession, started: float) -> None:
    """SHOW LOAD lists LOAD DATA as Doris' MYSQL_LOAD jobs (executor/load/records.py)."""
    spec = outcome.spec
    runner = getattr(session, "runner", None)
    record_file_load(outcome.engine, spec.db, spec.table.name, spec.label, "MYSQL_LOAD", stats,
                     error, getattr(runner, "user", ""), started, spec.max_filter_ratio)


async def run_exchange(connection: ShaleConnection, outcome: LocalInfileOutcome) -> bool:
    """Ask the client for the file, load what it sends and answer OK or ERR (server/connection
    write_outcome). False when the answer is an error."""
    if Capabilities.CLIENT_LOCAL_FILES not in connection.capabilities:
        # Doris (MysqlLoadCommand): the client did not announce CLIENT_LOCAL_FILES
        await connection.write_error(ShaleError(
            "This client is not support to load client local file.", ER_NOT_ALLOWED_COMMAND,
            "42000"))
        return False
    await connection.stream.write(LOCAL_INFILE_REQUEST + outcome.file_name.encode())
    packets = InfilePackets(connection, asyncio.get_running_loop())
    session = connection.session
    error: ShaleError | None = None
    stats: LoadStats | None = None
    started = time.time()
    try:
        stats = await session.in_worker(run_load, outcome.engine, outcome.spec, packets)
    except LoadFailed as e:
        error = load_error(e)
        _record(outcome, e.stats, e.message, session, started)
    except asyncio.CancelledError:  # KILL QUERY: the load aborts, the upload is still read
        packets.kill()
        with contextlib.suppress(Exception):
            await packets.drain()
        raise
    # When the load ended before the file did (a parse error, a client gone) the rest of the
    # upload is read and dropped, so the connection stays in step; always called, so that a
    # read-ahead still in flight gets nothing more.
    try:
        await packets.drain()
    except ShaleError as e:  # a packet over max_allowed_packet, out of order: framing lost
        with contextlib.suppress(Exception):
            await connection.write_error(e)
        raise ConnectionResetError("LOCAL INFILE upload broke the packet framing") from None
    except (ConnectionClosed, IdleTimeout, TimeoutError):
        log.info("LOAD DATA LOCAL INFILE %r: the client stopped sending mid-file",
                 outcome.file_name)
        raise ConnectionResetError("client gone during LOCAL INFILE") from None
    spec = outcome.spec
    if error is not None:
        log.warning("LOAD DATA LOCAL INFILE into %s.%s failed: %s", spec.db, spec.table.name,
                    error.message)
        await connection.write_error(error)
        return False
    assert stats is not None
    _record(outcome, stats, None, session, started)
    log.info("LOAD DATA LOCAL INFILE into %s.%s: label=%s txn=%d rows=%d filtered=%d bytes=%d",
             spec.db, spec.table.name, spec.label, stats.txn_id, stats.loaded_rows,
             stats.filtered_rows, stats.load_bytes)
    await connection.stream.write(ok_packet(connection.capabilities, connection.status_flags,
                                            stats.loaded_rows, info(stats)))
    return True
