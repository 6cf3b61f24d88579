"""INSERT OVERWRITE TABLE t [PARTITION (..) | PARTITION (*)] over the wire.

Rows after an overwrite equal DuckDB running the same SELECT; an overwrite replaces exactly the
target partitions; one failing midway leaves the old rows; a reader running while overwrites
swap two data sets sees one of them whole, never a mix and never an empty table.
"""

from __future__ import annotations

import re
import threading

import duckdb
import pymysql
import pytest
from support.duck import insert_rows
from support.rows import normalize_rows

TABLE = (
    "CREATE TABLE t (dt DATE NOT NULL, k INT NOT NULL, g INT NOT NULL, v BIGINT) "
    "DUPLICATE KEY(dt, k) PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
    "PARTITION p2 VALUES LESS THAN ('2024-03-01'), PARTITION p3 VALUES LESS THAN ('2024-04-01')) "
    "DISTRIBUTED BY HASH(k) BUCKETS 3 ROLLUP (r_g (g, v))"
)
MONTHS = ("2024-01-15", "2024-02-15", "2024-03-15")


def _src_rows(n: int, seed: int) -> list[tuple[str, int, int, int]]:
    return [(MONTHS[i % 3], i, (i * seed) % 5, (i * 7 + seed) % 101) for i in range(n)]


def _values(rows) -> str:
    return ", ".join(f"('{d}', {k}, {g}, {v})" for d, k, g, v in rows)


@pytest.fixture
def setup(server, db_conn):
    """`t` holding 300 rows (old) and `src` holding 200 other rows; DuckDB holds both."""
    cur = db_conn.cursor()
    cur.execute(TABLE)
    cur.execute("CREATE TABLE src (dt DATE NOT NULL, k INT NOT NULL, g INT NOT NULL, v BIGINT) "
                "DUPLICATE KEY(dt, k) DISTRIBUTED BY HASH(k) BUCKETS 2")
    old, new = _src_rows(300, 3), [(d, k + 1000, g, v) for d, k, g, v in _src_rows(200, 7)]
    cur.execute(f"INSERT INTO t VALUES {_values(old)}")
    cur.execute(f"INSERT INTO src VALUES {_values(new)}")
    duck = duckdb.connect()
    for name in ("t", "src"):
        duck.execute(f"CREATE TABLE {name} (dt DATE, k INT, g INT, v BIGINT)")
    insert_rows(duck, "t", old)
    insert_rows(duck, "src", new)
    return db_conn, cur, duck


def _versions(cur) -> dict[str, str]:
    cur.execute("SHOW PARTITIONS FROM t")
    cols = [d[0] for d in cur.description]
    return {r[cols.index("PartitionName")]: r[cols.index("VisibleVersion")]
            for r in cur.fetchall()}


def _same(cur, duck, query: str) -> None:
    cur.execute(query)
    got = cur.fetchall()
    assert normalize_rows(got) == normalize_rows(duck.execute(query).fetchall()), query


def test_overwrite_whole_table_equals_duckdb(setup) -> None:
    conn, cur, duck = setup
    query = "SELECT dt, k, g, v * 2 FROM src WHERE k % 3 <> 0"
    cur.execute(f"INSERT OVERWRITE TABLE t {query}")
    info = conn._result.message.decode(errors="replace")
    assert re.search(r"\{'label':'insert_\w+', 'status':'VISIBLE', 'txnId':'\d+'\}$", info)
    duck.execute(f"DELETE FROM t; INSERT INTO t {query}")
    assert cur.rowcount == duck.execute("SELECT count(*) FROM t").fetchone()[0]
    _same(cur, duck, "SELECT dt, k, g, v FROM t")
    _same(cur, duck, "SELECT g, sum(v) FROM t GROUP BY g")  # the rollup holds the new rows too
    assert _versions(cur) == {"p1": "3", "p2": "3", "p3": "3"}  # create 1, load 2, overwrite 3
    # VALUES and a column list; columns left out take their default
    cur.execute("INSERT OVERWRITE TABLE t (dt, k, g) VALUES ('2024-01-02', 1, 1)")
    cur.execute("SELECT dt, k, g, v FROM t")
    assert [(str(r[0]), r[1], r[2], r[3]) for r in cur.fetchall()] == [("2024-01-02", 1, 1, None)]
    # reading the table being overwritten: the query sees the old rows
    cur.execute("INSERT INTO t SELECT * FROM src")
    cur.execute("INSERT OVERWRITE TABLE t SELECT dt, k, g, v FROM t WHERE k % 2 = 0")
    duck.execute("DELETE FROM t; INSERT INTO t SELECT * FROM src WHERE k % 2 = 0")
    _same(cur, duck, "SELECT dt, k, g, v FROM t")
    # overwriting with nothing leaves an empty table
    cur.execute("INSERT OVERWRITE TABLE t SELECT * FROM src WHERE k < 0")
    cur.execute("SELECT count(*) FROM t")
    assert cur.fetchone()[0] == 0


