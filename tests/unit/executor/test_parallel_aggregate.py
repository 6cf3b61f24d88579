"""Parallel aggregation (executor/parallel_aggregate.py): with the row threshold at 0 every
aggregate over a scan pipeline runs its update phase on two workers and merges; the 260
differential queries must still equal DuckDB, and the plan really took the parallel path."""

from __future__ import annotations

import pytest
import sqlglot
from engine_fakes import session
from test_differential import QUERIES, _norm, _ours, _same, _sort_key, env  # noqa: F401

import executor.parallel_aggregate as pa
from executor.build import build_operator
from executor.query import plan_select


@pytest.fixture(autouse=True)
def always_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pa, "PARALLEL_MIN_ROWS", 0)


AGG_QUERIES = [q for q in QUERIES if "GROUP BY" in q[0] or "count(" in q[0].lower()
               or "sum(" in q[0].lower()]


@pytest.mark.parametrize("doris_sql,duck_sql,ordered", AGG_QUERIES,
                         ids=[f"a{i}" for i in range(len(AGG_QUERIES))])
def test_parallel_aggregates_match_duckdb(env, doris_sql: str, duck_sql: str,  # noqa: F811
                                          ordered: bool) -> None:
    engine, con = env
    ours = _ours(engine, doris_sql)
    theirs = [tuple(_norm(v) for v in r) for r in con.execute(duck_sql).fetchall()]
    if not ordered:
        ours, theirs = sorted(ours, key=_sort_key), sorted(theirs, key=_sort_key)
    assert len(ours) == len(theirs), (doris_sql, ours[:5], theirs[:5])
    for a, b in zip(ours, theirs):
        assert all(_same(x, y) for x, y in zip(a, b)), (doris_sql, a, b)


def test_the_parallel_path_runs(env) -> None:  # noqa: F811
    engine, _ = env
    sql = "SELECT s, count(*), sum(i1), min(d), max(s) FROM t GROUP BY s"
    prepared = plan_select(sqlglot.parse_one(sql, read="doris"), engine, session("db"), sql=sql)
    root = build_operator(prepared.plan)
    agg = next(op for op in _walk(root) if isinstance(op, pa.ParallelAggregate))
    from executor.operator import ExecContext

    root.open(ExecContext(storage=engine, batch_size=7, parallelism=2))
    rows = sum(b.num_rows for b in root.batches())
    root.close()
    assert agg.instances == 2 and rows > 0


def _walk(op):  # type: ignore[no-untyped-def]
    yield op
    for c in op.children:
        yield from _walk(c)
