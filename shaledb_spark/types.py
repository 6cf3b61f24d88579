"""Doris column types <-> Spark SQL types (both ways), from `_schema`'s properties.

Read (Doris -> Spark), as spark-doris-connector maps them except where the exact value needs
more room: BOOLEAN BooleanType; TINYINT..BIGINT Byte/Short/Integer/LongType; LARGEINT
StringType (its exact digits: 2**127 does not fit DecimalType(38, 0)); FLOAT/DOUBLE; DECIMAL
(p, s) DecimalType(p, s) up to 38; DATE DateType; DATETIME(p) TimestampNTZType (a Doris
DATETIME has no time zone); CHAR/VARCHAR/STRING StringType; JSON StringType. HLL, BITMAP and
the nested types are refused with the column's name (not supported yet).

Write (Spark -> Doris) accepts a Spark type when every value of it fits the column (or the
load converts it, as strings into numbers); `check_write_schema` names the first column that
does not, before any data moves.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import types as T

_SIMPLE: dict[str, T.DataType] = {
    "BOOLEAN": T.BooleanType(), "TINYINT": T.ByteType(), "SMALLINT": T.ShortType(),
    "INT": T.IntegerType(), "BIGINT": T.LongType(), "LARGEINT": T.StringType(),
    "FLOAT": T.FloatType(), "DOUBLE": T.DoubleType(), "DATE": T.DateType(),
    "DATEV2": T.DateType(), "DATETIME": T.TimestampNTZType(),
    "DATETIMEV2": T.TimestampNTZType(), "CHAR": T.StringType(), "VARCHAR": T.StringType(),
    "STRING": T.StringType(), "TEXT": T.StringType(), "JSON": T.StringType(),
    "JSONB": T.StringType(),
}
_DECIMALS = ("DECIMAL", "DECIMALV2", "DECIMALV3", "DECIMAL32", "DECIMAL64", "DECIMAL128",
             "DECIMAL256")


class SchemaMismatch(ValueError):
    """A DataFrame column the table cannot take (raised on the driver, before any load)."""


def spark_type(prop: dict[str, Any]) -> T.DataType:
    """The Spark type of one `_schema` property."""
    name = str(prop["type"]).upper()
    if name in _DECIMALS:
        return T.DecimalType(int(prop.get("precision", 38)), int(prop.get("scale", 0)))
    if name in _SIMPLE:
        return _SIMPLE[name]
    raise SchemaMismatch(f"column `{prop['name']}`: Doris type {name} is not supported by the "
                         "shaledb Spark data source yet (leave it out with doris.read.field)")


def spark_schema(props: list[dict[str, Any]], fields: tuple[str, ...] = ()) -> T.StructType:
    """The table's schema as Spark sees it (only `fields`, in their order, when given)."""
    by_name = {p["name"].lower(): p for p in props}
    chosen = props
    if fields:
        missing = [f for f in fields if f.lower() not in by_name]
        if missing:
            raise SchemaMismatch(f"doris.read.field names unknown column `{missing[0]}`")
        chosen = [by_name[f.lower()] for f in fields]
    return T.StructType([T.StructField(p["name"], spark_type(p), p.get("is_nullable") != "No")
                         for p in chosen])


_INTS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_WIDTH = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 4, T.LongType: 8}
_DORIS_WIDTH = {"TINYINT": 1, "SMALLINT": 2, "INT": 4, "BIGINT": 8, "LARGEINT": 16}


def _fits(doris: str, prop: dict[str, Any], st: T.DataType) -> bool:
    if isinstance(st, T.NullType):
        return True
    if isinstance(st, T.StringType):  # the load parses text into any type (and names bad rows)
        return True
    if doris == "BOOLEAN":
        return isinstance(st, (T.BooleanType, *_INTS))
    if doris in _DORIS_WIDTH:
        if isinstance(st, T.BooleanType):
            return True
        if isinstance(st, _INTS):
            return _WIDTH[type(st)] <= _DORIS_WIDTH[doris]
        if isinstance(st, T.DecimalType):
            return st.scale == 0 and (doris == "LARGEINT" or st.precision <= 18)
        return False
    if doris in ("FLOAT", "DOUBLE"):
        return isinstance(st, (*_INTS, T.FloatType, T.DoubleType, T.DecimalType))
    if doris in _DECIMALS:
        p, s = int(prop.get("precision", 38)), int(prop.get("scale", 0))
        if isinstance(st, T.DecimalType):
            return st.scale <= s and st.precision - st.scale <= p - s
        return isinstance(st, _INTS)
    if doris in ("DATE", "DATEV2", "DATETIME", "DATETIMEV2"):
        return isinstance(st, (T.DateType, T.TimestampType, T.TimestampNTZType))
    if doris in ("CHAR", "VARCHAR", "STRING", "TEXT", "JSON", "JSONB"):
        return not isinstance(st, (T.ArrayType, T.MapType, T.StructType, T.BinaryType))
    return False  # HLL, BITMAP, ARRAY, MAP, STRUCT: not yet


def check_write_schema(props: list[dict[str, Any]], schema: T.StructType, table: str) -> None:
    """Every DataFrame column must name a table column whose type can take it."""
    by_name = {p["name"].lower(): p for p in props}
    for f in schema.fields:
        prop = by_name.get(f.name.lower())
        if prop is None:
            raise SchemaMismatch(f"column `{f.name}` of the DataFrame does not exist in table "
                                 f"{table} (columns: {', '.join(p['name'] for p in props)})")
        doris = str(prop["type"]).upper()
        if not _fits(doris, prop, f.dataType):
            raise SchemaMismatch(f"column `{f.name}`: Spark type {f.dataType.simpleString()} "
                                 f"cannot be loaded into {table}.{prop['name']} of Doris type "
                                 f"{_doris_spelling(prop)}")


def _doris_spelling(prop: dict[str, Any]) -> str:
    name = str(prop["type"]).upper()
    if name in _DECIMALS:
        return f"DECIMAL({prop.get('precision')},{prop.get('scale')})"
    return name
