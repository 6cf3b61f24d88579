"""Distributed plan: the optimized logical plan cut into fragments joined by exchanges, with a
distribution mode for every join, as Doris' planner decides and EXPLAIN shows.

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
  the group keys (gather without keys), then `merge finalize`.
- sorts, windows, set operations and one-row guards gather first; the root fragment 0 is
  UNPARTITIONED and ends in the result sink.
executor/coordinator.py runs this plan: instances per fragment, exchanges between them (each
exchange carries an `ExchangeSpec` saying how it routes rows). Node ids are assigned bottom-up
in creation order, fragment ids top-down, so output is deterministic (golden files).
Upstream: Doris Nereids `ChildrenPropertiesRegulator` / `RequestPropertyDeriver`,
`PhysicalPlanTranslator`, legacy `DistributedPlanner`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from planner.index_usage import IndexUsage, index_line, runtime_filter_line
from planner.logical import (
    LogicalAggregate, LogicalAssertOneRow, LogicalFileScan, LogicalFilter, LogicalJoin,
    LogicalLimit, LogicalPlan, LogicalProject, LogicalScan, LogicalSetOp, LogicalSort,
    LogicalValues, LogicalWindow,
)
from planner.runtime_filters import probe_targets
from planner.statistics import estimate_rows
from sql.expressions import ColumnRef, Expr
from sql.relations import CatalogView
from storage.catalog.meta import DistributionType
from storage.types import DataType


@dataclass(frozen=True, slots=True)
class DistributeOptions:
    # from QueryOptions (planner/query.py); no defaults: server/variables.py holds them
    disable_colocate: bool  # disable_colocate_plan / disable_colocate_join
    bucket_shuffle: bool  # enable_bucket_shuffle_join
    broadcast_row_limit: int  # broadcast_row_count_limit
    backends: int


@dataclass(frozen=True, slots=True)
class Dist:
    """How rows of a node's output are spread over instances.

    kind: "hash" (by `cols`: per distribution column the output names holding its value —
    several after an equi-join made columns equal, none when it is not visible),
    "random", or "gather" (one instance). `table` is set while the hash is still a table's
    own bucket distribution: (table_id, colocate group id or None, group stable).
    `text` is what a fragment's PARTITION line prints.
    """

    kind: str
    cols: tuple[frozenset[str], ...] = ()
    table: tuple[int, int | None, bool] | None = None
    text: str = ""
    # while `table` is set: the table's bucket count and distribution column types (a
    # bucket-shuffle exchange hashes the other side's keys as these types)
    buckets: int = 0
    bucket_types: tuple[DataType, ...] = ()


GATHER = Dist("gather", text="UNPARTITIONED")


@dataclass(frozen=True, slots=True)
class ExchangeSpec:
    """How an exchange routes rows, for the executor (executor/coordinator.py).

    kind: "gather" (all to the one receiving instance), "broadcast" (a copy to every
    instance), "hash" (by `keys`, the same hash on both sides of a shuffle join), or "bucket"
    (by Doris' bucket function of `keys` cast to `bucket_types`, to the instance holding that
    bucket seq of the receiving fragment's table: bucket shuffle).
    `aggregate`: the exchange moves the partial states of the aggregate at its path (two-phase
    aggregation); `top_n`: the sender runs the TOP-N at its path and the receiver merges
    (sort + limit again) above the exchange.
    """

    kind: str
    keys: tuple[Expr, ...] = ()
    buckets: int = 0
    bucket_types: tuple[DataType, ...] = ()
    aggregate: bool = False
    top_n: bool = False


@dataclass
class PNode:
    id: int
    name: str
    details: list[str] = field(default_factory=list)
    verbose: list[str] = field(default_factory=list)  # EXPLAIN VERBOSE only
    children: list[PNode] = field(default_factory=list)
    # exchanges: the subtree feeding it (another fragment), its sink line and partition
    source: PNode | None = None
    sink: str = ""
    source_dist: Dist | None = None
    shape: str = ""  # EXPLAIN SHAPE PLAN label
    colocated: bool = False
    scan_key: int | None = None  # scans: id() of their LogicalScan (runtime-filter targets)
    # child indexes from the plan root to the logical node this node executes (the executor's
    # operator tree mirrors the plan, so the profile finds the operator at the same path);
    # exchanges carry the path of the node whose output they move
    path: tuple[int, ...] = ()
    exchange: ExchangeSpec | None = None  # exchanges: how rows are routed


@dataclass
class Fragment:
    id: int
    root: PNode
    partition: str
    sink: list[str]
    output_exprs: list[str] = field(default_factory=list)
    has_colo: bool = False


def column_text(name: str) -> str:
    """Doris' slot spelling: `name[#id]` for internal names `name#id`."""
    base, sep, slot = name.rpartition("#")
    return f"{base}[#{slot}]" if sep and slot.isdigit() else name


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
        self._rf = 0
        self.scan_filters: dict[int, list[str]] = {}  # id(LogicalScan) -> "RF000[..] -> col"
        # EXPLAIN VERBOSE: per scan, its indexes and the (RF id, column) of its runtime filters
        self.scan_usage: dict[int, IndexUsage] = {}
        self.scan_rf_columns: dict[int, list[tuple[str, str]]] = {}
        self.display: dict[str, str] = {}  # projected output name -> its expression's text
        self.buckets: dict[int, int] = {}  # table id -> bucket count (0: not hash-distributed)
        self._path: tuple[int, ...] = ()

    def text(self, e: Expr) -> str:
        """An expression as EXPLAIN prints it (projected names replaced by what they compute)."""
        if isinstance(e, ColumnRef) and e.name in self.display:
            return self.display[e.name]
        return expr_text(e)

    def node(self, name: str, children: list[PNode] | None = None,
             details: list[str] | None = None, shape: str = "") -> PNode:
        n = PNode(self._ids, name, details or [], [], children or [], shape=shape,
                  path=self._path)
        self._ids += 1
        return n

    def exchange(self, child: PNode, dist: Dist, sink: str, shape: str,
                 spec: ExchangeSpec, at: tuple[int, ...]) -> PNode:
        """An exchange moving the output of the plan node at path `at` (its sender fragment
        computes that node; `child` is the top of what EXPLAIN draws below the exchange)."""
        ex = self.node("VEXCHANGE", details=["offset: 0"], shape=shape)
        ex.source, ex.sink, ex.source_dist, ex.path = child, sink, dist, at
        ex.exchange = spec
        return ex

    def gather(self, node: PNode, dist: Dist, at: tuple[int, ...],
               spec: ExchangeSpec = ExchangeSpec("gather")) -> PNode:
        if dist.kind == "gather":
            return node
        return self.exchange(node, dist, "UNPARTITIONED",
                             "PhysicalDistribute[DistributionSpecGather]", spec, at)

    # ---- visiting --------------------------------------------------------------------------
    def visit(self, plan: LogicalPlan, path: tuple[int, ...] = ()) -> tuple[PNode, Dist]:
        saved, self._path = self._path, path
        try:
            return self._visit(plan)
        finally:
            self._path = saved

    def child(self, plan: LogicalPlan, *index: int) -> tuple[PNode, Dist]:
        """Visit the node at child position(s) `index` below the node being planned."""
        node = plan
        for i in index:
            node = node.children[i]
        return self.visit(node, self._path + index)

    def _visit(self, plan: LogicalPlan) -> tuple[PNode, Dist]:
        if isinstance(plan, LogicalScan):
            return self.scan(plan)
        if isinstance(plan, LogicalProject):
            node, dist = self.child(plan, 0)
            for n, e in plan.exprs:  # later nodes print what a projected name stands for
                # computed columns and generated names (`_c0`) print what they stand for;
                # binder names keep their own `name[#id]`
                if not isinstance(e, ColumnRef) or ("#" not in n and n != e.name):
                    self.display.setdefault(n, self.text(e))
            return node, _through_project(dist, plan)
        if isinstance(plan, LogicalFilter):
            node, dist = self.child(plan, 0)
            sel = self.node("VSELECT", [node], [f"predicates: {self.text(plan.predicate)}"],
                            shape="PhysicalFilter")
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
            keys = ", ".join(f"{self.text(k.expr)} {'DESC' if k.desc else 'ASC'}"
                             for k in plan.keys)
            return self.node("VSORT", [node], [f"order by: {keys}", "offset: 0"],
                             shape="PhysicalQuickSort"), GATHER
        if isinstance(plan, LogicalWindow):
            node, dist = self.child(plan, 0)
            node = self.gather(node, dist, self._path + (0,))
            fns = ", ".join(self.text(w) for _, w in plan.windows)
            return self.node("VANALYTIC-EVAL", [node], [f"functions: {fns}"],
                             shape="PhysicalWindow"), GATHER
        if isinstance(plan, LogicalSetOp):
            kids = [self.gather(*self.child(plan, i), self._path + (i,))
                    for i in range(len(plan.inputs))]
            name = {"union_all": "VUNION", "intersect": "VINTERSECT", "except": "VEXCEPT"}
            return self.node(name.get(plan.op, "VUNION"), kids,
                             shape=f"Physical{name.get(plan.op, 'VUNION')[1:].title()}"), GATHER
        if isinstance(plan, LogicalAssertOneRow):
            node = self.gather(*self.child(plan, 0), self._path + (0,))
            return self.node("VASSERT-NUM-ROWS", [node], ["assert number of rows: EQ 1"],
                             shape="PhysicalAssertNumRows"), GATHER
        if isinstance(plan, LogicalFileScan):  # read by one instance: the files are local
            return self.node("VFILE_SCAN_NODE", details=[
                f"table: {plan.function}", f"format: {plan.format}",
                f"files: {len(plan.paths)}", f"cardinality={int(estimate_rows(plan))}"],
                shape="PhysicalTVFRelation"), GATHER
        if isinstance(plan, LogicalValues):
            return self.node("VUNION", details=[f"constant exprs: {len(plan.rows)} rows"],
                             shape="PhysicalOneRowRelation"), GATHER
        raise NotImplementedError(type(plan).__name__)  # pragma: no cover

    def scan(self, plan: LogicalScan) -> tuple[PNode, Dist]:
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
        tablet_list = ",".join(str(t) for t in tablets[:3]) + (" ..." if len(tablets) > 3 else "")
        scanned = next((ix for ix in self.catalog.materialized_indexes(plan.table_id)
                        if ix.index_id == plan.index_id), None)
        index = scanned.name if scanned is not None else plan.table
        reason = getattr(plan, "preagg_reason", None)
        preagg = "PREAGGREGATION: ON" if not reason else f"PREAGGREGATION: OFF. Reason: {reason}"
        details = [f"TABLE: {plan.db}.{plan.table}({index}), {preagg}"]
        if plan.filters:
            details.append("PREDICATES: " + " AND ".join(self.text(f) for f in plan.filters))
        node = self.node("VOlapScanNode", details=details, shape=f"PhysicalOlapScan[{plan.table}]")
        self.scan_filters.setdefault(id(plan), [])
        node.details.extend([
            f"partitions={len(chosen)}/{len(formal)} ({','.join(names)})",
            f"tablets={len(tablets)}/{total_tablets}, tabletList={tablet_list}",
            f"cardinality={int(estimate_rows(plan))}, avgRowSize=0.0, "
            f"numNodes={len({r.tablet.backend_id for r in plan.ranges}) or 1}",
            "pushAggOp=NONE",
        ])
        node.scan_key = id(plan)
        usage = self.scan_usage[id(plan)] = IndexUsage(meta, scanned, plan.predicates)
        line = index_line(plan, usage, self.text)  # EXPLAIN VERBOSE: the index of each filter
        if line is not None:
            node.verbose = [line]
        if meta is None or meta.distribution.type is not DistributionType.HASH:
            self.buckets[plan.table_id] = 0
            return node, Dist("random", text="RANDOM")
        self.buckets[plan.table_id] = meta.distribution.buckets
        cols = tuple(frozenset({c}) if c in plan.columns else frozenset()
                     for c in meta.distribution.columns)
        group = meta.colocate_group_id
        stable = True
        if group is not None:
            g = getattr(self.catalog, "colocate_group", lambda _gid: None)(group)
            stable = bool(getattr(g, "is_stable", True)) if g is not None else True
        text = "HASH_PARTITIONED: " + ", ".join(meta.distribution.columns)
        types = tuple(meta.column(c).type for c in meta.distribution.columns)
        return node, Dist("hash", cols, (plan.table_id, group, stable), text,
                          meta.distribution.buckets, types)

    def limit(self, plan: LogicalLimit) -> tuple[PNode, Dist]:
        child = plan.child
        if isinstance(child, LogicalSort) and plan.limit is not None:
            node, dist = self.child(plan, 0, 0)
            keys = ", ".join(f"{self.text(k.expr)} {'DESC' if k.desc else 'ASC'}"
                             for k in child.keys)
            top = self.node("VTOP-N", [node], [f"order by: {keys}", f"offset: {plan.offset}",
                                               f"limit: {plan.limit}"], shape="PhysicalTopN")
            ex = self.gather(top, dist, self._path, ExchangeSpec("gather", top_n=True))
            if ex is not top:
                ex.details = [f"offset: {plan.offset}", f"limit: {plan.limit}"]
            return ex, GATHER
        node, dist = self.child(plan, 0)
        node = self.gather(node, dist, self._path + (0,))
        node.details.append(f"limit: {plan.limit}")
        return node, GATHER

    def aggregate(self, plan: LogicalAggregate) -> tuple[PNode, Dist]:
        child, dist = self.child(plan, 0)
        outputs = ", ".join(f"{a.sql()}" for _, a in plan.aggregates)
        groups = [self.text(e) for _, e in plan.group_by]
        for (n, _), g in zip(plan.group_by, groups):
            self.display.setdefault(n, g)
        for n, a in plan.aggregates:
            self.display.setdefault(n, a.sql())
        details = [f"output: {outputs}" if outputs else "output: ",
                   f"group by: {', '.join(groups)}"]
        card = f"cardinality={int(estimate_rows(plan))}"
        by_name = {e.name: n for n, e in plan.group_by if isinstance(e, ColumnRef)}
        if plan.group_by and dist.kind == "hash" and dist.cols and \
                all(alts & by_name.keys() for alts in dist.cols):
            node = self.node("VAGGREGATE (update finalize)", [child], details + [card],
                             shape="hashAgg[GLOBAL]")
            cols = tuple(frozenset(by_name[c] for c in alts if c in by_name) for alts in dist.cols)
            return node, replace(dist, cols=cols)
        local = self.node("VAGGREGATE (update serialize)", [child], details + [card],
                          shape="hashAgg[LOCAL]")
        if plan.group_by:
            keys = ", ".join(groups)
            ex = self.exchange(local, dist, f"HASH_PARTITIONED: {keys}",
                               "PhysicalDistribute[DistributionSpecHash]",
                               ExchangeSpec("hash", tuple(e for _, e in plan.group_by),
                                            aggregate=True), self._path)
            out = Dist("hash", tuple(n for n, _ in plan.group_by), None,
                       f"HASH_PARTITIONED: {keys}")
        else:
            ex = self.exchange(local, dist, "UNPARTITIONED",
                               "PhysicalDistribute[DistributionSpecGather]",
                               ExchangeSpec("gather", aggregate=True), self._path)
            out = GATHER
        final = self.node("VAGGREGATE (merge finalize)", [ex], details + [card],
                          shape="hashAgg[GLOBAL]")
        return final, out

    # ---- joins -----------------------------------------------------------------------------
    def join(self, plan: LogicalJoin) -> tuple[PNode, Dist]:
        left, ld = self.child(plan, 0)
        right, rd = self.child(plan, 1)
        lk = [k.name if isinstance(k, ColumnRef) else None for k in plan.left_keys]
        rk = [k.name if isinstance(k, ColumnRef) else None for k in plan.right_keys]
        op = _JOIN_OP.get(plan.kind, plan.kind.upper())
        reasons: list[str] = []
        card = f"cardinality={int(estimate_rows(plan))}"
        if not plan.left_keys:
            mode = "BROADCAST" if plan.kind not in _NO_BROADCAST else "PARTITIONED"
            if mode == "BROADCAST":
                right = self.exchange(right, rd, "UNPARTITIONED",
                                      "PhysicalDistribute[DistributionSpecReplicated]",
                                      ExchangeSpec("broadcast"), self._path + (1,))
                out = ld
            else:
                left = self.gather(left, ld, self._path + (0,))
                right = self.gather(right, rd, self._path + (1,))
                out = GATHER
            details = [f"join op: {op}({mode})[]"]
            if plan.residual is not None or plan.condition is not None:
                cond = [e for e in (plan.residual, plan.condition) if e is not None]
                details.append("other join predicates: " + " AND ".join(self.text(e) for e in cond))
            details.append(card)
            node = self.node("VNESTED LOOP JOIN", [left, right], details,
                             shape=f"NestedLoopJoin[{op.replace(' ', '_')}]")
            return node, out
        mode = self._choose(plan, ld, rd, lk, rk, reasons)
        colocated = False
        if mode == "COLOCATE":
            out = _joined(ld, rd, lk, rk) if plan.kind == "inner" else ld
            colocated = True
        elif mode == "BUCKET_SHUFFLE":
            keys = ", ".join(self.text(k) for k in plan.right_keys)
            right = self.exchange(right, rd, f"BUCKET_SHFFULE_HASH_PARTITIONED: {keys}",
                                  "PhysicalDistribute[DistributionSpecHash]",
                                  ExchangeSpec("bucket", _bucket_keys(plan, ld, lk),
                                               ld.buckets, ld.bucket_types), self._path + (1,))
            out = _joined(ld, None, lk, rk) if plan.kind == "inner" else ld
        elif mode == "BROADCAST":
            right = self.exchange(right, rd, "UNPARTITIONED",
                                  "PhysicalDistribute[DistributionSpecReplicated]",
                                  ExchangeSpec("broadcast"), self._path + (1,))
            out = ld
        else:
            lkeys = ", ".join(self.text(k) for k in plan.left_keys)
            rkeys = ", ".join(self.text(k) for k in plan.right_keys)
            left = self.exchange(left, ld, f"HASH_PARTITIONED: {lkeys}",
                                 "PhysicalDistribute[DistributionSpecHash]",
                                 ExchangeSpec("hash", tuple(plan.left_keys)), self._path + (0,))
            right = self.exchange(right, rd, f"HASH_PARTITIONED: {rkeys}",
                                  "PhysicalDistribute[DistributionSpecHash]",
                                  ExchangeSpec("hash", tuple(plan.right_keys)), self._path + (1,))
            out = Dist("hash", tuple(frozenset({k}) if k else frozenset() for k in lk), None,
                       f"HASH_PARTITIONED: {lkeys}")
        if plan.kind in _NULLS_LEFT_KEYS:
            # rows the left side did not match carry NULL left keys in every instance: the
            # output is laid out like the plan says, but not partitioned by those columns
            out = Dist("random", text=out.text)
        colo = "COLOCATE[]" if colocated else mode
        details = [f"join op: {op}({colo})[]"]
        details += [f"equal join conjunct: ({self.text(a)} = {self.text(b)})"
                    for a, b in zip(plan.left_keys, plan.right_keys)]
        if plan.residual is not None:
            details.append(f"other join predicates: {self.text(plan.residual)}")
        if plan.mark_keys is not None:
            details.append("mark join predicates: "
                           f"{self.text(plan.mark_keys[0])} = {self.text(plan.mark_keys[1])}")
        rfs = []
        for t in probe_targets(plan):
            rf = f"RF{self._rf:03d}"
            self._rf += 1
            rfs.append(f"{rf}[in_or_bloom] <- {self.text(plan.right_keys[t.key_index])}")
            self.scan_rf_columns.setdefault(id(t.scan), []).append((rf, t.column))
            self.scan_filters.setdefault(id(t.scan), []).append(
                f"{rf}[in_or_bloom] -> {column_text(t.column)}")
        if rfs:
            details.append("runtime filters: " + ", ".join(rfs))
        details.append(card)
        shape_cond = " AND ".join(f"({self.text(a)} = {self.text(b)})"
                                  for a, b in zip(plan.left_keys, plan.right_keys))
        other = self.text(plan.residual) if plan.residual is not None else ""
        node = self.node("VHASH JOIN", [left, right], details,
                         shape=f"hashJoin[{op.replace(' ', '_')}] hashCondition=({shape_cond}) "
                               f"otherCondition=({other})")
        node.verbose = reasons
        node.colocated = colocated
        return node, out

    def _choose(self, plan: LogicalJoin, ld: Dist, rd: Dist, lk: list[str | None],
                rk: list[str | None], reasons: list[str]) -> str:
        o = self.options
        hint = (plan.hint or "").upper()
        pairs = set(zip(lk, rk))
        # colocate
        why = _colocate_rejection(ld, rd, pairs, o.disable_colocate)
        if why is None:
            return "COLOCATE"
        reasons.append(f"colocate: false, reason: {why}")
        # bucket shuffle
        if not o.bucket_shuffle:
            why = "Session disabled (enable_bucket_shuffle_join = false)"
        elif ld.kind != "hash" or ld.table is None:
            why = "the left side is not distributed like its table"
        elif not ld.cols or any(not (alts & set(lk)) for alts in ld.cols):
            why = "the join keys do not cover the left table's distribution columns"
        else:
            why = None
        bucket_ok = why is None
        if bucket_ok and hint not in ("BROADCAST",):
            return "BUCKET_SHUFFLE"
        if why is not None:
            reasons.append(f"bucket shuffle: false, reason: {why}")
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
            return "BROADCAST"
        if bucket_ok:
            return "BUCKET_SHUFFLE"
        reasons.append(f"broadcast: false, reason: {why}")
        return "PARTITIONED"

    # ---- fragments -------------------------------------------------------------------------
    def fragments(self, root: PNode, root_dist: Dist, outputs: list[str]) -> list[Fragment]:
        top = self.gather(root, root_dist, ())
        frags: list[Fragment] = []

        def cut(node: PNode, partition: str, sink: list[str]) -> None:
            frag = Fragment(len(frags), node, partition, sink)
            frags.append(frag)
            stack = [node]
            while stack:
                n = stack.pop()
                if n.colocated:
                    frag.has_colo = True
                if n.source is not None:
                    assert n.source_dist is not None
                    cut(n.source, n.source_dist.text or "UNPARTITIONED",
                        ["STREAM DATA SINK", f"  EXCHANGE ID: {n.id:02d}", f"  {n.sink}"])
                stack.extend(reversed(n.children))

        cut(top, "UNPARTITIONED", ["VRESULT SINK", "   MYSQL_PROTOCAL"])
        frags[0].output_exprs = outputs
        return frags


def _through_project(dist: Dist, plan: LogicalProject) -> Dist:
    if dist.kind != "hash":
        return dist
    renamed: dict[str, str] = {}
    for n, e in plan.exprs:
        if isinstance(e, ColumnRef) and e.name not in renamed:
            renamed[e.name] = n
    return replace(dist, cols=tuple(frozenset(renamed[c] for c in alts if c in renamed)
                                    for alts in dist.cols))


def _joined(ld: Dist, rd: Dist | None, lk: list[str | None], rk: list[str | None]) -> Dist:
    """The left side's distribution after an INNER equi-join kept it (outer joins may null the
    right keys, so they keep the left names only): each distribution
    column's value is now also in the right keys paired with it (and, colocated, in the right
    table's own distribution column), so later joins and aggregates may use either name."""
    cols = []
    for i, alts in enumerate(ld.cols):
        more = {r for l, r in zip(lk, rk) if l in alts and r}
        if rd is not None and i < len(rd.cols):
            more |= rd.cols[i]
        cols.append(alts | more)
    return replace(ld, cols=tuple(cols))


def _bucket_keys(plan: LogicalJoin, ld: Dist, lk: list[str | None]) -> tuple[Expr, ...]:
    """For a bucket-shuffle join: per distribution column of the left table, the right key
    its equi conjunct pairs it with (the right rows are bucketed by these)."""
    out = []
    for alts in ld.cols:
        j = next(i for i, k in enumerate(lk) if k in alts)
        out.append(plan.right_keys[j])
    return tuple(out)


def _colocate_rejection(ld: Dist, rd: Dist, pairs: set[tuple[str | None, str | None]],
                        disabled: bool) -> str | None:
    if disabled:
        return "Session disabled"
    if ld.table is None or rd.table is None or ld.kind != "hash" or rd.kind != "hash":
        return "The src data has been redistributed"
    if ld.table[1] is None or ld.table[1] != rd.table[1]:
        return "Tables are not in the same group"
    if not (ld.table[2] and rd.table[2]):
        return "Colocate group is not stable"
    if len(ld.cols) != len(rd.cols) or any(
            not any((a, b) in pairs for a in la for b in ra) for la, ra in zip(ld.cols, rd.cols)):
        return "The join keys do not pair the distribution columns of both tables"
    return None


@dataclass
class DistributedPlan:
    fragments: list[Fragment]
    scan_filters: dict[int, list[str]]
    buckets: dict[int, int] = field(default_factory=dict)  # table id -> bucket count (0: none)


def distribute(plan: LogicalPlan, catalog: CatalogView, options: DistributeOptions,
               output_names: list[str]) -> DistributedPlan:
    p = _Planner(catalog, options)
    root, dist = p.visit(plan)
    frags = p.fragments(root, dist, [column_text(n) for n in output_names])
    # runtime-filter targets were recorded while joins above the scans were visited
    for f in frags:
        stack = [f.root]
        while stack:
            n = stack.pop()
            key = n.scan_key
            if key is not None and p.scan_filters.get(key):
                n.details.insert(len(n.details) - 4, "runtime filters: " +
                                 ", ".join(p.scan_filters[key]))
                n.verbose.append(runtime_filter_line(p.scan_usage[key],
                                                     p.scan_rf_columns.get(key, [])))
            stack.extend(n.children)
    return DistributedPlan(frags, p.scan_filters, p.buckets)
