"""Arrow Flight SQL sessions count against their user's `max_user_connections` (the ADBC
driver and raw pyarrow.flight against a real server): a session is a connection from its login
until it ends; MySQL logins count the user's Flight sessions and Flight logins the user's MySQL
connections; a Flight login at the limit ends the user's least recently used idle Flight
session, and with none idle is refused with MySQL's 1203 and Doris' text; a session idle for
its wait_timeout ends (its slot is free again, its token refused)."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator

import pymysql
import pytest
from pyarrow import flight
from support.flight_sql import RawSession, adbc_connect, read_rest
from support.server import ServerProcess

USER, PASSWORD = "flight_lim", "pw"
TOO_MANY = (f"ERROR 1203 (42000): User {USER} already has more than 'max_user_connections' "
            "active connections")


@pytest.fixture(scope="module")
def lsrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("flight-limits"), backends=1,
                       extra_args=("--arrow-flight-sql-port", "0")) as srv:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute(f"CREATE USER '{USER}' IDENTIFIED BY '{PASSWORD}'")
            cur.execute(f"SET PROPERTY FOR '{USER}' 'max_user_connections' = '2'")
        yield srv


def port(srv: ServerProcess) -> int:
    assert srv.flight_port is not None
    return srv.flight_port


def mysql_as_user(srv: ServerProcess) -> pymysql.connections.Connection:
    return srv.connect(user=USER, password=PASSWORD)


def processlist_ids(srv: ServerProcess) -> set[int]:
    with srv.connect() as c, c.cursor() as cur:
        cur.execute("SHOW PROCESSLIST")
        return {int(row[0]) for row in cur.fetchall()}


def busy_session(srv: ServerProcess) -> tuple[RawSession, flight.FlightStreamReader]:
    """A Flight session of USER streaming a long query (busy: it cannot be ended for room)."""
    session = RawSession(port(srv), USER, PASSWORD)
    reader = session.start("SELECT sleep(60) AS s")
    assert reader.schema.names == ["s"]  # the stream is open on the server
    return session, reader


def kill_query(srv: ServerProcess, connection_id: int) -> None:
    with srv.connect() as c, c.cursor() as cur:
        cur.execute(f"KILL QUERY {connection_id}")


def test_busy_flight_and_mysql_sessions_fill_the_limit(lsrv: ServerProcess) -> None:
    mysql_conn = mysql_as_user(lsrv)  # one of the two
    busy, reader = busy_session(lsrv)  # the other
    try:
        with pytest.raises(flight.FlightUnauthorizedError, match=re.escape(TOO_MANY)):
            RawSession(port(lsrv), USER, PASSWORD)
        with pytest.raises(Exception, match=re.escape(TOO_MANY)),  \
                adbc_connect(port(lsrv), USER, PASSWORD) as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")  # the ADBC driver is refused too
            cur.fetchall()
        mysql_conn.close()  # a MySQL slot frees: a Flight login fits again
        extra = RawSession(port(lsrv), USER, PASSWORD)
        assert extra.rows("SELECT 1 AS one") == [{"one": 1}]
        # and MySQL logins count the two Flight sessions
        with pytest.raises(pymysql.err.OperationalError) as ei:
            mysql_as_user(lsrv)
        assert ei.value.args == (1203, TOO_MANY.split(": ", 1)[1])
        extra.close()
    finally:
        with lsrv.connect() as c, c.cursor() as cur:  # end the sleeping stream
            cur.execute("SHOW PROCESSLIST")
            for row in cur.fetchall():
                if row[1] == USER:
                    cur.execute(f"KILL {int(row[0])}")
        with pytest.raises(flight.FlightError):
            read_rest(reader)
        busy.close()


def test_login_at_the_limit_ends_the_least_recently_used_idle_session(
        lsrv: ServerProcess) -> None:
    first = RawSession(port(lsrv), USER, PASSWORD)
    second = RawSession(port(lsrv), USER, PASSWORD)
    first_id, second_id = first.connection_id(), second.connection_id()
    assert second.rows("SELECT 2 AS two") == [{"two": 2}]  # `first` is least recently used
    third = RawSession(port(lsrv), USER, PASSWORD)  # at the limit: `first` (idle) ends
    try:
        third_id = third.connection_id()
        with pytest.raises(flight.FlightUnauthenticatedError, match="Invalid or expired"):
            first.rows("SELECT 1")
        ids = processlist_ids(lsrv)
        assert first_id not in ids and {second_id, third_id} <= ids
    finally:
        for s in (first, second, third):
            s.close()
        with lsrv.connect() as c, c.cursor() as cur:
            for sid in (second_id, third_id):
                cur.execute(f"KILL {sid}")


def test_idle_session_ends_after_its_wait_timeout(lsrv: ServerProcess) -> None:
    session = RawSession(port(lsrv), USER, PASSWORD)
    sid = session.connection_id()
    session.rows("SET wait_timeout = 2")
    try:
        deadline = time.monotonic() + 60
        while sid in processlist_ids(lsrv):  # the listing itself ends idle sessions
            assert time.monotonic() < deadline
            time.sleep(0.2)
        with pytest.raises(flight.FlightUnauthenticatedError, match="Invalid or expired"):
            session.rows("SELECT 1")
        # its slot is free: two new sessions (the limit) log in without ending anything
        a, b = RawSession(port(lsrv), USER, PASSWORD), RawSession(port(lsrv), USER, PASSWORD)
        a_id, b_id = a.connection_id(), b.connection_id()
        assert {a_id, b_id} <= processlist_ids(lsrv)
        a.close()
        b.close()
        with lsrv.connect() as c, c.cursor() as cur:
            for other in (a_id, b_id):
                cur.execute(f"KILL {other}")
    finally:
        session.close()


def test_other_users_are_not_counted(lsrv: ServerProcess) -> None:
    name = f"flight_other_{secrets.token_hex(3)}"
    with lsrv.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE USER '{name}' IDENTIFIED BY 'x'")
        cur.execute(f"SET PROPERTY FOR '{name}' 'max_user_connections' = '1'")
    mine = RawSession(port(lsrv), USER, PASSWORD)
    theirs = RawSession(port(lsrv), name, "x")
    try:
        assert theirs.rows("SELECT 3 AS three") == [{"three": 3}]
        assert mine.rows("SELECT 4 AS four") == [{"four": 4}]
    finally:
        mine.close()
        theirs.close()
