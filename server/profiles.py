"""Query profiles: storage counters of recent queries, shown by SHOW QUERY PROFILE.

With `SET enable_profile = true` (Doris' session variable) each SELECT records its scan
counters when its result has been sent: segments and pages read and skipped, and rows removed
by each index, under Doris' counter names (`RowsKeyRangeFiltered`, `RowsStatsFiltered`,
`RowsVectorPredFiltered`, ...). `SHOW QUERY PROFILE "/"` lists the recent queries;
`SHOW QUERY PROFILE "/<profile id>"` shows one query's counters as (Counter, Value) rows:
first one row per node of its distributed plan (rows, time; rows and bytes per exchange),
then the storage counters.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from executor.operator import Operator
from planner.distribute import DistributedPlan
from sql.errors import DorisError
from storage.batch import Batch
from storage.scan_stats import ScanStats

KEEP = 100

LIST_COLUMNS = ["Profile ID", "Task Type", "Start Time", "End Time", "Total", "Task State",
                "User", "Default Catalog", "Default Db", "Sql Statement"]


@dataclass(frozen=True, slots=True)
class QueryProfile:
    profile_id: str
    start: float
    end: float
    state: str
    user: str
    db: str
    sql: str
    stats: ScanStats
    operators: tuple[tuple[str, str], ...] = ()  # per plan node: label, counters

    def counters(self) -> list[tuple[str, str]]:
        s = self.stats
        return list(self.operators) + [
            ("NumSegmentTotal", str(s.segments_read + s.segments_skipped)),
            ("NumSegmentFiltered", str(s.segments_skipped)),
            ("TotalPagesNum", str(s.pages_read + s.pages_skipped_zone_map)),
            ("CachedPagesNum", str(s.pages_cached)),
            ("PagesFilteredByZoneMap", str(s.pages_skipped_zone_map)),
            ("RowsTotal", str(s.rows_total)),
            ("RowsKeyRangeFiltered", str(s.rows_skipped_short_key)),
            ("RowsStatsFiltered", str(s.rows_skipped_zone_map)),
            ("RowsVectorPredFiltered", str(s.rows_filtered_predicate)),
            ("RowsReturned", str(s.rows_returned)),
            ("CompressedBytesRead", str(s.bytes_read)),
        ]


def operator_counters(dplan: DistributedPlan, root: Operator | None) -> list[tuple[str, str]]:
    """Counters of every node of the distributed plan, fragment by fragment, from the
    operator that executed it: rows and inclusive time; for an exchange, the rows and bytes
    it moves (one copy: a broadcast sends them to each probe instance). Execution is one
    process, so an exchange is the boundary where Doris would send these rows; a colocated
    join has none below it, a shuffle join one per side. Both phases of a two-phase aggregate
    run in one operator: the exchange between them reports the aggregate's output."""
    out: list[tuple[str, str]] = []
    if root is None:
        return out
    for frag in dplan.fragments:
        stack = [frag.root]
        while stack:
            node = stack.pop()
            stack.extend(reversed(node.children))
            op: Operator | None = root
            for i in node.path:
                op = op.children[i] if op is not None and i < len(op.children) else None
            if op is None or node.name == "VAGGREGATE (update serialize)":
                continue
            st = op.stats
            label = f"Fragment {frag.id} / {node.id}:{node.name}"
            if node.name == "VEXCHANGE":
                out.append((label, f"RowsSent: {st.rows}, BytesSent: {st.bytes}"))
            else:
                # joins lead with their `join op` (the mode the plan chose), as EXPLAIN prints it
                op_line = next((d[len("join op: "):] for d in node.details
                                if d.startswith("join op: ")), None)
                lead = f"{op_line}, " if op_line else ""
                instances = getattr(op, "instances", 0)  # colocate joins: one per bucket seq
                tail = f", Instances: {instances}" if instances else ""
                out.append((label, f"{lead}RowsReturned: {st.rows}, "
                                   f"InclusiveTime: {st.seconds * 1000:.3f}ms{tail}"))
    return out


def _ts(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


class QueryProfiles:
    """The last KEEP profiles of the server (shared by all sessions)."""

    def __init__(self) -> None:
        self._profiles: deque[QueryProfile] = deque(maxlen=KEEP)
        self._lock = threading.Lock()

    def track(self, batches: Iterator[Batch], stats: ScanStats, sql: str, user: str,
              db: str | None,
              operators: Callable[[], list[tuple[str, str]]] | None = None) -> Iterator[Batch]:
        """Pass `batches` through; record the profile when the query ends (or fails).
        `operators` (called at the end) gives the per-node counters."""
        start = time.time()
        state = "EOF"
        try:
            yield from batches
        except BaseException:
            state = "ERR"
            raise
        finally:
            nodes = tuple(operators()) if operators is not None else ()
            profile = QueryProfile(uuid.uuid4().hex, start, time.time(), state, user, db or "",
                                   sql, stats, nodes)
            with self._lock:
                self._profiles.append(profile)

    def show(self, path: str) -> tuple[list[str], list[tuple[object, ...]]]:
        with self._lock:
            profiles = list(self._profiles)
        key = path.strip("/")
        if not key:
            rows = [
                (p.profile_id, "QUERY", _ts(p.start), _ts(p.end), f"{int((p.end - p.start) * 1000)}ms",
                 p.state, p.user, "internal", p.db, p.sql)
                for p in reversed(profiles)
            ]
            return LIST_COLUMNS, rows
        for p in profiles:
            if p.profile_id == key:
                return ["Counter", "Value"], list(p.counters())
        raise DorisError(f"query id {key} not found")
