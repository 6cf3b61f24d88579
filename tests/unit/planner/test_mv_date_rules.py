"""The sound rewrite rules of planner/materialized_view.py for views keyed on `e DIV a`, and
its cost check, on a real in-process engine:
- `e DIV n` from a key `e DIV a` when `a` divides `n` (DIV of DIV: a month key answers a year);
- `e >= c` / `e < c` (and `>` / `<=` as `>= c + 1` / `< c + 1`) from that key only when
  c > 0 is a multiple of `a`; every other bound (e.g. `d >= 19940101`, `d >= 0`, `d < -200`)
  must stay on the base index;
- a covering view holding more than MAX_VIEW_ROW_FRACTION of the rows of a large base
  scan is not read.
Property: random bounds and divisors around the boundaries (negative ints, 0, multiples of
100 and their neighbours, INT's limits, NULLs) give the same rows with the rewrite on and off,
equal to a pure-Python reference (truncating DIV, NULL-filtering comparisons), and the plan
reads the view exactly when a rule proves it sound."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from inprocess import InProcess

from executor.derived_columns import install
from planner.materialized_view import COST_CHECK_MIN_ROWS, MAX_VIEW_ROW_FRACTION

OFF = frozenset({"choose_rollup"})
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
DATES = [None, INT_MIN, INT_MIN + 1, -20000, -10000, -201, -200, -199, -101, -100, -99, -50, -1,
         0, 1, 50, 99, 100, 101, 199, 200, 9999, 10000, 19931231, 19940100, 19940101,
         19940131, 19940199, 19940200, 19941231, 19950100, INT_MAX - 1, INT_MAX]
BOUNDS = [INT_MIN, -20000, -10001, -10000, -201, -200, -199, -100, -1, 0, 1, 99, 100, 101, 199,
          200, 9999, 10000, 19940099, 19940100, 19940101, 19940199, 19940200, INT_MAX - 1,
          INT_MAX]
OPS = [">=", ">", "<", "<="]
DIVISORS = [100, 200, 300, 1000, 10000, 50, 7, 1]  # 50, 7, 1: not multiples of the key's 100


def _wait_views(p: InProcess) -> None:
    """Join the view-building jobs' threads (no polling), then every index is NORMAL."""
    for job in p.engine.catalog.alter_jobs():
        p.engine.rollup_jobs.wait(job.job_id, 60)
    t = p.engine.catalog.get_table("d", "t")
    assert all(ix.state == "NORMAL" for ix in p.engine.catalog.materialized_indexes(t.table_id))


@pytest.fixture(scope="module")
def proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    p = InProcess(Path(tmp_path_factory.mktemp("mvdate")))
    install(p.engine)
    p.run("CREATE DATABASE d; USE d")
    p.run("CREATE TABLE t (d INT, k VARCHAR(4), v INT) DUPLICATE KEY(d) "
          "DISTRIBUTED BY HASH(d) BUCKETS 2")
    p.run("CREATE MATERIALIZED VIEW m_month AS SELECT d DIV 100, k, SUM(v), COUNT(v) FROM t "
          "GROUP BY d DIV 100, k")
    _wait_views(p)
    rnd = random.Random(7)
    rows = []
    for i, d in enumerate(DATES * 3):  # several loads, so the view merges on read
        rows.append((d, rnd.choice(["a", "", "ü", None]), rnd.choice([None, 1, 5, -3, i])))
    for start in range(0, len(rows), 30):
        chunk = rows[start:start + 30]
        p.run("INSERT INTO t VALUES " + ", ".join(
            "(" + ", ".join("NULL" if x is None else repr(x) for x in r) + ")" for r in chunk))
    p.rows = rows  # type: ignore[attr-defined]
    yield p
    p.close()


def _index(p: InProcess, sql: str) -> str:
    (scan,) = p.scans(sql)
    return scan.index_name


def _trunc_div(x: int, n: int) -> int:
    q = abs(x) // n
    return q if x >= 0 else -q


def _cmp(x: int, op: str, c: int) -> bool:
    return {">=": x >= c, ">": x > c, "<": x < c, "<=": x <= c}[op]


def _sound(op: str, c: int) -> bool:
    c1 = c + 1 if op in (">", "<=") else c
    return c1 > 0 and c1 % 100 == 0


