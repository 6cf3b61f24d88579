"""Arrow Flight SQL errors and sessions with real clients (the ADBC driver, raw pyarrow.flight)
against a real server: SQL errors arrive with the gRPC status of their kind and the MySQL
error's code and Doris' text; Flight sessions are in SHOW PROCESSLIST and `KILL [QUERY]` on the
MySQL port stops them; a client that cancels its stream stops the server's query; Flight
statements run on the server's `worker_threads` workers.

One server for the module, with two worker threads (the admission test fills them).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator

import adbc_driver_manager
import pyarrow as pa
import pymysql
import pytest
from adbc_driver_manager import AdbcStatusCode
from pyarrow import flight
from support.audit import wait_for_audit_lines
from support.flight_sql import RawSession, adbc_connect, query_descriptor, read_rest
from support.server import ServerProcess

WORKERS = 2


@pytest.fixture(scope="module")
def fsrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    conf = tmp_path_factory.mktemp("flight-conf") / "shaledb.toml"
    conf.write_text(f"[server]\nworker_threads = {WORKERS}\n", encoding="utf-8")
    with ServerProcess(tmp_path_factory.mktemp("flight-sessions"), backends=1,
                       extra_args=("--arrow-flight-sql-port", "0", "--conf", str(conf))) as srv:
        yield srv


@pytest.fixture(scope="module")
def db(fsrv: ServerProcess) -> str:
    name = f"flight_s_{secrets.token_hex(4)}"
    with fsrv.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"CREATE TABLE {name}.t (k INT, v VARCHAR(10)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute(f"INSERT INTO {name}.t VALUES (1, 'a'), (2, 'b')")
        cur.execute("CREATE USER IF NOT EXISTS 'flight_plain' IDENTIFIED BY 'pw'")
    return name


def port(srv: ServerProcess) -> int:
    assert srv.flight_port is not None
    return srv.flight_port


@pytest.fixture
def raw(fsrv: ServerProcess) -> Iterator[RawSession]:
    session = RawSession(port(fsrv))
    yield session
    session.close()


def processlist(srv: ServerProcess) -> dict[int, tuple[object, ...]]:
    with srv.connect() as c, c.cursor() as cur:
        cur.execute("SHOW PROCESSLIST")
        return {int(row[0]): row for row in cur.fetchall()}


def wait_until_running(srv: ServerProcess, connection_id: int, seconds: int = 0) -> None:
    """Until the session's row shows its statement running (for at least `seconds`)."""
    for _ in range(600):
        row = processlist(srv).get(connection_id)
        if row is not None and row[6] == "Query" and int(str(row[7])) >= seconds:
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"session {connection_id} never showed a running statement")


def kill(srv: ServerProcess, what: str, user: str = "root", password: str = "") -> None:
    with srv.connect(user=user, password=password) as c, c.cursor() as cur:
        cur.execute(f"KILL {what}")


# ---- errors --------------------------------------------------------------------------------------
def test_adbc_sees_the_status_of_each_error_and_doris_text(fsrv: ServerProcess, db: str) -> None:
    cases = [
        ("SELEC 1", AdbcStatusCode.INVALID_ARGUMENT,
         "ERROR 1064 (42000): You have an error in your SQL syntax"),
        (f"SELECT * FROM {db}.nope", AdbcStatusCode.NOT_FOUND,
         f"ERROR 1146 (42S02): errCode = 2, detailMessage = Table [nope] does not exist in database [{db}]."),  # noqa: E501
        ("SELECT * FROM no_such_db.t", AdbcStatusCode.NOT_FOUND,
         "ERROR 1049 (42000): errCode = 2, detailMessage = Unknown database 'no_such_db'"),
        (f"SELECT nocol FROM {db}.t", AdbcStatusCode.INVALID_ARGUMENT,
         "ERROR 1105 (HY000): errCode = 2, detailMessage = Unknown column 'nocol'"),
        ("KILL 1", AdbcStatusCode.NOT_IMPLEMENTED,
         "ERROR 1235 (42000): KILL is not supported over Arrow Flight SQL"),
    ]
    conn = adbc_connect(port(fsrv))
    try:
        for sql, status, text in cases:
            with pytest.raises(adbc_driver_manager.Error) as err, conn.cursor() as cur:
                cur.execute(sql)
                cur.fetchall()
            assert err.value.status_code == status, (sql, err.value)
            assert text in str(err.value), (sql, err.value)
            assert "server/flight_sql" not in str(err.value)  # no server path, no source line
        with conn.cursor() as cur:  # the session is still usable
            cur.execute(f"SELECT count(*) FROM {db}.t")
            assert cur.fetchall() == [(2,)]
    finally:
        conn.close()


