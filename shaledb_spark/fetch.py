"""Reading query results as Arrow record batches: the seam between the reader and the wire.

`fetch_batches(opts, sql, schema)` runs one read query and yields pyarrow RecordBatches of
`schema` (Spark's), `BATCH_ROWS` rows each. Today it reads over the MySQL protocol (pymysql's
unbuffered cursor, so a partition is never held whole) and builds the Arrow columns here; when
the server's Arrow Flight SQL endpoint (server/flight_sql/) is available this function is the
one place to switch, since Flight returns the batches directly. Either way a read either yields
every row of its query or raises: a dropped connection fails the Spark task (which Spark retries)
instead of returning part of a partition as if it were complete.
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


def fetch_batches(opts: ConnectorOptions, sql: str, schema: T.StructType
                  ) -> Iterator[pa.RecordBatch]:
    import pymysql.cursors

    arrow_schema = pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in schema.fields])
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
