"""Arrow Flight SQL on `arrow_flight_sql_port` (off unless set, as in Doris; 0 picks a free
port): ADBC's Flight SQL driver and pyarrow.flight clients log in as our users, run any
statement through the same path as the MySQL port, and fetch results as Arrow record batches
converted column by column from the executor's batches.

    messages.py       the Flight SQL protobuf messages (descriptor written here) and Any packing
    sessions.py       basic-auth logins, bearer tokens, one session (StatementRunner) per token;
                      the sessions' PROCESSLIST rows and KILL
    admission.py      statement work on the server's worker pools, watching the client's cancel;
                      the cap on calls served at once (gRPC's threads) and waiting
    errors.py         our errors as gRPC statuses (with the MySQL code and Doris' text)
    arrow_results.py  executor Batch -> Arrow record batch, Doris' Flight result types
    metadata.py       GetSqlInfo / GetCatalogs / GetDbSchemas / GetTables / GetTableTypes
    service.py        the FlightServerBase: GetFlightInfo, DoGet, DoPut, DoAction

`FlightSqlListener` is what server/app.py starts and stops; with TLS files (the MySQL port's
certificate and key, server/tls.py) it serves `grpc+tls`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Metric

from server.flight_sql.admission import CALL_QUEUE_SIZE, MAX_CALLS, CallSlots
from server.flight_sql.service import ShaleFlightSqlServer
from server.flight_sql.sessions import TOKEN_ALIVE_SECONDS, TOKEN_CACHE_SIZE, FlightSessions
from server.services import SessionServices

logger = logging.getLogger(__name__)
# How long a stop waits for running Flight calls (a stalled client's stream never ends).
SHUTDOWN_GRACE_SECONDS = 5.0


class FlightSqlListener:
    """The Flight SQL server's lifetime: listening from `start` (gRPC's own threads serve
    every call), stopped by `stop` after the running statements are cancelled."""

    def __init__(self, services: SessionServices, server_version: str,
                 token_alive_seconds: float = TOKEN_ALIVE_SECONDS,
                 token_cache_size: int = TOKEN_CACHE_SIZE, max_calls: int = MAX_CALLS,
                 call_queue_size: int = CALL_QUEUE_SIZE) -> None:
        self.services = services
        self.server_version = server_version
        self.token_alive_seconds = token_alive_seconds
        self.token_cache_size = token_cache_size
        self.max_calls = max_calls
        self.call_queue_size = call_queue_size
        self.server: ShaleFlightSqlServer | None = None
        self.port = 0
        self.slots = CallSlots(max_calls, call_queue_size)  # /metrics reads its counters

    def start(self, host: str, port: int, tls_files: tuple[Path, Path] | None = None) -> int:
        """Bind and serve (the constructor binds; gRPC's threads serve); the bound port.
        `tls_files`: the PEM certificate (chain) and key to serve TLS with."""
        bind = "[::]" if host in ("::",) else host
        scheme, certificates = "grpc+tcp", None
        if tls_files is not None:
            cert, key = tls_files
            scheme, certificates = "grpc+tls", [(cert.read_bytes(), key.read_bytes())]
        try:
            self.server = ShaleFlightSqlServer(
                f"{scheme}://{bind}:{port}", self.services, self.server_version, certificates,
                FlightSessions(self.services, self.token_alive_seconds, self.token_cache_size),
                self.slots)
        except pa.ArrowException as e:  # the port is taken, the address is not ours, ...
            raise OSError(f"cannot listen for Arrow Flight SQL on {host}:{port}: {e}") from None
        self.port = int(self.server.port)
        return self.port

    @property
    def sessions(self) -> FlightSessions:
        """The logged-in sessions (the server's connection list shows and kills them)."""
        if self.server is None:
            raise RuntimeError("Arrow Flight SQL is not started")
        return self.server.sessions

    def metric_families(self) -> Iterator[Metric]:
        """The Flight port's call slots and sessions, for /metrics (server/metrics.py)."""
        slots = self.slots
        yield GaugeMetricFamily("shaledb_flight_sql_calls_running",
                                "Arrow Flight SQL calls holding a slot now "
                                "(at most arrow_flight_sql_max_calls).", value=slots.running)
        yield GaugeMetricFamily("shaledb_flight_sql_calls_waiting",
                                "Arrow Flight SQL calls waiting for a slot now "
                                "(at most arrow_flight_sql_call_queue_size).", value=slots.waiting)
        yield CounterMetricFamily("shaledb_flight_sql_calls_queued",
                                  "Arrow Flight SQL calls that waited for a slot since start.",
                                  value=slots.queued_total)
        yield CounterMetricFamily("shaledb_flight_sql_calls_refused",
                                  "Arrow Flight SQL calls refused with the queue full "
                                  "(ERROR 1040) since start.", value=slots.refused_total)
        server = self.server
        yield GaugeMetricFamily("shaledb_flight_sql_sessions",
                                "Logged-in Arrow Flight SQL sessions.",
                                value=len(server.sessions.sessions()) if server else 0)

    def stop(self, grace_seconds: float = SHUTDOWN_GRACE_SECONDS) -> bool:
        """Cancel the sessions' statements, then shut gRPC down. gRPC's shutdown waits for the
        running calls, and a client that stopped reading mid-stream holds its call forever
        (pyarrow exposes no shutdown deadline): after `grace_seconds` the stop goes on without
        it. True when every call ended."""
        server, self.server = self.server, None
        if server is None:
            return True
        server.close_sessions()
        logger.info("Arrow Flight SQL: stopping (open result streams end with UNAVAILABLE)")
        done = threading.Thread(target=server.shutdown, name="shaledb-flight-stop", daemon=True)
        done.start()
        done.join(grace_seconds)
        if done.is_alive():
            logger.warning("Arrow Flight SQL: calls still running %.0f s after shutdown began "
                           "(a client stopped reading); stopping without them", grace_seconds)
            return False
        return True


__all__ = ["FlightSqlListener"]
