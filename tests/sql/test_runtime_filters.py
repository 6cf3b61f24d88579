"""Runtime filters and the page cache through the wire: a filtered dimension's join keys prune
the fact table's scan (SHOW QUERY PROFILE counters), results equal `runtime_filter_mode = OFF`
and DuckDB for every join kind (the kinds that must keep unmatched probe rows get no filter),
and a repeated query is served from the storage page cache."""

from __future__ import annotations

import random

import duckdb
import pytest
from support.duck import insert_rows
from support.names import unique_db_name
from support.runtime_filter_checks import sorted_rows
from test_query_profile import _profile


@pytest.fixture(scope="module")
def star(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("runtime_filters")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rng = random.Random(11)
    fact = [(d, rng.randint(0, 60), rng.choice([None, rng.randint(1, 9)]), rng.randint(1, 100))
            for d in range(20000) for _ in range(1)]
    dims = [(k, f"n{k % 7}", 1990 + k % 10) for k in range(0, 60, 1)]
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE fact (f_date INT NOT NULL, f_dim INT NOT NULL, f_opt INT, "
                    "v INT NOT NULL) DUPLICATE KEY(f_date) DISTRIBUTED BY HASH(v) BUCKETS 3")
        cur.execute("CREATE TABLE dim (k INT NOT NULL, name VARCHAR(8), year INT) "
                    "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")
        for start in range(0, len(fact), 5000):
            cur.execute("INSERT INTO fact VALUES " + ", ".join(
                f"({a}, {b}, {'NULL' if c is None else c}, {v})"
                for a, b, c, v in fact[start:start + 5000]))
        cur.execute("INSERT INTO dim VALUES " + ", ".join(f"({k}, '{n}', {y})"
                                                        for k, n, y in dims))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE fact (f_date INT, f_dim INT, f_opt INT, v INT)")
    insert_rows(duck, "fact", fact)
    duck.execute("CREATE TABLE dim (k INT, name VARCHAR, year INT)")
    insert_rows(duck, "dim", dims)
    yield conn, duck
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


def _rows(cur, sql: str) -> list[tuple]:
    cur.execute(sql)
    return sorted_rows(cur.fetchall())


def test_dimension_filter_prunes_fact_scan(star) -> None:  # type: ignore[no-untyped-def]
    conn, duck = star
    sql = ("SELECT d.year, count(*), sum(v) FROM fact JOIN dim d ON f_date = d.k "
           "WHERE d.name = 'n3' GROUP BY d.year")
    with conn.cursor() as cur:
        cur.execute("SET enable_profile = true")
        on = _rows(cur, sql)
        p_on = _profile(cur)
        cur.execute("SET runtime_filter_mode = 'OFF'")
        off = _rows(cur, sql)
        p_off = _profile(cur)
        cur.execute("SET runtime_filter_mode = 'GLOBAL'")
    assert on == off == sorted_rows(duck.execute(sql).fetchall())
    # f_date is fact's sort key: the key range [min, max] of the 9 dimension keys cuts the
    # scan through the short-key index, and the key set removes the rest before `v` is read
    assert p_on["RowsReturned"] < p_off["RowsReturned"] / 100
    assert p_on["RowsKeyRangeFiltered"] + p_on["RowsStatsFiltered"] > 15000


JOINS = [
    "SELECT f_dim, name, v FROM fact JOIN dim ON f_dim = k WHERE year = 1993",
    "SELECT f_dim, name, v FROM fact LEFT JOIN dim ON f_dim = k AND year = 1993 WHERE v < 5",
    "SELECT k, f_dim FROM fact RIGHT JOIN dim ON f_dim = k AND v = 7 WHERE year > 1997",
    "SELECT k, f_dim FROM fact FULL OUTER JOIN dim ON f_dim = k AND v = 7 AND year = 1991",
    "SELECT f_dim, v FROM fact WHERE f_dim IN (SELECT k FROM dim WHERE year = 1995)",
    "SELECT count(*) FROM fact WHERE f_dim NOT IN (SELECT k FROM dim WHERE year = 1995)",
    "SELECT count(*) FROM fact WHERE NOT EXISTS (SELECT 1 FROM dim WHERE k = f_dim "
    "AND year < 1993)",
    "SELECT k FROM dim WHERE EXISTS (SELECT 1 FROM fact WHERE f_dim = k AND v = 3)",
    "SELECT count(*), sum(v) FROM fact JOIN dim ON f_opt = k WHERE name = 'n2'",
    "SELECT count(*) FROM fact a JOIN fact b ON a.f_date = b.f_date JOIN dim ON a.f_dim = k "
    "WHERE b.v = 3 AND year = 1990",
]


@pytest.mark.parametrize("sql", JOINS)
def test_every_join_kind_same_rows_with_and_without_filters(star, sql: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = star
    with conn.cursor() as cur:
        on = _rows(cur, sql)
        cur.execute("SET runtime_filter_mode = 'OFF'")
        off = _rows(cur, sql)
        cur.execute("SET runtime_filter_mode = 'GLOBAL'")
    assert on == off
    assert on == sorted_rows(duck.execute(sql).fetchall())


def test_repeated_scan_is_served_by_the_page_cache(star) -> None:  # type: ignore[no-untyped-def]
    conn, _ = star
    with conn.cursor() as cur:
        cur.execute("SET enable_profile = true")
        first = _rows(cur, "SELECT sum(v), max(f_opt) FROM fact WHERE f_dim > 3")
        _profile(cur)
        second = _rows(cur, "SELECT sum(v), max(f_opt) FROM fact WHERE f_dim > 3")
        p = _profile(cur)
    assert first == second
    assert p["CachedPagesNum"] > 0 and p["CachedPagesNum"] == p["TotalPagesNum"] - \
        p["PagesFilteredByZoneMap"]


def test_disable_join_reorder_keeps_from_order_with_same_rows(star) -> None:  # type: ignore[no-untyped-def]
    conn, duck = star
    sql = ("SELECT d1.year, count(*) FROM dim d1, dim d2, fact "
           "WHERE f_dim = d1.k AND f_opt = d2.k AND d2.name = 'n1' GROUP BY d1.year")
    with conn.cursor() as cur:
        reordered = _rows(cur, sql)
        cur.execute("SET disable_join_reorder = true")
        cur.execute("SELECT @@disable_join_reorder")
        assert cur.fetchone()[0] == 1
        as_written = _rows(cur, sql)
        cur.execute("SET disable_join_reorder = false")
    assert reordered == as_written == sorted_rows(duck.execute(sql).fetchall())
