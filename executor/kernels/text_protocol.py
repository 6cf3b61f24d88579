"""numba kernels for the MySQL text protocol: value -> text in bulk, and row-packet framing.

Every text kernel turns one fixed-width column into the Arrow-style text layout the framing
kernel reads: `offsets` (int64, n+1) into a flat uint8 `data` buffer. Text is produced for
every row, NULL rows included (their physical value is zero); NULLs are decided by the framing
kernel from the null mask. Each kernel writes sequentially into a buffer sized for the widest
possible value and returns the used prefix, so one pass suffices.

`frame_rows` writes complete MySQL packets (3-byte little-endian payload length, sequence id,
then per column a length-encoded string or 0xFB for NULL) for a range of rows into one buffer.
Rows of 0xFFFFFF payload bytes or more need packet splitting; callers find them with
`payload_lengths` and frame them separately (server/text_encoding.py).

FLOAT/DOUBLE text kernels live in executor/kernels/float_text.py. The pure-Python references
these must match live in tests/unit/server/test_result_encoding.py; the formatting rules are
those of server/results.py `format_column` (storage/types.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

MAX_PACKET_PAYLOAD = 0xFFFFFF


_POW10_U64 = np.array([10**i for i in range(20)], dtype=np.uint64)
_DIGIT_PAIRS = np.frombuffer(
    "".join(f"{i:02d}" for i in range(100)).encode(), dtype=np.uint8
).copy()


@njit(cache=True, nogil=True, inline="always")
def uint_digits(u: np.uint64) -> int:
    n = 1
    while n < 20 and u >= _POW10_U64[n]:
        n += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def put_uint(buf: np.ndarray, pos: int, u: np.uint64, width: int) -> int:
    """Write u as `width` decimal digits (zero-padded) at pos; returns the new position."""
    end = pos + width
    p = end
    while p - pos >= 2:
        r = u % np.uint64(100)
        u //= np.uint64(100)
        buf[p - 2] = _DIGIT_PAIRS[2 * r]
        buf[p - 1] = _DIGIT_PAIRS[2 * r + 1]
        p -= 2
    if p > pos:
        buf[pos] = 48 + np.uint8(u % np.uint64(10))
    return end


@njit(cache=True, nogil=True, inline="always")
def _magnitude(v: np.int64) -> np.uint64:
    if v >= 0:
        return np.uint64(v)
    return np.uint64(-(v + 1)) + np.uint64(1)  # safe for INT64_MIN


@njit(cache=True, nogil=True)
def int_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimal text of int64 values (str(int(v)))."""
    n = values.shape[0]
    offsets = np.empty(n + 1, np.int64)
    data = np.empty(n * 20, np.uint8)
    pos = 0
    offsets[0] = 0
    for i in range(n):
        v = np.int64(values[i])
        if v < 0:
            data[pos] = 45
            pos += 1
        u = _magnitude(v)
        pos = put_uint(data, pos, u, uint_digits(u))
        offsets[i + 1] = pos
    return offsets, data[:pos]


@njit(cache=True, nogil=True)
def decimal_text(values: np.ndarray, scale: int) -> tuple[np.ndarray, np.ndarray]:
    """Text of int64 unscaled decimals (storage/types.py format_decimal)."""
    n = values.shape[0]
    offsets = np.empty(n + 1, np.int64)
    data = np.empty(n * (22 + scale), np.uint8)
    pos = 0
    offsets[0] = 0
    for i in range(n):
        v = np.int64(values[i])
        if v < 0:
            data[pos] = 45
            pos += 1
        u = _magnitude(v)
        if scale == 0:
            pos = put_uint(data, pos, u, uint_digits(u))
        else:
            nd = max(uint_digits(u), scale + 1)
            put_uint(data, pos + 1, u, nd)  # digits shifted by one, then open the point
            for j in range(nd - scale):
                data[pos + j] = data[pos + 1 + j]
            data[pos + nd - scale] = 46
            pos += nd + 1
        offsets[i + 1] = pos
    return offsets, data[:pos]


@njit(cache=True, nogil=True, inline="always")
def _civil(days: np.int64) -> tuple[np.int64, np.int64, np.int64]:
    """(year, month, day) of days since 1970-01-01, proleptic Gregorian (H. Hinnant)."""
    z = days + 719468
    era = z // 146097  # floor division (Hinnant's C version adjusts for truncation)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    if m <= 2:
        y += 1
    return y, m, d


@njit(cache=True, nogil=True, inline="always")
def _put_date(buf: np.ndarray, pos: int, y: np.int64, m: np.int64, d: np.int64) -> int:
    pos = put_uint(buf, pos, np.uint64(y), 4)
    buf[pos] = 45
    pos = put_uint(buf, pos + 1, np.uint64(m), 2)
    buf[pos] = 45
    return put_uint(buf, pos + 1, np.uint64(d), 2)


