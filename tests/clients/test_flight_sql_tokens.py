"""Arrow Flight SQL bearer tokens end (Doris' arrow_flight_token_cache_size and token alive
time): past the cache size the least recently used session is dropped, a token expires its
alive time after the login; either way the session leaves SHOW PROCESSLIST, its running
statement is cancelled and its client must log in again. A killed server fails a read under
way. One server for the module with a cache of 2 tokens living 8 s."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from pyarrow import flight
from support.flight_sql import RawSession, read_rest
from support.server import ServerProcess

ALIVE_SECONDS = 8  # long enough for the other tests on a busy machine


@pytest.fixture(scope="module")
def tsrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    conf = tmp_path_factory.mktemp("flight-token-conf") / "shaledb.toml"
    conf.write_text("[server]\narrow_flight_token_cache_size = 2\n"
                    f"arrow_flight_token_alive_time_second = {ALIVE_SECONDS}\n", encoding="utf-8")
    with ServerProcess(tmp_path_factory.mktemp("flight-tokens"), backends=1,
                       extra_args=("--arrow-flight-sql-port", "0", "--conf", str(conf))) as srv:
        yield srv


def port(srv: ServerProcess) -> int:
    assert srv.flight_port is not None
    return srv.flight_port


def session_ids(srv: ServerProcess) -> set[int]:
    with srv.connect() as c, c.cursor() as cur:
        cur.execute("SHOW PROCESSLIST")
        return {int(row[0]) for row in cur.fetchall()}


def test_least_recently_used_token_is_dropped_past_the_cache_size(tsrv: ServerProcess) -> None:
    first, second = RawSession(port(tsrv)), RawSession(port(tsrv))
    first_id, second_id = first.connection_id(), second.connection_id()
    running = first.start("SELECT sleep(60)")
    assert second.rows("SELECT 1 AS one") == [{"one": 1}]  # `first` is least recently used
    third = RawSession(port(tsrv))  # a third login drops it
    try:
        third_id = third.connection_id()
        with pytest.raises(flight.FlightCancelledError):  # its statement was cancelled
            read_rest(running)
        with pytest.raises(flight.FlightUnauthenticatedError,
                           match="arrow_flight_token_cache_size = 2"):
            first.rows("SELECT 1")
        ids = session_ids(tsrv)
        assert first_id not in ids and {second_id, third_id} <= ids
    finally:
        for s in (first, second, third):
            s.close()


def test_token_expires_after_its_alive_time(tsrv: ServerProcess) -> None:
    session = RawSession(port(tsrv))
    sid = session.connection_id()
    try:
        assert sid in session_ids(tsrv)
        # the listing itself drops expired sessions: wait (bounded) until it has
        for _ in range(ALIVE_SECONDS * 40):
            if sid not in session_ids(tsrv):
                break
            threading.Event().wait(0.1)
        assert sid not in session_ids(tsrv)
        with pytest.raises(flight.FlightUnauthenticatedError, match="Invalid or expired"):
            session.rows("SELECT 1")
        again = RawSession(port(tsrv))  # a new login works
        assert again.rows("SELECT 2 AS two") == [{"two": 2}]
        again.close()
    finally:
        session.close()


def test_a_killed_server_fails_the_read_under_way(tsrv: ServerProcess) -> None:
    """Last (kills the server): a result being read when the server dies ends in an error,
    never as a complete result."""
    session = RawSession(port(tsrv))
    reader = session.start("SELECT sleep(60) AS slept")
    tsrv.kill()
    with pytest.raises(flight.FlightUnavailableError):
        read_rest(reader)
    session.close()
