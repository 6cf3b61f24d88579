"""Differential test of window functions against DuckDB on the random table of
test_differential (NULLs and ties in every column, 6 tablets, 7-row batches).

Each generated query selects the unique key `k` and one or more window calls, so rows compare
as multisets. Window ORDER BY lists end with `k` wherever the function depends on the order of
peers (ROW_NUMBER, LAG/LEAD, FIRST/LAST_VALUE, ROWS frames); ranking functions and RANGE frames
are also generated over tied keys. NULL ordering is spelt out for DuckDB (Doris: NULLs first
ASC, last DESC).
"""

from __future__ import annotations

import math
import random

import pytest
import sqlglot

from test_differential import _norm, _ours, _sort_key, env  # noqa: F401 - env is a fixture

PART_KEYS = ["i1 % 3", "s", "ti > 0", "dt", "k % 4"]
ORDER_KEYS = ["i1", "d", "s", "dt", "m", "ti"]
VALUES = ["i1", "i2", "ti", "d", "m"]
ANY_VALUES = VALUES + ["s", "dt", "ts"]


def _order(rng: random.Random, total: bool) -> tuple[str, str]:
    keys = rng.sample(ORDER_KEYS, rng.randint(1, 2))
    dirs = [rng.choice(["ASC", "DESC"]) for _ in keys]
    if total:
        keys, dirs = keys + ["k"], dirs + [rng.choice(["ASC", "DESC"])]
    ours = ", ".join(f"{k} {d}" for k, d in zip(keys, dirs))
    duck = ", ".join(f"{k} {d} NULLS {'FIRST' if d == 'ASC' else 'LAST'}"
                     for k, d in zip(keys, dirs))
    return " ORDER BY " + ours, " ORDER BY " + duck


def _frame(rng: random.Random) -> str:
    a, b = rng.randint(0, 3), rng.randint(0, 3)
    return rng.choice([
        f" ROWS BETWEEN {a} PRECEDING AND CURRENT ROW",
        f" ROWS BETWEEN {a} PRECEDING AND {b} FOLLOWING",
        f" ROWS BETWEEN CURRENT ROW AND {b} FOLLOWING",
        " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
        f" ROWS BETWEEN UNBOUNDED PRECEDING AND {b} PRECEDING",
        f" ROWS BETWEEN {a} FOLLOWING AND UNBOUNDED FOLLOWING",
        " ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
        f" ROWS BETWEEN {a + b} PRECEDING AND {a} PRECEDING",
        " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
        " RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
        " RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
        " RANGE BETWEEN CURRENT ROW AND CURRENT ROW",
        " RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
    ])


def gen_window(rng: random.Random) -> tuple[str, str]:
    """One window call as (doris, duckdb) text."""
    kind = rng.choice(["rank", "agg", "agg", "value", "lag"])
    part = ""
    if rng.random() < 0.7:
        part = "PARTITION BY " + ", ".join(rng.sample(PART_KEYS, rng.randint(1, 2)))
    if kind == "rank":
        fn = rng.choice(["row_number()", "rank()", "dense_rank()", "percent_rank()",
                         "cume_dist()", f"ntile({rng.randint(1, 7)})"])
        total = fn in ("row_number()",) or fn.startswith("ntile")
        o, od = _order(rng, total)
        return f"{fn} OVER ({part}{o})", f"{fn} OVER ({part}{od})"
    if kind == "lag":
        fn = rng.choice(["lag", "lead"])
        v = rng.choice(ANY_VALUES)
        args = v
        if rng.random() < 0.6:
            args += f", {rng.randint(0, 3)}"
            if v in VALUES and rng.random() < 0.5:
                args += f", {rng.randint(-5, 5)}"
        o, od = _order(rng, True)
        return f"{fn}({args}) OVER ({part}{o})", f"{fn}({args}) OVER ({part}{od})"
    if kind == "value":
        fn = rng.choice(["first_value", "last_value"])
        v = rng.choice(ANY_VALUES)
        o, od = _order(rng, True)
        fr = _frame(rng) if rng.random() < 0.6 else ""
        return (f"{fn}({v}) OVER ({part}{o}{fr})", f"{fn}({v}) OVER ({part}{od}{fr})")
    fn = rng.choice(["sum", "avg", "min", "max", "count", "count"])
    v = "*" if fn == "count" and rng.random() < 0.3 else rng.choice(
        ANY_VALUES if fn in ("min", "max", "count") else VALUES)
    if rng.random() < 0.25:
        return f"{fn}({v}) OVER ({part})", f"{fn}({v}) OVER ({part})"
    total = rng.random() < 0.5
    o, od = _order(rng, total)
    fr = ""
    if rng.random() < 0.7:
        fr = _frame(rng)
        if not total and fr.startswith(" ROWS"):
            o, od = _order(rng, True)
    return f"{fn}({v}) OVER ({part}{o}{fr})", f"{fn}({v}) OVER ({part}{od}{fr})"


def gen_query(rng: random.Random) -> tuple[str, str]:
    wins = [gen_window(rng) for _ in range(rng.randint(1, 3))]
    where = rng.choice(["", "", " WHERE i1 > -20", " WHERE s IS NOT NULL"])
    return (f"SELECT k, {', '.join(w[0] for w in wins)} FROM t{where}",
            f"SELECT k, {', '.join(w[1] for w in wins)} FROM t{where}")


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        # AVG(DECIMAL) is DECIMAL(38, 4) in Doris, a double in DuckDB
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=6e-5)
    return a == b


