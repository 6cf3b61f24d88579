"""Reading query results as Arrow record batches: the seam between the reader and the wire.

`fetch_batches(opts, sql, schema)` runs one read query and yields pyarrow RecordBatches of
`schema` (Spark's). Two wires:
- Arrow Flight SQL (server/flight_sql/), when the job names the Flight port
  (`doris.read.arrow-flight-sql.port`): the ADBC Flight SQL driver streams the server's record
  batches (`fetch_record_batch`, never the whole result at once); each batch is only cast to
  the Arrow types of Spark's schema (BOOLEAN arrives as its wire type, LARGEINT as text, ...).
- The MySQL protocol otherwise (pymysql's unbuffered cursor, so a partition is never held
  whole), `BATCH_ROWS` rows per batch, the Arrow columns built here from Python values.
Either way a read either yields every row of its query or raises: a dropped connection fails
the Spark task (which Spark retries) instead of returning part of a partition as if it were
complete.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from shaledb_spark import rest
from shaledb_spark.options import ConnectorOptions

BATCH_ROWS = 65536


def arrow_type(st: T.DataType) -> pa.DataType:
    if isinstance(st, T.BooleanType):
        return pa.bool_()
    if isinstance(st, T.ByteType):
        return pa.int8()
    if isinstance(st, T.ShortType):
        return pa.int16()
    if isinstance(st, T.IntegerType):
        return pa.int32()
    if isinstance(st, T.LongType):
        return pa.int64()
    if isinstance(st, T.FloatType):
        return pa.float32()
    if isinstance(st, T.DoubleType):
        return pa.float64()
    if isinstance(st, T.DecimalType):
        return pa.decimal128(st.precision, st.scale)
    if isinstance(st, T.DateType):
        return pa.date32()
    if isinstance(st, T.TimestampNTZType):
        return pa.timestamp("us")
    if isinstance(st, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(st, T.BinaryType):
        return pa.binary()
    return pa.string()


def _values(st: T.DataType, values: list[Any]) -> list[Any]:
    """pymysql's Python values as the Arrow type of `st` wants them."""
    if isinstance(st, T.BooleanType):
        return [None if v is None else bool(v) for v in values]
    if isinstance(st, T.StringType):
        return [None if v is None else v if isinstance(v, str) else
                v.decode() if isinstance(v, bytes) else str(v) for v in values]
    if isinstance(st, T.BinaryType):
        return [None if v is None else v if isinstance(v, bytes) else str(v).encode()
                for v in values]
    return values


def connect(opts: ConnectorOptions) -> Any:
    import pymysql

    return pymysql.connect(host=opts.host, port=rest.query_port(opts), user=opts.user,
                           password=opts.password, database=opts.db, autocommit=True,
                           charset="utf8mb4")


def arrow_schema_of(schema: T.StructType) -> pa.Schema:
    return pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in schema.fields])


def fetch_batches(opts: ConnectorOptions, sql: str, schema: T.StructType
                  ) -> Iterator[pa.RecordBatch]:
    if opts.flight_port is not None:
        return fetch_flight_batches(opts, sql, schema)
    return fetch_mysql_batches(opts, sql, schema)


def flight_connect(opts: ConnectorOptions) -> Any:
    import adbc_driver_flightsql.dbapi as flight_sql

    return flight_sql.connect(f"grpc://{opts.host}:{opts.flight_port}", autocommit=True,
                              db_kwargs={"username": opts.user, "password": opts.password})


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """A Flight batch as Spark's Arrow schema: columns by position, cast where the wire type
    differs (the names are the query's own select list, so they already match)."""
    if batch.num_columns != len(target):
        raise ValueError(f"Flight SQL returned {batch.num_columns} columns, "
                         f"expected {len(target)}")
    arrays = [col if col.type == field.type else col.cast(field.type, safe=True)
              for col, field in zip(batch.columns, target)]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def fetch_flight_batches(opts: ConnectorOptions, sql: str, schema: T.StructType
                         ) -> Iterator[pa.RecordBatch]:
    target = arrow_schema_of(schema)
    conn = flight_connect(opts)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            reader = cur.fetch_record_batch()
            for batch in reader:
                if batch.num_rows:
                    yield conform(batch, target)
    finally:
        conn.close()


def fetch_mysql_batches(opts: ConnectorOptions, sql: str, schema: T.StructType
                        ) -> Iterator[pa.RecordBatch]:
    import pymysql.cursors

    arrow_schema = arrow_schema_of(schema)
    conn = connect(opts)
    try:
        with conn.cursor(pymysql.cursors.SSCursor) as cur:
            cur.execute(sql)
            while True:
                rows = cur.fetchmany(BATCH_ROWS)
                if not rows:
                    break
                columns = list(zip(*rows))
                arrays = [pa.array(_values(f.dataType, list(col)), type=arrow_schema.field(i).type)
                          for i, (f, col) in enumerate(zip(schema.fields, columns))]
                yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)
    finally:
        conn.close()
