"""Date/time scalar functions: parts, DATE(), DATEDIFF, DATE_ADD/INTERVAL, DATE_FORMAT.

DATE is a day number and DATETIME a microsecond count (storage/types.py), so parts come from
numpy datetime64 arithmetic on the physical values and calendar steps (months, years) clamp the
day to the target month's length, as MySQL and Doris do.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

import numpy as np

from sql.errors import DorisError
from sql.functions import EvalEnv, ScalarFunction, ScalarImpl, Signature, register_scalar
from sql.functions.vector import Vec, object_array
from storage.types import (
    BIGINT,
    DATE,
    INT,
    MAX_DATE,
    MIN_DATE,
    SMALLINT,
    STRING,
    TINYINT,
    DataType,
    TypeKind,
    date_to_days,
    micros_to_datetime,
)

MICROS_PER_DAY = 86_400_000_000


def _sig(args: list[DataType | None], ret: DataType) -> tuple[list[DataType | None], DataType]:
    return args, ret


def _reg(name: str, lo: int, hi: int, signature: Signature, impl: ScalarImpl, *aliases: str,
         literal_args: Sequence[int] = ()) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, True, tuple(literal_args)),
                    *aliases)


# ---- date / time ---------------------------------------------------------------------------
def _temporal_arg(t: DataType) -> DataType:
    return t if t.is_temporal else (DATE if not t.is_string else DataType(TypeKind.DATETIME))


def _days(v: Vec) -> np.ndarray:
    """datetime64[D] of a DATE/DATETIME Vec."""
    if v.type.kind is TypeKind.DATE:
        return v.data.astype(np.int64).astype("datetime64[D]")
    return np.floor_divide(v.data, MICROS_PER_DAY).astype("datetime64[D]")


def _part(kind: str, ret: DataType) -> None:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        v = a[0]
        d = _days(v)
        if kind == "year":
            out = d.astype("datetime64[Y]").astype(np.int64) + 1970
        elif kind == "month":
            out = d.astype("datetime64[M]").astype(np.int64) % 12 + 1
        elif kind == "day":
            out = (d - d.astype("datetime64[M]")).astype(np.int64) + 1
        elif kind == "quarter":
            out = (d.astype("datetime64[M]").astype(np.int64) % 12) // 3 + 1
        elif kind == "dayofyear":
            out = (d - d.astype("datetime64[Y]")).astype(np.int64) + 1
        elif kind == "dayofweek":  # 1 = Sunday (MySQL/Doris); 1970-01-01 was a Thursday
            out = (d.astype(np.int64) + 4) % 7 + 1
        else:
            secs = np.zeros(len(v), np.int64)
            if v.type.kind is TypeKind.DATETIME:
                secs = np.mod(v.data, MICROS_PER_DAY) // 1_000_000
            out = {"hour": secs // 3600, "minute": secs // 60 % 60, "second": secs % 60}[kind]
        return Vec(ret, out.astype(ret.numpy_dtype))

    _reg(kind, 1, 1, lambda t: _sig([_temporal_arg(t[0])], ret), impl,
         *(("dayofmonth",) if kind == "day" else ()))


for _k, _t in (("year", SMALLINT), ("month", TINYINT), ("day", TINYINT), ("quarter", TINYINT),
               ("dayofyear", SMALLINT), ("dayofweek", TINYINT), ("hour", TINYINT),
               ("minute", TINYINT), ("second", TINYINT)):
    _part(_k, _t)


def _to_date(a: list[Vec], env: EvalEnv) -> Vec:
    v = a[0]
    if v.type.kind is TypeKind.DATE:
        return v
    return Vec(DATE, np.floor_divide(v.data, MICROS_PER_DAY).astype(np.int32))


_reg("to_date", 1, 1, lambda t: _sig([_temporal_arg(t[0])], DATE), _to_date, "date")
_reg("datediff", 2, 2,
     lambda t: _sig([_temporal_arg(t[0]), _temporal_arg(t[1])], INT),
     lambda a, env: Vec(INT, (_days(a[0]) - _days(a[1])).astype(np.int64).astype(np.int32)))

_MYSQL_FORMAT = {
    "Y": "%Y", "y": "%y", "m": "%m", "d": "%d", "H": "%H", "i": "%M", "s": "%S", "S": "%S",
    "M": "%B", "b": "%b", "a": "%a", "W": "%A", "j": "%j", "p": "%p", "T": "%H:%M:%S",
    "r": "%I:%M:%S %p", "I": "%I", "h": "%I", "w": "%w", "%": "%%",
}
# week specifiers -> (MySQL calc_week flags, print the year instead of the week)
_WEEK_FORMAT = {"U": (4, False), "u": (1, False), "V": (6, False), "v": (3, False),
                "X": (6, True), "x": (3, True)}


def _ordinal_suffix(day: int) -> str:
    if day % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def date_format(value: _dt.datetime, fmt: str) -> str:
    out, i = [], 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "%" and i + 1 < len(fmt):
            spec = fmt[i + 1]
            i += 2
            if spec in _MYSQL_FORMAT:
                out.append(value.strftime(_MYSQL_FORMAT[spec]))
            elif spec == "e":
                out.append(str(value.day))
            elif spec == "c":
                out.append(str(value.month))
            elif spec == "k":
                out.append(str(value.hour))
            elif spec == "l":
                out.append(str((value.hour - 1) % 12 + 1))
            elif spec == "f":
                out.append(f"{value.microsecond:06d}")
            elif spec == "D":
                out.append(f"{value.day}{_ordinal_suffix(value.day)}")
            elif spec in _WEEK_FORMAT:
                from sql.functions.datetimes import calc_week

                flags, want_year = _WEEK_FORMAT[spec]
                year, week = calc_week(value.date(), flags)
                out.append(f"{year:04d}" if want_year else f"{week:02d}")
            else:
                out.append(spec)
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _date_format(a: list[Vec], env: EvalEnv) -> Vec:
    v, f = a
    if v.type.kind is TypeKind.DATE:
        dts = [micros_to_datetime(int(x) * MICROS_PER_DAY) for x in v.data.tolist()]
    else:
        dts = [micros_to_datetime(int(x)) for x in v.data.tolist()]
    return Vec(STRING, object_array([date_format(d, s) for d, s in zip(dts, f.data.tolist())]))


_reg("date_format", 2, 2, lambda t: _sig([_temporal_arg(t[0]), STRING], STRING), _date_format)


_DAY_UNITS = {"DAY": 1, "WEEK": 7}
_MICRO_UNITS = {"HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000,
                "MICROSECOND": 1}
_MONTH_UNITS = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def _date_add_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    d = _temporal_arg(t[0])
    # the unit is a literal string; DATE stays DATE for day/week/month/year steps (Doris)
    return [d, BIGINT, None], d


def _add_months(days: np.ndarray, months: np.ndarray) -> np.ndarray:
    """Add calendar months to day numbers, clamping the day to the target month's length."""
    n = len(days)
    if n > 1 and (days == days[0]).all() and (months == months[0]).all():
        # constant operands (`date '1994-01-01' + interval '1' year` per batch): one value
        return np.full(n, _add_months_each(days[:1], months[:1])[0], np.int64)
    return _add_months_each(days, months)


