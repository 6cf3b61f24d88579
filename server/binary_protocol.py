"""The MySQL binary protocol of prepared statements: parameter decoding and binary result rows.

`read_execute` decodes a COM_STMT_EXECUTE payload into typed Python values (int, float,
Decimal, str, date, datetime, timedelta, None), including NEWDECIMAL (246), DATE, DATETIME,
TIMESTAMP and TIME parameters that mysql-mimic 3.0.5 rejects or leaves undecoded, the types
remembered from the previous execution when the client does not re-send them, and data sent
ahead with COM_STMT_SEND_LONG_DATA. `binary_rows` frames a result batch as binary-protocol row
payloads and `binary_column_definition` describes its columns (exactly as the text protocol
does, except LARGEINT, which has no 8-byte binary form and travels as a DECIMAL(38,0)).
Spec: https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_stmt_execute.html
"""

from __future__ import annotations

import datetime as _dt
import io
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from mysql_mimic.charset import CharacterSet
from mysql_mimic.types import Capabilities, ColumnType

from server.packets import MalformedPacket
from server.results import column_definition, format_column, lenenc_int
from sql.errors import DorisError, ErrorCode, ShaleError
from storage.batch import Batch, Column
from storage.types import DataType, TypeKind, decimal

ParamType = tuple[int, bool]  # (MySQL column type code, unsigned)

_PARAMETER_COUNT_AVAILABLE = 0x08
_CURSOR_READ_ONLY = 0x01

_STRING_TYPES = {
    ColumnType.VARCHAR,
    ColumnType.VAR_STRING,
    ColumnType.STRING,
    ColumnType.BLOB,
    ColumnType.TINY_BLOB,
    ColumnType.MEDIUM_BLOB,
    ColumnType.LONG_BLOB,
    ColumnType.ENUM,
    ColumnType.SET,
    ColumnType.JSON,
    ColumnType.GEOMETRY,
    ColumnType.BIT,
}
_DECIMAL_TYPES = {ColumnType.DECIMAL, ColumnType.NEWDECIMAL}
_DATE_TYPES = {ColumnType.DATE, ColumnType.DATETIME, ColumnType.TIMESTAMP}
_DATETIME_LENGTHS = (0, 4, 7, 11)
_TIME_LENGTHS = (0, 8, 12)
_INTS = {  # type -> (width, signed format, unsigned format)
    ColumnType.TINY: (1, "<b", "<B"),
    ColumnType.SHORT: (2, "<h", "<H"),
    ColumnType.YEAR: (2, "<h", "<H"),
    ColumnType.LONG: (4, "<i", "<I"),
    ColumnType.INT24: (4, "<i", "<I"),
    ColumnType.LONGLONG: (8, "<q", "<Q"),
}


@dataclass
class ExecuteRequest:
    stmt_id: int
    use_cursor: bool
    values: list[object]  # one per statement parameter, None for SQL NULL
    types: list[ParamType] | None  # the types bound by this packet (None: not re-sent)


def _bad(msg: str) -> ShaleError:
    return DorisError(msg, ErrorCode.UNKNOWN_ERROR)


def _read(r: io.BytesIO, n: int) -> bytes:
    if n > len(r.getbuffer()) - r.tell():  # a length-encoded size may be up to 2^64 - 1
        raise MalformedPacket()
    data = r.read(n)
    if len(data) != n:
        raise MalformedPacket()  # 1835, as mysqld answers a truncated COM_STMT_EXECUTE
    return data


def _read_lenenc(r: io.BytesIO) -> int:
    first = _read(r, 1)[0]
    if first < 0xFB:
        return first
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if width is None:
        raise MalformedPacket()
    return int.from_bytes(_read(r, width), "little")


def _read_lenenc_bytes(r: io.BytesIO) -> bytes:
    return _read(r, _read_lenenc(r))


