"""Starting the server under test for a benchmark: tests/support/server.py's ServerProcess on a
fresh data dir, with an optional config override (the quiet-tablet compaction delay, so a
smoke run can settle in seconds)."""

from __future__ import annotations

from pathlib import Path

from support.server import ServerProcess


def start(work: Path, backends: int, quiet_seconds: int | None = None) -> ServerProcess:
    extra: list[str] = []
    if quiet_seconds is not None:
        conf = work / "shaledb.toml"
        conf.write_text(f"[compaction]\ncumulative_compaction_quiet_seconds = {quiet_seconds}\n")
        extra = ["--conf", str(conf)]
    return ServerProcess(work / "data", backends=backends, extra_args=extra).start()


def settle_quiet(quiet_seconds: int | None) -> float:
    """How long version counts must stay unchanged to call compaction settled: just past the
    server's quiet-tablet delay (30 s unless overridden), after which leftovers are merged."""
    return (30 if quiet_seconds is None else quiet_seconds) + 2.0
