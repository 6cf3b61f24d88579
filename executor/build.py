"""Plan -> operator tree: one operator class per logical node type (same stem).
Upstream: BusTub `ExecutorFactory`, Doris `PlanFragmentExecutor` node creation."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from executor.assert_one_row import AssertOneRow
from executor.file_scan import FileScan
from executor.filter import Filter
from executor.hash_join import HashJoin
from executor.hash_aggregate import HashAggregate
from executor.limit import Limit
from executor.operator import Operator
from executor.project import Project
from executor.scan import Scan
from executor.set_operation import SetOperation
from executor.sort import Sort
from executor.state import InstanceStates
from executor.top_n import TopN
from executor.values import Values
from executor.window import Window
from planner.logical import (
    LogicalAggregate, LogicalAssertOneRow, LogicalFileScan, LogicalFilter, LogicalJoin,
    LogicalLimit, LogicalPlan, LogicalProject, LogicalScan, LogicalSetOp, LogicalSort,
    LogicalValues, LogicalWindow,
)
from planner.runtime_filters import RuntimeFilterDesc


Substitute = Callable[[LogicalPlan, tuple[int, ...]], Operator]


def build_operator(plan: LogicalPlan, runtime_filters: Sequence[RuntimeFilterDesc] = (),
                   *, path: tuple[int, ...] = (),
                   substitute: dict[tuple[int, ...], Substitute] | None = None,
                   built: dict[tuple[int, ...], Operator] | None = None,
                   states: InstanceStates | None = None) -> Operator:
    """The operator tree of `plan`; each hash join is given the scans of its planned runtime
    filters that are built here (those in another fragment reach it through a
    RuntimeFilterState in `states`).

    Fragment instances (executor/coordinator.py) build a subtree: `path` is where `plan` sits
    in the whole plan, `substitute` maps plan paths to a builder of what runs there instead
    (an exchange's receiving end), `built` collects the operator of every path (the
    profile reads their counters), and `states` holds the query-wide shared states the
    coordinator created for this instance (shared broadcast builds, cross-fragment runtime
    filters), handed to the operators' constructors."""
    ops: dict[tuple[int, ...], Operator] = {} if built is None else built
    by_join: dict[tuple[int, ...], list[RuntimeFilterDesc]] = {}
    for desc in runtime_filters:
        by_join.setdefault(desc.join_path, []).append(desc)
    b = _Builder(substitute or {}, ops, by_join, states or InstanceStates())
    return b.build(plan, path)


class _Builder:
    def __init__(self, substitute: dict[tuple[int, ...], Substitute],
                 built: dict[tuple[int, ...], Operator],
                 runtime_filters: dict[tuple[int, ...], list[RuntimeFilterDesc]],
                 states: InstanceStates) -> None:
        self.substitute = substitute
        self.built = built
        self.runtime_filters = runtime_filters
        self.states = states

    def join(self, plan: LogicalJoin, path: tuple[int, ...], left: Operator,
             right: Operator) -> HashJoin:
        # the join's children are built: its filters' target scans in this instance exist
        targets: list[tuple[RuntimeFilterDesc, Operator]] = []
        for desc in self.runtime_filters.get(path, ()):
            scan = self.built.get(desc.target_path)
            if isinstance(scan, Scan):
                targets.append((desc, scan))
        s = self.states
        return HashJoin(plan, left, right, runtime_targets=targets,
                        global_filters=s.join_filters.get(path, []),
                        shared_build=s.join_builds.get(path), build_owner=s.build_owner)

    def build(self, plan: LogicalPlan, path: tuple[int, ...]) -> Operator:
        sub = self.substitute.get(path)
        op = sub(plan, path) if sub is not None else _build(plan, path, self)
        self.built.setdefault(path, op)
        return op


def _build(plan: LogicalPlan, path: tuple[int, ...], b: _Builder) -> Operator:
    def child(i: int) -> Operator:
        return b.build(plan.children[i], path + (i,))

    if isinstance(plan, LogicalScan):
        return Scan(plan, b.states.scan_filters.get(path, []))
    if isinstance(plan, LogicalValues):
        return Values(plan)
    if isinstance(plan, LogicalFileScan):
        return FileScan(plan)
    if isinstance(plan, LogicalFilter):
        return Filter(plan, child(0))
    if isinstance(plan, LogicalProject):
        return Project(plan, child(0))
    if isinstance(plan, LogicalAggregate):
        return HashAggregate(plan, child(0))
    if isinstance(plan, LogicalSort):
        return Sort(plan, child(0))
    if isinstance(plan, LogicalLimit):
        if isinstance(plan.child, LogicalSort) and plan.limit is not None:
            return TopN(plan, b.build(plan.child.child, path + (0, 0)))  # EXPLAIN's VTOP-N
        return Limit(plan, child(0))
    if isinstance(plan, LogicalJoin):
        return b.join(plan, path, child(0), child(1))
    if isinstance(plan, LogicalSetOp):
        return SetOperation(plan, *(child(i) for i in range(len(plan.inputs))))
    if isinstance(plan, LogicalWindow):
        return Window(plan, child(0))
    if isinstance(plan, LogicalAssertOneRow):
        return AssertOneRow(plan, child(0))
    raise NotImplementedError(f"no operator for {type(plan).__name__}")
