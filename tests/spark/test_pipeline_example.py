"""examples/spark_pipeline.py on local[2] against a live server: the AGGREGATE table holds
exactly what DuckDB computes from the same Parquet file, and the example's per-region totals
agree with it."""

from __future__ import annotations

import importlib.util
import sys
from decimal import Decimal
from pathlib import Path

import duckdb

REPO_ROOT = Path(__file__).resolve().parents[2]


def load_example():
    spec = importlib.util.spec_from_file_location(
        "spark_pipeline", REPO_ROOT / "examples" / "spark_pipeline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["spark_pipeline"] = module
    spec.loader.exec_module(module)
    return module


def test_pipeline_matches_duckdb(spark, server, make_db, tmp_path) -> None:
    example = load_example()
    parquet = example.write_sample_parquet(tmp_path / "orders.parquet", rows=3000)
    db = make_db("pipeline")
    totals = example.run(spark, f"127.0.0.1:{server.http_port}", str(parquet), db=db)

    want_daily = duckdb.sql(
        f"SELECT CAST(ts AS DATE) AS dt, lower(region) AS region, count(*) AS orders, "
        f"sum(amount) AS revenue, max(amount) AS max_amount FROM '{parquet}' "
        f"WHERE status = 'paid' GROUP BY ALL ORDER BY dt, region").fetchall()
    with server.connect(db) as conn, conn.cursor() as cur:
        cur.execute("SELECT dt, region, orders, revenue, max_amount FROM daily_sales "
                    "ORDER BY dt, region")
        got = cur.fetchall()
    assert [tuple(r) for r in got] == [(d, r, o, Decimal(v), Decimal(m))
                                       for d, r, o, v, m in want_daily]
    want_totals = duckdb.sql(
        f"SELECT lower(region), count(*), sum(amount), max(amount) FROM '{parquet}' "
        f"WHERE status = 'paid' GROUP BY 1 ORDER BY 1").fetchall()
    assert [(r.region, r.orders, r.revenue, r.max_amount) for r in totals] == \
        [tuple(x) for x in want_totals]
