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
                   built: dict[tuple[int, ...], Operator] | None = None) -> Operator:
    """The operator tree of `plan`; each hash join gets the scans of its planned runtime
    filters that are built here (the others run in another fragment: the coordinator wires
    those through a GlobalFilter).

    Fragment instances (executor/coordinator.py) build a subtree: `path` is where `plan` sits
    in the whole plan, `substitute` maps plan paths to a builder of what runs there instead
    (an exchange's receiving end), and `built` collects the operator of every path (the
    profile reads their counters)."""
    ops: dict[tuple[int, ...], Operator] = {} if built is None else built
    b = _Builder(substitute or {}, ops)
    root = b.build(plan, path)
    for desc in runtime_filters:
        join, scan = ops.get(desc.join_path), ops.get(desc.target_path)
        if isinstance(join, HashJoin) and isinstance(scan, Scan):
            join.runtime_targets.append((desc, scan))
    return root


class _Builder:
    def __init__(self, substitute: dict[tuple[int, ...], Substitute],
                 built: dict[tuple[int, ...], Operator]) -> None:
        self.substitute = substitute
        self.built = built

    def build(self, plan: LogicalPlan, path: tuple[int, ...]) -> Operator:
        sub = self.substitute.get(path)
        op = sub(plan, path) if sub is not None else _build(plan, path, self)
        self.built.setdefault(path, op)
        return op


def _build(plan: LogicalPlan, path: tuple[int, ...], b: _Builder) -> Operator:
    def child(i: int) -> Operator:
        return b.build(plan.children[i], path + (i,))

    if isinstance(plan, LogicalScan):
        return Scan(plan)
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
        return Limit(plan, child(0))
    if isinstance(plan, LogicalJoin):
        return HashJoin(plan, child(0), child(1))
    if isinstance(plan, LogicalSetOp):
        return SetOperation(plan, *(child(i) for i in range(len(plan.inputs))))
    if isinstance(plan, LogicalWindow):
        return Window(plan, child(0))
    if isinstance(plan, LogicalAssertOneRow):
        return AssertOneRow(plan, child(0))
    raise NotImplementedError(f"no operator for {type(plan).__name__}")
