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
from executor.scan import Scan
from executor.set_operation import SetOperation
from executor.sort import Sort
from executor.values import Values
from executor.window import Window
from planner.logical import (
    LogicalAggregate, LogicalAssertOneRow, LogicalFilter, LogicalJoin, LogicalLimit, LogicalPlan,
    LogicalProject, LogicalScan, LogicalSetOp, LogicalSort, LogicalValues, LogicalWindow,
)


def build_operator(plan: LogicalPlan) -> Operator:
    if isinstance(plan, LogicalScan):
        return Scan(plan)
    if isinstance(plan, LogicalValues):
        return Values(plan)
    if isinstance(plan, LogicalFilter):
        return Filter(plan, build_operator(plan.child))
    if isinstance(plan, LogicalProject):
        return Project(plan, build_operator(plan.child))
    if isinstance(plan, LogicalAggregate):
        return HashAggregate(plan, build_operator(plan.child))
    if isinstance(plan, LogicalSort):
        return Sort(plan, build_operator(plan.child))
    if isinstance(plan, LogicalLimit):
        return Limit(plan, build_operator(plan.child))
    if isinstance(plan, LogicalJoin):
        return HashJoin(plan, build_operator(plan.left), build_operator(plan.right))
    if isinstance(plan, LogicalSetOp):
        return SetOperation(plan, *(build_operator(c) for c in plan.inputs))
    if isinstance(plan, LogicalWindow):
        return Window(plan, build_operator(plan.child))
    if isinstance(plan, LogicalAssertOneRow):
        return AssertOneRow(plan, build_operator(plan.child))
    raise NotImplementedError(f"no operator for {type(plan).__name__}")
