"""INSERT ... VALUES write throughput: 1M rows x 5 columns sent as 10000-row statements.

Starts a ShaleDB server on a temporary data dir (tests/support/server.py), creates
`fast (id BIGINT, price DECIMAL(12, 2), score DOUBLE, name VARCHAR(32), day DATE)` with plain
MySQL DDL (as Spark does before writing), builds the
multi-row INSERT statements up front (as a JDBC batch writer with
rewriteBatchedStatements=true or pandas' `to_sql` sends them) and times sending them with
pymysql. Reports rows/s for
- the fast path (plain literals: the numba scanner of executor/kernels/insert_values.py), the whole data set, on one
  connection and on `--connections` (default 2, like Spark's local[2]) at once;
- the general path (the same statements behind a leading comment, which the scanner does not
  take, so sqlglot parses them), on a sample of `--general-statements` statements;
- pymysql `executemany` with %s parameters (pymysql builds the multi-row statement itself;
  its client-side formatting is included), on the same sample size.

Run: `.venv/bin/python bench/insert_values.py [--rows 1000000] [--batch 10000]`. Not a test.
The issue's anchor: 160k rows/s for MariaDB 10.11 with the Spark JDBC job of the same shape.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import threading
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support.server import ServerProcess  # noqa: E402

# Plain MySQL DDL, as Spark's JDBC writer or pandas create the table: ShaleDB completes it the
# way Doris does (DUPLICATE KEY on the leading columns, DISTRIBUTED BY RANDOM BUCKETS AUTO).
DDL = "CREATE TABLE {t} (id BIGINT, price DECIMAL(12, 2), score DOUBLE, name VARCHAR(32), day DATE)"


def row_text(i: int) -> str:
    day = dt.date(2020, 1, 1) + dt.timedelta(days=i % 1500)
    return f"({i}, {i % 100000}.{i % 100:02d}, {i * 0.37:.4f}, 'customer_{i:08d}', '{day.isoformat()}')"


def statements(rows: int, batch: int, table: str) -> list[str]:
    out = []
    for start in range(0, rows, batch):
        body = ",".join(row_text(i) for i in range(start, min(rows, start + batch)))
        out.append(f"INSERT INTO {table} VALUES {body}")
    return out


def timed(cur, stmts: list[str]) -> float:
    t0 = time.perf_counter()
    for s in stmts:
        cur.execute(s)
    return time.perf_counter() - t0


def timed_parallel(srv: ServerProcess, stmts: list[str], connections: int) -> float:
    """Send `stmts` over `connections` connections at once (like Spark's local[2] tasks)."""
    conns = [srv.connect("bench") for _ in range(connections)]
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            cur = conns[k].cursor()
            for s in stmts[k::connections]:
                cur.execute(s)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(connections)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.perf_counter() - t0
    for c in conns:
        c.close()
    if errors:
        raise errors[0]
    return secs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--general-statements", type=int, default=5)
    ap.add_argument("--connections", type=int, default=2, help="parallel writers (Spark local[2])")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        srv = ServerProcess(Path(d) / "data", backends=3)
        srv.start()
        try:
            conn = srv.connect()
            cur = conn.cursor()
            cur.execute("CREATE DATABASE bench")
            cur.execute("USE bench")
            for t in ("fast", "general", "params"):
                cur.execute(DDL.format(t=t))
            stmts = statements(args.rows, args.batch, "fast")
            timed(cur, stmts[:1])  # warm-up (first load compiles/loads the numba kernels)
            cur.execute("TRUNCATE TABLE fast")
            secs = timed(cur, stmts)
            cur.execute("SELECT count(*) FROM fast")
            assert cur.fetchone()[0] == args.rows
            fast = args.rows / secs
            cur.execute("TRUNCATE TABLE fast")
            psecs = timed_parallel(srv, stmts, args.connections)
            cur.execute("SELECT count(*) FROM fast")
            assert cur.fetchone()[0] == args.rows
            parallel = args.rows / psecs
            sample = stmts[: args.general_statements]
            general_rows = sum(s.count("'customer_") for s in sample)
            gsecs = timed(cur, ["/* general path */ " + s.replace("INTO fast", "INTO general", 1) for s in sample])
            general = general_rows / gsecs
            params = [(i, Decimal(f"{i % 100000}.{i % 100:02d}"), i * 0.37, f"customer_{i:08d}",
                       (dt.date(2020, 1, 1) + dt.timedelta(days=i % 1500)).isoformat())
                      for i in range(general_rows)]
            t0 = time.perf_counter()
            for start in range(0, general_rows, args.batch):
                cur.executemany("INSERT INTO params VALUES (%s, %s, %s, %s, %s)",
                                params[start:start + args.batch])
            many = general_rows / (time.perf_counter() - t0)
            conn.close()
        finally:
            srv.stop()
    print(f"rows={args.rows} batch={args.batch} columns=5")
    print(f"fast path, 1 connection:  {secs:.2f} s, {fast:,.0f} rows/s")
    print(f"fast path, {args.connections} connections: {psecs:.2f} s, {parallel:,.0f} rows/s")
    print(f"general path ({general_rows} rows): {gsecs:.2f} s, {general:,.0f} rows/s")
    print(f"pymysql executemany ({general_rows} rows): {many:,.0f} rows/s")


if __name__ == "__main__":
    main()
