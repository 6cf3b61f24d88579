"""Arrow Flight SQL test clients: the ADBC driver's connection, and a raw pyarrow.flight client
with the Flight SQL protobuf messages encoded here, independently of the server's own code
(server/flight_sql/messages.py)."""

from __future__ import annotations

from pathlib import Path

import adbc_driver_flightsql.dbapi as flight_sql
from pyarrow import flight


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def bytes_field(number: int, data: bytes) -> bytes:
    """One length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def any_command(name: str, *fields: bytes) -> bytes:
    """google.protobuf.Any{type_url, value} of arrow.flight.protocol.sql.<name>."""
    url = f"type.googleapis.com/arrow.flight.protocol.sql.{name}".encode()
    return bytes_field(1, url) + bytes_field(2, b"".join(fields))


def query_descriptor(sql: str) -> flight.FlightDescriptor:
    return flight.FlightDescriptor.for_command(
        any_command("CommandStatementQuery", bytes_field(1, sql.encode())))


def adbc_connect(port: int, user: str = "root", password: str = "", scheme: str = "grpc",
                 **db_kwargs: str) -> flight_sql.Connection:
    return flight_sql.connect(f"{scheme}://127.0.0.1:{port}", autocommit=True,
                              db_kwargs={"username": user, "password": password, **db_kwargs})


class RawSession:
    """A pyarrow.flight client logged in once (basic auth -> one bearer token = one server
    session), running statements as GetFlightInfo + DoGet."""

    def __init__(self, port: int, user: str = "root", password: str = "",
                 tls_root: Path | None = None) -> None:
        if tls_root is None:
            self.client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{port}")
        else:
            self.client = flight.FlightClient(f"grpc+tls://127.0.0.1:{port}",
                                              tls_root_certs=tls_root.read_bytes())
        header = self.client.authenticate_basic_token(user, password)
        self.options = flight.FlightCallOptions(headers=[header])

    def start(self, sql: str) -> flight.FlightStreamReader:
        """The statement's result stream (its rows not read yet)."""
        info = self.client.get_flight_info(query_descriptor(sql), self.options)
        return self.client.do_get(info.endpoints[0].ticket, self.options)

    def rows(self, sql: str) -> list[dict[str, object]]:
        return read_rest(self.start(sql))

    def connection_id(self) -> int:
        [row] = self.rows("SELECT CONNECTION_ID() AS id")
        return int(row["id"])  # type: ignore[call-overload]

    def close(self) -> None:
        self.client.close()


def read_rest(reader: flight.FlightStreamReader) -> list[dict[str, object]]:
    """The stream's remaining rows, chunk by chunk. Not `read_all`: pyarrow's read_all turns a
    CANCELLED status into a simulated Ctrl-C (KeyboardInterrupt) on the main thread."""
    rows: list[dict[str, object]] = []
    for chunk in reader:
        rows += chunk.data.to_pylist()
    return rows
