"""ShaleServer: wires the storage engine, the MySQL listener and the HTTP listener together.

One process, one event loop: the MySQL protocol (mysql-mimic) and HTTP (aiohttp) listeners
share it; statements run on a thread pool sized to the machine. `run()` serves until SIGTERM or
SIGINT, then closes listeners, lets running statements finish and closes the catalog.
Everything committed is already durable (fsynced files + SQLite WAL), so kill -9 loses nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import ssl
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from aiohttp import web
from mysql_mimic.constants import DEFAULT_SERVER_CAPABILITIES, KillKind
from mysql_mimic.control import LocalControl
from mysql_mimic.types import Capabilities

from executor.derived_columns import install as install_derived_columns
from executor.file_dirs import FileDirs
from executor.outfile import remove_partial_files
from server import text_encoding, tls
from server.audit import AuditLog
from server.auth import ShaleIdentityProvider
from server.config import Config
from server.deadlines import Deadlines
from server.dynamic_partitions import DynamicPartitionScheduler
from server.flight_sql import FlightSqlListener
from server.frontend_config import FrontendConfig
from server.http import build_app
from server.listener import ShaleMysqlServer
from server.privileges import PrivilegeManager
from server.privileges.statements import AccountStatements
from server.profiles import QueryProfiles
from server.services import HttpServices, ServerStats, SessionServices
from server.session import ShaleSession
from server.statements import StatementServices
from server.variables import GlobalVariables
from storage.data_dir import DataDirError
from storage.engine import StorageEngine
from storage.page_cache import parse_limit, physical_memory
from storage.segment.meta_cache import SEGMENT_META_CACHE

logger = logging.getLogger("shaledb")

SESSION_THREADS = 4
# One result per statement of a multi-statement COM_QUERY (server/connection.py handle_query).
SERVER_CAPABILITIES = (
    DEFAULT_SERVER_CAPABILITIES | Capabilities.CLIENT_MULTI_STATEMENTS
    | Capabilities.CLIENT_MULTI_RESULTS
    | Capabilities.CLIENT_LOCAL_FILES  # LOAD DATA LOCAL INFILE (server/local_infile.py)
)


class OtherSessions(Protocol):
    """Another listener's sessions (server/flight_sql/sessions.py FlightSessions)."""

    def session_of(self, connection_id: int) -> object | None: ...

    def sessions(self) -> list[object]: ...

    def kill(self, connection_id: int, query_only: bool) -> None: ...


class SequentialControl(LocalControl):
    """The server's connection list: the one adapter over mysql-mimic's LocalControl (whose
    `_connections` is private; nothing else reads it). Connection ids 1, 2, 3, ... as Doris
    gives them (mysql-mimic prefixes a random server id)."""

    def __init__(self) -> None:
        super().__init__(server_id=1)
        self._next = 0
        # other listeners' sessions (Arrow Flight SQL), listed and killed with these
        self._other_sessions: list[OtherSessions] = []

    def register_sessions(self, other: OtherSessions) -> None:
        """Sessions another listener owns (ids apart from ours) join SHOW PROCESSLIST and
        KILL; `count` (COM_STATISTICS' Threads) stays the MySQL port's."""
        self._other_sessions.append(other)

    def _owner(self, connection_id: int) -> OtherSessions | None:
        return next((o for o in self._other_sessions
                     if o.session_of(connection_id) is not None), None)

    async def kill(self, connection_id: int, kind: KillKind = KillKind.CONNECTION) -> None:
        owner = self._owner(connection_id)
        if owner is not None:
            owner.kill(connection_id, query_only=kind == KillKind.QUERY)
            return
        await super().kill(connection_id, kind)

    def _new_connection_id(self) -> int:
        self._next += 1
        return self._next

    def has(self, connection_id: int) -> bool:
        return connection_id in self._connections or self._owner(connection_id) is not None

    def count(self) -> int:
        return len(self._connections)

    def session_of(self, connection_id: int) -> object | None:
        conn = self._connections.get(connection_id)
        if conn is None:
            owner = self._owner(connection_id)
            return owner.session_of(connection_id) if owner is not None else None
        return conn.session

    def sessions(self) -> list[object]:
        """Every open connection's session, in connection id order (then the other
        listeners', whose ids come after)."""
        connections = dict(self._connections)  # a copy: connections come and go meanwhile
        mine = [connections[i].session for i in sorted(connections)]
        return mine + [s for o in self._other_sessions for s in o.sessions()]


