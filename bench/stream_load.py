"""Stream Load throughput: SSB lineorder as CSV and as Parquet, loaded the way users load.

Generates SSB lineorder at `--sf` (bench/ssb.py's generator, 6M rows and about 600 MB of `|`
separated CSV at SF 1) once into `--work-dir`, as CSV and as Parquet. Starts a ShaleDB server on
a temporary data dir (tests/support/server.py) and loads into Doris' SSB lineorder DDL
(partitioned by year on lo_orderdate, bucketed by lo_orderkey):
- the CSV with one `curl -T` Stream Load (Doris' canonical path, one transaction);
- the CSV and the Parquet with `shaledb load` (64 MB chunks, one label each);
- a sample of rows with multi-row INSERT statements of 5,000 rows over pymysql;
and the same files with DuckDB's `COPY lineorder FROM ..` into a DuckDB database file.
Reports MB/s (file bytes / wall time), rows/s and the server's peak RSS during each load
(/proc, sampled every 50 ms; the server is restarted before each load, so the query cache
of the previous check does not count), and writes the table into bench/RESULTS.md (the section
between the `stream_load` markers, replaced on each run).

Run: `.venv/bin/python bench/stream_load.py [--sf 1] [--only csv,cli,parquet,insert,duckdb]
[--profile out.svg] [--results FILE]` (`--profile` records the server with py-spy during the
curl load: every thread, or only the GIL holder with PYSPY_MODE=--gil). `--rounds N --repo
DIR` times only the curl CSV load, alternating this checkout and DIR's on fresh servers (a
shared machine's noise hits both alike), with the server's CPU per row and how many cores it
kept busy. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Self

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tests", ROOT / "tests" / "tpch", ROOT / "bench"):
    sys.path.insert(0, str(_p))

import duckdb  # noqa: E402  (after the sys.path setup above)
import pyarrow.csv as pacsv  # noqa: E402  (after the sys.path setup above)
import pyarrow.parquet as pq  # noqa: E402  (after the sys.path setup above)
from support.server import ServerProcess  # noqa: E402  (after the sys.path setup above)

COLUMNS = ("lo_orderdate INT NOT NULL, lo_orderkey INT NOT NULL, lo_linenumber INT NOT NULL, "
           "lo_custkey INT NOT NULL, lo_partkey INT NOT NULL, lo_suppkey INT NOT NULL, "
           "lo_orderpriority VARCHAR(16) NOT NULL, lo_shippriority INT NOT NULL, "
           "lo_quantity INT NOT NULL, lo_extendedprice INT NOT NULL, "
           "lo_ordtotalprice INT NOT NULL, lo_discount INT NOT NULL, lo_revenue INT NOT NULL, "
           "lo_supplycost INT NOT NULL, lo_tax INT NOT NULL, lo_commitdate INT NOT NULL, "
           "lo_shipmode VARCHAR(11) NOT NULL")
# Doris' SSB kit (tools/ssb-tools/ddl/create-ssb-tables.sql): yearly range partitions, hash
# buckets on lo_orderkey (48 there for a cluster; 8 here for 2 cores).
DDL = f"""CREATE TABLE {{name}} ({COLUMNS})
DUPLICATE KEY(lo_orderdate, lo_orderkey)
PARTITION BY RANGE(lo_orderdate) (
  PARTITION p1992 VALUES [("-2147483648"), ("19930101")),
  PARTITION p1993 VALUES [("19930101"), ("19940101")),
  PARTITION p1994 VALUES [("19940101"), ("19950101")),
  PARTITION p1995 VALUES [("19950101"), ("19960101")),
  PARTITION p1996 VALUES [("19960101"), ("19970101")),
  PARTITION p1997 VALUES [("19970101"), ("19980101")),
  PARTITION p1998 VALUES [("19980101"), ("19990101")))
