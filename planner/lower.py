"""Lowering: the optimized logical plan, with planner/distribute.py's decisions, into the frozen
physical nodes of planner/physical.py grouped into planner/fragment.py `PlanFragment`s.

planner/distribute.py walks the logical plan and decides (join modes and the reasons cheaper
ones were rejected, aggregate phases, exchanges, TOP-N, runtime filters, the EXPLAIN texts);
it records each physical node as a `Draft`: the node class, its decided fields and the
logical node it executes. `lower` then
- builds every node with the physical data its operator needs, taken from that logical node
  (expressions, names and types, scan ranges: no logical node survives into the physical plan);
- states the scan contract once (`split_scan_filters`): storage applies a scan's
  `predicates` and `disjunctions` exactly, so the scan evaluates only the filters that have no
  storage form (its `residual_filter`);
- gives runtime filters their ids once, by physical node id (`RuntimeFilterDesc`), and hands
  each to its join and target scan;
- cuts the fragments at the exchanges, numbered top-down in depth-first order of their
  exchanges (node ids were numbered bottom-up as the drafts were made), so EXPLAIN output is
  deterministic (golden files).
Upstream: Doris Nereids `PhysicalPlanTranslator` (physical plan -> PlanFragments),
legacy `SingleNodePlanner` / `DistributedPlanner.createPlanFragments`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.aggregate_phase import AggregateExprs
from planner.fragment import DistributedPlan, PlanFragment, ResultSink, StreamSink
from planner.index_usage import IndexUsage, runtime_filter_line
from planner.logical import (
    LogicalAggregate,
    LogicalFileScan,
    LogicalFilter,
    LogicalGenerate,
    LogicalJoin,
    LogicalLimit,
    LogicalPlan,
    LogicalProject,
    LogicalScan,
    LogicalSetOp,
    LogicalSort,
    LogicalValues,
    LogicalWindow,
)
from planner.partitioning import UNPARTITIONED, DataPartition
from planner.physical import (
    Exchange,
    FileScan,
    Filter,
    FoldedLimit,
    FoldedProject,
    HashAggregate,
    HashJoin,
    JoinExprs,
    NestedLoopJoin,
    OlapScan,
    PhysicalNode,
    SetOp,
    Sort,
    TableFunction,
    Values,
    Window,
)
from planner.physical_repeat import EmptyGroupingSets, Repeat
from planner.repeat import empty_sets_payload, repeat_payload
from planner.rules.push_down_filters import storage_disjunction, storage_predicate
from planner.runtime_filters import PlannedFilter, RuntimeFilterDesc
from planner.statistics import base_rows
from sql.binder.expressions import Expr, make_and

PlanPath = tuple[int, ...]


@dataclass
class Draft:
    """A physical node while planner/distribute.py still decides around it (a LIMIT above
    folds into it, runtime filters above target it, fragments are cut): built into `cls`
    with `attrs` by `lower` once the plan is complete."""

    id: int
    cls: type[PhysicalNode]
    attrs: dict[str, object] = field(default_factory=dict)
    children: list[Draft] = field(default_factory=list)
    verbose: list[str] = field(default_factory=list)  # EXPLAIN VERBOSE only
    limits: list[int | None] = field(default_factory=list)
    # the logical node this node executes (an exchange: the node whose output it moves)
    plan: LogicalPlan | None = None
    # projections and plain LIMITs run above the node, in plan order
    folded: list[LogicalProject | LogicalLimit] = field(default_factory=list)
    shape: str = ""  # EXPLAIN SHAPE PLAN label
    # child indexes from the plan root to `plan` (runtime filters find their join and
    # target scan by it until `lower` gives them node ids)
    path: PlanPath = ()
    # exchanges: the subtree feeding it (another fragment), that fragment's partition, and
    # how the exchange routes rows (its sink's output partition)
    source: Draft | None = None
    source_partition: DataPartition | None = None
    partition: DataPartition | None = None


@dataclass
class Decided:
    """planner/distribute.py's result: the draft tree (topped by the gather to the result
    sink), the runtime filters it planned, and each scan's indexes (EXPLAIN VERBOSE)."""

    root: Draft
    filters: list[PlannedFilter]
    scan_usage: dict[PlanPath, IndexUsage]


def column_text(name: str) -> str:
    """Doris' slot spelling: `name[#id]` for internal names `name#id`."""
    base, sep, slot = name.rpartition("#")
    return f"{base}[#{slot}]" if sep and slot.isdigit() else name


def split_scan_filters(scan: LogicalScan) -> Expr | None:
    """The scan contract, stated once: storage applies `scan.predicates` and
    `scan.disjunctions` exactly (storage/predicates.py), so the scan operator evaluates only
    the filters without a storage form, returned here as one conjunction (None: none)."""
    pushed = set(scan.predicates)
    pushed_or = set(scan.disjunctions)
    return make_and([f for f in scan.filters if storage_predicate(f) not in pushed
                     and (not pushed_or or storage_disjunction(f) not in pushed_or)])


def lower(decided: Decided, output_names: list[str]) -> DistributedPlan:
    return _Lowering(decided).fragments([column_text(n) for n in output_names])


