"""CompactionManager: the producer thread, the permit-limited worker pools and the triggers.

Seed 002 section 2, Doris `StorageEngine::_compaction_tasks_producer_callback`,
`CompactionPermitLimiter`, `TabletManager::find_best_tablets_to_compaction`:
- The **producer** wakes every `generate_compaction_tasks_interval_ms`, and at once when a
  publish adds rowsets (catalog rowset listener). Each round is a cumulative round, every
  `cumulative_compaction_rounds_for_each_base_compaction_round + 1`-th a base round. Per data
  dir (embedded backend) with free task slots (`compaction_task_num_per_disk`) it picks the
  tablets with the highest score (`compaction_tablet_compaction_score_factor` x compaction
  score), skipping tablets already compacting, tablets whose last compaction of that type
  failed within `min_compaction_failure_interval_sec`, tables with `disable_auto_compaction`,
  tables with a running ALTER job, and tablets a colocate move holds. Preparation (choosing the
  input rowsets, `policy.py`) happens in the producer.
- **Permits**: a task needs as many permits as its compaction score; it waits while running
  tasks hold more than `total_permits_for_compaction_score` (a task bigger than the total runs
  alone). **Workers**: `max_cumu_compaction_threads` and `max_base_compaction_threads`.
- **Lower priority than queries**: Python threads have no priorities, so a compaction sleeps
  between merged batches while queries are reading, keeping its share of a core at
  `compaction_busy_cpu_share`; with no query running it is not throttled.
- **Back-pressure**: a load into a tablet above `load_back_pressure_version_threshold` percent
  of `max_tablet_version_num` versions marks it urgent (picked before all others, cumulative,
  then base, then full) and waits for its version count to drop (`relieve`).
- **Manual**: `trigger(tablet_id, kind)` (HTTP `/api/compaction/run`, `ADMIN COMPACT TABLE`)
  and `compact(tablet_id, kind)` (synchronous), `status`/`run_status` for the HTTP API.
A tablet runs one compaction at a time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import inf
from typing import TYPE_CHECKING

from storage.catalog.meta import RowsetMeta, TabletMeta
from storage.compaction import policy
from storage.compaction.merger import merge_rowsets, swap
from storage.errors import DorisError

if TYPE_CHECKING:
    from storage.engine import StorageEngine

logger = logging.getLogger(__name__)

CUMULATIVE, BASE, FULL = "cumulative", "base", "full"
KINDS = (CUMULATIVE, BASE, FULL)
# A tablet that had nothing to compact is looked at again after this long even if no rowset
# changed (time-based conditions: base interval, pick_rowset_to_compact_interval_sec).
IDLE_RECHECK_SECONDS = 60.0
# Longest a throttled compaction sleeps in one go (so it notices shutdown and idle time).
MAX_THROTTLE_SLEEP = 0.2


# Longest a load waits for compaction to bring a tablet under the back-pressure threshold.
BACK_PRESSURE_TIMEOUT = 60.0


class TooManyVersions(DorisError):
    """Doris E-235 TOO_MANY_VERSION, with what to do about it."""

    def __init__(self, count: int, limit: int, tablet_id: int) -> None:
        super().__init__(
            f"[E-235]failed to init rowset builder. version count: {count}, exceed limit: "
            f"{limit}, tablet: {tablet_id}. Please reduce the frequency of loading data or "
            "adjust the max_tablet_version_num in be.conf to a larger value. Many small INSERTs "
            "are best sent with group commit (SET group_commit = 'sync_mode'), which gathers "
            "them into one version.")


@dataclass
class TabletCompactionState:
    """Per-tablet compaction state (Doris keeps these on `Tablet`); memory only: after a restart
    the cumulative point is calculated again from the rowsets, as Doris does for -1."""

    cumulative_point: int = -1
    last_success: dict[str, float] = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    last_failure: dict[str, float] = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    last_failure_msg: str = ""
    last_result: dict[str, str] = field(default_factory=dict)  # kind -> what the last try did
    idle_until: dict[str, float] = field(default_factory=dict)  # kind -> recheck time


@dataclass(frozen=True, slots=True)
class Task:
    tablet: TabletMeta
    kind: str
    inputs: tuple[RowsetMeta, ...]
    score: int
    last_delete_version: tuple[int, int] = (-1, -1)
    manual: bool = False


# Why `trigger` did (not) start a compaction.
STARTED, NOT_FOUND, RUNNING, BUSY, NO_SUITABLE = (
    "started", "not_found", "running", "busy", "no_suitable")


@dataclass(frozen=True)
class TriggerResult:
    started: bool
    msg: str
    reason: str  # STARTED, NOT_FOUND, RUNNING, BUSY or NO_SUITABLE
    future: Future[bool] | None = None  # the running task (True once it swapped)


@dataclass
class CompactionStats:
    """Counters for /metrics (Doris `doris_be_compaction_*`, `engine_requests_total`)."""

    tasks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    rowsets_merged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    rows_merged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    bytes_merged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    back_pressure_waits: int = 0
    too_many_versions: int = 0


class CompactionManager:
    def __init__(self, engine: StorageEngine) -> None:
        self.engine = engine
        self.cfg = engine.compaction_config
        self.stats = CompactionStats()
        self._cond = threading.Condition()
        self._states: dict[int, TabletCompactionState] = {}
        self._running: dict[int, str] = {}  # tablet id -> kind
        self._running_on: dict[int, int] = {}  # backend id -> tasks
        self._excluded: dict[int, int] = {}  # tablet id -> holders (colocate moves)
        self._urgent: set[int] = set()
        self._permits_used = 0
        self._scores: dict[int, tuple[int, int]] = {}  # tablet id -> (cumulative, base) score
        self._quiet_at: dict[int, float] = {}  # tablet id -> when _quiet_inputs may merge it
        self._wake = threading.Event()
        self._stopped = False
        self._producer: threading.Thread | None = None
        backends = max(1, len(engine.catalog.backends()))
        cumu_threads = self.cfg.max_cumu_compaction_threads
        if cumu_threads <= 0:
            cumu_threads = max(2, backends)
        self._pools = {
            CUMULATIVE: ThreadPoolExecutor(cumu_threads, thread_name_prefix="compaction-cumu"),
            BASE: ThreadPoolExecutor(max(1, self.cfg.max_base_compaction_threads),
                                     thread_name_prefix="compaction-base"),
        }
        self._pools[FULL] = self._pools[BASE]
        engine.catalog.rowset_listeners.append(self._rowsets_changed)

    # ---- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Start the producer thread (the server does; tools and tests may compact manually)."""
        with self._cond:
            if self._producer is not None or self._stopped:
                return
            self._producer = threading.Thread(target=self._produce_loop, daemon=True,
                                              name="compaction-producer")
            self._producer.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._wake.set()
        if self._producer is not None:
            self._producer.join(timeout=10)
        for pool in {id(p): p for p in self._pools.values()}.values():
            pool.shutdown(wait=True, cancel_futures=True)

    def _rowsets_changed(self, tablet_ids: set[int]) -> None:
        with self._cond:
            for tid in tablet_ids:
                self._scores.pop(tid, None)
                st = self._states.get(tid)
                if st is not None:
                    st.idle_until.clear()
            self._cond.notify_all()  # back-pressure waiters re-check their version counts
        self._wake.set()

    def state(self, tablet_id: int) -> TabletCompactionState:
        with self._cond:
            st = self._states.get(tablet_id)
            if st is None:
                st = self._states[tablet_id] = TabletCompactionState()
            return st

    # ---- producer ---------------------------------------------------------------------------
    def _produce_loop(self) -> None:
        rounds = 0
        while not self._stopped:
            self._wake.wait(self.cfg.generate_compaction_tasks_interval_ms / 1000)
            self._wake.clear()
            if self._stopped:
                return
            try:
                self.sweep_stale()
                self._produce_urgent()
                if self.cfg.disable_auto_compaction:
                    continue
                rounds += 1
                every = self.cfg.cumulative_compaction_rounds_for_each_base_compaction_round + 1
                self._produce(BASE if rounds % every == 0 else CUMULATIVE)
            except Exception:  # the producer must survive anything a round runs into
                logger.exception("compaction producer round failed")

    def _busy_tables(self) -> set[int]:
        return {j.table_id for j in self.engine.catalog.alter_jobs()
                if j.state not in ("FINISHED", "CANCELLED")}

    def _auto_disabled(self, table_id: int) -> bool:
        table = self.engine.catalog.table_by_id(table_id)
        flag = table.property("disable_auto_compaction", "false") if table is not None else None
        return table is None or (flag or "").lower() == "true"

    def _score(self, tablet: TabletMeta) -> tuple[int, int]:
        cached = self._scores.get(tablet.tablet_id)
        if cached is not None:
            return cached
        rowsets = self.engine.catalog.rowsets(tablet.tablet_id)
        st = self.state(tablet.tablet_id)
        st.cumulative_point = policy.calculate_cumulative_point(rowsets, st.cumulative_point,
                                                                self.cfg)
        scores = (policy.cumulative_score(rowsets, st.cumulative_point, self.cfg),
                  policy.base_score(rowsets, st.cumulative_point))
        self._scores[tablet.tablet_id] = scores
        above = [r for r in policy.cumulative_candidates(rowsets, st.cumulative_point)
                 if not r.delete_predicates]
        quiet = self.cfg.cumulative_compaction_quiet_seconds
        self._quiet_at[tablet.tablet_id] = (
            max(r.create_time for r in above) + quiet
            if quiet > 0 and (len(above) >= 2 or any(policy.is_overlapping(r) for r in above))
            else float("inf"))
        return scores

    def _eligible(self, tablet: TabletMeta, kind: str, now: float, busy: set[int]) -> bool:
        tid = tablet.tablet_id
        if tid in self._running or tid in self._excluded or tablet.table_id in busy:
            return False
        st = self._states.get(tid)
        if st is not None:
            if now - st.last_failure[kind] < self.cfg.min_compaction_failure_interval_sec:
                return False
            if st.idle_until.get(kind, 0.0) > now:
                return False
        return True

    def _produce(self, kind: str) -> None:
        now = time.time()
        busy = self._busy_tables()
        by_backend: dict[int, list[tuple[float, TabletMeta]]] = {}
        factor = self.cfg.compaction_tablet_compaction_score_factor
        disabled: dict[int, bool] = {}
        for t in self.engine.catalog.all_tablets():
            if t.table_id not in disabled:
                disabled[t.table_id] = self._auto_disabled(t.table_id)
            if disabled[t.table_id] or not self._eligible(t, kind, now, busy):
                continue
            cumu, base = self._score(t)
            # A base score of 1 is the base rowset alone: nothing to merge.
            raw = cumu if kind == CUMULATIVE else (base if base >= 2 else 0)
            if kind == CUMULATIVE and not raw and now >= self._quiet_at.get(t.tablet_id, inf):
                raw = 1  # deltas the level rule keeps apart, on a tablet gone quiet
            score = factor * raw
            if score > 0:
                by_backend.setdefault(t.backend_id, []).append((score, t))
        for be, scored in by_backend.items():
            free = self.cfg.compaction_task_num_per_disk - self._running_on.get(be, 0)
            scored.sort(key=lambda s: (-s[0], s[1].tablet_id))
            for _, tablet in scored:
                if free <= 0:
                    break
                if self._submit_auto(tablet, kind):
                    free -= 1

    def _produce_urgent(self) -> None:
        """Tablets loads are waiting on go first, whatever the round."""
        with self._cond:
            urgent = [tid for tid in self._urgent if tid not in self._running]
        if not urgent:
            return
        for tid in urgent:
            tablet = self._tablet(tid)
            if tablet is None or tid in self._excluded or not self._may_compact(tid):
                continue
            for kind in KINDS:
                task = self.prepare(tablet, kind, manual=True)
                if task is not None:
                    self._start(task)
                    break

    def _submit_auto(self, tablet: TabletMeta, kind: str) -> bool:
        task = self.prepare(tablet, kind)
        if task is None:
            st = self.state(tablet.tablet_id)
            now = time.time()
            recheck = now + IDLE_RECHECK_SECONDS
            quiet = self.cfg.cumulative_compaction_quiet_seconds
            rowsets = self.engine.catalog.rowsets(tablet.tablet_id)
            if kind == CUMULATIVE and quiet > 0 and (
                    len(rowsets) > 1 or any(policy.is_overlapping(r) for r in rowsets)):
                # look again the moment the tablet turns quiet (_quiet_inputs)
                newest = max(r.create_time for r in rowsets)
                recheck = min(recheck, max(now + 0.1, newest + quiet + 0.1))
            st.idle_until[kind] = recheck
            return False
        self._start(task)
        return True

    # ---- preparation (policy.py) ------------------------------------------------------------
    def prepare(self, tablet: TabletMeta, kind: str, manual: bool = False) -> Task | None:
        """Choose the input rowsets of a `kind` compaction of `tablet` (None: nothing to do;
        the reason is kept in the tablet's state for the status endpoint)."""
        if kind not in KINDS:
            raise ValueError(f"unknown compaction type {kind!r}")
        rowsets = self.engine.catalog.rowsets(tablet.tablet_id)
        st = self.state(tablet.tablet_id)
        now = time.time()
        st.cumulative_point = policy.calculate_cumulative_point(rowsets, st.cumulative_point,
                                                                self.cfg)
        if kind == CUMULATIVE:
            pick = policy.pick_cumulative_inputs(
                rowsets, st.cumulative_point, self.cfg, now,
                st.last_success[CUMULATIVE], st.last_success[BASE])
            if pick.init_success_times:
                for k in (CUMULATIVE, BASE):
                    if not st.last_success[k]:
                        st.last_success[k] = now
            if pick.new_point is not None and pick.new_point != st.cumulative_point:
                st.cumulative_point = pick.new_point
                self._scores.pop(tablet.tablet_id, None)
            if not pick.inputs:
                quiet = self._quiet_inputs(rowsets, st.cumulative_point, now)
                if quiet:
                    return Task(tablet, kind, quiet, sum(r.compaction_score for r in quiet),
                                manual=manual)
                st.last_result[kind] = pick.reason or "no suitable versions"
                return None
            return Task(tablet, kind, tuple(pick.inputs), pick.score,
                        pick.last_delete_version, manual)
        if kind == BASE:
            table = self.engine.catalog.table_by_id(tablet.table_id)
            base = policy.pick_base_inputs(rowsets, st.cumulative_point, self.cfg, now,
                                           table.create_time if table is not None else 0.0)
            if not base.inputs:
                st.last_result[kind] = base.reason or "no suitable versions"
                return None
            return Task(tablet, kind, tuple(base.inputs), base.score, manual=manual)
        inputs = policy.pick_full_inputs(rowsets)
        if not inputs:
            st.last_result[kind] = "no suitable versions: the tablet is already one rowset"
            return None
        return Task(tablet, kind, tuple(inputs), sum(r.compaction_score for r in inputs),
                    manual=manual)

    def _quiet_inputs(self, rowsets: list[RowsetMeta], point: int, now: float
                      ) -> tuple[RowsetMeta, ...]:
        """ShaleDB's own rule for a tablet no load touched for
        `cumulative_compaction_quiet_seconds`: merge its leftover small deltas above the
        cumulative point (fewer than cumulative_compaction_min_deltas, or ones the level rule
        keeps apart) into one, so a table that stopped changing ends as few rowsets (Doris
        leaves them forever, apache/doris#2668). Bounded by the promotion minimum size so a
        trickle-fed big tablet is not rewritten over and over. The inputs are the first run of
        at least two data rowsets, or one overlapping rowset (a delete version ends a run, as
        in the size_based policy)."""
        quiet = self.cfg.cumulative_compaction_quiet_seconds
        if quiet <= 0 or not rowsets or now - max(r.create_time for r in rowsets) < quiet:
            return ()
        run: list[RowsetMeta] = []
        for r in policy.cumulative_candidates(rowsets, point):
            if r.delete_predicates:
                if len(run) >= 2:
                    break
                run = []
            else:
                run.append(r)
        # One OVERLAPPING rowset (a large load flushed early: several sorted runs) is worth a
        # merge on its own: Doris scores it by its segment count, and every query merges its
        # runs until compaction does it once.
        worth = len(run) >= 2 or (len(run) == 1 and policy.is_overlapping(run[0]))
        if not worth or sum(r.data_size for r in run) > self.cfg.promotion_min_size:
            return ()
        return tuple(run)

    # ---- execution --------------------------------------------------------------------------
    def _start(self, task: Task) -> Future[bool] | None:
        tid = task.tablet.tablet_id
        with self._cond:
            if tid in self._running or self._stopped:
                return None
            self._running[tid] = task.kind
            be = task.tablet.backend_id
            self._running_on[be] = self._running_on.get(be, 0) + 1
        try:
            return self._pools[task.kind].submit(self._run, task)
        except RuntimeError:  # pool shut down
            self._finish(task)
            return None

    def _finish(self, task: Task) -> None:
        with self._cond:
            self._running.pop(task.tablet.tablet_id, None)
            be = task.tablet.backend_id
            self._running_on[be] = max(0, self._running_on.get(be, 0) - 1)
            self._cond.notify_all()
        self._wake.set()

    @contextmanager
    def _permits(self, n: int) -> Iterator[None]:
        total = self.cfg.total_permits_for_compaction_score
        with self._cond:
            while not self._stopped and not (
                    self._permits_used + n <= total or (n > total and self._permits_used == 0)):
                self._cond.wait()
            self._permits_used += n
        try:
            yield
        finally:
            with self._cond:
                self._permits_used -= n
                self._cond.notify_all()

    def _throttle(self) -> Throttle:
        return Throttle(self.engine, self.cfg.compaction_busy_cpu_share)

    def _run(self, task: Task) -> bool:
        tid = task.tablet.tablet_id
        st = self.state(tid)
        try:
            with self._permits(task.score):
                if self._stopped:
                    return False
                merged = merge_rowsets(self.engine, task.tablet, task.inputs, self._throttle())
                if merged is None:
                    st.last_result[task.kind] = "the tablet's table or index was dropped"
                    return False
                if not swap(self.engine, task.tablet, task.inputs, merged.output):
                    st.last_result[task.kind] = "the input rowsets changed; nothing swapped"
                    return False
            self._record_success(task, st, merged.output, merged.input_rows,
                                 merged.input_bytes, merged.seconds)
            return True
        except Exception as e:  # a failed compaction changes nothing; the loads go on
            logger.exception("%s compaction of tablet %d failed", task.kind, tid)
            now = time.time()
            st.last_failure[task.kind] = now
            st.last_failure_msg = f"{type(e).__name__}: {e}"
            st.last_result[task.kind] = f"failed: {st.last_failure_msg}"
            self.stats.failures[task.kind] += 1
            return False
        finally:
            self._finish(task)

    def _record_success(self, task: Task, st: TabletCompactionState, output: RowsetMeta,
                        rows: int, size: int, seconds: float) -> None:
        kind = task.kind
        real = [r for r in task.inputs if r.rowset_id]
        if kind == CUMULATIVE:
            base = min(self.engine.catalog.rowsets(task.tablet.tablet_id),
                       key=lambda r: r.start_version, default=None)
            promotion = policy.promotion_size(base, self.cfg) if base is not None and \
                base.start_version == 0 else self.cfg.promotion_min_size
            st.cumulative_point = policy.update_cumulative_point(
                st.cumulative_point, output, task.last_delete_version, promotion)
        elif kind == FULL:
            st.cumulative_point = output.end_version + 1
        st.last_success[kind] = time.time()
        st.last_result[kind] = (f"merged {len(real)} rowsets [{output.start_version}-"
                                f"{output.end_version}] ({rows} rows) in {seconds:.3f}s")
        with self._cond:
            self._scores.pop(task.tablet.tablet_id, None)
            self.stats.tasks[kind] += 1
            self.stats.rowsets_merged[kind] += len(real)
            self.stats.rows_merged[kind] += rows
            self.stats.bytes_merged[kind] += size
            self.stats.seconds[kind] += seconds

    # ---- triggers ---------------------------------------------------------------------------
    def _tablet(self, tablet_id: int) -> TabletMeta | None:
        return self.engine.catalog.tablet_by_id(tablet_id)

    def trigger(self, tablet_id: int, kind: str) -> TriggerResult:
        """Start a `kind` compaction of the tablet in the background (HTTP run, ADMIN
        COMPACT): whether it started, the reason if not (the HTTP API maps reasons to Doris
        status codes) and the running task's future."""
        tablet = self._tablet(tablet_id)
        if tablet is None:
            return TriggerResult(False, f"tablet not found. tablet_id={tablet_id}", NOT_FOUND)
        with self._cond:
            if tablet_id in self._running:
                return TriggerResult(False, "the tablet is already running a compaction",
                                     RUNNING)
            if tablet_id in self._excluded:
                return TriggerResult(False, "the tablet is being moved to another backend",
                                     BUSY)
        if tablet.table_id in self._busy_tables():
            return TriggerResult(False, "the table has a running ALTER job", BUSY)
        task = self.prepare(tablet, kind, manual=True)
        if task is None:
            msg = self.state(tablet_id).last_result.get(kind, "no suitable versions")
            return TriggerResult(False, msg, NO_SUITABLE)
        future = self._start(task)
        if future is None:
            return TriggerResult(False, "the tablet is already running a compaction", RUNNING)
        return TriggerResult(True, "compaction task is successfully triggered.", STARTED,
                             future)

    def compact(self, tablet_id: int, kind: str) -> bool:
        """Run one `kind` compaction of the tablet now and wait for it (True if it swapped)."""
        tablet = self._tablet(tablet_id)
        if tablet is None:
            return False
        self.wait_idle([tablet_id])
        task = self.prepare(tablet, kind, manual=True)
        if task is None:
            return False
        future = self._start(task)
        return bool(future.result()) if future is not None else False

    def wait_idle(self, tablet_ids: Iterable[int], timeout: float | None = None) -> bool:
        """Wait until none of the tablets is compacting."""
        ids = set(tablet_ids)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while ids & self._running.keys():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def is_running(self, tablet_id: int) -> str | None:
        with self._cond:
            return self._running.get(tablet_id)

    def running(self) -> dict[int, str]:
        with self._cond:
            return dict(self._running)

    @contextmanager
    def exclusive(self, tablet_ids: Iterable[int]) -> Iterator[None]:
        """Keep compaction off these tablets (a colocate move copies their files): waits for
        running compactions of them, and no new one starts until the block ends."""
        ids = set(tablet_ids)
        with self._cond:
            for tid in ids:
                self._excluded[tid] = self._excluded.get(tid, 0) + 1
            while ids & self._running.keys():
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                for tid in ids:
                    self._excluded[tid] -= 1
                    if not self._excluded[tid]:
                        del self._excluded[tid]

    # ---- back-pressure ----------------------------------------------------------------------
    def version_count(self, tablet_id: int) -> int:
        return policy.version_count(self.engine.catalog.rowsets(tablet_id))

    def relieve(self, tablet_ids: Iterable[int], below: int, timeout: float) -> None:
        """Back-pressure: make these tablets urgent and wait (at most `timeout` seconds) until
        each holds at most `below` versions."""
        # Tablets whose compaction is switched off (globally or by the table) are not waited
        # for: their loads run into max_tablet_version_num, as in Doris.
        ids = {tid for tid in tablet_ids if self.version_count(tid) > below
               and self._may_compact(tid)}
        if not ids:
            return
        self.stats.back_pressure_waits += 1
        deadline = time.monotonic() + timeout
        with self._cond:
            self._urgent |= ids
        self.start()  # back-pressure needs the producer even where nobody started it
        self._wake.set()
        try:
            self.wait_versions(ids, below, deadline - time.monotonic())
        finally:
            with self._cond:
                self._urgent -= ids

    def wait_versions(self, tablet_ids: Iterable[int], below: int, timeout: float) -> bool:
        """Wait until each tablet holds at most `below` versions (woken by every rowset
        change); False when `timeout` seconds passed first."""
        ids = set(tablet_ids)
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(self.version_count(tid) > below for tid in ids):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def admit_load(self, tablet_ids: Iterable[int], wait: bool = True) -> None:
        """Called by a load (or DELETE) before it adds a version to these tablets: above the
        back-pressure threshold it waits for their compaction; past `max_tablet_version_num` it
        fails with Doris' E-235."""
        cfg = self.cfg
        ids = list(tablet_ids)
        threshold = cfg.max_tablet_version_num * cfg.load_back_pressure_version_threshold // 100
        if wait and any(self.version_count(t) > threshold for t in ids):
            self.relieve(ids, threshold, BACK_PRESSURE_TIMEOUT)
        for tid in ids:
            count = self.version_count(tid)
            if count > cfg.max_tablet_version_num:
                self.stats.too_many_versions += 1
                raise TooManyVersions(count, cfg.max_tablet_version_num, tid)

    def _may_compact(self, tablet_id: int) -> bool:
        tablet = self._tablet(tablet_id)
        return (tablet is not None and not self.cfg.disable_auto_compaction
                and not self._auto_disabled(tablet.table_id))

    # ---- stale rowsets ----------------------------------------------------------------------
    def sweep_stale(self) -> int:
        removed = self.engine.stale_rowsets.sweep(self.cfg.tablet_rowset_stale_sweep_time_sec)
        removed += self.engine.retired_tablets.sweep(self.cfg.tablet_rowset_stale_sweep_time_sec)
        if removed:
            self.engine.forget_segment_files(removed)  # their cached pages and metadata
        return len(removed)

    # ---- status -----------------------------------------------------------------------------
    def status(self, tablet_id: int) -> dict[str, object] | None:
        """Doris `/api/compaction/show?tablet_id=` JSON."""
        tablet = self._tablet(tablet_id)
        if tablet is None:
            return None
        rowsets = self.engine.catalog.rowsets(tablet_id)
        st = self.state(tablet_id)
        st.cumulative_point = policy.calculate_cumulative_point(rowsets, st.cumulative_point,
                                                                self.cfg)
        shown = policy.with_initial_rowset(rowsets)
        return {
            "cumulative policy type": "SIZE_BASED",
            "cumulative point": st.cumulative_point,
            "last cumulative failure time": _fmt_ms(st.last_failure[CUMULATIVE]),
            "last base failure time": _fmt_ms(st.last_failure[BASE]),
            "last full failure time": _fmt_ms(st.last_failure[FULL]),
            "last cumulative success time": _fmt_ms(st.last_success[CUMULATIVE]),
            "last base success time": _fmt_ms(st.last_success[BASE]),
            "last full success time": _fmt_ms(st.last_success[FULL]),
            "last failure reason": st.last_failure_msg,
            "last cumulative status": st.last_result.get(CUMULATIVE, ""),
            "last base status": st.last_result.get(BASE, ""),
            "last full status": st.last_result.get(FULL, ""),
            "rowsets": [describe_rowset(r) for r in shown],
            "missing_rowsets": [],
            "stale_rowsets": [describe_stale_rowset(r)
                              for r in self.engine.stale_rowsets.for_tablet(tablet_id)],
            "stale version path": self.engine.stale_rowsets.paths_for(tablet_id),
            "stale_rowsets_num": self.engine.stale_rowsets.count_for(tablet_id),
            "version count": policy.version_count(rowsets),
            "compaction score": dict(zip((CUMULATIVE, BASE), self._score(tablet))),
            "running": self.is_running(tablet_id) or "",
        }

    def max_scores(self) -> tuple[int, int, int]:
        """(max version count, max cumulative score, max base score) over all tablets."""
        versions = cumu = base = 0
        for t in self.engine.catalog.all_tablets():
            c, b = self._score(t)
            cumu, base = max(cumu, c), max(base, b)
            rowsets = self.engine.catalog.rowsets(t.tablet_id)
            versions = max(versions, policy.version_count(rowsets))
        return versions, cumu, base


