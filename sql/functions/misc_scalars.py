"""Everyday Doris 2.1 scalar functions without a better home: FIELD, ELT, MASK, URL_DECODE,
PARSE_URL, MURMUR_HASH3_32, BIT_COUNT, UUID, MONEY_FORMAT, SEC_TO_TIME, TIME_TO_SEC,
MONTHS_BETWEEN, TO_MONDAY, CONVERT_TZ.

Per-row Python loops (these are rarely on a hot path). TIME values have no column type here
yet, so SEC_TO_TIME gives the 'HH:MM:SS' text Doris prints. Upstream: Doris
`function_string.cpp`, `function_hash.cpp`, `function_date_or_datetime_computation.h`,
`function_convert_tz.h`.
"""

from __future__ import annotations

import datetime as _dt
import uuid as _uuid
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import mmh3
import xxhash

from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.nested import physical, scalar_out
from sql.functions.vector import Vec
from storage.types import (
    BIGINT,
    DATE,
    DOUBLE,
    INT,
    STRING,
    DataType,
    TypeKind,
    datetime,
)

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND
_EPOCH = _dt.datetime(1970, 1, 1)


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable,
         propagate: bool = True, row_independent: bool = True) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, propagate,
                                   row_independent=row_independent))


def _text(x: Any) -> Any:
    return x.decode("utf-8", "replace") if isinstance(x, bytes) else x


def _rows(a: list[Vec]) -> list[tuple[Any, ...]]:
    return list(zip(*([_text(x) for x in physical(v)] for v in a)))


def _per_row(t: DataType, fn: Callable[..., Any], nulls_in: bool = False
             ) -> Callable[[list[Vec], EvalEnv], Vec]:
    """fn over each row's values; fn's None result is NULL. A row with a NULL argument is NULL
    without calling fn unless `nulls_in` (then fn sees None)."""
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        return scalar_out(t, [fn(*r) if nulls_in or None not in r else None for r in _rows(a)])
    return impl


# ---- strings -------------------------------------------------------------------------------
def field(value: Any, *candidates: Any) -> int:
    """1-based position of `value` among the candidates, 0 when absent or NULL."""
    if value is None:
        return 0
    return next((i + 1 for i, c in enumerate(candidates) if c == value), 0)


def elt(n: Any, *strings: Any) -> Any:
    if n is None or not 1 <= n <= len(strings):
        return None
    return strings[n - 1]


def mask(s: str, upper: str = "X", lower: str = "x", digit: str = "n") -> str:
    """Doris mask: upper-case letters -> X, lower-case -> x, digits -> n; others kept."""
    return "".join(upper[:1] if "A" <= ch <= "Z" else lower[:1] if "a" <= ch <= "z"
                   else digit[:1] if "0" <= ch <= "9" else ch for ch in s)


def parse_url(url: str, part: str, key: str | None = None) -> str | None:
    """Doris parse_url parts: PROTOCOL, HOST, PATH, QUERY, REF, AUTHORITY, FILE, USERINFO,
    PORT; QUERY with a key gives that parameter's value. NULL for an absent part."""
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError:
        return None
    part = part.upper()
    if key is not None:
        if part != "QUERY":
            return None
        values = parse_qs(u.query, keep_blank_values=True).get(key)
        return values[0] if values else None
    value = {
        "PROTOCOL": u.scheme, "HOST": u.hostname or "", "PATH": u.path, "QUERY": u.query,
        "REF": u.fragment, "AUTHORITY": u.netloc,
        "FILE": u.path + ("?" + u.query if u.query else ""),
        "USERINFO": u.netloc.rsplit("@", 1)[0] if "@" in u.netloc else "",
        "PORT": str(port) if port is not None else "",
    }.get(part)
    return value or None


_reg("field", 2, -1, lambda t: ([None] * len(t), INT), _per_row(INT, field, nulls_in=True),
     propagate=False)
_reg("elt", 2, -1, lambda t: ([INT] + [STRING] * (len(t) - 1), STRING),
     _per_row(STRING, elt, nulls_in=True), propagate=False)
_reg("mask", 1, 4, lambda t: ([STRING] * len(t), STRING), _per_row(STRING, mask))
_reg("url_decode", 1, 1, lambda t: ([STRING], STRING), _per_row(STRING, unquote_plus))
_reg("parse_url", 2, 3, lambda t: ([STRING] * len(t), STRING), _per_row(STRING, parse_url))


