"""The view rewrite's cost check counts the view's prefix index (planner/materialized_view.py
`_bound_prefix`): a covering view holding more than MAX_VIEW_ROW_FRACTION of a large base
scan's rows is read when the query binds its leading key by `=` / IN (the scan seeks to those
rows), and not otherwise; among covering views the one with fewer expected reads wins. The
answers equal the base index's (rewrite off) either way, with NULL keys and empty strings."""

from __future__ import annotations

from pathlib import Path

from inprocess import InProcess

from executor.derived_columns import install
from planner.materialized_view import (
    COST_CHECK_MIN_ROWS,
    MAX_VIEW_ROW_FRACTION,
    PREFIX_KEY_SELECTIVITY,
)

OFF = frozenset({"choose_rollup"})


def _norm(rows: list[tuple[object, ...]]) -> list[str]:
    return sorted(map(repr, rows))


def _index(p: InProcess, sql: str) -> str:
    (scan,) = p.scans(sql)
    return scan.index_name


def test_a_bound_leading_key_makes_a_large_view_worth_reading(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        install(p.engine)
        p.run("CREATE DATABASE d; USE d")
        p.run("CREATE TABLE t (d INT, a VARCHAR(4), b INT, v INT) DUPLICATE KEY(d) "
              "DISTRIBUTED BY HASH(d) BUCKETS 2")
        for name, keys in (("m_ab", "a, b"), ("m_ba", "b, a")):
            p.run(f"CREATE MATERIALIZED VIEW {name} AS SELECT {keys}, SUM(v) FROM t "
                  f"GROUP BY {keys}")
            for job in p.engine.catalog.alter_jobs():
                p.engine.rollup_jobs.wait(job.job_id, 60)
        n = COST_CHECK_MIN_ROWS * 4
        strs = ["x", "", "ü", None]
        rows = [f"({i}, {'NULL' if strs[i % 4] is None else repr(strs[i % 4])}, "
                f"{i // 4 % 400}, {i})" for i in range(n)]
        p.run("INSERT INTO t VALUES " + ", ".join(rows))
        # each view holds 4 * 400 = 1600 groups of 4096 base rows: more than the fraction
        assert 1600 > n * MAX_VIEW_ROW_FRACTION
        assert 1600 * PREFIX_KEY_SELECTIVITY <= n * MAX_VIEW_ROW_FRACTION
        unbound = "SELECT a, b, sum(v) FROM t GROUP BY a, b"
        assert _index(p, unbound) == "t"
        on_a = "SELECT b, sum(v) FROM t WHERE a = '' GROUP BY b"
        assert _index(p, on_a) == "m_ab"
        on_b = "SELECT a, sum(v) FROM t WHERE b IN (3, 399) GROUP BY a"
        assert _index(p, on_b) == "m_ba"
        on_second = "SELECT a, sum(v) FROM t WHERE a IS NULL GROUP BY a"  # IS NULL: not counted
        assert _index(p, on_second) == "t"
        for sql in (unbound, on_a, on_b, on_second,
                    "SELECT sum(v) FROM t WHERE a = 'ü' AND b = 0"):
            assert _norm(p.query(sql)) == _norm(p.query(sql, OFF)), sql
    finally:
        p.close()
