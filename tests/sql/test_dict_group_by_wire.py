"""GROUP BY on dictionary codes, end to end over the MySQL protocol, against DuckDB.

A table of three buckets loaded by four INSERT batches (so several segments per tablet, each
with its own page dictionaries) whose low-cardinality string columns are dictionary-encoded,
with NULLs, empty strings, unicode and a NUL byte; one column turns all-distinct (PLAIN pages)
in the last batch. Grouped by one string key, two string keys, a string and an integer, with
filters, HAVING, ORDER BY / LIMIT (TopN on the decoded groups), COUNT(DISTINCT) and joins, every
query returns DuckDB's rows, in one instance per fragment and with instances forced per tablet
(the aggregate then runs in two phases: partial states cross an exchange).
"""

from __future__ import annotations

import duckdb
import pytest
from support.names import unique_db_name

ROWS_PER_BATCH = 6000
MODES = ["AIR", "RAIL", "", "日本", "a\x00b", "MAIL"]
NATIONS = ["CHINA", "FRANCE", "ÉGYPTE", "PERU"]


def _row(batch: int, n: int) -> tuple[object, ...]:
    i = batch * ROWS_PER_BATCH + n
    mode = None if n % 53 == 7 else MODES[(n + batch) % (3 + batch)]
    nation = NATIONS[(n // 7) % len(NATIONS)] if n % 41 != 1 else None
    city = f"city-{n}" if batch == 3 else f"c{n % 9}"  # the last batch: PLAIN pages
    return (i, mode, nation, city, n % 5, (n * 37) % 1000)


@pytest.fixture(scope="module")
def tables(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("dict_group")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rows = [_row(b, n) for b in range(4) for n in range(ROWS_PER_BATCH)]
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT NOT NULL, mode VARCHAR(8), nation VARCHAR(16), "
                    "city VARCHAR(20), k INT, v INT) DUPLICATE KEY(id) "
                    "DISTRIBUTED BY HASH(id) BUCKETS 3")
        cur.execute("CREATE TABLE n (nation VARCHAR(16), region VARCHAR(16)) "
                    "DUPLICATE KEY(nation) DISTRIBUTED BY HASH(nation) BUCKETS 1")
        for b in range(4):
            cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)",
                            rows[b * ROWS_PER_BATCH:(b + 1) * ROWS_PER_BATCH])
        cur.executemany("INSERT INTO n VALUES (%s, %s)",
                        [("CHINA", "ASIA"), ("FRANCE", "EUROPE"), ("PERU", "AMERICA")])
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (id INT, mode VARCHAR, nation VARCHAR, city VARCHAR, k INT, "
                 "v INT)")
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", rows)
    duck.execute("CREATE TABLE n (nation VARCHAR, region VARCHAR)")
    duck.execute("INSERT INTO n VALUES ('CHINA', 'ASIA'), ('FRANCE', 'EUROPE'), "
                 "('PERU', 'AMERICA')")
    yield conn, duck
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


QUERIES = [
    "SELECT mode, count(*), sum(v) FROM t GROUP BY mode",
    "SELECT nation, mode, count(*), min(v), max(id) FROM t GROUP BY nation, mode",
    "SELECT mode, k, count(*), avg(v) FROM t GROUP BY mode, k",
    "SELECT city, count(*) FROM t GROUP BY city",
    "SELECT mode, count(*) FROM t WHERE nation = 'CHINA' GROUP BY mode",
    "SELECT nation, sum(v) FROM t WHERE mode IN ('AIR', '', '日本') AND k < 3 GROUP BY nation",
    "SELECT mode, nation, count(*) AS c FROM t WHERE id < 5000 GROUP BY mode, nation",
    "SELECT mode, count(*) AS c FROM t GROUP BY mode HAVING count(*) > 2000",
    "SELECT mode, count(DISTINCT nation), count(DISTINCT city) FROM t GROUP BY mode",
    ("SELECT n.region, t.mode, count(*) FROM t JOIN n ON t.nation = n.nation "
     "GROUP BY n.region, t.mode"),
]
ORDERED = [
    ("SELECT nation, mode, sum(v) AS s FROM t GROUP BY nation, mode "
     "ORDER BY nation DESC NULLS LAST, mode NULLS FIRST LIMIT 7"),
    "SELECT mode, count(*) AS c FROM t GROUP BY mode ORDER BY mode NULLS FIRST",
    "SELECT city, sum(v) AS s FROM t GROUP BY city ORDER BY s DESC, city NULLS FIRST LIMIT 5",
]


def _fetch(conn, sql: str) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    with conn.cursor() as cur:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]


def _normal(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Values as pymysql returns them (DuckDB's AVG is a float, ours a DOUBLE too)."""
    return [tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in rows]


def _sorted(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return sorted(_normal(rows), key=lambda r: [(v is None, str(v)) for v in r])


@pytest.mark.parametrize("instances", ["one", "per_tablet"])
@pytest.mark.parametrize("sql", QUERIES)
def test_group_by_matches_duckdb(tables, sql: str, instances: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = tables
    with conn.cursor() as cur:
        cur.execute("SET shaledb_small_fragment_rows = "
                    + ("1000000000" if instances == "one" else "0"))
    try:
        got = _fetch(conn, sql)
    finally:
        with conn.cursor() as cur:
            cur.execute("SET shaledb_small_fragment_rows = DEFAULT")
    assert _sorted(got) == _sorted(duck.execute(sql).fetchall())


@pytest.mark.parametrize("sql", ORDERED)
def test_ordered_groups_match_duckdb(tables, sql: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = tables
    assert _normal(_fetch(conn, sql)) == _normal(duck.execute(sql).fetchall())


def test_per_tablet_instances_aggregate_in_two_phases(tables) -> None:  # type: ignore[no-untyped-def]
    """The plan the `per_tablet` runs above exercise: partial states cross an exchange."""
    conn, _ = tables
    with conn.cursor() as cur:
        cur.execute("SET shaledb_small_fragment_rows = 0")
        try:
            cur.execute("EXPLAIN SELECT nation, mode, count(*) FROM t GROUP BY nation, mode")
            text = "\n".join(str(r[0]) for r in cur.fetchall())
        finally:
            cur.execute("SET shaledb_small_fragment_rows = DEFAULT")
    assert "update serialize" in text and "merge finalize" in text
