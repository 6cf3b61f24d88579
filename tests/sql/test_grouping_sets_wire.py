"""GROUP BY ROLLUP / CUBE / GROUPING SETS / WITH ROLLUP, GROUPING() and GROUPING_ID() over the
MySQL protocol, compared with DuckDB on the same rows (NULLs in the keys, so a rolled-up NULL
and a stored NULL both appear), plus ORDER BY / HAVING / LIMIT over the sets, the result
labels, and the errors (sql/binder/grouping_sets.py)."""

from __future__ import annotations

import random

import duckdb
import pymysql
import pytest
from support.duck import insert_rows
from support.names import scratch_database
from support.rows import normalize_rows

N_ROWS = 3000

QUERIES = [
    "SELECT a, b, sum(v), count(*) FROM t GROUP BY ROLLUP(a, b)",
    "SELECT a, b, c, sum(v) FROM t GROUP BY CUBE(a, b, c)",
    "SELECT a, b, count(v), max(s) FROM t GROUP BY GROUPING SETS ((a, b), (a), (c), ())",
    "SELECT a, b, sum(v) FROM t GROUP BY a, ROLLUP(b, c)",
    ("SELECT a, c, sum(v), GROUPING(a), GROUPING(c), GROUPING_ID(a, c) FROM t "
    "GROUP BY CUBE(a, c)"),
    ("SELECT a, b, sum(v) AS total FROM t WHERE v > 10 GROUP BY ROLLUP(a, b) "
    "HAVING sum(v) > 5000"),
    "SELECT concat_ws('-', a, b) AS ab, count(*) FROM t GROUP BY ROLLUP(a, b)",
    "SELECT a, b + 1, sum(v) FROM t GROUP BY GROUPING SETS ((a, b + 1), (b + 1))",
    "SELECT s, count(DISTINCT a), avg(v) FROM t GROUP BY ROLLUP(s)",
    "SELECT a, b, sum(v) FROM t GROUP BY GROUPING SETS ((a), (a), (b))",  # duplicate sets
    "SELECT a, sum(v) FROM t WHERE v < 0 GROUP BY ROLLUP(a)",  # no input rows: one total row
    ("WITH w AS (SELECT * FROM t WHERE v > 50) SELECT a, b, sum(v), (SELECT max(v) FROM t) "
    "FROM w GROUP BY ROLLUP(a, b)"),
    "SELECT * FROM (SELECT a, sum(v) AS total FROM t GROUP BY ROLLUP(a)) r WHERE total > 0",
    # GROUPING() columns are named like Doris' (GROUPING_PREFIX_<args>): calls whose names
    # would coincide, and one over an expression, must still each get their own values
    ("SELECT a, b, GROUPING(a), GROUPING_ID(a), GROUPING_ID(a, b), GROUPING(b + 1), sum(v) "
    "FROM t GROUP BY GROUPING SETS ((a, b, b + 1), (a), (b + 1), ())"),
    # window functions run over the aggregate's output rows
    ("SELECT a, b, sum(v), rank() OVER (PARTITION BY GROUPING(b) ORDER BY sum(v) DESC) "
     "FROM t GROUP BY ROLLUP(a, b)"),
    ("SELECT a, sum(sum(v)) OVER (), count(*) OVER (PARTITION BY GROUPING(a)) "
     "FROM t GROUP BY CUBE(a)"),
    ("SELECT a, c, max(v), row_number() OVER (PARTITION BY a ORDER BY c, max(v)) "
     "FROM t GROUP BY GROUPING SETS ((a, c), (a)) HAVING max(v) > 10"),
]

# DuckDB spells a few things differently; the rows must be the same
DUCK_SPELLING = {"GROUPING_ID(a, c)": "GROUPING(a, c)", "GROUPING_ID(a, b)": "GROUPING(a, b)",
                 "GROUPING_ID(a)": "GROUPING(a)",
                 # MySQL / Doris order NULL first ascending; DuckDB last
                 "ORDER BY c, max(v))": "ORDER BY c NULLS FIRST, max(v))"}


def _rows(seed: int) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(N_ROWS):
        a = rng.choice(["x", "y", "zz", "", None])
        b = rng.choice([1, 2, 3, None])
        c = rng.choice([10, 20, None])
        s = rng.choice(["p", "q", "r"])
        rows.append((a, b, c, s, rng.randint(-5, 100)))
    return rows


