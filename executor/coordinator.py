"""Coordinator: runs a query's distributed plan as fragment instances joined by exchanges.

planner/distribute.py cuts the plan into fragments; here each fragment gets its instances,
sized by the cores and the work left after pruning, never by the number of backends (`_assign`):
- a fragment that scans tables runs one instance per `shaledb_small_fragment_rows` rows its
  pruned tablets hold, at most `parallel_fragment_exec_instance_num` capped at the cores. When
  its tables are hash-distributed the unit of work is the bucket seq (all partitions' tablets
  of bucket b go to one instance), so colocate joins, bucket-shuffle joins and one-phase
  aggregates see every row of a bucket in one place; otherwise the unit is the tablet;
- a fragment fed by hash exchanges (shuffle joins, merging aggregates) runs as many instances
  as its widest input;
- an UNPARTITIONED fragment runs one instance. Fragment 0 (the result sink) runs on the
  caller's thread, pulled lazily as the server streams rows; an exchange between one sender
  instance and one receiver is pulled inline on the receiver's thread; every other instance
  runs as a task of the process-wide CPU pool (executor/cpu_pool.py: one slot per core shared
  by all queries, given back while an instance waits on an exchange) and pushes its output
  into the exchange above it (executor/exchange.py).
An instance is the fragment's physical nodes (planner/physical.py) built 1:1 into operators by
executor/build.py, its scans reading only the instance's tablets and each exchange its
receiving end (`ExchangeSource`, or the sender's operators pulled inline); the coordinator
reads only the fragments and their DataPartitions, never the logical plan. Errors and KILL
stop every instance (the first real error is what the client sees); closing the result early
(LIMIT) halts and joins them.
Upstream: Doris `Coordinator` (fragment instance params, `computeScanRangeAssignment`,
bucket-seq-to-instance maps for colocate and bucket shuffle), `PipelineFragmentContext`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from executor.build import build_operator
from executor.cpu_pool import POOL, Join
from executor.exchange import (
    ExchangeCounters,
    ExchangeSource,
    InlineExchange,
    QueryRun,
    Receiver,
    Sender,
)
from executor.grouped_state import state_names
from executor.operator import ExecContext, Operator
from executor.state import InstanceStates, JoinBuildState, RuntimeFilterState
from planner.fragment import DistributedPlan, PlanFragment
from planner.partitioning import PartitionKind
from planner.physical import (
    Carries,
    Exchange,
    HashAggregate,
    HashJoin,
    NestedLoopJoin,
    OlapScan,
    walk,
)
from planner.scan_ranges import ScanRange
from storage.batch import Batch
from storage.scan_stats import ScanStats


@dataclass
class Link:
    """One exchange: `sender` fragment's instances -> `receiver` fragment's instances."""

    node: Exchange  # its `partition` routes the rows (`replicated`: a broadcast)
    sender: FragmentRun
    receiver: FragmentRun
    counters: ExchangeCounters = field(default_factory=ExchangeCounters)
    receivers: list[Receiver] = field(default_factory=list)


@dataclass
class Instance:
    backend: int | None
    units: frozenset[object] | None  # bucket seqs or tablet ids; None: no scans
    ops: dict[int, Operator] = field(default_factory=dict)  # by physical node id
    root: Operator | None = None
    stats: ScanStats = field(default_factory=ScanStats)


@dataclass
class FragmentRun:
    fragment: PlanFragment
    output: Link | None = None
    inputs: list[Link] = field(default_factory=list)
    scans: dict[int, OlapScan] = field(default_factory=dict)  # by node id
    bucketed: bool = False
    instances: list[Instance] = field(default_factory=list)

    @property
    def backends(self) -> list[int]:
        return sorted({i.backend for i in self.instances if i.backend is not None})


class Coordinator:
    """Instances of every fragment of one query; `run()` yields the result batches."""

    def __init__(self, dplan: DistributedPlan, ctx: ExecContext,
                 backends: list[int], runtime_filters: bool, small_rows: int) -> None:
        # rows a scan instance needs to be worth its thread (shaledb_small_fragment_rows)
        self.small_rows = small_rows
        self.dplan = dplan
        self.ctx = ctx
        self.backends = backends or [0]
        self.rf = runtime_filters
        self.run_state = QueryRun(ctx.cancel)
        self.frags: list[FragmentRun] = []
        self.links: list[Link] = []
        self._threads: list[Join] = []
        self._cut()
        for f in reversed(self.frags):  # senders first: a receiver sizes itself by them
            self._assign(f)
        self._wire()
        # broadcast joins the planner marked shared_build, by join node id: when their
        # fragment runs several instances only instance 0 receives the rows and builds
        # (executor/state.py JoinBuildState)
        self.join_builds: dict[int, JoinBuildState] = {
            join: JoinBuildState() for join, ex in self._shared_builds.items()
            if len(self._link_of[ex].receiver.instances) > 1}
        self._shared_exchanges = {self._shared_builds[j] for j in self.join_builds}
        self.join_filters: dict[int, list[RuntimeFilterState]] = defaultdict(list)
        self.scan_filters: dict[int, list[RuntimeFilterState]] = defaultdict(list)
        if runtime_filters:
            self._global_filters()

    # ---- structure -------------------------------------------------------------------------
    def _cut(self) -> None:
        # shared-build joins: join node id -> the id of the exchange feeding their build side
        self._shared_builds: dict[int, int] = {}
        self._join_runs: dict[int, FragmentRun] = {}  # by join node id: the fragment running it
        self._scan_runs: dict[int, FragmentRun] = {}  # by scan node id
        self._link_of: dict[int, Link] = {}  # by exchange node id

        def visit(frag: PlanFragment) -> FragmentRun:
            run = FragmentRun(frag)
            self.frags.append(run)
            stack = [frag.root]
            while stack:
                n = stack.pop()
                if isinstance(n, (HashJoin, NestedLoopJoin)):
                    build = n.children[1]
                    if n.shared_build and isinstance(build, Exchange):
                        self._shared_builds[n.id] = build.id
                    self._join_runs[n.id] = run
                if isinstance(n, OlapScan):
                    run.scans[n.id] = n
                    self._scan_runs[n.id] = run
                if isinstance(n, Exchange):
                    sender = visit(self.dplan.fragments[n.sender_fragment])
                    link = Link(n, sender, run)
                    self._link_of[n.id] = link
                    sender.output = link
                    run.inputs.append(link)
                    self.links.append(link)
                    continue
                stack.extend(n.children)
            return run

        visit(self.dplan.fragments[0])

    def _global_filters(self) -> None:
        """Runtime filters whose target scan runs in another fragment than the join (below an
        exchange under the join's probe side; executor/state.py RuntimeFilterState); targets
        in the join's own fragment are wired inside each instance by executor/build.py."""
        for desc in self.dplan.runtime_filters:
            run = self._join_runs[desc.join_node]
            if self._scan_runs[desc.target_node] is run:
                continue  # in the join's own fragment: wired by executor/build.py
            join = next(n for n in walk(run.fragment.root) if n.id == desc.join_node)
            right = join.children[1]
            whole = len(run.instances) == 1 or (isinstance(right, Exchange) and right.replicated)
            gf = RuntimeFilterState(desc.column, desc.key_index, len(run.instances), whole)
            self.join_filters[desc.join_node].append(gf)
            self.scan_filters[desc.target_node].append(gf)

    # ---- instances -------------------------------------------------------------------------
    def _assign(self, run: FragmentRun) -> None:
        """Instances of one fragment, sized by the cores and the work, never by backends.

        `ctx.parallelism` is `parallel_fragment_exec_instance_num` capped at the cores: more
        instances than cores only contend for the GIL. A scan fragment runs one instance per
        `small_rows` rows left after partition and bucket pruning (an instance costs a thread
        and a hand-off, worth it only for enough rows), at most one per unit of work; a
        fragment fed by exchanges runs as many instances as its widest input, so a chain of
        one-instance fragments runs inline on one thread (`inline`), as before fragments
        existed."""
        par = max(1, self.ctx.parallelism)
        if not run.scans:
            wide = run.fragment.partition.is_partitioned and run.fragment.id != 0
            widest = max((len(link.sender.instances) for link in run.inputs), default=1)
            n = min(par, widest) if wide else 1
            run.instances = [Instance(self.backends[i % len(self.backends)], None)
                             for i in range(n)]
            return
        scans = list(run.scans.values())
        # rows laid out by a table's buckets (colocate and bucket-shuffle joins, one-phase
        # aggregates rely on it): the unit of work is the bucket seq
        bucketing = run.fragment.partition.bucketing
        run.bucketed = bucketing is not None and bucketing.buckets > 0
        owner: dict[object, int] = {}
        if run.bucketed:
            votes: dict[int, Counter[int]] = defaultdict(Counter)
            for s in scans:
                for r in s.ranges:
                    votes[r.tablet.bucket_seq][r.tablet.backend_id] += 1
            for seq, c in votes.items():
                owner[seq] = min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        elif len(scans) == 1:
            for r in scans[0].ranges:
                owner[r.tablet.tablet_id] = r.tablet.backend_id
        if not owner:  # nothing left after pruning: one instance (reads nothing)
            run.instances = [Instance(self.backends[0], None)]
            return
        rows = sum(s.row_count for s in scans)
        n = max(1, min(par, len(owner), rows // max(1, self.small_rows)))
        # units in backend order, dealt round-robin: each instance gets an even share of the
        # tablets (they hold about equal rows under hash distribution); it is placed on the
        # backend owning most of its units (the profile's host)
        units = sorted(owner, key=lambda u: (owner[u], u))  # type: ignore[arg-type, unused-ignore]
        for j in range(n):
            mine = units[j::n]
            backend = Counter(owner[u] for u in mine).most_common(1)[0][0]
            run.instances.append(Instance(backend, frozenset(mine)))

    def _unit(self, run: FragmentRun, r: ScanRange) -> object:
        return r.tablet.bucket_seq if run.bucketed else r.tablet.tablet_id

    def _bucket_instance(self, run: FragmentRun, buckets: int) -> np.ndarray:
        """Receiving instance of each bucket seq (unscanned buckets: instance 0, where rows
        meet nothing, as outer joins need them to exist exactly once)."""
        out = np.zeros(max(buckets, 1), np.int64)
        for i, inst in enumerate(run.instances):
            for seq in inst.units or ():
                if isinstance(seq, int) and 0 <= seq < len(out):
                    out[seq] = i
        return out

    def _wire(self) -> None:
        for link in self.links:
            ordered = link.node.partition.kind is PartitionKind.UNPARTITIONED \
                and not link.node.replicated and not link.sender.inputs
            link.receivers = [Receiver(self.run_state, len(link.sender.instances), ordered)
                              for _ in link.receiver.instances]

    # ---- building one instance -------------------------------------------------------------
    def _build(self, run: FragmentRun, index: int) -> Operator:
        inst = run.instances[index]

        def scan_ranges(node: OlapScan) -> tuple[ScanRange, ...] | None:
            if inst.units is None or node.id not in run.scans:
                return None
            return tuple(r for r in node.ranges if self._unit(run, r) in inst.units)

        def receive(node: Exchange) -> Operator:
            link = self._link_of[node.id]
            names = node.names
            if node.carries is Carries.AGG_STATE:  # the sender's partial aggregate states
                partial = node.source
                assert isinstance(partial, HashAggregate)
                names = state_names(partial.exprs)
            if self.inline(link):
                return InlineExchange(self._build(link.sender, 0), link.counters, names)
            return ExchangeSource(link.receivers[index], names)

        # a COLOCATE join is an ordinary hash join here: the instance holds whole buckets of
        # both tables, so every match is local
        states = InstanceStates(self.join_builds, index == 0, self.join_filters,
                                self.scan_filters)
        return build_operator(run.fragment.root, receive=receive,
                              scan_ranges=scan_ranges,
                              runtime_filters=self.rf, built=inst.ops, states=states)

    def inline(self, link: Link) -> bool:
        """One sender instance and one receiver: the receiver pulls the sender's operators
        on its own thread (no thread, no queue; rows and bytes still counted)."""
        return len(link.sender.instances) == 1 and len(link.receiver.instances) == 1

    # ---- running ---------------------------------------------------------------------------
    def _instance_ctx(self, run: FragmentRun, inst: Instance) -> ExecContext:
        share = max(1, self.ctx.parallelism // max(1, len(run.instances)))
        return replace(self.ctx, cancel=self.run_state.halt, scan_stats=inst.stats,
                       parallelism=share)

    def _sender(self, run: FragmentRun, index: int, ctx: ExecContext) -> Sender:
        link = run.output
        assert link is not None
        bucket_map = None
        partition = link.node.partition
        bucketing = partition.bucketing
        if partition.kind is PartitionKind.BUCKET_SHUFFLE:
            # the planner put the bucket-shuffled side's partner scan in the receiving fragment
            assert bucketing is not None
            assert link.receiver.bucketed or len(link.receiver.instances) == 1
            bucket_map = self._bucket_instance(link.receiver, bucketing.buckets)
        shared = link.node.id in self._shared_exchanges
        receivers = link.receivers[:1] if shared else link.receivers
        return Sender(partition, receivers, index, link.counters, ctx.cancel, bucket_map,
                      replicated=link.node.replicated)

    def _run_instance(self, run: FragmentRun, index: int) -> None:
        inst = run.instances[index]
        ctx = self._instance_ctx(run, inst)
        op: Operator | None = None
        try:
            op = inst.root = self._build(run, index)
            sender = self._sender(run, index, ctx)
            op.open(ctx)
            for item in op.batches():
                if not sender.send(item):
                    return
            sender.finish()
        except BaseException as e:  # noqa: BLE001 - the consumer re-raises it
            self.run_state.fail(e)
        finally:
            if op is not None:
                try:
                    op.close()
                except BaseException as e:  # noqa: BLE001
                    self.run_state.fail(e)
            with self.ctx.stats_lock:
                self.ctx.scan_stats.add(inst.stats)

    def run(self) -> Iterator[Batch]:
        """Start every instance, then pull fragment 0 on this thread."""
        root_run = self.frags[0]
        inst = root_run.instances[0]
        root = inst.root = self._build(root_run, 0)
        tasks = []
        for run in self.frags[1:]:
            if run.output is not None and self.inline(run.output):
                continue  # pulled by its receiver
            for i in range(len(run.instances)):
                tasks.append((partial(self._run_instance, run, i),
                              f"fragment-{run.fragment.id}-{i}"))
        # every other instance runs on the process-wide CPU pool (executor/cpu_pool.py);
        # this thread holds no slot: it is the server's, and it also waits on the client
        self._threads = [POOL.spawn(task, name) for task, name in tasks]
        try:
            root.open(self.ctx)
            yield from root.batches()
            self.run_state.check()
        finally:
            self.run_state.halt.set()
            for t in self._threads:
                t.join()
            root.close()

    # ---- profile ---------------------------------------------------------------------------
    def operators(self, fragment_id: int, node_id: int) -> list[Operator]:
        """The operators (one per instance) that ran physical node `node_id` in fragment
        `fragment_id`."""
        run = next((r for r in self.frags if r.fragment.id == fragment_id), None)
        if run is None:
            return []
        return [i.ops[node_id] for i in run.instances if node_id in i.ops]

    def link(self, exchange_id: int) -> Link | None:
        return next((lk for lk in self.links if lk.node.id == exchange_id), None)

    def fragment(self, fragment_id: int) -> FragmentRun | None:
        return next((r for r in self.frags if r.fragment.id == fragment_id), None)
