"""Concurrency: the 13 SSB queries as a mix, run by 1 client and then by `--clients` clients
(8 by default) for `--seconds` each (60 by default), over pymysql against one server loaded by
Stream Load (compaction settled). Reports throughput (queries/s) of both and their ratio, p50 /
p99 latency, and per query the completions and the maximum latency (no query may starve: each
must complete at least once in the concurrent phase, else the run fails; a phase whose time is up
before the mix has gone round once runs on, up to ten times its length, until it has)."""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import datasets, loading, report, server
from harness.latency import p50, percentile
from harness.machine import MachineLoad


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--chunk-rows", type=int, default=500_000)
    server.add_arguments(ap)


@dataclass
class Phase:
    clients: int
    elapsed: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=dict)  # query -> seconds

    @property
    def done(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    @property
    def qps(self) -> float:
        return self.done / self.elapsed if self.elapsed else 0.0

    def all(self) -> list[float]:
        return [x for v in self.latencies.values() for x in v]


class Starved(AssertionError):
    """A query of the mix never completed while the clients ran."""


def run_phase(srv, db: str, queries: dict[str, str], clients: int, seconds: float) -> Phase:
    phase = Phase(clients, latencies={q: [] for q in queries})
    ids = list(queries)
    lock = threading.Lock()
    conns = [srv.connect(db, read_timeout=3600) for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    deadline = [0.0]
    # A short run may end before the mix has gone round once: clients then go on (up to the
    # hard stop) until every query has completed at least once, so "starved" means a query
    # that could not finish while the others kept finishing, not one that was never reached.
    hard_stop = [0.0]
    errors: list[BaseException] = []

    def keep_going() -> bool:
        now = time.perf_counter()
        if now < deadline[0]:
            return True
        with lock:
            return now < hard_stop[0] and not all(phase.latencies.values())

    def client(i: int) -> None:
        cur = conns[i].cursor()
        k = i * len(ids) // clients  # each client starts elsewhere in the mix
        start.wait()
        try:
            while keep_going():
                q = ids[k % len(ids)]
                t0 = time.perf_counter()
                cur.execute(queries[q])
                cur.fetchall()
                with lock:
                    phase.latencies[q].append(time.perf_counter() - t0)
                k += 1
        except BaseException as e:  # noqa: BLE001 - re-raised by the caller
            errors.append(e)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    deadline[0] = t0 + seconds
    hard_stop[0] = t0 + max(10 * seconds, 60.0)
    start.wait()
    for t in threads:
        t.join()
    phase.elapsed = time.perf_counter() - t0
    for c in conns:
        c.close()
    if errors:
        raise errors[0]
    return phase


def run(args: argparse.Namespace, results: Path, echo=print) -> None:
    machine = MachineLoad()
    data = datasets.ssb(args.sf)
    with tempfile.TemporaryDirectory(prefix="bench-conc-") as tmp:
        srv = server.start(Path(tmp), args)
        db = server.db_name("conc")
        try:
            with srv.connect() as c, c.cursor() as cur:
                cur.execute(f"CREATE DATABASE {db}")
            with srv.connect(db) as c:
                with c.cursor() as cur:
                    for name in data.tables:
                        cur.execute(data.ddl[name])
                for name, table in data.tables.items():
                    loading.stream_load(srv.http_port, db, name, table, args.chunk_rows)
                settled = loading.settle(c, srv.http_port, list(data.tables),
                                         server.settle_quiet(args.quiet_seconds))
            echo(f"loaded SF {args.sf:g}, compaction settled after {settled.seconds:.1f} s")
            # warm-up: every query once (numba compilation, caches)
            with srv.connect(db) as c, c.cursor() as cur:
                for sql in data.queries.values():
                    cur.execute(sql)
                    cur.fetchall()
            one = run_phase(srv, db, data.queries, 1, args.seconds)
            echo(f"1 client: {one.done} queries in {one.elapsed:.1f} s, {one.qps:.2f} q/s")
            many = run_phase(srv, db, data.queries, args.clients, args.seconds)
            echo(f"{args.clients} clients: {many.done} queries in {many.elapsed:.1f} s, "
                 f"{many.qps:.2f} q/s")
        finally:
            server.drop(srv, db)
            srv.stop()
    machine.finish()
    starved = [q for q, v in many.latencies.items() if not v]
    section, run_ = _section(args, one, many, machine, starved)
    report.append(results, section, run_)
    echo(section)
    if starved:
        raise Starved(f"queries that never completed with {args.clients} clients: {starved}")


def _section(args, one: Phase, many: Phase, machine: MachineLoad,
             starved: list[str]) -> tuple[str, report.Run]:
    ms = 1000.0
    lines = [
        f"## concurrency — {machine.stamp()} (`bench/run.py concurrency`)", "",
        (f"SSB SF {args.sf:g} (Stream Load, compaction settled); the 13 queries as a mix, each "
        f"client starting at a different query; 1 client, then {args.clients} clients, "
        f"{args.seconds:g} s each, pymysql ({args.backends} backends)."),
        machine.note(), "",
        "| clients | queries | seconds | queries/s | p50 (ms) | p99 (ms) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for ph in (one, many):
        lines.append(f"| {ph.clients} | {ph.done} | {ph.elapsed:.1f} | {ph.qps:.2f} | "
                     f"{p50(ph.all()) * ms:.1f} | {percentile(ph.all(), 99) * ms:.1f} |")
    ratio = many.qps / one.qps if one.qps else float("nan")
    lines += ["", f"Throughput {args.clients} clients / 1 client: **{ratio:.2f}x** (target >= 1). "
              + ("Starved queries: **" + ", ".join(starved) + "**." if starved
                 else "No query starved (each completed at least once)."), "",
              (f"| query | 1 client: n | p50 (ms) | max (ms) | {args.clients} clients: n | "
              "p50 (ms) | max (ms) |"), "|---|---:|---:|---:|---:|---:|---:|"]
    for q in many.latencies:
        a, b = one.latencies[q], many.latencies[q]
        worst_a = max(a, default=float("nan"))
        lines.append(f"| Q{q} | {len(a)} | {p50(a) * ms:.1f} | {worst_a * ms:.1f}"
                     f" | {len(b)} | {p50(b) * ms:.1f} | {max(b, default=float('nan')) * ms:.1f} |")
    settings = {"sf": args.sf, "clients": args.clients, "seconds": args.seconds,
                "backends": args.backends}
    metrics = {"qps_1": (one.qps, "higher"), f"qps_{args.clients}": (many.qps, "higher"),
               "p99_ms": (percentile(many.all(), 99) * ms, "lower"),
               "p50_ms": (p50(many.all()) * ms, "lower")}
    return "\n".join(lines) + "\n", report.Run("concurrency", settings, metrics, machine.stamp())
