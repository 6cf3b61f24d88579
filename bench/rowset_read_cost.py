"""Per-rowset read cost: the same rows in one rowset vs in 1,000 small rowsets, before compaction.

Every load adds one rowset (version) to each tablet it touches; until compaction merges them a
tablet may hold hundreds. DESIGN.md section 8: "a table fed by 1,000 small loads must be as fast
to query as one loaded at once". This bench loads like users do, over the MySQL protocol with
pymysql, into a real server (tests/support/server.py):
- `<model>_one`: all `--rows` rows in ONE multi-row INSERT (one rowset per tablet);
- `<model>_many`: the same rows as `--loads` INSERT statements of rows/loads rows each (each
  statement one version, so one rowset per tablet per statement).
for each data model in `--models` (dup, agg, uniq), 3 buckets, automatic compaction off
(`"disable_auto_compaction" = "true"`) so the many-rowset table stays as loaded. Keys arrive in
increasing order, as in an append-only feed (each load covers its own key range).

Then it times a handful of queries (median of `--runs` after one warm-up, over the MySQL
protocol) on both tables, checks both return the same rows (and DuckDB's), and prints ms per
query and the ratio many / one (the issue's target: within 3x). DuckDB in-process on the same
rows is a reference column.

Run: `.venv/bin/python bench/rowset_read_cost.py` (small and quick: 20,000 rows, 200 loads, 3
runs, about a minute); bench/RESULTS.md uses `--rows 200000 --loads 1000 --runs 7`.
`--data-dir DIR` keeps the loaded data (a second run on the same DIR skips loading; handy for
profiling the server), `--models` / `--queries` time a subset. Not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import duckdb
from support.server import ServerProcess

DB = "rowsets"
COLUMNS = "k BIGINT NOT NULL, g INT NOT NULL, v BIGINT NOT NULL, s VARCHAR(16) NOT NULL"
DDL = {
    "dup": "CREATE TABLE {t} (" + COLUMNS + ") DUPLICATE KEY(k)",
    "agg": ("CREATE TABLE {t} (k BIGINT NOT NULL, g INT NOT NULL, v BIGINT SUM NOT NULL, "
            "s VARCHAR(16) REPLACE NOT NULL) AGGREGATE KEY(k, g)"),
    "uniq": "CREATE TABLE {t} (" + COLUMNS + ") UNIQUE KEY(k)",
}
TAIL = (' DISTRIBUTED BY HASH(k) BUCKETS 3 PROPERTIES ("replication_num" = "1", '
        '"disable_auto_compaction" = "true")')
GROUPS = 100


def row(i: int) -> tuple[int, int, int, str]:
    return (i, i % GROUPS, (i * 7919) % 100_003, f"s{i % 9973:05d}")


def values(lo: int, hi: int) -> str:
    return ",".join(f"({k}, {g}, {v}, '{s}')" for k, g, v, s in map(row, range(lo, hi)))


def queries(rows: int, loads: int) -> dict[str, str]:
    """Query name -> SQL with `{t}` for the table."""
    mid = rows // 2
    width = max(1, rows // loads)  # one load's worth of keys: ~0.1% of the table
    return {
        "full agg": "SELECT COUNT(*), SUM(v), MIN(s), MAX(k) FROM {t}",
        "key range": f"SELECT COUNT(*), SUM(v) FROM {{t}} WHERE k >= {mid} AND k < {mid + width}",
        "point": f"SELECT k, g, v, s FROM {{t}} WHERE k = {mid + 1}",
        "group by": "SELECT g, COUNT(*), SUM(v) FROM {t} GROUP BY g ORDER BY g",
    }


def load(cur: Any, table: str, rows: int, loads: int) -> float:
    """INSERT `rows` rows into `table` in `loads` statements; returns seconds."""
    t0 = time.perf_counter()
    step = -(-rows // loads)
    for lo in range(0, rows, step):
        cur.execute(f"INSERT INTO {table} VALUES {values(lo, min(rows, lo + step))}")
    return time.perf_counter() - t0


def median_ms(fn: Callable[[], object], runs: int) -> tuple[float, object]:
    result = fn()  # warm-up: page cache, numba, plan caches
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, result


def norm(rows: Any) -> list[tuple[object, ...]]:
    return sorted(tuple(int(x) if isinstance(x, (int, float)) or hasattr(x, "as_tuple")
                        else str(x) for x in r) for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--loads", type=int, default=200, help="INSERT statements of the many table")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--models", default="dup,agg,uniq")
    ap.add_argument("--queries", default="", help="only these, e.g. 'point,group by'")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="keep the server's data here (reused when it already holds the tables)")
    args = ap.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        reuse = (data_dir / "fe").exists()
        srv = ServerProcess(data_dir, backends=3)
        srv.start()
        try:
            conn = srv.connect(max_allowed_packet=1 << 30)
            cur = conn.cursor()
            if not reuse:
                cur.execute(f"CREATE DATABASE {DB}")
            cur.execute(f"USE {DB}")
            for m in models:
                if reuse:
                    continue
                for suffix, n in (("one", 1), ("many", args.loads)):
                    t = f"{m}_{suffix}"
                    cur.execute(DDL[m].format(t=t) + TAIL)
                    secs = load(cur, t, args.rows, n)
                    print(f"loaded {t}: {args.rows} rows in {n} INSERTs, {secs:.1f} s",
                          flush=True)
            duck = duckdb.connect()
            duck.execute("CREATE TABLE t (k BIGINT, g INT, v BIGINT, s VARCHAR)")
            duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                             [row(i) for i in range(args.rows)])
            print(f"\nrows={args.rows} loads={args.loads} buckets=3 runs={args.runs} "
                  f"(median ms after one warm-up)")
            print(f"{'model':<5} {'query':<10} {'one':>9} {'many':>9} {'many/one':>9} "
                  f"{'duckdb':>8}")
            for m in models:
                wanted = {q.strip() for q in args.queries.split(",") if q.strip()}
                for name, sql in queries(args.rows, args.loads).items():
                    if wanted and name not in wanted:
                        continue
                    def run(t: str, q: str = sql) -> list[tuple[object, ...]]:
                        cur.execute(q.format(t=t))
                        return norm(cur.fetchall())

                    one_ms, one_rows = median_ms(lambda t=f"{m}_one": run(t), args.runs)
                    many_ms, many_rows = median_ms(lambda t=f"{m}_many": run(t), args.runs)
                    duck_ms, duck_rows = median_ms(
                        lambda q=sql: norm(duck.execute(q.format(t="t")).fetchall()), args.runs)
                    same = one_rows == many_rows == duck_rows
                    print(f"{m:<5} {name:<10} {one_ms:9.1f} {many_ms:9.1f} "
                          f"{many_ms / one_ms:8.1f}x {duck_ms:8.1f}"
                          + ("" if same else "  RESULTS DIFFER"), flush=True)
                    if not same:
                        print(f"  one={one_rows[:3]} many={many_rows[:3]} duck={duck_rows[:3]}")
            conn.close()
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
