"""LATERAL VIEW with Doris' table functions over the MySQL protocol: explode / explode_outer /
posexplode / explode_map / explode_split / explode_numbers / explode_json_array_* on random rows
(NULL arrays, empty arrays, NULL elements), compared with DuckDB's UNNEST where DuckDB has the
same function and with a Python reference otherwise; two lateral views in a row, aggregates
and filters over generated columns, EXPLAIN, and the errors (sql/functions/generators.py,
executor/table_function.py)."""

from __future__ import annotations

import json
import random

import duckdb
import pymysql
import pytest
from support.duck import insert_rows
from support.names import scratch_database
from support.rows import normalize_rows

N_ROWS = 400


def _rows(seed: int) -> list[tuple]:
    rng = random.Random(seed)
    out = []
    for k in range(N_ROWS):
        a = rng.choice([None, [], *[[rng.choice([None, *range(-3, 9)])
                                     for _ in range(rng.randint(1, 5))] for _ in range(3)]])
        m = rng.choice([None, {}, {f"k{rng.randint(0, 3)}": rng.choice([None, 1, 2])
                                   for _ in range(rng.randint(1, 3))}])
        s = rng.choice([None, "", "a", "a,b", ",x,", "é,ü,,z"])
        j = rng.choice([None, "[]", "[1, 2.5, \"q\", null, true]", "not json", "{\"a\": 1}",
                        json.dumps([rng.randint(-5, 5) for _ in range(rng.randint(0, 4))])])
        out.append((k, a, m, s, j))
    return out


