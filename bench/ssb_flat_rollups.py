"""SSB-flat with and without rollups: the 13 flat queries on `lineorder_flat` in ShaleDB
(base index only, and with rollups designed for the queries) and in DuckDB.

Data: bench/ssb.py's numpy generator (same seed), joined into Doris' `lineorder_flat` shape in
DuckDB. ShaleDB gets two databases on one data dir, loaded through the storage API: `flat_base`
(DUPLICATE KEY(lo_orderdate, lo_orderkey), no rollups) and `flat_rollup` (the same table with the
DUPLICATE rollups below, which reorder columns so each query group's equality filters lead the
prefix index: seed 004 "ROLLUP adjusts the prefix index"; Q1.x filter on lo_orderdate, which
already leads the base index, so they get no rollup). Each query runs `--runs` times after a
warm-up on both databases and in DuckDB; results are compared with DuckDB, and the chosen index
of the rollup run is read from the query profile (`VOlapScanNode` facts). Writes
bench/RESULTS_SSB_FLAT.md. Run: `.venv/bin/python bench/ssb_flat_rollups.py [--sf 0.1]`.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tests", ROOT / "tests" / "tpch", ROOT / "bench"):
    sys.path.insert(0, str(_p))

import duckdb
import ssb
import tpch_common as C
from support.server import ServerProcess

from executor.derived_columns import install as install_derived_columns
from storage.batch import Batch
from storage.engine import StorageEngine

COLUMNS = """lo_orderdate INT NOT NULL, lo_orderkey INT NOT NULL, lo_linenumber INT NOT NULL,
  lo_custkey INT NOT NULL, lo_partkey INT NOT NULL, lo_suppkey INT NOT NULL,
  lo_orderpriority VARCHAR(16) NOT NULL, lo_shippriority INT NOT NULL,
  lo_quantity INT NOT NULL, lo_extendedprice INT NOT NULL, lo_ordtotalprice INT NOT NULL,
  lo_discount INT NOT NULL, lo_revenue INT NOT NULL, lo_supplycost INT NOT NULL,
  lo_tax INT NOT NULL, lo_commitdate INT NOT NULL, lo_shipmode VARCHAR(11) NOT NULL,
  c_city VARCHAR(11) NOT NULL, c_nation VARCHAR(16) NOT NULL, c_region VARCHAR(13) NOT NULL,
  s_city VARCHAR(11) NOT NULL, s_nation VARCHAR(16) NOT NULL, s_region VARCHAR(13) NOT NULL,
  p_mfgr VARCHAR(7) NOT NULL, p_category VARCHAR(8) NOT NULL, p_brand VARCHAR(10) NOT NULL"""
BASE_DDL = f"""CREATE TABLE lineorder_flat ({COLUMNS})
DUPLICATE KEY(lo_orderdate, lo_orderkey) DISTRIBUTED BY HASH(lo_orderkey) BUCKETS 8"""
# The sync materialized views a Doris user creates for the query groups (CREATE MATERIALIZED
# VIEW on the DUPLICATE table): each group's filter columns and group keys as the view's keys
# (filters leading the prefix index), its aggregate as the value, and the YEAR
# (lo_orderdate DIV 10000) as the date key. The date filters of Q1.1, Q3.1-3.3 and Q4.2-4.3
# span whole years; a year key cannot express `lo_orderdate <= 19971231` (19971299 is a legal
# INT), but the rewrite drops such a filter when the scanned partitions' segment zone maps
# prove every stored row satisfies it (planner/materialized_view.py `_holds_for_stored_rows`).
# Q1.2, Q1.3 and Q3.4 filter within a year: no view answers them, the base index does. Views
# keyed finer (day-level dates, city x brand) hold nearly every base row at this scale, and
# the rewrite's cost check would keep the base index for them anyway.
MATERIALIZED_VIEWS = {
    "mv_q1": "SELECT lo_orderdate DIV 10000, lo_discount, lo_quantity, "
             "SUM(lo_extendedprice * lo_discount) FROM lineorder_flat "
             "GROUP BY lo_orderdate DIV 10000, lo_discount, lo_quantity",
    "mv_q2": "SELECT s_region, p_category, p_brand, lo_orderdate DIV 10000, SUM(lo_revenue) "
             "FROM lineorder_flat GROUP BY s_region, p_category, p_brand, lo_orderdate DIV 10000",
    "mv_q3": "SELECT c_region, s_region, c_nation, s_nation, lo_orderdate DIV 10000, "
             "SUM(lo_revenue) FROM lineorder_flat "
             "GROUP BY c_region, s_region, c_nation, s_nation, lo_orderdate DIV 10000",
    "mv_q3n": "SELECT c_nation, s_nation, c_city, s_city, lo_orderdate DIV 10000, "
              "SUM(lo_revenue) FROM lineorder_flat "
              "GROUP BY c_nation, s_nation, c_city, s_city, lo_orderdate DIV 10000",
    "mv_q4": "SELECT c_region, s_region, p_mfgr, c_nation, lo_orderdate DIV 10000, "
             "SUM(lo_revenue - lo_supplycost) FROM lineorder_flat "
             "GROUP BY c_region, s_region, p_mfgr, c_nation, lo_orderdate DIV 10000",
    "mv_q4s": "SELECT c_region, s_region, p_mfgr, s_nation, p_category, lo_orderdate DIV 10000, "
              "SUM(lo_revenue - lo_supplycost) FROM lineorder_flat "
              "GROUP BY c_region, s_region, p_mfgr, s_nation, p_category, lo_orderdate DIV 10000",
    "mv_q4c": "SELECT s_nation, p_category, s_city, p_brand, lo_orderdate DIV 10000, "
              "SUM(lo_revenue - lo_supplycost) FROM lineorder_flat "
              "GROUP BY s_nation, p_category, s_city, p_brand, lo_orderdate DIV 10000",
}
MV_STATEMENTS = [f"CREATE MATERIALIZED VIEW {name} AS {select}"
                 for name, select in MATERIALIZED_VIEWS.items()]

FLAT_SQL = """SELECT lo_orderdate, lo_orderkey, lo_linenumber, lo_custkey, lo_partkey, lo_suppkey,
  lo_orderpriority, lo_shippriority, lo_quantity, lo_extendedprice, lo_ordtotalprice,
  lo_discount, lo_revenue, lo_supplycost, lo_tax, lo_commitdate, lo_shipmode,
  c_city, c_nation, c_region, s_city, s_nation, s_region, p_mfgr, p_category, p_brand
