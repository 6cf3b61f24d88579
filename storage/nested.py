"""ARRAY / MAP / STRUCT values: their one storage form and its conversions at the edges.

Owns the canonical serialized form of a nested value (one var-len blob per row in a `Column`,
carried as offsets + bytes like HLL/BITMAP cells), and every conversion of it:
Python values (INSERT literals, JSON loads), Doris' text form (MySQL protocol, CSV loads,
CAST from strings) and Arrow nested arrays (Arrow/Parquet loads, Flight SQL, the Spark source).
Upstream: Doris `ColumnArray` / `ColumnMap` / `ColumnStruct` and their text serdes
(`DataTypeArraySerDe::serialize_one_cell_to_json` ...), which print `[1, 2, null]`,
`{"a":1, "b":null}` and `{"f1":1, "f2":"x"}`.

Why a serialized blob and not child columns: every layer (memtable, segments, merge, exchange,
rollups) already moves var-len cells, so a nested column works everywhere at once; the price is
that element access decodes the cell (Python speed), which is acceptable for value columns that
Doris itself cannot filter by index either.

The canonical form is compact JSON (no spaces, UTF-8, `NaN`/`Infinity` kept) of the *physical*
tree: scalars in their storage form (ints for integers, DECIMAL unscaled, DATE days, DATETIME
micros, floats, str), an ARRAY as a list, a MAP as a list of `[key, value]` pairs (keeps order
and non-string keys), a STRUCT as the list of its field values in declaration order. Equal
values therefore have equal bytes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

from storage.types import (
    INTEGER_KINDS,
    DataType,
    TypeError_,
    TypeKind,
)

Tree = Any  # a physical tree: None | int | float | str | list[Tree]


# ---- Python values <-> canonical bytes ----------------------------------------------------
def encode(t: DataType, value: object) -> bytes:
    """A Python value (list / dict / tuple / Doris text / canonical bytes) -> canonical bytes.

    Raises TypeError_ naming the problem when an element does not fit its type.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)  # already canonical (a stored cell)
    if isinstance(value, str):
        value = parse_text(t, value)
    return dump(physical_tree(t, value))


def dump(tree: Tree) -> bytes:
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def load(blob: bytes) -> Tree:
    return json.loads(blob)


def physical_tree(t: DataType, value: object) -> Tree:
    """Logical Python value of type t -> physical tree (elements converted and checked)."""
    if value is None:
        return None
    k = t.kind
    if k is TypeKind.ARRAY:
        if type(value) is not list and (isinstance(value, (str, bytes, Mapping, _Pairs))
                                        or not isinstance(value, Iterable)):
            raise TypeError_(f"'{_short(value)}' is not a valid {t.sql().upper()}")
        child = t.children[0]
        if not child.is_nested:  # the common case: one converter, no recursion per element
            convert = _scalar_converter(child)
            return [None if v is None else convert(v) for v in value]
        return [physical_tree(child, v) for v in value]
    if k is TypeKind.MAP:
        key_t, val_t = t.children
        pairs = value.items() if isinstance(value, (Mapping, _Pairs)) else _pairs(t, value)
        out = []
        for key, val in pairs:
            out.append([physical_tree(key_t, key), physical_tree(val_t, val)])
        return out
    if k is TypeKind.STRUCT:
        return _struct_tree(t, value)
    return _scalar_converter(t)(value)


@functools.lru_cache(maxsize=512)
def _scalar_converter(t: DataType) -> Callable[[object], object]:
    """`t.to_physical` for one element type, with fast paths for values already in their
    physical form (profiled: the generic path was 80% of encoding, docs/performance.md)."""
    k = t.kind
    if k in INTEGER_KINDS:
        lo, hi = t.int_range()

        def integer(v: object) -> object:
            if type(v) is int and lo <= v <= hi:
                return v
            return t.to_physical(v)
        return integer
    if k is TypeKind.STRING:
        return lambda v: v if type(v) is str else t.to_physical(v)
    if k is TypeKind.DOUBLE:
        return lambda v: v if type(v) is float else t.to_physical(v)
    return t.to_physical


