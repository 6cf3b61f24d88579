"""Property test: a query answered by a sync materialized view equals the same query on the base
index and DuckDB over the same rows.

A DUPLICATE table gets three views (plain keys, an expression key `d DIV 100`, an expression
aggregate `SUM(v1 * v2)`, sum / min / max / count values, count(*) from the count of a NOT NULL
column; one created before any load, two after
the first round so their build converts existing rowsets), random loads with NULLs, empty and
non-ASCII strings (several INSERTs per round, so rowsets merge on read), DELETEs on a key every
view holds, and random aggregate queries (group keys and filters on view keys or not, global
aggregates, HAVING). Each query runs over the wire with the rewrite on and forced off
(`SET disable_nereids_rules = 'MATERIALIZED_INDEX_AGG_SCAN'`); both must equal DuckDB. EXPLAIN
must show that views really answered many queries.

Reproduce a failure with the seed in the assertion message:
`SHALEDB_PROPERTY_SEED=<seed> pytest tests/sql/test_materialized_view_properties.py`.
"""

from __future__ import annotations

import random
import re

import duckdb
import pytest
from support.alter_jobs import wait_alter_job
from support.duck import insert_rows
from support.rows import normalize_rows
from support.seeds import property_seeds

DEFAULT_SEEDS = (11, 2024)
ROUNDS = 3
QUERIES_PER_ROUND = 12
FORCE_BASE = "SET disable_nereids_rules = 'MATERIALIZED_INDEX_AGG_SCAN'"
VIEWS_ON = "SET disable_nereids_rules = ''"
SCAN_RE = re.compile(r"TABLE: [^.\s]+\.(\w+)\((\w+)\)")
STRS = ["a", "b", "", "ü", "zz", "ab"]
VIEWS = {
    "mv_a": "SELECT k2, k1, SUM(v1), MIN(v2), MAX(v3), COUNT(v2) FROM t GROUP BY k2, k1",
    "mv_b": "SELECT d DIV 100, k2, SUM(v1 * v2), COUNT(v1), MAX(v1) FROM t "
            "GROUP BY d DIV 100, k2",
    "mv_c": "SELECT k2, d, SUM(v3), MIN(v1), SUM(v2), COUNT(d) FROM t GROUP BY k2, d",
}
# what each view can answer: group / filter expressions, aggregates
KEYS = {"mv_a": ["k2", "k1"], "mv_b": ["d DIV 100", "k2"], "mv_c": ["k2", "d", "d DIV 100"]}
AGGS = {"mv_a": ["SUM(v1)", "MIN(v2)", "MAX(v3)", "COUNT(v2)", "MAX(k1)", "COUNT(DISTINCT k2)"],
        "mv_b": ["SUM(v1 * v2)", "COUNT(v1)", "MAX(v1)", "MIN(k2)"],
        "mv_c": ["SUM(v3)", "MIN(v1)", "SUM(v2)", "MAX(d)", "COUNT(DISTINCT d DIV 100)",
                 "COUNT(*)"]}


def _row(rnd: random.Random) -> tuple:
    def maybe(v: object) -> object:
        return None if rnd.random() < 0.12 else v

    return (maybe(rnd.randint(-3, 6)), maybe(rnd.choice(STRS)),
            rnd.choice([20230105, 20230117, 20230201, 20231231, 20240101, 20240215]),
            maybe(rnd.randint(-50, 50)), maybe(rnd.randint(-10**6, 10**6)),
            maybe(f"{rnd.randint(-9999, 9999) / 100:.2f}"))


def _values(rows: list[tuple]) -> str:
    def lit(v: object) -> str:
        return "NULL" if v is None else f"'{v}'" if isinstance(v, str) else str(v)

    return ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)


def _filter(rnd: random.Random, key: str) -> str:
    if key == "k2":
        return rnd.choice([f"k2 = '{rnd.choice(STRS)}'", "k2 IN ('a', '', 'ü')", "k2 IS NULL",
                           "k2 >= 'b'"])
    if key == "k1":
        return rnd.choice(["k1 = 2", "k1 IN (1, 3, 5)", "k1 > 0", "k1 IS NOT NULL"])
    if key == "d":
        return rnd.choice(["d >= 20230201", "d = 20240101", "d BETWEEN 20230101 AND 20231231"])
    return rnd.choice(["d DIV 100 = 202302", "d DIV 100 >= 202312", "d DIV 100 IN (202301)"])


