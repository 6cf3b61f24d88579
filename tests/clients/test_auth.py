"""Users and the two password plugins against a live server: mysql_native_password and
caching_sha2_password (fast path from the cache, full path with the RSA public-key exchange),
with PyMySQL and mysql-connector-python (pure Python and C extension), CREATE/DROP USER, and
MySQL's 1045 for a wrong password or an unknown user."""

from __future__ import annotations

import secrets

import mysql.connector
import pymysql
import pytest


def _user(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(4)}"


@pytest.fixture
def users(server):
    """Factory for users created with CREATE USER; all dropped afterwards."""
    made: list[str] = []

    def make(password: str, plugin: str | None = None) -> str:
        name = _user("u")
        with server.connect() as c, c.cursor() as cur:
            with_plugin = f" WITH {plugin}" if plugin else ""
            cur.execute(f"CREATE USER '{name}'@'%' IDENTIFIED{with_plugin} BY '{password}'")
        made.append(name)
        return name

    yield make
    with server.connect() as c, c.cursor() as cur:
        for name in made:
            cur.execute(f"DROP USER IF EXISTS '{name}'")


def pymysql_user(server, user: str, password: str) -> str:
    conn = pymysql.connect(host="127.0.0.1", port=server.port, user=user, password=password)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CURRENT_USER()")
            return cur.fetchone()[0]
    finally:
        conn.close()


def connector_user(server, user: str, password: str, pure: bool) -> str:
    conn = mysql.connector.connect(host="127.0.0.1", port=server.port, user=user, password=password,
                                   use_pure=pure, ssl_disabled=True)
    try:
        cur = conn.cursor()
        cur.execute("SELECT CURRENT_USER()")
        return cur.fetchone()[0]
    finally:
        conn.close()


def test_connector_c_extension_is_the_one_tested() -> None:
    from mysql.connector import HAVE_CEXT  # noqa: PLC0415

    assert HAVE_CEXT


def test_native_password_user(server, users) -> None:
    name = users("s3cret")
    assert pymysql_user(server, name, "s3cret") == f"'{name}'@'%'"
    for pure in (True, False):
        # MySQL 8 clients open with caching_sha2_password: the server switches them to native
        assert connector_user(server, name, "s3cret", pure) == f"'{name}'@'%'"


@pytest.mark.parametrize("pure", [True, False])
def test_wrong_password_is_1045(server, users, pure: bool) -> None:
    name = users("right")
    with pytest.raises(pymysql.err.OperationalError) as ei:
        pymysql_user(server, name, "wrong")
    assert ei.value.args == (1045, f"Access denied for user '{name}'@'127.0.0.1' (using password: YES)")
    with pytest.raises(mysql.connector.Error) as ci:
        connector_user(server, name, "wrong", pure)
    assert ci.value.errno == 1045 and ci.value.sqlstate == "28000"


def test_unknown_user_is_1045(server) -> None:
    with pytest.raises(pymysql.err.OperationalError) as ei:
        pymysql_user(server, "nobody_here", "")
    assert ei.value.args == (1045, "Access denied for user 'nobody_here'@'127.0.0.1' (using password: NO)")


def test_caching_sha2_full_then_fast_path(server, users) -> None:
    """A new caching_sha2 user is not in the server's cache: without TLS, MySQL only takes
    the password RSA-encrypted. mysql-connector-python sends it in clear (pure) or refuses
    (C extension) and is turned away; PyMySQL asks for the public key and gets in, which
    caches the user; from then on the fast path lets every client in."""
    name = users("sha-pw", "caching_sha2_password")
    with pytest.raises(mysql.connector.Error) as ei:
        connector_user(server, name, "sha-pw", pure=True)
    assert ei.value.errno == 1045
    with pytest.raises(mysql.connector.Error) as ei:
        connector_user(server, name, "sha-pw", pure=False)
    assert ei.value.errno == 2061  # client side: "Authentication requires secure connection"

    assert pymysql_user(server, name, "sha-pw") == f"'{name}'@'%'"  # full path, RSA
    assert pymysql_user(server, name, "sha-pw") == f"'{name}'@'%'"  # fast path
    for pure in (True, False):
        assert connector_user(server, name, "sha-pw", pure) == f"'{name}'@'%'"
        with pytest.raises(mysql.connector.Error) as ei:
            connector_user(server, name, "not-it", pure)
        # a fast-path miss falls back to full authentication (refused without TLS)
        assert ei.value.errno == (1045 if pure else 2061)
    with pytest.raises(pymysql.err.OperationalError) as pi:
        pymysql_user(server, name, "not-it")
    assert pi.value.args[0] == 1045