def _read_temporal(r: io.BytesIO, code: int) -> object:
    n = _read(r, 1)[0]
    raw = _read(r, n)
    if n not in (_TIME_LENGTHS if code == ColumnType.TIME else _DATETIME_LENGTHS):
        raise MalformedPacket()  # the protocol allows only these lengths; others would misread
    if code == ColumnType.TIME:
        if n == 0:
            return _dt.timedelta(0)
        negative = raw[0] == 1
        days = int.from_bytes(raw[1:5], "little")
        h, m, s = raw[5], raw[6], raw[7]
        us = int.from_bytes(raw[8:12], "little") if n >= 12 else 0
        try:
            delta = _dt.timedelta(days=days, hours=h, minutes=m, seconds=s, microseconds=us)
        except OverflowError:
            raise _bad(f"Incorrect time value: {days} days") from None
        return -delta if negative else delta
    if n == 0:
        raise _bad("Incorrect datetime value: '0000-00-00 00:00:00'")
    year = int.from_bytes(raw[0:2], "little")
    month, day = raw[2], raw[3]
    try:
        if code == ColumnType.DATE:
            return _dt.date(year, month, day)
        h, m, s = (raw[4], raw[5], raw[6]) if n >= 7 else (0, 0, 0)
        us = int.from_bytes(raw[7:11], "little") if n >= 11 else 0
        return _dt.datetime(year, month, day, h, m, s, us)
    except ValueError:
        raise _bad(f"Incorrect datetime value: {year:04d}-{month:02d}-{day:02d}") from None


def _read_value(r: io.BytesIO, code: int, unsigned: bool, charset: CharacterSet) -> object:
    if code in _INTS:
        width, signed_fmt, unsigned_fmt = _INTS[ColumnType(code)]
        return struct.unpack(unsigned_fmt if unsigned else signed_fmt, _read(r, width))[0]
    if code == ColumnType.FLOAT:
        return struct.unpack("<f", _read(r, 4))[0]
    if code == ColumnType.DOUBLE:
        return struct.unpack("<d", _read(r, 8))[0]
    if code in _DECIMAL_TYPES:
        text = _read_lenenc_bytes(r).decode("ascii", "replace")
        try:
            return Decimal(text)
        except InvalidOperation:
            raise _bad(f"Invalid decimal parameter: '{text}'") from None
    if code in _DATE_TYPES or code == ColumnType.TIME:
        return _read_temporal(r, code)
    if code == ColumnType.NULL:
        return None
    if code in _STRING_TYPES:
        return _read_lenenc_bytes(r).decode(charset.codec, "replace")
    raise ShaleError(f"Unsupported parameter type {code}", ErrorCode.NOT_SUPPORTED_YET)