FROM lineorder JOIN customer ON lo_custkey = c_custkey JOIN supplier ON lo_suppkey = s_suppkey
  JOIN part ON lo_partkey = p_partkey"""

# Doris' ssb-flat kit queries (lower-case names); `DIV` is spelled `//` for DuckDB.
QUERIES: dict[str, str] = {
    "1.1": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder_flat
WHERE lo_orderdate >= 19930101 AND lo_orderdate <= 19931231
  AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25""",
    "1.2": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder_flat
WHERE lo_orderdate >= 19940101 AND lo_orderdate <= 19940131
  AND lo_discount BETWEEN 4 AND 6 AND lo_quantity BETWEEN 26 AND 35""",
    "1.3": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder_flat
WHERE lo_orderdate >= 19940204 AND lo_orderdate <= 19940210
  AND lo_discount BETWEEN 5 AND 7 AND lo_quantity BETWEEN 26 AND 35""",
    "2.1": """SELECT SUM(lo_revenue), (lo_orderdate DIV 10000) AS year, p_brand FROM lineorder_flat
WHERE p_category = 'MFGR#12' AND s_region = 'AMERICA'
GROUP BY year, p_brand ORDER BY year, p_brand""",
    "2.2": """SELECT SUM(lo_revenue), (lo_orderdate DIV 10000) AS year, p_brand FROM lineorder_flat
WHERE p_brand >= 'MFGR#2221' AND p_brand <= 'MFGR#2228' AND s_region = 'ASIA'
GROUP BY year, p_brand ORDER BY year, p_brand""",
    "2.3": """SELECT SUM(lo_revenue), (lo_orderdate DIV 10000) AS year, p_brand FROM lineorder_flat
WHERE p_brand = 'MFGR#2239' AND s_region = 'EUROPE'
GROUP BY year, p_brand ORDER BY year, p_brand""",
    "3.1": """SELECT c_nation, s_nation, (lo_orderdate DIV 10000) AS year, SUM(lo_revenue) AS revenue
FROM lineorder_flat
WHERE c_region = 'ASIA' AND s_region = 'ASIA' AND lo_orderdate >= 19920101
  AND lo_orderdate <= 19971231
GROUP BY c_nation, s_nation, year ORDER BY year ASC, revenue DESC""",
    "3.2": """SELECT c_city, s_city, (lo_orderdate DIV 10000) AS year, SUM(lo_revenue) AS revenue
FROM lineorder_flat
WHERE c_nation = 'UNITED STATES' AND s_nation = 'UNITED STATES' AND lo_orderdate >= 19920101
  AND lo_orderdate <= 19971231
GROUP BY c_city, s_city, year ORDER BY year ASC, revenue DESC""",
    "3.3": """SELECT c_city, s_city, (lo_orderdate DIV 10000) AS year, SUM(lo_revenue) AS revenue
FROM lineorder_flat
WHERE c_city IN ('UNITED KI1', 'UNITED KI5') AND s_city IN ('UNITED KI1', 'UNITED KI5')
  AND lo_orderdate >= 19920101 AND lo_orderdate <= 19971231
GROUP BY c_city, s_city, year ORDER BY year ASC, revenue DESC""",
    "3.4": """SELECT c_city, s_city, (lo_orderdate DIV 10000) AS year, SUM(lo_revenue) AS revenue
FROM lineorder_flat
WHERE c_city IN ('UNITED KI1', 'UNITED KI5') AND s_city IN ('UNITED KI1', 'UNITED KI5')
  AND lo_orderdate >= 19971201 AND lo_orderdate <= 19971231
GROUP BY c_city, s_city, year ORDER BY year ASC, revenue DESC""",
    "4.1": """SELECT (lo_orderdate DIV 10000) AS year, c_nation, SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder_flat
WHERE c_region = 'AMERICA' AND s_region = 'AMERICA' AND p_mfgr IN ('MFGR#1', 'MFGR#2')
GROUP BY year, c_nation ORDER BY year ASC, c_nation ASC""",
    "4.2": """SELECT (lo_orderdate DIV 10000) AS year, s_nation, p_category,
  SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder_flat
WHERE c_region = 'AMERICA' AND s_region = 'AMERICA' AND lo_orderdate >= 19970101
  AND lo_orderdate <= 19981231 AND p_mfgr IN ('MFGR#1', 'MFGR#2')
GROUP BY year, s_nation, p_category ORDER BY year ASC, s_nation ASC, p_category ASC""",
    "4.3": """SELECT (lo_orderdate DIV 10000) AS year, s_city, p_brand,
  SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder_flat
WHERE s_nation = 'UNITED STATES' AND lo_orderdate >= 19970101 AND lo_orderdate <= 19981231
  AND p_category = 'MFGR#14'
GROUP BY year, s_city, p_brand ORDER BY year ASC, s_city ASC, p_brand ASC""",
}