def test_adbc_auth_and_privilege_errors(fsrv: ServerProcess, db: str) -> None:
    with pytest.raises(adbc_driver_manager.Error) as err:
        adbc_connect(port(fsrv), "flight_plain", "wrong")
    assert err.value.status_code == AdbcStatusCode.UNAUTHENTICATED
    assert "Access denied for user 'flight_plain'" in str(err.value)
    conn = adbc_connect(port(fsrv), "flight_plain", "pw")
    try:
        with pytest.raises(adbc_driver_manager.Error) as err, conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {db}.t")
        assert err.value.status_code == AdbcStatusCode.UNAUTHORIZED  # gRPC PERMISSION_DENIED
        assert "ERROR 1142 (42000): " in str(err.value)
        assert "denied" in str(err.value)
    finally:
        conn.close()


def test_raw_client_sees_the_status_of_each_error(fsrv: ServerProcess, raw: RawSession,
                                                  db: str) -> None:
    with pytest.raises(pa.ArrowInvalid, match=r"ERROR 1064 \(42000\)"):  # INVALID_ARGUMENT
        raw.start("SELEC 1")
    with pytest.raises(pa.ArrowKeyError, match=r"ERROR 1146 \(42S02\): errCode = 2, "
                                               r"detailMessage = Table \[nope\]"):  # NOT_FOUND
        raw.start(f"SELECT * FROM {db}.nope")
    with pytest.raises(pa.ArrowInvalid, match="Unknown column 'nocol'") as err:
        raw.start(f"SELECT nocol FROM {db}.t")
    assert "server/flight_sql" not in str(err.value)
    # an error while the rows stream (the executor's overflow): its status too, no server path
    reader = raw.start(f"SELECT 9223372036854775807 + k FROM {db}.t")
    with pytest.raises(pa.ArrowInvalid, match=r"ERROR 1690 \(22003\): .*Arithmetic overflow") \
            as err:
        read_rest(reader)
    assert "server/flight_sql" not in str(err.value)
    with pytest.raises(flight.FlightUnauthenticatedError, match="Access denied"):
        RawSession(port(fsrv), "flight_plain", "wrong")
    plain = RawSession(port(fsrv), "flight_plain", "pw")
    try:
        with pytest.raises(flight.FlightUnauthorizedError,  # gRPC PERMISSION_DENIED
                           match=r"ERROR 1142 \(42000\): .*denied"):
            plain.start(f"SELECT * FROM {db}.t")
    finally:
        plain.close()


def test_query_timeout_is_deadline_exceeded(fsrv: ServerProcess, raw: RawSession) -> None:
    raw.rows("SET query_timeout = 1")
    try:
        reader = raw.start("SELECT sleep(30)")
        with pytest.raises(flight.FlightTimedOutError,
                           match=r"ERROR 1105 \(HY000\): errCode = 2, detailMessage = Query "
                                 r"exceeded time limit of 1 seconds"):
            read_rest(reader)
    finally:
        raw.rows("SET query_timeout = 900")
    conn = adbc_connect(port(fsrv))
    try:
        with conn.cursor() as cur:
            cur.execute("SET query_timeout = 1")
            with pytest.raises(adbc_driver_manager.Error) as err:
                cur.execute("SELECT sleep(30)")
                cur.fetchall()
        assert err.value.status_code == AdbcStatusCode.TIMEOUT
        assert "Query exceeded time limit of 1 seconds" in str(err.value)
    finally:
        conn.close()


