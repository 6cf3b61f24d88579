"""ShaleConnection: mysql-mimic's Connection with our result streaming and error packets.

Overrides COM_QUERY and COM_INIT_DB handling so that: results stream batch by batch with a
socket drain after each (mysql-mimic buffers the whole result, LIBS.md 1.9). Each batch is
encoded and framed columnar in a worker thread (server/text_encoding.py), continuing the
stream's sequence counter (`stream.seq.value`), and its buffer goes straight to the transport;
the next batch is computed while the previous one drains. OK packets carry
Doris' info string; every `ShaleError` becomes an error packet with its own code and SQLSTATE;
KILL QUERY also sets the victim's cancel token so its worker thread stops. Prepared statements
(COM_STMT_*) come from the `PreparedStatements` mixin (server/prepared.py). It also owns the
handshake (utf8mb4 collation, the session charset kept utf8mb4), the authentication exchange
(1045 wording, caching_sha2 fast-auth, the database checked after the password, hang-up after
a failed login), multi-statement COM_QUERY (one result per statement) and the command loop
(adds COM_STATISTICS, COM_SET_OPTION, COM_PROCESS_KILL and a typed COM_FIELD_LIST). No
client packet goes through mysql-mimic's parsers or its packet reader: every packet is read
under max_allowed_packet and timeouts (server/packet_io.py: connect_timeout for the login,
wait_timeout between commands) and parsed with bounds checks (server/packets.py), so a
malformed packet is an error packet or a closed connection, never a hang; TLS comes from
server/tls.py. Each fix is written up in docs/mysql-mimic-fixes.md. Created by
server/listener.py for every accepted socket (pinned mysql-mimic==3.0.5).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from mysql_mimic import connection as mm_connection
from mysql_mimic import context
from mysql_mimic import packets as mm_packets
from mysql_mimic.auth import Success
from mysql_mimic.constants import KillKind
from mysql_mimic.errors import ErrorCode as MysqlErrorCode
from mysql_mimic.errors import MysqlError
from mysql_mimic.stream import ConnectionClosed
from mysql_mimic.types import Capabilities, Commands, ServerStatus

from server import packets, tls
from server.auth import FAST_AUTH_SUCCESS, FastAuthSuccess, ShaleAuthInfo
from server.local_infile import LocalInfileOutcome
from server.local_infile import run_exchange as run_local_infile
from server.multi_statements import split_statements
from server.packet_io import IdleTimeout, PacketInput, linger_and_close
from server.packets import ER_CLIENT_INTERACTION_TIMEOUT, ER_SECURE_TRANSPORT_REQUIRED
from server.prepared import PreparedStatements
from server.results import column_definition, encode_python_rows, error_packet, ok_packet
from server.statements import OkOutcome, Outcome, RowsOutcome, TextOutcome
from server.text_encoding import Chunk, encode_batch, frame_payload
from sql.errors import DorisError, ErrorCode, ShaleError, unknown_database
from sql.show.statements import like_match
from storage.batch import Batch
from storage.types import varchar

if TYPE_CHECKING:
    from server.session import ShaleSession

logger = logging.getLogger(__name__)


Encoded = tuple[list[Chunk], int, int]  # (packet buffers, rows, next sequence id)
FIRST_ROWS = 4096  # the first packet run is small so the client sees rows at once
HEADERS_PER_CONNECTION = 64
MAX_ROWS = 65536  # rows framed per step: bounds the buffer whatever batch size the plan yields
TEXT_RESULT_TYPE = varchar(255)
UTF8MB4 = "utf8mb4"
# utf8mb4_general_ci: the one-byte collation id every client knows as utf8mb4. mysql-mimic sends
# 255 (utf8mb4_0900_ai_ci, unknown to MariaDB Connector/J, which then falls back to its own
# choice); Doris sends 33 (utf8mb3) although its session variables say utf8mb4.
HANDSHAKE_COLLATION = 45
# Until the login succeeded a packet may not exceed this (nor the global max_allowed_packet): a
# handshake response is a few hundred bytes, connect attributes at most 64 KB, so a client that
# has not logged in cannot make the server buffer megabytes.
LOGIN_PACKET_LIMIT = 1024 * 1024
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)  # Linux only


def handshake_v10(packet: bytes, server_version: str) -> bytes:
    """mysql-mimic's HandshakeV10 packet with its character-set byte set to HANDSHAKE_COLLATION.
    The byte follows protocol version (1), the NUL-terminated version, connection id (4),
    auth-plugin-data part 1 (8), filler (1) and the capability flags' low half (2)."""
    at = 1 + len(server_version.encode()) + 1 + 4 + 8 + 1 + 2
    if packet[0] != 10 or packet[at - 3] != 0:  # pragma: no cover - mysql-mimic layout changed
        raise RuntimeError("unexpected HandshakeV10 layout")
    return packet[:at] + bytes([HANDSHAKE_COLLATION]) + packet[at + 1:]


