"""The Arrow Flight SQL port's cap on calls served at once (`arrow_flight_sql_max_calls`, each
on a gRPC thread) and waiting (`arrow_flight_sql_call_queue_size`), with real clients (raw
pyarrow.flight and the ADBC driver) against real servers: more clients than slots all get their
answers (they wait their turn); a call past the queue is refused at once with UNAVAILABLE and
MySQL's 1040 text; slots come back when streams end, are killed or fail (no leak)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyarrow import flight
from support.flight_sql import RawSession, adbc_connect, read_rest
from support.http import scrape_metrics
from support.server import ServerProcess

CLIENTS = 12


def flight_server(home: Path, max_calls: int, queue: int) -> ServerProcess:
    conf = home / "shaledb.toml"
    conf.write_text(f"[server]\narrow_flight_sql_max_calls = {max_calls}\n"
                    f"arrow_flight_sql_call_queue_size = {queue}\n", encoding="utf-8")
    return ServerProcess(home / "data", backends=1,
                         extra_args=("--arrow-flight-sql-port", "0", "--conf", str(conf)))


@pytest.fixture(scope="module")
def roomy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Two calls at once, plenty of queue."""
    with flight_server(tmp_path_factory.mktemp("flight-slots-q"), 2, 64) as srv:
        yield srv


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Two calls at once, one waiting."""
    with flight_server(tmp_path_factory.mktemp("flight-slots-t"), 2, 1) as srv:
        yield srv


def flight_metrics(srv: ServerProcess) -> dict[str, float]:
    assert srv.http_port is not None
    return {k: v for k, v in scrape_metrics(srv.http_port).items() if "flight_sql" in k}


def port(srv: ServerProcess) -> int:
    assert srv.flight_port is not None
    return srv.flight_port


def hold_stream(session: RawSession) -> flight.FlightStreamReader:
    """A result stream left open (it holds its call slot until it ends)."""
    reader = session.start("SELECT sleep(60) AS s")
    assert reader.schema.names == ["s"]  # the DoGet call is under way on the server
    return reader




def test_more_clients_than_slots_all_get_their_answers(roomy: ServerProcess) -> None:
    answers: dict[int, object] = {}
    errors: list[BaseException] = []

    def client(i: int) -> None:
        try:
            if i % 2:  # the ADBC driver
                with adbc_connect(port(roomy)) as conn, conn.cursor() as cur:
                    cur.execute(f"SELECT sleep(0.3) AS s, {i} AS i")
                    answers[i] = cur.fetchall()[0][1]
            else:
                session = RawSession(port(roomy))
                answers[i] = session.rows(f"SELECT sleep(0.3) AS s, {i} AS i")[0]["i"]
                session.close()
        except Exception as e:  # noqa: BLE001 - reported below, with the others
            errors.append(e)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert answers == {i: i for i in range(CLIENTS)}


def test_a_call_waits_while_the_slots_are_held(roomy: ServerProcess) -> None:
    holders = [RawSession(port(roomy)), RawSession(port(roomy))]
    waiter = RawSession(port(roomy))  # logged in before the slots are taken
    holder_ids = [s.connection_id() for s in holders]
    streams = [hold_stream(s) for s in holders]
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(waiter.rows("SELECT 7 AS seven")))
    thread.start()
    try:
        thread.join(1.0)
        assert thread.is_alive() and not got  # both slots are held: it waits its turn
        with roomy.connect() as c, c.cursor() as cur:
            cur.execute(f"KILL QUERY {holder_ids[0]}")  # one stream ends: a slot frees
        with pytest.raises(flight.FlightCancelledError):
            read_rest(streams[0])
        thread.join(60)
        assert got == [[{"seven": 7}]]
    finally:
        with roomy.connect() as c, c.cursor() as cur:
            cur.execute(f"KILL QUERY {holder_ids[1]}")
        with pytest.raises(flight.FlightCancelledError):
            read_rest(streams[1])
        thread.join(60)
        for s in (*holders, waiter):
            s.close()


def test_a_call_past_the_queue_is_refused_then_slots_come_back(tight: ServerProcess) -> None:
    holders = [RawSession(port(tight)), RawSession(port(tight))]
    waiter, refused = RawSession(port(tight)), RawSession(port(tight))
    holder_ids = [s.connection_id() for s in holders]
    streams = [hold_stream(s) for s in holders]
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(waiter.rows("SELECT 8 AS eight")))
    thread.start()
    try:
        thread.join(1.0)
        assert thread.is_alive()  # the one queue place is taken
        with pytest.raises(flight.FlightUnavailableError,
                           match=r"ERROR 1040 \(08004\): Too many connections: .*"
                                 r"arrow_flight_sql_max_calls.*retry later"):
            refused.rows("SELECT 1")
        # /metrics shows the same moment: both slots held, the queue full, one refusal
        assert flight_metrics(tight) == {
            "shaledb_flight_sql_calls_running": 2, "shaledb_flight_sql_calls_waiting": 1,
            "shaledb_flight_sql_calls_queued_total": 1,
            "shaledb_flight_sql_calls_refused_total": 1, "shaledb_flight_sql_sessions": 4}
    finally:
        with tight.connect() as c, c.cursor() as cur:
            for sid in holder_ids:
                cur.execute(f"KILL QUERY {sid}")
        for stream in streams:
            with pytest.raises(flight.FlightCancelledError):
                read_rest(stream)
        thread.join(60)
    assert got == [[{"eight": 8}]]
    # every slot came back (killed streams, a failed call, a refusal): many calls run again
    for i in range(10):
        assert refused.rows(f"SELECT {i} AS i") == [{"i": i}]
    with pytest.raises(KeyError, match="1049"):  # pyarrow's NOT_FOUND
        refused.rows("SELECT * FROM no_such_db.t")
    assert refused.rows("SELECT 1 AS one") == [{"one": 1}]
    after = flight_metrics(tight)
    assert (after["shaledb_flight_sql_calls_running"], after["shaledb_flight_sql_calls_waiting"],
            after["shaledb_flight_sql_calls_refused_total"]) == (0, 0, 1)
    for s in (*holders, waiter, refused):
        s.close()
