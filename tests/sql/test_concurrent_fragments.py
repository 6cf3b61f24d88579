"""The process-wide CPU pool (executor/cpu_pool.py) cannot deadlock: 16 concurrent queries with
multi-fragment plans (shuffle and broadcast joins, two-phase aggregates, TOP-N), whose
instances wait on each other through exchanges, all finish with DuckDB's rows on a server
sized as a 4-core machine (4 instances per fragment) but given only 2 CPU slots; and with
`parallel_fragment_exec_instance_num = 1` every fragment is one instance, whatever the backends."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import duckdb
import pytest
from support.duck import insert_rows
from support.server import ServerProcess

ROWS = 24_000
QUERIES = (
    "SELECT f.g, count(*), sum(f.v) FROM f JOIN [shuffle] d ON f.k = d.k GROUP BY f.g",
    "SELECT d.name, count(*), sum(f.v) FROM f JOIN [broadcast] d ON f.k = d.k GROUP BY d.name",
    "SELECT g, count(*), sum(v), max(k) FROM f GROUP BY g",
    "SELECT count(*) FROM f a JOIN [shuffle] f b ON a.k = b.v",
)


@pytest.fixture(scope="module")
def small_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("cpu-pool"), backends=3,
                       env={"SHALEDB_CORES": "4", "SHALEDB_CPU_POOL_SLOTS": "2"}) as srv:
        yield srv


def _instances(cur) -> int:  # type: ignore[no-untyped-def]
    """Instances the latest query ran, over all fragments (its profile)."""
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    return sum(int(v.split(",")[0].split(": ")[1]) for k, v in cur.fetchall()
               if k.startswith("Fragment") and " / " not in k and v.startswith("Instances: "))


@pytest.fixture(scope="module")
def want(small_pool) -> dict[str, list[tuple[object, ...]]]:  # type: ignore[no-untyped-def]
    """Database `pool` with tables f and d; DuckDB's rows for each of QUERIES."""
    with small_pool.connect() as c, c.cursor() as cur:
        cur.execute("CREATE DATABASE pool")
        cur.execute("USE pool")
        cur.execute("CREATE TABLE f (k INT, g INT, v BIGINT) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 8")
        cur.execute("CREATE TABLE d (k INT, name VARCHAR(8)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(name) BUCKETS 4")
        f_rows = [(i, i % 13, i * 7 % 24_001) for i in range(ROWS)]
        d_rows = [(i, f"n{i % 17}") for i in range(0, ROWS, 3)]
        cur.execute("INSERT INTO f VALUES " + ", ".join(f"({a}, {b}, {c})" for a, b, c in f_rows))
        cur.execute("INSERT INTO d VALUES " + ", ".join(f"({a}, '{b}')" for a, b in d_rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE f (k INT, g INT, v BIGINT)")
    duck.execute("CREATE TABLE d (k INT, name VARCHAR)")
    insert_rows(duck, "f", f_rows)
    insert_rows(duck, "d", d_rows)
    return {sql: sorted(duck.execute(sql.replace("[shuffle] ", "").replace("[broadcast] ", ""))
                        .fetchall()) for sql in QUERIES}


def _norm(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [tuple(int(x) if isinstance(x, (int, str)) and str(x).lstrip("-").isdigit()
                  else x for x in r) for r in sorted(tuple(r) for r in rows)]


def test_one_instance_per_fragment_when_parallelism_is_one(small_pool, want) -> None:
    """`parallel_fragment_exec_instance_num = 1`: every fragment one instance, whatever the
    backends (3 here) and rows: the plan runs inline, as before fragments existed."""
    with small_pool.connect("pool") as c, c.cursor() as cur:
        cur.execute("SET shaledb_small_fragment_rows = 1000")
        cur.execute("SET parallel_fragment_exec_instance_num = 1")
        cur.execute("SET enable_profile = true")
        for sql in QUERIES:
            cur.execute(sql)
            assert _norm(list(cur.fetchall())) == want[sql], sql
            cur.execute('SHOW QUERY PROFILE "/"')
            latest = cur.fetchone()[0]
            cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
            counts = [v for k, v in cur.fetchall()
                      if k.startswith("Fragment") and " / " not in k
                      and v.startswith("Instances: ")]
            assert counts and all(v.startswith("Instances: 1,") for v in counts), (sql, counts)


def test_sixteen_concurrent_multi_fragment_queries_finish_on_two_slots(small_pool, want) -> None:
    with small_pool.connect("pool") as c, c.cursor() as cur:
        # every query of the test runs several instances per fragment: more than the slots
        cur.execute("SET shaledb_small_fragment_rows = 1000")
        cur.execute("SET enable_profile = true")
        for sql in QUERIES:
            cur.execute(sql)
            assert _instances(cur) > 4, sql  # more than twice the slots

    results: dict[int, list[tuple[str, list[tuple[object, ...]]]]] = {}
    errors: list[BaseException] = []

    def client(i: int) -> None:
        try:
            with small_pool.connect("pool") as c, c.cursor() as cur:
                cur.execute("SET query_timeout = 60")
                cur.execute("SET shaledb_small_fragment_rows = 1000")
                got = []
                for j in range(len(QUERIES)):
                    sql = QUERIES[(i + j) % len(QUERIES)]  # a different mix at each moment
                    cur.execute(sql)
                    got.append((sql, list(cur.fetchall())))
                results[i] = got
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a query never finished: deadlock"
    assert not errors, errors
    assert len(results) == 16
    for got in results.values():
        for sql, rows in got:
            assert _norm(rows) == want[sql], sql
