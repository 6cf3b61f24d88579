"""Plan -> operator tree: one operator class per logical node type (same stem).
Upstream: BusTub `ExecutorFactory`, Doris `PlanFragmentExecutor` node creation."""

from __future__ import annotations

from executor.assert_one_row import AssertOneRow
from executor.filter import Filter
from executor.hash_join import HashJoin
from executor.hash_aggregate import HashAggregate
from executor.limit import Limit
from executor.operator import Operator
from executor.parallel_aggregate import ParallelAggregate, scan_pipeline
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


def build_operator(plan: LogicalPlan, runtime_filters: bool = True,
                   colocated: frozenset[tuple[int, ...]] = frozenset(),
                   parallel_aggregates: bool = True) -> Operator:
    """The operator tree of `plan`; hash joins get their runtime-filter targets wired. Joins at
    the paths in `colocated` (planner/distribute.py chose COLOCATE) run bucket by bucket;
    aggregates over a plain scan pipeline may run their update phase on several workers."""
    root = _build(plan, (), colocated, runtime_filters, parallel_aggregates)
    if runtime_filters:
        _wire_runtime_filters(root)
    return root


def _wire_runtime_filters(op: Operator) -> None:
    if isinstance(op, HashJoin):
        op.runtime_targets = find_targets(op)
    for c in op.children:
        _wire_runtime_filters(c)


def _build(plan: LogicalPlan, path: tuple[int, ...], colocated: frozenset[tuple[int, ...]],
           rf: bool, par_agg: bool) -> Operator:
    def child(i: int) -> Operator:
        return _build(plan.children[i], path + (i,), colocated, rf, par_agg)

    if isinstance(plan, LogicalScan):
        return Scan(plan)
    if isinstance(plan, LogicalValues):
        return Values(plan)
    if isinstance(plan, LogicalFilter):
        return Filter(plan, child(0))
    if isinstance(plan, LogicalProject):
        return Project(plan, child(0))
    if isinstance(plan, LogicalAggregate):
        scan = scan_pipeline(plan) if par_agg else None
        if scan is not None and len(scan.ranges) > 1:
            return ParallelAggregate(
                plan, scan, lambda p: build_operator(p, rf, parallel_aggregates=False))
        return HashAggregate(plan, child(0))
    if isinstance(plan, LogicalSort):
        return Sort(plan, child(0))
    if isinstance(plan, LogicalLimit):
        return Limit(plan, child(0))
    if isinstance(plan, LogicalJoin):
        if path in colocated:
            from executor.colocate_join import ColocateJoin

            return ColocateJoin(plan, lambda p: build_operator(p, rf))
        return HashJoin(plan, child(0), child(1))
    if isinstance(plan, LogicalSetOp):
        return SetOperation(plan, *(child(i) for i in range(len(plan.inputs))))
    if isinstance(plan, LogicalWindow):
        return Window(plan, child(0))
    if isinstance(plan, LogicalAssertOneRow):
        return AssertOneRow(plan, child(0))
    raise NotImplementedError(f"no operator for {type(plan).__name__}")