def _query(rnd: random.Random) -> tuple[str, str | None]:
    """A random aggregate query and the view it was built for (None: one no view covers)."""
    view = rnd.choice(list(VIEWS))
    keys = KEYS[view]
    groups = rnd.sample(keys, rnd.randint(0, min(2, len(keys))))
    aggs = rnd.sample(AGGS[view], rnd.randint(1, 3))
    filters = [_filter(rnd, k) for k in rnd.sample(keys, rnd.randint(0, 2))]
    expected_view: str | None = view
    if rnd.random() < 0.15:
        filters.append("v1 > 0")  # a value column: only the base index can filter on it
        expected_view = None
    select = ", ".join([*(f"{g} AS g{i}" for i, g in enumerate(groups)), *aggs])
    sql = f"SELECT {select} FROM t"
    if filters:
        sql += " WHERE " + " AND ".join(filters)
    if groups:
        sql += " GROUP BY " + ", ".join(groups)
        if rnd.random() < 0.2:
            sql += f" HAVING {aggs[0]} IS NOT NULL"
    return sql, expected_view


def _scan_index(cur, sql: str) -> str:
    cur.execute("EXPLAIN " + sql)
    text = "\n".join(r[0] for r in cur.fetchall())
    m = SCAN_RE.search(text)
    assert m is not None, text
    return m.group(2)


def _wait(cur, name: str) -> None:
    assert wait_alter_job(cur, name, "MATERIALIZED VIEW")["State"] == "FINISHED", name


@pytest.mark.parametrize("seed", property_seeds(DEFAULT_SEEDS))
def test_views_answer_like_the_base_index(server, make_db, seed: int) -> None:
    rnd = random.Random(seed)
    name = make_db(f"mvprop{seed}")
    conn = server.connect(name)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k1 INT, k2 VARCHAR(8), d INT NOT NULL, v1 INT, v2 BIGINT, "
                "v3 DECIMAL(8, 2)) DUPLICATE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 3")
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (k1 INTEGER, k2 VARCHAR, d INTEGER, v1 INTEGER, v2 BIGINT, "
                  "v3 DECIMAL(8, 2))")
    first = rnd.choice(list(VIEWS))
    cur.execute(f"CREATE MATERIALIZED VIEW {first} AS {VIEWS[first]}")
    _wait(cur, first)
    hits = 0
    checked = 0
    for round_no in range(ROUNDS):
        for _ in range(rnd.randint(2, 3)):
            rows = [_row(rnd) for _ in range(rnd.randint(1, 25))]
            cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
            insert_rows(duck, "t", rows)
        if round_no == 0:  # the others are built over existing (and deleted) rows
            for view, select in VIEWS.items():
                if view != first:
                    cur.execute(f"CREATE MATERIALIZED VIEW {view} AS {select}")
                    _wait(cur, view)
        if rnd.random() < 0.7:
            victim = rnd.choice(STRS)
            cur.execute(f"DELETE FROM t WHERE k2 = '{victim}'")
            duck.execute(f"DELETE FROM t WHERE k2 = '{victim}'")
        for _ in range(QUERIES_PER_ROUND):
            sql, expected_view = _query(rnd)
            duck_sql = sql.replace(" DIV ", " // ")
            expected = normalize_rows(duck.execute(duck_sql).fetchall())
            cur.execute(VIEWS_ON)
            index = _scan_index(cur, sql)
            if expected_view is None:
                assert index == "t", (seed, sql, index)
            else:
                assert index.startswith("mv_"), (seed, sql, index)
                hits += 1
            cur.execute(sql)
            on = normalize_rows(cur.fetchall())
            cur.execute(FORCE_BASE)
            assert _scan_index(cur, sql) == "t"
            cur.execute(sql)
            off = normalize_rows(cur.fetchall())
            cur.execute(VIEWS_ON)
            assert on == expected, (seed, sql, on, expected)
            assert off == expected, (seed, sql, off, expected)
            checked += 1
    assert checked == ROUNDS * QUERIES_PER_ROUND
    assert hits >= checked // 2, (seed, hits, checked)
    conn.close()
