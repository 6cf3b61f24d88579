"""A Spark pipeline into ShaleDB: Parquet in -> Spark transform -> AGGREGATE table -> query.

    python examples/spark_pipeline.py --fenodes 127.0.0.1:8030 --parquet orders.parquet \\
        [--master local[2] | spark://host:7077] [--user root --password ''] [--db shop]

Reads raw orders (order_id, ts, region, amount, status) from Parquet, keeps the paid ones, and
loads one row per order into `daily_sales`, an AGGREGATE KEY(dt, region) table that sums orders
and revenue and keeps the largest order as it loads (Doris pre-aggregation). The write goes
through the `shaledb` data source (two-phase Stream Load from every task, one commit), so a
rerun after a failure never double counts. Then it reads the table back in parallel by tablet
(with a pushed filter) and prints the per-region totals. Without --parquet it writes a small
sample file first. The same code runs on local[N] or a standalone cluster (`--master
spark://..`): executors need shaledb_spark importable (pip install 'shaledb[spark]', or ship it
with --py-files).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

DDL = """CREATE TABLE IF NOT EXISTS daily_sales (
    dt DATE, region VARCHAR(16),
    orders BIGINT SUM DEFAULT "0", revenue DECIMAL(18,2) SUM DEFAULT "0",
    max_amount DECIMAL(12,2) MAX
) AGGREGATE KEY(dt, region) DISTRIBUTED BY HASH(region) BUCKETS 2
PROPERTIES ("replication_num" = "1")"""


def write_sample_parquet(path: Path, rows: int = 5000, seed: int = 7) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rnd = random.Random(seed)
    start = dt.datetime(2024, 3, 1)
    table = pa.table({
        "order_id": list(range(rows)),
        "ts": [start + dt.timedelta(minutes=rnd.randrange(0, 60 * 24 * 10)) for _ in range(rows)],
        "region": [rnd.choice(["north", "south", "east", "west"]) for _ in range(rows)],
        "amount": pa.array([Decimal(rnd.randrange(100, 50000)) / 100 for _ in range(rows)],
                           pa.decimal128(12, 2)),
        "status": [rnd.choice(["paid", "paid", "paid", "refunded"]) for _ in range(rows)],
    })
    pq.write_table(table, path)
    return path


def ensure_table(fenodes: str, user: str, password: str, db: str) -> None:
    """Create the database and the AGGREGATE table over the MySQL port (found from the HTTP
    port's /api/bootstrap)."""
    import pymysql

    from shaledb_spark import rest
    from shaledb_spark.options import parse_options

    opts = parse_options({"table": f"{db}.daily_sales", "fenodes": fenodes, "user": user,
                          "password": password})
    conn = pymysql.connect(host=opts.host, port=rest.query_port(opts), user=user,
                           password=password, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{db}`")
            cur.execute(f"USE `{db}`")
            cur.execute(DDL)
    finally:
        conn.close()


def run(spark: Any, fenodes: str, parquet: str, db: str = "shop", user: str = "root",
        password: str = "") -> list[Any]:
    """The pipeline on an existing SparkSession; returns the per-region totals it printed."""
    from pyspark.sql import functions as F

    import shaledb_spark

    shaledb_spark.register(spark)
    ensure_table(fenodes, user, password, db)
    opts = {"table": f"{db}.daily_sales", "fenodes": fenodes, "user": user,
            "password": password}

    orders = spark.read.parquet(parquet)
    daily = (orders.where(F.col("status") == "paid")
             .select(F.to_date("ts").alias("dt"), F.lower("region").alias("region"),
                     F.lit(1).cast("long").alias("orders"), F.col("amount").alias("revenue"),
                     F.col("amount").alias("max_amount")))
    daily.write.format("shaledb").options(**opts).mode("append").save()

    table = spark.read.format("shaledb").options(**opts).load()
    totals = (table.where(F.col("dt") >= dt.date(2024, 3, 1))
              .groupBy("region")
              .agg(F.sum("orders").alias("orders"), F.sum("revenue").alias("revenue"),
                   F.max("max_amount").alias("max_amount"))
              .orderBy("region").collect())
    for row in totals:
        print(f"{row.region:<6} orders={row.orders:>6} revenue={row.revenue:>12} "
              f"largest={row.max_amount}")
    return totals


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fenodes", required=True, help="host:http_port of ShaleDB")
    parser.add_argument("--parquet", help="orders Parquet file (default: a generated sample)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--db", default="shop")
    parser.add_argument("--user", default="root")
    parser.add_argument("--password", default="")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    parquet = args.parquet or str(write_sample_parquet(
        Path(tempfile.mkdtemp(prefix="shaledb-orders-")) / "orders.parquet"))
    spark = (SparkSession.builder.master(args.master).appName("shaledb-spark-pipeline")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    try:
        run(spark, args.fenodes, parquet, args.db, args.user, args.password)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