def _add_months_each(days: np.ndarray, months: np.ndarray) -> np.ndarray:
    d = days.astype("datetime64[D]")
    m = d.astype("datetime64[M]")
    dom = (d - m).astype(np.int64)
    target = m + months.astype("timedelta64[M]")
    month_len = ((target + np.timedelta64(1, "M")).astype("datetime64[D]")
                 - target.astype("datetime64[D]")).astype(np.int64)
    out = target.astype("datetime64[D]") + np.minimum(dom, month_len - 1).astype("timedelta64[D]")
    return out.astype(np.int64)


# DATE/DATETIME range (Doris: 0000-01-01 .. 9999-12-31; Python's dates start at year 1)
DATE_MIN_DAYS = date_to_days(MIN_DATE)
DATE_MAX_DAYS = date_to_days(MAX_DATE)
DATETIME_MIN_MICROS = DATE_MIN_DAYS * MICROS_PER_DAY
DATETIME_MAX_MICROS = (DATE_MAX_DAYS + 1) * MICROS_PER_DAY - 1
# any step this large lands outside the range from any date: NULL before int64 could wrap
_MAX_STEP_DAYS = DATE_MAX_DAYS - DATE_MIN_DAYS + 1


def in_date_range(t: DataType, data: np.ndarray) -> np.ndarray | None:
    """Rows of a DATE/DATETIME result inside Doris' range (None: all are)."""
    if t.kind is TypeKind.DATE:
        lo, hi = DATE_MIN_DAYS, DATE_MAX_DAYS
    elif t.kind is TypeKind.DATETIME:
        lo, hi = DATETIME_MIN_MICROS, DATETIME_MAX_MICROS
    else:
        return None
    if len(data) == 0 or (data.min() >= lo and data.max() <= hi):
        return None
    return (data >= lo) & (data <= hi)


