"""Malformed packets over raw sockets (issue 12): each gets mysqld's error packet or a closed
connection, never a hang, and the server answers a fresh `SELECT 1` afterwards.

One test per finding: the handshake response whose user name lacks its NUL (mysql-mimic
looped forever at 100% CPU), the same in COM_FIELD_LIST and COM_CHANGE_USER, truncated fields
of the handshake and of every command, packets over max_allowed_packet before and after login,
packets out of order, a silent connection (connect_timeout) and an idle session (wait_timeout).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from support.mysql_raw import (
    CLIENT_CONNECT_ATTRS,
    CLIENT_CONNECT_WITH_DB,
    CLIENT_PROTOCOL_41,
    CLIENT_QUERY_ATTRIBUTES,
    COM_CHANGE_USER,
    COM_FIELD_LIST,
    COM_PING,
    COM_PROCESS_KILL,
    COM_QUERY,
    COM_SET_OPTION,
    COM_STMT_CLOSE,
    COM_STMT_EXECUTE,
    COM_STMT_FETCH,
    COM_STMT_PREPARE,
    COM_STMT_RESET,
    COM_STMT_SEND_LONG_DATA,
    DEFAULT_CAPS,
    RawClient,
    handshake_response,
    healthy,
    lenenc,
    parse_error,
)

OK = b"\x00"


@pytest.fixture
def raw(server) -> Iterator[RawClient]:
    with RawClient(server.port) as client:
        yield client


@pytest.fixture
def logged_in(raw: RawClient) -> RawClient:
    raw.login()
    return raw


@pytest.fixture
def global_var(server):
    """Set global variables for one test; the previous values come back afterwards."""
    saved: dict[str, object] = {}

    def set_global(name: str, value: object) -> None:
        with server.connect() as c, c.cursor() as cur:
            if name not in saved:
                cur.execute(f"SELECT @@global.{name}")
                saved[name] = cur.fetchone()[0]
            cur.execute(f"SET GLOBAL {name} = {value}")

    yield set_global
    with server.connect() as c, c.cursor() as cur:
        for name, value in saved.items():
            cur.execute(f"SET GLOBAL {name} = {value}")


def refused_at_login(raw: RawClient, payload: bytes, code: int = 1043) -> str:
    """Send a handshake response; the reply is error `code` and the connection closes."""
    raw.send(payload, 1)
    reply = raw.read()
    assert reply is not None, "the server closed without an error packet"
    got, _state, message = parse_error(reply)
    assert got == code, message
    assert raw.closed_within(5)
    return message


# ---- the handshake response -------------------------------------------------------------------

def test_user_name_without_nul_is_bad_handshake_not_a_frozen_server(server, raw) -> None:
    started = time.monotonic()
    message = refused_at_login(raw, handshake_response(user=b"root"[:4], auth=b"", plugin=b""))
    assert message == "Bad handshake"
    assert time.monotonic() - started < 5
    assert healthy(server.port, timeout=5)


@pytest.mark.parametrize("payload", [
    pytest.param(handshake_response(user=b"root\x00", auth=lenenc(200) + b"x" * 10, plugin=b""),
                 id="auth-data-longer-than-packet"),
    pytest.param(handshake_response(user=b"root\x00", auth=b"\xff", plugin=b""),
                 id="auth-length-not-a-length"),
    pytest.param(handshake_response(user=b"root\x00", db=b"nodb",
                                    caps=DEFAULT_CAPS | CLIENT_CONNECT_WITH_DB, plugin=b""),
                 id="database-without-nul"),
    pytest.param(handshake_response(attrs=lenenc(1000) + b"\x03abc",
                                    caps=DEFAULT_CAPS | CLIENT_CONNECT_ATTRS),
                 id="connect-attrs-longer-than-packet"),
    pytest.param(handshake_response(attrs=lenenc(4) + b"\x09ab\x00",
                                    caps=DEFAULT_CAPS | CLIENT_CONNECT_ATTRS),
                 id="connect-attr-overruns-its-block"),
    pytest.param(handshake_response(caps=DEFAULT_CAPS & ~CLIENT_PROTOCOL_41),
                 id="pre-4.1-client"),
    pytest.param(b"\x00\x02\x00", id="shorter-than-the-fixed-header"),
    pytest.param(b"", id="empty"),
])
def test_malformed_handshake_response_is_bad_handshake(server, raw, payload: bytes) -> None:
    refused_at_login(raw, payload)
    assert healthy(server.port, timeout=5)


def test_plugin_name_may_end_with_the_packet(raw) -> None:
    # old clients omit the plugin name's NUL when nothing follows (mysqld takes the rest)
    raw.send(handshake_response(plugin=b"mysql_native_password"), 1)
    assert raw.read()[:1] == OK


def test_connect_attributes_are_read(server, raw) -> None:
    attrs = b"".join(lenenc(len(x)) + x for x in (b"_client_name", b"raw", b"k", b"v"))
    raw.send(handshake_response(attrs=lenenc(len(attrs)) + attrs,
                                caps=DEFAULT_CAPS | CLIENT_CONNECT_ATTRS), 1)
    assert raw.read()[:1] == OK
    assert raw.command(bytes([COM_PING]))[:1] == OK


# ---- commands after login ---------------------------------------------------------------------

def test_field_list_without_nul_is_malformed_and_the_session_goes_on(server, logged_in) -> None:
    code, state, message = parse_error(logged_in.command(bytes([COM_FIELD_LIST]) + b"t_no_nul"))
    assert (code, state, message) == (1835, "HY000", "Malformed communication packet.")
    assert logged_in.command(bytes([COM_PING]))[:1] == OK
    assert healthy(server.port, timeout=5)


def test_change_user_without_nul_is_unknown_command_and_closes(server, logged_in) -> None:
    code, _state, message = parse_error(logged_in.command(bytes([COM_CHANGE_USER]) + b"root"))
    assert (code, message) == (1047, "Unknown command")
    assert logged_in.closed_within(5)
    assert healthy(server.port, timeout=5)


@pytest.mark.parametrize("payload", [
    pytest.param(bytes([COM_STMT_EXECUTE, 1]), id="execute-short-id"),
    pytest.param(bytes([COM_STMT_FETCH]) + b"\x01\x00\x00", id="fetch-short"),
    pytest.param(bytes([COM_STMT_RESET]), id="reset-empty"),
    pytest.param(bytes([COM_SET_OPTION]), id="set-option-empty"),
    pytest.param(bytes([COM_PROCESS_KILL, 1, 2]), id="process-kill-short"),
    pytest.param(b"", id="empty-command"),
    pytest.param(bytes([COM_FIELD_LIST]), id="field-list-empty"),
])
def test_truncated_command_is_malformed(logged_in, payload: bytes) -> None:
    code, _state, _message = parse_error(logged_in.command(payload))
    assert code == 1835
    assert logged_in.command(bytes([COM_PING]))[:1] == OK


@pytest.mark.parametrize("payload", [
    pytest.param(bytes([COM_STMT_SEND_LONG_DATA, 1]), id="send-long-data-short"),
    pytest.param(bytes([COM_STMT_CLOSE, 1, 0]), id="close-short"),
])
def test_commands_without_a_reply_stay_silent_when_truncated(logged_in, payload) -> None:
    logged_in.send(payload, 0)
    assert logged_in.command(bytes([COM_PING]))[:1] == OK  # the next reply is the ping's


def test_unknown_command_is_1047(logged_in) -> None:
    code, state, message = parse_error(logged_in.command(b"\x20abc"))
    assert (code, state, message) == (1047, "08S01", "Unknown command")
    assert logged_in.command(bytes([COM_PING]))[:1] == OK


def test_malformed_query_attributes_are_malformed(raw) -> None:
    raw.login(caps=DEFAULT_CAPS | CLIENT_QUERY_ATTRIBUTES)
    # two attributes announced, then the packet ends inside the null bitmap / types
    code, _state, _message = parse_error(raw.command(bytes([COM_QUERY]) + b"\x02\x01"))
    assert code == 1835
    # a well-formed attribute (a named string) before the SQL still works
    attr = b"\x00\x01" + b"\xfe\x00" + lenenc(1) + b"a" + lenenc(1) + b"v"
    raw.send(bytes([COM_QUERY]) + b"\x01\x01" + attr + b"SELECT 1", 0)
    assert raw.read() == b"\x01"  # one column


def test_process_kill_of_an_unknown_connection_is_1094(logged_in) -> None:
    code, _state, message = parse_error(
        logged_in.command(bytes([COM_PROCESS_KILL]) + (987654).to_bytes(4, "little")))
    assert code == 1094, message


def test_prepared_date_parameter_with_a_bad_length_is_malformed(logged_in) -> None:
    logged_in.send(bytes([COM_STMT_PREPARE]) + b"SELECT ?", 0)
    prepare_ok = logged_in.read()
    stmt_id = prepare_ok[1:5]
    columns = int.from_bytes(prepare_ok[5:7], "little")
    params = int.from_bytes(prepare_ok[7:9], "little")
    for _ in range(columns + params):  # definitions (CLIENT_DEPRECATE_EOF: no EOF packets)
        logged_in.read()
    # DATE (10) with a 2-byte value: the protocol allows 0, 4, 7 or 11 bytes
    execute = (bytes([COM_STMT_EXECUTE]) + stmt_id + b"\x00" + (1).to_bytes(4, "little")
               + b"\x00" + b"\x01" + b"\x0a\x00" + b"\x02\x01\x02")
    code, _state, _message = parse_error(logged_in.command(execute))
    assert code == 1835
    assert logged_in.command(bytes([COM_PING]))[:1] == OK


def test_packets_out_of_order_end_the_connection(server, logged_in) -> None:
    code, _state, message = parse_error(logged_in.command(bytes([COM_PING]), seq=5))
    assert (code, message) == (1156, "Got packets out of order")
    assert logged_in.closed_within(5)


# ---- max_allowed_packet -----------------------------------------------------------------------

def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_oversized_packet_before_login_is_1153_without_reading_it(server, raw) -> None:
    # a 2 MB handshake response: over the login limit (1 MB); the header alone decides
    raw.sock.sendall((2 * 1024 * 1024).to_bytes(3, "little") + b"\x01")
    code, state, message = parse_error(raw.read())
    assert (code, state) == (1153, "08S01")
    assert message == "Got a packet bigger than 'max_allowed_packet' bytes"
    assert raw.closed_within(5)


def test_384_mb_before_login_does_not_grow_the_server(server) -> None:
    """24 well-framed 16 MB continuation packets (384 MB) instead of a handshake response:
    mysql-mimic buffered them all; the server's RSS, sampled while they are sent, must not."""
    pid = server.proc.pid
    baseline = _rss_kb(pid)
    peak = baseline
    sending = threading.Event()
    sending.set()

    def sample() -> None:
        nonlocal peak
        while sending.is_set():
            peak = max(peak, _rss_kb(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    piece = b"\x00" * (1024 * 1024)
    try:
        with RawClient(server.port) as client:
            client.sock.settimeout(10)
            try:
                for seq in range(1, 25):
                    client.sock.sendall(b"\xff\xff\xff" + bytes([seq]))
                    for i in range(16):  # 0xFFFFFF bytes: one short of 16 MiB
                        client.sock.sendall(piece if i < 15 else piece[:-1])
            except OSError:
                pass  # refused and closed: the client cannot push the rest
    finally:
        sending.clear()
        sampler.join()
    grown_mb = (peak - baseline) / 1024
    assert grown_mb < 64, f"server grew by {grown_mb:.0f} MB"
    assert healthy(server.port, timeout=5)


def test_oversized_packet_after_login_is_1153_and_closes(server, global_var) -> None:
    global_var("max_allowed_packet", 4096)
    with RawClient(server.port) as client:
        client.login()
        client.send(bytes([COM_QUERY]) + b"SELECT '" + b"x" * 5000 + b"'", 0)
        code, _state, message = parse_error(client.read())
        assert code == 1153, message
        assert client.closed_within(5)


def test_packet_under_the_session_limit_is_read_after_login(logged_in) -> None:
    # 1.5 MB: more than a login may send, well under max_allowed_packet (16 MB)
    padding = b" " * (1536 * 1024)
    logged_in.send(bytes([COM_QUERY]) + b"SELECT 7" + padding, 0)
    assert logged_in.read() == b"\x01"


# ---- timeouts ---------------------------------------------------------------------------------

def test_silent_connection_is_closed_after_connect_timeout(server, global_var) -> None:
    global_var("connect_timeout", 1)
    with RawClient(server.port) as client:  # reads the greeting, then says nothing
        started = time.monotonic()
        assert client.closed_within(8)
        assert time.monotonic() - started < 4
    with RawClient(server.port) as client:  # a handshake that stalls half way counts too
        client.sock.sendall(b"\x40\x00\x00\x01\x00")
        assert client.closed_within(8)


def test_idle_session_is_closed_after_wait_timeout(server, logged_in) -> None:
    logged_in.send(bytes([COM_QUERY]) + b"SET wait_timeout = 1", 0)
    assert logged_in.read()[:1] == OK
    started = time.monotonic()
    code, _state, message = parse_error(logged_in.read())  # sent by the server on its own
    assert code == 4031, message
    assert "wait_timeout" in message
    assert 0.5 < time.monotonic() - started < 5
    assert logged_in.closed_within(5)


def test_packet_stalled_half_way_is_closed_after_net_read_timeout(server, logged_in) -> None:
    logged_in.send(bytes([COM_QUERY]) + b"SET net_read_timeout = 1", 0)
    assert logged_in.read()[:1] == OK
    logged_in.sock.sendall((100).to_bytes(3, "little") + b"\x00" + bytes([COM_QUERY]) + b"SEL")
    started = time.monotonic()
    assert logged_in.closed_within(8)  # 97 bytes never come: the server gives up
    assert time.monotonic() - started < 5


def test_timeouts_do_not_touch_a_busy_session(server) -> None:
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET wait_timeout = 2")
            for _ in range(3):  # each command restarts the idle clock
                cur.execute("SELECT 1")
                time.sleep(1)
            cur.execute("SELECT 2")
            assert cur.fetchone() == (2,)
    finally:
        conn.close()

