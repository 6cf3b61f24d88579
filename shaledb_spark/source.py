"""The `shaledb` data source (and its alias `doris`) for Spark 4's Python Data Source API."""

from __future__ import annotations

from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter

from shaledb_spark import rest
from shaledb_spark.options import parse_options
from shaledb_spark.reader import ShaleDBReader
from shaledb_spark.types import check_write_schema, spark_schema
from shaledb_spark.writer import ShaleDBWriter


class ShaleDBDataSource(DataSource):
    """`spark.read/df.write.format("shaledb").option("table", "db.t").option("fenodes",
    "host:8030")...`: tablet-parallel reads and exactly-once two-phase Stream Load writes."""

    @classmethod
    def name(cls) -> str:
        return "shaledb"

    def _opts(self):  # type: ignore[no-untyped-def]
        return parse_options(self.options)

    def schema(self) -> T.StructType:
        opts = self._opts()
        return spark_schema(rest.table_schema(opts), opts.read_fields,
                            bitmap_as_text=bool(opts.bitmap_text))

    def reader(self, schema: T.StructType) -> DataSourceReader:
        return ShaleDBReader(self._opts(), schema)

    def writer(self, schema: T.StructType, overwrite: bool) -> DataSourceWriter:
        opts = self._opts()
        props = rest.table_schema(opts)
        check_write_schema(props, schema, f"{opts.db}.{opts.table}", opts.write_sources)
        return ShaleDBWriter(opts, schema, overwrite, props)


class DorisDataSource(ShaleDBDataSource):
    """`format("doris")`: the same source under spark-doris-connector's name."""

    @classmethod
    def name(cls) -> str:
        return "doris"
