"""MariaDB Connector/J connects while the server is busy: many clients open connections at once
while long aggregations hold every query worker.

Connector/J (usePipelineAuth, the default) sends its connect-time statements (`set
autocommit=1, sql_mode = ...`, `SELECT @@max_allowed_packet, ...`) right after the handshake and
gives the answers only 500 ms (socket timeout) before failing with "could not load system
variables" (then `requestSessionDataWithShow`). Statements that read no table therefore run on
the server's session pool, never queued behind queries (server/session.py `reads_no_table`).
The server here has one query worker, so without that every connect waits for an aggregation.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pymysql
import pytest
from support.server import ServerProcess

JAVA_DIR = Path(__file__).resolve().parent / "java"
CONNECTOR_JAR = Path("/usr/share/java/mariadb-java-client.jar")
CLIENTS = 24
HEAVY = 2  # concurrent long aggregations: more than the one query worker
ROWS_LOG2 = 17
TERMS = 24  # string casts per row in the GROUP BY key: seconds of work per query


@pytest.fixture(scope="module")
def busy_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("busy-server")
    conf = root / "shaledb.toml"
    conf.write_text("[server]\nworker_threads = 1\n")
    srv = ServerProcess(root / "data", backends=1, extra_args=["--conf", str(conf)])
    srv.start()
    try:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE busy")
            cur.execute("USE busy")
            cur.execute("CREATE TABLE big (k BIGINT NOT NULL, v BIGINT) DUPLICATE KEY(k) "
                        "DISTRIBUTED BY HASH(k) BUCKETS 8")
            cur.execute("INSERT INTO big VALUES (0, 1), (1, 2)")
            for p in range(1, ROWS_LOG2):
                cur.execute(f"INSERT INTO big SELECT k + {1 << p}, v + k FROM big")
            # One run before the test: on a fresh clone numba compiles the aggregation's kernels
            # on first use, holding the GIL for seconds. That one-time stall is not what this
            # test measures (connects while warm queries hold the workers), and it made every
            # connect miss Connector/J's 500 ms on a cold CI machine.
            cur.execute(_heavy_query())
            cur.fetchall()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("jdbc-load-classes")
    proc = subprocess.run(
        ["javac", "-cp", str(CONNECTOR_JAR), "-d", str(out), str(JAVA_DIR / "JdbcClient.java")],
        capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return out


def _heavy_query() -> str:
    terms = ", '/', ".join(f"cast(k * {i} + v AS STRING)" for i in range(1, TERMS + 1))
    return f"SELECT concat({terms}) AS g, count(*) FROM big GROUP BY g ORDER BY g LIMIT 1"


class HeavyLoop(threading.Thread):
    """Runs the long aggregation again and again until stopped; records how each run ended."""

    def __init__(self, server: ServerProcess) -> None:
        super().__init__(name="heavy-aggregation", daemon=True)
        self.conn = server.connect("busy")
        self.stop = threading.Event()
        self.outcomes: list[str] = []

    def run(self) -> None:
        with self.conn.cursor() as cur:
            while not self.stop.is_set():
                try:
                    cur.execute(_heavy_query())
                    cur.fetchall()
                    self.outcomes.append("completed")
                except pymysql.MySQLError as e:
                    self.outcomes.append(f"error {e.args[0]}")


def _running_heavy(server: ServerProcess) -> int:
    with server.connect() as c, c.cursor() as cur:
        cur.execute("SHOW PROCESSLIST")
        return sum(1 for row in cur.fetchall() if row[6] == "Query" and "concat(" in row[10])


def test_many_connects_while_queries_hold_the_workers(busy_server, java_classes) -> None:  # type: ignore[no-untyped-def]
    loops = [HeavyLoop(busy_server) for _ in range(HEAVY)]
    for loop in loops:
        loop.start()
    try:
        # Both aggregations are running (one on the worker, one queued for it) before the
        # clients connect.
        waited = threading.Event()
        for _ in range(600):
            if _running_heavy(busy_server) == HEAVY:
                break
            waited.wait(0.1)
        assert _running_heavy(busy_server) == HEAVY
        url = f"jdbc:mysql://127.0.0.1:{busy_server.port}/busy"
        proc = subprocess.run(
            ["java", "-cp", f"{java_classes}:{CONNECTOR_JAR}", "JdbcClient", "connect-many", url,
             str(CLIENTS)], capture_output=True, text=True, timeout=300)
        lines = [ln.split("\t") for ln in proc.stdout.splitlines()]
        assert proc.returncode == 0 and lines[-1] == ["DONE"], proc.stderr[-3000:]
        failures = [ln for ln in lines if ln[0] != "CONNECTED" and ln != ["DONE"]]
        assert not failures, "\n".join("\t".join(f) for f in failures)
        assert sorted(int(ln[1]) for ln in lines[:-1]) == list(range(CLIENTS))
        assert all(int(ln[2]) == int(ln[1]) * 2 for ln in lines[:-1])
        # The server was still busy when the last client had connected: the aggregations get
        # killed mid-run rather than finishing.
        assert _running_heavy(busy_server) >= 1
    finally:
        with busy_server.connect() as killer, killer.cursor() as cur:
            for loop in loops:
                loop.stop.set()
            for loop in loops:
                for _ in range(100):
                    cur.execute(f"KILL QUERY {loop.conn.thread_id()}")
                    loop.join(0.2)
                    if not loop.is_alive():
                        break
                loop.conn.close()
    assert all(loop.outcomes for loop in loops)
