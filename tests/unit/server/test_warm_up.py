"""`shaledb warm-up` (server/warm_up.py) fills numba's on-disk cache with the load path's
kernels: after it, a load of another table shape (SSB lineorder's, as the Stream Load benchmark
creates it) in a fresh process compiles nothing, every kernel it calls comes from the cache.
Both steps run in subprocesses with their own NUMBA_CACHE_DIR, so the test starts cold whatever
the checkout's caches hold."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

LOAD_LINEORDER = textwrap.dedent('''
    import io, sys, tempfile
    from pathlib import Path
    import numpy as np, pyarrow as pa, pyarrow.csv as pacsv
    from numba.core.registry import CPUDispatcher
    from executor.load.job import run_load
    from executor.load.spec import spec_from_properties
    from sql.ddl import ddl_ops, specs
    from sql.ddl.create_table import analyze_create_table
    from sql.parser.dialect import parse_one
    from storage.catalog import service as catalog_service
    from storage.engine import StorageEngine

    INTS = ["lo_orderdate", "lo_orderkey", "lo_linenumber", "lo_custkey", "lo_partkey",
            "lo_suppkey", "lo_shippriority", "lo_quantity", "lo_extendedprice",
            "lo_ordtotalprice", "lo_discount", "lo_revenue", "lo_supplycost", "lo_tax",
            "lo_commitdate"]
    ORDER = INTS[:6] + ["lo_orderpriority"] + INTS[6:] + ["lo_shipmode"]
    ddl = ("CREATE TABLE lo (" + ", ".join(
        f"{c} VARCHAR(16) NOT NULL" if c in ("lo_orderpriority", "lo_shipmode")
        else f"{c} INT NOT NULL" for c in ORDER) + ") DUPLICATE KEY(lo_orderdate, lo_orderkey) "
        "PARTITION BY RANGE(lo_orderdate) (PARTITION p1 VALUES [(\\"-2147483648\\"), "
        "(\\"19950101\\")), PARTITION p2 VALUES [(\\"19950101\\"), (\\"19990101\\"))) "
        "DISTRIBUTED BY HASH(lo_orderkey) BUCKETS 2")
    rng = np.random.default_rng(1)
    n = 150_000
    cols = {c: pa.array(rng.integers(1, 10**6, n).astype("int32")) for c in INTS}
    cols["lo_orderdate"] = pa.array(rng.integers(19920101, 19981231, n).astype("int32"))
    words = pa.array(["1-URGENT", "2-HIGH", "5-LOW", "TRUCK", "MAIL", "REG AIR"])
    cols["lo_orderpriority"] = words.take(pa.array(rng.integers(0, 3, n)))
    cols["lo_shipmode"] = words.take(pa.array(rng.integers(3, 6, n)))
    out = io.BytesIO()
    pacsv.write_csv(pa.table({c: cols[c] for c in ORDER}), out,
                    pacsv.WriteOptions(include_header=False, delimiter="|"))
    with tempfile.TemporaryDirectory() as tmp:
        engine = StorageEngine(Path(tmp), backends=1)
        catalog_service.create_database(engine, "db", False)
        ddl_ops.create_table(engine, "db", analyze_create_table(
            specs.describe_create_table(parse_one(ddl)), 1))
        table = engine.catalog.get_table("db", "lo")
        spec = spec_from_properties(engine.catalog, "db", table, {"column_separator": "|"})
        stats = run_load(engine, spec, io.BytesIO(out.getvalue()))
        assert stats.loaded_rows == n, stats
    missed = sorted(
        f"{m}.{name}" for m, mod in list(sys.modules.items())
        if m.split(".")[0] in ("storage", "executor")
        for name, obj in list(vars(mod).items())
        if isinstance(obj, CPUDispatcher) and obj.stats.cache_misses)
    hits = sum(len(obj.stats.cache_hits) for m, mod in list(sys.modules.items())
               if m.split(".")[0] in ("storage", "executor")
               for obj in list(vars(mod).values()) if isinstance(obj, CPUDispatcher))
    print("MISSED", missed)
    print("HITS", hits)
''')


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def test_after_warm_up_a_lineorder_load_compiles_no_kernel(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    warm = _run(["-m", "server", "warm-up"], cache)
    assert warm.returncode == 0, warm.stderr
    assert "shaledb warm-up: load kernels compiled and cached" in warm.stderr
    assert any(cache.rglob("*.nbi"))  # numba's cache index files
    load = _run(["-c", LOAD_LINEORDER], cache)
    assert load.returncode == 0, load.stderr
    lines = dict(line.split(" ", 1) for line in load.stdout.splitlines() if " " in line)
    assert lines["MISSED"] == "[]", lines["MISSED"]
    assert int(lines["HITS"]) >= 5  # the load really ran numba kernels, from the cache


def test_without_warm_up_the_same_load_compiles(tmp_path: Path) -> None:
    """The check above can fail: a cold cache shows the compiled kernels as misses."""
    load = _run(["-c", LOAD_LINEORDER], tmp_path / "cold-cache")
    assert load.returncode == 0, load.stderr
    missed = next(line for line in load.stdout.splitlines() if line.startswith("MISSED"))
    assert missed != "MISSED []"