# ---- hashes, bits, ids, money ----------------------------------------------------------------
MURMUR3_32_SEED = 104729  # Doris HashUtil::MURMUR3_32_SEED


def murmur_hash3_32(*strings: Any) -> int | None:
    """Each argument hashed with the previous hash as seed; NULL if any argument is NULL."""
    if any(s is None for s in strings):
        return None
    h = MURMUR3_32_SEED
    for s in strings:
        h = mmh3.hash(str(s).encode("utf-8"), h % 2**32)
    return h


def _signed(h: int, bits: int) -> int:
    return h - (1 << bits) if h >= 1 << (bits - 1) else h


def _chained(digest: Any, bits: int, strings: tuple[Any, ...]) -> int | None:
    """Each argument's UTF-8 hashed by `digest` with the previous hash as seed (0 first), as a
    signed integer of `bits`; NULL if any argument is NULL."""
    if any(s is None for s in strings):
        return None
    h = 0
    for s in strings:
        h = digest(str(s).encode("utf-8"), seed=h)
    return _signed(h, bits)


def xxhash_32(*strings: Any) -> int | None:
    """XXH32, chained (Doris: xxhash_32('hello') = -83855367), as a signed INT."""
    return _chained(xxhash.xxh32_intdigest, 32, strings)


def xxhash_64(*strings: Any) -> int | None:
    """XXH3 64-bit (Doris' xxhash_64 is XXH3, not XXH64: xxhash_64('hello') =
    -7685981735718036227), chained like `xxhash_32`, as a signed BIGINT."""
    return _chained(xxhash.xxh3_64_intdigest, 64, strings)


def _bit_count(a: list[Vec], env: EvalEnv) -> Vec:
    v = a[0]
    bits = v.type.numpy_dtype.itemsize * 8 if v.type.kind is not TypeKind.LARGEINT else 128
    out = [None if x is None else (int(x) % (1 << bits)).bit_count() for x in physical(v)]
    return scalar_out(DataType(TypeKind.TINYINT), out)


