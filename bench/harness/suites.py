"""The shared runner of the query suites (ssb, ssb-flat, tpch): load the data set as users load
it into a real server, build the file-backed DuckDB copy, run the queries alternating with
DuckDB right after the load and again once background compaction has settled, and append the
dated table to RESULTS.md."""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness import compare, duck, loading, report, server
from harness.datasets import Dataset
from harness.machine import MachineLoad


@dataclass
class Variant:
    """One database under test (e.g. `base`, or `rollups` for SSB-flat)."""

    label: str
    dataset: Dataset
    loads: list[loading.LoadStats] | None = None
    after_load: compare.Pass | None = None
    settled: compare.Pass | None = None
    settle: loading.Settled | None = None
    versions_after_load: int = 0  # over all tablets, the moment the last load returned

    @property
    def db(self) -> str:
        return server.db_name(self.label.replace("-", "_"))

    @property
    def load_seconds(self) -> float:
        return sum(s.seconds for s in self.loads or [])

    @property
    def load_rows(self) -> int:
        return sum(s.rows for s in self.loads or [])


def add_arguments(ap: argparse.ArgumentParser, sf: float) -> None:
    ap.add_argument("--sf", type=float, default=sf)
    ap.add_argument("--runs", type=int, default=5, help="timed runs per query (median)")
    ap.add_argument("--queries", default="", help="comma-separated query ids (default all)")
    ap.add_argument("--load", choices=("stream", "insert"), default="stream")
    ap.add_argument("--chunk-rows", type=int, default=500_000,
                    help="rows per Stream Load (one label each)")
    ap.add_argument("--insert-rows", type=int, default=5_000, help="rows per INSERT statement")
    server.add_arguments(ap)
    ap.add_argument("--no-settle", action="store_true",
                    help="skip the pass after background compaction settled")


def _wait_alter_jobs(cur, timeout: float = 600.0) -> None:
    """Until every materialized view / rollup job of the current database has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cur.execute("SHOW ALTER TABLE MATERIALIZED VIEW")
        states = [r[8] for r in cur.fetchall()]
        if all(s in ("FINISHED", "CANCELLED") for s in states):
            assert "CANCELLED" not in states, "a materialized view build was cancelled"
            return
        time.sleep(0.1)
    raise TimeoutError("materialized view builds did not finish")


def _load(v: Variant, srv, args, echo) -> None:
    with srv.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {v.db}")
    conn = srv.connect(v.db, read_timeout=3600)
    with conn.cursor() as cur:
        for name in v.dataset.tables:
            cur.execute(v.dataset.ddl[name])
            for stmt in v.dataset.setup.get(name, ()):  # e.g. CREATE MATERIALIZED VIEW
                cur.execute(stmt)
                _wait_alter_jobs(cur)
    v.loads = []
    for name, table in v.dataset.tables.items():
        if args.load == "stream":
            st = loading.stream_load(srv.http_port, v.db, name, table, args.chunk_rows)
        else:
            st = loading.insert(conn, name, table, args.insert_rows)
        echo(f"  [{v.label}] loaded {name}: {st.rows:,} rows in {st.seconds:.1f} s "
             f"({st.rows_per_s:,.0f} rows/s, {st.loads} loads)")
        v.loads.append(st)
    v.versions_after_load = sum(loading.version_counts(conn, list(v.dataset.tables)))
    conn.close()


def run(args: argparse.Namespace, variants: list[Variant], results: Path,
        settings_extra: dict | None = None, echo=print) -> list[str]:
    """Run the suite; returns this run's regressions (also written to `results`)."""
    machine = MachineLoad()
    base = variants[0].dataset
    wanted = [q for q in args.queries.split(",") if q] or list(base.queries)
    with tempfile.TemporaryDirectory(prefix=f"bench-{base.name}-") as tmp:
        work = Path(tmp)
        dcon, duck_s = duck.build(work / f"{base.name}.duckdb", base.tables)
        echo(f"DuckDB file loaded in {duck_s:.1f} s")
        srv = server.start(work, args)
        try:
            for v in variants:
                _load(v, srv, args, echo)
                queries = {q: v.dataset.queries[q] for q in wanted}
                with srv.connect(v.db, read_timeout=3600) as conn:
                    v.after_load = compare.run_pass(
                        f"{v.label} after load", conn.cursor(), dcon, queries,
                        v.dataset.duck_sql, v.dataset.ordered, args.runs, echo)
            if not args.no_settle:
                for v in variants:
                    with srv.connect(v.db) as conn:
                        v.settle = loading.settle(conn, srv.http_port, list(v.dataset.tables),
                                                  server.settle_quiet(args.quiet_seconds))
                    echo(f"  [{v.label}] compaction settled after {v.settle.seconds:.1f} s: "
                         f"{v.versions_after_load} -> {v.settle.versions_after} versions")
                for v in variants:
                    queries = {q: v.dataset.queries[q] for q in wanted}
                    with srv.connect(v.db, read_timeout=3600) as conn:
                        v.settled = compare.run_pass(
                            f"{v.label} settled", conn.cursor(), dcon, queries,
                            v.dataset.duck_sql, v.dataset.ordered, args.runs, echo)
        finally:
            for v in variants:
                if v.loads is not None:
                    server.drop(srv, v.db)
            srv.stop()
            dcon.close()
    machine.finish()
    settings = {"sf": args.sf, "load": args.load, "runs": args.runs,
                "queries": ",".join(wanted), "backends": args.backends, **(settings_extra or {})}
    section, run_ = _section(base.name, args, variants, duck_s, machine, settings)
    regs = report.append(results, section, run_)
    echo(section)
    if regs:
        echo("REGRESSIONS vs the previous run: " + "; ".join(regs))
    return regs


