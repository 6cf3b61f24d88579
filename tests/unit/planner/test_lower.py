"""Lowering (planner/lower.py): physical nodes carry what their operators need as physical data,
never a logical plan node; the scan contract splits a scan's filters once; runtime filters name
their join and target scan by physical node id."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from planner.aggregate_phase import AggPhase
from planner.fragment import DistributedPlan
from planner.logical import LogicalPlan
from planner.partitioning import PartitionKind
from planner.physical import (
    Carries,
    Exchange,
    HashAggregate,
    HashJoin,
    OlapScan,
    PhysicalNode,
    TopN,
    walk,
)
from sql.binder.expressions import ColumnRef, Expr
from storage.types import INT, varchar

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "executor"))
from engine_fakes import MemoryEngine, session

QUERIES = [
    "SELECT a FROM t WHERE a > 1 AND s LIKE 'x%'",
    "SELECT t.s, u.c FROM t JOIN u ON t.a = u.a WHERE u.c > 0",
    "SELECT t.s FROM t LEFT JOIN u ON t.a = u.a AND u.c < t.a",
    "SELECT s, count(a), sum(a) FROM t GROUP BY s",
    "SELECT count(DISTINCT s) FROM t",
    "SELECT a, rank() OVER (PARTITION BY s ORDER BY a) FROM t",
    "SELECT a FROM t UNION ALL SELECT c FROM u",
    "SELECT a FROM t INTERSECT SELECT a FROM u",
    "SELECT a, s FROM t ORDER BY a DESC LIMIT 1 OFFSET 1",
    "SELECT a FROM t ORDER BY s",
    "SELECT a FROM t LIMIT 1",
    "SELECT 1 + 2, 'x'",
    "SELECT a FROM t WHERE a = (SELECT max(c) FROM u)",
    "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)",
    "SELECT a + 1 AS b FROM t WHERE a IN (1, 2) OR s = 'y'",
    "SELECT t.a FROM t, u",
]


@pytest.fixture(scope="module")
def engine() -> MemoryEngine:
    e = MemoryEngine()
    e.create_table("db", "t", [("a", INT), ("s", varchar(5))], [(1, "x"), (2, "y")])
    e.create_table("db", "u", [("a", INT), ("c", INT)], [(1, 3)])
    return e


def _dplan(engine: MemoryEngine, sql: str) -> DistributedPlan:
    from planner.query import plan_select
    from sql.parser.dialect import parse_one

    return plan_select(parse_one(sql), engine, session()).dplan


def _nodes(dplan: DistributedPlan) -> list[PhysicalNode]:
    return [n for f in dplan.fragments for n in walk(f.root)]


def _logical_values(value: object, seen: set[int]) -> list[str]:
    """Every logical plan node reachable from `value` through dataclass fields and tuples."""
    if id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, LogicalPlan):
        return [type(value).__name__]
    if isinstance(value, (Expr, str, int, float, bool)) or value is None:
        return []  # bound expressions are physical data
    if isinstance(value, (tuple, list, frozenset, set)):
        return [x for v in value for x in _logical_values(v, seen)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _logical_values(v, seen)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [x for f in dataclasses.fields(value)
                for x in _logical_values(getattr(value, f.name), seen)]
    return []


@pytest.mark.parametrize("sql", QUERIES)
def test_physical_nodes_hold_no_logical_plan(engine: MemoryEngine, sql: str) -> None:
    dplan = _dplan(engine, sql)
    nodes = _nodes(dplan)
    assert nodes
    for node in nodes:
        found = _logical_values(node, set())
        assert not found, (type(node).__name__, node.id, found)


def test_the_checker_finds_a_logical_node() -> None:
    """The walk above does look into fields: a logical node in a tuple field is found."""
    from planner.logical import LogicalValues

    @dataclasses.dataclass(frozen=True)
    class Holder:
        parts: tuple[object, ...]

    plan = LogicalValues(("x",), (INT,), ())
    assert _logical_values(Holder((1, (plan,))), set()) == ["LogicalValues"]


def test_scan_carries_ranges_and_split_filters(engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT a FROM t WHERE a > 1 AND s LIKE 'x%'")
    (scan,) = [n for n in _nodes(dplan) if isinstance(n, OlapScan)]
    tablets = engine.tablets(scan.table_id, None, scan.index_id)
    assert {r.tablet.tablet_id for r in scan.ranges} == {t.tablet_id for t in tablets}
    assert scan.row_count == 2 and scan.columns[:1] == ("a",)
    # `a > 1` goes to storage, the LIKE has no storage form: the scan evaluates it
    assert [(p.column, p.op, p.values) for p in scan.storage_predicates] == [("a", ">", (1,))]
    assert scan.residual_filter is not None and "LIKE" in scan.residual_filter.sql().upper()
    assert scan.index_name == "t" and scan.preaggregation


def test_scan_without_residual_filter(engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT a FROM t WHERE a = 2")
    (scan,) = [n for n in _nodes(dplan) if isinstance(n, OlapScan)]
    assert scan.residual_filter is None and len(scan.storage_predicates) == 1


def test_runtime_filters_name_nodes_by_id(engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT t.s FROM t JOIN u ON t.a = u.a")
    nodes = {n.id: n for n in _nodes(dplan)}
    (desc,) = dplan.runtime_filters
    join, target = nodes[desc.join_node], nodes[desc.target_node]
    assert isinstance(join, HashJoin) and isinstance(target, OlapScan)
    assert target.table == "t" and desc.column == "a"
    assert join.build_filters == (desc,) and join.build_filter_ids == (desc.id,)
    assert target.runtime_filter_ids == (desc.id,)
    assert isinstance(desc.build_key, ColumnRef)
    assert not hasattr(desc, "join_path") and not hasattr(desc, "target_path")


def test_exchanges_name_what_they_move(engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT s, count(a) FROM t GROUP BY s")
    exchanges = [n for n in _nodes(dplan) if isinstance(n, Exchange)]
    (states,) = [e for e in exchanges if e.carries is Carries.AGG_STATE]
    # the partial states come from the `update serialize` aggregate at the sender's root
    assert isinstance(states.source, HashAggregate)
    assert states.source.phase is AggPhase.UPDATE_SERIALIZE
    assert [n for n, _ in states.source.exprs.group_by] == [states.names[0]]
    assert states.partition.kind is PartitionKind.HASH


def test_top_n_gather_merges_from_the_local_top_n(engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT a, s FROM t ORDER BY a DESC LIMIT 1 OFFSET 1")
    (ex,) = [n for n in _nodes(dplan) if isinstance(n, Exchange)]
    assert ex.carries is Carries.TOP_N and len(ex.names) == 2
    assert isinstance(ex.source, TopN) and ex.source.local
    assert (ex.source.top, ex.source.offset) == (1, 1) and ex.source.order_keys[0].desc
