"""Runtime filters from joins on string and float keys, through the wire: a filtered dimension
with few keys sends an `in` list, one with more than runtime_filter_max_in_num keys a bloom
filter with min / max; either removes fact rows inside storage (the profile's fact scan returns
fewer rows than with `runtime_filter_mode = OFF`), and every join gives DuckDB's rows (NULL
keys, unicode strings, -0.0 / 0.0)."""

from __future__ import annotations

import random

import duckdb
import pytest
from support.duck import insert_rows
from support.names import unique_db_name
from support.runtime_filter_checks import fact_scan, sorted_rows

NAMES = [f"名{i:04d}-{'x' * (i % 5)}" for i in range(3000)]


@pytest.fixture(scope="module")
def star(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("rf_keys")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rng = random.Random(7)
    prices = [i / 4 for i in range(-1500, 1500)]  # includes 0.0; -0.0 below
    fact = [(i, rng.choice(NAMES + [None]), rng.choice(prices + [-0.0, None]), rng.randint(1, 9))
            for i in range(30000)]
    dim_s = [(n, i % 10) for i, n in enumerate(NAMES)]
    dim_f = [(i % 10, p) for i, p in enumerate(prices)]
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE fact (id INT NOT NULL, name VARCHAR(32), price DOUBLE, "
                    "v INT NOT NULL) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2")
        cur.execute("CREATE TABLE dim_s (name VARCHAR(32), grp INT NOT NULL) DUPLICATE KEY(name) "
                    "DISTRIBUTED BY HASH(name) BUCKETS 1")
        cur.execute("CREATE TABLE dim_f (grp INT NOT NULL, price DOUBLE) DUPLICATE KEY(grp) "
                    "DISTRIBUTED BY HASH(grp) BUCKETS 1")

        def lit(x: object) -> str:
            return "NULL" if x is None else (f"'{x}'" if isinstance(x, str) else repr(x))

        for start in range(0, len(fact), 10000):
            cur.execute("INSERT INTO fact VALUES " + ", ".join(
                "(" + ", ".join(map(lit, row)) + ")" for row in fact[start:start + 10000]))
        cur.execute("INSERT INTO dim_s VALUES " + ", ".join(f"('{n}', {g})" for n, g in dim_s))
        cur.execute("INSERT INTO dim_f VALUES " + ", ".join(f"({g}, {p!r})" for g, p in dim_f))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE fact (id INT, name VARCHAR, price DOUBLE, v INT)")
    insert_rows(duck, "fact", fact)
    duck.execute("CREATE TABLE dim_s (name VARCHAR, grp INT)")
    insert_rows(duck, "dim_s", dim_s)
    duck.execute("CREATE TABLE dim_f (grp INT, price DOUBLE)")
    insert_rows(duck, "dim_f", dim_f)
    yield conn, duck
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


# (query, filter kind the dimension's keys make): grp = 3 keeps 300 keys (`in`), grp < 5 keeps
# 1500 (> 1024: bloom filter + min / max)
QUERIES = [
    ("SELECT f.id, f.name, f.v FROM fact f JOIN dim_s d ON f.name = d.name WHERE d.grp = 3", "in"),
    ("SELECT count(*), sum(f.v) FROM fact f JOIN dim_s d ON f.name = d.name WHERE d.grp < 5",
     "bloom"),
    ("SELECT f.id, f.price FROM fact f JOIN dim_f d ON f.price = d.price WHERE d.grp = 7", "in"),
    ("SELECT count(*), sum(f.v) FROM fact f JOIN dim_f d ON f.price = d.price WHERE d.grp < 5",
     "bloom"),
    ("SELECT f.id FROM fact f WHERE f.name IN (SELECT name FROM dim_s WHERE grp > 8)", "in"),
]


@pytest.mark.parametrize(("sql", "kind"), QUERIES)
def test_string_and_float_key_filters_prune_with_duckdb_rows(star, sql: str, kind: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = star
    with conn.cursor() as cur:
        cur.execute("SET enable_profile = true")
        cur.execute(sql)
        on = sorted_rows(cur.fetchall())
        rows_on, kinds_on = fact_scan(cur)
        cur.execute("SET runtime_filter_mode = 'OFF'")
        cur.execute(sql)
        off = sorted_rows(cur.fetchall())
        rows_off, kinds_off = fact_scan(cur)
        cur.execute("SET runtime_filter_mode = 'GLOBAL'")
        cur.execute("SET enable_profile = false")
    assert on == off == sorted_rows(duck.execute(sql).fetchall())
    assert rows_off == 30000 and kinds_off == "" and kinds_on == kind
    # `in` is exact; the bloom filter passes a few false positives (FPP 0.05 of the others)
    limit = 0.15 if kind == "in" else 0.65
    assert rows_on < rows_off * limit, (rows_on, rows_off)


def test_string_filter_on_a_unique_table_value_applies_after_the_merge(db_conn) -> None:  # type: ignore[no-untyped-def]
    """A runtime filter on a UNIQUE table's value column must test the merged (latest) row:
    an old version whose value matched the build keys must not come back, nor a new one be
    lost."""
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE u (k INT NOT NULL, tag VARCHAR(16), score DOUBLE) "
                    "UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("CREATE TABLE d (tag VARCHAR(16), score DOUBLE, grp INT NOT NULL) "
                    "DUPLICATE KEY(tag) DISTRIBUTED BY HASH(grp) BUCKETS 1")
        cur.execute("INSERT INTO u VALUES " + ", ".join(
            f"({i}, 'old{i % 50}', {i % 50}.5)" for i in range(2000)))
        cur.execute("INSERT INTO u VALUES " + ", ".join(
            f"({i}, 'new{i % 50}', {i % 50 + 100}.5)" for i in range(0, 2000, 2)))
        cur.execute("INSERT INTO d VALUES " + ", ".join(
            f"('old{i}', {i}.5, 0), ('new{i}', {i + 100}.5, 1)" for i in range(50)))
        results = {}
        for mode in ("GLOBAL", "OFF"):
            cur.execute(f"SET runtime_filter_mode = '{mode}'")
            for on in ("tag", "score"):
                cur.execute(f"SELECT u.k, u.{on} FROM u JOIN d ON u.{on} = d.{on} "
                            "WHERE d.grp = 0")
                results[(mode, on)] = sorted(cur.fetchall())
        cur.execute("SET runtime_filter_mode = 'GLOBAL'")
    # the build keys are the old values only: odd keys still hold theirs, even keys were
    # replaced by new values (a filter tested before the merge would drop the new version and
    # let the old one through)
    want_tag = sorted((k, f"old{k % 50}") for k in range(1, 2000, 2))
    assert results[("GLOBAL", "tag")] == results[("OFF", "tag")] == want_tag
    want_score = sorted((k, k % 50 + 0.5) for k in range(1, 2000, 2))
    assert results[("GLOBAL", "score")] == results[("OFF", "score")] == want_score


def test_keys_without_a_filter_form_report_none(db_conn) -> None:  # type: ignore[no-untyped-def]
    """LARGEINT join keys get no runtime filter: same rows, and the profile names none."""
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE big (k LARGEINT NOT NULL, v INT) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("CREATE TABLE small (k LARGEINT NOT NULL, g INT) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("INSERT INTO big VALUES " + ", ".join(
            f"({i * 10**20}, {i})" for i in range(300)))
        cur.execute("INSERT INTO small VALUES " + ", ".join(
            f"({i * 10**20}, {i % 10})" for i in range(100)))
        cur.execute("SET enable_profile = true")
        cur.execute("SELECT big.v FROM big JOIN small ON big.k = small.k WHERE small.g = 3")
        rows = sorted(r[0] for r in cur.fetchall())
        _, kinds = fact_scan(cur)
        cur.execute("SET enable_profile = false")
    assert rows == list(range(3, 100, 10)) and kinds == ""
