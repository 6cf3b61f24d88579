"""Integer runtime filters (`in_bitmap`, storage/membership.py's branch-free kernels) through
the wire, on fact key columns of every integer width with NULL keys, negative keys and keys at
the type's extremes, key sets spanning a few values (byte tables) and more than 256k values
(packed words): every join gives DuckDB's rows
and the same rows as with `runtime_filter_mode = OFF`, and the fact scan returns fewer rows
with the filter (it is applied in storage)."""

from __future__ import annotations

import random

import duckdb
import pytest
from support.duck import insert_rows
from support.names import unique_db_name
from support.runtime_filter_checks import fact_scan, sorted_rows

WIDTHS = {"TINYINT": (-128, 127), "SMALLINT": (-32768, 32767),
          "INT": (-(2 ** 31), 2 ** 31 - 1), "BIGINT": (-(2 ** 63), 2 ** 63 - 1)}
ROWS = 6000


@pytest.fixture(scope="module")
def star(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("rf_int_keys")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rng = random.Random(11)
    duck = duckdb.connect()
    with conn.cursor() as cur:
        for name, (lo, hi) in WIDTHS.items():
            # keys near zero, near both extremes, and spread over a 400k span (packed words)
            pool = ([*range(-40, 40), lo, lo + 1, hi - 1, hi]
                    + [rng.randint(-200_000, 200_000) for _ in range(60)])
            pool = [k for k in pool if lo <= k <= hi]
            fact = [(i, rng.choice([*pool, None]), rng.randint(1, 9)) for i in range(ROWS)]
            dim = [(k, i % 4) for i, k in enumerate(sorted(set(pool)))]
            t = name.lower()
            cur.execute(f"CREATE TABLE f_{t} (id INT NOT NULL, k {name}, v INT NOT NULL) "
                        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2")
            cur.execute(f"CREATE TABLE d_{t} (k {name} NOT NULL, g INT NOT NULL) "
                        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
            cur.execute(f"INSERT INTO f_{t} VALUES " + ", ".join(
                f"({i}, {'NULL' if k is None else k}, {v})" for i, k, v in fact))
            cur.execute(f"INSERT INTO d_{t} VALUES " + ", ".join(f"({k}, {g})" for k, g in dim))
            duck.execute(f"CREATE TABLE f_{t} (id INT, k {name}, v INT)")
            insert_rows(duck, f"f_{t}", fact)
            duck.execute(f"CREATE TABLE d_{t} (k {name}, g INT)")
            insert_rows(duck, f"d_{t}", dim)
    yield conn, duck
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


# (dimension filter, whether the key set stays within a few values or spans ~400k)
FILTERS = [("d.g = 1 AND d.k BETWEEN -40 AND 40", "narrow"),
           ("d.g < 3 AND d.k BETWEEN -200000 AND 200000", "wide"),  # INT / BIGINT: packed
           ("d.g = 2", "extremes"),
           ("d.k < -30 OR d.k > 100000", "extremes")]


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize(("where", "span"), FILTERS)
def test_integer_key_filters_match_duckdb(star, width: str, where: str, span: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = star
    t = width.lower()
    sql = (f"SELECT f.id, f.k, f.v, d.g FROM f_{t} f JOIN d_{t} d ON f.k = d.k "
           f"WHERE {where}")
    with conn.cursor() as cur:
        cur.execute("SET enable_profile = true")
        cur.execute(sql)
        on = sorted_rows(cur.fetchall())
        rows_on, kinds_on = fact_scan(cur)
        cur.execute("SET runtime_filter_mode = 'OFF'")
        cur.execute(sql)
        off = sorted_rows(cur.fetchall())
        cur.execute("SET runtime_filter_mode = 'GLOBAL'")
        cur.execute("SET enable_profile = false")
    assert on == off == sorted_rows(duck.execute(sql).fetchall())
    assert on, "the filter keeps some rows"
    if span != "extremes":
        assert kinds_on == "bitmap"
    if kinds_on == "bitmap":  # a set over at most 2**24 values: tested in storage, exactly
        assert rows_on == len(on), (rows_on, len(on))
    else:  # keys spanning more (BIGINT extremes) send only their min / max
        assert kinds_on == "min_max" and rows_on >= len(on)
