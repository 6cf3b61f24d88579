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

The pure-Python references these must match live in tests/unit/server/test_result_encoding.py;
the formatting rules are those of server/results.py `format_column` (storage/types.py).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

MAX_PACKET_PAYLOAD = 0xFFFFFF
_POW10 = np.array([float(10**i) for i in range(23)], dtype=np.float64)  # all exact
_MAX_SHORT_DIGITS = 10**15  # <= 15 significant digits: the rounding argument below holds
_NAN_TEXT = np.frombuffer(b"NaN", dtype=np.uint8).copy()
_INF_TEXT = np.frombuffer(b"Infinity", dtype=np.uint8).copy()
_NEG_INF_TEXT = np.frombuffer(b"-Infinity", dtype=np.uint8).copy()


_POW10_U64 = np.array([10**i for i in range(20)], dtype=np.uint64)
_DIGIT_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), dtype=np.uint8).copy()


@njit(cache=True, nogil=True, inline="always")
def _uint_digits(u: np.uint64) -> int:
    n = 1
    while n < 20 and u >= _POW10_U64[n]:
        n += 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _put_uint(buf: np.ndarray, pos: int, u: np.uint64, width: int) -> int:
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
        pos = _put_uint(data, pos, u, _uint_digits(u))
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
            pos = _put_uint(data, pos, u, _uint_digits(u))
        else:
            nd = max(_uint_digits(u), scale + 1)
            _put_uint(data, pos + 1, u, nd)  # digits shifted by one, then open the point
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
    pos = _put_uint(buf, pos, np.uint64(y), 4)
    buf[pos] = 45
    pos = _put_uint(buf, pos + 1, np.uint64(m), 2)
    buf[pos] = 45
    return _put_uint(buf, pos + 1, np.uint64(d), 2)


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
        pos = _put_uint(data, pos + 1, np.uint64(secs // 3600), 2)
        data[pos] = 58
        pos = _put_uint(data, pos + 1, np.uint64((secs // 60) % 60), 2)
        data[pos] = 58
        pos = _put_uint(data, pos + 1, np.uint64(secs % 60), 2)
        if scale > 0:
            data[pos] = 46
            _put_uint(data, pos + 1, np.uint64(frac // 10 ** (6 - scale)), scale)
    return offsets, data, True


@njit(cache=True, nogil=True, inline="always")
def _shortest(a: float) -> tuple[np.int64, np.int64]:
    """Shortest (m, s) with m * 10**-s == a exactly after rounding, m < 10**15; m=-1 if none.

    For a candidate with <= 15 significant digits the rounding interval of `a` (one ulp,
    < 2.3e-16 relative) holds at most one such decimal (spacing >= 1e-15 relative), and
    round(a * 10**s) computes its digits exactly (error < 0.25), so the first s that round-trips
    gives Python's repr digits. The check `m / 10**s == a` is one correctly rounded IEEE
    operation on exact operands (m < 2**53, |s| <= 22), hence exact. By the same uniqueness, the
    nearest 15-digit decimal round-trips iff a shorter one does, and is it padded with zeros:
    one try at 15 digits, then stripping trailing zeros, finds it.
    """
    k = int(math.floor(math.log10(a)))
    s = 14 - k  # aim at exactly 15 digits: the nearest 15-digit decimal, stripped, is shortest
    if -22 <= s - 1 and s + 1 <= 22:
        x = _scaled(a, s)
        if x >= _MAX_SHORT_DIGITS:
            s -= 1
            x = _scaled(a, s)
        elif x < _MAX_SHORT_DIGITS // 10:
            s += 1
            x = _scaled(a, s)
        m = np.int64(math.floor(x + 0.5))
        if _unscaled(m, s) == a:
            for step, unit in ((8, 100_000_000), (4, 10_000), (2, 100), (1, 10)):
                if m % unit == 0:  # at most 14 trailing zeros: 8 + 4 + 2
                    m //= unit
                    s -= step
            return m, np.int64(s)
        return np.int64(-1), np.int64(0)
    s = -k - 2  # tiny or huge: walk up from one digit while the scale stays exact
    while True:
        if s > 22 or s < -22:
            return np.int64(-1), np.int64(0)
        x = _scaled(a, s)
        if x >= _MAX_SHORT_DIGITS:
            return np.int64(-1), np.int64(0)
        m = np.int64(math.floor(x + 0.5))
        if m > 0 and _unscaled(m, s) == a:
            while m % 10 == 0:
                m //= 10
                s -= 1
            return m, np.int64(s)
        s += 1


@njit(cache=True, nogil=True, inline="always")
def _scaled(a: float, s: int) -> float:
    return a * _POW10[s] if s >= 0 else a / _POW10[-s]


@njit(cache=True, nogil=True, inline="always")
def _unscaled(m: np.int64, s: int) -> float:
    return float(m) / _POW10[s] if s >= 0 else float(m) * _POW10[-s]


@njit(cache=True, nogil=True)
def _put_ascii(buf: np.ndarray, pos: int, text: np.ndarray) -> int:
    for j in range(len(text)):
        buf[pos + j] = text[j]
    return pos + len(text)


@njit(cache=True, nogil=True)
def _put_decimal(data: np.ndarray, pos: int, digits: np.ndarray, neg: bool, m: np.int64,
                 s: np.int64, sci: bool) -> int:
    """Write sign and m * 10**-s: Python repr layout (sci when asked), no trailing '.0'."""
    if neg:
        data[pos] = 45
        pos += 1
    nd = _uint_digits(np.uint64(m))
    _put_uint(digits, 0, np.uint64(m), nd)
    k = nd - 1 - s  # decimal exponent of the leading digit
    if sci:
        data[pos] = digits[0]
        pos += 1
        if nd > 1:
            data[pos] = 46
            pos += 1
            for j in range(1, nd):
                data[pos] = digits[j]
                pos += 1
        data[pos] = 101
        data[pos + 1] = 45 if k < 0 else 43
        ak = -k if k < 0 else k
        return _put_uint(data, pos + 2, np.uint64(ak), 2 if ak < 100 else 3)
    if s <= 0:
        for j in range(nd):
            data[pos] = digits[j]
            pos += 1
        if m != 0:
            for _ in range(-s):
                data[pos] = 48
                pos += 1
    elif nd > s:
        for j in range(nd):
            if j == nd - s:
                data[pos] = 46
                pos += 1
            data[pos] = digits[j]
            pos += 1
    else:
        data[pos] = 48
        data[pos + 1] = 46
        pos += 2
        for _ in range(s - nd):
            data[pos] = 48
            pos += 1
        for j in range(nd):
            data[pos] = digits[j]
            pos += 1
    return pos


@njit(cache=True, nogil=True, inline="always")
def _put_special(data: np.ndarray, pos: int, v: float) -> int:
    if v != v:
        return _put_ascii(data, pos, _NAN_TEXT)
    return _put_ascii(data, pos, _INF_TEXT if v > 0 else _NEG_INF_TEXT)


@njit(cache=True, nogil=True)
def double_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Text of float64 values (storage/types.py format_float: repr without a trailing '.0').

    Values needing 16-17 significant digits (or |exponent| > ~22) are left empty and their
    indices returned as `fallback`, for the caller to format in Python and splice in.
    """
    n = values.shape[0]
    offsets = np.empty(n + 1, np.int64)
    data = np.empty(n * 24, np.uint8)
    fallback = np.empty(n, np.int64)
    nfb = 0
    pos = 0
    offsets[0] = 0
    digits = np.empty(20, np.uint8)
    for i in range(n):
        v = float(values[i])
        if v != v or math.isinf(v):
            pos = _put_special(data, pos, v)
        else:
            a = abs(v)
            m, s = (np.int64(0), np.int64(0)) if a == 0.0 else _shortest(a)
            if m < 0:
                fallback[nfb] = i
                nfb += 1
            else:
                k = _uint_digits(np.uint64(m)) - 1 - s
                sci = m != 0 and (k < -4 or k >= 16)
                pos = _put_decimal(data, pos, digits, math.copysign(1.0, v) < 0, m, s, sci)
        offsets[i + 1] = pos
    return offsets, data[:pos], fallback[:nfb]


_TEN_POW_MINUS4 = 1e-4  # as a double: repr switches to exponent form below it and from 1e16


@njit(cache=True, nogil=True, inline="always")
def _shortest32(a: float, v32: np.float32) -> tuple[np.int64, np.int64]:
    """Shortest (m, s) whose float32 rounding is v32 (a = |v32| widened); m=-1 if unsure.

    At each length both decimals around a are tried (the rounding interval is lopsided at
    powers of two); if both round to v32 the nearer is taken, as numpy's Dragon4 does, and an
    exact tie goes to the fallback. A candidate whose double value sits exactly on a float32
    rounding boundary might be double-rounded differently: the value goes to the fallback.
    """
    k = int(math.floor(math.log10(a)))
    target = abs(v32)
    s = -k - 2
    while s <= 22 and s >= -22:
        x = _scaled(a, s)
        if x >= 1e9:
            break
        lo = np.int64(math.floor(x))
        r_lo = _rounds_to(lo, s, target) if lo > 0 else 0
        r_hi = _rounds_to(lo + 1, s, target)
        if r_lo == 2 or r_hi == 2:
            break
        ok_lo = r_lo == 1
        ok_hi = r_hi == 1
        if ok_lo or ok_hi:
            frac = x - float(lo)
            if ok_lo and ok_hi and frac == 0.5:
                break  # a tie (exact: x < 1e9 with a .5 fraction is representable)
            m = lo if ok_lo and (not ok_hi or frac < 0.5) else lo + 1
            for step, unit in ((8, 100_000_000), (4, 10_000), (2, 100), (1, 10)):
                if m % unit == 0:
                    m //= unit
                    s -= step
            return m, np.int64(s)
        s += 1
    return np.int64(-2), np.int64(0)  # -2: "unsure" (the flag is any negative m)


@njit(cache=True, nogil=True, inline="always")
def _rounds_to(m: np.int64, s: int, target: np.float32) -> int:
    """1 if float32(m * 10**-s) == target, 0 if not, 2 if unsure (double on a float32 midpoint)."""
    d = _unscaled(m, s)
    f = np.float32(d)
    _, ex = math.frexp(float(f))
    diff = abs(d - float(f))
    if diff == math.ldexp(1.0, ex - 25) or diff == math.ldexp(1.0, ex - 26):
        return 2  # exactly between two float32 values: double rounding could differ
    return 1 if f == target else 0


@njit(cache=True, nogil=True)
def float_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Text of float32 values (format_float(single=True)); unsure values go to `fallback`.

    The rule: the repr of the widened double if that is in exponent form (|v| < 1e-4 or
    >= 1e16), else the shortest float32 digits written positionally.
    """
    n = values.shape[0]
    offsets = np.empty(n + 1, np.int64)
    data = np.empty(n * 48, np.uint8)
    fallback = np.empty(n, np.int64)
    nfb = 0
    pos = 0
    offsets[0] = 0
    digits = np.empty(20, np.uint8)
    for i in range(n):
        v32 = values[i]
        v = float(v32)
        if v != v or math.isinf(v):
            pos = _put_special(data, pos, v)
            offsets[i + 1] = pos
            continue
        neg = math.copysign(1.0, v) < 0
        a = abs(v)
        if a == 0.0:
            m, s, sci = np.int64(0), np.int64(0), False
        elif a < _TEN_POW_MINUS4 or a >= 1e16:
            m, s = _shortest(a)
            sci = True
        else:
            m, s = _shortest32(a, v32)
            sci = False
        if m < 0:
            fallback[nfb] = i
            nfb += 1
        else:
            pos = _put_decimal(data, pos, digits, neg, m, s, sci)
        offsets[i + 1] = pos
    return offsets, data[:pos], fallback[:nfb]


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
