"""Short-circuit point lookups (server/point_query.py) over the MySQL protocol.

Random `SELECT cols FROM t WHERE col = literal [AND ..]` statements (DUPLICATE, UNIQUE and
AGGREGATE tables, a range-partitioned table distributed by a string column; NULLs, empty
strings, unicode and quotes in the data; literals no row holds, negative and out-of-range
integers, literals of the other kind) give the same rows and column metadata with the fast path
as with `SET enable_short_circuit_query = false`, and DuckDB's rows on the DUPLICATE table; the
server's `shaledb_point_query_fast_path_total` counter proves the fast path answered. Between
executions of a learned shape, loads, DDL (DROP/CREATE, ADD ROLLUP), a changed current database
and a REVOKE are seen at once.
"""

from __future__ import annotations

import random

import duckdb
import mysql.connector
import pymysql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.alter_jobs import wait_alter_job
from support.http import scrape_metrics
from support.names import unique_db_name

S_POOL = ["a", "", "it's", "日本", "naïve", "🙂", "b b", "zz"]
K_POOL = list(range(-20, 80))
TABLES = {
    "dup": """CREATE TABLE dup (k INT NOT NULL, s VARCHAR(20) NOT NULL, v VARCHAR(50), n BIGINT)
              DUPLICATE KEY(k, s) DISTRIBUTED BY HASH(k) BUCKETS 3""",
    "uniq": """CREATE TABLE uniq (k INT NOT NULL, s VARCHAR(20) NOT NULL, v VARCHAR(50), n BIGINT)
               UNIQUE KEY(k, s) DISTRIBUTED BY HASH(k, s) BUCKETS 4""",
    "agg": """CREATE TABLE agg (k INT NOT NULL, s VARCHAR(20) NOT NULL, n BIGINT SUM)
              AGGREGATE KEY(k, s) DISTRIBUTED BY HASH(k) BUCKETS 2""",
    "part": """CREATE TABLE part (k INT NOT NULL, s VARCHAR(20) NOT NULL, v VARCHAR(50), n BIGINT)
               DUPLICATE KEY(k, s)
               PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN ("0"),
                 PARTITION p2 VALUES LESS THAN ("40"), PARTITION p3 VALUES LESS THAN MAXVALUE)
               DISTRIBUTED BY HASH(s) BUCKETS 3""",
}
COLUMNS = {"dup": ["k", "s", "v", "n"], "uniq": ["k", "s", "v", "n"], "agg": ["k", "s", "n"],
           "part": ["k", "s", "v", "n"]}


