"""Doris column types <-> Spark SQL types (both ways), from `_schema`'s properties.

Read (Doris -> Spark), as spark-doris-connector maps them: BOOLEAN BooleanType;
TINYINT..BIGINT Byte/Short/Integer/LongType; LARGEINT DecimalType(38, 0) (a value of 39 digits,
beyond +-(10**38 - 1), fails the read naming the column, never wraps); FLOAT/DOUBLE; DECIMAL
(p, s) DecimalType(p, s) up to 38; DATE DateType; DATETIME(p) TimestampNTZType (a Doris
DATETIME has no time zone); CHAR/VARCHAR/STRING StringType; JSON StringType.
BITMAP and HLL: BinaryType, the serialized value (read with bitmap_to_base64 / hll_to_base64,
decoded on the executor), which a write loads back unchanged. spark-doris-connector reads
them as a placeholder string instead; its `doris.read.bitmap-to-string` /
`doris.read.bitmap-to-base64` give a BITMAP column as StringType (`1,2,3` / base64 text) here
as there. ARRAY<T> / MAP<K,V> / STRUCT<f:T,..> are ArrayType / MapType / StructType of the
element types (from `_schema`'s `full_type`, e.g. `ARRAY<DECIMAL(10,2)>`), read through Flight
SQL as Arrow list / map / struct arrays and written through Arrow Stream Load.

Write (Spark -> Doris) accepts a Spark type when every value of it fits the column (or the
load converts it, as strings into numbers); `check_write_schema` names the first column that
does not, before any data moves. A BinaryType column loads into BITMAP/HLL (bitmap_from_base64 /
hll_from_base64 in the load's `columns`, writer.py); any other source for them goes through
`doris.write.fields` expressions (`bm=to_bitmap(uid)`, `h=hll_hash(name)`), as in Doris.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import types as T

_SIMPLE: dict[str, T.DataType] = {
    "BOOLEAN": T.BooleanType(), "TINYINT": T.ByteType(), "SMALLINT": T.ShortType(),
    "INT": T.IntegerType(), "BIGINT": T.LongType(), "LARGEINT": T.DecimalType(38, 0),
    "FLOAT": T.FloatType(), "DOUBLE": T.DoubleType(), "DATE": T.DateType(),
    "DATEV2": T.DateType(), "DATETIME": T.TimestampNTZType(),
    "DATETIMEV2": T.TimestampNTZType(), "CHAR": T.StringType(), "VARCHAR": T.StringType(),
    "STRING": T.StringType(), "TEXT": T.StringType(), "JSON": T.StringType(),
    "JSONB": T.StringType(),
}
_DECIMALS = ("DECIMAL", "DECIMALV2", "DECIMALV3", "DECIMAL32", "DECIMAL64", "DECIMAL128",
             "DECIMAL256")
OBJECT_TYPES = ("BITMAP", "HLL")  # serialized sketches: binary in Spark, base64 on the wire


class SchemaMismatch(ValueError):
    """A DataFrame column the table cannot take (raised on the driver, before any load)."""


def doris_type(prop: dict[str, Any]) -> str:
    return str(prop["type"]).upper()


def spark_type(prop: dict[str, Any], bitmap_as_text: bool = False) -> T.DataType:
    """The Spark type of one `_schema` property (`bitmap_as_text`: the job asked for a BITMAP
    as text, doris.read.bitmap-to-string / -to-base64)."""
    name = doris_type(prop)
    if name in OBJECT_TYPES:
        return T.StringType() if bitmap_as_text and name == "BITMAP" else T.BinaryType()
    if name in _DECIMALS:
        return T.DecimalType(int(prop.get("precision", 38)), int(prop.get("scale", 0)))
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name in NESTED_TYPES and prop.get("full_type"):
        return nested_spark_type(str(prop["full_type"]))
    raise SchemaMismatch(f"column `{prop['name']}`: Doris type {name} is not supported by the "
                         "shaledb Spark data source yet (leave it out with doris.read.field)")


NESTED_TYPES = ("ARRAY", "MAP", "STRUCT")


def _split_top(text: str) -> list[str]:
    """`a,b<c,d>,e(1,2)` -> ['a', 'b<c,d>', 'e(1,2)']: commas outside <..> and (..)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "<("
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def nested_spark_type(text: str) -> T.DataType:
    """A Doris type as DESC prints it (`ARRAY<INT>`, `MAP<TEXT,DECIMAL(10,2)>`,
    `STRUCT<f1:INT,f2:ARRAY<TEXT>>`, or a scalar) -> the Spark type (elements nullable)."""
    text = text.strip()
    lt = text.find("<")
    if lt > 0 and text.endswith(">"):
        name, inner = text[:lt].strip().upper(), text[lt + 1:-1]
        parts = _split_top(inner)
        if name == "ARRAY" and len(parts) == 1:
            return T.ArrayType(nested_spark_type(parts[0]), True)
        if name == "MAP" and len(parts) == 2:
            return T.MapType(nested_spark_type(parts[0]), nested_spark_type(parts[1]), True)
        if name == "STRUCT":
            fields = [p.split(":", 1) for p in parts]
            return T.StructType([T.StructField(n.strip(), nested_spark_type(t), True)
                                 for n, t in fields])
        raise SchemaMismatch(f"unknown nested type {text}")
    base, _, params = text.partition("(")
    name = base.strip().upper()
    args = [int(a) for a in params.rstrip(")").split(",") if a.strip()] if params else []
    if name in _DECIMALS:
        return T.DecimalType(*(args or [9, 0])) if len(args) != 1 else T.DecimalType(args[0], 0)
    if name in _SIMPLE:
        return _SIMPLE[name]
    raise SchemaMismatch(f"Doris type {text} is not supported by the shaledb Spark data source")


