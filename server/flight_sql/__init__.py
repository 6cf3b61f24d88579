"""Arrow Flight SQL on `arrow_flight_sql_port` (off unless set, as in Doris; 0 picks a free
port): ADBC's Flight SQL driver and pyarrow.flight clients log in as our users, run any
statement through the same path as the MySQL port, and fetch results as Arrow record batches
converted column by column from the executor's batches.

    messages.py       the Flight SQL protobuf messages (descriptor written here) and Any packing
    sessions.py       basic-auth logins, bearer tokens, one session (StatementRunner) per token
    arrow_results.py  executor Batch -> Arrow record batch, Doris' Flight result types
    metadata.py       GetSqlInfo / GetCatalogs / GetDbSchemas / GetTables / GetTableTypes
    service.py        the FlightServerBase: GetFlightInfo, DoGet, DoPut, DoAction

`FlightSqlListener` is what server/app.py starts and stops.
"""

from __future__ import annotations

import pyarrow as pa

from server.flight_sql.service import ShaleFlightSqlServer
from server.services import SessionServices


class FlightSqlListener:
    """The Flight SQL server's lifetime: listening from `start` (gRPC's own threads serve
    every call), stopped by `stop` after the running statements are cancelled."""

    def __init__(self, services: SessionServices, server_version: str) -> None:
        self.services = services
        self.server_version = server_version
        self.server: ShaleFlightSqlServer | None = None
        self.port = 0

    def start(self, host: str, port: int) -> int:
        """Bind and serve (the constructor binds; gRPC's threads serve); the bound port."""
        bind = "[::]" if host in ("::",) else host
        try:
            self.server = ShaleFlightSqlServer(f"grpc+tcp://{bind}:{port}", self.services,
                                               self.server_version)
        except pa.ArrowException as e:  # the port is taken, the address is not ours, ...
            raise OSError(f"cannot listen for Arrow Flight SQL on {host}:{port}: {e}") from None
        self.port = int(self.server.port)
        return self.port

    def stop(self) -> None:
        """Cancel the sessions' statements, then shut gRPC down (waits for running calls)."""
        if self.server is not None:
            self.server.close_sessions()
            self.server.shutdown()
            self.server = None


__all__ = ["FlightSqlListener"]
