"""Distribution decisions: where the optimized logical plan is cut by exchanges and how every
join is distributed, as Doris' planner decides and EXPLAIN shows (planner/lower.py then builds
the physical nodes and fragments from these decisions).

Each scan starts a fragment partitioned like its table (`HASH_PARTITIONED: <bucket columns>`
or `RANDOM`). Going up:
- a hash join picks, in Doris' order (seed 000, DORIS_REFERENCE b.6):
  COLOCATE when both sides still carry the distribution of tables in the same stable colocate
  group and the equi keys pair their distribution columns position by position (no exchange);
  BUCKET_SHUFFLE when the keys cover the left side's table distribution (the right side is
  sent with `BUCKET_SHFFULE_HASH_PARTITIONED`); BROADCAST when the right side is small
  (<= 10,000 estimated rows, or rows x backends <= rows of both sides; always <=
  broadcast_row_count_limit; never
  for RIGHT/FULL OUTER, RIGHT SEMI/ANTI); PARTITIONED (shuffle both sides by their keys)
  otherwise. The reason every cheaper mode was rejected is kept for EXPLAIN VERBOSE. Hints
  `[shuffle]` / `[broadcast]` / `[bucket]` / `[colocate]` ask for a mode, best effort: a
  shuffle hint is still satisfied by colocate or bucket shuffle, as in Doris. Session
  variables `disable_colocate_plan` / `disable_colocate_join` and `enable_bucket_shuffle_join`
  switch modes off. Joins without equi keys are nested-loop joins with a broadcast right side.
- an aggregate already partitioned by (a subset of) its group keys runs in one phase
  (`update finalize`); otherwise `update serialize` where its input is, an exchange hashed on
  the group keys (gather without keys), then `merge finalize`. A keyed aggregate without a
  mergeable partial state (planner/aggregate_phase.py) runs in one phase above an exchange
  that hashes its input rows on the group keys.
- sorts, windows, set operations and one-row guards gather first; the root fragment 0 is
  UNPARTITIONED and ends in the result sink.
This module only decides: it records each physical node as a planner/lower.py `Draft` (node
class, decided fields, the logical node it executes) and planner/lower.py builds the frozen
nodes and fragments from them. What the executor needs is typed, never left to EXPLAIN text:
exchanges and fragments carry a `DataPartition` (planner/partitioning.py); joins a `JoinMode`
and the `shared_build` flag; aggregates an `AggPhase` (planner/aggregate_phase.py); runtime
filters are numbered once (planner/runtime_filters.py). Node ids are assigned bottom-up in
creation order, so output is deterministic (golden files).
executor/coordinator.py runs the lowered plan: instances per fragment, exchanges between them.
Upstream: Doris Nereids `ChildrenPropertiesRegulator` / `RequestPropertyDeriver`,
`PhysicalPlanTranslator`, legacy `DistributedPlanner`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.aggregate_phase import AggPhase, splits_in_two_phases
from planner.index_usage import IndexUsage, index_line
from planner.logical import (
    LogicalAggregate,
    LogicalAssertOneRow,
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
from planner.lower import Decided, Draft, column_text
from planner.partitioning import (
    RANDOM,
    UNPARTITIONED,
    DataPartition,
    JoinMode,
    PartitionKind,
    TableBucketing,
)
from planner.physical import (
    AssertOneRow,
    Carries,
    Exchange,
    FileScan,
    Filter,
    HashAggregate,
    HashJoin,
    NestedLoopJoin,
    OlapScan,
    PhysicalNode,
    SetOp,
    Sort,
    TableFunction,
    TopN,
    Values,
    Window,
)
from planner.physical_repeat import EmptyGroupingSets, Repeat
from planner.repeat import LogicalEmptyGroupingSets, LogicalRepeat, key_exprs
from planner.runtime_filters import PlannedFilter, runtime_filters
from planner.scan_info import partitions_line, table_line, tablets_line
from planner.statistics import estimate_rows
from sql.binder.expressions import ColumnRef, Expr
from sql.binder.relations import CatalogView
from storage.catalog.meta import DistributionType


@dataclass(frozen=True, slots=True)
class DistributeOptions:
    # from QueryOptions (planner/query.py); no defaults: server/variables.py holds them
    disable_colocate: bool  # disable_colocate_plan / disable_colocate_join
    bucket_shuffle: bool  # enable_bucket_shuffle_join
    broadcast_row_limit: int  # broadcast_row_count_limit
    backends: int


@dataclass(frozen=True, slots=True)
class _Layout:
    """What this module knows about how a node's output rows lie over the instances (Nereids'
    output `DistributionSpec`): never handed on, only the `partition` is (the fragment's).

    `cols`: while the partition is HASH, per hash column the output names holding its value
    (several after an equi-join made columns equal, none when it is not visible). `keyed` is
    False after an outer join that may put NULL keys anywhere: the fragment still runs (and
    prints) its hash partition, but nothing above may rely on it.
    `partition.bucketing` is set while the hash is still a table's own bucket distribution.
    """

    partition: DataPartition = UNPARTITIONED
    cols: tuple[frozenset[str], ...] = ()
    keyed: bool = True

    @property
    def hashed(self) -> bool:
        """Rows with equal values of the hash columns are in one instance."""
        return self.keyed and self.partition.kind is PartitionKind.HASH

    @property
    def gathered(self) -> bool:
        return self.partition.kind is PartitionKind.UNPARTITIONED

    @property
    def bucketing(self) -> TableBucketing | None:
        return self.partition.bucketing


GATHER = _Layout()
_HASH = PartitionKind.HASH


def expr_text(e: Expr) -> str:
    text = e.sql()
    if isinstance(e, ColumnRef):
        return column_text(e.name)
    for ref in sorted({x.name for x in e.walk() if isinstance(x, ColumnRef)}, key=len,
                      reverse=True):
        if "#" in ref:
            text = text.replace(ref, column_text(ref))
    return text


_JOIN_OP = {"inner": "INNER JOIN", "cross": "CROSS JOIN", "left": "LEFT OUTER JOIN",
            "right": "RIGHT OUTER JOIN", "full": "FULL OUTER JOIN",
            "left_semi": "LEFT SEMI JOIN", "left_anti": "LEFT ANTI JOIN",
            "right_semi": "RIGHT SEMI JOIN", "right_anti": "RIGHT ANTI JOIN",
            "mark": "LEFT SEMI JOIN"}
_NO_BROADCAST = ("right", "full", "right_semi", "right_anti")
# joins whose output holds rows the left side did not produce (their left columns are NULL, or
# they are right rows only): the left side's distribution does not describe the output
_NULLS_LEFT_KEYS = ("right", "full", "right_semi", "right_anti")
# A right side this small is always broadcast (copying it costs less than any shuffle setup).
SMALL_BROADCAST_ROWS = 10_000


class _Planner:
    def __init__(self, catalog: CatalogView, options: DistributeOptions) -> None:
        self.catalog = catalog
        self.options = options
        self._ids = 0
        self.runtime_filters: list[PlannedFilter] = []
        # EXPLAIN VERBOSE: per scan (by plan path), its indexes
        self.scan_usage: dict[tuple[int, ...], IndexUsage] = {}
        self.display: dict[str, str] = {}  # projected output name -> its expression's text
        self._path: tuple[int, ...] = ()
        self._plans: dict[tuple[int, ...], LogicalPlan] = {}  # by path, as visited

    def text(self, e: Expr) -> str:
        """An expression as EXPLAIN prints it (projected names replaced by what they compute)."""
        if isinstance(e, ColumnRef) and e.name in self.display:
            return self.display[e.name]
        return expr_text(e)

    def node(self, cls: type[PhysicalNode], children: list[Draft] | None = None,
             shape: str = "", **attrs: object) -> Draft:
        n = Draft(self._ids, cls, attrs, children or [], shape=shape, path=self._path,
                  plan=self._plans.get(self._path))
        self._ids += 1
        return n

    def exchange(self, child: Draft, dist: _Layout, shape: str, partition: DataPartition,
                 at: tuple[int, ...], *, replicated: bool = False,
                 carries: Carries = Carries.ROWS) -> Draft:
        """An exchange moving the output of the plan node at path `at` (its sender fragment
        computes that node; `child` is the top of what EXPLAIN draws below the exchange),
        routed by `partition` (UNPARTITIONED and `replicated`: a broadcast)."""
        ex = self.node(Exchange, shape=shape, replicated=replicated, carries=carries)
        ex.source, ex.source_partition, ex.partition, ex.path = \
            child, dist.partition, partition, at
        ex.plan = self._plans[at]
        return ex

    def broadcast(self, child: Draft, dist: _Layout, at: tuple[int, ...]) -> Draft:
        return self.exchange(child, dist, "PhysicalDistribute[DistributionSpecReplicated]",
                             UNPARTITIONED, at, replicated=True)

    def gather(self, node: Draft, dist: _Layout, at: tuple[int, ...],
               carries: Carries = Carries.ROWS) -> Draft:
        if dist.gathered:
            return node
        return self.exchange(node, dist, "PhysicalDistribute[DistributionSpecGather]",
                             UNPARTITIONED, at, carries=carries)

    # ---- visiting --------------------------------------------------------------------------
    def visit(self, plan: LogicalPlan, path: tuple[int, ...] = ()) -> tuple[Draft, _Layout]:
        saved, self._path = self._path, path
        self._plans[path] = plan
        try:
            return self._visit(plan)
        finally:
            self._path = saved

    def child(self, plan: LogicalPlan, *index: int) -> tuple[Draft, _Layout]:
        """Visit the node at child position(s) `index` below the node being planned."""
        node = plan
        for i in index:
            node = node.children[i]
        return self.visit(node, self._path + index)

    def _visit(self, plan: LogicalPlan) -> tuple[Draft, _Layout]:
        if isinstance(plan, LogicalScan):
            return self.scan(plan)
        if isinstance(plan, LogicalProject):
            node, dist = self.child(plan, 0)
            for n, e in plan.exprs:  # later nodes print what a projected name stands for
                # computed columns and generated names (`_c0`) print what they stand for;
                # binder names keep their own `name[#id]`
                if not isinstance(e, ColumnRef) or ("#" not in n and n != e.name):
                    self.display.setdefault(n, self.text(e))
            node.folded.append(plan)
            return node, _through_project(dist, plan)
        if isinstance(plan, LogicalFilter):
            node, dist = self.child(plan, 0)
            sel = self.node(Filter, [node], shape="PhysicalFilter",
                            predicate_text=self.text(plan.predicate))
            return sel, dist
        if isinstance(plan, LogicalJoin):
            return self.join(plan)
        if isinstance(plan, LogicalAggregate):
            return self.aggregate(plan)
        if isinstance(plan, LogicalLimit):
            return self.limit(plan)
        if isinstance(plan, LogicalSort):
            node, dist = self.child(plan, 0)
            node = self.gather(node, dist, self._path + (0,))
            keys = tuple((self.text(k.expr), k.desc) for k in plan.keys)
            return self.node(Sort, [node], shape="PhysicalQuickSort", order_by=keys), GATHER
        if isinstance(plan, LogicalGenerate):  # row-local: the child's layout holds
            node, dist = self.child(plan, 0)
            text = f"{plan.function}(" + ", ".join(self.text(a) for a in plan.args) + ")"
            return self.node(TableFunction, [node], shape="PhysicalGenerate",
                             function_text=text), dist
        if isinstance(plan, LogicalRepeat):  # row-local, but a hash column it may NULL
            node, dist = self.child(plan, 0)  # no longer says where a row lies
            if dist.hashed and any(c & set(plan.key_names) for c in dist.cols):
                dist = replace(dist, keyed=False)
            texts = tuple(self.text(e) for e in key_exprs(plan))
            return self.node(Repeat, [node], shape="PhysicalRepeat", key_texts=texts), dist
        if isinstance(plan, LogicalEmptyGroupingSets):  # "no rows" is decided over all rows
            node, dist = self.child(plan, 0)
            node = self.gather(node, dist, self._path + (0,))
            return self.node(EmptyGroupingSets, [node], shape="PhysicalEmptyGroupingSets"), \
                GATHER
        if isinstance(plan, LogicalWindow):
            node, dist = self.child(plan, 0)
            node = self.gather(node, dist, self._path + (0,))
            fns = ", ".join(self.text(w) for _, w in plan.windows)
            return self.node(Window, [node], shape="PhysicalWindow",
                             functions_text=fns), GATHER
        if isinstance(plan, LogicalSetOp):
            kids = [self.gather(*self.child(plan, i), self._path + (i,))
                    for i in range(len(plan.inputs))]
            name = {"union_all": "VUNION", "intersect": "VINTERSECT", "except": "VEXCEPT"}
            return self.node(SetOp, kids, op=plan.op,
                             shape=f"Physical{name.get(plan.op, 'VUNION')[1:].title()}"), GATHER
        if isinstance(plan, LogicalAssertOneRow):
            node = self.gather(*self.child(plan, 0), self._path + (0,))
            return self.node(AssertOneRow, [node], shape="PhysicalAssertNumRows"), GATHER
        if isinstance(plan, LogicalFileScan):  # read by one instance: the files are local
            return self.node(FileScan, function=plan.function, format=plan.format,
                             cardinality=int(estimate_rows(plan)),
                             shape="PhysicalTVFRelation"), GATHER
        if isinstance(plan, LogicalValues):
            return self.node(Values, shape="PhysicalOneRowRelation"), GATHER
        raise NotImplementedError(type(plan).__name__)  # pragma: no cover

    def scan(self, plan: LogicalScan) -> tuple[Draft, _Layout]:
        meta = self.catalog.get_table(plan.db, plan.table)
        formal = self.catalog.partitions(plan.table_id)
        # names of a TEMPORARY PARTITION (..) scan too; Doris' total counts formal ones only
        parts = {p.partition_id: p.name for p in formal}
        if not {pid for pid, _ in plan.partitions} <= parts.keys():
            parts.update((p.partition_id, p.name)
                         for p in self.catalog.partitions(plan.table_id, temporary=True))
        chosen = sorted({r.tablet.partition_id for r in plan.ranges})
        total_tablets = len(self.catalog.tablets(plan.table_id, None, plan.index_id))
        if plan.selection is not None:  # partition / bucket pruning (rules/prune_scans.py)
            chosen = list(plan.selection.partition_ids)
            total_tablets = plan.selection.total_tablets  # tablets of the selected partitions
        names = [parts.get(pid, str(pid)) for pid in chosen]
        tablets = [r.tablet.tablet_id for r in plan.ranges]
        scanned = next((ix for ix in self.catalog.materialized_indexes(plan.table_id)
                        if ix.index_id == plan.index_id), None)
        index = scanned.name if scanned is not None else plan.table
        node = self.node(
            OlapScan, shape=f"PhysicalOlapScan[{plan.table}]",
            table_line=table_line(plan.db, plan.table, index, plan.preagg_reason or None),
            predicates_text=tuple(self.text(f) for f in plan.filters),
            partitions_line=partitions_line(names, len(formal)),
            tablets_line=tablets_line(tablets, total_tablets),
            cardinality=int(estimate_rows(plan)),
            num_nodes=len({r.tablet.backend_id for r in plan.ranges}) or 1)
        usage = self.scan_usage[self._path] = IndexUsage(meta, scanned, plan.predicates)
        line = index_line(plan, usage, self.text)  # EXPLAIN VERBOSE: the index of each filter
        if line is not None:
            node.verbose = [line]
        if (meta is None or meta.distribution.type is not DistributionType.HASH
                or (scanned is not None and scanned.is_materialized_view)):
            # a view's rows are placed by its own keys, not the table's distribution
            # (storage/view_routing.py)
            return node, _Layout(RANDOM)
        cols = tuple(frozenset({c}) if c in plan.columns else frozenset()
                     for c in meta.distribution.columns)
        group = meta.colocate_group_id
        stable = True
        if group is not None:
            g = getattr(self.catalog, "colocate_group", lambda _gid: None)(group)
            stable = bool(getattr(g, "is_stable", True)) if g is not None else True
        types = tuple(meta.column(c).type for c in meta.distribution.columns)
        bucketing = TableBucketing(plan.table_id, meta.distribution.buckets, types, group, stable)
        partition = DataPartition(_HASH, bucketing=bucketing,
                                  labels=tuple(meta.distribution.columns))
        return node, _Layout(partition, cols)

    def limit(self, plan: LogicalLimit) -> tuple[Draft, _Layout]:
        child = plan.child
        if isinstance(child, LogicalSort) and plan.limit is not None:
            node, dist = self.child(plan, 0, 0)
            keys = tuple((self.text(k.expr), k.desc) for k in child.keys)
            top = self.node(TopN, [node], shape="PhysicalTopN", order_by=keys,
                            order_keys=child.keys,
                            offset=plan.offset, top=plan.limit)
            ex = self.gather(top, dist, self._path, carries=Carries.TOP_N)
            if ex is not top:
                top.attrs["local"] = True
                ex.attrs["offset"] = plan.offset
                ex.limits.append(plan.limit)
            return ex, GATHER
        node, dist = self.child(plan, 0)
        node = self.gather(node, dist, self._path + (0,))
        node.limits.append(plan.limit)
        node.folded.append(plan)
        return node, GATHER

    def aggregate(self, plan: LogicalAggregate) -> tuple[Draft, _Layout]:
        child, dist = self.child(plan, 0)
        outputs = ", ".join(f"{a.sql()}" for _, a in plan.aggregates)
        groups = [self.text(e) for _, e in plan.group_by]
        for (n, _), g in zip(plan.group_by, groups):
            self.display.setdefault(n, g)
        for n, a in plan.aggregates:
            self.display.setdefault(n, a.sql())
        details: dict[str, object] = {"output_text": outputs, "group_texts": tuple(groups),
                                      "cardinality": int(estimate_rows(plan))}
        by_name = {e.name: n for n, e in plan.group_by if isinstance(e, ColumnRef)}
        if plan.group_by and dist.hashed and dist.cols and \
                all(alts & by_name.keys() for alts in dist.cols):
            node = self.agg_node(AggPhase.ONE_PHASE, [child], details)
            cols = tuple(frozenset(by_name[c] for c in alts if c in by_name) for alts in dist.cols)
            return node, replace(dist, cols=cols)
        by_keys = DataPartition(_HASH, tuple(e for _, e in plan.group_by), labels=tuple(groups))
        out = _Layout(by_keys, tuple(frozenset({n}) for n, _ in plan.group_by))
        if not plan.group_by:
            out = GATHER
        if not splits_in_two_phases(plan):
            # no partial state to merge: the rows go to where their group is aggregated
            if plan.group_by:
                ex = self.exchange(child, dist, "PhysicalDistribute[DistributionSpecHash]",
                                   by_keys, self._path + (0,))
            else:
                ex = self.gather(child, dist, self._path + (0,))
            return self.agg_node(AggPhase.ONE_PHASE, [ex], details), out
        local = self.agg_node(AggPhase.UPDATE_SERIALIZE, [child], details)
        if plan.group_by:
            # the states cross as Batches whose key columns carry the group output names
            by_state_keys = DataPartition(_HASH, tuple(ColumnRef(n, e.dtype)
                                                       for n, e in plan.group_by),
                                          labels=tuple(groups))
            ex = self.exchange(local, dist, "PhysicalDistribute[DistributionSpecHash]",
                               by_state_keys, self._path, carries=Carries.AGG_STATE)
        else:
            ex = self.exchange(local, dist, "PhysicalDistribute[DistributionSpecGather]",
                               UNPARTITIONED, self._path, carries=Carries.AGG_STATE)
        return self.agg_node(AggPhase.MERGE_FINALIZE, [ex], details), out

    def agg_node(self, phase: AggPhase, children: list[Draft],
                 details: dict[str, object]) -> Draft:
        scope = "LOCAL" if phase is AggPhase.UPDATE_SERIALIZE else "GLOBAL"
        return self.node(HashAggregate, children, shape=f"hashAgg[{scope}]", phase=phase,
                         **details)

    # ---- joins -----------------------------------------------------------------------------
    def join(self, plan: LogicalJoin) -> tuple[Draft, _Layout]:
        left, ld = self.child(plan, 0)
        right, rd = self.child(plan, 1)
        lk = [k.name if isinstance(k, ColumnRef) else None for k in plan.left_keys]
        rk = [k.name if isinstance(k, ColumnRef) else None for k in plan.right_keys]
        op = _JOIN_OP.get(plan.kind, plan.kind.upper())
        rejected: list[tuple[JoinMode, str]] = []
        card = int(estimate_rows(plan))
        if not plan.left_keys:
            mode = JoinMode.BROADCAST if plan.kind not in _NO_BROADCAST else \
                JoinMode.PARTITIONED
            if mode is JoinMode.BROADCAST:
                right = self.broadcast(right, rd, self._path + (1,))
                out = ld
            else:
                left = self.gather(left, ld, self._path + (0,))
                right = self.gather(right, rd, self._path + (1,))
                out = GATHER
            other = None
            if plan.residual is not None or plan.condition is not None:
                cond = [e for e in (plan.residual, plan.condition) if e is not None]
                other = " AND ".join(self.text(e) for e in cond)
            node = self.node(NestedLoopJoin, [left, right],
                             shape=f"NestedLoopJoin[{op.replace(' ', '_')}]", op=op, mode=mode,
                             other_text=other, shared_build=mode is JoinMode.BROADCAST,
                             cardinality=card)
            return node, out
        mode = self._choose(plan, ld, rd, lk, rk, rejected)
        colocated = False
        if mode is JoinMode.COLOCATE:
            out = _joined(ld, rd, lk, rk) if plan.kind == "inner" else ld
            colocated = True
        elif mode is JoinMode.BUCKET_SHUFFLE:
            assert ld.bucketing is not None
            by_bucket = DataPartition(PartitionKind.BUCKET_SHUFFLE, _bucket_keys(plan, ld, lk),
                                      ld.bucketing,
                                      tuple(self.text(k) for k in plan.right_keys))
            right = self.exchange(right, rd, "PhysicalDistribute[DistributionSpecHash]",
                                  by_bucket, self._path + (1,))
            out = _joined(ld, None, lk, rk) if plan.kind == "inner" else ld
        elif mode is JoinMode.BROADCAST:
            right = self.broadcast(right, rd, self._path + (1,))
            out = ld
        else:
            by_left = DataPartition(_HASH, tuple(plan.left_keys),
                                    labels=tuple(self.text(k) for k in plan.left_keys))
            by_right = DataPartition(_HASH, tuple(plan.right_keys),
                                     labels=tuple(self.text(k) for k in plan.right_keys))
            left = self.exchange(left, ld, "PhysicalDistribute[DistributionSpecHash]",
                                 by_left, self._path + (0,))
            right = self.exchange(right, rd, "PhysicalDistribute[DistributionSpecHash]",
                                  by_right, self._path + (1,))
            out = _Layout(by_left, tuple(frozenset({k}) if k else frozenset() for k in lk))
        if plan.kind in _NULLS_LEFT_KEYS:
            # rows the left side did not match carry NULL left keys in every instance: the
            # output is laid out like the plan says, but not partitioned by those columns
            out = _Layout(out.partition, keyed=False)
        equal = tuple((self.text(a), self.text(b))
                      for a, b in zip(plan.left_keys, plan.right_keys))
        mark = None
        if plan.mark_keys is not None:
            mark = (self.text(plan.mark_keys[0]), self.text(plan.mark_keys[1]))
        descs = runtime_filters(plan, self._path, len(self.runtime_filters))
        self.runtime_filters.extend(descs)
        shape_cond = " AND ".join(f"({a} = {b})" for a, b in equal)
        other = self.text(plan.residual) if plan.residual is not None else None
        node = self.node(HashJoin, [left, right],
                         shape=f"hashJoin[{op.replace(' ', '_')}] hashCondition=({shape_cond}) "
                               f"otherCondition=({other or ''})",
                         op=op, mode=mode, is_colocated=colocated, rejected=tuple(rejected),
                         equal_texts=equal, other_text=other, mark_text=mark,
                         build_key_texts=tuple(self.text(d.build_key) for d in descs),
                         shared_build=mode is JoinMode.BROADCAST, cardinality=card)
        node.verbose = HashJoin.rejected_lines_of(tuple(rejected))
        return node, out

    def _choose(self, plan: LogicalJoin, ld: _Layout, rd: _Layout, lk: list[str | None],
                rk: list[str | None], rejected: list[tuple[JoinMode, str]]) -> JoinMode:
        """The join's mode; every cheaper mode it could not take goes to `rejected` with
        the reason (EXPLAIN VERBOSE prints them)."""
        o = self.options
        hint = (plan.hint or "").upper()
        pairs = set(zip(lk, rk))
        # colocate
        why = _colocate_rejection(ld, rd, pairs, o.disable_colocate)
        if why is None:
            return JoinMode.COLOCATE
        rejected.append((JoinMode.COLOCATE, why))
        # bucket shuffle
        if not o.bucket_shuffle:
            why = "Session disabled (enable_bucket_shuffle_join = false)"
        elif not ld.hashed or ld.bucketing is None:
            why = "the left side is not distributed like its table"
        elif not ld.cols or any(not (alts & set(lk)) for alts in ld.cols):
            why = "the join keys do not cover the left table's distribution columns"
        else:
            why = None
        bucket_ok = why is None
        if bucket_ok and hint not in ("BROADCAST",):
            return JoinMode.BUCKET_SHUFFLE
        if why is not None:
            rejected.append((JoinMode.BUCKET_SHUFFLE, why))
        # broadcast
        left_rows = estimate_rows(plan.left)
        right_rows = estimate_rows(plan.right)
        if plan.kind in _NO_BROADCAST:
            why = f"not possible for {_JOIN_OP[plan.kind]}"
        elif hint == "SHUFFLE":
            why = "hint [shuffle]"
        elif hint == "BROADCAST":
            why = None
        elif right_rows > o.broadcast_row_limit:
            why = f"the right side ({int(right_rows)} rows) exceeds broadcast_row_count_limit"
        elif right_rows > SMALL_BROADCAST_ROWS and \
                right_rows * max(o.backends, 1) > left_rows + right_rows:
            why = (f"the right side ({int(right_rows)} rows) sent to {o.backends} backends "
                   f"costs more than shuffling both sides ({int(left_rows + right_rows)} rows)")
        else:
            why = None
        if why is None:
            return JoinMode.BROADCAST
        if bucket_ok:
            return JoinMode.BUCKET_SHUFFLE
        rejected.append((JoinMode.BROADCAST, why))
        return JoinMode.PARTITIONED


def _through_project(dist: _Layout, plan: LogicalProject) -> _Layout:
    if not dist.hashed:
        return dist
    renamed: dict[str, str] = {}
    for n, e in plan.exprs:
        if isinstance(e, ColumnRef) and e.name not in renamed:
            renamed[e.name] = n
    return replace(dist, cols=tuple(frozenset(renamed[c] for c in alts if c in renamed)
                                    for alts in dist.cols))


def _joined(ld: _Layout, rd: _Layout | None, lk: list[str | None], rk: list[str | None]) -> _Layout:
    """The left side's distribution after an INNER equi-join kept it (outer joins may null the
    right keys, so they keep the left names only): each distribution
    column's value is now also in the right keys paired with it (and, colocated, in the right
    table's own distribution column), so later joins and aggregates may use either name."""
    cols = []
    for i, alts in enumerate(ld.cols):
        more = {r for left, r in zip(lk, rk) if left in alts and r}
        if rd is not None and i < len(rd.cols):
            more |= rd.cols[i]
        cols.append(alts | more)
    return replace(ld, cols=tuple(cols))