class _Lowering:
    def __init__(self, decided: Decided) -> None:
        self.decided = decided
        self.frags: list[PlanFragment | None] = []
        ids: dict[tuple[type[PhysicalNode], PlanPath], int] = {}
        stack = [decided.root]
        while stack:
            n = stack.pop()
            ids[(n.cls, n.path)] = n.id
            stack.extend(n.children)
            if n.source is not None:
                stack.append(n.source)
        # from here on a filter names its join and target scan by physical node id
        self.filters = [RuntimeFilterDesc(f.id, ids[(HashJoin, f.join_path)], f.key_index,
                                          f.build_key, ids[(OlapScan, f.target_path)], f.column)
                        for f in decided.filters]
        self.by_target: dict[int, list[RuntimeFilterDesc]] = {}
        self.by_join: dict[int, list[RuntimeFilterDesc]] = {}
        for d in self.filters:
            self.by_target.setdefault(d.target_node, []).append(d)
            self.by_join.setdefault(d.join_node, []).append(d)

    def fragments(self, outputs: list[str]) -> DistributedPlan:
        self.cut(self.decided.root, UNPARTITIONED, ResultSink(), tuple(outputs))
        return DistributedPlan([f for f in self.frags if f is not None], tuple(self.filters))

    def cut(self, root: Draft, partition: DataPartition, sink: ResultSink | StreamSink,
            outputs: tuple[str, ...] = ()) -> int:
        """The fragment rooted at `root`; its id is taken before the fragments below get
        theirs (top-down numbering)."""
        fid = len(self.frags)
        self.frags.append(None)
        senders: dict[int, int] = {}  # exchange node id -> sending fragment id
        colo = False
        stack = [root]
        while stack:
            n = stack.pop()
            colo = colo or bool(n.attrs.get("is_colocated"))
            if n.source is not None:
                assert n.source_partition is not None and n.partition is not None
                senders[n.id] = self.cut(n.source, n.source_partition,
                                         StreamSink(n.id, n.partition))
            stack.extend(reversed(n.children))
        self.frags[fid] = PlanFragment(fid, self.freeze(root, senders), partition, sink,
                                       outputs, colo)
        return fid

    def freeze(self, n: Draft, senders: dict[int, int]) -> PhysicalNode:
        attrs = dict(n.attrs)
        verbose = list(n.verbose)
        if n.cls is OlapScan and n.id in self.by_target:
            descs = self.by_target[n.id]
            attrs["runtime_filters"] = tuple(descs)
            attrs["runtime_filter_columns"] = tuple(column_text(d.column) for d in descs)
            verbose.append(runtime_filter_line(self.decided.scan_usage[n.path],
                                               [(d.name, d.column) for d in descs]))
        if n.cls is HashJoin:
            attrs["build_filters"] = tuple(self.by_join.get(n.id, ()))
        if n.cls is Exchange:
            assert n.partition is not None and n.source_partition is not None
            sender = self.frags[senders[n.id]]
            assert sender is not None
            attrs.update(source=sender.root, source_partition=n.source_partition,
                         partition=n.partition, sender_fragment=sender.id)
        if n.plan is not None:
            attrs.update(_payload(n.cls, n.plan))
        folded = tuple(FoldedProject(f.exprs) if isinstance(f, LogicalProject)
                       else FoldedLimit(f.limit, f.offset) for f in n.folded)
        return n.cls(id=n.id, children=tuple(self.freeze(c, senders) for c in n.children),
                     limits=tuple(n.limits), verbose=tuple(verbose), shape=n.shape,
                     folded=folded, **attrs)


def _payload(cls: type[PhysicalNode], plan: LogicalPlan) -> dict[str, object]:
    """What the operator of a `cls` node needs from the logical node it executes, as
    physical data."""
    if cls is OlapScan:
        assert isinstance(plan, LogicalScan)
        return {"table": plan.table, "table_id": plan.table_id, "index_id": plan.index_id,
                "index_name": plan.index_name or plan.table,
                "preaggregation": plan.preaggregation, "columns": plan.columns,
                "column_types": plan.column_types, "ranges": plan.ranges,
                "row_count": plan.row_count, "storage_predicates": plan.predicates,
                "disjunctions": plan.disjunctions,
                "residual_filter": split_scan_filters(plan)}
    if cls is Exchange:
        return {"names": plan.names}
    if cls in (HashJoin, NestedLoopJoin):
        assert isinstance(plan, LogicalJoin)
        return {"exprs": JoinExprs(
            plan.kind, plan.left_keys, plan.right_keys, plan.condition, plan.residual,
            plan.mark_name, plan.mark_keys, plan.left.names, plan.left.types,
            plan.right.names, plan.right.types, base_rows(plan.right))}
    if cls is HashAggregate:
        assert isinstance(plan, LogicalAggregate)
        return {"exprs": AggregateExprs.of(plan)}
    if cls is Filter:
        assert isinstance(plan, LogicalFilter)
        return {"predicate": plan.predicate}
    if cls is Sort:
        assert isinstance(plan, LogicalSort)
        return {"keys": plan.keys}
    if cls is TableFunction:
        assert isinstance(plan, LogicalGenerate)
        return {"function": plan.function, "args": plan.args, "gen_names": plan.gen_names,
                "gen_types": plan.gen_types}
    if cls is Repeat:
        return repeat_payload(plan)
    if cls is EmptyGroupingSets:
        return empty_sets_payload(plan)
    if cls is Window:
        assert isinstance(plan, LogicalWindow)
        return {"windows": plan.windows}
    if cls is SetOp:
        assert isinstance(plan, LogicalSetOp)
        return {"names": plan.names, "types": plan.types}
    if cls is Values:
        assert isinstance(plan, LogicalValues)
        return {"value_names": plan.value_names, "value_types": plan.value_types,
                "rows": plan.rows}
    if cls is FileScan:
        assert isinstance(plan, LogicalFileScan)
        return {"paths": plan.paths, "options": plan.options,
                "file_columns": plan.file_columns, "file_types": plan.file_types,
                "columns": plan.columns, "column_types": plan.column_types}
    return {}  # TopN (its keys are decided), AssertOneRow