def create_views(engine: StorageEngine, db: str) -> None:
    """The MATERIALIZED_VIEWS on `db`.lineorder_flat, each built before the next starts."""
    from sql.binder.materialized_view import analyze
    from sql.ddl import materialized_view as mv
    from sql.parser.dialect import parse_one

    for stmt in MV_STATEMENTS:
        spec = mv.describe_create(parse_one(stmt))
        table = engine.catalog.get_table(db, "lineorder_flat")
        job_id = mv.create(engine, spec, table, analyze)
        assert job_id is not None
        engine.rollup_jobs.start(job_id)
        while (job := engine.catalog.alter_job(job_id)) is not None and job.state not in (
                "FINISHED", "CANCELLED"):
            time.sleep(0.05)
        assert job is not None and job.state == "FINISHED", job


def load(engine: StorageEngine, db: str, ddl: str, flat, views: bool = False) -> None:
    from sql.ddl import ddl_ops
    from sql.ddl import specs as V
    from sql.ddl.create_table import analyze_create_table
    from sql.parser.dialect import parse_one
    from storage.catalog import service as catalog_service
    from storage.txn import LoadTxn

    catalog_service.create_database(engine, db, False)
    defn = analyze_create_table(
        V.describe_create_table(parse_one(ddl)), len(engine.catalog.backends())
    )
    ddl_ops.create_table(engine, db, defn)
    if views:  # before the load, which then writes them as Doris' loads do
        create_views(engine, db)
    meta = engine.catalog.get_table(db, "lineorder_flat")
    txn = LoadTxn(engine, engine.catalog.get_database(db), meta)
    for start in range(0, flat.num_rows, 200_000):
        part = flat.slice(start, 200_000)
        cols = tuple(C._column(c.type, part.column(c.name)) for c in meta.columns)
        txn.add_batch(Batch(tuple(meta.column_names), cols))
    txn.commit()


