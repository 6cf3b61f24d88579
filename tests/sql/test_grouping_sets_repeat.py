"""GROUPING SETS / ROLLUP / CUBE as Doris' Repeat + one aggregation (planner/repeat.py,
executor/repeat.py): EXPLAIN shows one VREPEAT_NODE over one scan and no UNION, the query
profile shows the input read once, and random data (NULL keys, NULL values, joins below the
grouping, HAVING, ORDER BY GROUPING(), every aggregate kind) gives DuckDB's rows."""

from __future__ import annotations

import random

import duckdb
import pytest
from support.duck import insert_rows
from support.names import scratch_database
from support.rows import normalize_rows

N_FACT = 2500
N_DIM = 40
# several fragment instances per query (default: one per 100 000 rows), so an aggregation
# must not trust a hash partition on a key the Repeat NULLs (f is bucketed by the key `a`)
SMALL_FRAGMENTS = ("SET shaledb_small_fragment_rows = 300",
                   "SET parallel_fragment_exec_instance_num = 4")


def _fact(seed: int) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    out = []
    for i in range(N_FACT):
        out.append((
            i,
            rng.choice(["n", "s", "é", "", None]),  # a: NULL and empty keys, unicode
            rng.choice([1, 2, 3, None]),  # b
            rng.randint(0, N_DIM + 5) if rng.random() > 0.05 else None,  # d: join key, misses
            None if rng.random() < 0.2 else rng.randint(-1000, 1000),  # v: NULL values
            None if rng.random() < 0.1 else round(rng.uniform(-50, 50), 2),  # f
        ))
    return out


def _dim(seed: int) -> list[tuple[object, ...]]:
    rng = random.Random(seed + 1)
    return [(d, rng.choice(["red", "blue", None]), rng.randint(0, 3)) for d in range(N_DIM)]


@pytest.fixture(scope="module", params=[3, 11])
def tables(server, request):  # type: ignore[no-untyped-def]
    fact, dim = _fact(request.param), _dim(request.param)
    with scratch_database(server, f"grouping_repeat_{request.param}") as db:
        with server.connect(db) as c, c.cursor() as cur:
            cur.execute("CREATE TABLE f (id INT, a VARCHAR(8), b INT, d INT, v INT, x DOUBLE) "
                        "DUPLICATE KEY(id) DISTRIBUTED BY HASH(a) BUCKETS 3 "
                        "PROPERTIES ('replication_num' = '1')")
            cur.execute("CREATE TABLE dim (d INT, color VARCHAR(8), tier INT) DUPLICATE KEY(d) "
                        "DISTRIBUTED BY HASH(d) BUCKETS 2 PROPERTIES ('replication_num' = '1')")
            for name, rows in (("f", fact), ("dim", dim)):
                for i in range(0, len(rows), 1000):
                    values = ", ".join(
                        "(" + ", ".join("NULL" if x is None else repr(x) for x in r) + ")"
                        for r in rows[i:i + 1000])
                    cur.execute(f"INSERT INTO {name} VALUES {values}")
        duck = duckdb.connect()
        duck.execute("CREATE TABLE f (id INTEGER, a VARCHAR, b INTEGER, d INTEGER, v INTEGER, "
                     "x DOUBLE)")
        duck.execute("CREATE TABLE dim (d INTEGER, color VARCHAR, tier INTEGER)")
        insert_rows(duck, "f", fact)
        insert_rows(duck, "dim", dim)
        yield db, duck


QUERIES = [
    ("SELECT a, b, count(*), count(v), sum(v), avg(v), min(v), max(v), min(a), max(x) "
    "FROM f GROUP BY ROLLUP(a, b)"),
    "SELECT a, b, sum(v), avg(x), count(*) FROM f GROUP BY CUBE(a, b)",
    ("SELECT a, b, count(DISTINCT v), count(DISTINCT a), sum(v) FROM f "
    "GROUP BY GROUPING SETS ((a, b), (b), ())"),
    "SELECT b, sum(b), count(b), max(a) FROM f GROUP BY ROLLUP(b)",  # aggregates read keys
    ("SELECT dim.color, dim.tier, count(*), sum(f.v), min(f.x) FROM f JOIN dim ON f.d = dim.d "
    "GROUP BY ROLLUP(dim.color, dim.tier)"),
    ("SELECT color, a, count(*), sum(v) FROM f LEFT JOIN dim ON f.d = dim.d "
    "GROUP BY CUBE(color, a)"),
    "SELECT a, b, sum(v) AS s FROM f GROUP BY ROLLUP(a, b) HAVING sum(v) > 0 OR b IS NULL",
    ("SELECT a, b, count(*), GROUPING(a), GROUPING(b), GROUPING_ID(a, b), GROUPING_ID(b, a) "
    "FROM f GROUP BY CUBE(a, b)"),
    "SELECT a, b, sum(v) FROM f GROUP BY a, CUBE(b) HAVING GROUPING(b) = 1 OR count(*) > 50",
    "SELECT b % 2 AS parity, a, sum(v) FROM f GROUP BY ROLLUP(b % 2, a)",
    "SELECT a, b, sum(v) FROM f GROUP BY GROUPING SETS ((a), (a), (b), ())",  # duplicate sets
    "SELECT a, count(*), sum(v) FROM f WHERE v > 5000 GROUP BY ROLLUP(a)",  # empty input
    "SELECT a, count(*) FROM f WHERE v > 5000 GROUP BY GROUPING SETS ((a), (b))",  # no ()
]

