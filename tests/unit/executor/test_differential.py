"""Differential test: random SELECTs through plan_select/execute vs DuckDB on the same data.

A small grammar generates each query twice, once in Doris SQL and once in DuckDB SQL (the two
differ in division-by-zero, IF, CONCAT-with-NULL, date literals and NULL ordering spellings).
Rows are compared as multisets (or in order when the query has a total ORDER BY), floats with a
relative tolerance. The table is split over 6 tablets and 7-row batches (engine_fakes), so the
multi-batch paths of scan, aggregate and sort are exercised.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest
from engine_fakes import MemoryEngine

from storage.types import BIGINT, DATE, DOUBLE, INT, TINYINT, datetime, decimal, varchar

COLUMNS = [("k", INT), ("i1", INT), ("i2", BIGINT), ("ti", TINYINT), ("d", DOUBLE),
           ("s", varchar(20)), ("dt", DATE), ("ts", datetime(0)), ("m", decimal(10, 2))]
NUMERIC = ["i1", "i2", "ti", "d", "m", "k"]
INTS = ["i1", "i2", "ti", "k"]
STRINGS = ["apple", "banana", "cherry", "", "apricot", "Berry", "b_x", "a%b"]
N_ROWS = 240


def _make_rows(rng: random.Random) -> list[dict[str, object]]:
    rows = []
    base = dt.date(2020, 1, 1)
    for k in range(N_ROWS):
        def maybe(v: object, p: float = 0.15) -> object:
            return None if rng.random() < p else v

        rows.append({
            "k": k,
            "i1": maybe(rng.randint(-50, 50)),
            "i2": maybe(rng.randint(-10**9, 10**9)),
            "ti": rng.randint(-100, 100),
            "d": maybe(round(rng.uniform(-1000, 1000), 3)),
            "s": maybe(rng.choice(STRINGS)),
            "dt": maybe(base + dt.timedelta(days=rng.randint(0, 500))),
            "ts": dt.datetime(2021, 1, 1) + dt.timedelta(seconds=rng.randint(0, 10**7)),
            "m": maybe(Decimal(rng.randint(-99999, 99999)).scaleb(-2)),
        })
    return rows


@pytest.fixture(scope="module")
def env():  # type: ignore[no-untyped-def]
    rng = random.Random(20240601)
    rows = _make_rows(rng)
    engine = MemoryEngine()
    phys = [tuple(t.to_physical(r[n]) for n, t in COLUMNS) for r in rows]
    engine.create_table("db", "t", COLUMNS, phys, tablets=3, partitions=2)
    con = duckdb.connect()
    con.execute("SET error_on_division_by_zero=false")
    arrow = pa.table({
        "k": pa.array([r["k"] for r in rows], pa.int32()),
        "i1": pa.array([r["i1"] for r in rows], pa.int32()),
        "i2": pa.array([r["i2"] for r in rows], pa.int64()),
        "ti": pa.array([r["ti"] for r in rows], pa.int8()),
        "d": pa.array([r["d"] for r in rows], pa.float64()),
        "s": pa.array([r["s"] for r in rows], pa.string()),
        "dt": pa.array([r["dt"] for r in rows], pa.date32()),
        "ts": pa.array([r["ts"] for r in rows], pa.timestamp("us")),
        "m": pa.array([r["m"] for r in rows], pa.decimal128(10, 2)),
    })
    con.register("arrow_t", arrow)
    con.execute("CREATE TABLE t AS SELECT * FROM arrow_t")
    return engine, con


# ---- the grammar: every generator returns (doris_sql, duckdb_sql) -------------------------
class Gen:
    def __init__(self, rng: random.Random) -> None:
        self.r = rng

    def pick(self, xs):  # type: ignore[no-untyped-def]
        return self.r.choice(xs)

    def int_lit(self) -> tuple[str, str]:
        v = str(self.r.randint(-20, 60))
        return v, v

    def num(self, depth: int = 0) -> tuple[str, str]:
        r = self.r.random()
        if depth > 1 or r < 0.35:
            c = self.pick(NUMERIC)
            return c, c
        if r < 0.45:
            return self.int_lit()
        a, b = self.num(depth + 1), self.num(depth + 1)
        op = self.pick(["+", "-", "*", "/", "%", "DIV", "abs", "neg", "case", "ifnull"])
        if op in ("+", "-", "*"):
            return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"
        if op == "/":
            return f"({a[0]} / {b[0]})", f"({a[1]} / NULLIF({b[1]}, 0))"
        if op in ("%", "DIV"):
            x, y = self.pick(INTS), self.pick(INTS + ["7"])
            duck = "%" if op == "%" else "//"
            return f"({x} {op} {y})", f"({x} {duck} NULLIF({y}, 0))"
        if op == "abs":
            return f"abs({a[0]})", f"abs({a[1]})"
        if op == "neg":
            return f"-({a[0]})", f"-({a[1]})"
        if op == "case":
            p = self.pred(depth + 1)
            return (f"CASE WHEN {p[0]} THEN {a[0]} ELSE {b[0]} END",
                    f"CASE WHEN {p[1]} THEN {a[1]} ELSE {b[1]} END")
        return f"ifnull({a[0]}, {b[0]})", f"coalesce({a[1]}, {b[1]})"

    def string(self) -> tuple[str, str]:
        r = self.r.random()
        if r < 0.4:
            return "s", "s"
        if r < 0.55:
            return "upper(s)", "upper(s)"
        if r < 0.65:
            p, n = self.r.randint(1, 4), self.r.randint(0, 3)
            return f"substr(s, {p}, {n})", f"substring(s, {p}, {n})"
        if r < 0.75:
            return "concat(s, '-', i1)", "(s || '-' || CAST(i1 AS VARCHAR))"
        if r < 0.85:
            return "ifnull(s, 'none')", "coalesce(s, 'none')"
        if r < 0.92:
            return "lower(s)", "lower(s)"
        p = self.pred(2)
        return f"if({p[0]}, s, 'other')", f"CASE WHEN {p[1]} THEN s ELSE 'other' END"

    def pred(self, depth: int = 0) -> tuple[str, str]:
        r = self.r.random()
        if depth < 2 and r < 0.25:
            a, b = self.pred(depth + 1), self.pred(depth + 1)
            op = self.pick(["AND", "OR"])
            return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"
        if depth < 2 and r < 0.3:
            a = self.pred(depth + 1)
            return f"NOT {a[0]}", f"NOT {a[1]}"
        kind = self.pick(["cmp", "cmp", "cmp", "null", "in", "between", "like", "date", "str"])
        op = self.pick(["=", "!=", "<", "<=", ">", ">="])
        if kind == "cmp":
            a, b = self.num(1), self.int_lit()
            return f"{a[0]} {op} {b[0]}", f"{a[1]} {op} {b[1]}"
        if kind == "null":
            c = self.pick(["i1", "d", "s", "dt", "m"])
            neg = self.pick(["", "NOT "])
            return f"{c} IS {neg}NULL", f"{c} IS {neg}NULL"
        if kind == "in":
            c = self.pick(["i1", "ti", "s"])
            vals = ([str(self.r.randint(-10, 10)) for _ in range(3)] if c != "s"
                    else [f"'{self.pick(STRINGS)}'" for _ in range(2)])
            neg = self.pick(["", "NOT "])
            lst = ", ".join(vals)
            return f"{c} {neg}IN ({lst})", f"{c} {neg}IN ({lst})"
        if kind == "between":
            c = self.pick(INTS + ["d", "m"])
            lo = self.r.randint(-30, 10)
            hi = lo + self.r.randint(0, 40)
            return f"{c} BETWEEN {lo} AND {hi}", f"{c} BETWEEN {lo} AND {hi}"
        if kind == "like":
            pat = self.pick(["a%", "%an%", "b_x", "%y", "a\\%b", "_____", "%"])
            neg = self.pick(["", "NOT "])
            duck_pat = pat.replace("\\%", "\\%")
            return (f"s {neg}LIKE '{pat}'",
                    f"s {neg}LIKE '{duck_pat}'" + (" ESCAPE '\\'" if "\\" in pat else ""))
        if kind == "date":
            day = dt.date(2020, 1, 1) + dt.timedelta(days=self.r.randint(0, 500))
            c = self.pick(["dt", "ts"])
            lit = day.isoformat()
            cast = "DATE" if c == "dt" else "TIMESTAMP"
            return f"{c} {op} '{lit}'", f"{c} {op} {cast} '{lit}'"
        v = self.pick(STRINGS)
        return f"s {op} '{v}'", f"s {op} '{v}'"

    def scalar(self) -> tuple[str, str]:
        r = self.r.random()
        if r < 0.45:
            return self.num()
        if r < 0.75:
            return self.string()
        if r < 0.85:
            c = self.pick(["year(dt)", "month(dt)", "day(dt)", "dt", "ts", "year(ts)"])
            return c, c
        if r < 0.92:
            return "round(m, 1)", "round(m, 1)"
        p = self.pred(1)
        return p

    def agg(self) -> tuple[str, str]:
        kind = self.pick(["count*", "count", "countd", "sum", "min", "max", "avg"])
        if kind == "count*":
            return "count(*)", "count(*)"
        if kind == "count":
            c = self.pick(["i1", "s", "dt", "m"])
            return f"count({c})", f"count({c})"
        if kind == "countd":
            c = self.pick(["i1", "s", "ti", "dt"])
            return f"count(DISTINCT {c})", f"count(DISTINCT {c})"
        if kind in ("sum", "avg"):
            e = self.pick(NUMERIC + ["(i1 + ti)"])
            if kind == "avg" and e == "m":  # AVG(DECIMAL(10,2)) is DECIMAL(38,4) in Doris
                return "avg(m)", "round(avg(m), 4)"
            return f"{kind}({e})", f"{kind}({e})"
        c = self.pick(NUMERIC + ["s", "dt", "ts"])
        return f"{kind}({c})", f"{kind}({c})"


def gen_query(rng: random.Random) -> tuple[str, str, bool]:
    """(doris sql, duckdb sql, ordered?)"""
    g = Gen(rng)
    where = g.pred() if rng.random() < 0.7 else None
    w = (f" WHERE {where[0]}", f" WHERE {where[1]}") if where else ("", "")
    shape = rng.choice(["project", "project", "group", "group", "global", "distinct", "topn",
                        "group_topn"])
    if shape == "group_topn":
        key = rng.choice(["s", "i1 % 5", "dt", "ti > 0"])
        a1 = rng.choice([("count(*)", "count(*)"), ("sum(i1)", "sum(i1)"), ("max(m)", "max(m)"),
                         ("count(DISTINCT s)", "count(DISTINCT s)")])
        a2 = g.agg()
        desc = rng.random() < 0.5
        d = "DESC" if desc else "ASC"
        nulls = "LAST" if desc else "FIRST"
        lim = rng.randint(1, 8)
        return (f"SELECT {key}, {a1[0]} + 1, {a2[0]} FROM t{w[0]} GROUP BY {key} "
                f"HAVING count(*) > 1 ORDER BY {key} {d} LIMIT {lim}",
                f"SELECT {key}, {a1[1]} + 1, {a2[1]} FROM t{w[1]} GROUP BY {key} "
                f"HAVING count(*) > 1 ORDER BY {key} {d} NULLS {nulls} LIMIT {lim}", True)
    if shape == "project":
        items = [g.scalar() for _ in range(rng.randint(1, 4))]
        return ("SELECT " + ", ".join(i[0] for i in items) + " FROM t" + w[0],
                "SELECT " + ", ".join(i[1] for i in items) + " FROM t" + w[1], False)
    if shape in ("group", "global"):
        keys = []
        if shape == "group":
            keys = rng.sample(["i1 % 3", "s", "ti > 0", "dt", "year(dt)", "m IS NULL"],
                              rng.randint(1, 2))
        aggs = [g.agg() for _ in range(rng.randint(1, 3))]
        sel_d = ", ".join(keys + [a[0] for a in aggs])
        sel_k = ", ".join(keys + [a[1] for a in aggs])
        gb = f" GROUP BY {', '.join(keys)}" if keys else ""
        hv = ("", "")
        if keys and rng.random() < 0.3:
            n = rng.randint(1, 20)
            hv = (f" HAVING count(*) > {n}", f" HAVING count(*) > {n}")
        return (f"SELECT {sel_d} FROM t{w[0]}{gb}{hv[0]}",
                f"SELECT {sel_k} FROM t{w[1]}{gb}{hv[1]}", False)
    if shape == "distinct":
        cols = rng.sample(["s", "ti > 0", "i1 % 4", "dt", "year(ts)"], rng.randint(1, 2))
        return (f"SELECT DISTINCT {', '.join(cols)} FROM t{w[0]}",
                f"SELECT DISTINCT {', '.join(cols)} FROM t{w[1]}", False)
    # top-n: order by a few columns then k (total order), compared in order
    keys = rng.sample(["s", "i1", "d", "dt", "m", "ti"], rng.randint(1, 3))
    dirs = [rng.choice(["ASC", "DESC"]) for _ in keys]
    sel = ", ".join(keys + ["k"])
    ob_d = ", ".join(f"{k} {d}" for k, d in zip(keys, dirs)) + ", k"
    ob_k = ", ".join(f"{k} {d} NULLS {'FIRST' if d == 'ASC' else 'LAST'}"
                     for k, d in zip(keys, dirs)) + ", k"
    lim, off = rng.randint(0, 30), rng.randint(0, 20)
    lim_d = rng.choice([f" LIMIT {lim}", f" LIMIT {off}, {lim}", f" LIMIT {lim} OFFSET {off}"])
    lim_k = (f" LIMIT {lim}" if lim_d == f" LIMIT {lim}" else f" LIMIT {lim} OFFSET {off}")
    return (f"SELECT {sel} FROM t{w[0]} ORDER BY {ob_d}{lim_d}",
            f"SELECT {sel} FROM t{w[1]} ORDER BY {ob_k}{lim_k}", True)


# ---- comparison ----------------------------------------------------------------------------
def _norm(v: object) -> object:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def _sort_key(row: tuple) -> tuple:  # type: ignore[type-arg]
    out = []
    for v in row:
        if v is None:
            out.append((0, ""))
        elif isinstance(v, (int, float)):
            out.append((1, f"{float(v):.6g}"))
        else:
            out.append((2, str(v)))
    return tuple(out)


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _ours(engine: MemoryEngine, sql: str) -> list[tuple]:  # type: ignore[type-arg]
    import sqlglot

    from executor.query import execute

    from planner.query import plan_select
    from engine_fakes import session

    ctx = session("db")
    prepared = plan_select(sqlglot.parse_one(sql, read="doris"), engine, ctx, sql=sql)
    res = execute(prepared, engine, ctx)
    rows: list[tuple] = []  # type: ignore[type-arg]
    for b in res.batches:
        rows.extend(b.rows())
    return [tuple(_norm(t.to_python(v)) for t, v in zip(res.types, r)) for r in rows]


QUERIES = [gen_query(random.Random(1000 + i)) for i in range(260)]


@pytest.mark.parametrize("doris_sql,duck_sql,ordered", QUERIES,
                         ids=[f"q{i}" for i in range(len(QUERIES))])
def test_matches_duckdb(env, doris_sql: str, duck_sql: str,  # type: ignore[no-untyped-def]
                        ordered: bool) -> None:
    engine, con = env
    ours = _ours(engine, doris_sql)
    theirs = [tuple(_norm(v) for v in r) for r in con.execute(duck_sql).fetchall()]
    if not ordered:
        ours, theirs = sorted(ours, key=_sort_key), sorted(theirs, key=_sort_key)
    assert len(ours) == len(theirs), (doris_sql, ours[:5], theirs[:5])
    for a, b in zip(ours, theirs):
        assert len(a) == len(b)
        assert all(_same(x, y) for x, y in zip(a, b)), (doris_sql, duck_sql, a, b)
