"""Waiting for ALTER TABLE jobs (rollup and materialized-view builds) as a user does: polling
`SHOW ALTER TABLE ROLLUP | MATERIALIZED VIEW` until the index's newest job has ended."""

from __future__ import annotations

import time
from typing import Any

ENDED = ("FINISHED", "CANCELLED")


def alter_jobs(cur: Any, kind: str = "ROLLUP") -> list[dict[str, Any]]:
    """The rows of `SHOW ALTER TABLE <kind>` in the current database, as dicts by column name."""
    cur.execute(f"SHOW ALTER TABLE {kind}")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def wait_alter_job(cur: Any, index: str, kind: str = "ROLLUP",
                   timeout: float = 120.0) -> dict[str, Any]:
    """The newest job building `index` once it is FINISHED or CANCELLED (or as it stands when
    `timeout` runs out: callers assert on its State)."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = [j for j in alter_jobs(cur, kind) if j["RollupIndexName"] == index]
        if jobs and (jobs[-1]["State"] in ENDED or time.monotonic() > deadline):
            return jobs[-1]
        if time.monotonic() > deadline:
            raise AssertionError(f"no ALTER TABLE {kind} job for {index}")
        time.sleep(0.05)
