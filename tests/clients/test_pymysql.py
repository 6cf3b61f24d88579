"""pymysql against a live ShaleDB: connection basics, session variables, the INSERT OK info string,
error codes, concurrency (a slow query does not block other connections) and KILL QUERY."""

from __future__ import annotations

import re
import threading
import time

import pymysql
import pytest
from pymysql.constants import COMMAND

INFO_RE = re.compile(r"^\{'label':'insert_[0-9A-Za-z_-]+', 'status':'VISIBLE', 'txnId':'(\d+)'\}$")


def scalar(conn, sql: str):
    with conn.cursor() as cur:
        cur.execute(sql)
        rows = cur.fetchall()
    assert len(rows) == 1 and len(rows[0]) == 1, rows
    return rows[0][0]


def execute(conn, sql: str) -> pymysql.cursors.Cursor:
    cur = conn.cursor()
    cur.execute(sql)
    return cur


def error_of(conn, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as ei:
        execute(conn, sql)
    return ei.value.args[0], ei.value.args[1]


# ---- connection basics ----------------------------------------------------------------------
def test_root_with_empty_password_connects(server) -> None:
    with server.connect() as c:
        assert scalar(c, "SELECT 1") == 1


def test_version_and_version_comment(conn) -> None:
    version = scalar(conn, "SELECT @@version")
    assert isinstance(version, str)
    assert re.match(r"^\d+\.\d+\.\d+", version), version  # clients parse a MySQL-style version
    comment = scalar(conn, "SELECT @@version_comment")
    assert isinstance(comment, str) and comment.strip()
    assert scalar(conn, "SELECT @@version_comment LIMIT 1") == comment  # what mysql(1) sends


def test_database_function_follows_use(conn, db) -> None:
    assert scalar(conn, "SELECT DATABASE()") is None
    execute(conn, f"USE `{db}`")
    assert scalar(conn, "SELECT DATABASE()") == db
    conn.select_db(db)  # COM_INIT_DB, as clients send it
    assert scalar(conn, "SELECT DATABASE()") == db


def test_connect_with_database(server, db) -> None:
    with server.connect(db) as c:
        assert scalar(c, "SELECT DATABASE()") == db


def test_connect_to_unknown_database_fails(server) -> None:
    with pytest.raises(pymysql.MySQLError) as ei:
        server.connect("sqlt_no_such_db_xyz")
    assert ei.value.args[0] == 1049
    assert "Unknown database 'sqlt_no_such_db_xyz'" in ei.value.args[1]


def test_connection_id_matches_handshake_thread_id(server) -> None:
    with server.connect() as a, server.connect() as b:
        ida = scalar(a, "SELECT CONNECTION_ID()")
        idb = scalar(b, "SELECT CONNECTION_ID()")
        assert ida == a.thread_id()
        assert idb == b.thread_id()
        assert ida != idb
        assert ida > 0 and idb > 0


def test_no_database_selected(conn) -> None:
    code, msg = error_of(
        conn, "CREATE TABLE t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert code == 1046, (code, msg)
    assert "No database selected" in msg


# ---- session variables ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [("'true'", 1), ("'false'", 0), ("1", 1), ("0", 0), ("true", 1), ("false", 0), ("'TRUE'", 1)],
)
def test_set_boolean_variable(conn, value: str, expected: int) -> None:
    execute(conn, f"SET disable_colocate_join = {value}")
    assert scalar(conn, "SELECT @@disable_colocate_join") == expected
    execute(conn, f"SET enable_bucket_shuffle_join = {value}")
    assert scalar(conn, "SELECT @@enable_bucket_shuffle_join") == expected


def test_show_variables_like_has_doris_columns(conn) -> None:
    execute(conn, "SET query_timeout = 123")
    cur = execute(conn, "SHOW VARIABLES LIKE 'query_timeout'")
    names = [d[0] for d in cur.description]
    assert names == ["Variable_name", "Value", "Default_Value", "Changed"]
    rows = cur.fetchall()
    assert [tuple(str(v) for v in r) for r in rows] == [("query_timeout", "123", "900", "1")]

    cur = execute(conn, "SHOW VARIABLES LIKE '%bucket_shuffle_join%'")
    found = {r[0]: str(r[1]) for r in cur.fetchall()}
    assert found.get("enable_bucket_shuffle_join") == "true"


def test_session_variables_are_per_connection(server) -> None:
    with server.connect() as a, server.connect() as b:
        execute(a, "SET query_timeout = 77")
        execute(a, "SET time_zone = '+05:00'")
        assert scalar(a, "SELECT @@query_timeout") == 77
        assert scalar(b, "SELECT @@query_timeout") == 900
        assert scalar(a, "SELECT @@time_zone") == "+05:00"
        assert scalar(b, "SELECT @@time_zone") != "+05:00"


def test_unknown_variable(conn) -> None:
    code, msg = error_of(conn, "SET no_such_variable_xyz = 1")
    assert code == 1193
    assert "Unknown system variable 'no_such_variable_xyz'" in msg


# ---- INSERT OK packet: affected rows and Doris' info string ----------------------------------
def ok_info(cur) -> str:
    """The OK packet's info string. Doris (like MariaDB) length-encodes it; pymysql hands back
    the raw remainder of the packet, so strip the one-byte length prefix it carries."""
    raw = cur._result.message
    assert raw and raw[0] == len(raw) - 1, raw
    return raw[1:].decode()


def test_insert_ok_packet_info_string(db_conn) -> None:
    execute(
        db_conn,
        "CREATE TABLE t (k INT, v VARCHAR(10)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2",
    )
    cur = execute(db_conn, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert cur.rowcount == 3
    info1 = ok_info(cur)
    m1 = INFO_RE.match(info1)
    assert m1, info1

    cur = execute(db_conn, "INSERT INTO t (k) VALUES (4)")
    assert cur.rowcount == 1
    info2 = ok_info(cur)
    m2 = INFO_RE.match(info2)
    assert m2, info2
    assert int(m2.group(1)) > int(m1.group(1)), "each load gets a new, larger transaction id"
    label1 = info1.split("'label':'")[1].split("'")[0]
    label2 = info2.split("'label':'")[1].split("'")[0]
    assert label1 != label2
    assert scalar(db_conn, "SELECT count(*) FROM t") == 4


# ---- errors ---------------------------------------------------------------------------------
def test_doris_error_codes_and_wording(db_conn, db) -> None:
    # A missing table is MySQL's 1146 (Doris says 1105) with Doris' wording: JDBC tools and
    # Spark take exactly 1146 to mean "no such table". The same code for every statement.
    missing = f"errCode = 2, detailMessage = Table [no_such_table] does not exist in database [{db}]."
    for sql in (
        "SELECT * FROM no_such_table",
        "SELECT 1 FROM no_such_table WHERE 1 = 0",
        "INSERT INTO no_such_table VALUES (1)",
        "INSERT INTO no_such_table SELECT 1",
        "DELETE FROM no_such_table WHERE k = 1",
    ):
        assert error_of(db_conn, sql) == (1146, missing), sql
    for sql in ("DESC no_such_table", "SHOW CREATE TABLE no_such_table",
                "SHOW COLUMNS FROM no_such_table"):
        assert error_of(db_conn, sql)[0] == 1146, sql

    code, msg = error_of(db_conn, f"CREATE DATABASE `{db}`")
    assert code == 1007
    assert f"Can't create database '{db}'; database exists" in msg

    execute(db_conn, "CREATE TABLE t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    code, msg = error_of(
        db_conn, "CREATE TABLE t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1"
    )
    assert code == 1050
    assert "Table 't' already exists" in msg

    code, _ = error_of(db_conn, "SELEC 1")
    assert code == 1064

    # an error leaves the connection usable
    assert scalar(db_conn, "SELECT 1") == 1


# ---- concurrency ----------------------------------------------------------------------------
def test_slow_query_does_not_block_other_connections(server) -> None:
    """A SLEEP(3) on one connection; three round trips on another finish before it does."""
    finished: list[str] = []
    lock = threading.Lock()
    sent = threading.Event()
    errors: list[BaseException] = []
    slow_elapsed: list[float] = []

    def slow() -> None:
        try:
            with server.connect() as c:
                t0 = time.monotonic()
                # send the query, then signal, then wait for its result: the fast connection
                # starts only once the slow query is on its way to the server
                c._execute_command(COMMAND.COM_QUERY, "SELECT SLEEP(3)")
                sent.set()
                c._read_query_result()
                slow_elapsed.append(time.monotonic() - t0)
            with lock:
                finished.append("slow")
        except BaseException as e:  # surfaced below
            errors.append(e)
            sent.set()

    with server.connect() as fast:
        t = threading.Thread(target=slow, name="slow-query")
        t.start()
        assert sent.wait(30)
        for _ in range(3):
            assert scalar(fast, "SELECT 1") == 1
        with lock:
            finished.append("fast")
        t.join(60)
    assert not t.is_alive()
    assert not errors, errors
    assert finished == ["fast", "slow"]
    assert slow_elapsed and slow_elapsed[0] >= 2.5, "SLEEP(3) really waited"


def test_kill_query_cancels_running_query(server) -> None:
    victim = server.connect()
    victim_id = victim.thread_id()
    outcome: dict[str, object] = {}
    done = threading.Event()

    def run_victim() -> None:
        t0 = time.monotonic()
        try:
            with victim.cursor() as cur:
                cur.execute("SELECT SLEEP(30)")
                cur.fetchall()
            outcome["result"] = "completed"
        except pymysql.MySQLError as e:
            outcome["result"] = "error"
            outcome["error"] = e.args
        except BaseException as e:
            outcome["result"] = "other"
            outcome["error"] = repr(e)
        outcome["elapsed"] = time.monotonic() - t0
        done.set()

    t = threading.Thread(target=run_victim, name="kill-victim")
    t.start()
    try:
        with server.connect() as killer:
            # KILL QUERY on a connection that has not started its query yet is a no-op, so repeat
            # it until the victim returns (each wait ends as soon as it does).
            for _ in range(40):
                execute(killer, f"KILL QUERY {victim_id}")
                if done.wait(0.5):
                    break
        assert done.wait(30), "victim still running"
        assert outcome["result"] == "error", outcome
        assert outcome["elapsed"] < 25, outcome
        # the victim's connection survives a KILL QUERY
        assert scalar(victim, "SELECT 1") == 1
    finally:
        t.join(60)
        victim.close()


def test_kill_unknown_connection(conn) -> None:
    code, msg = error_of(conn, "KILL QUERY 987654321")
    assert code == 1094, (code, msg)
    assert "987654321" in msg


def test_show_processlist_lists_connections_and_running_statement(server) -> None:
    import threading

    victim = server.connect()
    watcher = server.connect()
    victim_id = victim.thread_id()
    outcome: list = []

    def run() -> None:
        try:
            victim.cursor().execute("SELECT SLEEP(30)")
        except pymysql.MySQLError as e:
            outcome.append(e.args[0])

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        with watcher.cursor() as cur:
            rows: list = []
            for _ in range(200):  # wait for the statement to show up, bounded
                cur.execute("SHOW PROCESSLIST")
                cols = [d[0] for d in cur.description]
                rows = [dict(zip(cols, r)) for r in cur.fetchall()]
                mine = [r for r in rows if r["Id"] == str(victim_id)]
                if mine and mine[0]["Command"] == "Query":
                    break
                threading.Event().wait(0.05)
            assert cols[:3] == ["Id", "User", "Host"]
            assert mine and mine[0]["Command"] == "Query" and "SLEEP(30)" in mine[0]["Info"]
            assert any(r["Id"] == str(watcher.thread_id()) for r in rows)
            cur.execute(f"KILL QUERY {victim_id}")
    finally:
        t.join(timeout=30)
        victim.close()
        watcher.close()
    assert outcome == [3169], outcome  # the KILL QUERY reached the sleeping statement
