"""Decorrelated subqueries (issue 17 point 5) return DuckDB's rows and are planned Doris' way.

Two tables over the wire: a small outer `o` and a bigger inner `i`, both with NULL and
duplicate correlation keys, groups whose aggregated column is all NULL, and outer keys with no
inner group at all (the empty groups of correlated aggregates). Every query runs in ShaleDB
and in DuckDB over the same rows and must return the same multiset. The plan assertions check
the rewrites themselves: EXISTS / NOT EXISTS with the outer side smaller become RIGHT SEMI /
RIGHT ANTI joins (outer side built, runtime filter into the subquery's scan); a correlated
scalar aggregate under a null-rejecting comparison becomes an INNER join on its grouped
correlation keys, with the comparison as the join's other predicate and a runtime filter
through the aggregate; COUNT (0 over an empty group) and non-null-rejecting uses keep the LEFT
join; an uncorrelated scalar comparison becomes a nested-loop INNER join.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import duckdb
import pymysql
import pytest
from conftest import unique_db_name
from support.duck import insert_rows
from support.rows import normalize_rows

SEED = 1717


def _rows(rng: random.Random, n: int, keys: int) -> list[tuple]:
    out = []
    for _ in range(n):
        k = None if rng.random() < 0.12 else rng.randrange(keys)
        g = None if rng.random() < 0.1 else rng.randrange(3)
        v = None if rng.random() < 0.15 else rng.randrange(-5, 60)
        out.append((k, g, v))
    return out


def _data() -> tuple[list[tuple], list[tuple]]:
    rng = random.Random(SEED)
    outer = _rows(rng, 14, 12)  # keys 0..11: some have no inner rows (empty groups)
    inner = _rows(rng, 90, 8)
    inner += [(3, 1, None), (3, 1, None)]  # key 3 / group 1: aggregated column all NULL
    outer += [(3, 1, 7), (3, 1, 7), (None, None, None)]  # duplicates and an all-NULL row
    return outer, inner


@pytest.fixture(scope="module")
def setup(server) -> Iterator[tuple[pymysql.connections.Connection, duckdb.DuckDBPyConnection]]:
    outer, inner = _data()
    name = unique_db_name("decorrelation")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    conn = server.connect(name)
    duck = duckdb.connect()
    try:
        with conn.cursor() as cur:
            for table, rows, buckets in (("o", outer, 2), ("i", inner, 3)):
                cur.execute(f"CREATE TABLE {table} (k INT, g INT, v INT) DUPLICATE KEY(k) "
                            f"DISTRIBUTED BY HASH(k) BUCKETS {buckets}")
                cur.execute(f"INSERT INTO {table} VALUES " + ", ".join(
                    "(" + ", ".join("NULL" if x is None else str(x) for x in r) + ")"
                    for r in rows))
                duck.execute(f"CREATE TABLE {table} (k INTEGER, g INTEGER, v INTEGER)")
                insert_rows(duck, table, rows)
        yield conn, duck
    finally:
        conn.close()
        with server.connect() as c, c.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


def _shale(conn: pymysql.connections.Connection, sql: str) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _explain(conn: pymysql.connections.Connection, sql: str) -> str:
    return "\n".join(r[0] for r in _shale(conn, "EXPLAIN " + sql))


QUERIES = {
    # IN / EXISTS: NULL keys never match; NOT IN over a set with NULL keeps nothing
    "exists": "SELECT k, v FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k)",
    "not_exists": "SELECT k, v FROM o WHERE NOT EXISTS (SELECT * FROM i WHERE i.k = o.k)",
    "exists_residual": "SELECT k, v FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k "
                       "AND i.v > o.v)",
    "not_exists_residual": "SELECT k, v FROM o WHERE NOT EXISTS (SELECT 1 FROM i "
                           "WHERE i.k = o.k AND i.g = o.g AND i.v < o.v)",
    "in": "SELECT k, v FROM o WHERE k IN (SELECT k FROM i WHERE v > 10)",
    "not_in_with_null": "SELECT k, v FROM o WHERE k NOT IN (SELECT k FROM i)",
    "not_in": "SELECT k, v FROM o WHERE k NOT IN (SELECT k FROM i WHERE k IS NOT NULL)",
    "exists_big_outer": "SELECT k, v FROM i WHERE EXISTS (SELECT 1 FROM o WHERE o.k = i.k)",
    "not_exists_big_outer": "SELECT k, v FROM i WHERE NOT EXISTS (SELECT 1 FROM o "
                            "WHERE o.k = i.k)",
    # correlated scalar aggregates: empty groups (NULL), all-NULL groups, duplicates
    "scalar_avg": "SELECT k, v FROM o WHERE v > (SELECT avg(v) FROM i WHERE i.k = o.k)",
    "scalar_sum_expr": "SELECT k, v FROM o WHERE v * 2 < (SELECT 0.5 * sum(v) FROM i "
                       "WHERE i.k = o.k AND i.g = o.g)",
    "scalar_max_eq": "SELECT k, g FROM o WHERE v <= (SELECT max(v) FROM i WHERE i.g = o.g "
                     "AND i.v < 40)",
    "scalar_min_on_left": "SELECT k FROM o WHERE (SELECT min(v) FROM i WHERE i.k = o.k) < v",
    "scalar_count": "SELECT k, v FROM o WHERE v > (SELECT count(*) FROM i WHERE i.k = o.k)",
    "scalar_count_col": "SELECT k, v FROM o WHERE 3 > (SELECT count(v) FROM i "
                        "WHERE i.k = o.k)",
    "scalar_coalesce": "SELECT k, v FROM o WHERE v > coalesce((SELECT sum(v) FROM i "
                       "WHERE i.k = o.k), -100)",
    "scalar_or": "SELECT k, v FROM o WHERE v > (SELECT avg(v) FROM i WHERE i.k = o.k) "
                 "OR v IS NULL",
    "scalar_null_safe": "SELECT k, v FROM o WHERE v <=> (SELECT max(v) FROM i WHERE i.k = o.k)",
    # uncorrelated scalar comparisons: a value, and an empty subquery (NULL: no row passes)
    "uncorrelated": "SELECT k, v FROM o WHERE v > (SELECT avg(v) FROM i WHERE v > 0)",
    "uncorrelated_null": "SELECT k, v FROM o WHERE v > (SELECT max(v) FROM i WHERE v > 1000)",
    "uncorrelated_no_row": "SELECT k, v FROM o WHERE v = (SELECT v FROM i WHERE v = -1000)",
    # TPC-H shapes over these tables
    "q17_like": "SELECT sum(i.v) FROM i, o WHERE o.k = i.k AND o.g = 1 "
                "AND i.v < (SELECT 1.2 * avg(v) FROM i i2 WHERE i2.k = o.k)",
    "q20_like": "SELECT k FROM o WHERE k IN (SELECT k FROM i WHERE g IN (SELECT g FROM o "
                "WHERE v > 0) AND v > (SELECT 0.5 * sum(v) FROM o o2 WHERE o2.k = i.k "
                "AND o2.g = i.g))",
    "q22_like": "SELECT g, count(*), sum(v) FROM o WHERE v > (SELECT avg(v) FROM o "
                "WHERE v > 0) AND NOT EXISTS (SELECT 1 FROM i WHERE i.k = o.k) GROUP BY g",
    "q4_like": "SELECT g, count(*) FROM o WHERE v > 0 AND EXISTS (SELECT * FROM i "
               "WHERE i.k = o.k AND i.g < i.v) GROUP BY g",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_same_rows_as_duckdb(setup, name: str) -> None:
    conn, duck = setup
    sql = QUERIES[name]
    duck_sql = sql.replace("<=>", "IS NOT DISTINCT FROM")
    assert normalize_rows(_shale(conn, sql)) == normalize_rows(duck.execute(duck_sql).fetchall())


def test_uncorrelated_scalar_with_two_rows_still_errors(setup) -> None:
    conn, _ = setup
    with pytest.raises(pymysql.err.OperationalError) as err:
        _shale(conn, "SELECT k FROM o WHERE v > (SELECT v FROM i WHERE v > 0)")
    assert err.value.args[0] == 1105
    assert "Expected EQ 1 to be returned by expression" in err.value.args[1]


def test_semi_and_anti_joins_build_on_the_smaller_side(setup) -> None:
    conn, _ = setup
    assert "RIGHT SEMI JOIN" in _explain(conn, QUERIES["exists"])
    plan = _explain(conn, QUERIES["not_exists"])
    assert "RIGHT ANTI JOIN" in plan
    assert "runtime filters: RF000" in plan  # the outer keys filter the subquery's scan
    assert "RIGHT ANTI JOIN" in _explain(conn, QUERIES["not_exists_residual"])
    # the outer side is the bigger one: the subquery stays the build side
    assert "LEFT SEMI JOIN" in _explain(conn, QUERIES["exists_big_outer"])
    assert "LEFT ANTI JOIN" in _explain(conn, QUERIES["not_exists_big_outer"])
    # NOT IN keeps its null-aware mark join
    assert "RIGHT" not in _explain(conn, QUERIES["not_in_with_null"])


def test_null_rejected_scalar_aggregates_are_inner_joins(setup) -> None:
    conn, _ = setup
    for name in ("scalar_avg", "scalar_sum_expr", "scalar_min_on_left", "q17_like"):
        plan = _explain(conn, QUERIES[name])
        assert "INNER JOIN" in plan and "LEFT OUTER JOIN" not in plan, name
        assert "other join predicates" in plan, name
    # COUNT is 0 over an empty group, coalesce / OR / <=> do not reject NULL: LEFT join kept
    for name in ("scalar_count", "scalar_count_col", "scalar_coalesce", "scalar_or",
                 "scalar_null_safe"):
        assert "LEFT OUTER JOIN" in _explain(conn, QUERIES[name]), name
    plan = _explain(conn, QUERIES["uncorrelated"])
    assert "NESTED LOOP JOIN" in plan and "INNER JOIN" in plan
    assert "LEFT OUTER JOIN" not in plan


def test_runtime_filter_reaches_the_scan_under_the_aggregate(setup) -> None:
    conn, _ = setup
    plan = _explain(conn, QUERIES["q17_like"])
    lines = plan.splitlines()
    # the correlated aggregate's scan of `i` sits right under the aggregate and is filtered
    agg = next(n for n, line in enumerate(lines) if "output: avg(" in line)
    scan = next(n for n in range(agg, len(lines)) if "VOlapScanNode" in lines[n])
    assert any("runtime filters: RF" in line and "-> k" in line
               for line in lines[scan:scan + 4]), plan


def test_min_max_over_a_joined_relation_is_a_window(setup) -> None:
    """TPC-H Q15's shape: the CTE's aggregate is planned (and computed) once."""
    conn, duck = setup
    cte = "WITH r AS (SELECT k, sum(v) AS t FROM i WHERE v > {lo} GROUP BY k) "
    for lo, fn in ((0, "max"), (10, "min"), (1000, "max")):  # 1000: the CTE is empty
        sql = cte.format(lo=lo) + (f"SELECT o.k, o.v, r.t FROM o, r WHERE o.k = r.k "
                                   f"AND r.t = (SELECT {fn}(t) FROM r)")
        assert normalize_rows(_shale(conn, sql)) == normalize_rows(duck.execute(sql).fetchall())
        plan = _explain(conn, sql)
        assert "VANALYTIC-EVAL" in plan and plan.count("VOlapScanNode") == 2, plan
    # a subquery that filters the CTE again is not the same relation: planned as a join
    sql = cte.format(lo=0) + ("SELECT o.k, r.t FROM o, r WHERE o.k = r.k "
                              "AND r.t > (SELECT avg(t) FROM r WHERE t < 100)")
    assert normalize_rows(_shale(conn, sql)) == normalize_rows(duck.execute(sql).fetchall())
    assert "VANALYTIC-EVAL" not in _explain(conn, sql)