DISTRIBUTED BY HASH(lo_orderkey) BUCKETS 8 PROPERTIES ("replication_num" = "1")"""


def generate(work: Path, sf: float) -> tuple[Path, Path, int]:
    csv_path, pq_path = work / f"lineorder_sf{sf:g}.csv", work / f"lineorder_sf{sf:g}.parquet"
    meta = work / f"lineorder_sf{sf:g}.json"
    if not meta.exists():
        import ssb

        t0 = time.perf_counter()
        table = ssb.generate(sf)["lineorder"]
        pacsv.write_csv(table, csv_path, pacsv.WriteOptions(
            include_header=False, delimiter="|", quoting_style="none"))
        pq.write_table(table, pq_path)
        meta.write_text(json.dumps({"rows": table.num_rows}))
        print(f"generated {table.num_rows:,} rows in {time.perf_counter() - t0:.0f} s")
    return csv_path, pq_path, json.loads(meta.read_text())["rows"]


def _rss(pid: int) -> int:
    """Resident bytes of `pid` (Linux /proc; psutil is not needed for this)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of every thread of `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssPeak:
    """The peak RSS of a process while the block runs (sampled) and the CPU seconds it used
    (user + system: less sensitive than wall time to other jobs on a shared machine)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.cpu_s = 0.0
        self._stop = threading.Event()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.peak = max(self.peak, _rss(self.pid))
            except OSError:
                return

    def __enter__(self) -> Self:
        self.peak = _rss(self.pid)
        self._cpu0 = _cpu_seconds(self.pid)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.cpu_s = _cpu_seconds(self.pid) - self._cpu0


def count(srv: ServerProcess, table: str) -> int:
    with srv.connect("bench") as c, c.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {table}")
        return int(cur.fetchone()[0])


def create(srv: ServerProcess, name: str) -> None:
    with srv.connect("bench") as c, c.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {name}")
        cur.execute(DDL.format(name=name))


def curl_load(srv: ServerProcess, table: str, path: Path, fmt: str) -> dict:
    out = subprocess.run(
        ["curl", "-s", "--location-trusted", "-u", "root:", "-H", "Expect:100-continue",
         "-H", "column_separator:|", "-H", f"format:{fmt}", "-T", str(path),
         f"http://127.0.0.1:{srv.http_port}/api/bench/{table}/_stream_load"],
        capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def cli_load(srv: ServerProcess, table: str, path: Path, state: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "shaledb"), "load", str(path), f"bench.{table}",
         "--column-separator", "|", "--http-port", str(srv.http_port), "--json",
         "--no-progress", "--state-dir", str(state)],
        capture_output=True, text=True, env=env, check=False)
    if proc.returncode:
        raise RuntimeError(proc.stderr)
    return json.loads(proc.stdout)


def insert_rows_per_s(srv: ServerProcess, path: Path, rows: int, batch: int = 5000) -> float:
    """Multi-row INSERT of the first `rows` lines of the CSV (statements built beforehand)."""
    create(srv, "lo_insert")
    stmts, values = [], []
    with path.open() as f:
        for i, line in enumerate(f):
            if i >= rows:
                break
            v = line.rstrip("\n").split("|")
            values.append(f"({','.join(v[:6])},'{v[6]}',{','.join(v[7:16])},'{v[16]}')")
            if len(values) == batch:
                stmts.append("INSERT INTO lo_insert VALUES " + ",".join(values))
                values = []
    if values:
        stmts.append("INSERT INTO lo_insert VALUES " + ",".join(values))
    with srv.connect("bench") as c, c.cursor() as cur:
        t0 = time.perf_counter()
        for s in stmts:
            cur.execute(s)
        elapsed = time.perf_counter() - t0
    assert count(srv, "lo_insert") == rows
    return rows / elapsed


def duckdb_copy(work: Path, path: Path, fmt: str) -> float:
    db = work / "duck_lineorder.duckdb"
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE lineorder ({COLUMNS})")
    opts = "(FORMAT parquet)" if fmt == "parquet" else "(DELIMITER '|', HEADER false)"
    t0 = time.perf_counter()
    con.execute(f"COPY lineorder FROM '{path}' {opts}")
    con.execute("CHECKPOINT")
    elapsed = time.perf_counter() - t0
    con.close()
    db.unlink()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "shaledb_ssb")
    ap.add_argument("--only", default="csv,cli,parquet,insert,duckdb")
    ap.add_argument("--insert-rows", type=int, default=200_000)
    ap.add_argument("--no-compaction", action="store_true",
                    help="start the server with disable_auto_compaction (to tell a load's own "
                         "memory from compaction merging the rowsets of earlier chunks)")
    ap.add_argument("--profile", type=Path, help="py-spy flame graph of the curl CSV load")
    ap.add_argument("--out", "--results", type=Path, default=ROOT / "bench" / "RESULTS.md",
                    help="the results file whose stream_load section is replaced")
    ap.add_argument("--repo", type=Path, action="append", default=[],
                    help="(with --rounds) also time the curl CSV load on the server of this "
                         "checkout, alternating with this one (e.g. a `git archive` of main)")
    ap.add_argument("--rounds", type=int, default=0,
                    help="only the curl CSV load, this many rounds alternating this checkout "
                         "and each --repo, on fresh servers; prints wall, MB/s, server CPU "
                         "per row and cores busy (CPU / wall), writes no results file")
    args = ap.parse_args()
    if args.rounds:
        return alternate(args)
    only = set(args.only.split(","))
    args.work_dir.mkdir(parents=True, exist_ok=True)
    csv_path, pq_path, nrows = generate(args.work_dir, args.sf)
    csv_mb, pq_mb = csv_path.stat().st_size / 2**20, pq_path.stat().st_size / 2**20
    # what, file, seconds, MB/s, rows/s, RSS
    results: list[tuple[str, str, float, float, float, str]] = []

    def add(what: str, file_mb: float, fname: str, seconds: float, rss: int | None) -> None:
        rss_text = f"{rss / 2**20:,.0f} MB" if rss else "-"
        results.append((what, fname, seconds, file_mb / seconds, nrows / seconds, rss_text))
        print(f"{what:<44} {seconds:7.1f} s {file_mb / seconds:7.1f} MB/s "
              f"{nrows / seconds:11,.0f} rows/s  peak RSS {rss_text}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        extra: list[str] = []
        if args.no_compaction:
            conf = Path(tmp) / "shaledb.toml"
            conf.write_text("[compaction]\ndisable_auto_compaction = true\n")
            extra = ["--conf", str(conf)]
        srv = ServerProcess(Path(tmp) / "data", backends=3, extra_args=extra)
        srv.start()
        try:
            with srv.connect() as c, c.cursor() as cur:
                cur.execute("CREATE DATABASE bench")
            idle = _rss(srv.proc.pid)
            print(f"server idle RSS {idle / 2**20:.0f} MB")

            def restarted() -> int:
                """A fresh server process on the same data dir, so each load's peak RSS is
                its own (not the page cache the previous check's count(*) filled)."""
                srv.stop()
                srv.start()
                return srv.proc.pid

            if "csv" in only:
                create(srv, "lo_curl")
                pid = restarted()
                spy = None
                if args.profile:
                    # --threads: every thread (--gil, via PYSPY_MODE, only the GIL holder)
                    mode = os.environ.get("PYSPY_MODE", "--threads").split()
                    fmt = "raw" if args.profile.suffix == ".txt" else "flamegraph"
                    spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record",
                                            "-p", str(pid), "-o", str(args.profile), "-r", "250",
                                            "--nonblocking", *mode, "--format", fmt])
                with RssPeak(pid) as rss:
                    t0 = time.perf_counter()
                    body = curl_load(srv, "lo_curl", csv_path, "csv")
                    elapsed = time.perf_counter() - t0
                if spy is not None:
                    spy.send_signal(2)
                    spy.wait()
                assert body["Status"] == "Success", body
                assert body["NumberLoadedRows"] == nrows == count(srv, "lo_curl")
                add("Stream Load, curl -T (one load)", csv_mb, "CSV", elapsed, rss.peak)
                print(f"   server CPU {rss.cpu_s:.1f} s; phases: read {body['ReadDataTimeMs']} ms, "
                      f"write {body['WriteDataTimeMs']} ms, commit "
                      f"{body['CommitAndPublishTimeMs']} ms")
            if "cli" in only:
                create(srv, "lo_cli")
                pid = restarted()
                with RssPeak(pid) as rss:
                    t0 = time.perf_counter()
                    s = cli_load(srv, "lo_cli", csv_path, Path(tmp) / "state1")
                    elapsed = time.perf_counter() - t0
                print(f"   server CPU {rss.cpu_s:.1f} s")
                assert s["NumberLoadedRows"] == nrows == count(srv, "lo_cli"), s
                add(f"shaledb load ({s['Chunks']} chunks of 64 MB)", csv_mb, "CSV", elapsed,
                    rss.peak)
            if "parquet" in only:
                create(srv, "lo_pq")
                pid = restarted()
                with RssPeak(pid) as rss:
                    t0 = time.perf_counter()
                    s = cli_load(srv, "lo_pq", pq_path, Path(tmp) / "state2")
                    elapsed = time.perf_counter() - t0
                assert s["NumberLoadedRows"] == nrows == count(srv, "lo_pq"), s
                add(f"shaledb load ({s['Chunks']} chunks of row groups)", pq_mb, "Parquet",
                    elapsed, rss.peak)
            insert_rate = None
            if "insert" in only:
                insert_rate = insert_rows_per_s(srv, csv_path, min(args.insert_rows, nrows))
                print(f"multi-row INSERT (5,000-row statements): {insert_rate:,.0f} rows/s")
        finally:
            srv.stop()
    if "duckdb" in only:
        add("DuckDB COPY into a database file", csv_mb, "CSV",
            duckdb_copy(args.work_dir, csv_path, "csv"), None)
        add("DuckDB COPY into a database file", pq_mb, "Parquet",
            duckdb_copy(args.work_dir, pq_path, "parquet"), None)
    write_results(args.out, args, nrows, csv_mb, pq_mb, results, insert_rate, idle)


def alternate(args: argparse.Namespace) -> None:
    """The curl CSV load, `args.rounds` rounds alternating checkouts, one fresh server each."""
    import support.server

    csv_path, _, nrows = generate(args.work_dir, args.sf)
    csv_mb = csv_path.stat().st_size / 2**20
    for r in range(args.rounds):
        for repo in [ROOT, *args.repo]:
            support.server.REPO_ROOT = repo.resolve()  # ServerProcess runs `-m server` there
            with tempfile.TemporaryDirectory() as tmp:
                srv = ServerProcess(Path(tmp) / "data", backends=3)
                srv.start()
                try:
                    with srv.connect() as c, c.cursor() as cur:
                        cur.execute("CREATE DATABASE bench")
                    create(srv, "lo_curl")
                    srv.stop()
                    srv.start()
                    with RssPeak(srv.proc.pid) as rss:
                        load1 = os.getloadavg()[0]
                        t0 = time.perf_counter()
                        body = curl_load(srv, "lo_curl", csv_path, "csv")
                        elapsed = time.perf_counter() - t0
                    assert body["Status"] == "Success", body
                    assert body["NumberLoadedRows"] == nrows == count(srv, "lo_curl")
                finally:
                    srv.stop()
            print(f"round {r} {repo}: wall {elapsed:.2f} s, {csv_mb / elapsed:.1f} MB/s, "
                  f"server CPU {rss.cpu_s:.2f} s = {rss.cpu_s / nrows * 1e6:.2f} us/row, "
                  f"cores busy {rss.cpu_s / elapsed:.2f}, peak RSS {rss.peak / 2**20:.0f} MB, "
                  f"read {body['ReadDataTimeMs']} ms, write {body['WriteDataTimeMs']} ms, commit "
                  f"{body['CommitAndPublishTimeMs']} ms, load avg {load1:.1f}", flush=True)


def write_results(out: Path, args: argparse.Namespace, nrows: int, csv_mb: float, pq_mb: float,
                  results: list, insert_rate: float | None, idle: int) -> None:
    lines = [
        f"# Stream Load: SSB lineorder SF {args.sf:g} (`bench/stream_load.py`)", "",
        (f"{nrows:,} rows; CSV {csv_mb:,.0f} MB (`|` separated), Parquet {pq_mb:,.0f} MB. "
         f"Table: Doris' SSB DDL (7 yearly range partitions, HASH(lo_orderkey) BUCKETS 8), "
         f"3 embedded backends. Machine: {os.cpu_count()} cores ({platform.machine()}), "
         f"shared; server idle RSS {idle / 2**20:,.0f} MB. "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."),
        "", "| load | file | seconds | MB/s | rows/s | server peak RSS |",
        "|---|---|---:|---:|---:|---:|"]
    for what, fname, sec, mbs, rps, rss in results:
        lines.append(f"| {what} | {fname} | {sec:.1f} | {mbs:.1f} | {rps:,.0f} | {rss} |")
    if insert_rate:
        lines += ["", (f"Multi-row INSERT (5,000-row statements, pymysql, "
                       f"{args.insert_rows:,} rows): **{insert_rate:,.0f} rows/s**.")]
        curl = next((r for r in results if r[0].startswith("Stream Load, curl")), None)
        if curl:
            lines.append(f"Stream Load (curl, CSV) / INSERT: **{curl[4] / insert_rate:.1f}x**.")
    section = f"{MARK_BEGIN}\n" + "\n".join(lines) + f"\n{MARK_END}\n"
    text = out.read_text() if out.exists() else ""
    if MARK_BEGIN in text and MARK_END in text:
        head, rest = text.split(MARK_BEGIN, 1)
        text = head + section + rest.split(MARK_END, 1)[1].lstrip("\n")
    else:
        text = section + ("\n" + text if text else "")
    out.write_text(text)
    print(f"wrote {out}")


MARK_BEGIN = "<!-- stream_load: written by bench/stream_load.py -->"
MARK_END = "<!-- /stream_load -->"


if __name__ == "__main__":
    main()