def money_format(x: Any) -> str | None:
    """Thousands separators and two decimals, rounded half up (Doris money_format)."""
    if x is None:
        return None
    d = Decimal(str(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{d:,.2f}"


def _money(a: list[Vec], env: EvalEnv) -> Vec:
    v = a[0]
    vals = physical(v)
    if v.type.kind is TypeKind.DECIMAL:
        vals = [None if x is None else Decimal(x).scaleb(-v.type.scale) for x in vals]
    return scalar_out(STRING, [money_format(x) for x in vals])


def _bit_count_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    return [t[0] if t[0].is_integer else BIGINT], DataType(TypeKind.TINYINT)


_reg("murmur_hash3_32", 1, -1, lambda t: ([STRING] * len(t), INT),
     _per_row(INT, murmur_hash3_32))
_reg("xxhash_32", 1, -1, lambda t: ([STRING] * len(t), INT), _per_row(INT, xxhash_32))
_reg("xxhash_64", 1, -1, lambda t: ([STRING] * len(t), BIGINT), _per_row(BIGINT, xxhash_64))
_reg("bit_count", 1, 1, _bit_count_sig, _bit_count)
_reg("uuid", 0, 0, lambda t: ([], STRING),
     lambda a, env: scalar_out(STRING, [str(_uuid.uuid4()) for _ in range(env.n)]))
_reg("money_format", 1, 1,
     lambda t: ([t[0] if t[0].is_numeric else DOUBLE], STRING), _money)


# ---- time of day -------------------------------------------------------------------------
def sec_to_time(seconds: int) -> str:
    sign = "-" if seconds < 0 else ""
    s = abs(int(seconds))
    return f"{sign}{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def time_to_sec(text: str) -> int | None:
    """'[-]HH:MM:SS' -> seconds; NULL for text that is no time."""
    t = text.strip()
    sign = -1 if t.startswith("-") else 1
    parts = t.lstrip("-").split(":")
    if not 1 <= len(parts) <= 3 or not all(p.strip().split(".")[0].isdigit() for p in parts):
        return None
    nums = [int(p.strip().split(".")[0]) for p in parts] + [0] * (3 - len(parts))
    return sign * (nums[0] * 3600 + nums[1] * 60 + nums[2])


_reg("sec_to_time", 1, 1, lambda t: ([BIGINT], STRING), _per_row(STRING, sec_to_time))
_reg("time_to_sec", 1, 1, lambda t: ([STRING], BIGINT), _per_row(BIGINT, time_to_sec))


# ---- dates ---------------------------------------------------------------------------------
def _t(t: DataType) -> DataType:
    """Argument type of a date/time parameter: strings are read as DATETIME."""
    return t if t.is_temporal else datetime(0)


def _datetimes(v: Vec) -> list[_dt.datetime | None]:
    if v.type.kind is TypeKind.DATE:
        return [None if d is None else _EPOCH + _dt.timedelta(days=d) for d in physical(v)]
    return [None if m is None else _EPOCH + _dt.timedelta(microseconds=m) for m in physical(v)]


def _micros(d: _dt.datetime) -> int:
    delta = d - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds


def _is_month_end(d: _dt.datetime) -> bool:
    return (d + _dt.timedelta(days=1)).month != d.month


def months_between(end: _dt.datetime, start: _dt.datetime, round_off: bool = True) -> float:
    """Doris: whole months plus (day difference + time difference) / 31; both dates the same
    day of month or both month ends give whole months; rounded to 8 digits by default."""
    months = (end.year - start.year) * 12 + end.month - start.month
    if end.day == start.day or (_is_month_end(end) and _is_month_end(start)):
        return float(months)
    def seconds(d: _dt.datetime) -> int:
        return d.hour * 3600 + d.minute * 60 + d.second
    value = months + (end.day - start.day + (seconds(end) - seconds(start)) / 86_400) / 31
    return round(value, 8) if round_off else value


def _months_between(a: list[Vec], env: EvalEnv) -> Vec:
    ends, starts = _datetimes(a[0]), _datetimes(a[1])
    flags = physical(a[2]) if len(a) > 2 else [True] * len(ends)
    return scalar_out(DOUBLE, [None if e is None or s is None or f is None
                               else months_between(e, s, bool(f))
                               for e, s, f in zip(ends, starts, flags)])


def _to_monday(a: list[Vec], env: EvalEnv) -> Vec:
    days: list[int | None] = []
    for d in _datetimes(a[0]):
        if d is None:
            days.append(None)
        elif d.date() <= _dt.date(1970, 1, 4):  # Doris: dates up to 1970-01-04 map to 1970-01-01
            days.append(0)
        else:
            days.append((d.date() - _EPOCH.date()).days - d.weekday())
    return scalar_out(DATE, days)


def _zone(name: str) -> _dt.tzinfo | None:
    """A zone name or a '+08:00' offset; None when unknown."""
    name = name.strip()
    if name[:1] in "+-" and ":" in name:
        try:
            h, m = name[1:].split(":")
            delta = _dt.timedelta(hours=int(h), minutes=int(m))
        except ValueError:
            return None
        return _dt.timezone(-delta if name[0] == "-" else delta)
    try:
        return ZoneInfo("UTC" if name.upper() == "UTC" else name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _convert_tz(a: list[Vec], env: EvalEnv) -> Vec:
    out: list[int | None] = []
    for d, src, dst in zip(_datetimes(a[0]), *([_text(x) for x in physical(v)] for v in a[1:])):
        zs = _zone(src) if src is not None else None
        zd = _zone(dst) if dst is not None else None
        if d is None or zs is None or zd is None:
            out.append(None)
            continue
        moved = d.replace(tzinfo=zs).astimezone(zd).replace(tzinfo=None)
        out.append(_micros(moved))
    return scalar_out(a[0].type if a[0].type.kind is TypeKind.DATETIME else datetime(0), out)


_reg("months_between", 2, 3,
     lambda t: ([_t(t[0]), _t(t[1])] + [DataType(TypeKind.BOOLEAN)] * (len(t) - 2), DOUBLE),
     _months_between)
_reg("to_monday", 1, 1, lambda t: ([_t(t[0])], DATE), _to_monday)
_reg("convert_tz", 3, 3,
     lambda t: ([t[0] if t[0].kind is TypeKind.DATETIME else datetime(0), STRING, STRING],
                t[0] if t[0].kind is TypeKind.DATETIME else datetime(0)), _convert_tz)
