"""TLS on the MySQL port (issue 12): the self-signed certificate made on first start, TLS
negotiated by the mariadb CLI, PyMySQL, mysqlclient and Connector/J (checked from inside the
session: SHOW STATUS `Ssl_version` / `Ssl_cipher`), require_secure_transport refusing plain
connections with MySQL's 3159, caching_sha2_password's cleartext password accepted over TLS
only, and a ClientHello that arrives in the same segment as the SSLRequest."""

from __future__ import annotations

import secrets
import socket
import ssl
import subprocess

import MySQLdb
import pymysql
import pytest
from clients.test_jdbc import jdbc_classes, run_java, url  # noqa: F401 - fixture reused
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from support.mysql_raw import (
    CLIENT_SSL,
    DEFAULT_CAPS,
    RawClient,
    frame,
    handshake_response,
    healthy,
    ssl_request,
)

NO_VERIFY = {"check_hostname": False, "verify_mode": ssl.CERT_NONE}


def tls_status(cur) -> dict[str, str]:
    cur.execute("SHOW STATUS LIKE 'Ssl%'")
    return dict(cur.fetchall())


def assert_encrypted(status: dict[str, str]) -> None:
    assert status["Ssl_version"].startswith("TLSv1."), status
    assert status["Ssl_cipher"], status


def test_self_signed_certificate_is_made_under_the_data_dir(server) -> None:
    cert_path = server.data_dir / "ssl" / "server-cert.pem"
    key_path = server.data_dir / "ssl" / "server-key.pem"
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    assert "ShaleDB" in cert.subject.rfc4514_string()
    assert key_path.stat().st_mode & 0o077 == 0  # the key is readable by its owner only
    # it is the certificate the server presents
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.recv(4096)  # greeting
        sock.sendall(frame(ssl_request(), 1))
        context = ssl.create_default_context(cafile=str(cert_path))
        context.check_hostname = False  # the certificate names localhost and 127.0.0.1
        with context.wrap_socket(sock) as tls_sock:
            assert tls_sock.getpeercert(binary_form=True) == cert.public_bytes(Encoding.DER)


def test_pymysql_negotiates_tls(server) -> None:
    conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", ssl=NO_VERIFY)
    try:
        with conn.cursor() as cur:
            assert_encrypted(tls_status(cur))
            cur.execute("SELECT 40 + 2")
            assert cur.fetchone() == (42,)
    finally:
        conn.close()


def test_plain_connection_reports_no_cipher(server) -> None:
    with server.connect(ssl_disabled=True) as conn, conn.cursor() as cur:
        assert tls_status(cur) == {"Ssl_cipher": "", "Ssl_version": ""}


def test_pymysql_prefers_tls_when_offered(server) -> None:
    # PyMySQL 1.1+ uses TLS whenever the server offers it (ssl-mode PREFERRED)
    conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root")
    try:
        with conn.cursor() as cur:
            assert_encrypted(tls_status(cur))
    finally:
        conn.close()


def test_mysqlclient_negotiates_tls(server) -> None:
    conn = MySQLdb.connect(host="127.0.0.1", port=server.port, user="root",
                           ssl_mode="REQUIRED")
    try:
        cur = conn.cursor()
        assert_encrypted(tls_status(cur))
    finally:
        conn.close()


def test_mariadb_cli_ssl_is_encrypted(server) -> None:
    proc = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(server.port), "-u", "root", "--ssl",
         "--skip-ssl-verify-server-cert", "--batch", "--skip-column-names",
         "-e", "SHOW STATUS LIKE 'Ssl_version'; SELECT 1"],
        capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split("\t")[0] == "Ssl_version" and lines[0].split("\t")[1].startswith("TLSv1.")
    assert lines[1] == "1"


def test_mariadb_cli_verifies_the_generated_certificate_as_ca(server) -> None:
    ca = server.data_dir / "ssl" / "server-cert.pem"
    proc = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", str(server.port), "-u", "root", f"--ssl-ca={ca}",
         "--ssl-verify-server-cert", "--batch", "--skip-column-names",
         "-e", "SHOW STATUS LIKE 'Ssl_cipher'"],
        capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\t")[1].strip()


def test_connector_j_use_ssl(server, jdbc_classes) -> None:  # noqa: F811
    records = run_java(jdbc_classes, "compare",
                       url(server, useSSL="true", trustServerCertificate="true"),
                       "SHOW STATUS LIKE 'Ssl_version'")
    cells = [r for r in records if r[0] == "CELL" and r[2] == "Value"]
    assert cells and cells[0][3].startswith("TLSv1."), records