def _pairs(t: DataType, value: object) -> list[tuple[object, object]]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError_(f"'{_short(value)}' is not a valid {t.sql().upper()}")
    pairs = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise TypeError_(f"'{_short(value)}' is not a valid {t.sql().upper()}")
        pairs.append((item[0], item[1]))
    return pairs


def _struct_tree(t: DataType, value: object) -> Tree:
    names = t.field_names
    if isinstance(value, StructValue):
        value = list(value.values())
    if isinstance(value, (Mapping, _Pairs)):
        lower = {str(key).lower(): v for key, v in value.items()}
        unknown = set(lower) - {n.lower() for n in names}
        if unknown:
            raise TypeError_(f"'{_short(value)}' is not a valid {t.sql().upper()}: "
                             f"no field {min(unknown)}")
        items = [lower.get(n.lower()) for n in names]
    elif isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise TypeError_(f"'{_short(value)}' is not a valid {t.sql().upper()}: "
                             f"{len(value)} values for {len(names)} fields")
        items = list(value)
    else:
        raise TypeError_(f"'{_short(value)}' is not a valid {t.sql().upper()}")
    return [physical_tree(c, v) for c, v in zip(t.children, items)]


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:40] + "..."


def to_python(t: DataType, blob: bytes) -> object:
    """Canonical bytes -> logical Python value: list, dict (MAP), dict by field (STRUCT)."""
    return python_value(t, load(blob))


def python_value(t: DataType, tree: Tree) -> object:
    if tree is None:
        return None
    k = t.kind
    if k is TypeKind.ARRAY:
        return [python_value(t.children[0], v) for v in tree]
    if k is TypeKind.MAP:
        key_t, val_t = t.children
        return {python_value(key_t, kk): python_value(val_t, vv) for kk, vv in tree}
    if k is TypeKind.STRUCT:
        return StructValue(
            (n, python_value(c, v)) for n, c, v in zip(t.field_names, t.children, tree))
    return t.to_python(tree)


class StructValue(dict):
    """A STRUCT value read from a cell: its fields by name, in declaration order. Converting
    it to another STRUCT type goes by position, as Doris casts struct to struct."""


# ---- Doris text ---------------------------------------------------------------------------
_QUOTED_KINDS = frozenset({TypeKind.CHAR, TypeKind.VARCHAR, TypeKind.STRING, TypeKind.DATE,
                           TypeKind.DATETIME})


def format_text(t: DataType, blob: bytes) -> str:
    """Doris' text of a nested cell: `[1, 2, null]`, `{"a":1, "b":2}`, `{"f1":1, "f2":"x"}`."""
    return _format(t, load(blob))


def _format(t: DataType, tree: Tree) -> str:
    if tree is None:
        return "null"
    k = t.kind
    if k is TypeKind.ARRAY:
        child = t.children[0]
        if not child.is_nested:  # one formatter for all elements, no recursion per element
            fmt = _scalar_formatter(child)
            return "[" + ", ".join("null" if v is None else fmt(v) for v in tree) + "]"
        return "[" + ", ".join(_format(child, v) for v in tree) + "]"
    if k is TypeKind.MAP:
        key_t, val_t = t.children
        return "{" + ", ".join(f"{_format(key_t, kk)}:{_format(val_t, vv)}"
                               for kk, vv in tree) + "}"
    if k is TypeKind.STRUCT:
        return "{" + ", ".join(f'"{n}":{_format(c, v)}'
                               for n, c, v in zip(t.field_names, t.children, tree)) + "}"
    return _scalar_formatter(t)(tree)