# ---- sessions: PROCESSLIST, KILL, cancel -----------------------------------------------------
def test_flight_session_in_processlist_and_kill_query(fsrv: ServerProcess,
                                                      raw: RawSession) -> None:
    cid = raw.connection_id()
    assert processlist(fsrv)[cid][1:3] == ("root", "127.0.0.1")
    reader = raw.start("SELECT sleep(60) AS slept")
    row = processlist(fsrv)[cid]
    assert (row[6], row[10]) == ("Query", "SELECT sleep(60) AS slept")
    kill(fsrv, f"QUERY {cid}")
    with pytest.raises(flight.FlightCancelledError, match=r"ERROR 1317 \(70100\)"):
        read_rest(reader)
    assert raw.rows("SELECT 6 * 7 AS x") == [{"x": 42}]  # the session goes on
    assert processlist(fsrv)[cid][6] == "Sleep"


def test_kill_query_closes_a_result_not_fetched_yet(fsrv: ServerProcess,
                                                   raw: RawSession) -> None:
    cid = raw.connection_id()
    marker = f"unfetched_{secrets.token_hex(4)}"
    info = raw.client.get_flight_info(query_descriptor(f"SELECT sleep(60), '{marker}'"),
                                      raw.options)
    assert processlist(fsrv)[cid][6] == "Query"  # planned: its rows wait for DoGet
    kill(fsrv, f"QUERY {cid}")
    [line] = wait_for_audit_lines(fsrv.data_dir, marker)  # closed now, not at its DoGet
    assert "|State=ERR|ErrorCode=1317|" in line
    assert processlist(fsrv)[cid][6] == "Sleep"
    with pytest.raises(flight.FlightCancelledError, match=r"ERROR 1317 \(70100\)"):
        read_rest(raw.client.do_get(info.endpoints[0].ticket, raw.options))


def test_kill_connection_ends_the_flight_session(fsrv: ServerProcess, raw: RawSession) -> None:
    cid = raw.connection_id()
    reader = raw.start("SELECT sleep(60)")
    kill(fsrv, str(cid))
    with pytest.raises(flight.FlightCancelledError):
        read_rest(reader)
    with pytest.raises(flight.FlightUnauthenticatedError, match="bearer token"):
        raw.rows("SELECT 1")
    assert cid not in processlist(fsrv)
    with pytest.raises(pymysql.err.OperationalError) as err:
        kill(fsrv, str(cid))
    assert err.value.args[0] == 1094  # Unknown thread id


def test_only_the_owner_or_an_admin_kills_a_flight_session(fsrv: ServerProcess, db: str,
                                                           raw: RawSession) -> None:
    cid = raw.connection_id()
    with pytest.raises(pymysql.err.OperationalError) as err:
        kill(fsrv, f"QUERY {cid}", user="flight_plain", password="pw")
    assert err.value.args[0] == 1095  # You are not owner of thread
    # a user sees their own Flight sessions only
    mine = RawSession(port(fsrv), "flight_plain", "pw")
    try:
        own = mine.connection_id()
        with fsrv.connect(user="flight_plain", password="pw") as c, c.cursor() as cur:
            cur.execute("SHOW PROCESSLIST")
            ids = {int(r[0]) for r in cur.fetchall()}
        assert own in ids and cid not in ids
        kill(fsrv, f"QUERY {own}", user="flight_plain", password="pw")
    finally:
        mine.close()
    assert raw.rows("SELECT 1 AS one") == [{"one": 1}]


