"""numba kernels for the text of FLOAT and DOUBLE values (MySQL text protocol, Doris rules).

The rules are those of storage/types.py `format_float`: a double prints as Python's repr
(shortest round-trip digits; exponent form below 1e-4 and from 1e16) without a trailing '.0';
a FLOAT prints the repr of its widened double when that is in exponent form, else numpy's
shortest float32 digits positionally. The kernels find the shortest digits with exact IEEE
checks (see `_shortest`) and hand back the indices of values they cannot decide with
certainty (doubles needing 16-17 digits, float32 ties and midpoints) as `fallback`, for the
caller to format in Python. Layout as in executor/kernels/text_protocol.py: int64 offsets +
uint8 bytes.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from executor.kernels.text_protocol import put_uint, uint_digits

_POW10 = np.array([float(10**i) for i in range(23)], dtype=np.float64)  # all exact
_MAX_SHORT_DIGITS = 10**15  # <= 15 significant digits: the rounding argument below holds
_NAN_TEXT = np.frombuffer(b"NaN", dtype=np.uint8).copy()
_INF_TEXT = np.frombuffer(b"Infinity", dtype=np.uint8).copy()
_NEG_INF_TEXT = np.frombuffer(b"-Infinity", dtype=np.uint8).copy()


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
    k = math.floor(math.log10(a))
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


@njit(cache=True, nogil=True, inline="always")
def _put_decimal(data: np.ndarray, pos: int, digits: np.ndarray, neg: bool, m: np.int64,
                 s: np.int64, sci: bool) -> int:
    """Write sign and m * 10**-s: Python repr layout (sci when asked), no trailing '.0'."""
    if neg:
        data[pos] = 45
        pos += 1
    nd = uint_digits(np.uint64(m))
    put_uint(digits, 0, np.uint64(m), nd)
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
        return put_uint(data, pos + 2, np.uint64(ak), 2 if ak < 100 else 3)
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
    if math.isnan(v):
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
        if math.isnan(v) or math.isinf(v):
            pos = _put_special(data, pos, v)
        else:
            a = abs(v)
            m, s = (np.int64(0), np.int64(0)) if a == 0.0 else _shortest(a)
            if m < 0:
                fallback[nfb] = i
                nfb += 1
            else:
                k = uint_digits(np.uint64(m)) - 1 - s
                sci = bool(m != 0 and (k < -4 or k >= 16))
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
    k = math.floor(math.log10(a))
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
        if math.isnan(v) or math.isinf(v):
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
