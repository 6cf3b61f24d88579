"""A raw MySQL-protocol client over a plain socket, for tests that send malformed packets.

Drivers cannot send a handshake response without its NUL or a truncated COM_STMT_EXECUTE;
this one builds packets byte by byte (layouts from the MySQL manual's protocol pages) and reads
the server's replies without interpreting more than the error packet.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Self

import pymysql

CLIENT_CONNECT_WITH_DB = 0x8
CLIENT_PROTOCOL_41 = 0x200
CLIENT_SSL = 0x800
CLIENT_SECURE_CONNECTION = 0x8000
CLIENT_MULTI_RESULTS = 0x20000
CLIENT_PLUGIN_AUTH = 0x80000
CLIENT_CONNECT_ATTRS = 0x100000
CLIENT_PLUGIN_AUTH_LENENC = 0x200000
CLIENT_DEPRECATE_EOF = 0x1000000
CLIENT_QUERY_ATTRIBUTES = 0x8000000
DEFAULT_CAPS = (CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
                | CLIENT_PLUGIN_AUTH_LENENC | CLIENT_DEPRECATE_EOF | CLIENT_MULTI_RESULTS)

COM_QUIT, COM_INIT_DB, COM_QUERY, COM_FIELD_LIST = 0x01, 0x02, 0x03, 0x04
COM_STATISTICS, COM_PROCESS_KILL, COM_PING, COM_CHANGE_USER = 0x09, 0x0C, 0x0E, 0x11
COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA = 0x16, 0x17, 0x18
COM_STMT_CLOSE, COM_STMT_RESET, COM_SET_OPTION, COM_STMT_FETCH = 0x19, 0x1A, 0x1B, 0x1C
COM_RESET_CONNECTION = 0x1F


def lenenc(n: int) -> bytes:
    if n < 0xFB:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def frame(payload: bytes, seq: int) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq & 0xFF]) + payload


def handshake_response(user: bytes = b"root\x00", auth: bytes = lenenc(0), db: bytes = b"",
                       plugin: bytes = b"mysql_native_password\x00", attrs: bytes = b"",
                       caps: int = DEFAULT_CAPS) -> bytes:
    """HandshakeResponse41 from raw field bytes (each field given with its own terminator or
    length prefix, so a test can leave one out)."""
    head = struct.pack("<IIB", caps, 1 << 24, 45) + bytes(23)
    return head + user + auth + db + plugin + attrs


def ssl_request(caps: int = DEFAULT_CAPS | CLIENT_SSL) -> bytes:
    return struct.pack("<IIB", caps, 1 << 24, 45) + bytes(23)


def parse_error(payload: bytes) -> tuple[int, str, str]:
    """(code, sqlstate, message) of an ERR packet."""
    assert payload[:1] == b"\xff", f"expected an error packet, got {payload[:40]!r}"
    code = int.from_bytes(payload[1:3], "little")
    if payload[3:4] == b"#":
        return code, payload[4:9].decode(), payload[9:].decode("utf-8", "replace")
    return code, "", payload[3:].decode("utf-8", "replace")


class RawClient:
    def __init__(self, port: int, timeout: float = 10.0, read_greeting: bool = True) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.greeting = self.read() if read_greeting else None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, payload: bytes, seq: int) -> None:
        self.sock.sendall(frame(payload, seq))

    def _exactly(self, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def read(self) -> bytes | None:
        """One packet's payload; None when the server closed the connection."""
        try:
            header = self._exactly(4)
            if header is None:
                return None
            body = self._exactly(int.from_bytes(header[:3], "little"))
        except ConnectionResetError:
            return None
        return body

    def closed_within(self, seconds: float) -> bool:
        """True when the server closes the socket within `seconds` (data read is discarded)."""
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                self.sock.settimeout(max(0.05, deadline - time.monotonic()))
                if not self.sock.recv(65536):
                    return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        return False

    def login(self, caps: int = DEFAULT_CAPS, user: bytes = b"root") -> bytes:
        self.send(handshake_response(user=user + b"\x00", caps=caps), 1)
        reply = self.read()
        assert reply is not None and reply[:1] == b"\x00", f"login failed: {reply!r}"
        return reply

    def command(self, payload: bytes, seq: int = 0) -> bytes | None:
        self.send(payload, seq)
        return self.read()

    def drain_result(self) -> None:
        """Read packets until an OK/EOF that ends a result (CLIENT_DEPRECATE_EOF) or an ERR."""
        first = self.read()
        if first is None or first[:1] in (b"\x00", b"\xff"):
            return
        while True:
            p = self.read()
            if p is None or p[:1] == b"\xff" or (p[:1] == b"\xfe" and len(p) < 0xFFFFFF):
                return


def healthy(port: int, timeout: float = 10.0) -> bool:
    """The server answers a fresh connection's `SELECT 1` within `timeout` seconds."""
    conn = pymysql.connect(host="127.0.0.1", port=port, user="root", connect_timeout=timeout,
                           read_timeout=timeout, write_timeout=timeout, ssl_disabled=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            return cur.fetchone() == (1,)
    finally:
        conn.close()