def test_root_with_empty_password_on_every_client(server) -> None:
    assert pymysql_user(server, "root", "") == "'root'@'%'"
    for pure in (True, False):
        assert connector_user(server, "root", "", pure) == "'root'@'%'"


def test_create_and_drop_user_statements(server, conn) -> None:
    name = _user("ddl")
    with conn.cursor() as cur:
        cur.execute(f"CREATE USER {name} IDENTIFIED BY 'it''s'")
        cur.execute(f"CREATE USER IF NOT EXISTS {name} IDENTIFIED BY 'other'")  # no-op
        with pytest.raises(pymysql.err.OperationalError) as ei:
            cur.execute(f"CREATE USER {name}")
        assert ei.value.args[0] == 1396
        assert pymysql_user(server, name, "it's") == f"'{name}'@'%'"
        cur.execute(f"DROP USER '{name}'@'%'")
        with pytest.raises(pymysql.err.OperationalError) as ei:
            cur.execute(f"DROP USER {name}")
        assert ei.value.args[0] == 1396
        cur.execute(f"DROP USER IF EXISTS {name}")
        with pytest.raises(pymysql.err.OperationalError) as ei:
            cur.execute(f"CREATE USER x{name} IDENTIFIED WITH sha256_password BY 'p'")
        assert "Plugin 'sha256_password' is not loaded" in ei.value.args[1]
    with pytest.raises(pymysql.err.OperationalError) as ei:
        pymysql_user(server, name, "it's")
    assert ei.value.args[0] == 1045


def test_failed_login_closes_the_connection(server, users) -> None:
    """After Access denied the server hangs up (mysql-mimic went on to the command phase)."""
    import socket  # noqa: PLC0415

    name = users("pw")
    # a raw client that ignores the error and sends a query gets nothing: the server hung up
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    try:
        sock.recv(4096)  # handshake
        # HandshakeResponse41 with a bogus native scramble for the user
        caps = (0x00000200 | 0x00008000 | 0x00080000).to_bytes(4, "little")
        body = caps + (1 << 24).to_bytes(4, "little") + b"\x2d" + b"\x00" * 23
        body += name.encode() + b"\x00" + b"\x14" + b"\x01" * 20 + b"mysql_native_password\x00"
        sock.sendall(len(body).to_bytes(3, "little") + b"\x01" + body)
        reply = sock.recv(4096)
        assert reply[4] == 0xFF and int.from_bytes(reply[5:7], "little") == 1045
        query = b"\x03SELECT 1"
        sock.sendall(len(query).to_bytes(3, "little") + b"\x00" + query)
        rest = b""
        try:
            while chunk := sock.recv(4096):
                rest += chunk
        except ConnectionResetError:
            pass  # the server had closed: our query hit a closed socket
        assert rest == b""  # no result, no error packet: the connection is gone
    finally:
        sock.close()


def test_change_user(server, users) -> None:
    """COM_CHANGE_USER re-authenticates on the open connection (mysqlclient's change_user)."""
    import MySQLdb  # noqa: PLC0415

    name = users("chg-pw")
    conn = MySQLdb.connect(host="127.0.0.1", port=server.port, user="root")
    try:
        conn.change_user(name, "chg-pw")
        cur = conn.cursor()
        cur.execute("SELECT CURRENT_USER()")
        assert cur.fetchone() == (f"'{name}'@'%'",)
        with pytest.raises(MySQLdb.OperationalError) as ei:
            conn.change_user(name, "wrong")
        assert ei.value.args[0] == 1045
    finally:
        conn.close()