class BatchFeed:
    """Pulls a query's batches (running it a step at a time) and frames them in slices."""

    def __init__(self, batches: Iterator[Batch]) -> None:
        self._batches = batches
        self._rest: Batch | None = None
        self._exhausted = False

    @property
    def done(self) -> bool:
        """No rows are left, known without pulling again (see `look_ahead`)."""
        return self._exhausted and self._rest is None

    def next_encoded(self, seq: int, max_rows: int = MAX_ROWS,
                     look_ahead: bool = False) -> Encoded | None:
        """Frame up to `max_rows` rows from sequence id `seq`; None once the query is done.
        `look_ahead`: when the batch fits in this step, pull the next one now, so a small
        result (a point lookup) is known to be complete and needs no further step, which would
        be one more hand-off to a worker thread and back (docs/performance.md)."""
        batch = self._rest
        self._rest = None
        if batch is None:
            batch = self._next_batch()
            if batch is None:
                return None
        if batch.num_rows > max_rows:
            self._rest = batch.slice(max_rows, batch.num_rows)
            batch = batch.slice(0, max_rows)
        elif look_ahead:
            self._rest = self._next_batch()
        chunks, next_seq = encode_batch(batch, seq)
        return chunks, batch.num_rows, next_seq

    def _next_batch(self) -> Batch | None:
        batch = next((b for b in self._batches if b.num_rows), None)
        self._exhausted = batch is None
        return batch


@dataclass
class StartedRows(RowsOutcome):
    """A result set whose first step (`first`, framed from sequence id `after_header`) ran
    on the worker thread with the statement; `feed` holds the rest."""

    feed: BatchFeed = field(default_factory=lambda: BatchFeed(iter(())))
    first: Encoded | None = None
    after_header: int = 0


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # an abandoned prefetch: its error is not reported twice


def is_secure(connection: Any) -> bool:
    """Whether a connection runs over TLS (for REQUIRE SSL and require_secure_transport)."""
    return tls.is_secure(connection)


def secure_transport_required() -> ShaleError:
    return ShaleError("Connections using insecure transport are prohibited while "
                      "--require_secure_transport=ON.", ER_SECURE_TRANSPORT_REQUIRED, "HY000")


def idle_timeout_error() -> ShaleError:
    return ShaleError("The client was disconnected by the server because of inactivity. See "
                      "wait_timeout and interactive_timeout for configuring this behavior.",
                      ER_CLIENT_INTERACTION_TIMEOUT, "HY000")