DUCK_SPELLING = {"GROUPING_ID(a, b)": "GROUPING(a, b)", "GROUPING_ID(b, a)": "GROUPING(b, a)"}


def _duck(duck: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    for ours, theirs in DUCK_SPELLING.items():
        sql = sql.replace(ours, theirs)
    return duck.execute(sql).fetchall()


@pytest.mark.parametrize("sql", QUERIES)
def test_same_rows_as_duckdb(server, tables, sql: str) -> None:  # type: ignore[no-untyped-def]
    db, duck = tables
    with server.connect(db) as c, c.cursor() as cur:
        for setting in SMALL_FRAGMENTS:
            cur.execute(setting)
        cur.execute(sql)
        got = cur.fetchall()
    assert normalize_rows(got) == normalize_rows(_duck(duck, sql))


def test_order_by_grouping_and_limit(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, duck = tables
    sql = ("SELECT a, b, sum(v) AS s, count(*) FROM f GROUP BY ROLLUP(a, b) "
           "ORDER BY GROUPING(a) DESC, GROUPING(b), a, b DESC, s LIMIT 9")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(sql)
        got = cur.fetchall()
    # MySQL's NULL order: first ascending, last descending
    want = _duck(duck, sql.replace("a, b DESC,", "a NULLS FIRST, b DESC NULLS LAST,"))
    assert [normalize_rows([r]) for r in got] == [normalize_rows([r]) for r in want]


def _profile(cur) -> dict[str, int]:  # type: ignore[no-untyped-def]
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    return {name: int(value) for name, value in cur.fetchall() if value.lstrip("-").isdigit()}


def test_explain_shows_one_repeat_over_one_scan(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _ = tables
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("EXPLAIN SELECT a, b, sum(v), GROUPING(a) FROM f GROUP BY ROLLUP(a, b)")
        text = "\n".join(r[0] for r in cur.fetchall())
    assert text.count("VREPEAT_NODE") == 1, text
    assert "repeat: repeat 2 lines [[0, 1], [0], []]" in text, text
    assert "exprs: a, b" in text, text
    assert text.count("VOlapScanNode") == 1 and "VUNION" not in text, text
    # the aggregation groups by the repeated keys and the set id, above the repeat
    assert text.index("VAGGREGATE") < text.index("VREPEAT_NODE") < text.index("VOlapScanNode")


def test_input_is_read_once(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _ = tables
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("SET enable_profile = true")
        cur.execute("SELECT a, b, sum(v) FROM f GROUP BY CUBE(a, b)")  # 4 sets
        assert len(cur.fetchall()) > 4
        cube = _profile(cur)
        cur.execute("SELECT a, b, sum(v) FROM f GROUP BY a, b")
        cur.fetchall()
        plain = _profile(cur)
    assert cube["RowsTotal"] == plain["RowsTotal"] == N_FACT


AGGREGATES = ["count(*)", "count(v)", "sum(v)", "avg(v)", "min(x)", "max(x)", "min(a)",
              "count(DISTINCT b)", "sum(x)"]


def _random_query(rng: random.Random) -> str:
    keys = rng.sample(["a", "b", "d % 3"], rng.randint(1, 3))
    form = rng.choice(["rollup", "cube", "sets", "mixed"])
    if form == "rollup":
        group = f"ROLLUP({', '.join(keys)})"
    elif form == "cube":
        group = f"CUBE({', '.join(keys)})"
    elif form == "sets":
        sets = ["(" + ", ".join(rng.sample(keys, rng.randint(0, len(keys)))) + ")"
                for _ in range(rng.randint(1, 4))]
        group = f"GROUPING SETS ({', '.join(sets)})"
        used = [k for k in keys if any(k in s for s in sets)]  # only grouped keys may be read
        keys = used
    else:
        group = f"{keys[0]}, ROLLUP({', '.join(keys[1:]) or keys[0]})"
    aggs = rng.sample(AGGREGATES, rng.randint(1, 4))
    flags = [f"GROUPING({k})" for k in keys if rng.random() < 0.3]
    where = rng.choice(["", " WHERE v > 0", " WHERE x IS NULL", " WHERE v > 99999"])
    having = rng.choice(["", " HAVING count(*) > 3"]
                        + ([f" HAVING GROUPING({keys[0]}) = 0"] if keys else []))
    return (f"SELECT {', '.join(keys + aggs + flags)} FROM f{where} GROUP BY {group}"
            f"{having}")


@pytest.mark.parametrize("seed", range(4))
def test_random_grouping_sets_match_duckdb(server, tables, seed: int) -> None:  # type: ignore[no-untyped-def]
    db, duck = tables
    rng = random.Random(seed)
    with server.connect(db) as c, c.cursor() as cur:
        for setting in SMALL_FRAGMENTS:
            cur.execute(setting)
        for _ in range(8):
            sql = _random_query(rng)
            try:
                cur.execute(sql)
            except Exception as e:  # name the generated query
                raise AssertionError(sql) from e
            got = cur.fetchall()
            assert normalize_rows(got) == normalize_rows(_duck(duck, sql)), sql
