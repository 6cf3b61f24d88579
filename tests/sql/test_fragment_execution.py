"""Fragment instances over the wire (executor/coordinator.py): scan fragments run one instance
per `shaledb_small_fragment_rows` rows, at most one per core, on the backends holding their
tablets (never one per backend), exchanges move what their join mode says (bucket
shuffle: the right side once; broadcast: a copy per instance; shuffle: both sides), an error
in any instance reaches the client as its own MySQL error, and LIMIT stops every instance.
Small fragments run as one instance, pulled inline by their receiver."""

from __future__ import annotations

import os
import time
from pathlib import Path

import duckdb
from support.duck import insert_rows

ROWS = 120_000
INSTANCE_ROWS = 20_000  # shaledb_small_fragment_rows here: as many instances as cores
CORES = len(os.sched_getaffinity(0))  # the server runs on this machine


def _profile(cur) -> dict[str, str]:  # type: ignore[no-untyped-def]
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    return {k: v for k, v in cur.fetchall() if k.startswith("Fragment")}


def _setup(cur) -> duckdb.DuckDBPyConnection:  # type: ignore[no-untyped-def]
    cur.execute(f"SET shaledb_small_fragment_rows = {INSTANCE_ROWS}")
    cur.execute("CREATE TABLE f (k INT, g INT, v BIGINT) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 6")
    cur.execute("CREATE TABLE d (k INT, name VARCHAR(8)) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(name) BUCKETS 4")
    f_rows = [(i, i % 13, i * 7 % 101) for i in range(ROWS)]
    d_rows = [(i, f"n{i % 17}") for i in range(0, ROWS, 5)]
    for start in range(0, ROWS, 40_000):
        cur.execute("INSERT INTO f VALUES " + ", ".join(
            f"({a}, {b}, {c})" for a, b, c in f_rows[start:start + 40_000]))
    cur.execute("INSERT INTO d VALUES " + ", ".join(f"({a}, '{b}')" for a, b in d_rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE f (k INT, g INT, v BIGINT)")
    duck.execute("CREATE TABLE d (k INT, name VARCHAR)")
    insert_rows(duck, "f", f_rows)
    insert_rows(duck, "d", d_rows)
    return duck


def _backends(cur, table: str) -> set[str]:  # type: ignore[no-untyped-def]
    cur.execute(f"SHOW TABLETS FROM {table}")
    names = [c[0] for c in cur.description]
    col = names.index("BackendId")
    return {str(r[col]) for r in cur.fetchall()}


def _instances(value: str) -> tuple[int, set[str]]:
    inst, backends = value.split(", Backends: ")
    return int(inst.split(": ")[1]), set(backends.split(","))


def _exchanges(prof: dict[str, str]) -> list[int]:
    return sorted(int(v.split(",")[0].split(": ")[1]) for k, v in prof.items()
                  if k.endswith(":VEXCHANGE"))


def test_instances_run_on_the_backends_owning_the_tablets(db_conn) -> None:
    with db_conn.cursor() as cur:
        duck = _setup(cur)
        cur.execute("SET enable_profile = true")
        sql = "SELECT g, count(*), sum(v) FROM f GROUP BY g"
        cur.execute(sql)
        got = sorted(cur.fetchall())
        prof = _profile(cur)
        owners = _backends(cur, "f")
    assert [tuple(int(x) for x in r) for r in got] == sorted(duck.execute(sql).fetchall())
    scan_fragment = next(k.split(" / ")[0] for k in prof if k.endswith(":VOlapScanNode"))
    count, backends = _instances(prof[scan_fragment])
    # sized by the cores and the rows, not by the 3 backends: f's 6 buckets hold 6 instances'
    # worth of rows
    assert backends <= owners and len(owners) == 3
    assert count == min(CORES, 6, ROWS // INSTANCE_ROWS)
    # a small table's fragment is one instance, pulled by its receiver on the same thread
    cur2 = db_conn.cursor()
    cur2.execute("CREATE TABLE small (k INT, g INT) DUPLICATE KEY(k) "
                 "DISTRIBUTED BY HASH(k) BUCKETS 6")
    cur2.execute("INSERT INTO small VALUES " + ", ".join(f"({i}, {i % 4})" for i in range(500)))
    cur2.execute("SELECT g, count(*) FROM small GROUP BY g")
    assert sorted(cur2.fetchall()) == [(g, 125) for g in range(4)]
    small = _profile(cur2)
    scan_fragment = next(k.split(" / ")[0] for k in small if k.endswith(":VOlapScanNode"))
    assert _instances(small[scan_fragment])[0] == 1
    # the update phase runs in every scan instance; each sends its partial groups once
    partial = next(v for k, v in prof.items() if k.endswith("(update serialize)"))
    assert partial.startswith("RowsReturned: ")
    assert ROWS > int(partial.split(",")[0].split(": ")[1]) >= 13


def test_each_join_mode_moves_what_it_should(db_conn) -> None:
    """Bucket shuffle sends only the right side (once); broadcast sends it once too, into a
    hash table its probe instances share; a shuffle sends both sides. Same rows every time,
    equal to DuckDB."""
    sql = "SELECT f.g, count(*), sum(f.v) FROM f JOIN {hint} d ON f.k = d.k GROUP BY f.g"
    with db_conn.cursor() as cur:
        duck = _setup(cur)
        want = sorted(duck.execute(sql.format(hint="")).fetchall())
        cur.execute("SET enable_profile = true")
        moved = {}
        for hint, mode in (("[bucket]", "BUCKET_SHUFFLE"), ("[broadcast]", "BROADCAST"),
                           ("[shuffle]", "BUCKET_SHUFFLE")):
            cur.execute(sql.format(hint=hint))
            assert sorted(tuple(int(x) for x in r) for r in cur.fetchall()) == want
            prof = _profile(cur)
            join = next(v for k, v in prof.items() if k.endswith(":VHASH JOIN"))
            assert join.startswith(f"INNER JOIN({mode})[]")
            moved[hint] = prof
        cur.execute("SET enable_bucket_shuffle_join = false")
        cur.execute(sql.format(hint="[shuffle]"))
        assert sorted(tuple(int(x) for x in r) for r in cur.fetchall()) == want
        shuffled = _profile(cur)
        cur.execute("SET enable_bucket_shuffle_join = true")
    right = ROWS // 5
    probe_instances, _ = _instances(next(
        v for k, v in moved["[broadcast]"].items()
        if k == next(x.split(" / ")[0] for x in moved["[broadcast]"] if x.endswith("HASH JOIN"))))
    # below the join: bucket shuffle moves the right side once; broadcast too, into one hash
    # table all the probe instances share
    assert probe_instances == min(CORES, 6)
    assert right in _exchanges(moved["[bucket]"])
    assert right in _exchanges(moved["[broadcast]"])
    join = next(v for k, v in shuffled.items() if k.endswith(":VHASH JOIN"))
    assert join.startswith("INNER JOIN(PARTITIONED)[]")
    assert {right, ROWS} <= set(_exchanges(shuffled))


def test_an_error_in_any_instance_reaches_the_client(db_conn) -> None:
    with db_conn.cursor() as cur:
        _setup(cur)
        cur.execute("SET exec_mem_limit = 2048")
        try:
            cur.execute("SELECT k, count(*) FROM f GROUP BY k")
            raise AssertionError("the memory limit was not enforced")
        except Exception as e:  # noqa: BLE001 - pymysql raises OperationalError subclasses
            code, message = e.args[0], e.args[1]
        cur.execute("SET exec_mem_limit = 2147483648")
        assert code == 1105 and "Memory limit exceeded" in message
        cur.execute("SELECT count(*) FROM f JOIN [shuffle] d ON f.k = d.k")
        assert cur.fetchone()[0] == ROWS // 5


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("Threads:")))


def test_limit_stops_every_instance(server, db_conn) -> None:
    """LIMIT ends the query early: the instances still producing are halted and joined, so
    the server's thread count returns to where it was."""
    with db_conn.cursor() as cur:
        _setup(cur)
        cur.execute("SELECT count(*) FROM f")  # warm up worker threads the server keeps
        cur.fetchall()
        before = _threads(server.proc.pid)
        for _ in range(20):
            cur.execute("SELECT f.k, d.name FROM f JOIN [shuffle] d ON f.k = d.k LIMIT 3")
            assert len(cur.fetchall()) == 3
            cur.execute("SELECT k, v FROM f LIMIT 2")
            assert len(cur.fetchall()) == 2
    deadline = time.monotonic() + 10
    while _threads(server.proc.pid) > before + 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # polling the thread count until halted instances are joined
    assert _threads(server.proc.pid) <= before + 2


def test_limit_over_a_join_fragment_does_not_wait_for_query_timeout(db_conn) -> None:
    """Found by the SQL fuzzer (tests/fuzz): a LIMIT above a shuffled RIGHT / RIGHT ANTI join
    halted the scan senders before their end-of-stream mark, and the join instances kept
    waiting for it until query_timeout ended the query (then returned its rows as if nothing
    happened). Every such query must finish at once."""
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE u (k INT, b BIGINT) UNIQUE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 4")
        cur.execute("INSERT INTO u VALUES (0, 0), (1, 1), (2, 5), (3, NULL), (NULL, 7), "
                    "(5, 2), (6, 11)")
        cur.execute("SET shaledb_small_fragment_rows = 0")  # instances even for 7 rows
        cur.execute("SET query_timeout = 60")
        for sql, rows in (
                ("SELECT b.k FROM u a RIGHT JOIN u b ON a.k = b.b LIMIT 0", 0),
                ("SELECT b.k FROM u a RIGHT ANTI JOIN u b ON a.k = b.b LIMIT 0", 0),
                ("SELECT b.k FROM u a RIGHT JOIN u b ON a.k = b.b LIMIT 1", 1),
                (("SELECT count(*) FROM u a RIGHT ANTI JOIN u b ON a.k = b.b "
                 "ORDER BY 1 LIMIT 0 OFFSET 1"), 0)):
            for _ in range(10):  # the hang depended on thread timing
                start = time.monotonic()
                cur.execute(sql)
                assert len(cur.fetchall()) == rows
                assert time.monotonic() - start < 10, f"waited for query_timeout: {sql}"
