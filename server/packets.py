"""Bounds-checked parsing of every client packet the server reads (handshake and commands).

mysql-mimic 3.0.5's parsers (its compiled `packets` / `types` modules) trust the client: its
`read_str_null` loops forever when a NUL terminator is missing, so one handshake response whose
user name lacks it froze the whole event loop at 100% CPU (docs/mysql-mimic-fixes.md); short
packets raise IndexError/struct errors deep inside the library. Every read here goes through
`PacketReader`, which never reads past the payload and raises `MalformedPacket` instead, and
each parser turns that into the error mysqld sends for that packet:

- HandshakeResponse41 / SSLRequest: 1043 `Bad handshake` (ER_HANDSHAKE_ERROR), then close;
- COM_CHANGE_USER: 1047 `Unknown command` (ER_UNKNOWN_COM_ERROR, as mysqld's
  parse_com_change_user_packet), then close;
- every other command: 1835 `Malformed communication packet.` (ER_MALFORMED_PACKET).

Layouts follow https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_connection_phase_packets_protocol_handshake_response.html
and the COM_* pages of the same manual.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mysql_mimic.types import Capabilities

from sql.errors import ShaleError

ER_CON_COUNT_ERROR = 1040
ER_HANDSHAKE_ERROR = 1043
ER_UNKNOWN_COM_ERROR = 1047
ER_NET_PACKET_TOO_LARGE = 1153
ER_MALFORMED_PACKET = 1835
ER_SECURE_TRANSPORT_REQUIRED = 3159
ER_CLIENT_INTERACTION_TIMEOUT = 4031

# Connect attributes are capped as mysqld caps them (performance_schema_session_connect_attrs_size
# is at most 64 KB; anything beyond is dropped there, refused here).
MAX_CONNECT_ATTRS_BYTES = 65536


class MalformedPacket(ShaleError):
    """A client packet that does not parse; `message`/`code` are what the client receives."""

    def __init__(self, message: str = "Malformed communication packet.",
                 code: int = ER_MALFORMED_PACKET, sqlstate: str = "HY000") -> None:
        super().__init__(message, code, sqlstate)


def bad_handshake() -> MalformedPacket:
    return MalformedPacket("Bad handshake", ER_HANDSHAKE_ERROR, "08S01")


def unknown_command() -> MalformedPacket:
    return MalformedPacket("Unknown command", ER_UNKNOWN_COM_ERROR, "08S01")


class PacketReader:
    """A cursor over one packet payload; every read is checked against the payload's end."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def fixed(self, n: int) -> bytes:
        if n < 0 or n > self.remaining:
            raise MalformedPacket()
        start = self.pos
        self.pos += n
        return self.data[start:self.pos]

    def uint(self, n: int) -> int:
        return int.from_bytes(self.fixed(n), "little")

    def lenenc_int(self) -> int:
        first = self.uint(1)
        if first < 0xFB:
            return first
        width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
        if width is None:  # 0xFB is NULL, 0xFF an error marker: neither is a length
            raise MalformedPacket()
        return self.uint(width)

    def lenenc_bytes(self) -> bytes:
        return self.fixed(self.lenenc_int())

    def null_terminated(self) -> bytes:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise MalformedPacket()
        value = self.data[self.pos:end]
        self.pos = end + 1
        return value

    def null_terminated_or_rest(self) -> bytes:
        """A NUL-terminated string that old clients may end with the packet instead."""
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            return self.rest()
        value = self.data[self.pos:end]
        self.pos = end + 1
        return value

    def rest(self) -> bytes:
        value = self.data[self.pos:]
        self.pos = len(self.data)
        return value


def text(raw: bytes) -> str:
    # Doris reads every client string as UTF-8; bytes that are not are replaced, never fatal.
    return raw.decode("utf-8", "replace")


@dataclass
class SSLRequest:
    capabilities: Capabilities
    max_packet_size: int


@dataclass
class HandshakeResponse:
    capabilities: Capabilities
    max_packet_size: int
    username: str
    auth_response: bytes
    database: str | None = None
    client_plugin: str | None = None
    connect_attrs: dict[str, str] = field(default_factory=dict)
    zstd_compression_level: int = 0


def _connect_attrs(r: PacketReader) -> dict[str, str]:
    total = r.lenenc_int()
    if total > MAX_CONNECT_ATTRS_BYTES:
        raise MalformedPacket()
    block = PacketReader(r.fixed(total))
    attrs = {}
    while not block.at_end():
        key = block.lenenc_bytes()
        attrs[text(key)] = text(block.lenenc_bytes())
    return attrs