def _check(env, doris_sql: str, duck_sql: str,  # type: ignore[no-untyped-def]
           ordered: bool = False) -> None:
    engine, con = env
    ours = _ours(engine, doris_sql)
    theirs = [tuple(_norm(v) for v in r) for r in con.execute(duck_sql).fetchall()]
    if not ordered:
        ours, theirs = sorted(ours, key=_sort_key), sorted(theirs, key=_sort_key)
    assert len(ours) == len(theirs), (doris_sql, ours[:5], theirs[:5])
    for a, b in zip(ours, theirs):
        assert len(a) == len(b)
        assert all(_same(x, y) for x, y in zip(a, b)), (doris_sql, duck_sql, a, b)


QUERIES = [gen_query(random.Random(5000 + i)) for i in range(300)]


@pytest.mark.parametrize("doris_sql,duck_sql", QUERIES,
                         ids=[f"w{i}" for i in range(len(QUERIES))])
def test_window_matches_duckdb(env, doris_sql: str,  # type: ignore[no-untyped-def]
                               duck_sql: str) -> None:
    _check(env, doris_sql, duck_sql)


FIXED = [
    # window over a GROUP BY result, window in ORDER BY, top-N per group in a derived table
    ("SELECT i1 % 3 AS g, sum(ti) AS s, rank() OVER (ORDER BY sum(ti) DESC) AS r "
     "FROM t GROUP BY i1 % 3", None, False),
    ("SELECT s, count(*) AS c, sum(count(*)) OVER (ORDER BY s) AS run FROM t GROUP BY s",
     "SELECT s, count(*) AS c, sum(count(*)) OVER (ORDER BY s NULLS FIRST) AS run "
     "FROM t GROUP BY s", False),
    ("SELECT k FROM t ORDER BY row_number() OVER (ORDER BY i2 DESC, k), k LIMIT 10",
     "SELECT k FROM t ORDER BY row_number() OVER (ORDER BY i2 DESC NULLS LAST, k), k LIMIT 10",
     True),
    ("SELECT s, k, d FROM (SELECT s, k, d, row_number() OVER (PARTITION BY s ORDER BY d DESC, k)"
     " AS rn FROM t) x WHERE rn <= 2",
     "SELECT s, k, d FROM (SELECT s, k, d, row_number() OVER (PARTITION BY s ORDER BY d DESC "
     "NULLS LAST, k) AS rn FROM t) x WHERE rn <= 2", False),
    ("SELECT k, i1 - lag(i1) OVER (ORDER BY k) AS delta, count(*) OVER () AS n FROM t", None,
     False),
    ("SELECT a.k, sum(b.ti) OVER (PARTITION BY a.s ORDER BY a.k) FROM t a JOIN t b "
     "ON a.k = b.k + 1", None, False),
    ("SELECT DISTINCT s, count(*) OVER (PARTITION BY s) FROM t", None, False),
    ("SELECT k, row_number() OVER (ORDER BY k) + rank() OVER (PARTITION BY s ORDER BY i1) "
     "FROM t WHERE k < 50",
     "SELECT k, row_number() OVER (ORDER BY k) + rank() OVER (PARTITION BY s ORDER BY i1 "
     "NULLS FIRST) FROM t WHERE k < 50", False),
]


@pytest.mark.parametrize("doris_sql,duck_sql,ordered", FIXED,
                         ids=[f"f{i}" for i in range(len(FIXED))])
def test_window_queries(env, doris_sql: str, duck_sql: str | None,  # type: ignore[no-untyped-def]
                        ordered: bool) -> None:
    _check(env, doris_sql, duck_sql or doris_sql, ordered)


@pytest.mark.parametrize("sql,message", [
    ("SELECT k FROM t WHERE row_number() OVER (ORDER BY k) > 1", "not allowed in WHERE"),
    ("SELECT k FROM t GROUP BY k HAVING rank() OVER (ORDER BY k) > 1", "not allowed in HAVING"),
    ("SELECT k, rank() OVER (ORDER BY k) AS r FROM t GROUP BY k HAVING r < 3",
     "not allowed in HAVING"),
    ("SELECT sum(row_number() OVER (ORDER BY k)) FROM t", "cannot contain window"),
    ("SELECT sum(k) OVER (ORDER BY k RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
     "RANGE"),
    ("SELECT sum(k) OVER (ORDER BY k ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM t",
     "illegal"),
])
def test_window_errors(env, sql: str, message: str) -> None:  # type: ignore[no-untyped-def]
    from sql.errors import DorisError

    engine, _ = env
    with pytest.raises(DorisError, match=message):
        _ours(engine, sql)


def test_plan_has_window_node(env) -> None:  # type: ignore[no-untyped-def]
    from planner.query import plan_select
    from engine_fakes import session

    engine, _ = env
    sql = "SELECT k, rank() OVER (PARTITION BY s ORDER BY i1) FROM t"
    prepared = plan_select(sqlglot.parse_one(sql, read="doris"), engine, session("db"), sql=sql)
    text = "\n".join(prepared.plan.explain())
    assert "LogicalWindow(rank()" in text


def test_unused_window_is_pruned(env) -> None:  # type: ignore[no-untyped-def]
    from planner.query import plan_select
    from engine_fakes import session

    engine, _ = env
    sql = "SELECT k FROM (SELECT k, rank() OVER (ORDER BY i1) AS r FROM t) x"
    prepared = plan_select(sqlglot.parse_one(sql, read="doris"), engine, session("db"), sql=sql)
    text = "\n".join(prepared.plan.explain())
    assert "LogicalWindow" not in text and "columns=[k]" in text
