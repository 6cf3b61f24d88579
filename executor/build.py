"""Physical plan -> operator tree: one operator per planner/physical.py node, 1:1.

A node's folded projections and plain LIMITs (`folded`, Doris prints no node for them) run
as Project / Limit operators above the node's operator, in plan order. `built` collects the
operator of every node by node id (the profile and the 1:1 test read it).
Upstream: BusTub `ExecutorFactory`, DuckDB's physical planner, Doris `PlanFragmentExecutor`
node creation.
"""

from __future__ import annotations

from collections.abc import Callable

from executor.assert_one_row import AssertOneRow
from executor.file_scan import FileScan
from executor.filter import Filter
from executor.hash_aggregate import HashAggregate
from executor.hash_join import HashJoin
from executor.limit import Limit
from executor.operator import Operator
from executor.project import Project
from executor.repeat import EmptyGroupingSetsOperator, RepeatOperator
from executor.scan import Scan
from executor.set_operation import SetOperation
from executor.sort import Sort
from executor.state import InstanceStates
from executor.table_function import TableFunction
from executor.top_n import TopN
from executor.two_phase_aggregate import MergeAggregate, PartialAggregate
from executor.values import Values
from executor.window import Window
from planner import physical as ph
from planner.aggregate_phase import AggPhase
from planner.physical_repeat import EmptyGroupingSets, Repeat
from planner.runtime_filters import RuntimeFilterDesc
from planner.scan_ranges import ScanRange

Receive = Callable[[ph.Exchange], Operator]
ScanRanges = Callable[[ph.OlapScan], tuple[ScanRange, ...] | None]


def build_operator(root: ph.PhysicalNode, *, receive: Receive,
                   scan_ranges: ScanRanges = lambda node: None,
                   runtime_filters: bool = True,
                   built: dict[int, Operator] | None = None,
                   states: InstanceStates | None = None) -> Operator:
    """The operator tree of one fragment instance rooted at `root`.

    `receive` gives the receiving end of an exchange (its stream from the sending fragment);
    `scan_ranges` the ranges an OLAP scan reads in this instance (None: all it planned);
    hash joins get the scans of their runtime filters built here (targets in another
    fragment reach them through a RuntimeFilterState in `states`, created by the
    coordinator with the other shared states)."""
    b = _Builder(receive, scan_ranges, runtime_filters, {} if built is None else built,
                 states or InstanceStates())
    return b.build(root)


class _Builder:
    def __init__(self, receive: Receive, scan_ranges: ScanRanges, runtime_filters: bool,
                 built: dict[int, Operator], states: InstanceStates) -> None:
        self.receive = receive
        self.scan_ranges = scan_ranges
        self.runtime_filters = runtime_filters
        self.built = built
        self.states = states
        self.scans: dict[int, Scan] = {}  # runtime-filter targets, by node id

    def build(self, node: ph.PhysicalNode) -> Operator:
        kids = [self.build(c) for c in node.children]
        op = self._operator(node, kids)
        self.built[node.id] = op
        for folded in node.folded:
            if isinstance(folded, ph.FoldedProject):
                op = Project(folded.exprs, op)
            else:
                op = Limit(folded.limit, folded.offset, op)
        return op

    def _operator(self, node: ph.PhysicalNode, kids: list[Operator]) -> Operator:
        s = self.states
        if isinstance(node, ph.OlapScan):
            op = Scan(node, self.scan_ranges(node), s.scan_filters.get(node.id, []))
            self.scans[node.id] = op
            return op
        if isinstance(node, ph.Exchange):
            source = self.receive(node)
            if node.carries is ph.Carries.TOP_N:  # the sender ran the TOP-N; merge and cut again
                top = node.source
                assert isinstance(top, ph.TopN)
                return TopN(top.order_keys, top.top, top.offset, source)
            return source
        if isinstance(node, (ph.HashJoin, ph.NestedLoopJoin)):
            targets: list[tuple[RuntimeFilterDesc, Operator]] = []
            if self.runtime_filters and isinstance(node, ph.HashJoin):
                # the join's children are built: its filters' target scans here exist
                targets = [(d, self.scans[d.target_node]) for d in node.build_filters
                           if d.target_node in self.scans]
            return HashJoin(node.exprs, kids[0], kids[1], runtime_targets=targets,
                            global_filters=s.join_filters.get(node.id, []),
                            shared_build=s.join_builds.get(node.id),
                            build_owner=s.build_owner)
        if isinstance(node, ph.HashAggregate):
            cls = {AggPhase.ONE_PHASE: HashAggregate, AggPhase.UPDATE_SERIALIZE: PartialAggregate,
                   AggPhase.MERGE_FINALIZE: MergeAggregate}[node.phase]
            return cls(node.exprs, kids[0])
        if isinstance(node, ph.TopN):
            if node.local:  # below a TOP-N gather: keep every row the merge may need
                return TopN(node.order_keys, node.top + node.offset, 0, kids[0])
            return TopN(node.order_keys, node.top, node.offset, kids[0])
        if isinstance(node, ph.Filter):
            return Filter(node.predicate, kids[0])
        if isinstance(node, ph.AssertOneRow):
            return AssertOneRow(kids[0])
        if isinstance(node, ph.Sort):
            return Sort(node.keys, kids[0])
        if isinstance(node, ph.Window):
            return Window(node.windows, kids[0])
        if isinstance(node, Repeat):
            return RepeatOperator(node.key_names, node.sets, node.id_name, node.virtual_names,
                                  node.virtual_values, kids[0])
        if isinstance(node, EmptyGroupingSets):
            return EmptyGroupingSetsOperator(node.key_names, node.key_types, node.key_rows,
                                             node.aggregates, kids[0])
        if isinstance(node, ph.TableFunction):
            return TableFunction(node.function, node.args, node.gen_names, node.gen_types,
                                 kids[0])
        if isinstance(node, ph.SetOp):
            return SetOperation(node.op, node.names, node.types, *kids)
        if isinstance(node, ph.Values):
            return Values(node.value_names, node.value_types, node.rows)
        if isinstance(node, ph.FileScan):
            return FileScan(node)
        raise TypeError(f"no operator for physical node {type(node).__name__}")  # a planner bug