@pytest.fixture(scope="module")
def tables(server):  # type: ignore[no-untyped-def]
    rows = _rows(7)
    with scratch_database(server, "grouping_sets") as db:
        yield db, _load(server, db, rows)


def _load(server, db: str, rows: list[tuple[object, ...]]) -> duckdb.DuckDBPyConnection:  # type: ignore[no-untyped-def]
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE t (a VARCHAR(8), b INT, c INT, s VARCHAR(4), v INT) "
                    "DUPLICATE KEY(a) DISTRIBUTED BY HASH(s) BUCKETS 3 "
                    "PROPERTIES ('replication_num' = '1')")
        for i in range(0, N_ROWS, 1000):
            values = ", ".join(
                "(" + ", ".join("NULL" if x is None else repr(x) for x in r) + ")"
                for r in rows[i:i + 1000])
            cur.execute(f"INSERT INTO t VALUES {values}")
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (a VARCHAR, b INTEGER, c INTEGER, s VARCHAR, v INTEGER)")
    insert_rows(duck, "t", rows)
    return duck


@pytest.mark.parametrize("sql", QUERIES)
def test_same_rows_as_duckdb(server, tables, sql: str) -> None:  # type: ignore[no-untyped-def]
    db, duck = tables
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(sql)
        got = cur.fetchall()
    duck_sql = sql
    for ours, theirs in DUCK_SPELLING.items():
        duck_sql = duck_sql.replace(ours, theirs)
    want = duck.execute(duck_sql).fetchall()
    assert normalize_rows(got) == normalize_rows(want)


def test_order_by_limit_and_labels(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, duck = tables
    sql = ("SELECT a, b AS bee, sum(v) FROM t GROUP BY ROLLUP(a, b) "
           "ORDER BY GROUPING(a), a DESC, bee, sum(v) DESC LIMIT 7")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(sql)
        got = cur.fetchall()
        labels = [d[0] for d in cur.description]
        cur.execute("SELECT a, count(*) FROM t GROUP BY a WITH ROLLUP ORDER BY 2 DESC LIMIT 1")
        total = cur.fetchone()
    assert labels == ["a", "bee", "sum(v)"]
    # MySQL's NULL order: first ascending, last descending
    want = duck.execute(sql.replace("a DESC, bee,", "a DESC NULLS LAST, bee NULLS FIRST,")
                        ).fetchall()
    assert normalize_rows(got) == normalize_rows(want)
    assert [normalize_rows([r]) for r in got] == [normalize_rows([r]) for r in want]
    assert total == (None, N_ROWS)  # the grand total row of WITH ROLLUP


def test_explain_names_grouping_columns_like_doris(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _ = tables
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("EXPLAIN SELECT a, b, GROUPING(a), GROUPING_ID(a, b), sum(v) FROM t "
                    "GROUP BY CUBE(a, b)")
        plan = "\n".join(r[0] for r in cur.fetchall())
    assert "`GROUPING_PREFIX_a`" in plan and "`GROUPING_PREFIX_a_b`" in plan, plan
    assert "__grouping" not in plan


def test_errors(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _ = tables
    with server.connect(db) as c, c.cursor() as cur:
        for sql, text in [
            ("SELECT a, GROUPING(v) FROM t GROUP BY ROLLUP(a)",
             "Column in GROUPING does not exist in GROUP BY clause"),
            ("SELECT a, v FROM t GROUP BY ROLLUP(a)", "must appear in the GROUP BY clause"),
            ("SELECT a FROM t GROUP BY CUBE(a, b, c, s, v, a, b)", "Too many grouping sets"),
        ]:
            with pytest.raises(pymysql.MySQLError) as info:
                cur.execute(sql)
            assert info.value.args[0] == 1105 and text in info.value.args[1], (sql, info.value)


def test_a_materialized_view_refuses_grouping_sets(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _ = tables
    with server.connect(db) as c, c.cursor() as cur:
        with pytest.raises(pymysql.MySQLError) as info:
            cur.execute("CREATE MATERIALIZED VIEW mv_gs AS SELECT a, sum(v) FROM t "
                        "GROUP BY ROLLUP(a)")
        assert "grouping sets clause is not supported in materialized view" in str(info.value)
