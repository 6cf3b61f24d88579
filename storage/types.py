"""Doris column types and their physical (numpy) representation.

Owns the one definition of every scalar type ShaleDB stores: its Doris spelling (as DESC and
SHOW CREATE TABLE print it), its numpy layout inside a `Column`, its value range, and conversion
between Python values and the physical representation. Upstream concept: Doris `PrimitiveType`
/ `ScalarType` (FE) and the BE field types (DATEV2, DATETIMEV2, DECIMALV3).

Physical layouts (all fixed-width columns are little-endian numpy arrays):
- BOOLEAN: uint8 0/1; TINYINT..BIGINT: int8..int64; FLOAT/DOUBLE: float32/float64.
- LARGEINT: numpy object array of Python ints (no native int128 in numpy).
- DECIMAL(p, s): unscaled integers, int64 when p <= 18, object (Python int) above.
- DATE: int32 days since 1970-01-01. DATETIME(p): int64 microseconds since 1970-01-01.
- CHAR/VARCHAR/STRING (and HLL/BITMAP blobs): Arrow large_string layout in the Column.
- ARRAY<T> / MAP<K,V> / STRUCT<f:T,...>: one canonical serialized cell per row in the same
  var-len layout (storage/nested.py owns that form and its conversions).
"""

from __future__ import annotations

import datetime as _dt
import enum
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation

import numpy as np


class TypeKind(enum.Enum):
    BOOLEAN = "BOOLEAN"
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    INT = "INT"
    BIGINT = "BIGINT"
    LARGEINT = "LARGEINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    DATE = "DATE"
    DATETIME = "DATETIME"
    CHAR = "CHAR"
    VARCHAR = "VARCHAR"
    STRING = "STRING"
    HLL = "HLL"
    BITMAP = "BITMAP"
    NULL = "NULL"  # type of a bare NULL literal before it is coerced
    ARRAY = "ARRAY"
    MAP = "MAP"
    STRUCT = "STRUCT"


INTEGER_KINDS = frozenset(
    {TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT, TypeKind.BIGINT, TypeKind.LARGEINT}
)
FLOAT_KINDS = frozenset({TypeKind.FLOAT, TypeKind.DOUBLE})
STRING_KINDS = frozenset({TypeKind.CHAR, TypeKind.VARCHAR, TypeKind.STRING})
NESTED_KINDS = frozenset({TypeKind.ARRAY, TypeKind.MAP, TypeKind.STRUCT})
# var-len cells that are not text: no zone maps, dictionaries, bloom filters or text kernels
BLOB_KINDS = frozenset({TypeKind.HLL, TypeKind.BITMAP}) | NESTED_KINDS
VARLEN_KINDS = STRING_KINDS | BLOB_KINDS
TEMPORAL_KINDS = frozenset({TypeKind.DATE, TypeKind.DATETIME})

_INT_RANGES = {
    TypeKind.BOOLEAN: (0, 1),
    TypeKind.TINYINT: (-(2**7), 2**7 - 1),
    TypeKind.SMALLINT: (-(2**15), 2**15 - 1),
    TypeKind.INT: (-(2**31), 2**31 - 1),
    TypeKind.BIGINT: (-(2**63), 2**63 - 1),
    TypeKind.LARGEINT: (-(2**127), 2**127 - 1),
}

_NUMPY_DTYPES: dict[TypeKind, np.dtype] = {
    TypeKind.BOOLEAN: np.dtype(np.uint8),
    TypeKind.TINYINT: np.dtype(np.int8),
    TypeKind.SMALLINT: np.dtype(np.int16),
    TypeKind.INT: np.dtype(np.int32),
    TypeKind.BIGINT: np.dtype(np.int64),
    TypeKind.LARGEINT: np.dtype(object),
    TypeKind.FLOAT: np.dtype(np.float32),
    TypeKind.DOUBLE: np.dtype(np.float64),
    TypeKind.DATE: np.dtype(np.int32),
    TypeKind.DATETIME: np.dtype(np.int64),
    TypeKind.NULL: np.dtype(np.int8),
}

# Byte widths Doris uses for fixed-width keys (short-key prefix budget, bucket hash encodings).
_FIXED_WIDTH = {
    TypeKind.BOOLEAN: 1,
    TypeKind.TINYINT: 1,
    TypeKind.SMALLINT: 2,
    TypeKind.INT: 4,
    TypeKind.BIGINT: 8,
    TypeKind.LARGEINT: 16,
    TypeKind.FLOAT: 4,
    TypeKind.DOUBLE: 8,
    TypeKind.DATE: 4,
    TypeKind.DATETIME: 8,
}