def _lit(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def _rows(seed: int, count: int, with_v: bool = True) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        row: list[object] = [rng.choice(K_POOL), rng.choice(S_POOL)]
        if with_v:
            row.append(None if rng.random() < 0.2 else rng.choice(S_POOL + ["x" * 30]))
        row.append(None if rng.random() < 0.2 else rng.randint(-(1 << 40), 1 << 40))
        out.append(tuple(row))
    return out


@pytest.fixture(scope="module")
def data(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("point_query")
    batches = {t: [_rows(hash((t, b)) & 0xFFFF, 150, t != "agg") for b in range(3)]
               for t in TABLES}
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"USE {db}")
        for name, ddl in TABLES.items():
            cur.execute(ddl)
            for rows in batches[name]:  # three loads: three rowsets per tablet
                cur.execute(f"INSERT INTO {name} VALUES " + ", ".join(
                    "(" + ", ".join(_lit(v) for v in r) + ")" for r in rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE dup (k INTEGER, s VARCHAR, v VARCHAR, n BIGINT)")
    duck.executemany("INSERT INTO dup VALUES (?, ?, ?, ?)",
                     [r for rows in batches["dup"] for r in rows])
    fast = server.connect(db)
    slow = server.connect(db)
    with slow.cursor() as cur:
        cur.execute("SET enable_short_circuit_query = false")
    yield db, fast, slow, duck
    fast.close()
    slow.close()
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {db}")


def _fast_count(server) -> int:  # type: ignore[no-untyped-def]
    return int(scrape_metrics(server.http_port)["shaledb_point_query_fast_path_total"])


def _query(conn, sql: str) -> tuple[object, list[tuple[object, ...]]]:
    with conn.cursor() as cur:
        try:
            cur.execute(sql)
        except pymysql.err.MySQLError as e:
            return ("error", e.args[0]), []
        return cur.description, sorted(cur.fetchall(), key=repr)


VALUES = st.one_of(st.sampled_from(K_POOL), st.sampled_from([-2147483648, 2147483647,
                                                             3000000000, -99, 1000]),
                   st.sampled_from(S_POOL + ["nope", "日"]))


@st.composite
def point_queries(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from(sorted(TABLES)))
    cols = COLUMNS[table]
    shown = "*" if draw(st.booleans()) else ", ".join(
        draw(st.permutations(cols))[:draw(st.integers(1, len(cols)))])
    where = draw(st.lists(st.sampled_from(cols), min_size=1, max_size=2, unique=True))
    conds = []
    for c in where:
        value = draw(VALUES)
        if draw(st.integers(0, 9)) > 0:  # mostly literals of the column's own kind
            value = draw(st.sampled_from(K_POOL) if c in ("k", "n") else
                         st.sampled_from(S_POOL + ["nope"]))
        conds.append(f"{c} = {_lit(value)}")
    return f"SELECT {shown} FROM {table} WHERE " + " AND ".join(conds)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=point_queries())
def test_fast_path_equals_the_normal_path(data, sql: str) -> None:  # type: ignore[no-untyped-def]
    _db, fast, slow, _duck = data
    first = _query(fast, sql)
    again = _query(fast, sql)  # a learned shape: the template answers
    assert first == again == _query(slow, sql), sql


def test_fast_path_answers_and_matches_duckdb(server, data) -> None:  # type: ignore[no-untyped-def]
    _db, fast, slow, duck = data
    before = _fast_count(server)
    rng = random.Random(5)
    checked = 0
    for _ in range(120):
        k, s = rng.choice(K_POOL + [500]), rng.choice(S_POOL + ["nope"])
        for sql in (f"SELECT k, s, v, n FROM dup WHERE k = {k}",
                    f"SELECT n, v FROM dup WHERE k = {k} AND s = {_lit(s)}",
                    f"SELECT * FROM dup WHERE s = {_lit(s)}"):
            desc, rows = _query(fast, sql)
            assert (desc, rows) == _query(slow, sql), sql
            expected = sorted(duck.execute(sql).fetchall(), key=repr)
            assert rows == [tuple(r) for r in expected], sql
            checked += 1
    # all but the first execution of each of the three shapes ran as short-circuit lookups
    assert _fast_count(server) - before >= checked - 3


def test_loads_and_ddl_between_executions_are_seen(server, make_db) -> None:  # type: ignore[no-untyped-def]
    db = make_db("point_ddl")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT NOT NULL, v VARCHAR(10)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 2")
        cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        sql = "SELECT * FROM t WHERE k = 1"
        for _ in range(3):
            assert _query(c, sql)[1] == [(1, "a")]
        before = _fast_count(server)
        cur.execute("INSERT INTO t VALUES (1, 'c')")  # a new version
        assert _query(c, sql)[1] == [(1, "a"), (1, "c")]
        assert _fast_count(server) == before + 1  # still the template, at the new version
        cur.execute("DROP TABLE t")
        cur.execute("CREATE TABLE t (k INT NOT NULL, w BIGINT, v VARCHAR(10)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 5")
        cur.execute("INSERT INTO t VALUES (1, 10, 'z')")
        desc, rows = _query(c, sql)
        assert rows == [(1, 10, "z")] and [d[0] for d in desc] == ["k", "w", "v"]
        assert _query(c, sql)[1] == [(1, 10, "z")]  # re-learned
        by_v = "SELECT v, k FROM t WHERE v = 'z'"
        assert _query(c, by_v)[1] == [("z", 1)]
        assert _query(c, by_v)[1] == [("z", 1)]  # learned on the base index
        cur.execute("ALTER TABLE t ADD ROLLUP r_v (v, k)")
        # the rollup is a job: wait until it is built
        assert wait_alter_job(cur, "r_v")["State"] == "FINISHED"
        before = _fast_count(server)
        assert _query(c, by_v)[1] == [("z", 1)]
        assert _fast_count(server) == before  # a new index: the template was dropped
        assert _query(c, by_v)[1] == [("z", 1)]
        assert _fast_count(server) == before + 1  # and learned again
        other = make_db("point_ddl_other")  # same text, another current database
        cur.execute(f"CREATE TABLE {other}.t (k INT NOT NULL) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute(f"INSERT INTO {other}.t VALUES (1), (1)")
        cur.execute(f"USE {other}")
        assert _query(c, sql)[1] == [(1,), (1,)]


def test_a_revoke_is_seen_by_a_learned_lookup(server, make_db) -> None:  # type: ignore[no-untyped-def]
    db = make_db("point_priv")
    user = unique_db_name("u")[:20]
    with server.connect(db) as root, root.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT NOT NULL, v INT) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("INSERT INTO t VALUES (1, 2)")
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
        try:
            cur.execute(f"GRANT SELECT_PRIV ON {db}.t TO '{user}'@'%'")
            with pymysql.connect(host="127.0.0.1", port=server.port, user=user, password="pw",
                                 database=db, autocommit=True, ssl_disabled=True) as u:
                for _ in range(3):
                    assert _query(u, "SELECT v FROM t WHERE k = 1")[1] == [(2,)]
                cur.execute(f"REVOKE SELECT_PRIV ON {db}.t FROM '{user}'@'%'")
                assert _query(u, "SELECT v FROM t WHERE k = 1")[0] == ("error", 1142)
        finally:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")


def test_prepared_point_lookups_share_the_template(server, data) -> None:  # type: ignore[no-untyped-def]
    """COM_STMT_EXECUTE (mysql-connector-python's server-side prepared statements): the same
    rows as the text protocol, answered from the point-lookup template."""
    db, _fast, slow, _duck = data
    conn = mysql.connector.connect(host="127.0.0.1", port=server.port, user="root",
                                   password="", database=db, autocommit=True)
    try:
        cur = conn.cursor(prepared=True)
        before = _fast_count(server)
        rng = random.Random(9)
        runs = 0
        for _ in range(40):
            k, s = rng.choice(K_POOL), rng.choice(S_POOL + ["nope"])
            for table in ("dup", "uniq", "part"):
                cur.execute(f"SELECT k, s, v, n FROM {table} WHERE k = %s AND s = %s", (k, s))
                got = sorted((tuple(r) for r in cur.fetchall()), key=repr)
                text = f"SELECT k, s, v, n FROM {table} WHERE k = {k} AND s = {_lit(s)}"
                assert got == _query(slow, text)[1], text
                runs += 1
        assert _fast_count(server) - before >= runs - 3  # the first of each table learns
    finally:
        conn.close()


def test_a_key_too_wide_for_a_lookup_is_scanned_by_the_template(server, make_db) -> None:  # type: ignore[no-untyped-def]
    """More rows of one key in a tablet than storage/point_lookup.py serves (MAX_LOOKUP_ROWS):
    the learned template reads that tablet by a scan on a worker thread; same rows as the
    normal path, and the fast path still answered (the counter); a narrow key of the same
    table is a lookup again."""
    db = make_db("point_wide")
    wide = 4200
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE w (k INT NOT NULL, n INT) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 2")
        cur.execute("INSERT INTO w VALUES " + ", ".join(f"(7, {i})" for i in range(wide))
                    + ", (8, -1), (9, -2)")
        for k, want in ((7, [(7, i) for i in range(wide)]), (8, [(8, -1)]), (9, [(9, -2)])):
            sql = f"SELECT k, n FROM w WHERE k = {k}"
            _query(c, sql)  # learned (or already learned) for this shape
            before = _fast_count(server)
            assert _query(c, sql)[1] == sorted(want, key=repr)
            assert _fast_count(server) == before + 1
        cur.execute("SET enable_short_circuit_query = false")
        assert len(_query(c, "SELECT k, n FROM w WHERE k = 7")[1]) == wide