def _bucket_keys(plan: LogicalJoin, ld: _Layout, lk: list[str | None]) -> tuple[Expr, ...]:
    """For a bucket-shuffle join: per distribution column of the left table, the right key
    its equi conjunct pairs it with (the right rows are bucketed by these)."""
    out = []
    for alts in ld.cols:
        j = next(i for i, k in enumerate(lk) if k in alts)
        out.append(plan.right_keys[j])
    return tuple(out)


def _colocate_rejection(ld: _Layout, rd: _Layout, pairs: set[tuple[str | None, str | None]],
                        disabled: bool) -> str | None:
    if disabled:
        return "Session disabled"
    lb, rb = ld.bucketing, rd.bucketing
    if lb is None or rb is None or not ld.hashed or not rd.hashed:
        return "The src data has been redistributed"
    if lb.colocate_group is None or lb.colocate_group != rb.colocate_group:
        return "Tables are not in the same group"
    if not (lb.group_stable and rb.group_stable):
        return "Colocate group is not stable"
    if len(ld.cols) != len(rd.cols) or any(
            not any((a, b) in pairs for a in la for b in ra) for la, ra in zip(ld.cols, rd.cols)):
        return "The join keys do not pair the distribution columns of both tables"
    return None


def distribute(plan: LogicalPlan, catalog: CatalogView, options: DistributeOptions) -> Decided:
    """Decide how `plan` runs distributed: the drafts planner/lower.py `lower` builds the
    physical nodes and fragments from, topped by the gather to the result sink."""
    p = _Planner(catalog, options)
    root, dist = p.visit(plan)
    top = p.gather(root, dist, ())
    return Decided(top, p.runtime_filters, p.scan_usage)
