"""Compaction under many small loads (issue 11): version counts, throughput, query latency.

Starts a ShaleDB server (default conf: background compaction on) on a temporary data dir and
feeds `events (id BIGINT, user_id INT, kind VARCHAR(16), amount DECIMAL(12, 2), day DATE)`,
DUPLICATE KEY(id), 3 buckets, with `--loads` small INSERT statements of `--rows-per-load` rows
each from `--clients` pymysql connections, as an application logging events would (group commit
off: every statement is its own load and version). Reports
- the max version count per tablet (SHOW TABLETS VersionCount) sampled while loading, and its
  steady state (the median of the samples of the second half);
- compaction throughput: rows merged per second of compaction work (/metrics
  `shaledb_compaction_rows_total` / `shaledb_compaction_seconds_total`);
- query latency (median of `--repeat` after a warm-up, over the MySQL protocol) right after the
  last load, after the background compaction settled, and after ADMIN COMPACT .. 'FULL', next to
  `events_once`: the same rows loaded in ONE statement (INSERT .. SELECT), and DuckDB on a
  database file with the same rows.
Targets: steady-state version count per tablet <= 50; settled latency within 1.2x of
`events_once`. Run: `.venv/bin/python bench/compaction.py [--loads 10000]`. Not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support.server import ServerProcess  # noqa: E402

DDL = ("CREATE TABLE {t} (id BIGINT, user_id INT, kind VARCHAR(16), amount DECIMAL(12, 2), "
       "day DATE) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3")
KINDS = ("view", "click", "cart", "buy", "refund")
QUERIES = {
    "count": "SELECT count(*) FROM {t}",
    "sum by kind": "SELECT kind, count(*), sum(amount) FROM {t} GROUP BY kind ORDER BY kind",
    "range": "SELECT count(*), max(amount) FROM {t} WHERE id BETWEEN 1000 AND 1999",
    "point": "SELECT * FROM {t} WHERE id = 4242",
    "top users": "SELECT user_id, sum(amount) s FROM {t} GROUP BY user_id ORDER BY s DESC "
                 "LIMIT 10",
}


def row(i: int) -> tuple:
    day = dt.date(2024, 1, 1) + dt.timedelta(days=i % 365)
    return (i, i * 7919 % 5000, KINDS[i % 5], f"{i % 10000}.{i % 100:02d}", day.isoformat())


def insert_sql(table: str, rows: list[tuple]) -> str:
    body = ",".join(f"({a}, {b}, '{c}', {d}, '{e}')" for a, b, c, d, e in rows)
    return f"INSERT INTO {table} VALUES {body}"


def version_counts(cur, table: str) -> list[int]:
    cur.execute(f"SHOW TABLETS FROM {table}")
    names = [d[0] for d in cur.description]
    return [int(r[names.index("VersionCount")]) for r in cur.fetchall()]


def metric(http_port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics").read().decode()
    return sum(float(m.group(1)) for m in re.finditer(
        rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+-]+)$", text, re.M))


def compaction_idle(http_port: int) -> bool:
    # root with its empty password: every HTTP route but /metrics takes basic auth
    req = urllib.request.Request(f"http://127.0.0.1:{http_port}/api/compaction/run_status",
                                 headers={"Authorization": "Basic cm9vdDo="})
    body = json.loads(urllib.request.urlopen(req).read())
    running = [t for k, dirs in body.items() if isinstance(dirs, dict)
               for ts in dirs.values() for t in ts]
    return not running


def settle(cur, http_port: int, table: str, quiet: float, timeout: float = 600) -> float:
    """Wait until no compaction runs and the version counts stopped moving for longer than the
    quiet-tablet delay (cumulative_compaction_quiet_seconds); seconds waited."""
    t0 = time.perf_counter()
    last, stable_since = None, time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        counts = version_counts(cur, table)
        if counts != last or not compaction_idle(http_port):
            last, stable_since = counts, time.perf_counter()
        elif time.perf_counter() - stable_since > quiet:
            break
        time.sleep(0.2)
    return time.perf_counter() - t0


def latency(cur, sql: str, repeat: int) -> float:
    cur.execute(sql)
    cur.fetchall()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        cur.execute(sql)
        cur.fetchall()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def duck_latency(path: Path, rows: list[tuple], repeat: int) -> dict[str, float]:
    import duckdb  # noqa: PLC0415

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE events (id BIGINT, user_id INTEGER, kind VARCHAR, "
                "amount DECIMAL(12, 2), day DATE)")
    import pyarrow as pa  # noqa: PLC0415 - executemany takes minutes for 1M rows

    cols = list(zip(*rows))
    arrow = pa.table({"id": pa.array(cols[0], pa.int64()), "user_id": pa.array(cols[1], pa.int32()),
                      "kind": pa.array(cols[2]), "amount": pa.array(cols[3]),
                      "day": pa.array(cols[4])})
    con.register("arrow_rows", arrow)
    con.execute("INSERT INTO events SELECT id, user_id, kind, CAST(amount AS DECIMAL(12, 2)), "
                "CAST(day AS DATE) FROM arrow_rows")
    out = {}
    for name, q in QUERIES.items():
        sql = q.format(t="events")
        con.execute(sql).fetchall()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            con.execute(sql).fetchall()
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times) * 1000
    con.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loads", type=int, default=10000)
    ap.add_argument("--rows-per-load", type=int, default=100)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quiet", type=float, default=32.0,
                    help="seconds of unchanged version counts that count as settled (just "
                         "over the default cumulative_compaction_quiet_seconds)")
    args = ap.parse_args()
    rows = [row(i) for i in range(args.loads * args.rows_per_load)]
    loads = [rows[i:i + args.rows_per_load] for i in range(0, len(rows), args.rows_per_load)]
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(Path(tmp) / "data") as srv:
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE bench")
        cur.execute("USE bench")
        cur.execute(DDL.format(t="events"))
        cur.execute(DDL.format(t="events_once"))
        done = [0]
        errors: list[BaseException] = []

        def client(mine: list[list[tuple]]) -> None:
            c = srv.connect("bench")
            try:
                with c.cursor() as k:
                    k.execute("SET group_commit = 'off_mode'")
                    for batch in mine:
                        k.execute(insert_sql("events", batch))
                        done[0] += 1
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
            finally:
                c.close()

        t0 = time.perf_counter()
        threads = [threading.Thread(target=client, args=(loads[i::args.clients],))
                   for i in range(args.clients)]
        for t in threads:
            t.start()
        samples: list[tuple[float, int, int]] = []  # (seconds, loads done, max versions)
        while any(t.is_alive() for t in threads):
            samples.append((time.perf_counter() - t0, done[0], max(version_counts(cur, "events"))))
            threads[0].join(timeout=1.0)
        for t in threads:
            t.join()
        load_s = time.perf_counter() - t0
        if errors:
            raise SystemExit(f"load failed: {errors[0]!r}")
        print(f"{args.loads} loads x {args.rows_per_load} rows from {args.clients} clients: "
              f"{load_s:.1f} s ({args.loads / load_s:.0f} loads/s)")
        print("version count while loading (s, loads, max per tablet):")
        for s, n, v in samples[:: max(1, len(samples) // 20)]:
            print(f"  {s:7.1f} {n:6d} {v:5d}")
        second_half = [v for _, n, v in samples if n >= args.loads // 2] or [samples[-1][2]]
        print(f"max version count {max(v for _, _, v in samples)}, steady state (median of the "
              f"second half) {statistics.median(second_half):.0f}")
        cur.execute("INSERT INTO events_once SELECT * FROM events")
        right_after = {n: latency(cur, q.format(t="events"), args.repeat)
                       for n, q in QUERIES.items()}
        after_counts = version_counts(cur, "events")
        waited = settle(cur, srv.http_port, "events", args.quiet)
        settled_counts = version_counts(cur, "events")
        settled = {n: latency(cur, q.format(t="events"), args.repeat) for n, q in QUERIES.items()}
        cur.execute("ADMIN COMPACT TABLE events WHERE type = 'FULL'")
        settle(cur, srv.http_port, "events", 2.0)
        full = {n: latency(cur, q.format(t="events"), args.repeat) for n, q in QUERIES.items()}
        once = {n: latency(cur, q.format(t="events_once"), args.repeat) for n, q in QUERIES.items()}
        rows_merged = metric(srv.http_port, "shaledb_compaction_rows_total")
        seconds = metric(srv.http_port, "shaledb_compaction_seconds_total")
        print(f"compaction: {rows_merged:.0f} rows merged in {seconds:.1f} s of compaction work "
              f"({rows_merged / max(seconds, 1e-9):,.0f} rows/s)")
        print(f"versions per tablet: right after the load {after_counts}, settled after "
              f"{waited:.1f} s {settled_counts}, after FULL {version_counts(cur, 'events')}")
        duck = duck_latency(Path(tmp) / "duck.db", rows, args.repeat)
        print("\n| query | right after load | settled | after FULL | loaded once | DuckDB | "
              "settled / once |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for n in QUERIES:
            print(f"| {n} | {right_after[n]:.1f} ms | {settled[n]:.1f} ms | {full[n]:.1f} ms | "
                  f"{once[n]:.1f} ms | {duck[n]:.1f} ms | {settled[n] / once[n]:.2f}x |")
        geo = statistics.geometric_mean([settled[n] / once[n] for n in QUERIES])
        print(f"geometric mean settled / once: {geo:.2f}x")
        conn.close()


if __name__ == "__main__":
    main()