def _date_add(a: list[Vec], env: EvalEnv) -> Vec:
    """DATE_ADD / DATE_SUB / + INTERVAL. A result past 9999-12-31 (or before year 1) is NULL,
    as in Doris 2.1, never a wrapped or five-digit-year value."""
    v, n, unit_vec = a
    unit = str(unit_vec.data[0]).upper() if len(unit_vec) else "DAY"
    amount = n.data.astype(np.int64)
    days_per = _DAY_UNITS.get(unit, 0) or (31 * _MONTH_UNITS.get(unit, 0)) or (
        _MICRO_UNITS.get(unit, 0) / MICROS_PER_DAY)
    step_ok = np.abs(amount.astype(np.float64) * days_per) <= _MAX_STEP_DAYS
    if not step_ok.all():
        amount = np.where(step_ok, amount, 0)
    res = _date_add_values(v, amount, unit)
    ok = in_date_range(res.type, res.data)
    if ok is None and step_ok.all():
        return res
    ok = step_ok if ok is None else ok & step_ok
    return Vec(res.type, np.where(ok, res.data, 0).astype(res.data.dtype), ok)


def _date_add_values(v: Vec, amount: np.ndarray, unit: str) -> Vec:
    t = v.type
    if t.kind is TypeKind.DATE and unit in _MICRO_UNITS:
        v = Vec(DataType(TypeKind.DATETIME), v.data.astype(np.int64) * MICROS_PER_DAY, v.validity)
        t = v.type
    if unit in _DAY_UNITS:
        step = amount * _DAY_UNITS[unit]
        if t.kind is TypeKind.DATE:
            return Vec(t, (v.data.astype(np.int64) + step).astype(np.int32))
        return Vec(t, v.data + step * MICROS_PER_DAY)
    if unit in _MICRO_UNITS:
        return Vec(t, v.data + amount * _MICRO_UNITS[unit])
    if unit in _MONTH_UNITS:
        months = amount * _MONTH_UNITS[unit]
        if t.kind is TypeKind.DATE:
            return Vec(t, _add_months(v.data, months).astype(np.int32))
        days = np.floor_divide(v.data, MICROS_PER_DAY)
        rest = v.data - days * MICROS_PER_DAY
        return Vec(t, _add_months(days, months) * MICROS_PER_DAY + rest)
    raise DorisError(f"unsupported time unit {unit}")


def date_add_result_type(t: DataType, unit: str) -> DataType:
    if t.kind is TypeKind.DATE and unit.upper() in _MICRO_UNITS:
        return DataType(TypeKind.DATETIME)
    return t


_reg("date_add", 3, 3, _date_add_sig, _date_add, literal_args=(2,))