MAX_VARCHAR_LENGTH = 65533
MAX_CHAR_LENGTH = 255
STRING_LENGTH = 2147483643
MAX_DECIMAL_PRECISION = 38

EPOCH_DATE = _dt.date(1970, 1, 1)
EPOCH_DATETIME = _dt.datetime(1970, 1, 1)
# Decimal arithmetic wide enough for DECIMAL(38) exactly: the default context keeps 28 digits
# and silently rounded 29..38-digit values (12345678901234567890123456789012345 became
# ...6790000000). Pass it to scaleb() and friends.
EXACT_DECIMALS = Context(prec=100)

MIN_DATE = _dt.date(1, 1, 1)  # Python's floor; Doris allows 0000-01-01 which we print for ranges
MAX_DATE = _dt.date(9999, 12, 31)


class TypeError_(ValueError):
    """A value does not fit a column type; message is user-facing."""


@dataclass(frozen=True, slots=True)
class DataType:
    """A Doris type. `length` for CHAR/VARCHAR; `precision`/`scale` for DECIMAL/DATETIME;
    `children` for nested types (ARRAY: the element; MAP: key, value; STRUCT: the fields, named
    by `field_names`)."""

    kind: TypeKind
    length: int = 0
    precision: int = 0
    scale: int = 0
    children: tuple[DataType, ...] = ()
    field_names: tuple[str, ...] = ()

    # ---- classification -------------------------------------------------------------------
    @property
    def is_integer(self) -> bool:
        return self.kind in INTEGER_KINDS

    @property
    def is_float(self) -> bool:
        return self.kind in FLOAT_KINDS

    @property
    def is_decimal(self) -> bool:
        return self.kind is TypeKind.DECIMAL

    @property
    def is_numeric(self) -> bool:
        return self.is_integer or self.is_float or self.is_decimal or self.kind is TypeKind.BOOLEAN

    @property
    def is_string(self) -> bool:
        return self.kind in STRING_KINDS

    @property
    def is_varlen(self) -> bool:
        return self.kind in VARLEN_KINDS

    @property
    def is_nested(self) -> bool:
        return self.kind in NESTED_KINDS

    @property
    def is_temporal(self) -> bool:
        return self.kind in TEMPORAL_KINDS

    @property
    def is_object(self) -> bool:
        """Physical values are Python objects (LARGEINT, DECIMAL with precision > 18)."""
        return self.kind is TypeKind.LARGEINT or (self.is_decimal and self.precision > 18)

    @property
    def numpy_dtype(self) -> np.dtype:
        if self.is_decimal:
            return np.dtype(object) if self.precision > 18 else np.dtype(np.int64)
        if self.is_varlen:
            return np.dtype(np.uint8)
        return _NUMPY_DTYPES[self.kind]

    @property
    def fixed_width(self) -> int | None:
        """Width in bytes of the storage encoding, None for variable-length types."""
        if self.is_decimal:
            return 4 if self.precision <= 9 else 8 if self.precision <= 18 else 16
        return _FIXED_WIDTH.get(self.kind)

    # ---- spelling -------------------------------------------------------------------------
    def sql(self) -> str:
        """Doris' own spelling, as SHOW CREATE TABLE and DESC print it (lower case)."""
        k = self.kind
        if k in NESTED_KINDS:
            return self._nested_sql(lambda c: c.sql())
        if k is TypeKind.DECIMAL:
            return f"decimal({self.precision},{self.scale})"
        if k is TypeKind.DATETIME:
            return f"datetime({self.scale})" if self.scale else "datetime"
        if k is TypeKind.CHAR:
            return f"char({self.length})"
        if k is TypeKind.VARCHAR:
            return f"varchar({self.length})"
        if k is TypeKind.STRING:
            return "text"
        return k.value.lower()

    def desc_sql(self) -> str:
        """Spelling in DESC output (Doris IndexSchemaProcNode: INT, VARCHAR(20), DATETIME(3)).

        DECIMAL prints its precision and scale only when scale > 0 and precision != 9.
        """
        k = self.kind
        if k in NESTED_KINDS:
            return self._nested_sql(DataType.desc_child, upper=True)
        if k is TypeKind.DECIMAL:
            if self.scale > 0 and self.precision != 9:
                return f"DECIMAL({self.precision}, {self.scale})"
            return "DECIMAL"
        if k is TypeKind.STRING:
            return "TEXT"
        return self.sql().upper()

    def desc_child(self) -> str:
        """An element type inside a nested type in DESC: upper-case `sql()` (DECIMAL keeps
        its precision and scale there), field names as declared."""
        if self.kind in NESTED_KINDS:
            return self._nested_sql(DataType.desc_child, upper=True)
        return self.sql().upper()

    def _nested_sql(self, child_sql: Callable[[DataType], str], upper: bool = False) -> str:
        """`array<int>`, `map<text,int>`, `struct<f1:int,f2:text>` (DESC: upper-case type
        names, field names as declared)."""
        name = self.kind.value if upper else self.kind.value.lower()
        if self.kind is TypeKind.STRUCT:
            inner = ",".join(f"{n}:{child_sql(c)}" for n, c in zip(self.field_names, self.children))
        else:
            inner = ",".join(child_sql(c) for c in self.children)
        return f"{name}<{inner}>"

    def internal_sql(self) -> str:
        """The InternalType column of DESC ALL (DATEV2, DATETIMEV2(s), DECIMALV3(p,s), ...)."""
        k = self.kind
        if k is TypeKind.DATE:
            return "DATEV2"
        if k is TypeKind.DATETIME:
            return f"DATETIMEV2({self.scale})"
        if k is TypeKind.DECIMAL:
            return f"DECIMALV3({self.precision}, {self.scale})"
        if k is TypeKind.CHAR:
            return f"CHAR({self.length})"
        if k is TypeKind.VARCHAR:
            return f"VARCHAR({self.length})"
        if k in NESTED_KINDS:
            return self.desc_sql()
        return k.value

    def __str__(self) -> str:
        return self.sql()

    # ---- values ---------------------------------------------------------------------------
    def int_range(self) -> tuple[int, int]:
        if self.is_decimal:
            bound = 10**self.precision - 1
            return -bound, bound
        return _INT_RANGES[self.kind]

    def to_physical(self, value: object) -> object:
        """Convert a Python value (int, float, str, Decimal, date, datetime, bytes) to storage.

        Raises TypeError_ with a message naming the problem; callers add the column name.
        """
        if value is None:
            return None
        k = self.kind
        if k is TypeKind.BOOLEAN:
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("true", "1"):
                    return 1
                if low in ("false", "0"):
                    return 0
                raise TypeError_(f"'{value}' is not a valid boolean")
            return 1 if value else 0
        if k in INTEGER_KINDS:
            iv = _to_int(value)
            lo, hi = _INT_RANGES[k]
            if not lo <= iv <= hi:
                raise TypeError_(f"Number out of range[{value}]. type: {self.sql().upper()}")
            return iv
        if k in FLOAT_KINDS:
            try:
                return float(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise TypeError_(f"'{value}' is not a valid number") from None
        if k is TypeKind.DECIMAL:
            return _to_decimal_unscaled(value, self.precision, self.scale)
        if k is TypeKind.DATE:
            return date_to_days(parse_date(value))
        if k is TypeKind.DATETIME:
            return datetime_to_micros(parse_datetime(value), self.scale)
        if k in STRING_KINDS:
            s = value if isinstance(value, str) else _scalar_text(value)
            if k is not TypeKind.STRING:
                n = len(s.encode("utf-8"))
                if n > self.length:
                    raise TypeError_(
                        f"the length of input string is too long than schema. "
                        f"input: {s[:40]} length: {n}, schema length: {self.length}"
                    )
            return s
        if k in NESTED_KINDS:
            from storage import nested  # deferred: nested builds on this module
            return nested.encode(self, value)
        if k in BLOB_KINDS:
            return value if isinstance(value, (bytes, str)) else str(value)
        raise TypeError_(f"unsupported type {self.sql()}")

    def to_python(self, physical: object) -> object:
        """Storage value -> Python value as a client sees it (Decimal, date, datetime, str, ...)."""
        if physical is None:
            return None
        k = self.kind
        if k is TypeKind.DECIMAL:
            return Decimal(int(physical)).scaleb(  # type: ignore[call-overload]
                -self.scale, EXACT_DECIMALS)
        if k is TypeKind.DATE:
            return days_to_date(int(physical))  # type: ignore[call-overload]
        if k is TypeKind.DATETIME:
            return micros_to_datetime(int(physical))  # type: ignore[call-overload]
        if k is TypeKind.BOOLEAN:
            return int(physical)  # type: ignore[call-overload]
        if k in INTEGER_KINDS:
            return int(physical)  # type: ignore[call-overload]
        if k in FLOAT_KINDS:
            return float(physical)  # type: ignore[arg-type]
        if k in NESTED_KINDS and isinstance(physical, bytes):
            from storage import nested  # deferred: nested builds on this module
            return nested.to_python(self, physical)
        return physical

    def format_value(self, physical: object) -> str | None:
        """Text form sent over the MySQL text protocol (Doris formatting)."""
        if physical is None:
            return None
        k = self.kind
        if k is TypeKind.DECIMAL:
            return format_decimal(int(physical), self.scale)  # type: ignore[call-overload]
        if k is TypeKind.DATE:
            return days_to_date(int(physical)).isoformat()  # type: ignore[call-overload]
        if k is TypeKind.DATETIME:
            return format_datetime(int(physical), self.scale)  # type: ignore[call-overload]
        if k is TypeKind.FLOAT:
            return format_float(float(physical), single=True)  # type: ignore[arg-type]
        if k is TypeKind.DOUBLE:
            return format_float(float(physical))  # type: ignore[arg-type]
        if k in INTEGER_KINDS or k is TypeKind.BOOLEAN:
            return str(int(physical))  # type: ignore[call-overload]
        if k in NESTED_KINDS and isinstance(physical, bytes):
            from storage import nested  # deferred: nested builds on this module
            return nested.format_text(self, physical)
        if isinstance(physical, bytes):
            return physical.decode("utf-8", "replace")
        return str(physical)


# ---- constructors -------------------------------------------------------------------------
BOOLEAN = DataType(TypeKind.BOOLEAN)
TINYINT = DataType(TypeKind.TINYINT)
SMALLINT = DataType(TypeKind.SMALLINT)
INT = DataType(TypeKind.INT)
BIGINT = DataType(TypeKind.BIGINT)
LARGEINT = DataType(TypeKind.LARGEINT)
FLOAT = DataType(TypeKind.FLOAT)
DOUBLE = DataType(TypeKind.DOUBLE)
DATE = DataType(TypeKind.DATE)
STRING = DataType(TypeKind.STRING, length=STRING_LENGTH)
NULL = DataType(TypeKind.NULL)


def decimal(precision: int, scale: int) -> DataType:
    return DataType(TypeKind.DECIMAL, precision=precision, scale=scale)


def datetime(scale: int = 0) -> DataType:
    return DataType(TypeKind.DATETIME, scale=scale)


def varchar(length: int) -> DataType:
    return DataType(TypeKind.VARCHAR, length=length)


def char(length: int) -> DataType:
    return DataType(TypeKind.CHAR, length=length)


_TYPE_TEXT = re.compile(r"^\s*([a-z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$", re.IGNORECASE)


def array_of(element: DataType) -> DataType:
    return DataType(TypeKind.ARRAY, children=(element,))


def map_of(key: DataType, value: DataType) -> DataType:
    return DataType(TypeKind.MAP, children=(key, value))


def struct_of(fields: Sequence[tuple[str, DataType]]) -> DataType:
    return DataType(TypeKind.STRUCT, children=tuple(t for _, t in fields),
                    field_names=tuple(n for n, _ in fields))


def _split_top(text: str, sep: str) -> list[str]:
    """Split at `sep` outside <...> and (...)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _parse_nested(name: str, inner: str) -> DataType:
    parts = [p.strip() for p in _split_top(inner, ",")]
    if name == "ARRAY" and len(parts) == 1:
        return array_of(parse_type(parts[0]))
    if name == "MAP" and len(parts) == 2:
        return map_of(parse_type(parts[0]), parse_type(parts[1]))
    if name == "STRUCT" and parts and all(":" in p for p in parts):
        fields = []
        for p in parts:
            fname, ftype = p.split(":", 1)
            fields.append((fname.strip().strip("`"), parse_type(ftype)))
        return struct_of(fields)
    raise ValueError(f"unknown type {name}<{inner}>")


def parse_type(text: str) -> DataType:
    """Parse our own spelling back (the catalog stores `DataType.sql()` text)."""
    stripped = text.strip()
    lt = stripped.find("<")
    if lt > 0 and stripped.endswith(">"):
        return _parse_nested(stripped[:lt].strip().upper(), stripped[lt + 1:-1])
    m = _TYPE_TEXT.match(text)
    if not m:
        raise ValueError(f"unknown type {text!r}")
    name, a, b = m.group(1).upper(), m.group(2), m.group(3)
    if name in ("DECIMAL", "DECIMALV3", "DECIMALV2"):
        return decimal(int(a) if a else 9, int(b) if b else 0)
    if name in ("DATETIME", "DATETIMEV2"):
        return datetime(int(a) if a else 0)
    if name in ("DATEV2",):
        return DATE
    if name == "CHAR":
        return char(int(a) if a else 1)
    if name == "VARCHAR":
        return varchar(int(a) if a else MAX_VARCHAR_LENGTH)
    if name in ("TEXT", "STRING"):
        return STRING
    return DataType(TypeKind(name))


# ---- value helpers ------------------------------------------------------------------------
def _scalar_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _to_int(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError_(f"'{value}' is not a valid integer")
        return int(value)
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, str):
        s = value.strip()
        try:
            return int(s)
        except ValueError:
            try:
                return int(Decimal(s))
            except InvalidOperation:
                raise TypeError_(f"'{value}' is not a valid integer") from None
    raise TypeError_(f"'{value}' is not a valid integer")




def _to_decimal_unscaled(value: object, precision: int, scale: int) -> int:
    try:
        d = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise TypeError_(f"'{value}' is not a valid decimal") from None
    if not d.is_finite():
        raise TypeError_(f"'{value}' is not a valid decimal")
    unscaled = int(d.scaleb(scale, EXACT_DECIMALS).to_integral_value(rounding="ROUND_HALF_UP"))
    if abs(unscaled) > 10**precision - 1:
        raise TypeError_(f"Number out of range[{value}]. type: DECIMAL({precision},{scale})")
    return unscaled


def format_decimal(unscaled: int, scale: int) -> str:
    if scale == 0:
        return str(unscaled)
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def format_float(v: float, single: bool = False) -> str:
    """MySQL/Doris-style float text: integers without '.0', shortest round-trip otherwise."""
    if math.isnan(v):
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    if single:
        text = repr(float(np.float32(v)))
        text = np.format_float_positional(np.float32(v), trim="-") if "e" not in text else text
    else:
        text = repr(v)
    return text.removesuffix(".0")


_DATE_RE = re.compile(r"^\s*(\d{1,4})-(\d{1,2})-(\d{1,2})\s*$")
_DATE_COMPACT_RE = re.compile(r"^\s*(\d{4})(\d{2})(\d{2})\s*$")
_DATETIME_RE = re.compile(
    r"^\s*(\d{1,4})-(\d{1,2})-(\d{1,2})"
    r"(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6}))?)?)?\s*$"
)


def parse_date(value: object) -> _dt.date:
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    text = str(value)
    m = _DATE_RE.match(text) or _DATE_COMPACT_RE.match(text)
    if not m:
        dt_m = _DATETIME_RE.match(text)
        if dt_m:
            return parse_datetime(text).date()
        raise TypeError_(f"Invalid date value: '{text}'")
    try:
        return _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        raise TypeError_(f"Invalid date value: '{text}'") from None


def parse_datetime(value: object) -> _dt.datetime:
    if isinstance(value, _dt.datetime):
        return value
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day)
    text = str(value)
    m = _DATETIME_RE.match(text)
    if not m:
        cm = _DATE_COMPACT_RE.match(text)
        if cm:
            return parse_datetime(f"{cm.group(1)}-{cm.group(2)}-{cm.group(3)}")
        raise TypeError_(f"Invalid datetime value: '{text}'")
    y, mo, d, h, mi, s, frac = m.groups()
    try:
        return _dt.datetime(
            int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0),
            int((frac or "0").ljust(6, "0")),
        )
    except ValueError:
        raise TypeError_(f"Invalid datetime value: '{text}'") from None


def date_to_days(d: _dt.date) -> int:
    return (d - EPOCH_DATE).days


def days_to_date(days: int) -> _dt.date:
    return EPOCH_DATE + _dt.timedelta(days=days)


def datetime_to_micros(d: _dt.datetime, scale: int = 6) -> int:
    micros = (d - EPOCH_DATETIME) // _dt.timedelta(microseconds=1)
    if scale < 6:
        unit = 10 ** (6 - scale)
        micros = (micros // unit) * unit  # Doris truncates to the declared precision
    return micros


def micros_to_datetime(micros: int) -> _dt.datetime:
    return EPOCH_DATETIME + _dt.timedelta(microseconds=micros)


def format_datetime(micros: int, scale: int) -> str:
    d = micros_to_datetime(micros)
    text = d.strftime("%Y-%m-%d %H:%M:%S")
    if d.year < 1000:
        text = f"{d.year:04d}" + text[len(str(d.year)):]
    if scale:
        text += "." + f"{d.microsecond:06d}"[:scale]
    return text
