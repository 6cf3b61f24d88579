"""Result streaming benchmark: a 1M-row x 4-column SELECT through mysqlclient and pymysql.

Starts a ShaleDB server on a temporary data dir (tests/support/server.py), creates
`t (a INT, b BIGINT, c DOUBLE, d VARCHAR(20))`, loads N rows with multi-row INSERTs, then
reports
- rows/s of `SELECT * FROM t` read with mysqlclient (MySQLdb, fetchall) and pymysql (fetchall);
- time to first row with unbuffered cursors (mysqlclient SSCursor / pymysql SSCursor);
- the server-side encoder alone (server/text_encoding.py `encode_batch`) in this process on the
  same data in 64K-row batches, against the previous per-row path (`results.encode_rows`).

DOUBLE values are short decimals (i/8, like stored prices); `--random-doubles` uses N(0,1)
doubles instead, which need 17 digits and take the per-value Python fallback.

Run: `.venv/bin/python bench/result_streaming.py [--rows 1000000]`. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import MySQLdb  # noqa: E402
import MySQLdb.cursors  # noqa: E402
import pymysql  # noqa: E402
import pymysql.cursors  # noqa: E402

from server.results import encode_rows  # noqa: E402
from server.text_encoding import encode_batch  # noqa: E402
from storage.batch import Batch, Column  # noqa: E402
from storage.types import BIGINT, DOUBLE, INT, varchar  # noqa: E402
from support.server import ServerProcess  # noqa: E402

INSERT_ROWS = 20_000


def make_columns(n: int, random_doubles: bool) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(42)
    a = np.arange(n, dtype=np.int32)
    b = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    c = rng.standard_normal(n) if random_doubles else (np.arange(n) % 1_000_000) / 8.0
    d = np.array([f"name_{i:08d}" for i in range(n)], dtype=object)
    return a, b, c, d


def load(conn: Any, cols: tuple[np.ndarray, ...]) -> float:
    a, b, c, d = cols
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        for s in range(0, len(a), INSERT_ROWS):
            e = min(len(a), s + INSERT_ROWS)
            values = ",".join(
                f"({x},{y},{z!r},'{w}')"
                for x, y, z, w in zip(a[s:e].tolist(), b[s:e].tolist(), c[s:e].tolist(), d[s:e].tolist())
            )
            cur.execute(f"INSERT INTO t VALUES {values}")
    return time.perf_counter() - t0


def timed(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, rows = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        rows = fn()
        best = min(best, time.perf_counter() - t0)
    return best, rows


def first_row_and_total(cur: Any) -> tuple[float, float, int]:
    """Time to the first row and to the last of `SELECT * FROM t` on an unbuffered cursor."""
    t0 = time.perf_counter()
    cur.execute("SELECT * FROM t")
    first = cur.fetchone()
    ttfb = time.perf_counter() - t0
    rows = 1 if first is not None else 0
    while True:
        chunk = cur.fetchmany(10_000)
        if not chunk:
            break
        rows += len(chunk)
    return ttfb, time.perf_counter() - t0, rows


def bench_encoder(cols: tuple[np.ndarray, ...], batch_rows: int = 65_536) -> tuple[float, float]:
    a, b, c, d = cols
    n = len(a)
    batches = [
        Batch(("a", "b", "c", "d"), (
            Column(INT, a[s:s + batch_rows]), Column(BIGINT, b[s:s + batch_rows]),
            Column(DOUBLE, c[s:s + batch_rows]),
            Column.from_physical(varchar(20), d[s:s + batch_rows].tolist()),
        ))
        for s in range(0, n, batch_rows)
    ]
    encode_batch(batches[0].slice(0, 10), 0)  # compile / load the numba cache
    t0 = time.perf_counter()
    seq = 0
    for batch in batches:
        _, seq = encode_batch(batch, seq)
    new = time.perf_counter() - t0
    sample = batches[0]
    t0 = time.perf_counter()
    encode_rows(sample)
    old = (time.perf_counter() - t0) * n / sample.num_rows
    return n / new, n / old


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--random-doubles", action="store_true")
    ap.add_argument("--data-dir", help="keep the server data here; reuse a table loaded before")
    args = ap.parse_args()
    cols = make_columns(args.rows, args.random_doubles)

    new_rate, old_rate = bench_encoder(cols)
    print(f"server encoder (in-process): columnar {new_rate / 1e6:.2f} M rows/s, "
          f"per-row path {old_rate / 1e6:.2f} M rows/s")

    with tempfile.TemporaryDirectory(prefix="shaledb-bench-") as tmp, \
            ServerProcess(Path(args.data_dir or Path(tmp) / "data"), backends=1) as srv:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE IF NOT EXISTS bench")
            cur.execute("USE bench")
            cur.execute("SHOW TABLES")
            if ("t",) in cur.fetchall():
                cur.execute("SELECT COUNT(*) FROM t")
                if cur.fetchone()[0] != args.rows:
                    raise SystemExit(f"bench.t in {args.data_dir} does not hold {args.rows} rows")
            else:
                cur.execute("CREATE TABLE t (a INT, b BIGINT, c DOUBLE, d VARCHAR(20)) "
                            "DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 4")
                secs = load(conn, cols)
                print(f"load: {args.rows} rows in {secs:.1f} s ({args.rows / secs / 1e3:.0f}K rows/s)")

        my = MySQLdb.connect(host="127.0.0.1", port=srv.port, user="root", passwd="", db="bench")
        pm = srv.connect("bench")

        def my_fetchall() -> int:
            cur = my.cursor()
            cur.execute("SELECT * FROM t")
            rows = len(cur.fetchall())
            cur.close()
            return rows

        def pm_fetchall() -> int:
            with pm.cursor() as cur:
                cur.execute("SELECT * FROM t")
                return len(cur.fetchall())

        for name, fn, repeat in (("mysqlclient fetchall", my_fetchall, args.repeat),
                                 ("pymysql fetchall", pm_fetchall, 1)):
            secs, rows = timed(fn, repeat)
            assert rows == args.rows, rows
            print(f"{name}: {rows} rows in {secs:.2f} s = {rows / secs / 1e6:.2f} M rows/s")

        ttfb, total, rows = first_row_and_total(my.cursor(MySQLdb.cursors.SSCursor))
        print(f"mysqlclient SSCursor: first row after {ttfb * 1e3:.1f} ms, "
              f"{rows} rows in {total:.2f} s = {rows / total / 1e6:.2f} M rows/s")
        ttfb, total, rows = first_row_and_total(pm.cursor(pymysql.cursors.SSCursor))
        print(f"pymysql SSCursor: first row after {ttfb * 1e3:.1f} ms, "
              f"{rows} rows in {total:.2f} s = {rows / total / 1e6:.2f} M rows/s")
        my.close()
        pm.close()


if __name__ == "__main__":
    main()