def spark_schema(props: list[dict[str, Any]], fields: tuple[str, ...] = (),
                 bitmap_as_text: bool = False) -> T.StructType:
    """The table's schema as Spark sees it (only `fields`, in their order, when given)."""
    by_name = {p["name"].lower(): p for p in props}
    chosen = props
    if fields:
        missing = [f for f in fields if f.lower() not in by_name]
        if missing:
            raise SchemaMismatch(f"doris.read.field names unknown column `{missing[0]}`")
        chosen = [by_name[f.lower()] for f in fields]
    return T.StructType([T.StructField(p["name"], spark_type(p, bitmap_as_text),
                                       p.get("is_nullable") != "No",
                                       {DORIS_TYPE_KEY: doris_type(p)}) for p in chosen])


DORIS_TYPE_KEY = "doris_type"  # StructField metadata: the column's Doris type (reader.py)


def field_doris_type(f: T.StructField) -> str:
    """The Doris type a read schema's field came from ("" when the job gave its own schema)."""
    return str((f.metadata or {}).get(DORIS_TYPE_KEY, ""))


_INTS = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_WIDTH = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 4, T.LongType: 8}
_DORIS_WIDTH = {"TINYINT": 1, "SMALLINT": 2, "INT": 4, "BIGINT": 8, "LARGEINT": 16}


def _fits(doris: str, prop: dict[str, Any], st: T.DataType) -> bool:
    if isinstance(st, T.NullType):
        return True
    if doris in OBJECT_TYPES:  # the serialized value (a read's BinaryType column)
        return isinstance(st, T.BinaryType)
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
    if doris in NESTED_TYPES:  # the same kind of nested value (elements convert in the load)
        return isinstance(st, {"ARRAY": T.ArrayType, "MAP": T.MapType,
                               "STRUCT": T.StructType}[doris])
    return False


def check_write_schema(props: list[dict[str, Any]], schema: T.StructType, table: str,
                       sources: tuple[str, ...] = ()) -> None:
    """Every DataFrame column must name a table column whose type can take it, or a source
    column of the load's `columns` (doris.write.fields / sink property `columns`), which the
    server converts by its expression."""
    by_name = {p["name"].lower(): p for p in props}
    free = {s.lower() for s in sources if s.lower() not in by_name}
    for f in schema.fields:
        if f.name.lower() in free:
            continue
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


# ---- nested values from Doris' text (reads over the MySQL protocol) --------------------------
def nested_from_text(st: T.DataType, text: str | None) -> Any:
    """Doris' text of an ARRAY / MAP / STRUCT value (`[1, null]`, `{"k":1}`, `{"f1":1}`) as the
    Python value Spark's Arrow conversion takes for `st` (list, list of pairs, dict)."""
    if text is None:
        return None
    parser = _DorisText(text)
    return _typed(st, parser.value())


class _Pairs(list):
    """`{k:v, ..}` read from text: a MAP's entries or a STRUCT's fields by name."""


class _DorisText:
    """Recursive descent over Doris' nested text: [..], {..}, "quoted" and bare scalars."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def _space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def value(self) -> Any:
        self._space()
        ch = self.text[self.pos:self.pos + 1]
        if ch in ("[", "{"):
            return self._items("]" if ch == "[" else "}")
        if ch in ('"', "'"):
            end = self.text.index(ch, self.pos + 1)
            out = self.text[self.pos + 1:end]
            self.pos = end + 1
            return out
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ",]}:":
            self.pos += 1
        token = self.text[start:self.pos].strip()
        return None if token == "null" else _Bare(token)

    def _items(self, close: str) -> Any:
        self.pos += 1
        values: list[Any] = []
        pairs = _Pairs()
        self._space()
        if self.text[self.pos:self.pos + 1] == close:
            self.pos += 1
            return pairs if close == "}" else values
        while True:
            item = self.value()
            self._space()
            if self.text[self.pos:self.pos + 1] == ":":
                self.pos += 1
                pairs.append((item, self.value()))
                self._space()
            else:
                values.append(item)
            ch = self.text[self.pos:self.pos + 1]
            self.pos += 1
            if ch == close:
                return pairs if pairs else values
            if ch != ",":
                raise ValueError(f"not a Doris nested value: {self.text[:60]}")


class _Bare(str):
    """An unquoted scalar token (a number or boolean)."""


def _typed(st: T.DataType, v: Any) -> Any:
    import datetime as _dt
    from decimal import Decimal

    if v is None:
        return None
    if isinstance(st, T.ArrayType):
        return [_typed(st.elementType, x) for x in v]
    if isinstance(st, T.MapType):
        return [(_typed(st.keyType, k), _typed(st.valueType, x)) for k, x in v]
    if isinstance(st, T.StructType):
        by_name = {str(k).lower(): x for k, x in v} if isinstance(v, _Pairs) else \
            {f.name.lower(): x for f, x in zip(st.fields, v)}
        return {f.name: _typed(f.dataType, by_name.get(f.name.lower())) for f in st.fields}
    if isinstance(st, T.BooleanType):
        return str(v).lower() in ("1", "true")
    if isinstance(st, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return int(v)
    if isinstance(st, (T.FloatType, T.DoubleType)):
        return float(v)
    if isinstance(st, T.DecimalType):
        return Decimal(str(v))
    if isinstance(st, T.DateType):
        return _dt.date.fromisoformat(str(v))
    if isinstance(st, (T.TimestampNTZType, T.TimestampType)):
        return _dt.datetime.fromisoformat(str(v))
    return str(v)
