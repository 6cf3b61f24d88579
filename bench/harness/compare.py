"""The alternating query runner: each query in ShaleDB (pymysql) and in DuckDB in turn, one
warm-up each, then `runs` rounds alternating ShaleDB / DuckDB, the median of each; rows must be
identical (tests/tpch/tpch_common.compare: order-insensitive unless the query orders, DECIMAL
scale tolerance) or the run fails with `ResultMismatch`."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import tpch_common as C


class ResultMismatch(AssertionError):
    """ShaleDB and DuckDB returned different rows: the benchmark is void."""


@dataclass
class QueryTiming:
    query: str
    shale_ms: float
    duck_ms: float
    rows: int

    @property
    def ratio(self) -> float:
        return self.shale_ms / self.duck_ms if self.duck_ms > 0 else float("inf")


def _timed(fn: Callable[[], list[tuple]]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def run_query(qid: str, cur, duck, sql: str, duck_sql: str, ordered: bool,
              runs: int) -> QueryTiming:
    def shale() -> list[tuple]:
        cur.execute(sql)
        return list(cur.fetchall())

    def duck_run() -> list[tuple]:
        return duck.execute(duck_sql).fetchall()

    got, expected = shale(), duck_run()  # warm-up (numba compilation, caches) and the check
    scales = ([max(-v.as_tuple().exponent, 0) if hasattr(v, "as_tuple") else None
               for v in got[0]] if got else None)
    diff = C.compare(C.normalize_py(got), C.normalize_py(expected), ordered, scales)
    if diff is not None:
        raise ResultMismatch(f"Q{qid}: ShaleDB and DuckDB differ: {diff}")
    s_times, d_times = [], []
    for _ in range(runs):
        s_times.append(_timed(shale))
        d_times.append(_timed(duck_run))
    return QueryTiming(qid, statistics.median(s_times), statistics.median(d_times), len(expected))


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


@dataclass
class Pass:
    """One pass over the queries (right after the load, or settled)."""

    label: str
    timings: list[QueryTiming]

    @property
    def geomean_ratio(self) -> float:
        return geomean([t.ratio for t in self.timings])

    @property
    def total_shale_ms(self) -> float:
        return sum(t.shale_ms for t in self.timings)

    @property
    def total_duck_ms(self) -> float:
        return sum(t.duck_ms for t in self.timings)


def run_pass(label: str, cur, duck, queries: dict[str, str],
             duck_sql: Callable[[str], str], ordered: Callable[[str], bool], runs: int,
             echo: Callable[[str], None] = print) -> Pass:
    out = []
    for qid, sql in queries.items():
        t = run_query(qid, cur, duck, sql, duck_sql(sql), ordered(sql), runs)
        echo(f"  [{label}] Q{qid:<5} shaledb {t.shale_ms:9.1f} ms  duckdb {t.duck_ms:8.1f} ms"
             f"  {t.ratio:6.2f}x  rows {t.rows}")
        out.append(t)
    return Pass(label, out)
