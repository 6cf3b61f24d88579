"""Point and low-cardinality lookups on SSB-flat over the MySQL protocol, next to DuckDB.

Issue 14's benchmark (not a test): `lineorder_flat` in Doris' SSB-flat shape (yearly range
partitions on lo_orderdate, HASH(lo_orderkey) buckets, DUPLICATE KEY(lo_orderdate,
lo_orderkey)) declared with `"bloom_filter_columns" = "lo_orderkey"` (the second key column,
so the short-key index cannot serve it) and `INDEX .. USING BITMAP` on `lo_shipmode` and
`c_city`; a copy `lineorder_flat_noidx` without the indexes shows what they change.

Data: bench/ssb.py's generator (same seed) joined into the flat shape in DuckDB. Order keys are
spread as dbgen spreads them (8 used keys in every 32), so a "missing" key lies inside the
key range and no zone map can rule it out. Both ShaleDB tables are loaded the way users load:
Stream Load (`PUT /api/{db}/{table}/_stream_load`, urllib3) of `|` separated CSV chunks,
one label per chunk, so each tablet gets one rowset (and more segments) per chunk. DuckDB gets
the same rows in a database file.

Query kinds (each with fresh random parameters per repetition, the same for all three engines;
ShaleDB with indexes, ShaleDB without, DuckDB run alternately):
- `pk_hit`  : `SELECT * .. WHERE lo_orderkey = <existing key>` (1-7 rows; bloom filter column)
- `pk_miss` : the same with a key inside the range that no order has
- `prefix`  : `SELECT * .. WHERE lo_orderdate = d AND lo_orderkey = k` (short-key prefix)
- `shipmode`: `SELECT count(*), sum(lo_revenue) .. WHERE lo_shipmode = m` (bitmap column, 1/7)
- `city_cnt`: `SELECT count(*), sum(lo_revenue) .. WHERE c_city = c` (bitmap column, 1/250)
- `city_lim`: `SELECT lo_orderkey, lo_revenue .. WHERE c_city = c ORDER BY .. LIMIT 10`
Every first result of a kind is compared with DuckDB's. Reports p50 and p99 (ms, client wall
time including the protocol round trip) per kind and engine, and writes them to bench/RESULTS.md
(the section between the `point_lookup` markers, replaced on each run).

Run: `.venv/bin/python bench/point_lookup.py [--sf 1] [--reps 200] [--chunk-rows 500000]`
(default: SF 0.1 and 100 repetitions, a quick run; the documented run is `--sf 1`).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tests", ROOT / "tests" / "tpch", ROOT / "bench"):
    sys.path.insert(0, str(_p))

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import ssb
import tpch_common as C
import urllib3
from ssb_flat_rollups import COLUMNS, FLAT_SQL
from support.server import ServerProcess

# Doris' SSB-flat kit (tools/ssb-tools/ddl/create-ssb-flat-tables.sql): yearly partitions on
# lo_orderdate, hash buckets on lo_orderkey (48 there for a cluster, 8 here for 2 cores).
PARTITIONS = """PARTITION BY RANGE(lo_orderdate) (
  PARTITION p1992 VALUES [("-2147483648"), ("19930101")),
  PARTITION p1993 VALUES [("19930101"), ("19940101")),
  PARTITION p1994 VALUES [("19940101"), ("19950101")),
  PARTITION p1995 VALUES [("19950101"), ("19960101")),
  PARTITION p1996 VALUES [("19960101"), ("19970101")),
  PARTITION p1997 VALUES [("19970101"), ("19980101")),
  PARTITION p1998 VALUES [("19980101"), ("19990101")))"""
INDEXES = """,
  INDEX idx_shipmode (lo_shipmode) USING BITMAP COMMENT 'ship mode',
  INDEX idx_c_city (c_city) USING BITMAP COMMENT 'customer city'"""


def ddl(name: str, indexed: bool) -> str:
    props = '"replication_num" = "1"'
    if indexed:
        props += ', "bloom_filter_columns" = "lo_orderkey"'
    return (f"CREATE TABLE {name} ({COLUMNS}{INDEXES if indexed else ''})\n"
            f"DUPLICATE KEY(lo_orderdate, lo_orderkey)\n{PARTITIONS}\n"
            f"DISTRIBUTED BY HASH(lo_orderkey) BUCKETS 8 PROPERTIES ({props})")


TABLES = {"lineorder_flat": True, "lineorder_flat_noidx": False}
KINDS = {
    "pk_hit": "SELECT * FROM {t} WHERE lo_orderkey = {k} ORDER BY lo_linenumber",
    "pk_miss": "SELECT * FROM {t} WHERE lo_orderkey = {k}",
    "prefix": "SELECT * FROM {t} WHERE lo_orderdate = {d} AND lo_orderkey = {k} "
              "ORDER BY lo_linenumber",
    "shipmode": "SELECT count(*), sum(lo_revenue) FROM {t} WHERE lo_shipmode = '{m}'",
    "city_cnt": "SELECT count(*), sum(lo_revenue) FROM {t} WHERE c_city = '{c}'",
    "city_lim": "SELECT lo_orderkey, lo_revenue FROM {t} WHERE c_city = '{c}' "
                "ORDER BY lo_orderkey, lo_linenumber LIMIT 10",
}


def sparse_orderkey(dense: np.ndarray) -> np.ndarray:
    """dbgen's order keys: 8 used keys at the start of every 32 (1..8, 33..40, ...)."""
    k = dense.astype(np.int64) - 1
    return (k // 8) * 32 + k % 8 + 1


def flat_table(sf: float) -> pa.Table:
    data = ssb.generate(sf, ssb.SEED)
    lo = data["lineorder"]
    i = lo.schema.get_field_index("lo_orderkey")
    data["lineorder"] = lo.set_column(
        i, "lo_orderkey", pa.array(sparse_orderkey(lo.column(i).to_numpy())))
    duck = duckdb.connect()
    ssb.load_duckdb(duck, data)
    return duck.sql(FLAT_SQL).to_arrow_table()


def csv_chunks(flat: pa.Table, rows: int) -> list[bytes]:
    out = []
    for start in range(0, flat.num_rows, rows):
        buf = io.BytesIO()
        pacsv.write_csv(flat.slice(start, rows), buf, pacsv.WriteOptions(
            include_header=False, delimiter="|", quoting_style="none"))
        out.append(buf.getvalue())
    return out


def stream_load(http: urllib3.PoolManager, port: int, table: str, label: str, body: bytes) -> dict:
    auth = base64.b64encode(b"root:").decode()
    r = http.request("PUT", f"http://127.0.0.1:{port}/api/bench/{table}/_stream_load", body=body,
                     headers={"Authorization": f"Basic {auth}", "Expect": "100-continue",
                              "label": label, "column_separator": "|", "format": "csv"},
                     timeout=urllib3.Timeout(connect=10, read=1800))
    res = json.loads(r.data)
    if res.get("Status") != "Success":
        raise RuntimeError(f"stream load {label}: {res}")
    return res


class Params:
    """Random parameters per query kind, drawn from the data (the same for every engine)."""

    def __init__(self, flat: pa.Table, seed: int) -> None:
        self.rng = random.Random(seed)
        sample = flat.select(["lo_orderdate", "lo_orderkey"]).take(
            np.random.default_rng(seed).integers(0, flat.num_rows, 5000))
        self.pairs = list(zip(sample.column(0).to_pylist(), sample.column(1).to_pylist()))
        self.max_key = int(flat.column("lo_orderkey").to_numpy().max())
        self.modes = sorted(set(flat.column("lo_shipmode").unique().to_pylist()))
        self.cities = sorted(set(flat.column("c_city").unique().to_pylist()))

    def draw(self, kind: str) -> dict:
        d, k = self.rng.choice(self.pairs)
        # Unused keys: offsets 8..31 within a block of 32 (see sparse_orderkey).
        miss = self.rng.randrange(0, self.max_key // 32) * 32 + self.rng.randrange(9, 33)
        return {"d": d, "k": miss if kind == "pk_miss" else k,
                "m": self.rng.choice(self.modes), "c": self.rng.choice(self.cities)}


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--reps", type=int, default=100, help="repetitions per query kind")
    ap.add_argument("--chunk-rows", type=int, default=500_000, help="rows per Stream Load")
    ap.add_argument("--backends", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()

    t0 = time.perf_counter()
    flat = flat_table(args.sf)
    chunks = csv_chunks(flat, args.chunk_rows)
    csv_mb = sum(len(c) for c in chunks) / 2**20
    print(f"lineorder_flat: {flat.num_rows:,} rows, {len(chunks)} CSV chunks ({csv_mb:,.0f} MB), "
          f"generated in {time.perf_counter() - t0:.0f} s", flush=True)
    params = Params(flat, ssb.SEED)
    results: dict[tuple[str, str], list[float]] = {}
    notes: list[str] = []
    load_s: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="point-lookup-") as tmp:
        duck_path = Path(tmp) / "flat.duckdb"
        duck = duckdb.connect(str(duck_path))
        duck.register("_flat", flat)
        duck.execute("CREATE TABLE lineorder_flat AS SELECT * FROM _flat")
        duck.unregister("_flat")
        duck.execute("CHECKPOINT")
        del flat
        srv = ServerProcess(Path(tmp) / "data", backends=args.backends).start()
        try:
            conn = srv.connect(read_timeout=600)
            cur = conn.cursor()
            cur.execute("CREATE DATABASE bench")
            cur.execute("USE bench")
            http = urllib3.PoolManager()
            for table, indexed in TABLES.items():
                cur.execute(ddl(table, indexed))
                t0 = time.perf_counter()
                for i, body in enumerate(chunks):
                    stream_load(http, srv.http_port, table, f"{table}_{i}", body)
                load_s[table] = time.perf_counter() - t0
                print(f"loaded {table} in {load_s[table]:.1f} s", flush=True)
            del chunks
            cur.execute("SHOW TABLETS FROM lineorder_flat")
            tablets = len(cur.fetchall())
            engines = [(t, cur) for t in TABLES] + [("duckdb", duck)]
            for kind, template in KINDS.items():
                for rep in range(args.reps + 1):  # rep 0: warm-up, checked against DuckDB
                    p = params.draw(kind)
                    order = engines if rep % 2 else engines[::-1]
                    got = {}
                    for name, c in order:
                        sql = template.format(t="lineorder_flat" if name == "duckdb" else name,
                                              **p)
                        s = time.perf_counter()
                        c.execute(sql)
                        rows = c.fetchall()
                        e = time.perf_counter() - s
                        if rep:
                            results.setdefault((kind, name), []).append(e)
                        got[name] = rows
                    if rep == 0:
                        for name in TABLES:
                            diff = C.compare(C.normalize_py(list(got[name])),
                                             C.normalize_py(list(got["duckdb"])), True)
                            if diff is not None:
                                notes.append(f"{kind} on {name} differs from DuckDB: {diff[:120]}")
                line = "  ".join(f"{n} p50 {pct(results[(kind, n)], 50):6.2f} "
                                 f"p99 {pct(results[(kind, n)], 99):7.2f}" for n, _ in engines)
                print(f"{kind:<9} {line}", flush=True)
        finally:
            srv.stop()
    for n in notes:
        print("MISMATCH:", n)
    if not args.no_write:
        write_results(args, results, load_s, tablets, csv_mb, notes)


def write_results(args: argparse.Namespace, results: dict, load_s: dict, tablets: int,
                  csv_mb: float, notes: list[str]) -> None:
    rows = int(6_000_000 * args.sf)
    lines = [
        f"# Point lookups on SSB-flat SF {args.sf:g} (`bench/point_lookup.py`)", "",
        (f"About {rows:,} rows of `lineorder_flat` ({csv_mb:,.0f} MB of CSV) loaded by Stream "
         f"Load in chunks of {args.chunk_rows:,} rows ({load_s['lineorder_flat']:.0f} s with "
         f"indexes declared, {load_s['lineorder_flat_noidx']:.0f} s without); {tablets} tablets "
         f"(7 yearly partitions x 8 buckets), {args.backends} embedded backends. "
         f"{args.reps} repetitions per kind with random parameters, the three engines run "
         f"alternately; client wall time over the MySQL protocol (pymysql), DuckDB "
         f"{duckdb.__version__} in-process on a database file. Machine: {os.cpu_count()} cores "
         f"({platform.machine()}, {platform.python_implementation()} "
         f"{platform.python_version()}), shared with other engineers' work. "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."),
        "",
        ("| kind | indexed p50 | indexed p99 | no index p50 | no index p99 | DuckDB p50 | "
         "DuckDB p99 | indexed p50 / DuckDB p50 |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind in KINDS:
        i, n, d = (results[(kind, e)] for e in (*TABLES, "duckdb"))
        lines.append(f"| {kind} | {pct(i, 50):.2f} | {pct(i, 99):.2f} | {pct(n, 50):.2f} | "
                     f"{pct(n, 99):.2f} | {pct(d, 50):.2f} | {pct(d, 99):.2f} | "
                     f"{pct(i, 50) / pct(d, 50):.1f}x |")
    lines += ["", "Milliseconds. Queries:", ""]
    lines += [f"- `{k}`: `{v.format(t='lineorder_flat', d='<date>', k='<key>', m='<mode>', c='<city>')}`"
              for k, v in KINDS.items()]
    lines += ["", "Results equal DuckDB's." if not notes else "Mismatches: " + "; ".join(notes)]
    section = f"{MARK_BEGIN}\n" + "\n".join(lines) + f"\n{MARK_END}\n"
    text = args.out.read_text() if args.out.exists() else ""
    if MARK_BEGIN in text and MARK_END in text:
        head, rest = text.split(MARK_BEGIN, 1)
        text = head + section + rest.split(MARK_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    args.out.write_text(text)
    print(f"wrote {args.out}")


MARK_BEGIN = "<!-- point_lookup: written by bench/point_lookup.py -->"
MARK_END = "<!-- /point_lookup -->"


if __name__ == "__main__":
    main()
