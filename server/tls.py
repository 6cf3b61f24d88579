"""TLS for the MySQL port (and optionally HTTPS): certificates, the SSLContext, session status.

As mysqld does on first start (auto_generate_certs), the server makes a self-signed RSA
certificate and key under `<data_dir>/ssl/` when TLS is on and no certificate is configured
(`ssl_certificate` / `ssl_private_key` in conf/shaledb.toml; Doris 2.1 instead ships a PKCS12
keystore, `mysql_ssl_default_server_certificate`, which Python's ssl module cannot load). The
handshake then offers CLIENT_SSL and a client's SSLRequest upgrades the socket in place
(mysql-mimic's `MysqlStream.start_tls`). `is_secure(connection)` tells whether a connection runs
over TLS (require_secure_transport, caching_sha2_password's cleartext password, per-user
REQUIRE SSL); `status_rows(connection)` are the Ssl_* rows of SHOW STATUS.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import ipaddress
import logging
import os
import ssl
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

CERT_FILE = "server-cert.pem"
KEY_FILE = "server-key.pem"
SSL_DIR = "ssl"
CERT_DAYS = 3650  # mysqld's auto-generated certificates are valid for ten years
COMMON_NAME = "ShaleDB_Auto_Generated_Server_Certificate"


class TlsSetupError(Exception):
    """The configured certificate or key cannot be loaded (or the pair cannot be made)."""


def ensure_self_signed(directory: Path) -> tuple[Path, Path]:
    """The certificate and key under `directory`, made once (kept across restarts)."""
    cert_path, key_path = directory / CERT_FILE, directory / KEY_FILE
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, COMMON_NAME)])
    now = _dt.datetime.now(_dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(minutes=5))
        .not_valid_after(now + _dt.timedelta(days=CERT_DAYS))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_bytes = key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption())
    # The key is written owner-only, and both files appear atomically (a crash mid-write
    # leaves no half file that a restart would try to load).
    for path, data, mode in ((key_path, key_bytes, 0o600),
                             (cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)):
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    logger.info("made a self-signed TLS certificate %s", cert_path)
    return cert_path, key_path


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """TLS 1.2+ server context (Doris supports TLS 1.2 and 1.3); clients are not asked for
    certificates."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


def certificate_paths(data_dir: Path, certificate: str, private_key: str) -> tuple[Path, Path]:
    """Configured paths (relative ones against the data dir), else the generated pair."""
    if certificate or private_key:
        if not (certificate and private_key):
            raise ValueError("ssl_certificate and ssl_private_key must be set together")
        return data_dir / certificate, data_dir / private_key
    return ensure_self_signed(data_dir / SSL_DIR)


def ssl_object(connection: Any) -> ssl.SSLObject | None:
    return connection.stream.writer.get_extra_info("ssl_object")


def is_secure(connection: Any) -> bool:
    """Whether `connection` (a ShaleConnection) runs over TLS."""
    return ssl_object(connection) is not None


def status_rows(connection: Any) -> list[tuple[str, str]]:
    """SHOW STATUS rows about this connection's TLS (empty values on a plain connection)."""
    obj = ssl_object(connection)
    cipher = obj.cipher() if obj is not None else None
    return [
        ("Ssl_cipher", cipher[0] if cipher else ""),
        ("Ssl_version", (obj.version() or "") if obj is not None else ""),
    ]


async def start_tls(stream: Any, context: ssl.SSLContext) -> None:
    """Upgrade a MySQL stream to TLS after the client's SSLRequest (server side).

    Clients send their TLS ClientHello right after the SSLRequest without waiting for a reply,
    so both may already sit in the StreamReader's buffer; `StreamWriter.start_tls` (and
    mysql-mimic's `MysqlStream.start_tls`) would leave those bytes behind and the TLS handshake
    would stall. They are handed to the TLS protocol first, as asyncio's own start_tls would
    hand it new socket data. The StreamReaderProtocol is told it now runs over TLS (mysql-mimic
    leaves it believing otherwise, and asyncio warns on every close).
    """
    from asyncio import sslproto

    reader, writer = stream.reader, stream.writer
    await writer.drain()
    early = bytes(reader._buffer)
    reader._buffer.clear()
    loop = asyncio.get_running_loop()
    transport = writer.transport
    protocol = transport.get_protocol()
    waiter = loop.create_future()
    tls_protocol = sslproto.SSLProtocol(loop, protocol, context, waiter, server_side=True,
                                        call_connection_made=False)
    transport.pause_reading()
    transport.set_protocol(tls_protocol)
    loop.call_soon(tls_protocol.connection_made, transport)
    if early:
        loop.call_soon(_feed, tls_protocol, early)
    loop.call_soon(transport.resume_reading)
    try:
        await waiter
    except BaseException:
        transport.close()
        raise
    new_transport = tls_protocol._app_transport
    writer._transport = new_transport
    reader._transport = new_transport
    protocol._replace_writer(writer)


def _feed(protocol: Any, data: bytes) -> None:
    view = memoryview(data)
    while view:
        buffer = protocol.get_buffer(len(view))
        n = min(len(buffer), len(view))
        buffer[:n] = view[:n]
        protocol.buffer_updated(n)
        view = view[n:]
