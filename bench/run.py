"""One command per benchmark; each appends a dated table to bench/RESULTS.md (with the machine's
load) and calls out regressions of more than 10% against the previous run of the same suite and
settings at the top of that file.

    .venv/bin/python bench/run.py ssb        [--sf 1] [--load stream|insert] [--runs 5]
    .venv/bin/python bench/run.py ssb-flat   [--sf 1] [--rollups]
    .venv/bin/python bench/run.py tpch       [--sf 1]
    .venv/bin/python bench/run.py concurrency [--sf 1] [--clients 8] [--seconds 60]
    .venv/bin/python bench/run.py fixed-cost [--iterations 2000]
    .venv/bin/python bench/run.py profile    [--sf 0.1] [--seconds 20]   (py-spy, text summary)

`--results PATH` writes elsewhere (the smoke test does). Data is loaded as users load it: Stream
Load over HTTP in chunks (or `--load insert`); query timings are taken right after the load and
again once background compaction has settled; DuckDB runs on a database file with the same
data, query by query in the same run, and every query must return identical rows (a mismatch
fails the run). Exit status 0 also with regressions (they are reported); non-zero on a mismatch
or an error. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tests", ROOT / "tests" / "tpch", ROOT / "bench"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from harness import compare, concurrency, datasets, fixed_cost, profile, suites  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="bench", required=True)
    for name in ("ssb", "ssb-flat", "tpch"):
        p = sub.add_parser(name)
        suites.add_arguments(p, sf=1.0)
        if name == "ssb-flat":
            p.add_argument("--rollups", action="store_true",
                           help="also load lineorder_flat with one sync materialized view "
                                "per query group")
    concurrency.add_arguments(sub.add_parser("concurrency"))
    fixed_cost.add_arguments(sub.add_parser("fixed-cost"))
    for p in list(sub.choices.values()):
        p.add_argument("--results", type=Path, default=RESULTS)
    profile.add_arguments(sub.add_parser("profile"))
    args = ap.parse_args(argv)

    if args.bench == "ssb":
        variants = [suites.Variant("base", datasets.ssb(args.sf))]
        suites.run(args, variants, args.results)
    elif args.bench == "ssb-flat":
        flat = datasets.ssb_flat(args.sf)
        variants = [suites.Variant("base", flat)]
        if args.rollups:
            variants.append(suites.Variant("rollups", datasets.with_rollups(flat)))
        suites.run(args, variants, args.results, {"rollups": args.rollups})
    elif args.bench == "tpch":
        with tempfile.TemporaryDirectory(prefix="bench-tpch-gen-") as gen:
            variants = [suites.Variant("base", datasets.tpch(args.sf, Path(gen)))]
        suites.run(args, variants, args.results)
    elif args.bench == "concurrency":
        concurrency.run(args, args.results)
    elif args.bench == "fixed-cost":
        fixed_cost.run(args, args.results)
    else:
        profile.run(args)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except compare.ResultMismatch as e:  # the benchmark is void: say so, write no table
        print(f"RESULT MISMATCH, no results written: {e}", file=sys.stderr)
        sys.exit(2)
