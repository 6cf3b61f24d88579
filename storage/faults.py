"""Fault points for crash tests: stop a load at a chosen step so a test can kill -9 the server.

A test starts the server with `SHALEDB_FAULT_POINT=<name>`; when execution reaches
`fault_point(<name>)` the server logs `FAULT POINT <name> reached` on stderr and blocks that
worker thread forever, so the test can kill the process at exactly that moment. Without the
variable a fault point costs one dictionary lookup. Points: `load_after_first_rowset` (some
segment files written, not all), `load_before_publish` (all files fsynced, catalog not updated),
`rollup_job_running` (storage/rollup_job.py), `colocate_move_before_commit` /
`colocate_move_before_cleanup` (storage/tablet_move.py).
"""

from __future__ import annotations

import logging
import os
import threading

logger = logging.getLogger(__name__)

ENV = "SHALEDB_FAULT_POINT"


def fault_point(name: str) -> None:
    if os.environ.get(ENV) != name:
        return
    logger.error("FAULT POINT %s reached", name)
    threading.Event().wait()  # never set: hold this step until the process is killed
