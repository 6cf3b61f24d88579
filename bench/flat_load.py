"""SSB-flat Stream Load: rows/s and the server's CPU per loaded row, loaded as bench/run.py
ssb-flat loads it (Doris' 40-column `lineorder_flat` DDL, `|`-separated CSV, one Stream Load
per `--chunk-rows` rows), without the queries, so a load-path change can be measured alone.

`--repo DIR` (repeatable) runs the same loads against the server of another checkout too (e.g.
`git archive main | tar -x -C /tmp/base`), alternating checkouts `--rounds` times on fresh
servers, so a before/after comes from one run of this machine. The CPU seconds are the server
process's (/proc: user + system, every thread) from each load's request to its response; a
fresh server's first load also pays one-time imports (pyarrow's lazy pandas import, ~1 CPU-s).

Run: `.venv/bin/python bench/flat_load.py [--sf 0.1] [--repo /tmp/base] [--rounds 2]
[--profile out.txt]` (`--profile`: py-spy raw samples of this checkout's server). Prints; writes
nothing else. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tests", ROOT / "bench"):
    sys.path.insert(0, str(_p))

import pymysql  # noqa: E402
import requests  # noqa: E402
from harness import datasets, loading  # noqa: E402


def process_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_server(repo: Path, chunks: list[bytes], profile: str | None) -> tuple[float, float]:
    """(wall seconds, server CPU seconds) of loading `chunks` into a fresh server of `repo`."""
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1] + '/tests');"
        "from support.server import ServerProcess; from pathlib import Path;"
        "srv = ServerProcess(Path(sys.argv[2]), backends=3).start();"
        "print(json.dumps([srv.proc.pid, srv.port, srv.http_port]), flush=True);"
        "sys.stdin.read(); srv.stop()")
    with tempfile.TemporaryDirectory(prefix="flat-load-") as tmp:
        holder = subprocess.Popen([sys.executable, "-c", code, str(repo), f"{tmp}/data"],
                                  cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        try:
            assert holder.stdout is not None
            pid, port, http_port = json.loads(holder.stdout.readline())
            with pymysql.connect(host="127.0.0.1", port=port, user="root") as c, \
                    c.cursor() as cur:
                cur.execute("CREATE DATABASE f")
                cur.execute("USE f")
                cur.execute(datasets.FLAT_DDL.format(rollups=""))
            spy = None
            if profile:
                spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record",
                                        "-p", str(pid), "-f", "raw", "-o", profile, "-r", "200",
                                        "--nonblocking"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            http = requests.Session()
            url = f"http://127.0.0.1:{http_port}/api/f/lineorder_flat/_stream_load"
            wall = cpu = 0.0
            for i, body in enumerate(chunks):
                c0, t0 = process_cpu_seconds(pid), time.perf_counter()
                res = http.put(url, data=body, auth=("root", ""), timeout=3600, headers={
                    "label": f"flat_{i}", "column_separator": "|", "format": "csv"}).json()
                wall += time.perf_counter() - t0
                cpu += process_cpu_seconds(pid) - c0
                if res.get("Status") != "Success":
                    raise SystemExit(f"load {i} failed: {res}")
            if spy is not None:
                spy.send_signal(2)
                spy.wait(60)
            return wall, cpu
        finally:
            if holder.stdin is not None:
                holder.stdin.close()
            holder.wait(120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--chunk-rows", type=int, default=500_000)
    ap.add_argument("--repo", type=Path, action="append", default=[])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--profile", default=None)
    args = ap.parse_args()
    table = datasets.ssb_flat(args.sf).tables["lineorder_flat"]
    chunks = [loading.csv_chunk(table.slice(s, args.chunk_rows))
              for s in range(0, table.num_rows, args.chunk_rows)]
    rows = table.num_rows
    print(f"lineorder_flat SF {args.sf:g}: {rows:,} rows in {len(chunks)} Stream Loads")
    for r in range(args.rounds):
        for repo in [ROOT, *args.repo]:
            wall, cpu = run_server(repo, chunks, args.profile if repo == ROOT else None)
            print(f"round {r} {repo}: {rows / wall:,.0f} rows/s, wall {wall:.2f} s, server "
                  f"CPU {cpu:.2f} s ({cpu / rows * 1e6:.2f} us a row)", flush=True)


if __name__ == "__main__":
    main()