@njit(cache=True, nogil=True)
def date_text(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """'YYYY-MM-DD' of int32 days; ok=False if a year falls outside 0000..9999."""
    n = days.shape[0]
    offsets = np.arange(n + 1).astype(np.int64) * 10
    data = np.empty(n * 10, np.uint8)
    for i in range(n):
        y, m, d = _civil(np.int64(days[i]))
        if y < 0 or y > 9999:
            return offsets, data, False
        _put_date(data, i * 10, y, m, d)
    return offsets, data, True


@njit(cache=True, nogil=True)
def datetime_text(micros: np.ndarray, scale: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """'YYYY-MM-DD hh:mm:ss[.f{scale}]' (fraction truncated) of int64 microseconds."""
    n = micros.shape[0]
    width = 19 + (scale + 1 if scale > 0 else 0)
    offsets = np.arange(n + 1).astype(np.int64) * width
    data = np.empty(n * width, np.uint8)
    day_us = np.int64(86_400_000_000)
    for i in range(n):
        t = np.int64(micros[i])
        days = t // day_us
        rem = t - days * day_us
        y, m, d = _civil(days)
        if y < 0 or y > 9999:
            return offsets, data, False
        secs = rem // 1_000_000
        frac = rem - secs * 1_000_000
        pos = _put_date(data, i * width, y, m, d)
        data[pos] = 32
        pos = put_uint(data, pos + 1, np.uint64(secs // 3600), 2)
        data[pos] = 58
        pos = put_uint(data, pos + 1, np.uint64((secs // 60) % 60), 2)
        data[pos] = 58
        pos = put_uint(data, pos + 1, np.uint64(secs % 60), 2)
        if scale > 0:
            data[pos] = 46
            put_uint(data, pos + 1, np.uint64(frac // 10 ** (6 - scale)), scale)
    return offsets, data, True


@njit(cache=True, nogil=True)
def splice_text(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray,
                rep_offsets: np.ndarray, rep_data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replace the text of `rows` (ascending) by the replacement texts, in order."""
    n = offsets.shape[0] - 1
    total = offsets[n] - offsets[0] + rep_offsets[rep_offsets.shape[0] - 1]
    for r in range(rows.shape[0]):
        total -= offsets[rows[r] + 1] - offsets[rows[r]]
    out_offsets = np.empty(n + 1, np.int64)
    out = np.empty(total, np.uint8)
    out_offsets[0] = 0
    pos = 0
    r = 0
    for i in range(n):
        if r < rows.shape[0] and rows[r] == i:
            src, lo, hi = rep_data, rep_offsets[r], rep_offsets[r + 1]
            r += 1
        else:
            src, lo, hi = data, offsets[i], offsets[i + 1]
        for j in range(lo, hi):
            out[pos] = src[j]
            pos += 1
        out_offsets[i + 1] = pos
    return out_offsets, out


@njit(cache=True, nogil=True, inline="always")
def _lenenc_size(n: np.int64) -> int:
    if n < 251:
        return 1
    if n < 65536:
        return 3
    if n < 16777216:
        return 4
    return 9


@njit(cache=True, nogil=True)
def payload_lengths(offsets: np.ndarray, nulls: np.ndarray) -> np.ndarray:
    """Payload bytes of each row packet. offsets (ncols, n+1) int64; nulls (ncols, n) uint8."""
    ncols, n = nulls.shape
    out = np.zeros(n, np.int64)
    for c in range(ncols):
        for i in range(n):
            if nulls[c, i]:
                out[i] += 1
            else:
                ln = offsets[c, i + 1] - offsets[c, i]
                out[i] += _lenenc_size(ln) + ln
    return out


@njit(cache=True, nogil=True)
def frame_rows(offsets: np.ndarray, data: np.ndarray, nulls: np.ndarray, lengths: np.ndarray,
               start: int, stop: int, seq: int) -> tuple[np.ndarray, int]:
    """Packets for rows [start, stop) (each payload < 0xFFFFFF); returns (buffer, next seq).

    `offsets[c]` index the flat `data` for column c; `lengths` come from `payload_lengths`.
    """
    ncols = nulls.shape[0]
    total = 4 * (stop - start)
    for i in range(start, stop):
        total += lengths[i]
    buf = np.empty(total, np.uint8)
    pos = 0
    for i in range(start, stop):
        ln = lengths[i]
        buf[pos] = ln & 0xFF
        buf[pos + 1] = (ln >> 8) & 0xFF
        buf[pos + 2] = (ln >> 16) & 0xFF
        buf[pos + 3] = seq
        seq = (seq + 1) & 0xFF
        pos += 4
        for c in range(ncols):
            if nulls[c, i]:
                buf[pos] = 0xFB
                pos += 1
                continue
            lo = offsets[c, i]
            n = offsets[c, i + 1] - lo
            if n < 251:
                buf[pos] = n
                pos += 1
            elif n < 65536:
                buf[pos] = 0xFC
                buf[pos + 1] = n & 0xFF
                buf[pos + 2] = (n >> 8) & 0xFF
                pos += 3
            elif n < 16777216:
                buf[pos] = 0xFD
                buf[pos + 1] = n & 0xFF
                buf[pos + 2] = (n >> 8) & 0xFF
                buf[pos + 3] = (n >> 16) & 0xFF
                pos += 4
            else:
                buf[pos] = 0xFE
                for b in range(8):
                    buf[pos + 1 + b] = (n >> (8 * b)) & 0xFF
                pos += 9
            for j in range(n):
                buf[pos + j] = data[lo + j]
            pos += n
    return buf, seq
