"""Wire encoding of results: column definitions, text rows, OK (with Doris' info) and errors.

`format_column` holds the text rules of every type (numpy formats dates and datetimes in bulk,
Python the rest) and `encode_rows` builds one row packet payload per row from them. This
per-row path is the reference for, and the fallback of, the columnar encoder that actually
streams results (server/text_encoding.py, executor/kernels/text_protocol.py): values a kernel
declines are formatted here. OK packets carry Doris' info string
(`{'label':'insert_..', 'status':'VISIBLE', 'txnId':'..'}`); error packets carry the SQLSTATE of
each code, which mysql-mimic's own builder does not know for most codes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from mysql_mimic.charset import CharacterSet
from mysql_mimic.types import Capabilities, ColumnType

from storage.batch import Batch, Column
from storage.types import DataType, TypeKind, format_decimal, format_float

# Doris 2.1 `PrimitiveType.toMysqlType`: LARGEINT goes out as a string column (MySQL has no
# 128-bit integer; Doris' `use_mysql_bigint_for_largeint` defaults to false), CHAR/HLL/BITMAP
# as MYSQL_TYPE_STRING, STRING as MYSQL_TYPE_BLOB (what MySQL sends for TEXT).
# Deliberate deviations, both for JDBC / Spark: Doris' MYSQL_TYPE_STRING makes Connector/J
# report CHAR(length / 3), and Spark (read-side char padding) then pads every value with spaces
# to that many characters, a pain point Doris users hit with Spark JDBC reads.
# - VARCHAR goes out as MYSQL_TYPE_VAR_STRING, as MySQL sends it.
# - LARGEINT goes out as MYSQL_TYPE_VAR_STRING too: still a text column (drivers return the
#   exact value as str, as from Doris), read by JDBC as VARCHAR, so Spark reads the exact digits
#   unpadded. (A DECIMAL(39, 0) column would not do: Spark's decimals stop at 38 digits.)
_COLUMN_TYPES = {
    TypeKind.BOOLEAN: ColumnType.TINY,
    TypeKind.TINYINT: ColumnType.TINY,
    TypeKind.SMALLINT: ColumnType.SHORT,
    TypeKind.INT: ColumnType.LONG,
    TypeKind.BIGINT: ColumnType.LONGLONG,
    TypeKind.LARGEINT: ColumnType.VAR_STRING,
    TypeKind.FLOAT: ColumnType.FLOAT,
    TypeKind.DOUBLE: ColumnType.DOUBLE,
    TypeKind.DECIMAL: ColumnType.NEWDECIMAL,
    TypeKind.DATE: ColumnType.DATE,
    TypeKind.DATETIME: ColumnType.DATETIME,
    TypeKind.CHAR: ColumnType.STRING,
    TypeKind.VARCHAR: ColumnType.VAR_STRING,
    TypeKind.STRING: ColumnType.BLOB,
    TypeKind.HLL: ColumnType.STRING,
    TypeKind.BITMAP: ColumnType.STRING,
    TypeKind.NULL: ColumnType.NULL,
    # nested values travel as their Doris text (`[1, 2]`, `{"a":1}`)
    TypeKind.ARRAY: ColumnType.STRING,
    TypeKind.MAP: ColumnType.STRING,
    TypeKind.STRUCT: ColumnType.STRING,
}

# Doris `MysqlSerializer.getMysqlTypeLength`: the display width of each type.
_COLUMN_LENGTHS = {
    TypeKind.BOOLEAN: 1,
    TypeKind.TINYINT: 4,
    TypeKind.SMALLINT: 6,
    TypeKind.INT: 11,
    TypeKind.BIGINT: 20,
    TypeKind.FLOAT: 12,
    TypeKind.DOUBLE: 22,
    TypeKind.DATE: 10,
    TypeKind.DATETIME: 19,
}
DEFAULT_LENGTH = 255  # Doris' default (LARGEINT, strings, HLL, BITMAP, NULL)
# CHAR(n) announces n x 3 bytes, as MySQL announces n x the charset's longest character (3 for
# utf8, id 33). Deliberate deviation from Doris' 255: drivers divide the length by that maximum
# to get CHAR's precision, so Connector/J reports CHAR(n) (not CHAR(85)) and Spark pads values
# to n characters, as it does for a MySQL CHAR(n), instead of to 85.
UTF8_MAXLEN = 3
NOT_FIXED_DEC = 31  # "decimals" of FLOAT/DOUBLE: not a fixed number of decimals

# Character set ids of the column definition (Doris `Type.getMysqlResultSetFieldCharsetIndex`):
# 33 (utf8_general_ci) for text-like columns, 63 (binary) for numbers and dates.
CHARSET_UTF8 = 33
CHARSET_BINARY = 63
# Doris also sends STRING as binary, which makes every driver return TEXT columns as bytes
# (pymysql, mysqlclient, Connector/J's getObject). We send it with the text charset, as MySQL
# sends TEXT columns: the type code (BLOB) still says TEXT, the values decode as str.
# BITMAP / HLL are binary: NULL unless return_object_data_as_binary, then the stored bytes,
# which drivers must not decode as text (server/object_columns.py).
_TEXT_KINDS = frozenset({TypeKind.CHAR, TypeKind.VARCHAR, TypeKind.STRING, TypeKind.LARGEINT,
                         TypeKind.ARRAY, TypeKind.MAP, TypeKind.STRUCT})


def mysql_column_type(dtype: DataType) -> ColumnType:
    return _COLUMN_TYPES[dtype.kind]


@dataclass(frozen=True, slots=True)
class ColumnMetadata:
    """What a column definition packet says about a type (besides its name)."""

    type_code: ColumnType
    length: int
    decimals: int
    charset: int
    flags: int = 0  # Doris sends no flags (no NOT_NULL / BINARY / UNSIGNED)


def column_metadata(dtype: DataType) -> ColumnMetadata:
    """Type code, display length, decimals and charset of a result column, as Doris 2.1 sends
    them (`MysqlSerializer.writeField`). Also what a zero-row result carries."""
    k = dtype.kind
    length = _COLUMN_LENGTHS.get(k, DEFAULT_LENGTH)
    decimals = 0
    if k is TypeKind.DECIMAL:
        # precision digits, plus the point when there is a scale, plus the sign
        length = dtype.precision + (2 if dtype.scale > 0 else 1)
        decimals = dtype.scale
    elif k is TypeKind.DATETIME:
        decimals = dtype.scale
    elif dtype.is_float:
        decimals = NOT_FIXED_DEC
    elif k is TypeKind.CHAR and dtype.length > 0:
        length = dtype.length * UTF8_MAXLEN
    charset = CHARSET_UTF8 if k in _TEXT_KINDS else CHARSET_BINARY
    return ColumnMetadata(mysql_column_type(dtype), length, decimals, charset)


def _lenenc_str(data: bytes) -> bytes:
    return lenenc_int(len(data)) + data


# A result header repeats the same few column definitions statement after statement (clients
# re-run their statements): each packet is built once (docs/performance.md).
@functools.lru_cache(maxsize=4096)
def column_definition(name: str, dtype: DataType, charset: CharacterSet | None = None,
                      table: str = "", schema: str = "", default: str | None = None,
                      is_field_list: bool = False) -> bytes:
    """A Protocol::ColumnDefinition41 packet. Built here rather than with mysql-mimic's
    builder, which only accepts its CharacterSet enum for the column charset (Doris sends
    33 / 63, ids that enum has no member for). Names are UTF-8 (our server charset)."""
    meta = column_metadata(dtype)
    parts = [
        _lenenc_str(b"def"), _lenenc_str(schema.encode()), _lenenc_str(table.encode()),
        _lenenc_str(table.encode()), _lenenc_str(name.encode()), _lenenc_str(name.encode()),
        b"\x0c", meta.charset.to_bytes(2, "little"), meta.length.to_bytes(4, "little"),
        int(meta.type_code).to_bytes(1, "little"), meta.flags.to_bytes(2, "little"),
        meta.decimals.to_bytes(1, "little"), b"\x00\x00",
    ]
    if is_field_list:  # COM_FIELD_LIST appends the column default (0xfb: none)
        parts.append(b"\xfb" if default is None else _lenenc_str(default.encode()))
    return b"".join(parts)


def format_column(col: Column) -> list[bytes | None]:
    """Text value of each row (MySQL text protocol), None for NULL."""
    t = col.type
    k = t.kind
    n = len(col)
    out: list[bytes | None]
    if t.is_nested:
        out = [None if v is None else str(t.format_value(v)).encode() for v in col.to_pylist()]
    elif col.offsets is not None:
        buf = col.data.tobytes()
        offs = col.offsets.tolist()
        out = [buf[offs[i]: offs[i + 1]] for i in range(n)]
    elif k is TypeKind.DATE:
        out = [s.encode() for s in col.data.astype("datetime64[D]").astype(str).tolist()]
    elif k is TypeKind.DATETIME:
        texts = col.data.astype("datetime64[us]").astype(str).tolist()
        cut = 19 + (t.scale + 1 if t.scale else 0)
        out = [s.replace("T", " ")[:cut].ljust(cut, "0").encode() for s in texts]
    elif k is TypeKind.DECIMAL:
        out = [format_decimal(int(v), t.scale).encode() for v in col.data.tolist()]
    elif k is TypeKind.FLOAT:
        out = [format_float(v, single=True).encode() for v in col.data.tolist()]
    elif k is TypeKind.DOUBLE:
        out = [format_float(v).encode() for v in col.data.tolist()]
    elif k is TypeKind.NULL:
        out = [None] * n
    else:
        out = [str(int(v)).encode() for v in col.data.tolist()]
    if col.validity is not None:
        for i in np.flatnonzero(~col.validity).tolist():
            out[i] = None
    return out


def lenenc_int(n: int) -> bytes:
    """MySQL length-encoded integer."""
    if n < 251:
        return bytes((n,))
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def encode_rows(batch: Batch) -> list[bytes]:
    """One text-protocol row packet payload per row of the batch."""
    columns = [format_column(c) for c in batch.columns]
    rows = []
    for values in zip(*columns):
        parts = []
        for v in values:
            if v is None:
                parts.append(b"\xfb")
            else:
                parts.append(lenenc_int(len(v)))
                parts.append(v)
        rows.append(b"".join(parts))
    return rows


def encode_python_rows(rows: Sequence[Sequence[object]]) -> list[bytes]:
    """Row packets for small results already held as Python text/number values."""
    out = []
    for row in rows:
        parts = []
        for v in row:
            if v is None:
                parts.append(b"\xfb")
            else:
                data = v if isinstance(v, bytes) else str(v).encode("utf-8")
                parts.append(lenenc_int(len(data)))
                parts.append(data)
        out.append(b"".join(parts))
    return out


def ok_packet(
    capabilities: Capabilities, status_flags: int, affected_rows: int = 0, info: str = "",
    warnings: int = 0, eof: bool = False,
) -> bytes:
    parts = [b"\xfe" if eof else b"\x00", lenenc_int(affected_rows), lenenc_int(0)]
    if Capabilities.CLIENT_PROTOCOL_41 in capabilities:
        parts.append(int(status_flags).to_bytes(2, "little"))
        parts.append(warnings.to_bytes(2, "little"))
    if info:
        # Length-encoded as MariaDB servers send it: libmysqlclient / libmariadb always read a
        # length prefix here; pymysql keeps the raw remainder (prefix included) as the message.
        data = info.encode("utf-8")
        parts.append(lenenc_int(len(data)) + data)
    return b"".join(parts)


def error_packet(capabilities: Capabilities, code: int, sqlstate: str, message: str) -> bytes:
    parts = [b"\xff", int(code).to_bytes(2, "little")]
    if Capabilities.CLIENT_PROTOCOL_41 in capabilities:
        parts.append(b"#" + sqlstate.encode("ascii")[:5].ljust(5, b"0"))
    parts.append(message.encode("utf-8"))
    return b"".join(parts)
