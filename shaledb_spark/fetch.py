"""Reading query results as Arrow record batches: the seam between the reader and the wire.

`fetch_batches(opts, sql, schema)` runs one read query and yields pyarrow RecordBatches of
`schema` (Spark's). Two wires:
- Arrow Flight SQL (server/flight_sql/), when the job names the Flight port
  (`doris.read.arrow-flight-sql.port`): the ADBC Flight SQL driver streams the server's record
  batches (`fetch_record_batch`, never the whole result at once); each batch is only cast to
  the Arrow types of Spark's schema (BOOLEAN arrives as its wire type, LARGEINT as text, ...).
- The MySQL protocol otherwise (pymysql's unbuffered cursor, so a partition is never held
  whole), `BATCH_ROWS` rows per batch, the Arrow columns built here from Python values.
BITMAP/HLL columns arrive as base64 text (reader.py selects `*_to_base64`) and are decoded to
binary here; LARGEINT arrives as text and becomes DecimalType(38, 0), a value of more than 38
digits failing the read with the column's name (pyarrow's cast would wrap it silently).
Either way a read either yields every row of its query or raises: a dropped connection fails
the Spark task (which Spark retries) instead of returning part of a partition as if it were
complete.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from shaledb_spark import mysql
from shaledb_spark.options import ConnectorOptions
from shaledb_spark.types import OBJECT_TYPES, field_doris_type, nested_from_text

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
    if isinstance(st, T.ArrayType):  # nested: Arrow list / map / struct of the elements
        return pa.list_(arrow_type(st.elementType))
    if isinstance(st, T.MapType):
        return pa.map_(arrow_type(st.keyType), arrow_type(st.valueType))
    if isinstance(st, T.StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType)) for f in st.fields])
    return pa.string()


class ReadError(RuntimeError):
    """A value the read cannot hand to Spark exactly (the task fails, naming the column)."""


def _is_text_wire(f: T.StructField) -> bool:
    """Columns whose wire form is text that needs more than a cast: base64 of a BITMAP/HLL
    (to binary) and LARGEINT (to a checked DecimalType(38, 0))."""
    doris = field_doris_type(f)
    return (doris in OBJECT_TYPES and isinstance(f.dataType, T.BinaryType)) or \
        (doris == "LARGEINT" and isinstance(f.dataType, T.DecimalType))


def _is_nested(f: T.StructField) -> bool:
    """ARRAY / MAP / STRUCT: Doris' text over the MySQL protocol, Arrow nested over Flight."""
    return isinstance(f.dataType, (T.ArrayType, T.MapType, T.StructType))


def _from_text(f: T.StructField, values: list[Any], target: pa.DataType) -> pa.Array:
    """A text-wire column (see `_is_text_wire`) as Spark's Arrow type."""
    texts = [None if v is None else v.decode() if isinstance(v, bytes) else str(v)
             for v in values]
    if isinstance(f.dataType, T.BinaryType):
        return pa.array([None if t is None else base64.b64decode(t) for t in texts], target)
    if isinstance(f.dataType, (T.ArrayType, T.MapType, T.StructType)):  # Doris' text
        return pa.array([nested_from_text(f.dataType, t) for t in texts], target)
    limit = 10 ** 38
    out: list[Decimal | None] = []
    for t in texts:
        if t is None:
            out.append(None)
            continue
        n = int(t)
        if not -limit < n < limit:
            raise ReadError(f"column `{f.name}`: LARGEINT value {n} does not fit Spark's "
                            "DecimalType(38,0) (read the column through a CAST to STRING in "
                            "a view, or filter it with doris.filter.query)")
        out.append(Decimal(n))
    return pa.array(out, target)


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


def conform(batch: pa.RecordBatch, target: pa.Schema,
            schema: T.StructType | None = None) -> pa.RecordBatch:
    """A Flight batch as Spark's Arrow schema: columns by position, cast where the wire type
    differs (the names are the query's own select list, so they already match)."""
    if batch.num_columns != len(target):
        raise ValueError(f"Flight SQL returned {batch.num_columns} columns, "
                         f"expected {len(target)}")
    text_wire = set() if schema is None else \
        {i for i, f in enumerate(schema.fields) if _is_text_wire(f)}
    arrays = [_from_text(schema.fields[i], col.to_pylist(), field.type)
              if schema is not None and i in text_wire else
              col if col.type == field.type else col.cast(field.type, safe=True)
              for i, (col, field) in enumerate(zip(batch.columns, target))]
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
                    yield conform(batch, target, schema)
    finally:
        conn.close()


def fetch_mysql_batches(opts: ConnectorOptions, sql: str, schema: T.StructType
                        ) -> Iterator[pa.RecordBatch]:
    import pymysql.cursors

    arrow_schema = arrow_schema_of(schema)
    conn = mysql.connect(opts)
    try:
        with conn.cursor(pymysql.cursors.SSCursor) as cur:
            cur.execute(sql)
            while True:
                rows = cur.fetchmany(BATCH_ROWS)
                if not rows:
                    break
                columns = list(zip(*rows))
                arrays = [_from_text(f, list(col), arrow_schema.field(i).type)
                          if _is_text_wire(f) or _is_nested(f) else
                          pa.array(_values(f.dataType, list(col)), type=arrow_schema.field(i).type)
                          for i, (f, col) in enumerate(zip(schema.fields, columns))]
                yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)
    finally:
        conn.close()