class ShaleConnection(PreparedStatements, mm_connection.Connection):
    # Set when the connection must end after the reply just sent (failed login, unknown
    # database at connect, client gone during the handshake): the command loop returns at once.
    closing = False
    logged_in = False
    _input: PacketInput | None = None
    _kill: KillKind | None  # mysql-mimic's Connection sets it (untyped there)
    session: ShaleSession  # the session_factory's (server/app.py)
    _headers_cache: dict[object, list[bytes]] | None = None

    @property
    def _headers(self) -> dict[object, list[bytes]]:
        """Result headers already built on this connection (`header_packets`)."""
        if self._headers_cache is None:
            self._headers_cache = {}
        return self._headers_cache

    async def read_packet(self, idle_timeout: float | None = None) -> bytes:
        """The next client packet (server/packet_io.py): at most max_allowed_packet bytes (the
        global value, and at most LOGIN_PACKET_LIMIT, until the login succeeded)."""
        options = self.session.variables.connection_options()
        limit = options.max_allowed_packet
        if not self.logged_in:
            limit = min(limit, LOGIN_PACKET_LIMIT)
        if self._input is None:
            self._input = PacketInput(self.stream)
        packet = await self._input.read(limit, idle_timeout, options.net_read_timeout)
        self._quick_ack()
        return packet

    def _quick_ack(self) -> None:
        """Acknowledge what was read at once (Linux TCP_QUICKACK, which the kernel resets):
        a command that expects no reply (COM_STMT_CLOSE) followed by one in a second small
        write, from a client without TCP_NODELAY, otherwise waits for the delayed ACK (~40 ms;
        mysql-connector-python re-preparing a statement, docs/performance.md)."""
        sock = self.stream.writer.get_extra_info("socket")
        if sock is not None and _QUICKACK is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)

    async def _start(self) -> None:
        """mysql-mimic's connection life cycle, hardened: the login must finish within
        connect_timeout (a silent or slow client is disconnected, as by mysqld); a malformed,
        oversized or refused handshake ends in its error packet and a closed socket, never in
        a traceback (mysql-mimic re-raised every handshake error)."""
        try:
            await self._life_cycle()
        finally:
            if self._input is not None:
                self._input.close()

    async def _life_cycle(self) -> None:
        context.connection_id.set(self.connection_id)
        logger.info("Started new connection: %s", self.connection_id)
        # no session SET has run yet: these are the global values
        timeout = self.session.variables.connection_options().connect_timeout
        try:
            async with asyncio.timeout(timeout):
                await self.connection_phase()
        except TimeoutError:
            logger.info("connection %s: no login within connect_timeout (%.0f s), closed",
                        self.connection_id, timeout)
            return
        except ShaleError as e:  # bad handshake, packet too large, insecure transport
            logger.info("connection %s refused at login: %s", self.connection_id, e.message)
            with contextlib.suppress(Exception):
                await self.write_error(e)
                await linger_and_close(self.stream)
            return
        except (ConnectionClosed, ConnectionError, ssl.SSLError):
            return  # the client hung up (or failed its TLS handshake) during the login
        await self.session.init(self)
        try:
            await self.command_phase()
        except asyncio.CancelledError:
            if self._kill != KillKind.CONNECTION:
                raise
            self._kill = None
            with contextlib.suppress(Exception):
                await self.stream.write(self.error(msg="Session was killed",
                                                   code=MysqlErrorCode.SESSION_WAS_KILLED))
        finally:
            await self.session.close()

    async def connection_phase(self) -> None:
        """mysql-mimic's handshake with these changes (docs/mysql-mimic-fixes.md): every field
        of the client's response is parsed with bounds checks (server/packets.py); a packet
        over the limit is refused before it is read (server/packet_io.py); TLS is refused
        cleanly when not offered; require_secure_transport refuses a plain connection (3159);
        the handshake announces utf8mb4_general_ci (mysql-mimic sends 255); the client's
        charset from its handshake response is ignored, so character_set_client/connection/
        results stay utf8mb4 as in Doris, which reads every statement as UTF-8; and a client
        that hangs up mid-handshake ends the connection quietly."""
        plugin = self.identity_provider.get_default_plugin()
        auth_data, auth_state = await plugin.start()
        assert isinstance(auth_data, bytes)
        self.handshake_auth_data = auth_data
        self.handshake_auth_plugin = plugin.name
        version = self.session.variables.connection_options().version
        await self.stream.write(handshake_v10(mm_packets.make_handshake_v10(
            capabilities=self.server_capabilities, server_charset=self.server_charset,
            server_version=version, connection_id=self.connection_id, auth_data=auth_data,
            status_flags=self.status_flags, auth_plugin_name=plugin.name,
        ), version))
        response = packets.parse_handshake_response(
            self.server_capabilities, await self.read_packet(), ssl_allowed=self.ssl is not None)
        if isinstance(response, packets.SSLRequest):
            assert self.ssl is not None
            await tls.start_tls(self.stream, self.ssl)
            response = packets.parse_handshake_response(
                self.server_capabilities, await self.read_packet(), ssl_allowed=False)
        assert isinstance(response, packets.HandshakeResponse)
        if not is_secure(self) and (
                self.session.variables.connection_options().require_secure_transport):
            raise secure_transport_required()
        self.capabilities = response.capabilities
        self.max_packet_size = response.max_packet_size
        self.session.database = response.database
        self.client_plugin_name = response.client_plugin
        self.client_connect_attrs = response.connect_attrs
        self.zstd_compression_level = response.zstd_compression_level
        self.session.variables.set("external_user", response.username, force=True)
        await self.authenticate(
            auth_state=auth_state, server_plugin=plugin, username=response.username,
            client_plugin_name=response.client_plugin, auth_response=response.auth_response,
            connect_attrs=response.connect_attrs,
        )
        self.stream.reset_seq()

    async def handle_change_user(self, data: bytes) -> None:
        """COM_CHANGE_USER parsed with bounds checks (mysql-mimic's parser loops forever on a
        user name without its NUL); a malformed one is 1047 and ends the connection, as a
        failed COM_CHANGE_USER does in mysqld."""
        try:
            request = packets.parse_change_user(self.capabilities, data)
        except ShaleError as e:
            await self.write_error(e)
            self.closing = True
            return
        self.session.database = request.database
        self.session.variables.set("external_user", request.username, force=True)
        if request.connect_attrs:
            self.client_connect_attrs = request.connect_attrs
        await self.authenticate(
            username=request.username, auth_response=request.auth_response,
            client_plugin_name=request.client_plugin, connect_attrs=request.connect_attrs,
        )
        await self.session.reset()

    async def authenticate(self, *args: Any, **kwargs: Any) -> None:
        # COM_CHANGE_USER (mysql-mimic's handle_change_user) copies the client's charset into
        # character_set_client before calling this: Doris keeps utf8mb4 whatever the client says.
        self.session.variables.set("character_set_client", UTF8MB4)
        await self._authenticate(*args, **kwargs)

    async def _authenticate(
        self, username: str, auth_response: bytes, client_plugin_name: str | None,
        connect_attrs: dict[str, str], auth_state: Any = None, server_plugin: Any = None,
    ) -> None:
        """mysql-mimic's authentication exchange with two fixes (docs/mysql-mimic-fixes.md):
        an unknown user or a wrong password is MySQL's 1045 `Access denied for user 'u'@'host'
        (using password: YES|NO)` (mysql-mimic: 3162 for unknown users), and a plugin may
        succeed with an AuthMoreData packet before the OK (caching_sha2_password's
        fast_auth_success, which mysql-mimic cannot send without waiting for a reply). Plugins
        get a `ShaleAuthInfo` telling whether the connection is over TLS."""
        host = self.peer_host()
        user = await self.identity_provider.get_user(username, host)  # most specific account
        if user is None:
            await self._access_denied(username, auth_response)
            return
        plugin = self.identity_provider.get_plugin(user.auth_plugin or "") or (
            self.identity_provider.get_default_plugin())
        info = ShaleAuthInfo(
            username=username, data=auth_response, connect_attrs=connect_attrs, user=user,
            client_plugin_name=client_plugin_name, handshake_auth_data=self.handshake_auth_data,
            handshake_plugin_name=self.handshake_auth_plugin or "", secure=is_secure(self),
        )
        if server_plugin is not None and server_plugin.name == plugin.name and (
            plugin.client_plugin_name in (None, client_plugin_name)
        ):
            decision = await auth_state.asend(info)  # the handshake already started this plugin
        elif plugin.client_plugin_name in (None, client_plugin_name):
            decision, auth_state = await plugin.start(info)
        else:  # the client spoke another plugin: switch it to the user's
            decision, auth_state = await plugin.start()
            if isinstance(decision, bytes):
                await self.stream.write(mm_packets.make_auth_switch_request(
                    server_charset=self.server_charset, plugin_name=plugin.client_plugin_name,
                    plugin_provided_data=decision))
                info = info.copy(await self.read_packet())
                decision = await auth_state.asend(info)
        while isinstance(decision, bytes):
            await self.stream.write(mm_packets.make_auth_more_data(decision))
            info = info.copy(await self.read_packet())
            decision = await auth_state.asend(info)
        if isinstance(decision, Success):
            if isinstance(decision, FastAuthSuccess):
                await self.stream.write(mm_packets.make_auth_more_data(FAST_AUTH_SUCCESS))
            database = self.session.database
            if database and not self.session.services.database_exists(database):
                # Doris checks the database after the password (MysqlProto.negotiate): an
                # unknown one is 1049 with Doris' text, and the connection ends.
                error = unknown_database(database)
                await self.write_error(error)
                self.session.audit_login(self, username, error.code, error.message)
                self.closing = True
                return
            # the account's state (lock, expiry, REQUIRE SSL, max_user_connections,
            # the database's privilege): server/session.py, which owns the login's identity
            refusal = self.session.admit(user, host, is_secure(self))
            if refusal is not None:
                await self.write_error(refusal)
                self.session.audit_login(self, username, refusal.code, refusal.message)
                self.closing = True
                return
            self.session.username = decision.authenticated_as  # the statements' user too
            self.logged_in = True
            await self.stream.write(self.ok())
            self.session.audit_login(self, username)
        else:
            self.session.login_failed(user)
            await self._access_denied(username, info.data)

    def peer_host(self) -> str:
        peer = self.stream.writer.get_extra_info("peername")
        return peer[0] if isinstance(peer, tuple) else "localhost"

    async def _access_denied(self, username: str, auth_response: bytes) -> None:
        host = self.peer_host()
        using = "YES" if auth_response else "NO"
        message = f"Access denied for user '{username}'@'{host}' (using password: {using})"
        await self.stream.write(error_packet(
            self.capabilities, ErrorCode.ACCESS_DENIED, "28000", message))
        self.session.audit_login(self, username, ErrorCode.ACCESS_DENIED, message)
        # mysql-mimic carries on into the command phase after a failed login: the command loop
        # ends the connection instead (also after a failed COM_CHANGE_USER, as mysqld does).
        self.closing = True

    # ---- command dispatch -----------------------------------------------------------------
    async def command_phase(self) -> None:
        """mysql-mimic's command loop (same handlers, same error and KILL QUERY handling) plus
        the commands it rejects as 'Unsupported Command': COM_STATISTICS (the mariadb CLI's
        `status`, mysqladmin), COM_SET_OPTION (multi-statement on/off) and COM_PROCESS_KILL.
        A session idle for wait_timeout seconds is closed (MySQL 8's 4031 error first); a
        packet over max_allowed_packet is 1153 and ends the connection; a malformed command is
        1835 and the connection carries on."""
        C = Commands
        handlers = {
            C.COM_QUERY: self.handle_query, C.COM_STMT_PREPARE: self.handle_stmt_prepare,
            C.COM_STMT_SEND_LONG_DATA: self.handle_stmt_send_long_data,
            C.COM_STMT_EXECUTE: self.handle_stmt_execute, C.COM_STMT_FETCH: self.handle_stmt_fetch,
            C.COM_STMT_RESET: self.handle_stmt_reset, C.COM_STMT_CLOSE: self.handle_stmt_close,
            C.COM_PING: self.handle_ping, C.COM_CHANGE_USER: self.handle_change_user,
            C.COM_RESET_CONNECTION: self.handle_reset_connection, C.COM_DEBUG: self.handle_debug,
            C.COM_INIT_DB: self.handle_init_db, C.COM_FIELD_LIST: self.handle_field_list,
            C.COM_STATISTICS: self.handle_statistics, C.COM_SET_OPTION: self.handle_set_option,
            C.COM_PROCESS_KILL: self.handle_process_kill,
        }
        while not self.closing:
            wait = self.session.variables.connection_options().wait_timeout
            try:
                data = await self.read_packet(idle_timeout=wait)
            except IdleTimeout:
                logger.info("connection %s idle for wait_timeout (%.0f s), closed",
                            self.connection_id, wait)
                with contextlib.suppress(Exception):
                    await self.write_error(idle_timeout_error())
                return
            except ShaleError as e:  # packet too large / out of order: the framing is lost
                with contextlib.suppress(Exception):
                    await self.write_error(e)
                    await linger_and_close(self.stream)
                return
            except (ConnectionClosed, ConnectionError, TimeoutError):
                return
            try:
                if not data:
                    raise packets.MalformedPacket()
                if data[0] == C.COM_QUIT:
                    return
                handler = handlers.get(data[0])
                if handler is None:
                    raise packets.unknown_command()
                await handler(data[1:])
            except ShaleError as e:  # a malformed command packet
                await self.write_error(e)
            except MysqlError as e:
                await self.stream.write(self.error(msg=e.msg, code=e.code))
            except asyncio.CancelledError:
                if self._kill != KillKind.QUERY:
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                self._kill = None
                await self.stream.write(
                    self.error(msg="Query was killed", code=MysqlErrorCode.SESSION_WAS_KILLED)
                )
            except ConnectionError:
                return
            except Exception as e:
                logger.exception("internal error in command %#x", data[0])
                await self.stream.write(self.error(msg=e))
            finally:
                self.stream.reset_seq()

    async def handle_process_kill(self, data: bytes) -> None:
        """COM_PROCESS_KILL (mysqladmin kill, old drivers): the statement KILL CONNECTION id."""
        target = packets.parse_process_kill(data)
        outcome = await self.session.run_sql(f"KILL {target}")
        try:
            await self.write_outcome(outcome)
        finally:
            self.session.statement_done()

    async def handle_statistics(self, data: bytes) -> None:
        """COM_STATISTICS: one human-readable line in a bare packet (not OK), as mysqld sends."""
        services = self.session.services
        uptime = max(int(time.time() - services.stats.started_at), 1)
        questions = services.stats.queries_total
        text = (
            f"Uptime: {uptime}  Threads: {services.connections.count()}  "
            f"Questions: {questions}  Slow queries: 0  Opens: 0  Flush tables: 1  "
            f"Open tables: 0  Queries per second avg: {questions / uptime:.3f}"
        )
        await self.stream.write(text.encode())

    async def handle_set_option(self, data: bytes) -> None:
        """COM_SET_OPTION: MYSQL_OPTION_MULTI_STATEMENTS_ON (0) / _OFF (1) switch this
        connection's CLIENT_MULTI_STATEMENTS, as mysqld does; answered with EOF."""
        option = packets.parse_set_option(data)
        if option == 0:
            self.capabilities |= Capabilities.CLIENT_MULTI_STATEMENTS
        elif option == 1:
            self.capabilities &= ~Capabilities.CLIENT_MULTI_STATEMENTS
        else:
            raise MysqlError("Unknown command", MysqlErrorCode.UNKNOWN_COM_ERROR)
        await self.stream.write(self.eof())

    async def handle_field_list(self, data: bytes) -> None:
        """COM_FIELD_LIST (tab completion in the mariadb CLI): one column definition per column,
        with its real type and default (mysql-mimic's version runs SHOW COLUMNS and sends every
        column as VARCHAR)."""
        table_name, pattern = packets.parse_field_list(data)
        try:
            table = await self.session.in_session_pool(self.session.field_list_table, table_name)
        except ShaleError as e:
            await self.write_error(e)
            return
        for c in table.columns:
            if pattern and not like_match(c.name, pattern):
                continue
            default = c.default if c.has_default else None
            self.stream.write_many([column_definition(
                c.name, c.type, table=table.name, schema=self.session.database or "",
                default=default, is_field_list=True)])
        await self.stream.write(self.ok_or_eof())

    def kill(self, kind: KillKind = KillKind.CONNECTION) -> None:
        self.session.cancel_statement()
        super().kill(kind)

    async def write_error(self, error: ShaleError) -> None:
        self.session.statement_audit.error(error.code, error.message)  # server/audit.py
        # before the handshake response is parsed the client's capabilities are unknown: the
        # error goes out in the 4.1 format every client since MySQL 4.1 reads
        capabilities = self.capabilities or self.server_capabilities
        await self.stream.write(
            error_packet(capabilities, error.code, error.sqlstate, error.message)
        )

    async def handle_init_db(self, data: bytes) -> None:
        try:
            await self.session.use(packets.parse_init_db(data))
        except ShaleError as e:
            await self.write_error(e)
            return
        await self.stream.write(self.ok())

    async def handle_query(self, data: bytes) -> None:
        """COM_QUERY. A client with CLIENT_MULTI_STATEMENTS gets every statement's result (OK or
        result set), each but the last flagged SERVER_MORE_RESULTS_EXISTS; the first error ends
        the command (earlier results delivered, then the ERR). mysql-mimic ran them all and sent
        only the last result, which is what Doris does for clients without the flag: so do we."""
        sql = packets.parse_query(self.capabilities, data)
        multi = Capabilities.CLIENT_MULTI_STATEMENTS in self.capabilities
        pieces = split_statements(sql) if multi else [sql]
        try:
            for i, piece in enumerate(pieces):
                outcome = await self.session.run_sql(piece, self.start_rows)
                if i + 1 < len(pieces):
                    self.status_flags |= ServerStatus.SERVER_MORE_RESULTS_EXISTS
                try:
                    if not await self.write_outcome(outcome):
                        break  # the result ended in an error: the statements after it do not run
                finally:
                    self.status_flags &= ~ServerStatus.SERVER_MORE_RESULTS_EXISTS
        except ShaleError as e:
            await self.write_error(e)
        except MysqlError:
            raise
        except asyncio.CancelledError:
            raise
        except ConnectionError:
            # The client went away mid-result: nothing to report to it; mysql-mimic's read loop
            # notices the closed socket and ends the connection.
            logger.info("client disconnected while receiving a result")
        except Exception as e:
            logger.exception("internal error running %r", sql[:200])
            await self.write_error(DorisError(f"Internal error: {e}"))
        finally:
            self.session.statement_done()

    async def write_outcome(self, outcome: Outcome) -> bool:
        """Send one statement's outcome; False when a result set ended in an error packet."""
        if isinstance(outcome, OkOutcome):
            await self.stream.write(
                ok_packet(self.capabilities, self.status_flags, outcome.affected_rows, outcome.info,
                          outcome.warnings)
            )
        elif isinstance(outcome, LocalInfileOutcome):  # LOAD DATA LOCAL INFILE
            return await run_local_infile(self, outcome)
        elif isinstance(outcome, TextOutcome):
            # SHOW-style results are VARCHAR columns in Doris (ShowResultSetMetaData)
            await self.write_header(outcome.names, [TEXT_RESULT_TYPE] * len(outcome.names))
            self.stream.write_many(encode_python_rows(outcome.rows))
            await self.write_end()
        else:
            # the session settles a PendingOutcome (group commit) before it reaches the wire
            assert isinstance(outcome, RowsOutcome), outcome
            return await self.write_rows(outcome)
        return True

    def header_packets(self, names: list[str], types: list[Any]) -> list[bytes]:
        """A result set's header: column count, definitions (and EOF for older clients); kept
        per connection, as clients repeat their statements (a point lookup's header was ~4%
        of its server time)."""
        # the EOF that ends it carries the status flags; definitions carry the results charset
        key = (tuple(names), tuple(types), self.capabilities, self.status_flags,
               self.session.variables.get("character_set_results"))
        cache = self._headers
        header = cache.get(key)
        if header is None:
            header = self._build_header(names, types)
            if len(cache) >= HEADERS_PER_CONNECTION:
                cache.clear()
            cache[key] = header
        return header

    def _build_header(self, names: list[str], types: list[Any]) -> list[bytes]:
        header = [
            mm_packets.make_column_count(capabilities=self.capabilities, column_count=len(names))
        ]
        header += [column_definition(n, t, self.server_charset) for n, t in zip(names, types)]
        if not self.deprecate_eof():
            header.append(self.eof())
        return header

    async def write_header(self, names: list[str], types: list[Any]) -> None:
        self.stream.write_many(self.header_packets(names, types))

    def end_packet(self) -> bytes:
        # The end-of-result OK (CLIENT_DEPRECATE_EOF) carries affected_rows=0 as MySQL sends it:
        # MariaDB Connector/J skips that field as a length-prefixed string, so a row count there
        # shifts its read of the status flags past the packet end (docs/mysql-mimic-fixes.md).
        return self.ok_or_eof(affected_rows=0)

    async def write_end(self) -> None:
        await self.stream.write(self.end_packet(), drain=False)
        await self.stream.drain()

    async def write_whole(self, outcome: RowsOutcome, encoded: Encoded) -> None:
        """A result set whose rows are all in `encoded` (its first step found the end): header,
        rows and end go out in one write, one send (one TLS record run) instead of three."""
        stream = self.stream
        parts: list[Any] = []
        seq = stream.seq.value
        for packet in self.header_packets(outcome.names, outcome.types):
            framed, seq = frame_payload(packet, seq)
            parts.append(framed)
        chunks, rows, seq = encoded
        parts += [c.data if isinstance(c, np.ndarray) else c for c in chunks]
        framed, seq = frame_payload(self.end_packet(), seq)
        parts.append(framed)
        stream.seq.value = seq
        self.session.statement_audit.add_returned(rows)
        stream.writer.writelines(parts)
        await stream.writer.drain()

    def _header_packets(self, ncols: int) -> int:
        return 1 + ncols + (0 if self.deprecate_eof() else 1)

    def start_rows(self, outcome: RowsOutcome) -> StartedRows:
        """The first step of a result set, run on the statement's worker thread right after
        the statement (ShaleSession.run_statements): nothing is written meanwhile, so the
        sequence id the header will leave is known."""
        after_header = (self.stream.seq.value + self._header_packets(len(outcome.names))) & 0xFF
        feed = BatchFeed(outcome.batches)
        first = feed.next_encoded(after_header, FIRST_ROWS, True)
        return StartedRows(outcome.names, outcome.types, outcome.batches, feed, first,
                           after_header)

    async def write_rows(self, outcome: RowsOutcome) -> bool:
        """Stream a result set; False when it ended in an error packet (mid-stream)."""
        session = self.session
        stream = self.stream
        # The first step runs before the header so analysis/runtime errors give a clean ERR; its
        # rows are framed with the sequence id the header will leave.
        after_header = (stream.seq.value + self._header_packets(len(outcome.names))) & 0xFF
        if isinstance(outcome, StartedRows):  # the first step ran with the statement
            if outcome.after_header != after_header:  # pragma: no cover - a write in between
                raise RuntimeError("result started at an unexpected sequence id")
            feed, encoded = outcome.feed, outcome.first
        else:
            feed = BatchFeed(outcome.batches)
            encoded = await session.in_worker(feed.next_encoded, after_header, FIRST_ROWS, True)
        if feed.done:  # a small (or empty) result, complete: one write
            await self.write_whole(outcome, encoded or ([], 0, after_header))
            return True
        await self.write_header(outcome.names, outcome.types)
        if stream.seq.value != after_header:  # pragma: no cover - mysql-mimic contract changed
            raise RuntimeError("result header used an unexpected number of packets")
        await stream.drain()  # the header goes out at once
        loop = asyncio.get_running_loop()
        pending: asyncio.Future[Encoded | None] | None = None
        try:
            while encoded is not None:
                chunks, rows, seq = encoded
                session.statement_audit.add_returned(rows)
                stream.seq.value = seq
                # Compute and frame the next batch while this one drains (2 batches in memory),
                # unless the feed knows there is none.
                if not feed.done:
                    pending = loop.run_in_executor(session.pool, feed.next_encoded, seq)
                for chunk in chunks:
                    # an array's buffer, not a copy (ndarray.data is its memoryview)
                    stream.writer.write(chunk.data if isinstance(chunk, np.ndarray) else chunk)
                await stream.writer.drain()
                if pending is None:
                    break
                try:
                    encoded = await pending
                except ShaleError as e:
                    pending = None
                    await self.write_error(e)  # mid-stream: ERR replaces the final OK/EOF
                    return False
                pending = None
        finally:
            if pending is not None:  # client gone or query killed while a batch was prefetched
                pending.add_done_callback(_retrieve)
                pending.cancel()
        await self.write_end()
        return True
