"""Segment writer CPU: one realistic segment of each write-heavy table, per column, in process.

Two tables (docs/performance.md, "Segment writer CPU"):
- `lineorder`: one SF 1 tablet's rows of SSB lineorder (17 columns, ints and two strings),
  sorted by DUPLICATE KEY(lo_orderdate, lo_orderkey); the rows of one yearly partition's hash
  bucket are approximated by `lo_orderkey % 8 == 0` of one year (~107k rows at SF 1) read from
  bench/stream_load.py's parquet file (`--parquet`).
- `spark`: bench/spark_io.py's table (id BIGINT, name VARCHAR(32) all distinct, amount DOUBLE,
  qty INT, day DATE), a 125k-row segment sorted by id.

For each, the thread CPU time of `write_segment` (best of `--repeat`) and of each column's data
pages (`_ColumnPages.add`, zone map and framing included). `--profile N` instead loops
write_segment N times (for py-spy). Not a test: prints numbers, asserts nothing.

Run: `.venv/bin/python bench/segment_write.py --parquet /tmp/load13-ssb/lineorder_sf1.parquet`.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage import types as T
from storage.batch import Batch, Column
from storage.indexes.spec import NO_INDEXES
from storage.segment import writer

LINEORDER = (("lo_orderdate", "INT"), ("lo_orderkey", "INT"), ("lo_linenumber", "INT"),
             ("lo_custkey", "INT"), ("lo_partkey", "INT"), ("lo_suppkey", "INT"),
             ("lo_orderpriority", "VARCHAR(16)"), ("lo_shippriority", "INT"),
             ("lo_quantity", "INT"), ("lo_extendedprice", "INT"), ("lo_ordtotalprice", "INT"),
             ("lo_discount", "INT"), ("lo_revenue", "INT"), ("lo_supplycost", "INT"),
             ("lo_tax", "INT"), ("lo_commitdate", "INT"), ("lo_shipmode", "VARCHAR(11)"))


def lineorder_batch(parquet: Path, year: int = 1994) -> Batch:
    t = pq.read_table(parquet, columns=[n for n, _ in LINEORDER])
    od = t.column("lo_orderdate")
    keep = pc.and_(pc.and_(pc.greater_equal(od, year * 10000), pc.less(od, (year + 1) * 10000)),
                   pc.equal(pc.bit_wise_and(t.column("lo_orderkey").cast(pa.int64()), 7), 0))
    t = t.filter(keep)
    t = t.take(pc.sort_indices(t, [("lo_orderdate", "ascending"),
                                   ("lo_orderkey", "ascending")]))
    types = [T.parse_type(s) for _, s in LINEORDER]
    return Batch.from_arrow(t.combine_chunks(), types)


def spark_batch(rows: int = 125_000, start: int = 0) -> Batch:
    ids = np.arange(start, start + rows, dtype=np.int64)
    names = pa.array([f"name_{i}" for i in ids.tolist()], pa.large_string())
    types = [T.parse_type(s) for s in ("BIGINT", "VARCHAR(32)", "DOUBLE", "INT", "DATE")]
    cols = (Column(types[0], ids), Column.from_arrow(types[1], names),
            Column(types[2], ids.astype(np.float64) / 8),
            Column(types[3], (ids % 1000).astype(np.int32)),
            Column(types[4], (18262 + ids % 1500).astype(types[4].numpy_dtype)))
    return Batch(("id", "name", "amount", "qty", "day"), cols)


def cpu_best(repeat: int, fn) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best


def column_pages(name: str, col: Column) -> None:
    pages = writer._ColumnPages(name, col.type, NO_INDEXES)
    pages.add(col, writer._Output(io.BytesIO()), final=True)
    pages.zones.finish()


def report(label: str, batch: Batch, keys: list[str], repeat: int, tmp: Path) -> None:
    path = tmp / f"{label}.seg"
    whole = cpu_best(repeat, lambda: writer.write_segment(path, batch, keys, len(keys)))
    print(f"{label}: {batch.num_rows} rows, write_segment {whole * 1e3:.2f} ms CPU, "
          f"{path.stat().st_size / 1e6:.2f} MB")
    for name, col in zip(batch.names, batch.columns, strict=True):
        ms = cpu_best(repeat, lambda n=name, c=col: column_pages(n, c)) * 1e3
        print(f"  {name:18s} {ms:7.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parquet", type=Path,
                    default=Path("/tmp/load13-ssb/lineorder_sf1.parquet"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0, help="loop write_segment N times")
    args = ap.parse_args()
    tables = [("lineorder", lineorder_batch(args.parquet), ["lo_orderdate", "lo_orderkey"]),
              ("spark", spark_batch(), ["id"])]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for label, batch, keys in tables:  # compile / warm the numba caches
            writer.write_segment(tmp / f"{label}.seg", batch, keys, len(keys))
        if args.profile:
            for _ in range(args.profile):
                for label, batch, keys in tables:
                    writer.write_segment(tmp / f"{label}.seg", batch, keys, len(keys))
            return
        for label, batch, keys in tables:
            report(label, batch, keys, args.repeat, tmp)


if __name__ == "__main__":
    main()
