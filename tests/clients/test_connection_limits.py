"""Server-level connection settings from conf/shaledb.toml, on a server of its own:
qe_max_connection (MySQL's 1040 `Too many connections` as an error packet, the socket closed,
a slot freed by a disconnect usable again), TLS switched off (`enable_ssl = false`: no
CLIENT_SSL offered, an SSLRequest is a bad handshake), and HTTPS on the HTTP port with a
configured certificate (`enable_https`, `ssl_certificate`, `ssl_private_key`)."""

from __future__ import annotations

import datetime as dt
import json
import socket
import ssl
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from support.mysql_raw import CLIENT_SSL, RawClient, healthy, parse_error, ssl_request
from support.server import ServerProcess

MAX_CONNECTIONS = 3


def _write_certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "configured-test-cert")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "my-cert.pem", directory / "my-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("limits")
    cert, key = _write_certificate(root)
    conf = root / "shaledb.toml"
    conf.write_text(
        "[server]\n"
        f"qe_max_connection = {MAX_CONNECTIONS}\n"
        "enable_ssl = false\n"
        "enable_https = true\n"
        f'ssl_certificate = "{cert}"\n'
        f'ssl_private_key = "{key}"\n'
    )
    srv = ServerProcess(root / "data", backends=1, extra_args=["--conf", str(conf)])
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_too_many_connections_is_1040_and_a_closed_socket(limited) -> None:
    held = [limited.connect() for _ in range(MAX_CONNECTIONS)]
    try:
        with RawClient(limited.port, read_greeting=False) as raw:  # the error replaces it
            code, state, message = parse_error(raw.read())
            assert (code, state, message) == (1040, "08004", "Too many connections")
            assert raw.closed_within(5)
        with pytest.raises(pymysql.err.OperationalError) as refused:
            limited.connect()
        assert refused.value.args[0] == 1040
    finally:
        held.pop().close()
    assert healthy(limited.port, timeout=10)  # the freed slot takes a new connection
    for c in held:
        c.close()


def test_tls_switched_off_is_not_offered_and_ssl_request_is_refused(limited) -> None:
    with RawClient(limited.port) as raw:
        greeting = raw.greeting
        version_end = greeting.index(b"\x00", 1)
        low = struct.unpack_from("<H", greeting, version_end + 1 + 4 + 9)[0]
        assert not low & CLIENT_SSL
        raw.send(ssl_request(), 1)
        code, _state, message = parse_error(raw.read())
        assert (code, message) == (1043, "Bad handshake")
        assert raw.closed_within(5)
    with pytest.raises(pymysql.err.OperationalError):  # a client that requires TLS gives up
        pymysql.connect(host="127.0.0.1", port=limited.port, user="root",
                        ssl={"check_hostname": False, "verify_mode": ssl.CERT_NONE})


def test_https_with_the_configured_certificate(limited) -> None:
    proc = subprocess.run(
        ["curl", "-sS", "-k", "-u", "root:", "-w", "\n%{http_code}",
         f"https://127.0.0.1:{limited.http_port}/api/health"],
        capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    body, status = proc.stdout.rsplit("\n", 1)
    assert status == "200"
    assert json.loads(body)
    plain = subprocess.run(["curl", "-sS", f"http://127.0.0.1:{limited.http_port}/api/health"],
                           capture_output=True, text=True, timeout=30, check=False)
    assert plain.returncode != 0 or "200" not in plain.stdout  # plain HTTP is not served
    context = ssl.create_default_context(cafile=str(limited.data_dir.parent / "my-cert.pem"))
    context.check_hostname = False  # the test certificate names no host
    with (socket.create_connection(("127.0.0.1", limited.http_port), timeout=10) as sock,
          context.wrap_socket(sock) as tls_sock):
        cert = x509.load_der_x509_certificate(tls_sock.getpeercert(binary_form=True))
        assert "configured-test-cert" in cert.subject.rfc4514_string()
