"""Typed partitions and planner-decided aggregate phases (planner/partitioning.py,
planner/aggregate_phase.py): EXPLAIN prints what the executor runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from planner.aggregate_phase import AggPhase
from planner.explain import explain_lines
from planner.fragment import DistributedPlan
from planner.partitioning import (
    RANDOM,
    UNPARTITIONED,
    DataPartition,
    JoinMode,
    PartitionKind,
    TableBucketing,
)
from planner.physical import Carries, Exchange, HashAggregate, HashJoin, PhysicalNode
from sql.binder.expressions import ColumnRef
from storage.types import INT, varchar

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "executor"))
from engine_fakes import MemoryEngine, session


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
    out: list[PhysicalNode] = []
    for frag in dplan.fragments:
        stack = [frag.root]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(n.children)
    return out


def test_partition_text_is_rendered_from_the_kind() -> None:
    assert UNPARTITIONED.explain() == "UNPARTITIONED" and not UNPARTITIONED.is_partitioned
    assert RANDOM.explain() == "RANDOM" and RANDOM.is_partitioned
    by_keys = DataPartition(PartitionKind.HASH, (ColumnRef("k", INT),), labels=("k[#1]",))
    assert by_keys.explain() == "HASH_PARTITIONED: k[#1]"
    bucket = DataPartition(PartitionKind.BUCKET_SHUFFLE, (ColumnRef("k", INT),),
                           TableBucketing(7, 3, (INT,)), ("k",))
    assert bucket.explain() == "BUCKET_SHFFULE_HASH_PARTITIONED: k"


def test_fragments_carry_typed_partitions(engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT s, count(a) FROM t GROUP BY s")
    kinds = [f.partition.kind for f in dplan.fragments]
    assert kinds[0] is PartitionKind.UNPARTITIONED
    assert PartitionKind.RANDOM in kinds  # the scan fragment of a RANDOM table
    assert PartitionKind.HASH in kinds  # the merging fragment, hashed on the group key


def test_mergeable_aggregate_runs_in_two_phases(engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT s, count(a) FROM t GROUP BY s")
    phases = [n.phase for n in _nodes(dplan) if isinstance(n, HashAggregate)]
    assert sorted(p.name for p in phases) == ["MERGE_FINALIZE", "UPDATE_SERIALIZE"]
    text = "\n".join(explain_lines(dplan))
    assert "(update serialize)" in text and "(merge finalize)" in text


def test_aggregate_without_mergeable_state_is_one_phase_above_a_row_exchange(
        engine: MemoryEngine) -> None:
    """COUNT(DISTINCT) with group keys has no kernel state: the rows are shuffled on the group
    key and aggregated once; EXPLAIN says so (it used to print two phases)."""
    dplan = _dplan(engine, "SELECT s, count(DISTINCT a) FROM t GROUP BY s")
    (agg,) = [n for n in _nodes(dplan) if isinstance(n, HashAggregate)]
    assert agg.phase is AggPhase.ONE_PHASE
    (ex,) = agg.children
    assert isinstance(ex, Exchange)
    assert ex.partition.kind is PartitionKind.HASH and ex.carries is Carries.ROWS
    text = "\n".join(explain_lines(dplan))
    assert "(update serialize)" not in text and "VAGGREGATE (update finalize)" in text


def test_join_modes_are_enums(engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT t.s FROM t JOIN u ON t.a = u.a")
    (join,) = [n for n in _nodes(dplan) if isinstance(n, HashJoin)]
    assert isinstance(join.mode, JoinMode)
    assert f"({join.mode.value})" in "\n".join(explain_lines(dplan))


def test_rejected_join_modes_are_typed_and_printed_by_explain_verbose(
        engine: MemoryEngine) -> None:
    dplan = _dplan(engine, "SELECT t.s FROM t JOIN u ON t.a = u.a")
    (join,) = [n for n in _nodes(dplan) if isinstance(n, HashJoin)]
    assert join.mode is JoinMode.BROADCAST  # a tiny right side
    assert [m for m, _ in join.rejected] == [JoinMode.COLOCATE, JoinMode.BUCKET_SHUFFLE]
    verbose = "\n".join(explain_lines(dplan, verbose=True))
    for mode, why in join.rejected:
        word = "colocate" if mode is JoinMode.COLOCATE else "bucket shuffle"
        assert f"{word}: false, reason: {why}" in verbose