def test_client_cancel_stops_the_server_query(fsrv: ServerProcess, raw: RawSession) -> None:
    cid = raw.connection_id()
    marker = f"cancel_{secrets.token_hex(4)}"
    reader = raw.start(f"SELECT sleep(60), '{marker}'")
    wait_until_running(fsrv, cid)
    reader.cancel()  # the client gives up mid-stream
    with pytest.raises(flight.FlightCancelledError):
        read_rest(reader)
    # the server's statement ended as cancelled (long before its 60 s) and the session idles
    [line] = wait_for_audit_lines(fsrv.data_dir, marker)
    assert "|State=ERR|ErrorCode=1317|" in line
    assert processlist(fsrv)[cid][6] == "Sleep"


def test_adbc_cancel_stops_the_server_query(fsrv: ServerProcess) -> None:
    marker = f"adbc_cancel_{secrets.token_hex(4)}"
    conn = adbc_connect(port(fsrv))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            [(cid,)] = cur.fetchall()
        cur = conn.cursor()
        got: list[BaseException] = []

        def fetch() -> None:
            try:
                cur.execute(f"SELECT sleep(60), '{marker}'")
                cur.fetchall()
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                got.append(e)

        worker = threading.Thread(target=fetch)
        worker.start()
        wait_until_running(fsrv, cid, seconds=1)  # planned, and its rows being fetched
        cur.adbc_cancel()
        worker.join(60)
        assert not worker.is_alive()
        assert got and isinstance(got[0], adbc_driver_manager.Error), got
        assert got[0].status_code == AdbcStatusCode.CANCELLED
        cur.close()
        [line] = wait_for_audit_lines(fsrv.data_dir, marker)
        assert "|State=ERR|ErrorCode=1317|" in line
    finally:
        conn.close()


def _read_expecting_cancel(reader: flight.FlightStreamReader,
                           errors: list[BaseException]) -> None:
    try:
        read_rest(reader)
    except BaseException as e:  # noqa: BLE001 - handed to the test thread
        errors.append(e)


def test_flight_statements_wait_for_the_servers_workers(fsrv: ServerProcess, db: str) -> None:
    """Two sleeping Flight queries hold both worker threads: a third statement's work waits
    in the queue (KILL QUERY then drops it before it ever ran: CANCELLED at GetFlightInfo)
    instead of getting a thread of its own; once the workers are free it runs."""
    holders = [RawSession(port(fsrv)) for _ in range(WORKERS)]
    waiting = RawSession(port(fsrv))
    errors: list[BaseException] = []
    readers: list[threading.Thread] = []
    try:
        holder_ids = [h.connection_id() for h in holders]
        waiting_id = waiting.connection_id()
        for holder, holder_id in zip(holders, holder_ids):
            stream = holder.start(f"SELECT sleep(120) FROM {db}.t WHERE k = 1")
            readers.append(threading.Thread(target=_read_expecting_cancel,
                                            args=(stream, errors)))
            readers[-1].start()
            wait_until_running(fsrv, holder_id, seconds=1)  # its batch pull is on a worker
        outcome: list[object] = []

        def plan() -> None:
            try:
                outcome.append(waiting.start(f"SELECT count(*) AS n FROM {db}.t"))
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                outcome.append(e)

        planner = threading.Thread(target=plan)
        planner.start()
        wait_until_running(fsrv, waiting_id)
        kill(fsrv, f"QUERY {waiting_id}")
        planner.join(60)
        assert len(outcome) == 1 and isinstance(outcome[0], flight.FlightCancelledError), \
            outcome
    finally:
        for holder_id in holder_ids:
            kill(fsrv, f"QUERY {holder_id}")
        for reader in readers:
            reader.join(60)
    assert len(errors) == WORKERS
    assert all(isinstance(e, flight.FlightCancelledError) for e in errors), errors
    assert waiting.rows(f"SELECT count(*) AS n FROM {db}.t") == [{"n": 2}]
    for session in holders + [waiting]:
        session.close()
