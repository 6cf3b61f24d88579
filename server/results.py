"""Wire encoding of results: column definitions, text rows, OK (with Doris' info) and errors.

`format_column` holds the text rules of every type (numpy formats dates and datetimes in bulk,
Python the rest) and `encode_rows` builds one row packet payload per row from them. This
per-row path is the reference for, and the fallback of, the columnar encoder that actually
streams results (server/text_encoding.py, server/kernels.py): values a kernel declines are
formatted here. OK packets carry Doris' info string
(`{'label':'insert_..', 'status':'VISIBLE', 'txnId':'..'}`); error packets carry the SQLSTATE of
each code, which mysql-mimic's own builder does not know for most codes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from mysql_mimic.charset import CharacterSet
from mysql_mimic.packets import make_column_definition_41
from mysql_mimic.types import Capabilities, ColumnDefinition, ColumnType

from storage.batch import Batch, Column
from storage.types import DataType, TypeKind, format_decimal, format_float

_COLUMN_TYPES = {
    TypeKind.BOOLEAN: ColumnType.TINY,
    TypeKind.TINYINT: ColumnType.TINY,
    TypeKind.SMALLINT: ColumnType.SHORT,
    TypeKind.INT: ColumnType.LONG,
    TypeKind.BIGINT: ColumnType.LONGLONG,
    TypeKind.LARGEINT: ColumnType.LONGLONG,
    TypeKind.FLOAT: ColumnType.FLOAT,
    TypeKind.DOUBLE: ColumnType.DOUBLE,
    TypeKind.DECIMAL: ColumnType.NEWDECIMAL,
    TypeKind.DATE: ColumnType.DATE,
    TypeKind.DATETIME: ColumnType.DATETIME,
    TypeKind.CHAR: ColumnType.STRING,
    TypeKind.VARCHAR: ColumnType.VAR_STRING,
    TypeKind.STRING: ColumnType.VAR_STRING,
    TypeKind.HLL: ColumnType.VAR_STRING,
    TypeKind.BITMAP: ColumnType.VAR_STRING,
    TypeKind.NULL: ColumnType.NULL,
}

_NOT_FIXED_DEC = 31


def mysql_column_type(dtype: DataType) -> ColumnType:
    return _COLUMN_TYPES[dtype.kind]


def column_definition(name: str, dtype: DataType, charset: CharacterSet) -> bytes:
    flags = ColumnDefinition(0)
    decimals = 0
    length = 255
    if dtype.is_integer or dtype.kind is TypeKind.BOOLEAN:
        flags |= ColumnDefinition.BINARY_FLAG
        length = 20
    elif dtype.is_float:
        decimals = _NOT_FIXED_DEC
        length = 22
    elif dtype.is_decimal:
        decimals = dtype.scale
        length = dtype.precision + 2
    elif dtype.kind is TypeKind.DATE:
        length = 10
    elif dtype.kind is TypeKind.DATETIME:
        decimals = dtype.scale
        length = 19 + (dtype.scale + 1 if dtype.scale else 0)
    elif dtype.is_string:
        length = min(dtype.length, 65533) * 4 if dtype.length else 255
    return make_column_definition_41(
        server_charset=charset, name=name, column_type=mysql_column_type(dtype),
        column_length=length, flags=flags, decimals=decimals,
        character_set=CharacterSet.utf8mb4 if dtype.is_string else CharacterSet.binary,
    )


def format_column(col: Column) -> list[bytes | None]:
    """Text value of each row (MySQL text protocol), None for NULL."""
    t = col.type
    k = t.kind
    n = len(col)
    if col.offsets is not None:
        buf = col.data.tobytes()
        offs = col.offsets.tolist()
        out: list[bytes | None] = [buf[offs[i]: offs[i + 1]] for i in range(n)]
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