def _sql_value(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, list):
        return "[" + ", ".join(_sql_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"'{k}': {_sql_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(v)


@pytest.fixture(scope="module")
def tables(server):  # type: ignore[no-untyped-def]
    rows = _rows(11)
    with scratch_database(server, "lateral_view") as db:
        yield db, _load(server, db, rows), rows


def _load(server, db: str, rows: list[tuple]) -> duckdb.DuckDBPyConnection:  # type: ignore[no-untyped-def]
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT, a ARRAY<INT>, m MAP<STRING, INT>, s VARCHAR(20), "
                    "j STRING) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3 "
                    "PROPERTIES ('replication_num' = '1')")
        cur.execute("INSERT INTO t VALUES " + ", ".join(
            "(" + ", ".join(_sql_value(v) for v in r) + ")" for r in rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (k INTEGER, a INTEGER[])")
    insert_rows(duck, "t", [(r[0], r[1]) for r in rows])
    return duck


def _ours(server, db: str, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


@pytest.mark.parametrize("ours, theirs", [
    ("SELECT k, x FROM t LATERAL VIEW explode(a) tmp AS x",
     "SELECT k, unnest(a) FROM t"),
    ("SELECT x, count(*), sum(k) FROM t LATERAL VIEW explode(a) tmp AS x GROUP BY x",
     "SELECT x, count(*), sum(k) FROM (SELECT k, unnest(a) AS x FROM t) GROUP BY x"),
    ("SELECT k, x FROM t LATERAL VIEW explode(a) tmp AS x WHERE x > 2 AND k % 3 = 1",
     "SELECT k, x FROM (SELECT k, unnest(a) AS x FROM t) WHERE x > 2 AND k % 3 = 1"),
    ("SELECT k, p, x FROM t LATERAL VIEW posexplode(a) tmp AS p, x",
     "SELECT k, unnest(generate_series(0, len(a) - 1)), unnest(a) FROM t WHERE len(a) > 0"),
    ("SELECT t.k, x, u.k FROM t LATERAL VIEW explode(a) tmp AS x JOIN t u ON u.k = x",
     "SELECT t.k, x, u.k FROM (SELECT k, unnest(a) AS x FROM t) t JOIN t u ON u.k = x"),
])
def test_explode_matches_duckdb_unnest(server, tables, ours: str, theirs: str) -> None:  # type: ignore[no-untyped-def]
    db, duck, _ = tables
    assert normalize_rows(_ours(server, db, ours)) == normalize_rows(duck.execute(theirs).fetchall())


def _json_ints(text: str | None) -> list:
    try:
        value = json.loads(text) if text is not None else None
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    return [int(x) if isinstance(x, int | float) and not isinstance(x, bool) else None
            for x in value]


REFERENCES = {
    "explode_outer(a) tmp AS x": lambda r: [(x,) for x in r[1]] if r[1] else [(None,)],
    "explode_map(m) tmp AS mk, mv": lambda r: list((r[2] or {}).items()),
    "explode_split(s, ',') tmp AS x": lambda r: [] if r[3] is None else [
        (p,) for p in r[3].split(",")],
    "explode_numbers(k % 4) tmp AS x": lambda r: [(i,) for i in range(r[0] % 4)],
    "explode_json_array_int(j) tmp AS x": lambda r: [(x,) for x in _json_ints(r[4])],
    "explode_json_array_int_outer(j) tmp AS x": lambda r: [
        (x,) for x in _json_ints(r[4])] or [(None,)],
}


@pytest.mark.parametrize("view", list(REFERENCES))
def test_table_functions_match_a_python_reference(server, tables, view: str) -> None:  # type: ignore[no-untyped-def]
    db, _, rows = tables
    cols = view.rsplit(" AS ", 1)[1]
    got = _ours(server, db, f"SELECT k, {cols} FROM t LATERAL VIEW {view}")
    want = [(r[0], *g) for r in rows for g in REFERENCES[view](r)]
    assert normalize_rows(got) == normalize_rows(want)


def test_two_views_and_star(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _, rows = tables
    got = _ours(server, db, "SELECT k, x, n FROM t LATERAL VIEW explode(a) t1 AS x "
                            "LATERAL VIEW explode_numbers(2) t2 AS n WHERE k < 50")
    want = [(r[0], x, n) for r in rows if r[0] < 50 for x in (r[1] or []) for n in range(2)]
    assert normalize_rows(got) == normalize_rows(want)
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("SELECT * FROM t LATERAL VIEW explode_numbers(1) tmp AS n WHERE k = 3")
        assert [d[0] for d in cur.description] == ["k", "a", "m", "s", "j", "n"]
        assert cur.fetchone()[-1] == 0


def test_explain_shows_the_table_function_node(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _, _ = tables
    text = "\n".join(r[0] for r in _ours(
        server, db, "EXPLAIN SELECT k, x FROM t LATERAL VIEW explode(a) tmp AS x"))
    assert "TABLE FUNCTION NODE" in text and "table function: explode(" in text
    # a filter on the view's input goes below it, to the scan (bucket pruning); one on the
    # generated column stays above
    text = "\n".join(r[0] for r in _ours(
        server, db, "EXPLAIN SELECT k, x FROM t LATERAL VIEW explode(a) tmp AS x "
                    "WHERE k = 3 AND x > 1"))
    table_fn, scan = text.index("TABLE FUNCTION NODE"), text.index("VOlapScanNode")
    assert "tablets=1/3" in text[scan:]
    select = text.index("VSELECT")
    assert select < table_fn and "> 1" in text[select:table_fn] and "= 3" not in text[select:table_fn]


def test_errors(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _, _ = tables
    for sql, text in [
        ("SELECT k FROM t LATERAL VIEW explode(s) tmp AS x", "explode takes one ARRAY"),
        ("SELECT k FROM t LATERAL VIEW explode(a) tmp AS x, y",
         "explode generates 1 column(s), but LATERAL VIEW tmp names 2"),
        ("SELECT k FROM t LATERAL VIEW no_such_fn(a) tmp AS x",
         "Can not found table function: no_such_fn"),
        ("SELECT k FROM t LATERAL VIEW explode(a) tmp AS x WHERE nope = 1", "nope"),
    ]:
        with pytest.raises(pymysql.MySQLError) as info:
            _ours(server, db, sql)
        assert info.value.args[0] in (1105, 1054) and text in info.value.args[1], (sql, info.value)
