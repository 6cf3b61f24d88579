"""numba kernels of the INSERT VALUES fast path: the literal scanner and per-type decoders.

`scan_values` walks the UTF-8 bytes of the rows part of `INSERT ... VALUES (..), (..)` once and
records every literal token: its kind, its byte span and, for numbers, the parsed digits (so no
Python object is made per value). The grammar is exactly the one of the regex scanner in
executor/insert_values_scanner.py (`TOKEN`, `row_pattern`, `scan_rows`) restricted to ASCII
whitespace: whenever the kernel accepts a text, the regex scanner accepts it with the same
tokens; anything else (non-ASCII whitespace between tokens included) makes it answer "no" and
the caller tries the regex scanner, then the general path.

The decoders turn the tokens of one column into typed values: `decode_dates`,
`decode_datetimes` (Doris DATE / DATETIME text 'YYYY-MM-DD[ hh:mm:ss[.ffffff]]', calendar
checked) and `gather_strings` (MySQL escapes applied, into int64 offsets + uint8 bytes).
Numbers get their float value here only when it is exact by Clinger's argument (<= 15
significant digits, |power of ten| <= 22: one correctly rounded IEEE operation on exact
operands); the caller parses the rest with Python's float.

Each kernel has a plain-Python reference in tests/unit/executor/test_insert_values_kernels.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# token kinds
K_INT = 1  # -?\d+
K_DEC = 2  # a number with a '.' and no exponent
K_EXP = 3  # a number with an exponent
K_SQ = 4  # '...'
K_DQ = 5  # "..."
K_NULL = 6
K_TRUE = 7
K_FALSE = 8

# token flags
F_ESCAPED = 1  # a string with a backslash escape or a doubled quote
F_BIG = 2  # a number with more than 18 significant digits: `mant` is not its digits
F_INEXACT = 4  # a number whose float value the kernel could not compute exactly
F_NEG = 8  # a number with a leading '-'

# scan_values status codes (> 0: the number of rows)
S_NO = -1  # not the recognised shape

_POW10F = np.array([float(10**i) for i in range(23)], dtype=np.float64)  # all exact
_MAX_EXACT_DIGITS = 15


@njit(cache=True, nogil=True, inline="always")
def _is_ws(c: np.uint8) -> bool:
    return bool(c == 32 or (9 <= c <= 13))


@njit(cache=True, nogil=True, inline="always")
def _skip_ws(buf: np.ndarray, i: int, n: int) -> int:
    while i < n and _is_ws(buf[i]):
        i += 1
    return i


@njit(cache=True, nogil=True, inline="always")
def _upper(c: np.uint8) -> np.uint8:
    return c - 32 if 97 <= c <= 122 else c


@njit(cache=True, nogil=True, inline="always")
def _word(buf: np.ndarray, i: int, n: int, w0: int, w1: int, w2: int, w3: int, w4: int,
          length: int) -> bool:
    """Case-insensitive match of an upper-case ASCII word of `length` (4 or 5) at i."""
    if i + length > n:
        return False
    if _upper(buf[i]) != w0 or _upper(buf[i + 1]) != w1 or _upper(buf[i + 2]) != w2:
        return False
    if _upper(buf[i + 3]) != w3:
        return False
    return length == 4 or _upper(buf[i + 4]) == w4


@njit(cache=True, nogil=True)
def scan_values(buf: np.ndarray, start: int, ncols: int, kind: np.ndarray, tstart: np.ndarray,
                tend: np.ndarray, flags: np.ndarray, mant: np.ndarray, frac: np.ndarray,
                fval: np.ndarray) -> int:
    """Scan rows of `ncols` literals from buf[start:] to the end; fill the per-token arrays
    (capacity: commas in buf + 1, an upper bound on the tokens) and return the number of rows,
    or S_NO. Per token: kind, [tstart, tend) byte span (quotes included), flags, and for
    numbers `mant` (the significant digits as an integer, sign applied), `frac` (digits after
    the point minus the exponent: value = mant * 10**-frac) and `fval` (the double, exact
    unless F_INEXACT)."""
    n = buf.shape[0]
    cap = kind.shape[0]
    i = _skip_ws(buf, start, n)
    t = 0
    rows = 0
    while True:
        if i >= n or buf[i] != 40:  # '('
            return S_NO
        i += 1
        for col in range(ncols):
            i = _skip_ws(buf, i, n)
            if i >= n or t >= cap:
                return S_NO
            c = buf[i]
            s = i
            fl = 0
            m = np.int64(0)
            fr = 0
            k = 0
            if c == 39 or c == 34:  # a quoted string
                q = c
                i += 1
                closed = False
                while i < n:
                    ch = buf[i]
                    if ch == 92:  # backslash: escapes the next byte
                        if i + 1 >= n:
                            return S_NO
                        fl |= F_ESCAPED
                        i += 2
                    elif ch == q:
                        if i + 1 < n and buf[i + 1] == q:
                            fl |= F_ESCAPED
                            i += 2
                        else:
                            i += 1
                            closed = True
                            break
                    else:
                        i += 1
                if not closed:
                    return S_NO
                k = K_SQ if q == 39 else K_DQ
            elif c == 45 or c == 46 or (48 <= c <= 57):  # '-', '.', digit
                if c == 45:
                    fl |= F_NEG
                    i += 1
                sig = 0  # significant digits seen (leading zeros skipped)
                int_digits = 0
                while i < n and 48 <= buf[i] <= 57:
                    d = buf[i] - 48
                    if sig > 0 or d != 0:
                        sig += 1
                        if sig <= 18:
                            m = m * 10 + d
                    int_digits += 1
                    i += 1
                # digits of the integer part past the 18th still scale the value
                scale = 0 if sig <= 18 else sig - 18
                k = K_INT
                frac_digits = 0
                frac_raw = 0
                if i < n and buf[i] == 46:  # '.'
                    k = K_DEC
                    i += 1
                    while i < n and 48 <= buf[i] <= 57:
                        d = buf[i] - 48
                        frac_digits += 1
                        frac_raw += 1
                        if sig > 0 or d != 0:
                            sig += 1
                            if sig <= 18:
                                m = m * 10 + d
                            else:
                                frac_digits -= 1  # dropped digit (F_BIG marks the loss)
                        i += 1
                if int_digits == 0 and frac_raw == 0:
                    return S_NO  # no digit at all: '-', '.', '-.'
                expo = 0
                if i < n and (buf[i] == 101 or buf[i] == 69):  # exponent
                    k = K_EXP
                    i += 1
                    eneg = False
                    if i < n and (buf[i] == 43 or buf[i] == 45):
                        eneg = buf[i] == 45
                        i += 1
                    if i >= n or not (48 <= buf[i] <= 57):
                        return S_NO
                    while i < n and 48 <= buf[i] <= 57:
                        if expo < 100000:
                            expo = expo * 10 + (buf[i] - 48)
                        i += 1
                    if eneg:
                        expo = -expo
                if sig > 18:
                    fl |= F_BIG
                fr = frac_digits - scale - expo
                if sig > _MAX_EXACT_DIGITS or fr > 22 or fr < -22:
                    fl |= F_INEXACT
                    fval[t] = 0.0
                else:
                    v = float(m)
                    v = v / _POW10F[fr] if fr >= 0 else v * _POW10F[-fr]
                    fval[t] = -v if fl & F_NEG else v
                if fl & F_NEG:
                    m = -m
            elif _word(buf, i, n, 78, 85, 76, 76, 0, 4):  # NULL
                k = K_NULL
                i += 4
            elif _word(buf, i, n, 84, 82, 85, 69, 0, 4):  # TRUE
                k = K_TRUE
                i += 4
            elif _word(buf, i, n, 70, 65, 76, 83, 69, 5):  # FALSE
                k = K_FALSE
                i += 5
            else:
                return S_NO
            kind[t] = k
            tstart[t] = s
            tend[t] = i
            flags[t] = fl
            mant[t] = m
            frac[t] = fr
            t += 1
            i = _skip_ws(buf, i, n)
            if i >= n:
                return S_NO
            if col + 1 < ncols:
                if buf[i] != 44:  # ','
                    return S_NO
                i += 1
            elif buf[i] != 41:  # ')'
                return S_NO
        i += 1  # past ')'
        rows += 1
        i = _skip_ws(buf, i, n)
        if i >= n:
            return rows
        if buf[i] == 44:  # ',': another row follows
            i = _skip_ws(buf, i + 1, n)
            continue
        if buf[i] == 59:  # ';' ends the statement
            i = _skip_ws(buf, i + 1, n)
            return rows if i >= n else S_NO
        return S_NO


_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _digits(buf: np.ndarray, i: int, count: int) -> int:
    """The value of `count` ASCII digits at i, -1 if one is not a digit."""
    v = 0
    for j in range(i, i + count):
        c = buf[j]
        if c < 48 or c > 57:
            return -1
        v = v * 10 + (c - 48)
    return v


@njit(cache=True, nogil=True, inline="always")
def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    if m <= 2:
        y -= 1
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    mp = m - 3 if m > 2 else m + 9
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@njit(cache=True, nogil=True, inline="always")
def _date_at(buf: np.ndarray, i: int) -> int:
    """Days of 'YYYY-MM-DD' at i (year 1-9999, a real calendar day), or -10**9."""
    bad = -1000000000
    y = _digits(buf, i, 4)
    mo = _digits(buf, i + 5, 2)
    d = _digits(buf, i + 8, 2)
    if y < 1 or mo < 1 or mo > 12 or d < 1 or buf[i + 4] != 45 or buf[i + 7] != 45:
        return bad
    dim = _DAYS_IN_MONTH[mo]
    if mo == 2 and (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)):
        dim = 29
    if d > dim:
        return bad
    return _days_from_civil(y, mo, d)


@njit(cache=True, nogil=True)
def decode_dates(buf: np.ndarray, kind: np.ndarray, tstart: np.ndarray, tend: np.ndarray,
                 flags: np.ndarray, out: np.ndarray) -> int:
    """Quoted 'YYYY-MM-DD' tokens (NULL tokens give 0) to days since the epoch in `out`;
    returns the index of the first token of another shape, or -1 when all decoded."""
    for t in range(kind.shape[0]):
        k = kind[t]
        if k == K_NULL:
            out[t] = 0
            continue
        if (k != K_SQ and k != K_DQ) or flags[t] != 0 or tend[t] - tstart[t] != 12:
            return t
        days = _date_at(buf, tstart[t] + 1)
        if days == -1000000000:
            return t
        out[t] = days
    return -1


@njit(cache=True, nogil=True)
def decode_datetimes(buf: np.ndarray, kind: np.ndarray, tstart: np.ndarray, tend: np.ndarray,
                     flags: np.ndarray, out: np.ndarray) -> int:
    """Quoted 'YYYY-MM-DD hh:mm:ss[.f{1,6}]' tokens ('T' also separates) to microseconds since
    the epoch; as decode_dates otherwise."""
    for t in range(kind.shape[0]):
        k = kind[t]
        if k == K_NULL:
            out[t] = 0
            continue
        length = tend[t] - tstart[t] - 2
        if (k != K_SQ and k != K_DQ) or flags[t] != 0 or length < 19 or length == 20 or length > 26:
            return t
        i = tstart[t] + 1
        days = _date_at(buf, i)
        sep = buf[i + 10]
        hh = _digits(buf, i + 11, 2)
        mi = _digits(buf, i + 14, 2)
        ss = _digits(buf, i + 17, 2)
        if days == -1000000000 or (sep != 32 and sep != 84) or buf[i + 13] != 58 \
                or buf[i + 16] != 58:
            return t
        if hh < 0 or hh > 23 or mi < 0 or mi > 59 or ss < 0 or ss > 59:
            return t
        us = 0
        if length > 19:
            if buf[i + 19] != 46:
                return t
            nd = length - 20
            f = _digits(buf, i + 20, nd)
            if f < 0:
                return t
            for _ in range(6 - nd):
                f *= 10
            us = f
        out[t] = ((days * 86400 + hh * 3600 + mi * 60 + ss) * 1000000) + us
    return -1


@njit(cache=True, nogil=True)
def gather_strings(buf: np.ndarray, kind: np.ndarray, tstart: np.ndarray, tend: np.ndarray,
                   flags: np.ndarray, offsets: np.ndarray, data: np.ndarray) -> int:
    """The values of quoted string tokens (NULL tokens give empty values) as offsets
    (len n + 1) and bytes, with MySQL's escapes: \\0 \\b \\n \\r \\t \\Z, `\\%` and `\\_` keep
    their backslash, any other escaped byte stands for itself, a doubled quote for one quote.
    `data` must hold the token bytes (the values are never longer). Returns the index of the
    first token that is not a string or NULL, or -1."""
    o = 0
    offsets[0] = 0
    for t in range(kind.shape[0]):
        k = kind[t]
        if k == K_NULL:
            offsets[t + 1] = o
            continue
        if k != K_SQ and k != K_DQ:
            return t
        i = tstart[t] + 1
        e = tend[t] - 1
        if flags[t] & F_ESCAPED == 0:
            data[o:o + e - i] = buf[i:e]
            o += e - i
        else:
            q = buf[tstart[t]]
            while i < e:
                c = buf[i]
                if c == 92:
                    nx = buf[i + 1]
                    if nx == 48:
                        c = 0
                    elif nx == 98:
                        c = 8
                    elif nx == 110:
                        c = 10
                    elif nx == 114:
                        c = 13
                    elif nx == 116:
                        c = 9
                    elif nx == 90:
                        c = 26
                    elif nx == 37 or nx == 95:  # \% and \_ keep the backslash
                        data[o] = 92
                        o += 1
                        c = nx
                    else:
                        c = nx
                    i += 2
                elif c == q:  # a doubled quote (a lone one cannot occur inside the token)
                    i += 2
                else:
                    i += 1
                data[o] = c
                o += 1
        offsets[t + 1] = o
    return -1
