"""Query profiles: storage counters of recent queries, shown by SHOW QUERY PROFILE.

With `SET enable_profile = true` (Doris' session variable) each SELECT records its scan
counters when its result has been sent: segments and pages read and skipped, and rows removed
by each index, under Doris' counter names (`RowsKeyRangeFiltered`, `RowsStatsFiltered`,
`RowsVectorPredFiltered`, ...). `SHOW QUERY PROFILE "/"` lists the recent queries;
`SHOW QUERY PROFILE "/<profile id>"` shows one query's counters as (Counter, Value) rows.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

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
    scans: tuple[tuple[str, str], ...] = ()  # (VOlapScanNode(t), index / partitions / tablets)

    def counters(self) -> list[tuple[str, str]]:
        s = self.stats
        return list(self.scans) + [
            ("NumSegmentTotal", str(s.segments_read + s.segments_skipped)),
            ("NumSegmentFiltered", str(s.segments_skipped)),
            ("TotalPagesNum", str(s.pages_read + s.pages_skipped_zone_map)),
            ("PagesFilteredByZoneMap", str(s.pages_skipped_zone_map)),
            ("RowsTotal", str(s.rows_total)),
            ("RowsKeyRangeFiltered", str(s.rows_skipped_short_key)),
            ("RowsStatsFiltered", str(s.rows_skipped_zone_map)),
            ("RowsVectorPredFiltered", str(s.rows_filtered_predicate)),
            ("RowsReturned", str(s.rows_returned)),
            ("CompressedBytesRead", str(s.bytes_read)),
        ]


def _ts(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


class QueryProfiles:
    """The last KEEP profiles of the server (shared by all sessions)."""

    def __init__(self) -> None:
        self._profiles: deque[QueryProfile] = deque(maxlen=KEEP)
        self._lock = threading.Lock()

    def track(self, batches: Iterator[Batch], stats: ScanStats, sql: str, user: str,
              db: str | None, scans: tuple[tuple[str, str], ...] = ()) -> Iterator[Batch]:
        """Pass `batches` through; record the profile when the query ends (or fails)."""
        start = time.time()
        state = "EOF"
        try:
            yield from batches
        except BaseException:
            state = "ERR"
            raise
        finally:
            profile = QueryProfile(uuid.uuid4().hex, start, time.time(), state, user, db or "",
                                   sql, stats, scans)
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
