"""Fault and debug points for crash and concurrency tests: stop a step so a test can act then.

Fault points: a test starts the server with `SHALEDB_FAULT_POINT=<name>`; when execution
reaches `fault_point(<name>)` the server logs `FAULT POINT <name> reached` on stderr and blocks
that worker thread forever, so the test can kill -9 the process at exactly that moment.
Debug points (Doris' FE debug points, `POST /api/debug_point/add/<name>`, `.../remove/<name>`,
`.../clear` on the HTTP port, enabled by `SHALEDB_ENABLE_DEBUG_POINTS=1`): while `<name>` is
added, a thread reaching `fault_point(<name>)` logs `DEBUG POINT <name> reached` and waits
until the point is removed, then continues (with `?execute=n` only the first n threads stop);
so a test can hold a load open (e.g. with its files written, not yet published) and release it.
Without either a point costs a dictionary lookup and an environment lookup.
Points: `load_after_first_rowset` (some segment files written, not all), `load_before_publish`
(all files fsynced, catalog not updated), `rollup_job_running` (storage/rollup_job.py),
`index_job_before_swap` / `index_job_running` (storage/index_job.py),
`colocate_move_before_commit` / `colocate_move_before_cleanup` (storage/tablet_move.py),
`dynamic_partition_between_adds` (server/dynamic_partitions.py: after each partition created).
"""

from __future__ import annotations

import logging
import os
import threading

logger = logging.getLogger(__name__)

ENV = "SHALEDB_FAULT_POINT"
# Debug points can stop any load, so the HTTP API refuses them unless the server was started
# with this set to 1 (Doris gates them behind the FE config `enable_debug_points`).
DEBUG_POINTS_ENV = "SHALEDB_ENABLE_DEBUG_POINTS"


def debug_points_enabled() -> bool:
    return os.environ.get(DEBUG_POINTS_ENV) == "1"

class _DebugPoint:
    def __init__(self, execute: int | None) -> None:
        self.remaining = execute  # threads it still stops (None: every one)
        self.released = threading.Event()  # set when the point is removed


_debug_points: dict[str, _DebugPoint] = {}
_lock = threading.Lock()


def add_debug_point(name: str, execute: int | None = None) -> None:
    """Stop threads at `name` until it is removed; with `execute` only the first that many
    (Doris' `?execute=n`), later ones pass."""
    with _lock:
        _debug_points[name] = _DebugPoint(execute)


def remove_debug_point(name: str) -> bool:
    """Remove a debug point and release the threads waiting at it; False if it was not added."""
    with _lock:
        point = _debug_points.pop(name, None)
    if point is None:
        return False
    point.released.set()
    return True


def clear_debug_points() -> None:
    with _lock:
        points = list(_debug_points.values())
        _debug_points.clear()
    for p in points:
        p.released.set()


def fault_point(name: str) -> None:
    point = _debug_points.get(name)
    if point is not None:
        with _lock:
            stop = point.remaining is None or point.remaining > 0
            if point.remaining:
                point.remaining -= 1
        if stop:
            logger.error("DEBUG POINT %s reached", name)
            point.released.wait()
    if os.environ.get(ENV) != name:
        return
    logger.error("FAULT POINT %s reached", name)
    threading.Event().wait()  # never set: hold this step until the process is killed