def _median_ms(fn, runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def _index_used(cur) -> str:
    cur.execute('SHOW QUERY PROFILE "/"')
    pid = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{pid}"')
    facts = [v for k, v in cur.fetchall() if str(k).startswith("VOlapScanNode")]
    return facts[0].split("(", 1)[1].split(")", 1)[0] if facts else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS_SSB_FLAT.md"))
    args = ap.parse_args()

    data = ssb.generate(args.sf, ssb.SEED)
    duck = duckdb.connect()
    ssb.load_duckdb(duck, data)
    flat = duck.sql(FLAT_SQL).to_arrow_table()
    duck.register("_flat", flat)
    duck.execute("CREATE TABLE lineorder_flat AS SELECT * FROM _flat")
    print(f"lineorder_flat: {flat.num_rows} rows", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ssb-flat-") as tmp:
        data_dir = Path(tmp) / "data"
        eng = StorageEngine(data_dir, backends=3)
        install_derived_columns(eng)  # the views' expression columns, computed on load
        t0 = time.perf_counter()
        load(eng, "flat_base", BASE_DDL, flat)
        t_base = time.perf_counter() - t0
        t0 = time.perf_counter()
        load(eng, "flat_rollup", BASE_DDL, flat, views=True)
        t_roll = time.perf_counter() - t0
        eng.close()
        print(f"loaded: base {t_base:.1f}s, with {len(MV_STATEMENTS)} views {t_roll:.1f}s",
              flush=True)
        srv = ServerProcess(data_dir, backends=3).start()
        try:
            base = srv.connect("flat_base", read_timeout=300)
            roll = srv.connect("flat_rollup", read_timeout=300)
            with roll.cursor() as cur:
                cur.execute("SET enable_profile = true")
            for q, sql in QUERIES.items():
                duck_sql = sql.replace(" DIV ", " // ")
                expected = duck.execute(duck_sql).fetchall()
                notes = []
                results = {}
                for name, conn in (("base", base), ("rollup", roll)):
                    cur = conn.cursor()

                    def run(cur=cur, sql=sql) -> list[tuple]:
                        cur.execute(sql)
                        return list(cur.fetchall())

                    got = run()
                    diff = C.compare(C.normalize_py(got), C.normalize_py(expected), True)
                    if diff is not None:
                        notes.append(f"{name} MISMATCH: {diff[:100]}")
                    results[name] = _median_ms(run, args.runs)
                    if name == "rollup":
                        results["index"] = _index_used(cur)
                d_ms = _median_ms(lambda: duck.execute(duck_sql).fetchall(), args.runs)  # noqa: B023
                rows.append(
                    (
                        q,
                        results["base"],
                        results["rollup"],
                        d_ms,
                        results["index"],
                        len(expected),
                        "; ".join(notes),
                    )
                )
                print(
                    f"Q{q}: base {results['base']:.1f} ms, rollup {results['rollup']:.1f} ms "
                    f"({results['index']}), duckdb {d_ms:.1f} ms {'; '.join(notes)}",
                    flush=True,
                )
        finally:
            srv.stop()

    def gmean(xs: list[float]) -> float:
        return math.exp(sum(math.log(x) for x in xs) / len(xs))

    g_base = gmean([b / d for _, b, _, d, *_ in rows])
    g_roll = gmean([r / d for _, _, r, d, *_ in rows])
    lines = [
        "# SSB-flat with and without rollups (bench/ssb_flat_rollups.py)",
        "",
        (
            f"SF {args.sf} (lineorder_flat {flat.num_rows:,} rows), bench/ssb.py's generator "
            f"(seed {ssb.SEED}); median of {args.runs} runs after a warm-up; ShaleDB over the MySQL "
            f"protocol (3 backends), DuckDB {duckdb.__version__} in-process. Machine: "
            f"{platform.machine()}, shared 2 cores. Load through the storage API: base "
            f"{t_base:.1f}s, with the {len(MV_STATEMENTS)} views {t_roll:.1f}s."
        ),
        "",
        "Sync materialized views (one per query group): "
        + "; ".join(f"`{v}`" for v in MV_STATEMENTS),
        "",
        (
            "| Query | base (ms) | rollups (ms) | index chosen | DuckDB (ms) | base / DuckDB | "
            "rollups / DuckDB | Rows | Note |"
        ),
        "|---|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    for q, b, r, d, ix, n, note in rows:
        lines.append(
            f"| Q{q} | {b:.1f} | {r:.1f} | {ix} | {d:.1f} | {b / d:.2f}x | {r / d:.2f}x "
            f"| {n} | {note} |"
        )
    lines += [
        "",
        f"Geometric mean ratio to DuckDB: base **{g_base:.2f}x**, with rollups **{g_roll:.2f}x**.",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"geomean vs DuckDB: base {g_base:.2f}x, rollups {g_roll:.2f}x -> {args.out}")


if __name__ == "__main__":
    main()
