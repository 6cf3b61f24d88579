"""Fragment instances (executor/coordinator.py) against DuckDB: the join and aggregate
differential queries run with four instances per fragment, once with the planner's join
modes and once with every join forced to a shuffle (`broadcast_row_count_limit = 0`), so
rows cross hash exchanges, partial aggregate states are split by group hash, and TOP-N merges
above a gather. The test also checks that those paths were really taken."""

from __future__ import annotations

from collections import Counter

import pytest
import sqlglot
from engine_fakes import session
from test_differential import QUERIES as AGG_QUERIES
from test_differential import _norm, _same, _sort_key
from test_differential import env as agg_env  # noqa: F401
from test_differential_joins import QUERIES as JOIN_QUERIES
from test_differential_joins import env  # noqa: F401

from executor import query
from executor.query import execute
from planner.partitioning import PartitionKind
from planner.physical import Carries
from planner.query import plan_select

INSTANCES = 4
SEEN: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def four_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query, "scan_parallelism", lambda ctx: INSTANCES)


def _run(engine, sql: str, variables: dict[str, object]) -> list[tuple]:  # type: ignore[no-untyped-def,type-arg]
    ctx = session("db", {"shaledb_small_fragment_rows": 0, **variables})  # many instances
    prepared = plan_select(sqlglot.parse_one(sql, read="doris"), engine, ctx, sql=sql)
    res = execute(prepared, engine, ctx)
    rows: list[tuple] = []  # type: ignore[type-arg]
    for b in res.batches:
        rows.extend(b.rows())
    run = res.coordinator
    assert run is not None
    for frag in run.frags:
        for inst in frag.instances:
            for op in inst.ops.values():
                SEEN[type(op).__name__] += 1
                if getattr(op, "shared_build", None) is not None and not op.build_owner:
                    SEEN["shared broadcast build"] += 1  # probes a table instance 0 built
        if len(frag.instances) > 1:
            SEEN["multi-instance fragment"] += 1
    for link in run.links:
        kind = {PartitionKind.UNPARTITIONED: "gather", PartitionKind.HASH: "hash",
                PartitionKind.BUCKET_SHUFFLE: "bucket"}[link.node.partition.kind]
        kind = "broadcast" if link.node.replicated else kind
        aggregate = link.node.carries is Carries.AGG_STATE
        SEEN[f"exchange {kind}{' aggregate' if aggregate else ''}"] += 1
    return [tuple(_norm(t.to_python(v)) for t, v in zip(res.types, r)) for r in rows]


def _check(engine, con, doris_sql: str, duck_sql: str,  # type: ignore[no-untyped-def]
           variables: dict[str, object], ordered: bool = False) -> None:
    ours = _run(engine, doris_sql, variables)
    theirs = [tuple(_norm(v) for v in r) for r in con.execute(duck_sql).fetchall()]
    if not ordered:
        ours, theirs = sorted(ours, key=_sort_key), sorted(theirs, key=_sort_key)
    assert len(ours) == len(theirs), (doris_sql, ours[:5], theirs[:5])
    for a, b in zip(ours, theirs):
        assert all(_same(x, y) for x, y in zip(a, b)), (doris_sql, a, b)


SHUFFLE = {"broadcast_row_count_limit": 0}
MODES = {"planned": {}, "shuffle": SHUFFLE}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("doris_sql,duck_sql", JOIN_QUERIES[:120],
                         ids=[f"j{i}" for i in range(len(JOIN_QUERIES[:120]))])
def test_joins_with_four_instances_match_duckdb(env, mode: str, doris_sql: str,  # noqa: F811
                                                duck_sql: str) -> None:
    engine, con = env
    _check(engine, con, doris_sql, duck_sql, MODES[mode])


@pytest.mark.parametrize("doris_sql,duck_sql,ordered", AGG_QUERIES[:150],
                         ids=[f"a{i}" for i in range(len(AGG_QUERIES[:150]))])
def test_aggregates_with_four_instances_match_duckdb(agg_env, doris_sql: str,  # noqa: F811
                                                     duck_sql: str, ordered: bool) -> None:
    engine, con = agg_env
    _check(engine, con, doris_sql, duck_sql, {}, ordered)


def test_the_distributed_paths_ran(env, agg_env) -> None:  # noqa: F811
    """The differential queries exercise shuffles of both join sides, broadcasts, split
    partial states, raw-row aggregate shuffles (DISTINCT) and merging TOP-Ns, in fragments of
    several instances (counted again here so the test stands on its own)."""
    SEEN.clear()
    for doris_sql, duck_sql in JOIN_QUERIES[:40]:
        _check(*env, doris_sql, duck_sql, SHUFFLE)
        _check(*env, doris_sql, duck_sql, {})
    for doris_sql, duck_sql, ordered in AGG_QUERIES[:60]:
        _check(*agg_env, doris_sql, duck_sql, {}, ordered)
    assert SEEN["multi-instance fragment"] > 100
    for key in ("exchange hash", "exchange broadcast", "exchange hash aggregate",
                "exchange gather aggregate", "exchange gather", "PartialAggregate",
                "MergeAggregate", "ExchangeSource", "HashJoin", "TopN",
                "shared broadcast build"):
        assert SEEN[key] >= 5, (key, SEEN)
