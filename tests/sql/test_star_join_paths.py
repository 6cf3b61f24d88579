"""Star-join fast paths through the wire, against DuckDB: direct-address join tables (one
integer key, NULL keys, duplicate and missing build keys, empty builds, semi / anti / outer
joins), build sides whose strings travel as dictionary codes (grouped on above the join), and
`NOT IN` over NOT NULL columns planned as a plain LEFT ANTI hash join (EXPLAIN) while nullable
columns keep the null-aware mark join, with MySQL's NULL semantics."""

from __future__ import annotations

import random

import duckdb
import pytest
from support.duck import insert_rows
from support.names import unique_db_name


@pytest.fixture(scope="module")
def star(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("star_paths")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rng = random.Random(11)
    cities = ["", "Zürich", "UNITED KI1", "UNITED KI5", "東京", "a\x00b"]
    # dim keys 1..400 with gaps, a duplicated key (7) and a NULL-able nk
    dim = [(k, rng.choice(cities), (k if k % 9 else None)) for k in range(1, 401) if k % 13]
    dim.append((7, "dup", 7))
    fact = [(i, rng.randint(-5, 420), rng.choice([None] + list(range(60))), rng.randint(1, 99))
            for i in range(6000)]
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE fact (id INT NOT NULL, dk INT NOT NULL, nk INT NULL, "
                    "v INT NOT NULL) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3")
        cur.execute("CREATE TABLE dim (k INT NOT NULL, city VARCHAR(20) NOT NULL, nk INT NULL) "
                    "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")

        def lit(x: object) -> str:
            return "NULL" if x is None else (f"'{x}'" if isinstance(x, str) else repr(x))

        for rows, name in ((fact, "fact"), (dim, "dim")):
            for start in range(0, len(rows), 3000):
                cur.execute(f"INSERT INTO {name} VALUES " + ", ".join(
                    "(" + ", ".join(map(lit, r)) + ")" for r in rows[start:start + 3000]))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE fact (id INT, dk INT, nk INT, v INT)")
    insert_rows(duck, "fact", fact)
    duck.execute("CREATE TABLE dim (k INT, city VARCHAR, nk INT)")
    insert_rows(duck, "dim", dim)
    yield conn, duck
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


def _sorted(rows) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted((tuple(r) for r in rows), key=repr)


QUERIES = [
    # direct table, unique-ish keys with one duplicate, strings grouped above the join
    "SELECT city, COUNT(*), SUM(v) FROM fact JOIN dim ON dk = k GROUP BY city",
    ("SELECT city, SUM(v) FROM fact JOIN dim ON dk = k WHERE city IN ('UNITED KI1', 'UNITED KI5') "
    "GROUP BY city"),
    # NULL keys on both sides
    "SELECT fact.id, dim.k FROM fact JOIN dim ON fact.nk = dim.nk",
    "SELECT COUNT(*), COUNT(dim.k) FROM fact LEFT JOIN dim ON fact.nk = dim.nk",
    "SELECT COUNT(*) FROM fact RIGHT JOIN dim ON fact.dk = dim.k",
    "SELECT COUNT(*) FROM fact FULL OUTER JOIN dim ON fact.nk = dim.nk",
    # empty build
    "SELECT COUNT(*) FROM fact JOIN dim ON dk = k WHERE city = 'nowhere'",
    ("SELECT COUNT(*) FROM fact LEFT JOIN (SELECT * FROM dim WHERE city = 'nowhere') d "
    "ON dk = d.k"),
    # semi / anti
    "SELECT COUNT(*), SUM(v) FROM fact WHERE dk IN (SELECT k FROM dim WHERE city = '東京')",
    "SELECT COUNT(*), SUM(v) FROM fact WHERE EXISTS (SELECT 1 FROM dim WHERE k = dk)",
    "SELECT COUNT(*), SUM(v) FROM fact WHERE NOT EXISTS (SELECT 1 FROM dim WHERE k = dk)",
    # NOT IN: NOT NULL on both sides (anti join), and with NULLs (null-aware)
    "SELECT COUNT(*), SUM(v) FROM fact WHERE dk NOT IN (SELECT k FROM dim WHERE city = 'Zürich')",
    ("SELECT COUNT(*), SUM(v) FROM fact WHERE dk NOT IN (SELECT k FROM dim WHERE city = 'x') "
    "AND v > 50"),
    "SELECT COUNT(*) FROM fact WHERE nk NOT IN (SELECT k FROM dim WHERE city = 'Zürich')",
    "SELECT COUNT(*) FROM fact WHERE dk NOT IN (SELECT nk FROM dim WHERE city = 'Zürich')",
    "SELECT COUNT(*) FROM fact WHERE dk NOT IN (SELECT nk FROM dim WHERE nk IS NOT NULL)",
    "SELECT COUNT(*) FROM fact f WHERE dk NOT IN (SELECT k FROM dim d WHERE d.nk = f.nk)",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_star_join_paths_match_duckdb(star, sql: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = star
    with conn.cursor() as cur:
        cur.execute(sql)
        got = cur.fetchall()
    assert _sorted(got) == _sorted(duck.execute(sql).fetchall())


def _explain(conn, sql: str) -> str:  # type: ignore[no-untyped-def]
    with conn.cursor() as cur:
        cur.execute("EXPLAIN " + sql)
        return "\n".join(r[0] for r in cur.fetchall())


def test_not_in_over_not_null_columns_is_an_anti_hash_join(star) -> None:  # type: ignore[no-untyped-def]
    conn, _ = star
    plan = _explain(conn, "SELECT COUNT(*) FROM fact WHERE dk NOT IN "
                          "(SELECT k FROM dim WHERE city = 'Zürich')")
    assert "LEFT ANTI JOIN" in plan and "HASH JOIN" in plan
    assert "equal join conjunct: (dk" in plan
    assert "__m" not in plan


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM fact WHERE nk NOT IN (SELECT k FROM dim)",
    "SELECT COUNT(*) FROM fact WHERE dk NOT IN (SELECT nk FROM dim)",
    ("SELECT COUNT(*) FROM fact WHERE dk NOT IN (SELECT d2.k FROM dim d1 LEFT JOIN dim d2 "
    "ON d1.nk = d2.k)"),
])
def test_not_in_over_nullable_columns_stays_null_aware(star, sql: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = star
    assert "__m" in _explain(conn, sql)  # the mark join and its NOT filter
    with conn.cursor() as cur:
        cur.execute(sql)
        assert _sorted(cur.fetchall()) == _sorted(duck.execute(sql).fetchall())
