"""TPC-H benchmark: the 22 queries in ShaleDB (over the MySQL protocol) and in DuckDB.

Generates the data with tpchgen-cli at the chosen scale factor, loads it into a fresh ShaleDB
data dir directly through the storage API (tests/tpch/tpch_common.py; SF 1 takes minutes) and
into an in-memory DuckDB, starts a ShaleDB server on the data dir (tests/support/server.py),
runs each query `--runs` times on both (after one warm-up run), checks that the results agree
and prints the median wall time per query and the ratio ShaleDB / DuckDB. The table is also
written to bench/RESULTS_TPCH.md.

Run: `.venv/bin/python bench/tpch.py [--sf 1] [--runs 3] [--queries 1,3,6]`. Not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tests", ROOT / "tests" / "tpch"):
    sys.path.insert(0, str(_p))

import duckdb  # noqa: E402
import tpch_common as C  # noqa: E402
from support.server import ServerProcess  # noqa: E402
from tpch_queries import ORDERED, QUERIES  # noqa: E402

from storage.engine import StorageEngine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", default="", help="comma-separated query numbers (default all)")
    ap.add_argument("--backends", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS_TPCH.md"))
    args = ap.parse_args()
    queries = [int(q) for q in args.queries.split(",") if q] or sorted(QUERIES)

    with tempfile.TemporaryDirectory(prefix="tpch-bench-") as tmp:
        tmpdir = Path(tmp)
        t_gen, pq_dir = C.timed(lambda: C.generate(tmpdir / "parquet", args.sf))
        print(f"generated SF {args.sf} in {t_gen:.1f}s", flush=True)
        data_dir = tmpdir / "data"
        eng = StorageEngine(data_dir, backends=args.backends)
        t_load, _ = C.timed(lambda: C.load_shaledb(eng, "tpch", pq_dir))
        eng.close()
        print(f"loaded ShaleDB in {t_load:.1f}s", flush=True)
        duck = duckdb.connect()
        t_dload, _ = C.timed(lambda: C.load_duckdb(duck, pq_dir))
        print(f"loaded DuckDB in {t_dload:.1f}s", flush=True)

        rows: list[tuple[int, float | None, float, str]] = []
        with ServerProcess(data_dir, backends=args.backends) as srv:
            conn = srv.connect("tpch", read_timeout=3600)
            cur = conn.cursor()
            for q in queries:
                sql = QUERIES[q]

                def shale() -> list[tuple]:
                    cur.execute(sql)  # noqa: B023
                    return list(cur.fetchall())  # noqa: B023

                def duck_run() -> list[tuple]:
                    return duck.execute(sql).fetchall()  # noqa: B023

                note = ""
                try:
                    got = shale()  # warm-up (numba compilation, page cache)
                    s_times = [C.timed(shale)[0] for _ in range(args.runs)]
                    s_med: float | None = statistics.median(s_times)
                except Exception as e:  # noqa: BLE001 - reported in the table
                    got, s_med, note = None, None, f"error: {str(e)[:80]}"
                expected = duck_run()
                d_med = statistics.median(C.timed(duck_run)[0] for _ in range(args.runs))
                if got is not None:
                    scales = [max(-v.as_tuple().exponent, 0) if hasattr(v, "as_tuple") else None
                              for v in got[0]] if got else None
                    diff = C.compare(C.normalize_py(got), C.normalize_py(expected),
                                     q in ORDERED, scales)
                    note = "" if diff is None else f"MISMATCH: {diff[:80]}"
                rows.append((q, s_med, d_med, note))
                ratio = f"{s_med / d_med:8.1f}x" if s_med is not None else "       -"
                s_txt = f"{s_med * 1000:9.1f}" if s_med is not None else "        -"
                print(f"Q{q:<3} shaledb {s_txt} ms  duckdb {d_med * 1000:8.1f} ms  {ratio} {note}",
                      flush=True)
            conn.close()

    ok = [r for r in rows if r[1] is not None]
    total_s = sum(r[1] for r in ok)  # type: ignore[misc]
    total_d = sum(r[2] for r in ok)
    lines = [
        "# TPC-H benchmark (bench/tpch.py)",
        "",
        f"SF {args.sf}, median of {args.runs} runs after one warm-up; ShaleDB over the MySQL "
        f"protocol (pymysql, {args.backends} backends), DuckDB {duckdb.__version__} in-process.",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}. Load: ShaleDB {t_load:.1f}s (storage API), "
        f"DuckDB {t_dload:.1f}s.",
        "",
        "| Query | ShaleDB (ms) | DuckDB (ms) | ShaleDB / DuckDB | Note |",
        "|---|---:|---:|---:|---|",
    ]
    for q, s, d, note in rows:
        s_txt = f"{s * 1000:.1f}" if s is not None else "-"
        r_txt = f"{s / d:.1f}x" if s is not None else "-"
        lines.append(f"| Q{q} | {s_txt} | {d * 1000:.1f} | {r_txt} | {note} |")
    if ok:
        lines.append(f"| **total** | {total_s * 1000:.1f} | {total_d * 1000:.1f} | "
                     f"{total_s / total_d:.1f}x | |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