def test_overwrite_named_partitions_keeps_the_others(setup) -> None:
    conn, cur, duck = setup
    query = "SELECT dt, k, g, v FROM src WHERE dt < '2024-03-01'"
    cur.execute(f"INSERT OVERWRITE TABLE t PARTITION (p1, p2) {query}")
    duck.execute(f"DELETE FROM t WHERE dt < '2024-03-01'; INSERT INTO t {query}")
    _same(cur, duck, "SELECT dt, k, g, v FROM t")
    assert _versions(cur) == {"p1": "3", "p2": "3", "p3": "2"}
    # a row outside the named partitions fails the statement (strict): nothing changes
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("INSERT OVERWRITE TABLE t PARTITION (p1) SELECT * FROM src")
    assert "Insert has filtered data in strict mode" in e.value.args[1]
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("INSERT OVERWRITE TABLE t PARTITION (nosuch) SELECT * FROM src")
    assert "Unknown partition 'nosuch'" in e.value.args[1]
    _same(cur, duck, "SELECT dt, k, g, v FROM t")
    # non-strict: the rows for other partitions are filtered, p1 alone is replaced
    cur.execute("SET enable_insert_strict = false")
    cur.execute("INSERT OVERWRITE TABLE t PARTITION (p1) SELECT * FROM src")
    assert conn._result.warning_count > 0
    duck.execute("DELETE FROM t WHERE dt < '2024-02-01'; "
                 "INSERT INTO t SELECT * FROM src WHERE dt < '2024-02-01'")
    _same(cur, duck, "SELECT dt, k, g, v FROM t")


def test_overwrite_partition_star_replaces_the_partitions_written(setup) -> None:
    _conn, cur, duck = setup
    query = "SELECT dt, k, g, v FROM src WHERE dt >= '2024-02-01' AND dt < '2024-03-01'"
    cur.execute(f"INSERT OVERWRITE TABLE t PARTITION (*) {query}")
    duck.execute("DELETE FROM t WHERE dt >= '2024-02-01' AND dt < '2024-03-01'; "
                 f"INSERT INTO t {query}")
    _same(cur, duck, "SELECT dt, k, g, v FROM t")
    assert _versions(cur) == {"p1": "2", "p2": "3", "p3": "2"}


def test_failing_overwrite_leaves_the_old_rows(setup) -> None:
    _, cur, duck = setup
    # many good rows, then one bad (k NULL) at the end of the query's output
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("INSERT OVERWRITE TABLE t SELECT dt, CASE WHEN k = 1199 THEN NULL ELSE k END, "
                    "g, v FROM src")
    assert "null value for not null column, column=k" in e.value.args[1]
    # a query failing while it runs (BIGINT overflow for k > 1100)
    with pytest.raises(pymysql.err.MySQLError) as e:
        cur.execute("INSERT OVERWRITE TABLE t SELECT dt, k, g, "
                    "CASE WHEN k > 1100 THEN 9223372036854775807 + k ELSE v END FROM src")
    assert e.value.args[0] == 1690
    # a query failing at analysis
    with pytest.raises(pymysql.err.OperationalError):
        cur.execute("INSERT OVERWRITE TABLE t SELECT nosuch FROM src")
    _same(cur, duck, "SELECT dt, k, g, v FROM t")
    _same(cur, duck, "SELECT g, sum(v) FROM t GROUP BY g")
    assert _versions(cur) == {"p1": "2", "p2": "2", "p3": "2"}


def test_concurrent_reader_sees_old_or_new_only(server, setup) -> None:
    conn, cur, _duck = setup
    # two data sets; the overwrites alternate between them
    cur.execute("CREATE TABLE other (dt DATE NOT NULL, k INT NOT NULL, g INT NOT NULL, v BIGINT) "
                "DUPLICATE KEY(dt, k) DISTRIBUTED BY HASH(k) BUCKETS 2")
    cur.execute("INSERT INTO other SELECT dt, k + 5000, g, v + 1 FROM t WHERE k % 2 = 0")
    cur.execute("INSERT INTO other SELECT dt, k + 9000, g, v FROM src")
    state = {}
    for name in ("t", "other"):
        cur.execute(f"SELECT count(*), sum(k), sum(v) FROM {name}")
        state[name] = tuple(int(x) for x in cur.fetchone())
    assert state["t"] != state["other"]
    seen: list[tuple[int, ...]] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def reader() -> None:
        with server.connect(conn.db.decode()) as rconn, rconn.cursor() as rcur:
            while not done.is_set():
                try:
                    rcur.execute("SELECT count(*), sum(k), sum(v) FROM t")
                    seen.append(tuple(int(x) for x in rcur.fetchone()))
                except BaseException as e:  # noqa: BLE001 - reported below
                    errors.append(e)
                    return

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for th in threads:
        th.start()
    try:
        cur.execute("CREATE TABLE keep AS SELECT * FROM t")
        for i in range(6):
            cur.execute(f"INSERT OVERWRITE TABLE t SELECT * FROM {'other' if i % 2 == 0 else 'keep'}")
    finally:
        done.set()
        for th in threads:
            th.join()
    assert not errors, errors
    assert len(seen) > 0
    assert set(seen) <= {state["t"], state["other"]}, set(seen) - {state["t"], state["other"]}
