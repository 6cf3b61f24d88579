"""Spark JDBC write benchmark: `df.write.jdbc` of N rows x 5 columns into ShaleDB.

The job of issue 6's anchor: PySpark local[2], MariaDB Connector/J (Debian libmariadb-java),
`rewriteBatchedStatements=true`, `batchsize=10000`, mode append into an existing DUPLICATE table
`t (id BIGINT, name VARCHAR(32), amount DOUBLE, qty INT, day DATE)`; the DataFrame is generated
by Spark itself (spark.range), so the figure is the write path: Spark + driver + ShaleDB's
INSERT handling. Starts its own ShaleDB server on a temporary data dir (tests/support/server.py)
unless `--port` names a running one. Prints rows/s (wall time of the write call) and checks
the row count afterwards. Anchor: MariaDB 10.11 reaches 160k rows/s on the same job.

Run: `.venv/bin/python bench/spark_jdbc_write.py [--rows 1000000]`. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import pymysql  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from support.server import ServerProcess  # noqa: E402

CONNECTOR_JAR = "/usr/share/java/mariadb-java-client.jar"
DDL = (
    "CREATE TABLE t (id BIGINT, name VARCHAR(32), amount DOUBLE, qty INT, day DATE) "
    "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS {buckets} "
    "PROPERTIES('replication_num'='1')"
)


def run(port: int, rows: int, batchsize: int, buckets: int) -> float:
    with pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True) as c:
        with c.cursor() as cur:
            cur.execute("DROP DATABASE IF EXISTS bench_spark")
            cur.execute("CREATE DATABASE bench_spark")
            cur.execute("USE bench_spark")
            cur.execute(DDL.format(buckets=buckets))
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("shaledb-spark-jdbc-write")
        .config("spark.jars", CONNECTOR_JAR)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    try:
        df = spark.range(rows, numPartitions=2).selectExpr(
            "id",
            "concat('name_', cast(id AS STRING)) AS name",
            "cast(id AS DOUBLE) / 8 AS amount",
            "cast(id % 1000 AS INT) AS qty",
            "date_add(DATE'2020-01-01', cast(id % 1500 AS INT)) AS day",
        )
        df.cache().count()  # generate once, outside the timed write
        url = f"jdbc:mysql://127.0.0.1:{port}/bench_spark"
        props = {
            "user": "root",
            "password": "",
            "driver": "org.mariadb.jdbc.Driver",
            "rewriteBatchedStatements": "true",
            "batchsize": str(batchsize),
        }
        t0 = time.perf_counter()
        df.write.jdbc(url, "t", mode="append", properties=props)
        elapsed = time.perf_counter() - t0
    finally:
        spark.stop()
    with pymysql.connect(host="127.0.0.1", port=port, user="root", database="bench_spark") as c:
        with c.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM t")
            stored = cur.fetchone()[0]
    if stored != rows:
        raise SystemExit(f"wrote {rows} rows but the table holds {stored}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batchsize", type=int, default=10_000)
    ap.add_argument("--buckets", type=int, default=8)
    ap.add_argument("--port", type=int, help="a running ShaleDB's MySQL port (default: start one)")
    args = ap.parse_args()
    if args.port:
        elapsed = run(args.port, args.rows, args.batchsize, args.buckets)
    else:
        with tempfile.TemporaryDirectory(prefix="shaledb-spark-bench-") as tmp:
            srv = ServerProcess(Path(tmp) / "data", backends=3)
            srv.start()
            try:
                assert srv.port is not None
                elapsed = run(srv.port, args.rows, args.batchsize, args.buckets)
            finally:
                srv.stop()
    print(
        f"rows={args.rows} batchsize={args.batchsize} local[2]: {elapsed:.1f} s, "
        f"{args.rows / elapsed:,.0f} rows/s"
    )


if __name__ == "__main__":
    main()
