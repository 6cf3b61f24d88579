"""The one bucket-hash function: which bucket (tablet) of a partition a row belongs to.

Doris (BE `VOlapTablePartitionParam`, DORIS_REFERENCE.md b.5): `h = 0; for each distribution
column: h = zlib_crc32(bytes(value), seed=h)`, unsigned 32-bit, `bucket = h % buckets`. Values
are hashed as little-endian fixed-width bytes (DATEV2 packed (year<<9)|(month<<5)|day in 4
bytes, DATETIMEV2 packed in 8 bytes, DECIMAL as the unscaled 4/8/16-byte integer, LARGEINT 16
bytes), strings as raw bytes, and NULL as four zero bytes. Every writer (INSERT, Stream Load,
Spark) and the bucket-shuffle exchange use `bucket_of_rows`, so rows always agree on placement.
The crc32 loop is a numba kernel; `zlib.crc32` is its reference in tests.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from storage.batch import Column
from storage.types import DataType, TypeKind, days_to_date, micros_to_datetime


def _make_table() -> np.ndarray:
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
        table[i] = c
    return table


_CRC_TABLE = _make_table()


@njit(cache=True, nogil=True)
def crc32_fixed_kernel(table: np.ndarray, seeds: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Row i: crc32 of data[i, :] continuing from seeds[i] (zlib.crc32(bytes, seed))."""
    n, width = data.shape
    out = np.empty(n, dtype=np.uint32)
    for i in range(n):
        crc = seeds[i] ^ np.uint32(0xFFFFFFFF)
        for j in range(width):
            crc = table[(crc ^ data[i, j]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
        out[i] = crc ^ np.uint32(0xFFFFFFFF)
    return out


@njit(cache=True, nogil=True)
def crc32_varlen_kernel(
    table: np.ndarray, seeds: np.ndarray, offsets: np.ndarray, data: np.ndarray
) -> np.ndarray:
    """Row i: crc32 of data[offsets[i]:offsets[i+1]] continuing from seeds[i]."""
    n = len(seeds)
    out = np.empty(n, dtype=np.uint32)
    for i in range(n):
        crc = seeds[i] ^ np.uint32(0xFFFFFFFF)
        for j in range(offsets[i], offsets[i + 1]):
            crc = table[(crc ^ data[j]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
        out[i] = crc ^ np.uint32(0xFFFFFFFF)
    return out


def _pack_dates(days: np.ndarray) -> np.ndarray:
    d = days.astype("datetime64[D]")
    years = d.astype("datetime64[Y]").astype(np.int64) + 1970
    months = d.astype("datetime64[M]").astype(np.int64) % 12 + 1
    mday = (d - d.astype("datetime64[M]")).astype(np.int64) + 1
    return ((years << 9) | (months << 5) | mday).astype("<u4")


def _pack_datetimes(micros: np.ndarray) -> np.ndarray:
    us = micros.astype("datetime64[us]")
    day = us.astype("datetime64[D]")
    packed_date = _pack_dates(day.astype(np.int64)).astype(np.uint64)
    in_day = (us - day).astype(np.int64)
    hour = in_day // 3_600_000_000
    minute = in_day // 60_000_000 % 60
    second = in_day // 1_000_000 % 60
    micro = in_day % 1_000_000
    # DateV2Value<DateTimeV2ValueType>: year:18 month:4 day:5 hour:5 minute:6 second:6 micro:20
    year = packed_date >> np.uint64(9)
    month = (packed_date >> np.uint64(5)) & np.uint64(0xF)
    mday = packed_date & np.uint64(0x1F)
    value = (
        (year << np.uint64(46)) | (month << np.uint64(42)) | (mday << np.uint64(37))
        | (hour.astype(np.uint64) << np.uint64(32)) | (minute.astype(np.uint64) << np.uint64(26))
        | (second.astype(np.uint64) << np.uint64(20)) | micro.astype(np.uint64)
    )
    return value.astype("<u8")


def _int_bytes(values: np.ndarray, width: int) -> np.ndarray:
    """Object array of Python ints -> (n, width) little-endian two's-complement bytes."""
    raw = b"".join(int(v).to_bytes(width, "little", signed=True) for v in values)
    return np.frombuffer(raw, dtype=np.uint8).reshape(len(values), width)


def value_bytes(column: Column) -> np.ndarray:
    """(n, width) uint8 matrix of the hash encoding of a fixed-width column."""
    t: DataType = column.type
    data = column.data
    if t.kind is TypeKind.DATE:
        arr = _pack_dates(data)
    elif t.kind is TypeKind.DATETIME:
        arr = _pack_datetimes(data)
    elif t.kind is TypeKind.LARGEINT:
        return _int_bytes(data, 16)
    elif t.is_decimal:
        width = t.fixed_width or 16
        if data.dtype == np.dtype(object):
            return _int_bytes(data, width)
        arr = data.astype("<i4" if width == 4 else "<i8")
    else:
        arr = np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<"), copy=False)
    arr = np.ascontiguousarray(arr)
    return arr.view(np.uint8).reshape(len(arr), arr.dtype.itemsize)


_NULL_BYTES = np.zeros((1, 4), dtype=np.uint8)


def hash_columns(columns: Sequence[Column]) -> np.ndarray:
    """Chained crc32 of each row over the given columns (uint32 per row)."""
    n = len(columns[0]) if columns else 0
    h = np.zeros(n, dtype=np.uint32)
    for col in columns:
        if col.offsets is not None:
            new = crc32_varlen_kernel(_CRC_TABLE, h, col.offsets, col.data)
        else:
            new = crc32_fixed_kernel(_CRC_TABLE, h, value_bytes(col))
        if col.validity is not None and not col.validity.all():
            nulls = ~col.validity
            null_hash = crc32_fixed_kernel(
                _CRC_TABLE, h[nulls], np.repeat(_NULL_BYTES, int(nulls.sum()), axis=0)
            )
            new[nulls] = null_hash
        h = new
    return h


def bucket_of_rows(columns: Sequence[Column], buckets: int) -> np.ndarray:
    """Bucket sequence number (0..buckets-1) of each row."""
    return (hash_columns(columns) % np.uint32(buckets)).astype(np.int64)


def reference_value_bytes(dtype: DataType, value: object) -> bytes:
    """Pure-Python encoding of one physical value (the test oracle for `value_bytes`)."""
    if value is None:
        return b"\x00\x00\x00\x00"
    k = dtype.kind
    if dtype.is_varlen:
        return value if isinstance(value, bytes) else str(value).encode("utf-8")
    if k is TypeKind.DATE:
        d = days_to_date(int(value))  # type: ignore[call-overload]
        return ((d.year << 9) | (d.month << 5) | d.day).to_bytes(4, "little")
    if k is TypeKind.DATETIME:
        t = micros_to_datetime(int(value))  # type: ignore[call-overload]
        packed = (
            (t.year << 46) | (t.month << 42) | (t.day << 37) | (t.hour << 32)
            | (t.minute << 26) | (t.second << 20) | t.microsecond
        )
        return packed.to_bytes(8, "little")
    if k in (TypeKind.FLOAT, TypeKind.DOUBLE):
        return np.array([value], dtype=dtype.numpy_dtype).tobytes()
    width = dtype.fixed_width or 8
    return int(value).to_bytes(width, "little", signed=True)  # type: ignore[call-overload]