def read_execute(
    data: bytes,
    capabilities: Capabilities,
    charset: CharacterSet,
    num_params: Callable[[int], int],
    previous_types: Callable[[int], list[ParamType] | None],
    long_data: Callable[[int], dict[int, bytearray]],
) -> ExecuteRequest:
    """Decode a COM_STMT_EXECUTE payload (the command byte already stripped).

    The callables look up, by statement id, the statement's parameter count, the types its last
    execution bound, and the COM_STMT_SEND_LONG_DATA buffers sent for it.
    """
    r = io.BytesIO(data)
    stmt_id = int.from_bytes(_read(r, 4), "little")
    flags = _read(r, 1)[0]
    _read(r, 4)  # iteration count, always 1
    expected = num_params(stmt_id)
    count = expected
    attributes = Capabilities.CLIENT_QUERY_ATTRIBUTES in capabilities
    if attributes and (expected > 0 or flags & _PARAMETER_COUNT_AVAILABLE):
        count = _read_lenenc(r)  # statement parameters, then query attributes
    values: list[object] = []
    types: list[ParamType] | None = None
    if count > 0:
        nulls = _read(r, (count + 7) // 8)
        if _read(r, 1)[0]:  # new-params-bound flag: types follow
            types = []
            for _ in range(count):
                code, flag = _read(r, 2)
                if attributes:
                    _read_lenenc_bytes(r)  # name: empty for statement parameters
                types.append((code, bool(flag & 0x80)))
            bound = types
        else:
            bound = previous_types(stmt_id) or []
            if len(bound) < count:
                raise _bad("Prepared statement executed without parameter types")
        buffers = long_data(stmt_id)
        for i in range(count):
            code, unsigned = bound[i]
            if nulls[i // 8] & (1 << (i % 8)):
                values.append(None)
            elif i in buffers:
                text = bytes(buffers[i]).decode("utf-8", "replace")
                if code in _DECIMAL_TYPES:
                    try:
                        values.append(Decimal(text))
                    except InvalidOperation:
                        raise _bad(f"Invalid decimal parameter: '{text[:64]}'") from None
                else:
                    values.append(text)
            else:
                values.append(_read_value(r, code, unsigned, charset))
        if types is not None:
            types = types[:expected]
    if len(values) < expected:
        raise _bad(f"Incorrect arguments to mysqld_stmt_execute: expected {expected} parameters")
    return ExecuteRequest(stmt_id, bool(flags & _CURSOR_READ_ONLY), values[:expected], types)


# ---- binary result rows ------------------------------------------------------------------------

_LARGEINT_WIRE = decimal(38, 0)
_PACK = {
    TypeKind.BOOLEAN: "<i1",
    TypeKind.TINYINT: "<i1",
    TypeKind.SMALLINT: "<i2",
    TypeKind.INT: "<i4",
    TypeKind.BIGINT: "<i8",
    TypeKind.FLOAT: "<f4",
    TypeKind.DOUBLE: "<f8",
}


def wire_type(dtype: DataType) -> DataType:
    """The type a column is announced with in binary results."""
    return _LARGEINT_WIRE if dtype.kind is TypeKind.LARGEINT else dtype


def binary_column_definition(name: str, dtype: DataType, charset: CharacterSet) -> bytes:
    return column_definition(name, wire_type(dtype), charset)


def _binary_values(col_type: DataType, batch_col: Column) -> list[bytes | None]:
    k = col_type.kind
    n = len(batch_col)
    out: list[bytes | None]
    if k in _PACK:
        raw = batch_col.data.astype(_PACK[k]).tobytes()
        w = int(_PACK[k][-1])
        out = [raw[i * w : (i + 1) * w] for i in range(n)]
    elif k is TypeKind.DATE or k is TypeKind.DATETIME:
        out = []
        valid = batch_col.validity.tolist() if batch_col.validity is not None else [True] * n
        for v, ok in zip(batch_col.data.tolist(), valid):
            if not ok:  # the physical value under a NULL is arbitrary
                out.append(None)
                continue
            d = col_type.to_python(v)  # DATE: a date, DATETIME: a datetime (storage/types.py)
            assert isinstance(d, _dt.date)
            head = int(d.year).to_bytes(2, "little") + bytes((d.month, d.day))
            if k is TypeKind.DATE:
                out.append(b"\x04" + head)
                continue
            assert isinstance(d, _dt.datetime)
            if d.microsecond:
                out.append(
                    b"\x0b"
                    + head
                    + bytes((d.hour, d.minute, d.second))
                    + d.microsecond.to_bytes(4, "little")
                )
            else:
                out.append(b"\x07" + head + bytes((d.hour, d.minute, d.second)))
    elif k is TypeKind.LARGEINT:
        out = [
            lenenc_int(len(s)) + s for s in (str(int(v)).encode() for v in batch_col.data.tolist())
        ]
    elif k is TypeKind.NULL:
        out = [None] * n
    else:  # DECIMAL and every string kind: length-encoded text, as in the text protocol
        out = [None if v is None else lenenc_int(len(v)) + v for v in format_column(batch_col)]
    if batch_col.validity is not None:
        for i, valid in enumerate(batch_col.validity.tolist()):
            if not valid:
                out[i] = None
    return out


def _frame(columns: Sequence[Sequence[bytes | None]], ncols: int) -> list[bytes]:
    rows = []
    nbytes = (ncols + 7 + 2) // 8
    for values in zip(*columns):
        bitmap = bytearray(nbytes)
        parts = []
        for i, v in enumerate(values):
            if v is None:
                bitmap[(i + 2) // 8] |= 1 << ((i + 2) % 8)
            else:
                parts.append(v)
        rows.append(b"\x00" + bytes(bitmap) + b"".join(parts))
    return rows


def binary_rows(batch: Batch) -> list[bytes]:
    """One binary-protocol row payload per row of the batch."""
    cols = [_binary_values(c.type, c) for c in batch.columns]
    return _frame(cols, len(batch.columns))


def binary_text_rows(rows: Sequence[Sequence[object]]) -> list[bytes]:
    """Binary rows for an all-text result (SHOW output and the like)."""
    cols: list[list[bytes | None]] = []
    ncols = len(rows[0]) if rows else 0
    for i in range(ncols):
        col: list[bytes | None] = []
        for row in rows:
            v = row[i]
            if v is None:
                col.append(None)
            else:
                data = v if isinstance(v, bytes) else str(v).encode("utf-8")
                col.append(lenenc_int(len(data)) + data)
        cols.append(col)
    return _frame(cols, ncols)
