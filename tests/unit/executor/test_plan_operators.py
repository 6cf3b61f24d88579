"""The operators a query runs are exactly the physical nodes its EXPLAIN prints: for the join
and aggregate differential corpora (planned modes and all-shuffle), in fragments of several
instances, every instance of a fragment builds one operator per printed node of the fragment,
of the matching kind, registered under the node's id, and no other (executor/build.py, 1:1).
Projections and plain LIMITs are no nodes: they are fields of the node below (`folded`),
printed as its `limit:` line, and run as part of it. An exchange's operator is its receiving
end (a merging TOP-N for a TOP-N gather)."""

from __future__ import annotations

import pytest
import sqlglot
from engine_fakes import session
from test_differential import QUERIES as AGG_QUERIES
from test_differential import env as agg_env  # noqa: F401
from test_differential_joins import QUERIES as JOIN_QUERIES
from test_differential_joins import env  # noqa: F401

from executor import query
from executor.coordinator import Coordinator
from executor.query import execute
from planner.fragment import DistributedPlan
from planner.physical import Exchange, PhysicalNode
from planner.query import plan_select

# printed node -> the operator class that runs it
OPERATOR_OF = {
    "VOlapScanNode": {"Scan"}, "VFILE_SCAN_NODE": {"FileScan"},
    "VHASH JOIN": {"HashJoin"}, "VNESTED LOOP JOIN": {"HashJoin"},
    "VAGGREGATE (update finalize)": {"HashAggregate"},
    "VAGGREGATE (update serialize)": {"PartialAggregate"},
    "VAGGREGATE (merge finalize)": {"MergeAggregate"},
    "VTOP-N": {"TopN"}, "VSORT": {"Sort"}, "VSELECT": {"Filter"},
    "VANALYTIC-EVAL": {"Window"}, "VUNION": {"SetOperation", "Values"},
    "VINTERSECT": {"SetOperation"}, "VEXCEPT": {"SetOperation"},
    "VASSERT-NUM-ROWS": {"AssertOneRow"},
}
RECEIVING = {"rows": {"ExchangeSource", "InlineExchange"},
             "agg_state": {"ExchangeSource", "InlineExchange"}, "top_n": {"TopN"}}


@pytest.fixture(autouse=True)
def four_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query, "scan_parallelism", lambda ctx: 4)


def _printed(root: PhysicalNode) -> list[PhysicalNode]:
    out, stack = [], [root]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.children)  # an exchange's sender is another fragment
    return out


def check_operators(dplan: DistributedPlan, run: Coordinator) -> int:
    checked = 0
    for frag in dplan.fragments:
        frun = run.fragment(frag.id)
        assert frun is not None
        nodes = _printed(frag.root)
        for inst in frun.instances:
            ops = {node_id: type(op).__name__ for node_id, op in inst.ops.items()}
            assert sorted(ops) == sorted(n.id for n in nodes), (frag.id, ops, nodes)
            for n in nodes:
                if isinstance(n, Exchange):
                    assert ops[n.id] in RECEIVING[n.carries.value], (frag.id, n.id, ops[n.id])
                    continue
                assert ops[n.id] in OPERATOR_OF[n.name], (frag.id, n.id, n.name, ops)
                checked += 1
    return checked


def _run(engine, sql: str, variables: dict[str, object]) -> int:  # type: ignore[no-untyped-def]
    ctx = session("db", {"shaledb_small_fragment_rows": 0, **variables})
    prepared = plan_select(sqlglot.parse_one(sql, read="doris"), engine, ctx, sql=sql)
    res = execute(prepared, engine, ctx)
    for _ in res.batches:
        pass
    assert res.coordinator is not None
    return check_operators(prepared.dplan, res.coordinator)


@pytest.mark.parametrize("variables", [{}, {"broadcast_row_count_limit": 0}],
                         ids=["planned", "shuffle"])
def test_join_queries_run_the_printed_nodes(env, variables: dict[str, object]) -> None:  # noqa: F811
    engine, _ = env
    assert sum(_run(engine, sql, variables) for sql, _ in JOIN_QUERIES[:60]) > 300


def test_aggregate_queries_run_the_printed_nodes(agg_env) -> None:  # noqa: F811
    engine, _ = agg_env
    assert sum(_run(engine, sql, {}) for sql, _, _ in AGG_QUERIES[:80]) > 300
