"""Reads of the `shaledb` data source through Arrow Flight SQL (`doris.read.arrow-flight-sql.port`
/ `arrow_flight_sql_port`): the ADBC driver streams each tablet group's batches. A Flight read of
every type the round-trip test covers returns exactly what the MySQL-protocol read returns, and
it is proven to have run over Flight twice over: it still works when the job's MySQL port points
at a closed port, and fe.audit.log has one line per tablet group's `TABLET(..)` query.

One server for the module (its own: the shared `server` fixture runs without Flight SQL).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from support.audit import wait_for_audit_lines
from support.server import ServerProcess

from shaledb_spark.options import OptionError, parse_options
from tests.spark.test_roundtrip import ALL_TYPES_DDL, ROWS, SCHEMA, sketch_round_trip


@pytest.fixture(scope="module")
def fsrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("spark-flight"), backends=1,
                       extra_args=("--arrow-flight-sql-port", "0")) as srv:
        yield srv


@pytest.fixture(scope="module")
def loaded(fsrv: ServerProcess, spark) -> dict[str, str]:
    """Options of table `flightdb.alltypes`, holding ROWS (written through the data source)."""
    with fsrv.connect() as c, c.cursor() as cur:
        cur.execute("CREATE DATABASE flightdb")
        cur.execute(ALL_TYPES_DDL.replace("CREATE TABLE alltypes",
                                          "CREATE TABLE flightdb.alltypes"))
    opts = {"fenodes": f"127.0.0.1:{fsrv.http_port}", "user": "root", "password": "",
            "table": "flightdb.alltypes"}
    spark.createDataFrame(ROWS, SCHEMA).repartition(2) \
        .write.format("shaledb").options(**opts).mode("append").save()
    return opts


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_flight_read_equals_mysql_read(spark, fsrv: ServerProcess, loaded: dict[str, str]
                                       ) -> None:
    assert fsrv.flight_port is not None
    via_mysql = spark.read.format("shaledb").options(**loaded).load()
    mysql_rows = sorted((tuple(r) for r in via_mysql.collect()), key=lambda r: r[0])
    assert mysql_rows == [tuple(r) for r in ROWS]

    # Doris' option names; the MySQL port is a closed one, so only Flight can answer
    flight_opts = {**loaded, "doris.read.mode": "arrow",
                   "doris.read.arrow-flight-sql.port": str(fsrv.flight_port),
                   "doris.query.port": str(closed_port()),
                   "doris.filter.query": "id <> 77"}  # marks this job's queries in the audit log
    via_flight = spark.read.format("shaledb").options(**flight_opts).load()
    assert [(f.name, f.dataType) for f in via_flight.schema.fields] == \
        [(f.name, f.dataType) for f in SCHEMA.fields]
    flight_rows = sorted((tuple(r) for r in via_flight.collect()), key=lambda r: r[0])
    assert flight_rows == [r for r in mysql_rows if r[0] != 77]

    # one audited query per tablet (3 buckets, tablet size 1), rows as sent over Flight
    lines = wait_for_audit_lines(fsrv.data_dir, "WHERE (id <> 77)", at_least=3, timeout=10)
    assert len(lines) == 3 and all("TABLET(" in ln and "|State=EOF|" in ln for ln in lines)
    returned = sum(int(ln.split("|ReturnRows=")[1].split("|")[0]) for ln in lines)
    assert returned == len(ROWS) - 1


def test_flight_read_pushes_filters_and_prunes_columns(spark, fsrv: ServerProcess,
                                                       loaded: dict[str, str]) -> None:
    opts = {**loaded, "arrow_flight_sql_port": str(fsrv.flight_port),
            "query_port": str(closed_port())}
    df = spark.read.format("shaledb").options(**opts).load() \
        .where("bi >= 100000 AND v LIKE 'v1%'").select("id", "dec2", "ts6")
    got = sorted(tuple(r) for r in df.collect())
    assert got == sorted((r[0], r[9], r[12]) for r in ROWS
                         if r[4] is not None and r[4] >= 100000 and r[14].startswith("v1"))


def test_flight_port_discovered_from_the_server(spark, fsrv: ServerProcess,
                                               loaded: dict[str, str]) -> None:
    """No Flight port in the job: /api/backends advertises it, and the read runs over Flight
    (the MySQL port given is closed)."""
    opts = {**loaded, "doris.read.mode": "arrow", "query_port": str(closed_port())}
    got = spark.read.format("shaledb").options(**opts).load().where("id < 10").collect()
    assert sorted(r.id for r in got) == [r[0] for r in ROWS if r[0] < 10]


def test_flight_reads_sketches_as_binary(spark, fsrv: ServerProcess) -> None:
    with fsrv.connect() as c, c.cursor() as cur:
        cur.execute("CREATE DATABASE flightsk")
        cur.execute("USE flightsk")
        sketch_round_trip(spark, cur, "flightsk", {
            "fenodes": f"127.0.0.1:{fsrv.http_port}", "user": "root", "password": "",
            "arrow_flight_sql_port": str(fsrv.flight_port), "query_port": str(closed_port())})


def test_read_mode_options() -> None:
    base = {"table": "d.t", "fenodes": "h:8030"}
    assert parse_options({**base, "arrow_flight_sql_port": "9"}).flight_port == 9
    # Doris' default mode, thrift, keeps the MySQL-protocol read even with a port given
    assert parse_options({**base, "doris.read.arrow-flight-sql.port": "9",
                          "doris.read.mode": "thrift"}).flight_port is None
    # no port: `arrow` and unset both ask the server's /api/backends (reader.partitions)
    assert parse_options(base).flight_port is None and parse_options(base).read_mode == "auto"
    assert parse_options({**base, "doris.read.mode": "arrow"}).read_mode == "arrow"
    with pytest.raises(OptionError, match="doris.read.mode"):
        parse_options({**base, "doris.read.mode": "grpc"})
