"""Result fetch benchmark: `SELECT *` of 6M rows x 4 columns through Arrow Flight SQL (the ADBC
driver, `fetch_arrow_table`), through the MySQL protocol (pymysql `fetchall`), and DuckDB's own
fetch of the same rows from a DuckDB database file (`fetch_arrow_table` and `fetchall`).

Starts a ShaleDB server with `--arrow-flight-sql-port 0` on a temporary data dir
(tests/support/server.py), makes the rows with DuckDB (`id BIGINT, k INT, v DOUBLE,
s VARCHAR`), writes them to CSV and Stream Loads the file (as users load), loads the same CSV
into a DuckDB database file, then times each fetch (best of `--repeat`, pymysql once: it is the
slow one). Appends a dated table to bench/RESULTS.md (`--out`; `--no-write` to only print).

Run: `.venv/bin/python bench/result_fetch.py [--rows 6000000] [--repeat 3]`. Not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import adbc_driver_flightsql.dbapi as flight_sql  # noqa: E402
import duckdb  # noqa: E402
import pymysql  # noqa: E402
from support.server import ServerProcess  # noqa: E402

DDL = ("CREATE TABLE t (id BIGINT, k INT, v DOUBLE, s VARCHAR(24)) DUPLICATE KEY(id) "
       "DISTRIBUTED BY HASH(id) BUCKETS 8")
QUERY = "SELECT id, k, v, s FROM t"


def make_csv(path: Path, rows: int) -> None:
    duckdb.sql(f"""COPY (SELECT i AS id, (i % 100000)::INT AS k, (i % 1000000) / 8.0 AS v,
                      'name_' || lpad((i % 1000000)::VARCHAR, 8, '0') AS s
                      FROM range({rows}) r(i))
                   TO '{path}' (HEADER false, DELIMITER ',')""")


def stream_load(srv: ServerProcess, path: Path) -> None:
    out = subprocess.run(
        ["curl", "-s", "--location-trusted", "-u", "root:", "-H", "Expect:100-continue",
         "-H", "column_separator:,", "-T", str(path),
         f"http://127.0.0.1:{srv.http_port}/api/bench/t/_stream_load"],
        capture_output=True, text=True, check=True).stdout
    if '"Success"' not in out:
        raise RuntimeError(f"stream load failed: {out}")


def best_of(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, rows = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        rows = fn()
        best = min(best, time.perf_counter() - t0)
    return best, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="shaledb-fetch-") as tmp:
        work = Path(tmp)
        csv = work / "rows.csv"
        make_csv(csv, args.rows)
        duck = duckdb.connect(str(work / "bench.duckdb"))
        duck.execute("CREATE TABLE t (id BIGINT, k INT, v DOUBLE, s VARCHAR)")
        duck.execute(f"COPY t FROM '{csv}' (HEADER false, DELIMITER ',')")
        duck.close()
        with ServerProcess(work / "data", backends=3,
                           extra_args=("--arrow-flight-sql-port", "0")) as srv:
            with srv.connect() as c, c.cursor() as cur:
                cur.execute("CREATE DATABASE bench")
                cur.execute("USE bench")
                cur.execute(DDL)
            t0 = time.perf_counter()
            stream_load(srv, csv)
            load_s = time.perf_counter() - t0

            conn = flight_sql.connect(f"grpc://127.0.0.1:{srv.flight_port}", autocommit=True,
                                      db_kwargs={"username": "root", "password": ""})

            def flight_fetch() -> int:
                with conn.cursor() as cur:
                    cur.execute("SELECT id, k, v, s FROM bench.t")
                    return int(cur.fetch_arrow_table().num_rows)

            def pymysql_fetch() -> int:
                with pymysql.connect(host="127.0.0.1", port=srv.port, user="root",
                                     database="bench", ssl_disabled=True) as c, c.cursor() as cur:
                    cur.execute(QUERY)
                    return len(cur.fetchall())

            flight_s, flight_rows = best_of(flight_fetch, args.repeat)
            pymysql_s, pymysql_rows = best_of(pymysql_fetch, 1)
            conn.close()

        duck = duckdb.connect(str(work / "bench.duckdb"), read_only=True)
        duck_arrow_s, duck_rows = best_of(
            lambda: int(duck.sql(QUERY).to_arrow_table().num_rows), args.repeat)
        duck_rows_s, _ = best_of(lambda: len(duck.execute(QUERY).fetchall()), 1)
        duck.close()

    assert flight_rows == pymysql_rows == duck_rows == args.rows, (flight_rows, pymysql_rows)
    results = [
        ("Arrow Flight SQL (ADBC `fetch_arrow_table`)", flight_s),
        ("MySQL protocol (pymysql `fetchall`)", pymysql_s),
        ("DuckDB file, in process (`to_arrow_table`)", duck_arrow_s),
        ("DuckDB file, in process (`fetchall`, Python rows)", duck_rows_s),
    ]
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "",
        f"# Result fetch: {args.rows:,} rows x 4 columns (`bench/result_fetch.py`)",
        "",
        (f"`{QUERY}` on `t (id BIGINT, k INT, v DOUBLE, s VARCHAR(24))`, 8 buckets, 3 embedded "
         f"backends, Stream Loaded ({load_s:.1f} s). Machine: {os.cpu_count()} cores, shared. "
         f"{stamp}. Best of {args.repeat} (pymysql and DuckDB `fetchall`: one run)."),
        "",
        "| client | seconds | rows/s |",
        "|---|---:|---:|",
        *[f"| {name} | {s:.2f} | {args.rows / s:,.0f} |" for name, s in results],
        "",
        f"Flight SQL / pymysql: **{pymysql_s / flight_s:.1f}x** (target >= 10x).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