def _norm(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return sorted(rows, key=repr)


@pytest.mark.parametrize("seed", range(6))
def test_div_key_rules_equal_base_and_reference(proc: InProcess, seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(12):
        n = rnd.choice(DIVISORS)
        conds = [(rnd.choice(OPS), rnd.choice(BOUNDS)) for _ in range(rnd.randint(0, 2))]
        swapped = rnd.random() < 0.3  # `c < d` as well as `d > c`
        flip = {">=": "<=", ">": "<", "<": ">", "<=": ">="}
        where = " AND ".join(f"{c} {flip[op]} d" if swapped else f"d {op} {c}" for op, c in conds)
        sql = f"SELECT d DIV {n} AS g, sum(v), count(v) FROM t"
        sql += (f" WHERE {where}" if where else "") + " GROUP BY g"
        on, off = _norm(proc.query(sql)), _norm(proc.query(sql, OFF))
        assert on == off, sql
        groups: dict[object, list[int]] = {}
        for d, _k, v in proc.rows:  # type: ignore[attr-defined]
            if conds and (d is None or not all(_cmp(d, op, c) for op, c in conds)):
                continue
            acc = groups.setdefault(None if d is None else _trunc_div(d, n), [0, 0])
            if v is not None:
                acc[0] += v
                acc[1] += 1
        want = _norm([(g, s if cnt else None, cnt) for g, (s, cnt) in groups.items()])
        assert on == want, sql
        answerable = (n % 100 == 0) and all(_sound(op, c) for op, c in conds)
        assert (_index(proc, sql) == "m_month") == answerable, sql


@pytest.mark.parametrize("sql", [
    "SELECT sum(v) FROM t WHERE d >= 19940101",  # 19940100 would pass `d DIV 100 >= 199401`
    "SELECT sum(v) FROM t WHERE d <= 19940131",
    "SELECT sum(v) FROM t WHERE d >= 0",  # d = -50: -50 DIV 100 = 0 under truncation
    "SELECT sum(v) FROM t WHERE d < -200",
    "SELECT sum(v) FROM t WHERE d = 19940100",
    "SELECT d DIV 50 AS g, sum(v) FROM t GROUP BY g",
])
def test_unsound_bounds_stay_on_the_base_index(proc: InProcess, sql: str) -> None:
    assert _index(proc, sql) == "t"
    assert _norm(proc.query(sql)) == _norm(proc.query(sql, OFF))


@pytest.mark.parametrize("sql", [
    "SELECT d DIV 10000 AS y, sum(v) FROM t WHERE d >= 19940100 AND d <= 19941299 GROUP BY y",
    "SELECT k, sum(v) FROM t WHERE 19940100 <= d AND d < 19950100 GROUP BY k",
    "SELECT count(v) FROM t WHERE d > 99",
])
def test_month_aligned_bounds_read_the_view(proc: InProcess, sql: str) -> None:
    assert _index(proc, sql) == "m_month"
    assert _norm(proc.query(sql)) == _norm(proc.query(sql, OFF))


def test_a_view_as_large_as_the_base_is_not_read(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        install(p.engine)
        p.run("CREATE DATABASE d; USE d")
        p.run("CREATE TABLE t (d INT, k INT, v INT) DUPLICATE KEY(d) "
              "DISTRIBUTED BY HASH(d) BUCKETS 1")
        p.run("CREATE MATERIALIZED VIEW m_fine AS SELECT d, k, SUM(v) FROM t GROUP BY d, k")
        _wait_views(p)  # one view job at a time per table
        p.run("CREATE MATERIALIZED VIEW m_coarse AS SELECT k, SUM(v) FROM t GROUP BY k")
        _wait_views(p)
        p.run("CREATE MATERIALIZED VIEW m_third AS SELECT d DIV 3, SUM(v) FROM t GROUP BY d DIV 3")
        _wait_views(p)
        n = COST_CHECK_MIN_ROWS * 2
        p.run("INSERT INTO t VALUES " + ", ".join(f"({i}, {i % 3}, {i})" for i in range(n)))
        fine = "SELECT d, k, sum(v) FROM t GROUP BY d, k"
        assert _index(p, fine) == "t"  # m_fine holds every base row
        assert MAX_VIEW_ROW_FRACTION < 1 / 3
        third = "SELECT d DIV 3 AS g, sum(v) FROM t GROUP BY g"
        assert _index(p, third) == "t"  # m_third holds a third of the base rows
        assert _norm(p.query(third)) == _norm(p.query(third, OFF))
        coarse = "SELECT k, sum(v) FROM t GROUP BY k"
        assert _index(p, coarse) == "m_coarse"
        assert _norm(p.query(coarse)) == _norm(p.query(coarse, OFF))
        assert len(p.query(fine)) == n
    finally:
        p.close()


@pytest.mark.parametrize("outside", ["(19971299, 'a', 100)", "(NULL, 'a', 100)",
                                     "(-19971231, 'a', 100)", "(19911231, 'b', 7)"])
def test_filters_every_stored_row_satisfies_are_dropped_for_a_year_view(
        tmp_path: Path, outside: str) -> None:
    """Zone maps prove `d >= 19920101 AND d <= 19971231` for every stored row, so a view keyed
    on `d DIV 10000` answers; one stored row outside (19971299, a NULL, a negative, 19911231)
    and the proof fails, so the base index answers. Rewrite on and off agree at every step.
    (A DELETE cannot name `d`, which the view lacks, so deleted rows are not exercised.)"""
    p = InProcess(tmp_path)
    try:
        install(p.engine)
        p.run("CREATE DATABASE d; USE d")
        p.run("CREATE TABLE t (d INT, k VARCHAR(4), v INT) DUPLICATE KEY(d) "
              "DISTRIBUTED BY HASH(d) BUCKETS 2")
        p.run("CREATE MATERIALIZED VIEW m_year AS SELECT d DIV 10000, k, SUM(v) FROM t "
              "GROUP BY d DIV 10000, k")
        _wait_views(p)
        p.run("INSERT INTO t VALUES (19920101, 'a', 1), (19931231, 'b', 2), (19971231, 'a', 3)")
        p.run("INSERT INTO t VALUES (19950615, '', 4), (19960229, 'ü', NULL)")
        ranged = ("SELECT d DIV 10000 AS y, k, sum(v) FROM t WHERE d >= 19920101 AND "
                  "19971231 >= d GROUP BY y, k")
        narrower = "SELECT k, sum(v) FROM t WHERE d >= 19930101 GROUP BY k"
        assert _index(p, ranged) == "m_year"
        assert _index(p, narrower) == "t"  # 19920101 is stored: the filter removes rows
        for sql in (ranged, narrower):
            assert _norm(p.query(sql)) == _norm(p.query(sql, OFF))
        p.run(f"INSERT INTO t VALUES {outside}")
        assert _index(p, ranged) == "t"
        assert _norm(p.query(ranged)) == _norm(p.query(ranged, OFF))
    finally:
        p.close()