class ShaleServer:
    def __init__(self, config: Config) -> None:
        self.config = config
        # Query work runs on threads that hand batches to each other (scan workers, the
        # statement thread, the event loop): a 1 ms GIL switch interval instead of Python's
        # 5 ms keeps those hand-offs from idling a core (measured on the SSB queries).
        sys.setswitchinterval(0.001)
        self.engine = StorageEngine(Path(config.data_dir), backends=config.backends,
                                    host=config.host, compaction=config.compaction)
        self.engine.page_cache.resize(parse_limit(config.storage_page_cache_limit))
        SEGMENT_META_CACHE.resize(
            config.segment_cache_capacity,
            physical_memory() * max(0, config.segment_cache_memory_percentage) // 100)
        # the result encoder's numba kernels loaded now, not by the first client's first result
        # (server/text_encoding.py warm_up: Connector/J gives connect-time statements 500 ms)
        text_encoding.warm_up()
        # materialized-view columns defined by expressions, computed on load (storage cannot)
        install_derived_columns(self.engine)
        self.engine.rollup_jobs.resume()  # ALTER TABLE ADD ROLLUP jobs a restart interrupted
        fe_config = FrontendConfig.of(self.engine)
        for key, type_name, value in (
                ("query_port", "int", config.query_port), ("http_port", "int", config.http_port),
                ("qe_max_connection", "int", config.qe_max_connection),
                ("enable_ssl", "boolean", config.enable_ssl),
                ("enable_https", "boolean", config.enable_https)):
            fe_config.add_static(key, type_name, value)
        self.engine.index_jobs.resume()  # ADD / DROP INDEX, bloom filter SET jobs likewise
        self.engine.compaction.start()  # the producer (storage/compaction/scheduler.py)
        # creates / drops dynamic partitions (server/dynamic_partitions.py)
        DynamicPartitionScheduler.of(self.engine).start()
        self.global_vars = GlobalVariables()
        # local() reads under import_dir, OUTFILE / EXPORT write under export_dir
        self.file_dirs = FileDirs.under(self.engine.data_dir, config.import_dir, config.export_dir)
        self.file_dirs.import_dir.mkdir(parents=True, exist_ok=True)
        remove_partial_files(self.file_dirs.export_dir)  # left by a crash mid-OUTFILE / EXPORT
        # fe.audit.log under the data dir's log directory (server/audit.py).
        self.audit = AuditLog(self.engine.data_dir / "log", config.audit)
        self.global_vars.set("require_secure_transport", config.require_secure_transport)
        self.ssl_context = self._ssl_context(config)
        # accounts, roles and grants live in the catalog; users.json (before grants) is imported
        self.privileges = PrivilegeManager(
            self.engine.catalog, Path(config.data_dir) / "users.json"
        )
        self.account_statements = AccountStatements(self.privileges,
                                                    self.global_vars.get_variable)
        self.pool = ThreadPoolExecutor(
            max_workers=config.workers, thread_name_prefix="shaledb-worker"
        )
        # Statements that read no table (SET, SELECT @@var, SHOW VARIABLES: what drivers send on
        # connect) never wait behind running queries (server/session.py reads_no_table).
        self.session_pool = ThreadPoolExecutor(max_workers=SESSION_THREADS,
                                               thread_name_prefix="shaledb-session")
        self.stats = ServerStats()
        self.control = SequentialControl()
        self.profiles = QueryProfiles()
        self.deadlines = Deadlines()  # query_timeout of every session (server/deadlines.py)
        # what every connection's statements use of the server (server/statements/runner.py)
        self.statement_services = StatementServices(
            self.engine, self.profiles, self.deadlines, self.file_dirs, self.processlist)
        # what every session and the HTTP routes use of the server (server/services.py)
        self.session_services = SessionServices(
            self.statement_services, self.global_vars, self.privileges, self.account_statements,
            self.pool, self.session_pool, self.stats, self.audit, self.control,
            self.database_exists, self.error_log_url)
        self.http_services = HttpServices(
            self.engine, self.privileges, self.stats, self.audit, lambda: self.mysql_port,
            lambda: self.flight_sql.port if self.flight_sql is not None else -1,
            lambda: self.flight_sql.metric_families() if self.flight_sql is not None else ())
        self.mysql: ShaleMysqlServer | None = None
        self.http_runner: web.AppRunner | None = None
        self.mysql_port = 0
        self.http_port = 0
        self.flight_sql: FlightSqlListener | None = None  # arrow_flight_sql_port, when set
        self.flight_calls_abandoned = False  # a stalled Flight client outlived the stop

    @staticmethod
    def _ssl_context(config: Config) -> ssl.SSLContext | None:
        """TLS for the MySQL port (and HTTPS when enabled): configured PEM files or a
        self-signed pair made under the data dir on first start (server/tls.py)."""
        if not (config.enable_ssl or config.enable_https):
            return None
        try:
            cert, key = tls.certificate_paths(Path(config.data_dir), config.ssl_certificate,
                                              config.ssl_private_key)
            return tls.server_context(cert, key)
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
            raise tls.TlsSetupError(str(e)) from None

    def processlist(self) -> list[tuple[object, ...]]:
        """SHOW PROCESSLIST: the row of every connection past its login."""
        rows = []
        for session in self.control.sessions():
            runner = getattr(session, "runner", None)
            if runner is not None:
                rows.append(runner.process_row())
        return rows

    def error_log_url(self, name: str) -> str:
        """Where the HTTP listener serves error log `name` (executor/load/error_log.py)."""
        host = self.config.host
        host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
        return f"http://{host}:{self.http_port}/api/_load_error_log?file={name}"

    def database_exists(self, name: str) -> bool:
        if name.lower() == "information_schema":
            return True
        return self.engine.catalog.get_database(name) is not None

    async def start(self) -> None:
        self.mysql = ShaleMysqlServer(
            session_factory=lambda: ShaleSession(self.session_services),
            identity_provider=ShaleIdentityProvider(self.privileges),
            control=self.control,
            capabilities=SERVER_CAPABILITIES,
            ssl=self.ssl_context if self.config.enable_ssl else None,
            max_connections=self.config.qe_max_connection,
        )
        await self.mysql.start_server(host=self.config.host, port=self.config.query_port)
        self.mysql_port = self.mysql.sockets()[0].getsockname()[1]
        self.http_runner = web.AppRunner(build_app(self.http_services), access_log=None)
        await self.http_runner.setup()
        https = self.ssl_context if self.config.enable_https else None
        site = web.TCPSite(self.http_runner, self.config.host, self.config.http_port,
                           ssl_context=https)
        await site.start()
        self.http_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        if self.config.arrow_flight_sql_port >= 0:  # off unless set, as in Doris
            from server.cli import version

            self.flight_sql = FlightSqlListener(
                self.session_services, version(),
                self.config.arrow_flight_token_alive_time_second,
                self.config.arrow_flight_token_cache_size,
                self.config.arrow_flight_sql_max_calls,
                self.config.arrow_flight_sql_call_queue_size)
            # binding is quick; the calls are served on gRPC's threads, never on this loop
            tls_files = None
            if self.config.arrow_flight_sql_tls:  # the MySQL port's certificate and key
                try:
                    tls_files = tls.certificate_paths(Path(self.config.data_dir),
                                                      self.config.ssl_certificate,
                                                      self.config.ssl_private_key)
                except ValueError as e:  # one of the two paths set: reported as OSErrors are
                    raise OSError(f"arrow_flight_sql_tls: {e}") from None
            self.flight_sql.start(self.config.host, self.config.arrow_flight_sql_port,
                                  tls_files)
            self.control.register_sessions(self.flight_sql.sessions)

    async def stop(self) -> None:
        if self.mysql is not None:
            self.mysql.close()
        if self.flight_sql is not None:  # waits for its running calls: off the loop
            self.flight_calls_abandoned = not await asyncio.to_thread(self.flight_sql.stop)
        if self.http_runner is not None:
            await self.http_runner.cleanup()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.session_pool.shutdown(wait=True, cancel_futures=True)
        self.audit.close()  # writes the events still queued
        await asyncio.to_thread(DynamicPartitionScheduler.of(self.engine).stop)
        self.engine.close()

    async def run(self) -> None:
        await self.start()
        flight = "" if self.flight_sql is None else \
            f" arrow_flight_sql_port={self.flight_sql.port}"
        print(f"ShaleDB ready: mysql_port={self.mysql_port} http_port={self.http_port}{flight}",
              flush=True)
        logger.info(
            "data dir %s, %d backends", self.engine.data_dir, len(self.engine.catalog.backends())
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if os.environ.get(STOP_ON_STDIN_EOF_ENV) == "1":
            _stop_on_stdin_eof(loop, stop)
        await stop.wait()
        logger.info("shutting down")
        await self.stop()


# Set by the test harness (tests/support/server.py), which holds the write end of the server's
# stdin: when the harness process dies, however it dies (a killed pytest run, a crashed bench),
# the pipe reaches EOF and the server shuts down cleanly instead of living on as an orphan.
STOP_ON_STDIN_EOF_ENV = "SHALEDB_STOP_ON_STDIN_EOF"


def _stop_on_stdin_eof(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set `stop` once stdin reaches end of file (a blocking read on a daemon thread)."""

    def watch() -> None:
        # os.read on the descriptor, not sys.stdin: a daemon thread blocked inside a buffered
        # reader holds its lock, and the interpreter aborts at exit when it cannot take it.
        try:
            while os.read(0, 65536):
                pass
        except (OSError, ValueError):
            pass  # no usable stdin: treat as closed
        logger.info("stdin closed (%s): shutting down", STOP_ON_STDIN_EOF_ENV)
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch, name="stdin-eof-watch", daemon=True).start()


def serve(config: Config) -> int:
    logging.basicConfig(
        level=getattr(logging, config.log_level.upper(), logging.INFO), stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        server = ShaleServer(config)
    except DataDirError as e:  # in use by another server, or paths that cannot be rebased
        print(f"shaledb: {e}", file=sys.stderr)
        return 1
    except tls.TlsSetupError as e:
        print(f"shaledb: cannot set up TLS (ssl_certificate / ssl_private_key): {e}",
              file=sys.stderr)
        return 1
    except OSError as e:
        print(f"shaledb: cannot open data dir {config.data_dir}: {e}", file=sys.stderr)
        return 1
    try:
        asyncio.run(server.run())
    except OSError as e:
        where = f"{config.host}:{config.query_port}/{config.http_port}"
        if config.arrow_flight_sql_port >= 0:
            where += f"/{config.arrow_flight_sql_port}"
        print(f"shaledb: cannot listen on {where}: {e}", file=sys.stderr)
        return 1
    if server.flight_calls_abandoned:
        # A Flight client stopped reading mid-stream: gRPC would wait for its call forever at
        # interpreter exit (pyarrow's server finalizer). Everything is closed and durable by
        # now, so leave without running exit handlers.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0