def parse_handshake_response(server_capabilities: Capabilities, data: bytes,
                             ssl_allowed: bool) -> SSLRequest | HandshakeResponse:
    """HandshakeResponse41, or the SSLRequest that precedes it on a TLS connection.

    `ssl_allowed` is False when the server offered no TLS or TLS already started: an SSLRequest
    is then a bad handshake (mysql-mimic asserted). Clients without CLIENT_PROTOCOL_41 (the
    pre-4.1 HandshakeResponse320) are refused as by MySQL 8.
    """
    try:
        r = PacketReader(data)
        client = Capabilities(r.uint(4))
        if Capabilities.CLIENT_PROTOCOL_41 not in client:
            raise bad_handshake()
        capabilities = server_capabilities & client
        max_packet_size = r.uint(4)
        r.fixed(1 + 23)  # character set (ignored: the session stays utf8mb4) and filler
        if r.at_end():
            if not ssl_allowed or Capabilities.CLIENT_SSL not in capabilities:
                raise bad_handshake()
            return SSLRequest(capabilities, max_packet_size)
        username = text(r.null_terminated())
        if Capabilities.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA in capabilities:
            auth_response = r.lenenc_bytes()
        elif Capabilities.CLIENT_SECURE_CONNECTION in capabilities:
            auth_response = r.fixed(r.uint(1))
        else:
            auth_response = r.null_terminated()
        response = HandshakeResponse(capabilities, max_packet_size, username, auth_response)
        if Capabilities.CLIENT_CONNECT_WITH_DB in capabilities:
            # mysqld (get_string over the remaining bytes) refuses a database without its NUL
            response.database = text(r.null_terminated()) or None
        if Capabilities.CLIENT_PLUGIN_AUTH in capabilities and not r.at_end():
            response.client_plugin = text(r.null_terminated_or_rest()) or None
        if Capabilities.CLIENT_CONNECT_ATTRS in capabilities and not r.at_end():
            response.connect_attrs = _connect_attrs(r)
        if Capabilities.CLIENT_ZSTD_COMPRESSION_ALGORITHM in capabilities and not r.at_end():
            response.zstd_compression_level = r.uint(1)
        return response
    except MalformedPacket as e:
        if e.code == ER_HANDSHAKE_ERROR:
            raise
        raise bad_handshake() from None


@dataclass
class ChangeUser:
    username: str
    auth_response: bytes
    database: str | None
    client_plugin: str | None = None
    connect_attrs: dict[str, str] = field(default_factory=dict)


def parse_change_user(capabilities: Capabilities, data: bytes) -> ChangeUser:
    """COM_CHANGE_USER (command byte stripped); 1047 `Unknown command` when malformed."""
    try:
        r = PacketReader(data)
        username = text(r.null_terminated())
        if Capabilities.CLIENT_SECURE_CONNECTION in capabilities:
            auth_response = r.fixed(r.uint(1))
        else:
            auth_response = r.null_terminated()
        database = text(r.null_terminated_or_rest()) or None
        request = ChangeUser(username, auth_response, database)
        if not r.at_end():
            if Capabilities.CLIENT_PROTOCOL_41 in capabilities:
                r.uint(2)  # character set: ignored, the session stays utf8mb4
            if Capabilities.CLIENT_PLUGIN_AUTH in capabilities and not r.at_end():
                request.client_plugin = text(r.null_terminated_or_rest()) or None
            if Capabilities.CLIENT_CONNECT_ATTRS in capabilities and not r.at_end():
                request.connect_attrs = _connect_attrs(r)
        return request
    except MalformedPacket:
        raise unknown_command() from None


def parse_query(capabilities: Capabilities, data: bytes) -> str:
    """COM_QUERY: the statement text after the query attributes (which ShaleDB ignores)."""
    r = PacketReader(data)
    if Capabilities.CLIENT_QUERY_ATTRIBUTES in capabilities:
        count = r.lenenc_int()
        r.lenenc_int()  # parameter set count, always 1
        if count:
            skip_parameters(r, count)
    return text(r.rest())


def skip_parameters(r: PacketReader, count: int) -> None:
    """Step over `count` query attributes: null bitmap, bound flag, typed names, values."""
    if count > r.remaining:  # each attribute takes at least its two type bytes
        raise MalformedPacket()
    nulls = r.fixed((count + 7) // 8)
    if not r.uint(1):  # types are always sent with query attributes
        raise MalformedPacket()
    types = []
    for _ in range(count):
        types.append(r.uint(1))
        r.uint(1)  # unsigned flag
        r.lenenc_bytes()  # name
    for i, code in enumerate(types):
        if nulls[i // 8] & (1 << (i % 8)):
            continue
        width = _FIXED_WIDTH.get(code)
        if width is not None:
            r.fixed(width)
        elif code in _TEMPORAL:
            r.fixed(r.uint(1))
        elif code == 6:  # MYSQL_TYPE_NULL carries no value
            continue
        else:
            r.lenenc_bytes()


# MYSQL_TYPE_* with a fixed binary width: TINY, SHORT, LONG, FLOAT, DOUBLE, LONGLONG, INT24, YEAR
_FIXED_WIDTH = {1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 8: 8, 9: 4, 13: 2}
_TEMPORAL = {7, 10, 11, 12}  # TIMESTAMP, DATE, TIME, DATETIME: a length byte, then the value


def parse_init_db(data: bytes) -> str:
    return text(data)


def parse_field_list(data: bytes) -> tuple[str, str]:
    """COM_FIELD_LIST: (table, wildcard); the table must end with its NUL (mysqld: 1835)."""
    r = PacketReader(data)
    table = text(r.null_terminated())
    return table, text(r.rest()).rstrip("\x00")


def parse_stmt_id(data: bytes) -> int:
    """The statement id that COM_STMT_CLOSE / RESET / FETCH / SEND_LONG_DATA start with."""
    return PacketReader(data).uint(4)


def parse_stmt_fetch(data: bytes) -> tuple[int, int]:
    r = PacketReader(data)
    return r.uint(4), r.uint(4)


def parse_send_long_data(data: bytes) -> tuple[int, int, bytes]:
    r = PacketReader(data)
    return r.uint(4), r.uint(2), r.rest()


def parse_set_option(data: bytes) -> int:
    return PacketReader(data).uint(2)


def parse_process_kill(data: bytes) -> int:
    return PacketReader(data).uint(4)
