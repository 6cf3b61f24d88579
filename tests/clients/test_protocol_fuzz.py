"""Protocol fuzzing (issue 12), bounded in time: hypothesis builds handshake responses and every
command packet the server handles from their real structure (MySQL manual layouts), then
varies lengths, truncates, flips bytes and appends garbage; each case goes over a raw socket to
a real server of its own. After every case the server must have answered (any packet, or a
closed socket) within REPLY_TIMEOUT_S, and a fresh PyMySQL connection must get `SELECT 1`
within HEALTH_TIMEOUT_S: a hang, a frozen event loop or a dead listener fails the case.

The "protocol-fuzz" settings profile keeps the cost small for CI (FUZZ_EXAMPLES per test,
about 20-40 s in all on 2 cores); `SHALEDB_FUZZ_EXAMPLES=5000` runs a longer campaign.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.mysql_raw import (
    CLIENT_CONNECT_ATTRS,
    CLIENT_CONNECT_WITH_DB,
    CLIENT_PLUGIN_AUTH,
    CLIENT_PLUGIN_AUTH_LENENC,
    CLIENT_PROTOCOL_41,
    CLIENT_QUERY_ATTRIBUTES,
    CLIENT_SECURE_CONNECTION,
    CLIENT_SSL,
    COM_CHANGE_USER,
    COM_FIELD_LIST,
    COM_INIT_DB,
    COM_PING,
    COM_PROCESS_KILL,
    COM_QUERY,
    COM_RESET_CONNECTION,
    COM_SET_OPTION,
    COM_STATISTICS,
    COM_STMT_CLOSE,
    COM_STMT_EXECUTE,
    COM_STMT_FETCH,
    COM_STMT_PREPARE,
    COM_STMT_RESET,
    COM_STMT_SEND_LONG_DATA,
    DEFAULT_CAPS,
    RawClient,
    healthy,
    lenenc,
)
from support.server import ServerProcess

FUZZ_EXAMPLES = int(os.environ.get("SHALEDB_FUZZ_EXAMPLES", "250"))
REPLY_TIMEOUT_S = 5.0
HEALTH_TIMEOUT_S = 5.0

settings.register_profile(
    "protocol-fuzz", max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large],
)
PROFILE = settings.get_profile("protocol-fuzz")

OPTIONAL_CAPS = (CLIENT_CONNECT_WITH_DB | CLIENT_PLUGIN_AUTH | CLIENT_PLUGIN_AUTH_LENENC
                 | CLIENT_SECURE_CONNECTION | CLIENT_CONNECT_ATTRS | CLIENT_QUERY_ATTRIBUTES
                 | CLIENT_SSL | CLIENT_PROTOCOL_41)
# Commands that send no reply at all (COM_QUIT closes)
SILENT = {COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE, 0x01}
# Every MYSQL_TYPE_* code a parameter or query attribute may carry, plus a few that are not.
TYPE_CODES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 245, 246,
              247, 248, 249, 250, 251, 252, 253, 254, 255, 100]


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # A server of its own: random commands (COM_PROCESS_KILL, COM_QUERY text) cannot reach
    # other tests' connections or settings.
    srv = ServerProcess(tmp_path_factory.mktemp("fuzz") / "data", backends=1)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


# ---- strategies: valid structure, then damaged ------------------------------------------------

small_bytes = st.binary(max_size=40)
names = st.one_of(st.sampled_from([b"root", b"admin", b"", b"nobody", "ünï".encode()]), small_bytes)


@st.composite
def lengths(draw: st.DrawFn, actual: int) -> bytes:
    """A length-encoded integer: usually the true length, sometimes a wrong or huge one."""
    n = draw(st.one_of(st.just(actual), st.integers(0, actual + 300),
                       st.sampled_from([0xFB, 0xFFFF, 0xFFFFFF, 2**32, 2**64 - 1])))
    if n == 0xFB:
        return b"\xfb"  # NULL marker: not a length
    return lenenc(n)


@st.composite
def damaged(draw: st.DrawFn, packet: bytes) -> bytes:
    """The packet as built, truncated, with a byte flipped, or with garbage appended."""
    how = draw(st.sampled_from(["keep", "keep", "truncate", "flip", "append"]))
    if how == "truncate" and packet:
        return packet[: draw(st.integers(0, len(packet) - 1))]
    if how == "flip" and packet:
        i = draw(st.integers(0, len(packet) - 1))
        return packet[:i] + bytes([packet[i] ^ draw(st.integers(1, 255))]) + packet[i + 1:]
    if how == "append":
        return packet + draw(st.binary(min_size=1, max_size=64))
    return packet


@st.composite
def connect_attrs(draw: st.DrawFn) -> bytes:
    pairs = draw(st.lists(st.tuples(small_bytes, small_bytes), max_size=4))
    block = b"".join(draw(lengths(len(k))) + k + draw(lengths(len(v))) + v for k, v in pairs)
    return draw(lengths(len(block))) + block


@st.composite
def handshake_responses(draw: st.DrawFn) -> bytes:
    caps = DEFAULT_CAPS & ~OPTIONAL_CAPS | draw(st.integers(0, 2**32 - 1)) & OPTIONAL_CAPS
    if draw(st.booleans()):
        caps |= CLIENT_PROTOCOL_41  # mostly 4.1 clients, so the fields after the header run
    out = struct.pack("<IIB", caps, draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 255)))
    out += bytes(23)
    user = draw(names)
    out += user + (b"\x00" if draw(st.integers(0, 9)) else b"")
    auth = draw(st.binary(max_size=40))
    if caps & CLIENT_PLUGIN_AUTH_LENENC:
        out += draw(lengths(len(auth))) + auth
    elif caps & CLIENT_SECURE_CONNECTION:
        out += bytes([draw(st.integers(0, 255)) if draw(st.booleans()) else len(auth)]) + auth
    else:
        out += auth + b"\x00"
    if caps & CLIENT_CONNECT_WITH_DB:
        out += draw(names) + (b"\x00" if draw(st.integers(0, 9)) else b"")
    if caps & CLIENT_PLUGIN_AUTH:
        plugin = draw(st.sampled_from([b"mysql_native_password", b"caching_sha2_password",
                                       b"mysql_clear_password", b"", b"x" * 70]))
        out += plugin + (b"\x00" if draw(st.integers(0, 9)) else b"")
    if caps & CLIENT_CONNECT_ATTRS:
        out += draw(connect_attrs())
    return draw(damaged(out))


@st.composite
def binary_values(draw: st.DrawFn, count: int, with_names: bool) -> bytes:
    """Null bitmap, new-params-bound flag, types (with names for query attributes), values."""
    out = draw(st.binary(min_size=(count + 7) // 8, max_size=(count + 7) // 8))
    out += bytes([draw(st.sampled_from([0, 1, 1, 1]))])
    for _ in range(count):
        out += bytes([draw(st.sampled_from(TYPE_CODES)), draw(st.sampled_from([0, 0x80]))])
        if with_names:
            name = draw(small_bytes)
            out += draw(lengths(len(name))) + name
    for _ in range(count):
        value = draw(st.binary(max_size=16))
        out += draw(st.sampled_from([b"", lenenc(len(value)), bytes([len(value)])])) + value
    return out


sql_texts = st.one_of(
    st.sampled_from([b"SELECT 1", b"SELECT ?, ?", b"SELECT * FROM t", b"SHOW TABLES",
                     b"SELECT 'x' LIKE ?", b"SET @a = ?", b"SELECT 1; SELECT 2", b""]),
    st.text(alphabet="SELECT 1?'\"`;,()* \\\x00é", max_size=40).map(str.encode),
    small_bytes,
)


@st.composite
def commands(draw: st.DrawFn, stmt_id: int, query_attributes: bool) -> bytes:
    """One command packet with a valid layout for its command byte, then damaged."""
    id_bytes = draw(st.sampled_from([stmt_id, 0, stmt_id + 1, 2**32 - 1])).to_bytes(4, "little")
    kind = draw(st.sampled_from([
        COM_QUERY, COM_INIT_DB, COM_FIELD_LIST, COM_CHANGE_USER, COM_STMT_PREPARE,
        COM_STMT_EXECUTE, COM_STMT_EXECUTE, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE,
        COM_STMT_RESET, COM_STMT_FETCH, COM_SET_OPTION, COM_PING, COM_STATISTICS,
        COM_PROCESS_KILL, COM_RESET_CONNECTION, 0x00, 0x0A, 0x0D, 0x1D, 0x1E, 0x20, 0xFF,
    ]))
    body = b""
    if kind == COM_QUERY:
        if query_attributes:
            count = draw(st.integers(0, 3))
            body += draw(lengths(count)) + draw(lengths(1))
            if count:
                body += draw(binary_values(count, with_names=True))
        body += draw(sql_texts)
    elif kind in (COM_INIT_DB, COM_STMT_PREPARE):
        body = draw(sql_texts)
    elif kind == COM_FIELD_LIST:
        body = draw(names) + (b"\x00" if draw(st.booleans()) else b"") + draw(small_bytes)
    elif kind == COM_CHANGE_USER:
        auth = draw(st.binary(max_size=30))
        body = (draw(names) + (b"\x00" if draw(st.integers(0, 4)) else b"")
                + bytes([draw(st.sampled_from([len(auth), 255]))]) + auth
                + draw(names) + (b"\x00" if draw(st.booleans()) else b"")
                + struct.pack("<H", draw(st.integers(0, 300)))
                + draw(st.sampled_from([b"mysql_native_password\x00", b"", b"zz"]))
                + draw(connect_attrs()))
    elif kind == COM_STMT_EXECUTE:
        count = draw(st.integers(0, 3))
        body = id_bytes + bytes([draw(st.sampled_from([0, 1, 8, 9, 255]))])
        body += struct.pack("<I", draw(st.sampled_from([1, 0, 2**32 - 1])))
        if query_attributes:
            body += draw(lengths(count))
        body += draw(binary_values(count, with_names=query_attributes))
    elif kind == COM_STMT_SEND_LONG_DATA:
        body = id_bytes + struct.pack("<H", draw(st.integers(0, 3))) + draw(small_bytes)
    elif kind in (COM_STMT_CLOSE, COM_STMT_RESET):
        body = id_bytes
    elif kind == COM_STMT_FETCH:
        body = id_bytes + struct.pack("<I", draw(st.integers(0, 2**32 - 1)))
    elif kind == COM_SET_OPTION:
        body = struct.pack("<H", draw(st.sampled_from([0, 1, 2, 65535])))
    elif kind == COM_PROCESS_KILL:
        body = struct.pack("<I", draw(st.integers(10**8, 2**32 - 1)))  # never a live connection
    else:
        body = draw(small_bytes)
    return draw(damaged(bytes([kind]) + body))


# ---- the properties ---------------------------------------------------------------------------

def answered(client: RawClient) -> bool:
    """The server sent a packet or closed the socket within REPLY_TIMEOUT_S."""
    client.sock.settimeout(REPLY_TIMEOUT_S)
    try:
        client.sock.recv(1)
        return True  # a byte, or b"" for a closed socket
    except TimeoutError:
        return False
    except OSError:
        return True  # reset: closed


def assert_healthy_and_quiet(server: ServerProcess) -> None:
    """The health check, and no traceback logged by the case: a malformed packet is an error
    packet or a closed socket, never an internal error."""
    assert healthy(server.port, timeout=HEALTH_TIMEOUT_S)
    logged = server.take_stderr()
    assert not [line for line in logged if "Traceback" in line or " ERROR " in line], (
        "\n".join(logged[-60:]))


def is_ssl_request(packet: bytes) -> bool:
    if len(packet) != 32:
        return False
    caps = struct.unpack_from("<I", packet)[0]
    return bool(caps & CLIENT_SSL and caps & CLIENT_PROTOCOL_41)


@PROFILE
@given(packet=handshake_responses())
def test_any_handshake_response_is_answered(fuzz_server, packet: bytes) -> None:
    fuzz_server.take_stderr()
    with RawClient(fuzz_server.port, timeout=REPLY_TIMEOUT_S) as client:
        client.send(packet, 1)
        if not is_ssl_request(packet):  # after an SSLRequest the client speaks first (TLS)
            assert answered(client), f"no reply to handshake response {packet!r}"
    assert_healthy_and_quiet(fuzz_server)


@PROFILE
@given(data=st.data(), query_attributes=st.booleans())
def test_any_command_is_answered(fuzz_server, data: st.DataObject,
                                 query_attributes: bool) -> None:
    caps = DEFAULT_CAPS | (CLIENT_QUERY_ATTRIBUTES if query_attributes else 0)
    fuzz_server.take_stderr()
    with RawClient(fuzz_server.port, timeout=REPLY_TIMEOUT_S) as client:
        client.login(caps=caps)
        # a statement with two parameters, so EXECUTE / SEND_LONG_DATA reach real decoding
        client.send(bytes([COM_STMT_PREPARE]) + b"SELECT ?, ?", 0)
        prepare_ok = client.read()
        assert prepare_ok is not None and prepare_ok[:1] == b"\x00", prepare_ok
        stmt_id = int.from_bytes(prepare_ok[1:5], "little")
        for _ in range(int.from_bytes(prepare_ok[5:7], "little")
                       + int.from_bytes(prepare_ok[7:9], "little")):
            client.read()
        packet = data.draw(commands(stmt_id, query_attributes), label="command")
        client.send(packet, 0)
        if packet[:1] and packet[0] in SILENT:
            try:  # these send nothing: the ping's reply must come (or COM_QUIT's close)
                client.send(bytes([COM_PING]), 0)
            except OSError:
                pass
        assert answered(client), f"no reply to command {packet!r}"
    assert_healthy_and_quiet(fuzz_server)
