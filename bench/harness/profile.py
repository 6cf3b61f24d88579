"""Profiling the small-query path with py-spy (a sampling profiler, `py-spy record --format raw`
on the server process while one client repeats a query) and summarising the samples as text:
self time by package and by function, inclusive time by function, in percent of the samples.
The summaries, not flame graphs, are what docs/performance.md records.

    .venv/bin/python bench/run.py profile [--sf 0.1] [--seconds 20] [--raw-dir DIR]

Probes: `SELECT 1`, a point query on a short-key prefix, SSB Q1.1 and Q2.1 at `--sf`.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness import datasets, fixed_cost, loading, server

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--seconds", type=float, default=20.0, help="sampling time per probe")
    ap.add_argument("--rate", type=int, default=250, help="samples per second")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--raw-dir", type=Path, default=None, help="keep py-spy's raw stacks here")
    ap.add_argument("--all-threads", action="store_true",
                    help="sample every non-idle thread, not only the one holding the GIL (the "
                         "GIL-only view is the Python CPU work; the other shows waiting too)")
    ap.add_argument("--probes", default="select1,point,q1.1,q2.1")
    ap.add_argument("--server-pid", type=int, default=None,
                    help="the --attach'ed server's process id (py-spy samples it)")
    server.add_arguments(ap)


def _package(path: str) -> str:
    """`server`, `sql`, `planner`, `executor`, `storage` for the repo's files, else the library
    (site-packages top directory) or the stdlib module."""
    p = path.replace("\\", "/")
    if "site-packages/" in p:
        return p.split("site-packages/", 1)[1].split("/", 1)[0]
    for pkg in ("server", "sql", "planner", "executor", "storage"):
        if p.startswith(pkg + "/") or f"/{pkg}/" in p and "/lib/python" not in p:
            return pkg
    return "stdlib:" + p.rsplit("/", 1)[-1].removesuffix(".py")


def _frame(text: str) -> tuple[str, str]:
    m = _FRAME.match(text.strip())
    if not m:
        return text.strip(), ""
    return m.group("func"), m.group("file")


def summarise(raw: str, top: int) -> str:
    """The text summary of py-spy's raw (collapsed) stacks."""
    self_pkg: collections.Counter[str] = collections.Counter()
    self_fn: collections.Counter[str] = collections.Counter()
    incl_fn: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_frame(f) for f in stack.split(";")]
        frames = [(fn, fl) for fn, fl in frames if fl]  # drop the thread/process pseudo-frames
        if not frames:
            continue
        total += n
        fn, fl = frames[-1]
        self_pkg[_package(fl)] += n
        self_fn[f"{fn} ({fl})"] += n
        for name in {f"{fn} ({fl})" for fn, fl in frames}:
            incl_fn[name] += n
    if not total:
        return "no samples\n"

    def pct(c: int) -> str:
        return f"{100 * c / total:5.1f}%"

    out = [f"{total} samples", "self time by package:"]
    out += [f"  {pct(c)}  {k}" for k, c in self_pkg.most_common(top)]
    out.append("self time by function:")
    out += [f"  {pct(c)}  {k}" for k, c in self_fn.most_common(top)]
    out.append("inclusive time by function (repo code):")
    repo = [(k, c) for k, c in incl_fn.most_common()
            if _package(k.rsplit("(", 1)[1].rstrip(")")) in
            ("server", "sql", "planner", "executor", "storage")]
    out += [f"  {pct(c)}  {k}" for k, c in repo[:top]]
    return "\n".join(out) + "\n"


def record(pid: int, seconds: float, rate: int, out: Path, load,
           gil_only: bool = True) -> int:
    """py-spy on `pid` for `seconds` while `load()` repeats queries in a thread; how many."""
    stop = threading.Event()
    done = [0]

    def loop() -> None:
        while not stop.is_set():
            load()
            done[0] += 1

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        subprocess.run([str(Path(sys.executable).with_name("py-spy")), "record", "--pid",
                        str(pid), "--duration", str(int(seconds)), "--rate", str(rate),
                        "--format", "raw", "--output", str(out), "--nonblocking",
                        *(["--gil"] if gil_only else [])],
                       check=True, capture_output=True)
    finally:
        stop.set()
        t.join()
    return done[0]


def run(args: argparse.Namespace, echo=print) -> None:
    if args.attach and not args.server_pid:
        raise SystemExit("--attach needs --server-pid (py-spy samples that process)")
    ssb = datasets.ssb(args.sf)
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        work = Path(tmp)
        raw_dir = args.raw_dir or work
        raw_dir.mkdir(parents=True, exist_ok=True)
        srv = server.start(work, args)
        db = server.db_name("profile")
        try:
            with srv.connect() as c, c.cursor() as cur:
                cur.execute(f"CREATE DATABASE {db}")
            conn = srv.connect(db, read_timeout=3600)
            cur = conn.cursor()
            for name in ssb.tables:
                cur.execute(ssb.ddl[name])
                loading.stream_load(srv.http_port, db, name, ssb.tables[name], 500_000)
            cur.execute(fixed_cost.POINT_DDL)
            loading.stream_load(srv.http_port, db, "points", fixed_cost.points_table(100_000),
                                500_000)
            loading.settle(conn, srv.http_port, [*ssb.tables, "points"],
                           server.settle_quiet(args.quiet_seconds))
            keys = iter(range(10**9))
            probes = {
                "select1": ("SELECT 1", lambda: "SELECT 1"),
                "point": ("point query", lambda: "SELECT k, v, n FROM points WHERE k = "
                          f"{next(keys) % 99_991}"),
                "q1.1": (f"SSB Q1.1 SF {args.sf:g}", lambda: ssb.queries["1.1"]),
                "q2.1": (f"SSB Q2.1 SF {args.sf:g}", lambda: ssb.queries["2.1"]),
            }
            for key in args.probes.split(","):
                label, make = probes[key]
                def once(make=make) -> None:
                    cur.execute(make())
                    cur.fetchall()

                for _ in range(20):
                    once()
                t0 = time.perf_counter()
                raw = raw_dir / (re.sub(r"\W+", "_", label) + ".txt")
                pid = args.server_pid or srv.proc.pid  # type: ignore[union-attr]
                n = record(pid, args.seconds, args.rate, raw, once,
                           not args.all_threads)
                took = time.perf_counter() - t0
                echo(f"### {label}: {n} queries in {took:.1f} s ({1000 * took / n:.2f} ms each)")
                echo(summarise(raw.read_text(), args.top))
            conn.close()
        finally:
            server.drop(srv, db)
            srv.stop()

