"""Date/time scalar functions beyond `temporal.py`: DATE_TRUNC, STR_TO_DATE, FROM_UNIXTIME,
UNIX_TIMESTAMP, WEEK / WEEKOFYEAR / YEARWEEK, DAYNAME, MONTHNAME, LAST_DAY, TO_DAYS, FROM_DAYS,
MAKEDATE, TIMESTAMPDIFF, WEEKDAY, MICROSECOND.

DATE is a day number since 1970-01-01 and DATETIME a microsecond count (storage/types.py); the
calendar arithmetic is vectorised with numpy datetime64 where it is natural. WEEK follows MySQL's
`calc_week` (modes 0-7) in a per-row loop; STR_TO_DATE compiles each MySQL format to a regex.
UNIX_TIMESTAMP / FROM_UNIXTIME use UTC, the default session `time_zone` (other session time zones
are not applied yet). Upstream: Doris `function_date_or_datetime_computation`, MySQL `calc_week`.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sql.errors import DorisError
from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.regex import TextPattern, text_regex
from sql.functions.vector import Vec, object_array
from storage.types import (
    BIGINT,
    DATE,
    INT,
    STRING,
    TINYINT,
    DataType,
    TypeKind,
    datetime,
    datetime_to_micros,
    micros_to_datetime,
)

MICROS_PER_DAY = 86_400_000_000
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December")


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable, *aliases: str,
         literal_args: tuple[int, ...] = ()) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, True, literal_args), *aliases)


def _t(t: DataType) -> DataType:
    """Argument type of a date/time parameter: strings are read as DATETIME."""
    return t if t.is_temporal else (DATE if not t.is_string else datetime(0))


def _day_numbers(v: Vec) -> np.ndarray:
    if v.type.kind is TypeKind.DATE:
        return v.data.astype(np.int64)
    return np.floor_divide(v.data.astype(np.int64), MICROS_PER_DAY)


def _micros(v: Vec) -> np.ndarray:
    if v.type.kind is TypeKind.DATE:
        return v.data.astype(np.int64) * MICROS_PER_DAY
    return v.data.astype(np.int64)


def _dates(v: Vec) -> list[_dt.date]:
    return [_dt.date.fromordinal(int(d) + _EPOCH_ORDINAL) for d in _day_numbers(v).tolist()]


def _date_vec(days: np.ndarray, valid: np.ndarray | None = None) -> Vec:
    return Vec(DATE, days.astype(np.int32), valid)


# ---- DATE_TRUNC ----------------------------------------------------------------------------
_TRUNC_MICROS = {"second": 1_000_000, "minute": 60_000_000, "hour": 3_600_000_000,
                 "day": MICROS_PER_DAY}


def truncate_micros(micros: np.ndarray, unit: str) -> np.ndarray:
    unit = unit.lower()
    if unit in _TRUNC_MICROS:
        step = _TRUNC_MICROS[unit]
        return np.floor_divide(micros, step) * step
    days = np.floor_divide(micros, MICROS_PER_DAY)
    d = days.astype("datetime64[D]")
    if unit == "week":  # weeks start on Monday; 1970-01-01 was a Thursday
        out = days - (days + 3) % 7
    elif unit == "month":
        out = d.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    elif unit == "quarter":
        m = d.astype("datetime64[M]").astype(np.int64)
        out = (m - m % 3).astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    elif unit == "year":
        out = d.astype("datetime64[Y]").astype("datetime64[D]").astype(np.int64)
    else:
        raise DorisError(f"date_trunc function time unit param only support argument is "
                         f"year|quarter|month|week|day|hour|minute|second, got {unit}")
    return out * MICROS_PER_DAY


def _date_trunc(a: list[Vec], env: EvalEnv) -> Vec:
    v = a[0]
    unit = str(a[1].data[0]) if len(a[1]) else "day"
    out = truncate_micros(_micros(v), unit)
    if v.type.kind is TypeKind.DATE:
        return _date_vec(out // MICROS_PER_DAY)
    return Vec(v.type, out)


_reg("date_trunc", 2, 2, lambda t: ([_t(t[0]), STRING], _t(t[0])), _date_trunc,
     literal_args=(1,))


# ---- parts and simple calendar functions ---------------------------------------------------
def _weekday(v: Vec) -> np.ndarray:
    """0 = Monday ... 6 = Sunday."""
    return (_day_numbers(v) + 3) % 7


_reg("weekday", 1, 1, lambda t: ([_t(t[0])], TINYINT),
     lambda a, env: Vec(TINYINT, _weekday(a[0]).astype(np.int8)))
_reg("dayname", 1, 1, lambda t: ([_t(t[0])], STRING),
     lambda a, env: Vec(STRING, np.array(DAY_NAMES, dtype=object)[_weekday(a[0])]))


def _month_index(v: Vec) -> np.ndarray:
    return _day_numbers(v).astype("datetime64[D]").astype("datetime64[M]").astype(np.int64) % 12


_reg("monthname", 1, 1, lambda t: ([_t(t[0])], STRING),
     lambda a, env: Vec(STRING, np.array(MONTH_NAMES, dtype=object)[_month_index(a[0])]))
_reg("microsecond", 1, 1, lambda t: ([_t(t[0])], INT),
     lambda a, env: Vec(INT, np.mod(_micros(a[0]), 1_000_000).astype(np.int32)))


def _last_day(a: list[Vec], env: EvalEnv) -> Vec:
    m = _day_numbers(a[0]).astype("datetime64[D]").astype("datetime64[M]")
    nxt = (m + np.timedelta64(1, "M")).astype("datetime64[D]").astype(np.int64)
    return _date_vec(nxt - 1)


_reg("last_day", 1, 1, lambda t: ([_t(t[0])], DATE), _last_day)
# MySQL day numbers: TO_DAYS('0000-01-01') = 1 (proleptic Gregorian with a year 0)
_TO_DAYS_EPOCH = 719528
_reg("to_days", 1, 1, lambda t: ([_t(t[0])], BIGINT),
     lambda a, env: Vec(BIGINT, _day_numbers(a[0]) + _TO_DAYS_EPOCH))


def _from_days(a: list[Vec], env: EvalEnv) -> Vec:
    n = a[0].data.astype(np.int64)
    ok = (n >= 366) & (n <= 3652424)  # 0001-01-01 .. 9999-12-31
    days = np.where(ok, n - _TO_DAYS_EPOCH, 0)
    return _date_vec(days, None if ok.all() else ok)


_reg("from_days", 1, 1, lambda t: ([BIGINT], DATE), _from_days)


def _makedate(a: list[Vec], env: EvalEnv) -> Vec:
    year = a[0].data.astype(np.int64)
    doy = a[1].data.astype(np.int64)
    ok = (doy > 0) & (year >= 0) & (year <= 9999)
    y = np.where(ok, year, 1970)
    y = np.where(y < 70, y + 2000, np.where(y < 100, y + 1900, y))  # MySQL two-digit years
    jan1 = (y - 1970).astype("datetime64[Y]").astype("datetime64[D]").astype(np.int64)
    days = jan1 + np.where(ok, doy, 1) - 1
    ok &= days <= date_days(9999, 12, 31)
    return _date_vec(np.where(ok, days, 0), None if ok.all() else ok)


def date_days(y: int, m: int, d: int) -> int:
    return _dt.date(y, m, d).toordinal() - _EPOCH_ORDINAL


_reg("makedate", 2, 2, lambda t: ([BIGINT, BIGINT], DATE), _makedate)


# ---- WEEK ----------------------------------------------------------------------------------
_MONDAY_FIRST, _WEEK_YEAR, _FIRST_WEEKDAY = 1, 2, 4


def _days_in_year(y: int) -> int:
    return 366 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 365


def calc_week(d: _dt.date, flags: int) -> tuple[int, int]:
    """MySQL `calc_week`: (year, week) of `d` for raw behaviour flags."""
    monday_first = bool(flags & _MONDAY_FIRST)
    week_year = bool(flags & _WEEK_YEAR)
    first_weekday = bool(flags & _FIRST_WEEKDAY)
    daynr = d.toordinal()
    year = d.year
    first_daynr = _dt.date(year, 1, 1).toordinal()
    wd = _dt.date(year, 1, 1).weekday()  # 0 = Monday
    weekday = wd if monday_first else (wd + 1) % 7
    if d.month == 1 and d.day <= 7 - weekday:
        if not week_year and ((first_weekday and weekday != 0)
                              or (not first_weekday and weekday >= 4)):
            return year, 0
        week_year = True
        year -= 1
        days = _days_in_year(year)
        first_daynr -= days
        weekday = (weekday + 53 * 7 - days) % 7
    if (first_weekday and weekday != 0) or (not first_weekday and weekday >= 4):
        days = daynr - (first_daynr + (7 - weekday))
    else:
        days = daynr - (first_daynr - weekday)
    if week_year and days >= 52 * 7:
        weekday = (weekday + _days_in_year(year)) % 7
        if (not first_weekday and weekday < 4) or (first_weekday and weekday == 0):
            return year + 1, 1
    return year, days // 7 + 1


def week_mode(mode: int) -> int:
    """WEEK(d, mode) -> calc_week flags (MySQL `week_mode`)."""
    flags = mode & 7
    if not flags & _MONDAY_FIRST:
        flags ^= _FIRST_WEEKDAY
    return flags


def _week(a: list[Vec], env: EvalEnv) -> Vec:
    modes = a[1].data.tolist() if len(a) > 1 else [0] * env.n
    out = [calc_week(d, week_mode(int(m)))[1] for d, m in zip(_dates(a[0]), modes)]
    return Vec(TINYINT, np.array(out, dtype=np.int8))


def _yearweek(a: list[Vec], env: EvalEnv) -> Vec:
    modes = a[1].data.tolist() if len(a) > 1 else [0] * env.n
    out = []
    for d, m in zip(_dates(a[0]), modes):
        y, w = calc_week(d, week_mode(int(m)) | _WEEK_YEAR)
        out.append(y * 100 + w)
    return Vec(INT, np.array(out, dtype=np.int32))


_reg("week", 1, 2, lambda t: ([_t(t[0])] + [BIGINT] * (len(t) - 1), TINYINT), _week)
_reg("yearweek", 1, 2, lambda t: ([_t(t[0])] + [BIGINT] * (len(t) - 1), INT), _yearweek)
_reg("weekofyear", 1, 1, lambda t: ([_t(t[0])], TINYINT),
     lambda a, env: Vec(TINYINT, np.array([calc_week(d, 3)[1] for d in _dates(a[0])],
                                          dtype=np.int8)))


# ---- TIMESTAMPDIFF -------------------------------------------------------------------------
_DIFF_MICROS = {"MICROSECOND": 1, "SECOND": 1_000_000, "MINUTE": 60_000_000,
                "HOUR": 3_600_000_000, "DAY": MICROS_PER_DAY, "WEEK": 7 * MICROS_PER_DAY}
_DIFF_MONTHS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def _months_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whole months from micros `a` to micros `b` (MySQL: a partial month does not count)."""
    def split(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        days = np.floor_divide(m, MICROS_PER_DAY)
        mon = days.astype("datetime64[D]").astype("datetime64[M]")
        start = mon.astype("datetime64[D]").astype(np.int64) * MICROS_PER_DAY
        return mon.astype(np.int64), m - start  # month index, offset into the month

    ma, oa = split(a)
    mb, ob = split(b)
    months = mb - ma
    months = np.where((months > 0) & (ob < oa), months - 1, months)
    return np.where((months < 0) & (ob > oa), months + 1, months)


def _timestampdiff(a: list[Vec], env: EvalEnv) -> Vec:
    unit = str(a[0].data[0]).upper() if len(a[0]) else "SECOND"
    x, y = _micros(a[1]), _micros(a[2])
    if unit in _DIFF_MICROS:
        diff = y - x
        step = _DIFF_MICROS[unit]
        q = np.abs(diff) // step
        return Vec(BIGINT, np.where(diff < 0, -q, q))
    if unit in _DIFF_MONTHS:
        months = _months_between(x, y)
        return Vec(BIGINT, (np.abs(months) // _DIFF_MONTHS[unit]) * np.sign(months))
    raise DorisError(f"unsupported time unit {unit}")


_reg("timestampdiff", 3, 3, lambda t: ([STRING, _t(t[1]), _t(t[2])], BIGINT), _timestampdiff,
     literal_args=(0,))


# ---- UNIX time -----------------------------------------------------------------------------
_MAX_UNIX = 253402271999  # 9999-12-31 23:59:59 UTC


def _unix_timestamp(a: list[Vec], env: EvalEnv) -> Vec:
    v = a[0]
    if len(a) > 1:  # (string, format)
        parsed = [str_to_datetime(s, f) for s, f in zip(v.data.tolist(), a[1].data.tolist())]
        ok = np.array([p is not None for p in parsed], dtype=np.bool_)
        secs = [datetime_to_micros(p) // 1_000_000 if p is not None else 0 for p in parsed]
        return Vec(BIGINT, np.array(secs, dtype=np.int64), None if ok.all() else ok)
    secs = np.floor_divide(_micros(v), 1_000_000)
    ok = (secs >= 0) & (secs <= _MAX_UNIX)  # Doris: outside the unix range gives 0
    return Vec(BIGINT, np.where(ok, secs, 0))


_reg("unix_timestamp", 1, 2,
     lambda t: ([_t(t[0])] if len(t) == 1 else [STRING, STRING], BIGINT), _unix_timestamp)


def _from_unixtime(a: list[Vec], env: EvalEnv) -> Vec:
    from sql.functions.temporal import date_format

    secs = a[0].data.astype(np.int64)
    ok = (secs >= 0) & (secs <= _MAX_UNIX)
    fmts = a[1].data.tolist() if len(a) > 1 else ["%Y-%m-%d %H:%i:%s"] * env.n
    out = [date_format(micros_to_datetime(int(s) * 1_000_000), f) if good else ""
           for s, f, good in zip(secs.tolist(), fmts, ok.tolist())]
    return Vec(STRING, object_array(out), None if ok.all() else ok)


_reg("from_unixtime", 1, 2, lambda t: ([BIGINT] + [STRING] * (len(t) - 1), STRING),
     _from_unixtime)


# ---- STR_TO_DATE ---------------------------------------------------------------------------
_TIME_SPECS = set("HkhIlisSfpTr")
_NUM = {"Y": r"(?P<Y>\d{4})", "y": r"(?P<y>\d{2})", "m": r"(?P<m>\d{1,2})",
        "c": r"(?P<m>\d{1,2})", "d": r"(?P<d>\d{1,2})", "e": r"(?P<d>\d{1,2})",
        "H": r"(?P<H>\d{1,2})", "k": r"(?P<H>\d{1,2})", "h": r"(?P<h>\d{1,2})",
        "I": r"(?P<h>\d{1,2})", "l": r"(?P<h>\d{1,2})", "i": r"(?P<i>\d{1,2})",
        "s": r"(?P<s>\d{1,2})", "S": r"(?P<s>\d{1,2})", "f": r"(?P<f>\d{1,6})",
        "j": r"(?P<j>\d{1,3})", "p": r"(?P<p>AM|PM|am|pm)",
        "M": r"(?P<M>[A-Za-z]+)", "b": r"(?P<b>[A-Za-z]{3})", "W": r"[A-Za-z]+",
        "a": r"[A-Za-z]{3}", "D": r"(?P<d>\d{1,2})(?:st|nd|rd|th)",
        "T": r"(?P<H>\d{1,2}):(?P<i>\d{1,2}):(?P<s>\d{1,2})",
        "r": r"(?P<h>\d{1,2}):(?P<i>\d{1,2}):(?P<s>\d{1,2})\s*(?P<p>AM|PM|am|pm)"}


def format_has_time(fmt: str) -> bool:
    return any(fmt[i] == "%" and fmt[i + 1] in _TIME_SPECS for i in range(len(fmt) - 1))


def str_to_date_type(fmt: object) -> DataType:
    """Result type of STR_TO_DATE for a constant format (Doris: DATE without time parts)."""
    if not isinstance(fmt, str):
        return datetime(6)
    if not format_has_time(fmt):
        return DATE
    return datetime(6) if "%f" in fmt else datetime(0)


@lru_cache(maxsize=128)
def _format_regex(fmt: str) -> TextPattern:
    out, i, seen = [], 0, set()
    while i < len(fmt):
        ch = fmt[i]
        if ch == "%" and i + 1 < len(fmt):
            spec = fmt[i + 1]
            i += 2
            pat = _NUM.get(spec)
            if pat is None:
                out.append(re.escape(spec))
                continue
            for name in re.findall(r"\?P<(\w)>", pat):  # a group may appear only once
                if name in seen:
                    pat = pat.replace(f"?P<{name}>", "?:")
                seen.add(name)
            # MySQL skips blanks before a number or name ('May 1, 2013' with '%M %d,%Y')
            out.append(r"\s*" + pat)
            continue
        out.append(r"\s*" if ch == " " else re.escape(ch))
        i += 1
    # RE2: a format with many blanks would make `re` backtrack polynomially on a bad value
    return text_regex(r"\s*" + "".join(out), case_insensitive=True)


def str_to_datetime(text: str, fmt: str) -> _dt.datetime | None:
    m = _format_regex(fmt).match(text)
    if m is None:
        return None
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    try:
        year = int(g["Y"]) if "Y" in g else (
            (2000 + int(g["y"]) if int(g["y"]) < 70 else 1900 + int(g["y"])) if "y" in g else 0)
        month = int(g.get("m", 0))
        if "M" in g or "b" in g:
            name = (g.get("M") or g["b"]).capitalize()
            month = next(k + 1 for k, n in enumerate(MONTH_NAMES)
                         if n == name or n[:3] == name)
        day = int(g.get("d", 0))
        if "j" in g:
            base = _dt.date(year, 1, 1) + _dt.timedelta(days=int(g["j"]) - 1)
            month, day = base.month, base.day
        hour = int(g["H"]) if "H" in g else int(g.get("h", 0)) % 12
        if g.get("p", "").upper() == "PM" and "H" not in g:
            hour += 12
        micro = int(g["f"].ljust(6, "0")) if "f" in g else 0
        return _dt.datetime(year, month or 1, day or 1, hour, int(g.get("i", 0)),
                            int(g.get("s", 0)), micro) if year else None
    except (ValueError, StopIteration, KeyError):
        return None


# Specifiers a column-at-a-time parse reads exactly as `str_to_datetime` does: digits only
# (%y is not here: its century pivot and the name specifiers stay with the row parser).
_COLUMN_SPECS = {"Y": r"(?P<Y>\d{4})", "m": r"(?P<m>\d{1,2})", "d": r"(?P<d>\d{1,2})",
                 "H": r"(?P<H>\d{1,2})", "i": r"(?P<i>\d{1,2})", "s": r"(?P<s>\d{1,2})",
                 "S": r"(?P<s>\d{1,2})",
                 "T": r"(?P<H>\d{1,2}):(?P<i>\d{1,2}):(?P<s>\d{1,2})"}


@lru_cache(maxsize=128)
def _column_regex(fmt: str) -> str | None:
    """An anchored regex with one named group per field for a format of numeric specifiers
    and punctuation (with %Y), else None. A value it matches holds exactly the digits the row
    parser would read, split the same way."""
    out, i = ["^"], 0
    seen: set[str] = set()
    while i < len(fmt):
        ch = fmt[i]
        if ch == "%":
            pat = _COLUMN_SPECS.get(fmt[i + 1]) if i + 1 < len(fmt) else None
            names = set(re.findall(r"\?P<(\w)>", pat or ""))
            if pat is None or names & seen:
                return None
            seen |= names
            out.append(pat)
            i += 2
            continue
        if ch not in "-/:.T_, ":
            return None
        out.append(re.escape(ch))
        i += 1
    return "".join(out) + "$" if "Y" in seen else None


def parse_datetimes(texts: np.ndarray, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """(micros since the epoch, parsed) of STR_TO_DATE(texts, fmt) for a constant format.
    A plain numeric format (the common load expression `str_to_date(col, '%Y-%m-%d')`) is
    parsed a column at a time: RE2 extracts the fields (Arrow's extract_regex), numpy checks
    and combines them. Other formats, and every value that does not match the strict shape
    (blanks, trailing text), go through `str_to_datetime`, which defines the result."""
    n = len(texts)
    micros = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=np.bool_)
    pending = np.ones(n, dtype=np.bool_)
    regex = _column_regex(fmt)
    if regex is not None and n:
        fields = pc.extract_regex(pa.array(texts, type=pa.string(), from_pandas=True), regex)
        matched = fields.is_valid().to_numpy(zero_copy_only=False)
        pending &= ~matched

        def part(name: str) -> np.ndarray:
            if fields.type.get_field_index(name) < 0:
                return np.zeros(n, dtype=np.int64)
            text = pc.struct_field(fields, name).fill_null("0")
            return pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False)

        year, month, day = part("Y"), part("m"), part("d")
        hour, minute, second = part("H"), part("i"), part("s")
        month = np.where(month == 0, 1, month)  # as the row parser: a zero month/day is 1
        day = np.where(day == 0, 1, day)
        good = matched & (year > 0) & (month <= 12) & (hour < 24) & (minute < 60) & (second < 60)
        first = ((year - 1970) * 12 + np.clip(month, 1, 12) - 1).astype("datetime64[M]")
        first_day = first.astype("datetime64[D]").astype(np.int64)
        month_days = (first + 1).astype("datetime64[D]").astype(np.int64) - first_day
        good &= day <= month_days
        days = first_day + day - 1
        micros = np.where(good, ((days * 24 + hour) * 60 + minute) * 60 + second, 0) * 1_000_000
        ok = good
    for i in np.flatnonzero(pending).tolist():
        value = texts[i]
        p = str_to_datetime(value, fmt) if isinstance(value, str) else None
        if p is not None:
            micros[i] = datetime_to_micros(p)
            ok[i] = True
    return micros, ok


def _str_to_date(ret: DataType) -> Callable:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        fmts = a[1].data
        if len(fmts) and isinstance(fmts[0], str) and (fmts == fmts[0]).all():
            micros, ok = parse_datetimes(a[0].data, fmts[0])
        else:
            parsed = [str_to_datetime(s, f) for s, f in zip(a[0].data.tolist(), fmts.tolist())]
            ok = np.array([p is not None for p in parsed], dtype=np.bool_)
            micros = np.array([datetime_to_micros(p) if p is not None else 0 for p in parsed],
                              dtype=np.int64)
        valid = None if ok.all() else ok
        if ret.kind is TypeKind.DATE:
            return _date_vec(np.floor_divide(micros, MICROS_PER_DAY), valid)
        return Vec(ret, micros, valid)

    return impl


def _str_to_date_any(a: list[Vec], env: EvalEnv) -> Vec:
    fmt = str(a[1].data[0]) if len(a[1]) else ""
    return _str_to_date(str_to_date_type(fmt))(a, env)


# the format must be constant: it decides the result type (DATE or DATETIME), see the binder
_reg("str_to_date", 2, 2, lambda t: ([STRING, STRING], datetime(6)), _str_to_date_any,
     literal_args=(1,))
