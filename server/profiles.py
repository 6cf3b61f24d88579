"""Query profiles: storage counters of recent queries, shown by SHOW QUERY PROFILE.

With `SET enable_profile = true` (Doris' session variable) each SELECT records its scan
counters when its result has been sent: segments and pages read and skipped, and rows removed
by each index, under Doris' counter names (`RowsKeyRangeFiltered`, `RowsStatsFiltered`,
`RowsVectorPredFiltered`, ...). `SHOW QUERY PROFILE "/"` lists the recent queries;
`SHOW QUERY PROFILE "/<profile id>"` shows one query's counters as (Counter, Value) rows:
first one row per node of its distributed plan (rows, time; rows and bytes per exchange),
then the storage counters. A scan's row adds what each index pruned for it (rows and pages
skipped by zone maps, bitmap indexes and bloom filters, and the time spent on the two indexes:
`RowsBitmapIndexFiltered`, `RowsBloomFilterFiltered`, `BitmapIndexFilterTimer`,
`BlockConditionsFilteredBloomFilterTime`); the query's totals follow under the same names.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from executor.coordinator import Coordinator
from executor.scan import Scan
from planner.fragment import DistributedPlan
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
            ("NumSegmentFilteredByZoneMap", str(s.segments_skipped_zone_map)),
            ("NumRowsetTotal", str(s.rowsets_read + s.rowsets_skipped)),
            ("NumRowsetFiltered", str(s.rowsets_skipped)),
            ("TotalPagesNum", str(s.pages_read + s.pages_skipped_zone_map
                                  + s.pages_skipped_bloom_filter + s.pages_skipped_bitmap_index)),
            ("CachedPagesNum", str(s.pages_cached)),
            ("PagesFilteredByZoneMap", str(s.pages_skipped_zone_map)),
            ("PagesFilteredByBloomFilter", str(s.pages_skipped_bloom_filter)),
            ("PagesFilteredByBitmapIndex", str(s.pages_skipped_bitmap_index)),
            ("PagesFilteredByDictionary", str(s.pages_skipped_dictionary)),
            ("RowsTotal", str(s.rows_total)),
            ("RowsKeyRangeFiltered", str(s.rows_skipped_short_key)),
            ("RowsStatsFiltered", str(s.rows_skipped_zone_map)),
            ("RowsBitmapIndexFiltered", str(s.rows_skipped_bitmap_index)),
            ("RowsBloomFilterFiltered", str(s.rows_skipped_bloom_filter)),
            ("RowsVectorPredFiltered", str(s.rows_filtered_predicate)),
            ("RowsReturned", str(s.rows_returned)),
            ("CompressedBytesRead", str(s.bytes_read)),
            ("BitmapIndexFilterTimer", format_ns(s.bitmap_index_filter_ns)),
            ("BlockConditionsFilteredBloomFilterTime", format_ns(s.bloom_filter_ns)),
        ]


def format_ns(ns: int) -> str:
    """A timer the way Doris' profile prints it: `0ns`, `812ns`, `46.540us`, `1.203ms`,
    `2s 31ms`."""
    if ns < 1000:
        return f"{ns}ns"
    if ns < 1_000_000:
        return f"{ns / 1000:.3f}us"
    if ns < 1_000_000_000:
        return f"{ns / 1_000_000:.3f}ms"
    seconds, rest = divmod(ns, 1_000_000_000)
    return f"{seconds}s {rest // 1_000_000}ms"


def scan_index_counters(stats: ScanStats) -> str:
    """One scan's index counters (Doris' SegmentIterator names, plus pages skipped per
    index), appended to its plan node row."""
    return (f"RowsTotal: {stats.rows_total}, "
            f"RowsKeyRangeFiltered: {stats.rows_skipped_short_key}, "
            f"RowsStatsFiltered: {stats.rows_skipped_zone_map}, "
            f"RowsBitmapIndexFiltered: {stats.rows_skipped_bitmap_index}, "
            f"RowsBloomFilterFiltered: {stats.rows_skipped_bloom_filter}, "
            f"PagesFilteredByZoneMap: {stats.pages_skipped_zone_map}, "
            f"PagesFilteredByBitmapIndex: {stats.pages_skipped_bitmap_index}, "
            f"PagesFilteredByBloomFilter: {stats.pages_skipped_bloom_filter}, "
            f"PagesFilteredByDictionary: {stats.pages_skipped_dictionary}, "
            f"RowsVectorPredFiltered: {stats.rows_filtered_predicate}, "
            f"BitmapIndexFilterTimer: {format_ns(stats.bitmap_index_filter_ns)}, "
            f"BlockConditionsFilteredBloomFilterTime: {format_ns(stats.bloom_filter_ns)}")


def operator_counters(dplan: DistributedPlan, run: Coordinator | None
                      ) -> list[tuple[str, str]]:
    """Counters of every fragment and plan node, from the instances that executed them.

    A fragment row gives its instance count and the backends they ran on. A node row sums
    the rows of all its instances, with the longest instance's inclusive time; an exchange row
    gives the rows and bytes it moved. A colocated join has
    no exchange below it, a shuffle join one per side; a colocate join's row adds the bucket
    seqs its instances joined (`Buckets`)."""
    out: list[tuple[str, str]] = []
    if run is None:
        return out
    for frag in dplan.fragments:
        frun = run.fragment(frag.id)
        if frun is not None:
            backends = ",".join(str(b) for b in frun.backends)
            out.append((f"Fragment {frag.id}",
                        f"Instances: {len(frun.instances)}, Backends: {backends}"))
        stack = [frag.root]
        while stack:
            node = stack.pop()
            stack.extend(reversed(node.children))
            label = f"Fragment {frag.id} / {node.id}:{node.name}"
            if node.name == "VEXCHANGE":
                link = run.link(node.id)
                if link is not None:
                    c = link.counters
                    out.append((label, f"RowsSent: {c.rows}, BytesSent: {c.bytes}"))
                continue
            ops = run.operators(frag.id, node.id)
            if not ops:
                continue
            rows = sum(op.stats.rows for op in ops)
            seconds = max(op.stats.seconds for op in ops)
            # joins lead with their `join op` (the mode the plan chose), as EXPLAIN prints it
            op_line = next((d[len("join op: "):] for d in node.details
                            if d.startswith("join op: ")), None)
            lead = f"{op_line}, " if op_line else ""
            tail = ""
            if node.colocated and frun is not None:  # its instances split whole buckets
                tail = f", Buckets: {sum(len(i.units or ()) for i in frun.instances)}"
            if isinstance(ops[0], Scan):  # what each index pruned for this scan
                scanned = ScanStats()
                for op in ops:
                    scanned.add(op.scan_stats)  # type: ignore[attr-defined]
                tail += ", " + scan_index_counters(scanned)
                kinds = sorted({k for op in ops for k in op.runtime_filter_types})  # type: ignore[attr-defined]
                if kinds:  # the runtime filters the joins above sent it, by Doris' type
                    tail += f", RuntimeFilters: {' '.join(kinds)}"
            out.append((label, (f"{lead}RowsReturned: {rows}, "
                                f"InclusiveTime: {seconds * 1000:.3f}ms{tail}")))
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

    def show(self, path: str, user: str | None = None
             ) -> tuple[list[str], list[tuple[object, ...]]]:
        """SHOW QUERY PROFILE; `user` set = only that user's profiles (a user without
        ADMIN_PRIV sees their own, as in Doris)."""
        with self._lock:
            profiles = [p for p in self._profiles if user is None or p.user == user]
        key = path.strip("/")
        if not key:
            rows: list[tuple[object, ...]] = [
                (p.profile_id, "QUERY", _ts(p.start), _ts(p.end),
                 f"{int((p.end - p.start) * 1000)}ms", p.state, p.user, "internal", p.db, p.sql)
                for p in reversed(profiles)
            ]
            return LIST_COLUMNS, rows
        for p in profiles:
            if p.profile_id == key:
                return ["Counter", "Value"], list(p.counters())
        raise DorisError(f"query id {key} not found")
