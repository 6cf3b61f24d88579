"""Plan -> operator tree: one operator class per logical node type (same stem).
Upstream: BusTub `ExecutorFactory`, Doris `PlanFragmentExecutor` node creation."""

from __future__ import annotations

from executor.assert_one_row import AssertOneRow
from executor.filter import Filter
from executor.hash_join import HashJoin
from executor.hash_aggregate import HashAggregate
from executor.limit import Limit
from executor.operator import Operator
from executor.project import Project
from executor.runtime_filter import find_targets
from executor.scan import Scan
from executor.set_operation import SetOperation
from executor.sort import Sort
from executor.values import Values
from executor.window import Window
from planner.logical import (
    LogicalAggregate, LogicalAssertOneRow, LogicalFilter, LogicalJoin, LogicalLimit, LogicalPlan,
    LogicalProject, LogicalScan, LogicalSetOp, LogicalSort, LogicalValues, LogicalWindow,
)


def build_operator(plan: LogicalPlan, runtime_filters: bool = True) -> Operator:
    """The operator tree of `plan`; hash joins get their runtime-filter targets wired."""
    root = _build(plan)
    if runtime_filters:
        _wire_runtime_filters(root)
    return root


def _wire_runtime_filters(op: Operator) -> None:
    if isinstance(op, HashJoin):
        op.runtime_targets = find_targets(op)
    for c in op.children:
        _wire_runtime_filters(c)


def _build(plan: LogicalPlan) -> Operator:
    if isinstance(plan, LogicalScan):
        return Scan(plan)
    if isinstance(plan, LogicalValues):
        return Values(plan)
    if isinstance(plan, LogicalFilter):
        return Filter(plan, _build(plan.child))
    if isinstance(plan, LogicalProject):
        return Project(plan, _build(plan.child))
    if isinstance(plan, LogicalAggregate):
        return HashAggregate(plan, _build(plan.child))
    if isinstance(plan, LogicalSort):
        return Sort(plan, _build(plan.child))
    if isinstance(plan, LogicalLimit):
        return Limit(plan, _build(plan.child))
    if isinstance(plan, LogicalJoin):
        return HashJoin(plan, _build(plan.left), _build(plan.right))
    if isinstance(plan, LogicalSetOp):
        return SetOperation(plan, *(_build(c) for c in plan.inputs))
    if isinstance(plan, LogicalWindow):
        return Window(plan, _build(plan.child))
    if isinstance(plan, LogicalAssertOneRow):
        return AssertOneRow(plan, _build(plan.child))
    raise NotImplementedError(f"no operator for {type(plan).__name__}")
