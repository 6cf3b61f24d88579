"""Segment scan benchmark: SUM(int64) via SegmentReader vs numpy in memory, file size vs Parquet.

Generates N rows of (k BIGINT sorted key, v BIGINT random), writes them as v1 segments (one per
`--segment-rows` rows, like a rowset), then reports
- write throughput;
- full scan: SUM(v) through `SegmentReader.read(["v"])` (rows/s) vs `numpy.sum` over the same
  array in memory (the ratio is how much slower decoding from disk is than the ideal);
- a key-range scan (k between two values, ~1% of rows) through the short-key index;
- on-disk size vs pyarrow Parquet (LZ4 compression) of the same two columns.

Run: `.venv/bin/python bench/segment_scan.py --rows 2000000`. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage import types as T  # noqa: E402
from storage.batch import Batch, Column  # noqa: E402
from storage.predicates import ColumnPredicate  # noqa: E402
from storage.scan_stats import ScanStats  # noqa: E402
from storage.segment import SegmentReader, write_segment  # noqa: E402


def best_of(repeat: int, fn):  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--segment-rows", type=int, default=1 << 20)
    ap.add_argument("--value-bits", type=int, default=32, help="v is uniform in [0, 2**bits)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()

    rng = np.random.default_rng(7)
    n = args.rows
    k = np.cumsum(rng.integers(1, 5, n)).astype(np.int64)  # sorted, gaps of 1..4
    v = (
        rng.integers(0, 2**args.value_bits, n, dtype=np.int64)
        if args.value_bits < 64
        else rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    )

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        root = Path(d)
        paths = []
        t0 = time.perf_counter()
        for i, start in enumerate(range(0, n, args.segment_rows)):
            stop = min(n, start + args.segment_rows)
            batch = Batch(
                ("k", "v"), (Column(T.BIGINT, k[start:stop]), Column(T.BIGINT, v[start:stop]))
            )
            path = root / f"seg_{i}.seg"
            write_segment(path, batch, ["k"], 1)
            paths.append(path)
        write_s = time.perf_counter() - t0
        seg_bytes = sum(p.stat().st_size for p in paths)
        types = {"k": T.BIGINT, "v": T.BIGINT}

        def scan_sum(preds: list[ColumnPredicate], stats: ScanStats) -> int:
            total = 0
            for p in paths:
                with SegmentReader(p, types) as r:
                    for b in r.read(["v"], preds, stats=stats):
                        total += int(b.columns[0].data.sum())
            return total

        scan_sum([], ScanStats())  # warm up: numba cache, page cache of the OS
        full_s, total = best_of(args.repeat, lambda: scan_sum([], ScanStats()))
        numpy_s, np_total = best_of(args.repeat, lambda: int(v.sum()))
        assert (total - np_total) % 2**64 == 0, (total, np_total)  # int64 sums wrap

        lo, hi = int(k[n // 2]), int(k[n // 2 + n // 100])
        preds = [ColumnPredicate("k", ">=", (lo,)), ColumnPredicate("k", "<", (hi,))]
        range_stats = ScanStats()
        range_s, range_total = best_of(args.repeat, lambda: scan_sum(preds, ScanStats()))
        scan_sum(preds, range_stats)
        sel = (k >= lo) & (k < hi)
        assert (range_total - int(v[sel].sum())) % 2**64 == 0

        pq_path = root / "same.parquet"
        pq.write_table(pa.table({"k": k, "v": v}), pq_path, compression="lz4")
        pq_bytes = pq_path.stat().st_size

    rows = [
        ("rows", f"{n:,}", f"{len(paths)} segments"),
        ("write", f"{n / write_s / 1e6:,.1f} M rows/s", f"{write_s:.2f} s"),
        ("SUM(v) via SegmentReader", f"{n / full_s / 1e6:,.1f} M rows/s", f"{full_s * 1e3:.1f} ms"),
        ("SUM(v) numpy in memory", f"{n / numpy_s / 1e6:,.1f} M rows/s", f"{numpy_s * 1e3:.1f} ms"),
        ("  ratio reader / numpy", f"{full_s / numpy_s:,.1f}x slower", ""),
        (
            "k range (1% rows) via short key",
            f"{range_s * 1e3:.1f} ms",
            f"{range_stats.rows_returned:,} rows, {range_stats.pages_read} pages read",
        ),
        ("segment files", f"{seg_bytes / 2**20:,.2f} MiB", f"{seg_bytes / n:.2f} B/row"),
        ("parquet (lz4)", f"{pq_bytes / 2**20:,.2f} MiB", f"{pq_bytes / n:.2f} B/row"),
        ("  ratio segment / parquet", f"{seg_bytes / pq_bytes:.2f}", ""),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(f"segment_scan: k sorted int64, v uniform {args.value_bits}-bit int64")
    for a, b, c in rows:
        print(f"  {a:<{w0}}  {b:>{w1}}  {c}")


if __name__ == "__main__":
    main()