class Throttle:
    """Called after every merged batch: while queries read, sleep long enough that this
    compaction uses at most `share` of a core (Python threads have no priorities)."""

    def __init__(self, engine: StorageEngine, share: float) -> None:
        self._epochs = engine.read_epochs
        self._share = min(1.0, max(0.01, share))
        self._since = time.perf_counter()

    def __call__(self) -> None:
        now = time.perf_counter()
        worked = now - self._since
        if self._epochs.active and self._share < 1.0:
            time.sleep(min(MAX_THROTTLE_SLEEP, worked * (1 - self._share) / self._share))
        self._since = time.perf_counter()


def describe_rowset(r: RowsetMeta) -> str:
    """`[0-5] 3 DATA NONOVERLAPPING <rowset id> 1.05 MB` as Doris prints a rowset."""
    kind = "DELETE" if r.delete_predicates else "DATA"
    overlap = "OVERLAPPING" if r.segments_overlap else "NONOVERLAPPING"
    rid = r.rowset_id or "0" * 32
    return (f"[{r.start_version}-{r.end_version}] {r.num_segments} {kind} {overlap} {rid} "
            f"{_fmt_size(r.data_size)}")


def _fmt_size(n: int) -> str:
    """Doris PrettyPrinter::print(bytes, TUnit::BYTES): two decimals and a unit, `0` for 0."""
    if n <= 0:
        return "0"
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n:.2f} B"


def describe_stale_rowset(r: RowsetMeta) -> str:
    """`[2-2] 1 <rowset id> 1.05 KB`: Doris prints stale rowsets without kind and overlap."""
    return f"[{r.start_version}-{r.end_version}] {r.num_segments} {r.rowset_id} " \
        f"{_fmt_size(r.data_size)}"


def _fmt_ms(ts: float) -> str:
    if not ts:
        return "1970-01-01 08:00:00.000"  # Doris prints the epoch (in its time zone) for "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) + f".{int(ts * 1000) % 1000:03d}"