def _final(v: Variant) -> compare.Pass:
    assert v.after_load is not None
    return v.settled or v.after_load


def _section(name: str, args, variants: list[Variant], duck_s: float,
             machine: MachineLoad, settings: dict) -> tuple[str, report.Run]:
    load_how = (f"Stream Load over HTTP, {args.chunk_rows:,}-row CSV chunks (one label each)"
                if args.load == "stream" else
                f"multi-row INSERT over pymysql, {args.insert_rows:,} rows per statement")
    lines = [f"## {name} — {machine.stamp()} (`bench/run.py {name}`)", ""]
    lines += variants[0].dataset.notes
    lines += [
        "",
        (f"SF {args.sf:g}; data loaded by {load_how}; ShaleDB over the MySQL protocol (pymysql, "
        f"{args.backends} backends); DuckDB on a database file (loaded in {duck_s:.1f} s), "
        f"alternating query by query, median of {args.runs} after a warm-up, identical rows "
        "checked for every query."),
        machine.note(),
        "",
        ("| database | rows | load s | rows/s | loads | versions after load -> settled | "
        "settle s |"),
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for v in variants:
        st = v.settle
        lines.append(
            f"| {v.label} | {v.load_rows:,} | {v.load_seconds:.1f} | "
            f"{v.load_rows / max(v.load_seconds, 1e-9):,.0f} | "
            f"{sum(s.loads for s in v.loads or [])} | "
            + (f"{v.versions_after_load} -> {st.versions_after}"
               + (" (timed out)" if st.timed_out else "") + f" | {st.seconds:.1f} |"
               if st else "- | - |"))
    head = "| Query |"
    sep = "|---|"
    for v in variants:
        head += f" {v.label} after load (ms) | {v.label} settled (ms) | DuckDB (ms) | ratio |"
        sep += "---:|---:|---:|---:|"
    lines += ["", head + " rows |", sep + "---:|"]
    first = variants[0]
    assert first.after_load is not None
    for i, t in enumerate(first.after_load.timings):
        row = f"| Q{t.query} |"
        for v in variants:
            a = v.after_load.timings[i]  # type: ignore[union-attr]
            s = v.settled.timings[i] if v.settled else None
            f = s or a
            row += (f" {a.shale_ms:.1f} | {s.shale_ms:.1f} |" if s else f" {a.shale_ms:.1f} | - |")
            row += f" {f.duck_ms:.1f} | {f.ratio:.2f}x |"
        lines.append(row + f" {t.rows} |")
    lines.append("")
    metrics: dict[str, tuple[float, str]] = {}
    for v in variants:
        p = _final(v)
        when = "settled" if v.settled else "after load"
        lines.append(
            f"- **{v.label}** ({when}): geometric mean **{p.geomean_ratio:.2f}x** DuckDB, total "
            f"{p.total_shale_ms:.1f} ms vs {p.total_duck_ms:.1f} ms "
            f"({p.total_shale_ms / p.total_duck_ms:.2f}x), worst "
            f"Q{max(p.timings, key=lambda t: t.ratio).query} "
            f"{max(t.ratio for t in p.timings):.2f}x; right after the load: geometric mean "
            f"{v.after_load.geomean_ratio:.2f}x.")  # type: ignore[union-attr]
        metrics[f"{v.label}.geomean_ratio"] = (p.geomean_ratio, "lower")
        metrics[f"{v.label}.total_ms"] = (p.total_shale_ms, "lower")
        metrics[f"{v.label}.load_rows_per_s"] = (v.load_rows / max(v.load_seconds, 1e-9),
                                                 "higher")
        for t in p.timings:
            metrics[f"{v.label}.Q{t.query}_ms"] = (t.shale_ms, "lower")
    return "\n".join(lines) + "\n", report.Run(name, settings, metrics, machine.stamp())

