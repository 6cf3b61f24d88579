"""shaledb_spark: a PySpark (4.x) data source for ShaleDB and Doris' REST API.

    import shaledb_spark
    shaledb_spark.register(spark)
    df.write.format("shaledb").option("table", "db.t").option("fenodes", "127.0.0.1:8030") \\
        .option("user", "root").option("password", "").mode("append").save()
    spark.read.format("shaledb").option("table", "db.t").option("fenodes", ...).load()

`format("doris")` is the same source, with spark-doris-connector's option names
(options.py). Modules: options (option names and aliases), rest (HTTP calls), types (Doris <->
Spark types), reader (tablet-parallel reads with pushed filters), fetch (reading Arrow batches:
MySQL protocol today, the Flight seam), writer (exactly-once two-phase Stream Load), source
(the DataSource classes).
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(spark: Any) -> None:
    """Register the `shaledb` data source and its alias `doris` with a SparkSession, and
    switch on the Python Data Source filter pushdown (off by default in Spark 4.1+, and a
    reader that pushes filters is refused while it is off)."""
    from shaledb_spark.source import DorisDataSource, ShaleDBDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")

    spark.dataSource.register(ShaleDBDataSource)
    spark.dataSource.register(DorisDataSource)
