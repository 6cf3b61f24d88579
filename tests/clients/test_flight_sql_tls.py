"""Arrow Flight SQL over TLS (`arrow_flight_sql_tls = true`): the port serves grpc+tls with the
MySQL port's certificate (here the self-signed one the server makes under <data_dir>/ssl/ on
first start, as tests/clients/test_tls.py checks for the MySQL port), and pyarrow.flight and
the ADBC driver verify it against that certificate as their root."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import adbc_driver_manager
import pytest
from adbc_driver_flightsql import DatabaseOptions
from pyarrow import flight
from support.flight_sql import RawSession, adbc_connect, query_descriptor
from support.server import ServerProcess


@pytest.fixture(scope="module")
def tls_srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    conf = tmp_path_factory.mktemp("flight-tls-conf") / "shaledb.toml"
    conf.write_text("[server]\narrow_flight_sql_tls = true\n", encoding="utf-8")
    with ServerProcess(tmp_path_factory.mktemp("flight-tls"), backends=1,
                       extra_args=("--arrow-flight-sql-port", "0", "--conf", str(conf))) as srv:
        yield srv


def port(srv: ServerProcess) -> int:
    assert srv.flight_port is not None
    return srv.flight_port


def server_cert(srv: ServerProcess) -> Path:
    return srv.data_dir / "ssl" / "server-cert.pem"


@pytest.fixture(scope="module")
def db(tls_srv: ServerProcess) -> str:
    name = f"flight_tls_{secrets.token_hex(4)}"
    with tls_srv.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"CREATE TABLE {name}.t (k INT, v VARCHAR(10)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute(f"INSERT INTO {name}.t VALUES (1, 'uno'), (2, 'dos'), (3, NULL)")
    return name


def test_pyarrow_flight_over_tls_verifies_the_servers_certificate(tls_srv: ServerProcess,
                                                                  db: str) -> None:
    session = RawSession(port(tls_srv), tls_root=server_cert(tls_srv))
    try:
        assert session.rows(f"SELECT k, v FROM {db}.t ORDER BY k") == [
            {"k": 1, "v": "uno"}, {"k": 2, "v": "dos"}, {"k": 3, "v": None}]
    finally:
        session.close()


def test_adbc_over_tls(tls_srv: ServerProcess, db: str) -> None:
    conn = adbc_connect(port(tls_srv), scheme="grpc+tls", **{
        DatabaseOptions.TLS_ROOT_CERTS.value: server_cert(tls_srv).read_text()})
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT count(*), max(v) FROM {db}.t")
            assert cur.fetchall() == [(3, "uno")]
    finally:
        conn.close()


def test_plain_and_unverified_clients_are_refused(tls_srv: ServerProcess) -> None:
    plain = flight.FlightClient(f"grpc+tcp://127.0.0.1:{port(tls_srv)}")
    with pytest.raises(flight.FlightError):  # gRPC reports the failed exchange its own ways
        plain.authenticate_basic_token("root", "")
    # TLS, but the certificate is checked against the system's roots: self-signed, refused
    untrusted = flight.FlightClient(f"grpc+tls://127.0.0.1:{port(tls_srv)}")
    with pytest.raises(flight.FlightError):
        untrusted.get_flight_info(query_descriptor("SELECT 1"))
    with pytest.raises(adbc_driver_manager.Error):
        adbc_connect(port(tls_srv), scheme="grpc+tls").close()
