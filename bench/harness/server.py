"""The server under test for a benchmark: tests/support/server.py's ServerProcess started on a
fresh data dir (with an optional config override of the quiet-tablet compaction delay), or an
already running server (`--attach MYSQL_PORT:HTTP_PORT`, on 127.0.0.1, as root) that the
benchmark must leave as it found it (its databases are named per run and dropped at the end)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from support.server import ServerProcess

DEFAULT_QUIET_SECONDS = 30  # conf/shaledb.toml cumulative_compaction_quiet_seconds


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--backends", type=int, default=3)
    ap.add_argument("--quiet-seconds", type=int, default=None,
                    help="the server's cumulative_compaction_quiet_seconds: set on the server "
                         "this command starts, or what the --attach'ed server uses (default 30)")
    ap.add_argument("--attach", default=None, metavar="MYSQL_PORT:HTTP_PORT",
                    help="use a running server on 127.0.0.1 instead of starting one")


class AttachedServer:
    """A running server the benchmark did not start: connect() as ServerProcess does; stop()
    leaves it running."""

    def __init__(self, spec: str) -> None:
        mysql, http = (int(p) for p in spec.split(":"))
        self._proc = ServerProcess(Path("."))
        self._proc.port, self._proc.http_port = mysql, http
        self.http_port = http

    def connect(self, db: str | None = None, **kw: Any):
        return self._proc.connect(db, **kw)

    def stop(self) -> None:
        pass


def start(work: Path, args: argparse.Namespace) -> ServerProcess | AttachedServer:
    if args.attach:
        return AttachedServer(args.attach)
    return ServerProcess(work / "data", backends=args.backends,
                         extra_args=conf_args(work, args)).start()


def conf_args(work: Path, args: argparse.Namespace) -> list[str]:
    """The server's command-line additions for this run's settings (a config file overriding
    the quiet-tablet compaction delay when `--quiet-seconds` is given), written under `work`.
    Every server a run compares gets the same ones."""
    if args.quiet_seconds is None:
        return []
    work.mkdir(parents=True, exist_ok=True)
    conf = work / "shaledb.toml"
    conf.write_text("[compaction]\n"
                    f"cumulative_compaction_quiet_seconds = {args.quiet_seconds}\n")
    return ["--conf", str(conf)]


def db_name(label: str) -> str:
    """A database name of this run (several runs may share an attached server)."""
    return f"bench_{label}_{os.getpid()}"


def drop(srv: ServerProcess | AttachedServer, db: str) -> None:
    with srv.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {db} FORCE")


def settle_quiet(quiet_seconds: int | None) -> float:
    """How long version counts must stay unchanged to call compaction settled: just past the
    server's quiet-tablet delay, after which a tablet's leftover deltas are merged (the margin
    covers the compaction producer's wake-up interval, generate_compaction_tasks_interval_ms)."""
    return (DEFAULT_QUIET_SECONDS if quiet_seconds is None else quiet_seconds) + 1.0
