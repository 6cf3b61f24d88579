"""Arrow Flight SQL (`--arrow-flight-sql-port`) with real clients: the ADBC Flight SQL driver
(`adbc_driver_flightsql.dbapi`, as Doris documents for Python) and a raw pyarrow.flight client
that builds the Flight SQL protobuf messages by hand. Results are compared with what pymysql
reads over the MySQL port for the same query.

One server for the module (its own: the shared `server` fixture runs without Flight SQL).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import secrets
import threading
from collections.abc import Iterator

import adbc_driver_manager
import pyarrow as pa
import pytest
from pyarrow import flight
from support.flight_sql import adbc_connect as flight_adbc_connect
from support.flight_sql import any_command, bytes_field
from support.server import ServerProcess

from server.cli import version as shaledb_version

ROWS = [
    (1, "alpha", decimal.Decimal("1.50"), dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4, 5),
     10, 0.5, "170141183460469231731687303715884105727"),
    (2, None, None, None, None, None, None, None),
    (3, "gamma, with comma", decimal.Decimal("-20.25"), dt.date(1999, 12, 31),
     dt.datetime(1999, 12, 31, 23, 59, 59), -7, -1.25, "-5"),
    (4, "δέλτα", decimal.Decimal("0.00"), dt.date(2000, 2, 29), dt.datetime(2000, 2, 29),
     1 << 40, 2.0, "0"),
]
COLUMNS = ("k INT, name VARCHAR(40), price DECIMAL(10, 2), d DATE, ts DATETIME, big BIGINT, "
           "f DOUBLE, huge LARGEINT")


@pytest.fixture(scope="module")
def fsrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("flight-data"), backends=1,
                       extra_args=("--arrow-flight-sql-port", "0")) as srv:
        yield srv


@pytest.fixture(scope="module")
def fdb(fsrv: ServerProcess) -> str:
    """A database with table `t` holding ROWS, made over the MySQL port."""
    name = f"flight_{secrets.token_hex(4)}"
    with fsrv.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"CREATE TABLE {name}.t ({COLUMNS}) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 2")
        cur.executemany(f"INSERT INTO {name}.t VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", ROWS)
    return name


def adbc_connect(srv: ServerProcess, user: str = "root", password: str = "") -> object:
    assert srv.flight_port is not None
    return flight_adbc_connect(srv.flight_port, user, password)


@pytest.fixture(scope="module")
def adbc(fsrv: ServerProcess) -> Iterator[object]:
    conn = adbc_connect(fsrv)
    try:
        yield conn
    finally:
        conn.close()  # type: ignore[attr-defined]


def mysql_rows(srv: ServerProcess, sql: str) -> list[tuple[object, ...]]:
    with srv.connect() as c, c.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def adbc_rows(conn: object, sql: str, params: tuple[object, ...] | None = None
              ) -> list[tuple[object, ...]]:
    with conn.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute(sql, params)
        return [tuple(r) for r in cur.fetchall()]


def raw_client(srv: ServerProcess, user: str = "root", password: str = ""
               ) -> tuple[flight.FlightClient, flight.FlightCallOptions]:
    client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{srv.flight_port}")
    header = client.authenticate_basic_token(user, password)
    return client, flight.FlightCallOptions(headers=[header])


# ---- tests ------------------------------------------------------------------------------------
def test_flight_sql_is_off_unless_set(server: ServerProcess) -> None:
    assert server.flight_port is None  # the shared server's ready line names no Flight port


def test_adbc_select_equals_mysql_protocol(fsrv: ServerProcess, fdb: str, adbc: object) -> None:
    sql = f"SELECT * FROM {fdb}.t ORDER BY k"
    got = adbc_rows(adbc, sql)
    assert got == mysql_rows(fsrv, sql)
    assert got == ROWS
    agg = (f"SELECT name IS NULL AS missing, count(*), sum(price), min(d), max(ts) "
           f"FROM {fdb}.t GROUP BY 1 ORDER BY 1")
    assert adbc_rows(adbc, agg) == mysql_rows(fsrv, agg)


def test_arrow_types_of_a_result(adbc: object, fdb: str) -> None:
    with adbc.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute(f"SELECT * FROM {fdb}.t")
        schema = cur.fetch_arrow_table().schema
    assert [schema.field(i).type for i in range(len(schema))] == [
        pa.int32(), pa.string(), pa.decimal128(10, 2), pa.date32(), pa.timestamp("us"),
        pa.int64(), pa.float64(), pa.string()]


def test_every_scalar_type_equals_mysql_protocol(fsrv: ServerProcess, adbc: object) -> None:
    db = f"flight_types_{secrets.token_hex(4)}"
    with fsrv.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(
            f"CREATE TABLE {db}.ty (k TINYINT, s SMALLINT, b BOOLEAN, f FLOAT REPLACE, "
            "c CHAR(5) REPLACE, st STRING REPLACE, t6 DATETIME(6) REPLACE, "
            "wd DECIMAL(38, 10) REPLACE, h HLL HLL_UNION, bm BITMAP BITMAP_UNION) "
            "AGGREGATE KEY(k, s, b) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute(
            f"INSERT INTO {db}.ty VALUES (1, -2, true, 1.5, 'ab', 'long text', "
            "'2024-01-02 03:04:05.123456', 12345678901234567890.0123456789, hll_hash('a'), "
            "to_bitmap(7)), (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, hll_empty(), "
            "bitmap_empty())")
    sql = f"SELECT k, s, b, f, c, st, t6, wd FROM {db}.ty ORDER BY k"
    got = adbc_rows(adbc, sql)
    assert got[1] == (1, -2, True, 1.5, "ab", "long text",
                      dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
                      decimal.Decimal("12345678901234567890.0123456789"))
    # the MySQL protocol sends BOOLEAN as TINYINT 1 / 0
    assert [tuple(int(v) if isinstance(v, bool) else v for v in row) for row in got] == \
        mysql_rows(fsrv, sql)
    with adbc.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute(f"SELECT k, b, t6, wd, bitmap_count(bm), bm, h FROM {db}.ty ORDER BY k")
        table = cur.fetch_arrow_table()
    assert [f.type for f in table.schema] == [
        pa.int8(), pa.bool_(), pa.timestamp("us"), pa.decimal128(38, 10), pa.int64(),
        pa.binary(), pa.binary()]
    assert table.column(4).to_pylist() == [0, 1]


def test_ddl_and_insert_through_adbc(fsrv: ServerProcess, adbc: object) -> None:
    db = f"flight_ddl_{secrets.token_hex(4)}"
    with adbc.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"USE {db}")  # the session keeps its current database
        cur.execute("CREATE TABLE u (a INT, b VARCHAR(10)) DUPLICATE KEY(a) "
                    "DISTRIBUTED BY HASH(a) BUCKETS 1")
        cur.execute("INSERT INTO u VALUES (1, 'x'), (2, 'y')")
        assert cur.fetchall() == [(2,)]  # affected rows of a statement sent as a query
        stmt = cur.adbc_statement  # CommandStatementUpdate over DoPut: the count comes back
        stmt.set_sql_query("INSERT INTO u VALUES (3, 'z'), (4, NULL), (5, 'w')")
        assert stmt.execute_update() == 3
        cur.execute("SELECT count(*), DATABASE() FROM u")
        assert cur.fetchall() == [(5, db)]
    assert mysql_rows(fsrv, f"SELECT a, b FROM {db}.u ORDER BY a") == [
        (1, "x"), (2, "y"), (3, "z"), (4, None), (5, "w")]


def test_prepared_statement_with_parameters(fsrv: ServerProcess, fdb: str,
                                            adbc: object) -> None:
    sql = f"SELECT k, name, price FROM {fdb}.t WHERE k >= ? AND name <> ? ORDER BY k"
    got = adbc_rows(adbc, sql, (2, "alpha"))
    assert got == mysql_rows(fsrv, sql.replace("?", "%s") % (2, "'alpha'"))
    assert [r[0] for r in got] == [3, 4]
    with adbc.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute(f"CREATE TABLE {fdb}.p (a INT, b VARCHAR(10)) DUPLICATE KEY(a) "
                    "DISTRIBUTED BY HASH(a) BUCKETS 1")
        cur.executemany(f"INSERT INTO {fdb}.p VALUES (?, ?)", [(1, "a"), (2, "it's")])
    assert mysql_rows(fsrv, f"SELECT * FROM {fdb}.p ORDER BY a") == [(1, "a"), (2, "it's")]
    # the same prepared statement with other values (a string that needs quoting)
    assert adbc_rows(adbc, sql, (1, "it's")) == [
        (1, "alpha", decimal.Decimal("1.50")), (3, "gamma, with comma", decimal.Decimal("-20.25")),
        (4, "δέλτα", decimal.Decimal("0.00"))]


def test_metadata_calls(adbc: object, fdb: str) -> None:
    info = adbc.adbc_get_info()  # type: ignore[attr-defined]  # GetSqlInfo underneath
    assert (info["vendor_name"], info["vendor_version"]) == ("ShaleDB", shaledb_version())
    objects = adbc.adbc_get_objects(  # type: ignore[attr-defined]
        depth="all", db_schema_filter=fdb, table_name_filter="t").read_all().to_pylist()
    assert [c["catalog_name"] for c in objects] == ["internal"]
    [schema] = objects[0]["catalog_db_schemas"]
    assert schema["db_schema_name"] == fdb
    [table] = schema["db_schema_tables"]
    assert (table["table_name"], table["table_type"]) == ("t", "TABLE")
    assert [c["column_name"] for c in table["table_columns"]] == [
        "k", "name", "price", "d", "ts", "big", "f", "huge"]
    arrow_schema = adbc.adbc_get_table_schema("t", db_schema_filter=fdb)  # type: ignore[attr-defined]
    assert arrow_schema.names == ["k", "name", "price", "d", "ts", "big", "f", "huge"]
    assert arrow_schema.field("price").type == pa.decimal128(10, 2)
    assert arrow_schema.field("k").nullable
    assert set(adbc.adbc_get_table_types()) == {"TABLE", "SYSTEM VIEW"}  # type: ignore[attr-defined]
    all_schemas = adbc.adbc_get_objects(depth="db_schemas").read_all().to_pylist()  # type: ignore[attr-defined]
    names = {s["db_schema_name"] for s in all_schemas[0]["catalog_db_schemas"]}
    assert {fdb, "information_schema"} <= names


def test_pyarrow_flight_client_with_basic_auth(fsrv: ServerProcess, fdb: str) -> None:
    client, options = raw_client(fsrv)
    sql = f"SELECT k, name FROM {fdb}.t WHERE k < 4 ORDER BY k".encode()
    descriptor = flight.FlightDescriptor.for_command(
        any_command("CommandStatementQuery", bytes_field(1, sql)))
    info = client.get_flight_info(descriptor, options)
    assert info.schema.names == ["k", "name"]
    table = client.do_get(info.endpoints[0].ticket, options).read_all()
    assert table.to_pylist() == [{"k": 1, "name": "alpha"}, {"k": 2, "name": None},
                                 {"k": 3, "name": "gamma, with comma"}]
    # a ticket is fetched once
    with pytest.raises(pa.ArrowKeyError, match="already fetched"):  # NOT_FOUND
        client.do_get(info.endpoints[0].ticket, options).read_all()
    # metadata through the raw protocol: GetCatalogs answers at DoGet from the command
    info = client.get_flight_info(
        flight.FlightDescriptor.for_command(any_command("CommandGetCatalogs")), options)
    assert client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist() == [
        {"catalog_name": "internal"}]


def test_bad_requests_get_flight_errors(fsrv: ServerProcess) -> None:
    client, options = raw_client(fsrv)
    with pytest.raises(pa.ArrowInvalid, match="Unknown or malformed"):  # INVALID_ARGUMENT
        client.get_flight_info(flight.FlightDescriptor.for_command(b"\xff\x00garbage"), options)
    with pytest.raises(NotImplementedError, match="not supported"):  # a known, unserved one
        client.get_flight_info(flight.FlightDescriptor.for_command(
            any_command("CommandPreparedStatementUpdate")), options)
    with pytest.raises(pa.ArrowKeyError, match="Unknown or already fetched"):
        client.do_get(flight.Ticket(any_command("TicketStatementQuery",
                                                bytes_field(1, b"forged"))), options).read_all()
    with pytest.raises(pa.ArrowKeyError, match="Unknown prepared statement"):
        client.get_flight_info(flight.FlightDescriptor.for_command(any_command(
            "CommandPreparedStatementQuery", bytes_field(1, b"nope"))), options)
    with pytest.raises(NotImplementedError, match="not supported"):
        list(client.do_action(flight.Action("BeginTransaction", b""), options))
    with pytest.raises(pa.ArrowInvalid):
        client.get_flight_info(flight.FlightDescriptor.for_path("a", "b"), options)
    info = client.get_flight_info(flight.FlightDescriptor.for_command(
        any_command("CommandStatementQuery", bytes_field(1, b"SELECT 5"))), options)
    assert client.do_get(info.endpoints[0].ticket, options).read_all().column(0).to_pylist() \
        == [5]  # still serving


def test_wrong_password_and_missing_token_are_refused(fsrv: ServerProcess, fdb: str) -> None:
    with fsrv.connect() as c, c.cursor() as cur:
        cur.execute("CREATE USER IF NOT EXISTS 'flight_user' IDENTIFIED BY 'secret'")
    with pytest.raises(adbc_driver_manager.Error, match="Access denied for user 'flight_user'"):
        adbc_connect(fsrv, "flight_user", "wrong")
    client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{fsrv.flight_port}")
    with pytest.raises(flight.FlightUnauthenticatedError, match="Access denied"):
        client.authenticate_basic_token("flight_user", "wrong")
    query = flight.FlightDescriptor.for_command(
        any_command("CommandStatementQuery", bytes_field(1, b"SELECT 1")))
    with pytest.raises(flight.FlightUnauthenticatedError):  # no credentials at all
        client.get_flight_info(query)
    forged = flight.FlightCallOptions(headers=[(b"authorization", b"Bearer not-a-token")])
    with pytest.raises(flight.FlightUnauthenticatedError, match="bearer token"):
        client.get_flight_info(query, forged)
    # the right password logs in; the user's privileges apply (no grant on any table)
    conn = adbc_connect(fsrv, "flight_user", "secret")
    try:
        assert adbc_rows(conn, "SELECT CURRENT_USER()") == [("'flight_user'@'%'",)]
        with pytest.raises(adbc_driver_manager.Error, match="ERROR 1142 .*denied"):
            adbc_rows(conn, f"SELECT * FROM {fdb}.t")
    finally:
        conn.close()  # type: ignore[attr-defined]


def test_sql_error_arrives_with_its_message(adbc: object, fdb: str) -> None:
    with pytest.raises(adbc_driver_manager.Error) as err:
        adbc_rows(adbc, f"SELECT * FROM {fdb}.no_such_table")
    assert f"ERROR 1146 (42S02): errCode = 2, detailMessage = Table [no_such_table] does not " \
           f"exist in database [{fdb}]" in str(err.value)
    with pytest.raises(adbc_driver_manager.Error, match="1064"):
        adbc_rows(adbc, "SELEC 1")
    assert adbc_rows(adbc, "SELECT 1 + 1") == [(2,)]  # the session is still usable


@pytest.fixture(scope="module")
def big_db(fsrv: ServerProcess) -> str:
    """A database whose table `big` holds 1M rows (n = 0 .. 999,999)."""
    db = f"flight_big_{secrets.token_hex(4)}"
    with fsrv.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE TABLE {db}.small (x INT) DUPLICATE KEY(x) "
                    "DISTRIBUTED BY HASH(x) BUCKETS 1")
        cur.execute(f"INSERT INTO {db}.small VALUES " + ",".join(f"({i})" for i in range(1000)))
        cur.execute(f"CREATE TABLE {db}.big (n BIGINT, s VARCHAR(20)) DUPLICATE KEY(n) "
                    "DISTRIBUTED BY HASH(n) BUCKETS 2")
        cur.execute(f"INSERT INTO {db}.big SELECT a.x * 1000 + b.x, concat('v', b.x) "
                    f"FROM {db}.small a CROSS JOIN {db}.small b")
    return db


def start_stream(srv: ServerProcess, sql: str) -> flight.FlightStreamReader:
    client, options = raw_client(srv)
    info = client.get_flight_info(flight.FlightDescriptor.for_command(
        any_command("CommandStatementQuery", bytes_field(1, sql.encode()))), options)
    return client.do_get(info.endpoints[0].ticket, options)


def test_large_result_streams_in_several_batches(fsrv: ServerProcess, adbc: object,
                                                 big_db: str) -> None:
    db = big_db
    reader = start_stream(fsrv, f"SELECT n, s FROM {db}.big")
    batches = [reader.read_chunk().data]
    # mid-stream (the server's Flight thread waits on this client), the MySQL port answers
    with fsrv.connect(read_timeout=10) as c, c.cursor() as cur:
        cur.execute("SELECT 7")
        assert cur.fetchall() == ((7,),)
    batches += [chunk.data for chunk in reader]
    assert len(batches) > 4  # streamed as the executor produces batches, not one blob
    table = pa.Table.from_batches(batches)
    assert table.num_rows == 1_000_000
    assert pa.compute.sum(table["n"]).as_py() == sum(range(1_000_000))
    assert adbc_rows(adbc, f"SELECT count(*), max(s) FROM {db}.big") == \
        mysql_rows(fsrv, f"SELECT count(*), max(s) FROM {db}.big")


def test_basic_header_is_base64_of_user_and_password(fsrv: ServerProcess) -> None:
    """A client that sends its own header (no Handshake) is logged in on that call."""
    header = base64.b64encode(b"root:").decode()
    client = flight.FlightClient(f"grpc+tcp://127.0.0.1:{fsrv.flight_port}")
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Basic {header}".encode())])
    info = client.get_flight_info(flight.FlightDescriptor.for_command(
        any_command("CommandStatementQuery", bytes_field(1, b"SELECT 40 + 2 AS x"))), options)
    assert client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist() == [{"x": 42}]


# the ADBC cursor's close fails (the server is gone) and its __del__ closes it again
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_server_stop_during_reads_fails_them_and_exits_cleanly(fsrv: ServerProcess,
                                                                adbc: object,
                                                                big_db: str) -> None:
    """Last: SIGTERM while clients read large results. A client still reading gets an error
    (UNAVAILABLE), never a cut-off result that ends like a complete one; a client that stopped
    reading mid-stream, a logged-in session and an unfetched result do not keep the server
    from exiting 0 (the stalled call is abandoned after a grace period)."""
    client, options = raw_client(fsrv)
    client.get_flight_info(flight.FlightDescriptor.for_command(
        any_command("CommandStatementQuery", bytes_field(1, b"SELECT 1"))), options)
    assert adbc_rows(adbc, "SELECT 1") == [(1,)]
    sql = f"SELECT n, s FROM {big_db}.big"
    stalled = start_stream(fsrv, sql)
    stalled.read_chunk()  # and no more
    slow = start_stream(fsrv, sql)
    rows = slow.read_chunk().data.num_rows
    cursor = adbc.cursor()  # type: ignore[attr-defined]
    cursor.execute(sql)
    adbc_reader = cursor.fetch_record_batch()
    adbc_rows_read = adbc_reader.read_next_batch().num_rows
    exit_codes: list[int] = []
    stopper = threading.Thread(target=lambda: exit_codes.append(fsrv.stop(timeout=60)))
    stopper.start()
    fsrv.wait_for_stderr("Arrow Flight SQL: stopping")
    # both go on reading one batch at a time: what the server had sent arrives, then an error
    with pytest.raises(flight.FlightUnavailableError, match="ShaleDB is stopping"):
        for chunk in slow:
            rows += chunk.data.num_rows
    assert rows < 1_000_000
    with pytest.raises(OSError, match="ShaleDB is stopping"):  # the C stream's error
        for batch in adbc_reader:
            adbc_rows_read += batch.num_rows
    assert adbc_rows_read < 1_000_000
    adbc_reader.close()
    with contextlib.suppress(adbc_driver_manager.OperationalError):
        cursor.close()  # its ClosePreparedStatement finds the server gone
    stopper.join(90)
    assert exit_codes == [0]
    # Flight statements are in fe.audit.log as the MySQL port's are (rows counted as sent)
    audit = (fsrv.data_dir / "log" / "fe.audit.log").read_text(encoding="utf-8")
    [line] = [ln for ln in audit.splitlines() if "Stmt=SELECT 40 + 2 AS x" in ln]
    assert "|User=root|" in line and "|State=EOF|" in line and "|ReturnRows=1|" in line
    [line] = [ln for ln in audit.splitlines() if "no_such_table" in ln]
    assert "|State=ERR|" in line and "|ErrorCode=1146|" in line
