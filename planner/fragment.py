"""Plan fragments: the pieces of a distributed plan that run as instances, each with its
typed partitioning and its sink (Doris' `PlanFragment` and `DataSink`).

A fragment is a tree of planner/physical.py nodes whose exchanges receive from other
fragments. `partition` says how the fragment's rows are spread (planner/partitioning.py); the
sink says where its output goes: the client (`ResultSink`, fragment 0 only) or the exchange
`exchange_id` of another fragment, routed by `partition` (`StreamSink`). Each renders its own
EXPLAIN lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.partitioning import DataPartition

if TYPE_CHECKING:  # pragma: no cover
    from planner.physical import PhysicalNode
    from planner.runtime_filters import RuntimeFilterDesc


@dataclass(frozen=True, slots=True)
class ResultSink:
    """The query's result, to the client over the MySQL protocol."""

    def explain_lines(self) -> list[str]:
        return ["VRESULT SINK", "   MYSQL_PROTOCAL"]  # (sic) Doris' spelling


@dataclass(frozen=True, slots=True)
class StreamSink:
    """Into the exchange `exchange_id` of the receiving fragment, routed by `partition`."""

    exchange_id: int
    partition: DataPartition

    def explain_lines(self) -> list[str]:
        return ["STREAM DATA SINK", f"  EXCHANGE ID: {self.exchange_id:02d}",
                f"  {self.partition.explain()}"]


@dataclass(frozen=True, slots=True)
class PlanFragment:
    id: int
    root: PhysicalNode
    partition: DataPartition
    sink: ResultSink | StreamSink
    output_exprs: tuple[str, ...] = ()  # fragment 0: the result columns as EXPLAIN prints them
    has_colo: bool = False  # holds a colocate join


@dataclass
class DistributedPlan:
    """A query's physical plan: its fragments (fragment 0 ends in the result sink) and every
    runtime filter, each naming its join and target scan by node id."""

    fragments: list[PlanFragment]
    runtime_filters: tuple[RuntimeFilterDesc, ...]