@functools.lru_cache(maxsize=512)
def _scalar_formatter(t: DataType) -> Callable[[Any], str]:
    """Doris' text of one non-NULL scalar element of type t (quoted strings and dates)."""
    k = t.kind
    if k in INTEGER_KINDS:
        return str
    if k in (TypeKind.CHAR, TypeKind.VARCHAR, TypeKind.STRING):
        return lambda v: f'"{v}"'
    if k in _QUOTED_KINDS:
        return lambda v: f'"{t.format_value(v) or ""}"'
    return lambda v: t.format_value(v) or ""


def parse_text(t: DataType, text: str) -> object:
    """Doris text (or JSON) of a nested value -> Python value for `physical_tree`.

    Accepts what Doris accepts in CSV loads and string casts: `[1, 2, null]`, `["a", 'b']`,
    `{"k":1, 'k2':null}`, `{1, "x"}` (a STRUCT by position) and `{"f1":1}` (by name).
    """
    parser = _TextParser(text)
    value = parser.value()
    parser.skip_space()
    if parser.pos != len(text):
        raise TypeError_(f"'{_short(text)}' is not a valid {t.sql().upper()}")
    return value


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


class _TextParser:
    """Recursive descent over Doris' nested text: brackets, braces, quoted and bare scalars."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _fail(self) -> TypeError_:
        return TypeError_(f"'{_short(self.text)}' is not a valid nested value")

    def value(self) -> object:
        self.skip_space()
        if self.pos >= len(self.text):
            raise self._fail()
        ch = self.text[self.pos]
        if ch == "[":
            return self._sequence("]")
        if ch == "{":
            return self._braces()
        if ch in "\"'":
            return self._quoted(ch)
        return self._bare()

    def _sequence(self, close: str) -> list[object]:
        self.pos += 1
        out: list[object] = []
        self.skip_space()
        if self.pos < len(self.text) and self.text[self.pos] == close:
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            self.skip_space()
            if self.pos >= len(self.text):
                raise self._fail()
            ch = self.text[self.pos]
            self.pos += 1
            if ch == close:
                return out
            if ch != ",":
                raise self._fail()

    def _braces(self) -> object:
        """`{k:v, ...}` -> list of pairs (a MAP, or a STRUCT by name); `{v, ...}` -> list."""
        self.pos += 1
        pairs: list[tuple[object, object]] = []
        values: list[object] = []
        self.skip_space()
        if self.pos < len(self.text) and self.text[self.pos] == "}":
            self.pos += 1
            return _Pairs()
        while True:
            item = self.value()
            self.skip_space()
            if self.pos < len(self.text) and self.text[self.pos] == ":":
                self.pos += 1
                pairs.append((item, self.value()))
                self.skip_space()
            else:
                values.append(item)
            if self.pos >= len(self.text):
                raise self._fail()
            ch = self.text[self.pos]
            self.pos += 1
            if ch == "}":
                break
            if ch != ",":
                raise self._fail()
        if pairs and values:
            raise self._fail()
        return _Pairs(pairs) if pairs else values

    def _quoted(self, quote: str) -> str:
        self.pos += 1
        out = []
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "\\" and self.pos + 1 < len(self.text):
                out.append(self._escape())
                continue
            if ch == quote:
                self.pos += 1
                return "".join(out)
            out.append(ch)
            self.pos += 1
        raise self._fail()

    def _escape(self) -> str:
        """A backslash escape (JSON's, as a JSON load hands nested values over as text)."""
        nxt = self.text[self.pos + 1]
        hex_digits = self.text[self.pos + 2:self.pos + 6]
        if nxt == "u" and len(hex_digits) == 4:
            try:
                code = int(hex_digits, 16)
            except ValueError:
                code = -1
            if code >= 0:
                self.pos += 6
                marker = self.text[self.pos:self.pos + 2]
                low_digits = self.text[self.pos + 2:self.pos + 6]
                if 0xD800 <= code < 0xDC00 and marker == "\\u":  # surrogate pair
                    try:
                        code2 = int(low_digits, 16)
                    except ValueError:
                        code2 = -1
                    if 0xDC00 <= code2 < 0xE000:
                        self.pos += 6
                        return chr(0x10000 + ((code - 0xD800) << 10) + (code2 - 0xDC00))
                return chr(code)
        self.pos += 2
        return _ESCAPES.get(nxt, nxt)

    def _bare(self) -> object:
        start = self.pos
        depth_stop = ",]}:"
        while self.pos < len(self.text) and self.text[self.pos] not in depth_stop:
            self.pos += 1
        token = self.text[start:self.pos].strip()
        if not token:
            raise self._fail()
        return None if token.lower() == "null" else token


class _Pairs(list):
    """Key/value pairs read from `{k:v}` text: a MAP's entries or a STRUCT's named fields."""

    def items(self) -> list[tuple[object, object]]:
        return list(self)


# ---- Arrow --------------------------------------------------------------------------------
def arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type of a column of type t (nested types recursively)."""
    k = t.kind
    if k is TypeKind.ARRAY:
        return pa.list_(arrow_type(t.children[0]))
    if k is TypeKind.MAP:
        return pa.map_(arrow_type(t.children[0]), arrow_type(t.children[1]))
    if k is TypeKind.STRUCT:
        return pa.struct([pa.field(n, arrow_type(c)) for n, c in zip(t.field_names, t.children)])
    return _SCALAR_ARROW.get(k) or _parametric_arrow(t)


_SCALAR_ARROW: dict[TypeKind, pa.DataType] = {
    TypeKind.BOOLEAN: pa.bool_(), TypeKind.TINYINT: pa.int8(), TypeKind.SMALLINT: pa.int16(),
    TypeKind.INT: pa.int32(), TypeKind.BIGINT: pa.int64(), TypeKind.FLOAT: pa.float32(),
    TypeKind.DOUBLE: pa.float64(), TypeKind.DATE: pa.date32(), TypeKind.CHAR: pa.string(),
    TypeKind.VARCHAR: pa.string(), TypeKind.STRING: pa.string(), TypeKind.NULL: pa.null(),
    TypeKind.LARGEINT: pa.decimal256(39, 0),
}


def _parametric_arrow(t: DataType) -> pa.DataType:
    if t.kind is TypeKind.DECIMAL:
        return pa.decimal128(t.precision, t.scale)
    if t.kind is TypeKind.DATETIME:
        return pa.timestamp("us")
    raise TypeError_(f"type {t.sql()} can not be an element of a nested column")


def _arrow_value(t: DataType, tree: Tree) -> object:
    """Physical tree -> the Python value pyarrow builds `arrow_type(t)` from."""
    if tree is None:
        return None
    k = t.kind
    if k is TypeKind.ARRAY:
        return [_arrow_value(t.children[0], v) for v in tree]
    if k is TypeKind.MAP:
        key_t, val_t = t.children
        return [(_arrow_value(key_t, kk), _arrow_value(val_t, vv)) for kk, vv in tree]
    if k is TypeKind.STRUCT:
        return {n: _arrow_value(c, v) for n, c, v in zip(t.field_names, t.children, tree)}
    if k is TypeKind.BOOLEAN:
        return bool(tree)
    if k is TypeKind.LARGEINT:
        return Decimal(int(tree))
    return t.to_python(tree)


def to_arrow(t: DataType, blobs: Sequence[bytes | None]) -> pa.Array:
    """Cells (None = NULL) -> an Arrow nested array of `arrow_type(t)`."""
    values = [None if b is None else _arrow_value(t, load(b)) for b in blobs]
    return pa.array(values, type=arrow_type(t))


def from_arrow(t: DataType, array: pa.Array | pa.ChunkedArray) -> list[bytes | None]:
    """An Arrow list/map/struct array (or a string array of Doris text) -> cells."""
    return [None if v is None else encode(t, v) for v in array.to_pylist()]