def test_require_secure_transport_refuses_plain_connections(server) -> None:
    with server.connect() as c, c.cursor() as cur:
        cur.execute("SET GLOBAL require_secure_transport = ON")
    try:
        with pytest.raises(pymysql.err.OperationalError) as refused:
            pymysql.connect(host="127.0.0.1", port=server.port, user="root", ssl_disabled=True)
        assert refused.value.args == (
            3159,
            ("Connections using insecure transport are prohibited while "
             "--require_secure_transport=ON."),
        )
        conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", ssl=NO_VERIFY)
        with conn.cursor() as cur:
            assert_encrypted(tls_status(cur))
            cur.execute("SELECT @@require_secure_transport")
            assert cur.fetchone() == (1,)
            cur.execute("SET GLOBAL require_secure_transport = OFF")
        conn.close()
    finally:
        conn = pymysql.connect(host="127.0.0.1", port=server.port, user="root", ssl=NO_VERIFY)
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL require_secure_transport = OFF")
        conn.close()
    with server.connect(ssl_disabled=True) as c, c.cursor() as cur:  # plain works again
        cur.execute("SELECT 1")


@pytest.fixture
def sha2_user(server):
    name = f"tls_{secrets.token_hex(4)}"
    password = "s3cret-" + secrets.token_hex(4)
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE USER '{name}' IDENTIFIED WITH caching_sha2_password BY '{password}'")
    yield name, password
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP USER IF EXISTS '{name}'")


def test_caching_sha2_cleartext_password_over_tls(server, sha2_user) -> None:
    name, password = sha2_user
    # PyMySQL's full authentication sends the password in cleartext on a TLS connection
    conn = pymysql.connect(host="127.0.0.1", port=server.port, user=name, password=password,
                           ssl=NO_VERIFY)
    with conn.cursor() as cur:
        cur.execute("SELECT CURRENT_USER()")
        assert cur.fetchone()[0].split("@")[0].strip("'") == name
    conn.close()
    with pytest.raises(pymysql.err.OperationalError) as denied:
        pymysql.connect(host="127.0.0.1", port=server.port, user=name, password="wrong",
                        ssl=NO_VERIFY)
    assert denied.value.args[0] == 1045


def test_caching_sha2_cleartext_password_refused_without_tls(server, sha2_user) -> None:
    name, password = sha2_user
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        _read(sock)  # greeting
        sock.sendall(frame(handshake_response(user=name.encode() + b"\x00",
                                              auth=b"\x20" + b"\x00" * 32,
                                              plugin=b"caching_sha2_password\x00"), 1))
        assert _read(sock) == b"\x01\x04"  # perform_full_authentication
        sock.sendall(frame(password.encode() + b"\x00", 3))  # cleartext on a plain socket
        reply = _read(sock)
        assert reply[:1] == b"\xff" and int.from_bytes(reply[1:3], "little") == 1045


def _read(sock: socket.socket) -> bytes:
    header = b""
    while len(header) < 4:
        header += sock.recv(4 - len(header))
    n = int.from_bytes(header[:3], "little")
    body = b""
    while len(body) < n:
        body += sock.recv(n - len(body))
    return body


def test_client_hello_in_the_same_segment_as_the_ssl_request(server) -> None:
    """A client that sends its TLS ClientHello right behind the SSLRequest (as libmysqlclient
    does, without waiting) must not lose those bytes to the plain-text reader."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        _read(sock)
        with pytest.raises(ssl.SSLWantReadError):
            tls.do_handshake()
        sock.sendall(frame(ssl_request(), 1) + outgoing.read())  # one write: both together
        while True:
            data = sock.recv(65536)
            assert data, "server closed during the TLS handshake"
            incoming.write(data)
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
        sock.sendall(outgoing.read())
        tls.write(frame(handshake_response(caps=DEFAULT_CAPS | CLIENT_SSL), 2))
        sock.sendall(outgoing.read())
        reply = b""
        while len(reply) < 5:
            incoming.write(sock.recv(65536))
            try:
                reply += tls.read(65536)
            except ssl.SSLWantReadError:
                continue
        assert reply[4:5] == b"\x00", reply  # OK: logged in over TLS


def test_garbage_instead_of_a_tls_handshake_closes_the_connection(server) -> None:
    with RawClient(server.port) as raw:
        raw.send(ssl_request(), 1)
        raw.sock.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(range(256)))
        assert raw.closed_within(10)
    assert healthy(server.port, timeout=5)
