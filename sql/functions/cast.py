"""CAST between every pair of scalar types, on `Vec`s (numpy reference implementation).

Semantics follow Doris 2.1 non-strict casts: a value that cannot be converted (bad string,
out-of-range number) becomes NULL instead of failing the query. Floats and decimals cast to
integers truncate toward zero (Doris; MySQL would round); decimal rescaling and float -> decimal
round half away from zero. DATE/DATETIME used as numbers are YYYYMMDD / YYYYMMDDhhmmss.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from sql.functions.vector import Vec, and_valid, constant, object_array
from storage.types import (
    DATE,
    EXACT_DECIMALS,
    INTEGER_KINDS,
    DataType,
    TypeError_,
    TypeKind,
    date_to_days,
    datetime_to_micros,
    parse_date,
    parse_datetime,
)

MICROS_PER_DAY = 86_400_000_000


def cast_vec(v: Vec, target: DataType) -> Vec:
    src = v.type
    if src == target:
        return v
    if src.is_nested or target.is_nested:  # element-wise, in sql/functions/nested.py
        from sql.functions.nested import cast_nested
        return cast_nested(v, target)
    n = len(v)
    if src.kind is TypeKind.NULL:
        return constant(target, None, n)
    k = target.kind
    if target.is_varlen:
        return _to_string(v, target)
    if k is TypeKind.BOOLEAN:
        return _to_bool(v, target)
    if k in INTEGER_KINDS:
        return _to_int(v, target)
    if target.is_float:
        data, valid = to_float(v)
        return Vec(target, data.astype(target.numpy_dtype), valid)
    if target.is_decimal:
        return _to_decimal(v, target)
    if k is TypeKind.DATE:
        return _to_date(v, target)
    if k is TypeKind.DATETIME:
        return _to_datetime(v, target)
    if k is TypeKind.NULL:
        return constant(target, None, n)
    raise TypeError_(f"cast from {src.sql()} to {target.sql()} is not supported")


# ---- numbers -------------------------------------------------------------------------------
def to_float(v: Vec) -> tuple[np.ndarray, np.ndarray | None]:
    """float64 values of a numeric/temporal/string Vec (bad strings -> NULL)."""
    t = v.type
    if t.is_decimal:
        scale = 10 ** t.scale
        if v.data.dtype == np.dtype(object):
            data = np.array([x / scale for x in v.data.tolist()], dtype=np.float64)
        else:
            data = v.data.astype(np.float64) / scale
        return data, v.validity
    if t.is_varlen:
        vals: list[float] = []
        ok = np.ones(len(v), np.bool_)
        for i, s in enumerate(v.data.tolist()):
            try:
                vals.append(float(s.strip()) if isinstance(s, str) else float(s))
            except (ValueError, TypeError):
                vals.append(0.0)
                ok[i] = False
        return np.array(vals, dtype=np.float64), and_valid(v.validity, None if ok.all() else ok)
    if t.is_temporal:
        return _temporal_number(v).astype(np.float64), v.validity
    if v.data.dtype == np.dtype(object):
        return np.array([float(x) for x in v.data.tolist()], dtype=np.float64), v.validity
    return v.data.astype(np.float64), v.validity


def _temporal_number(v: Vec) -> np.ndarray:
    if v.type.kind is TypeKind.DATE:
        d = v.data.astype("datetime64[D]")
        y = d.astype("datetime64[Y]").astype(np.int64) + 1970
        m = (d.astype("datetime64[M]").astype(np.int64) % 12) + 1
        day = (d - d.astype("datetime64[M]")).astype(np.int64) + 1
        return y * 10000 + m * 100 + day
    us = v.data.astype("datetime64[us]")
    d = us.astype("datetime64[D]")
    date_part = _temporal_number(Vec(DATE, d.astype(np.int64).astype(np.int32)))
    secs = (us - d).astype(np.int64) // 1_000_000
    return date_part * 1_000_000 + (secs // 3600) * 10000 + (secs // 60 % 60) * 100 + secs % 60


def _int_values(v: Vec) -> tuple[np.ndarray, np.ndarray | None]:
    """Exact integer values as int64 (or object when they may not fit), truncating decimals."""
    t = v.type
    if t.kind is TypeKind.BOOLEAN or t.is_integer:
        return v.data, v.validity
    if t.is_decimal:
        scale = 10 ** t.scale
        if v.data.dtype == np.dtype(object):
            return object_array([_trunc_div(x, scale) for x in v.data.tolist()]), v.validity
        q = np.abs(v.data) // scale
        return np.where(v.data < 0, -q, q), v.validity
    if t.is_float:
        ok = np.isfinite(v.data) & (np.abs(v.data) < 1.7e38)
        data = np.where(ok, v.data, 0.0)
        if np.abs(data).max(initial=0.0) < 9.2e18:
            return (np.trunc(data).astype(np.int64),
                    and_valid(v.validity, ok if not ok.all() else None))
        return object_array([int(x) for x in data.tolist()]), and_valid(v.validity, ok)
    if t.is_temporal:
        return _temporal_number(v), v.validity
    if t.is_varlen:
        vals: list[int] = []
        ok = np.ones(len(v), np.bool_)
        for i, s in enumerate(v.data.tolist()):
            try:
                vals.append(_parse_int(s))
            except (ValueError, InvalidOperation, TypeError):
                vals.append(0)
                ok[i] = False
        return object_array(vals), and_valid(v.validity, None if ok.all() else ok)
    raise TypeError_(f"cannot convert {t.sql()} to an integer")


def _parse_int(s: object) -> int:
    text = s.strip() if isinstance(s, str) else str(s)
    try:
        return int(text)
    except ValueError:
        d = Decimal(text)
        if not d.is_finite():
            raise ValueError(text) from None
        return int(d)  # truncates toward zero


def _trunc_div(x: int, d: int) -> int:
    q = abs(x) // d
    return -q if x < 0 else q


def _round_div(x: int, d: int) -> int:
    """x / d rounded half away from zero (exact integers)."""
    q, r = divmod(abs(x), d)
    if 2 * r >= d:
        q += 1
    return -q if x < 0 else q


def fit_range(data: np.ndarray, valid: np.ndarray | None, t: DataType) -> Vec:
    """Place integer values into type `t`, turning out-of-range values into NULL."""
    lo, hi = t.int_range()
    if data.dtype == np.dtype(object):
        # Python ints compared and selected by numpy's object loops (no per-row Python frame)
        ok = np.asarray((data >= lo) & (data <= hi), dtype=np.bool_)
        out = data.copy() if ok.all() else np.where(ok, data, 0).astype(object)
        if not t.is_object:
            out = out.astype(t.numpy_dtype)
    else:
        info = np.iinfo(data.dtype) if data.dtype.kind in "iu" else None
        if info is not None and info.min >= lo and info.max <= hi:
            ok = np.ones(len(data), np.bool_)
        else:
            ok = (data >= lo) & (data <= hi)
        if t.is_object and data.dtype.kind in "iu":
            # int64 -> Python ints in C (`astype(object)`), no per-row Python frame
            out = np.where(ok, data, 0).astype(object)
        elif t.is_object:
            out = object_array([int(x) if g else 0 for x, g in zip(data.tolist(), ok)])
        else:
            out = np.where(ok, data, 0).astype(t.numpy_dtype)
    return Vec(t, out, and_valid(valid, None if ok.all() else ok))


def _to_int(v: Vec, target: DataType) -> Vec:
    data, valid = _int_values(v)
    return fit_range(data, valid, target)


def _to_bool(v: Vec, target: DataType) -> Vec:
    if v.type.is_varlen:
        vals, ok = [], np.ones(len(v), np.bool_)
        for i, s in enumerate(v.data.tolist()):
            low = s.strip().lower() if isinstance(s, str) else ""
            if low in ("true", "false"):
                vals.append(low == "true")
                continue
            try:
                vals.append(float(low) != 0)
            except ValueError:
                vals.append(False)
                ok[i] = False
        return Vec(target, np.array(vals, np.uint8),
                   and_valid(v.validity, None if ok.all() else ok))
    if v.data.dtype == np.dtype(object):
        return Vec(target, np.array([x != 0 for x in v.data.tolist()], np.uint8), v.validity)
    return Vec(target, (v.data != 0).astype(np.uint8), v.validity)


def _to_decimal(v: Vec, target: DataType) -> Vec:
    t = v.type
    s = target.scale
    if t.is_decimal:
        if (s >= t.scale and target.precision - s >= t.precision - t.scale
                and not target.is_object and v.data.dtype != np.dtype(object)):
            # a widening cast (TPC-H Q1's DECIMAL(15,2) -> (16,2) operands): every value fits,
            # so no range test; only the scale step, within int64
            data = v.data.astype(np.int64, copy=False)
            if s > t.scale:
                data = data * 10 ** (s - t.scale)
            return Vec(target, data.astype(target.numpy_dtype, copy=False), v.validity)
        if t.scale == s:
            data, valid = v.data, v.validity
        elif s > t.scale:
            mul = 10 ** (s - t.scale)
            if t.precision + s - t.scale <= 18 and v.data.dtype != np.dtype(object):
                data, valid = v.data.astype(np.int64) * mul, v.validity
            else:
                data, valid = object_array([int(x) * mul for x in v.data.tolist()]), v.validity
        else:
            div = 10 ** (t.scale - s)
            if v.data.dtype != np.dtype(object):
                q = (np.abs(v.data) + div // 2) // div
                data, valid = np.where(v.data < 0, -q, q), v.validity
            else:
                data = object_array([_round_div(int(x), div) for x in v.data.tolist()])
                valid = v.validity
    elif t.is_float:
        scaled = v.data.astype(np.float64) * (10.0 ** s)
        ok = np.isfinite(scaled) & (np.abs(scaled) < float(10 ** target.precision))
        r = np.where(ok, np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), 0.0)
        if target.precision <= 18:
            data = r.astype(np.int64)
        else:
            data = object_array([
                int(Decimal(float(x)).scaleb(s, EXACT_DECIMALS).to_integral_value("ROUND_HALF_UP"))
                if g else 0 for x, g in zip(v.data.tolist(), ok)])
        valid = and_valid(v.validity, None if ok.all() else ok)
    elif t.is_varlen:
        vals, ok = [], np.ones(len(v), np.bool_)
        for i, x in enumerate(v.data.tolist()):
            try:
                d = Decimal(x.strip())
                if not d.is_finite():
                    raise InvalidOperation
                vals.append(int(d.scaleb(s, EXACT_DECIMALS).to_integral_value(
                    rounding="ROUND_HALF_UP")))
            except (InvalidOperation, AttributeError, ValueError):
                vals.append(0)
                ok[i] = False
        data, valid = object_array(vals), and_valid(v.validity, None if ok.all() else ok)
    else:
        ints, valid = _int_values(v)
        mul = 10**s
        if ints.dtype != np.dtype(object) and target.precision <= 18:
            hi = target.int_range()[1]
            okm = np.abs(ints) <= hi // mul
            data = np.where(okm, ints, 0).astype(np.int64) * mul
            return Vec(target, data, and_valid(valid, None if okm.all() else okm))
        data = object_array([int(x) * mul for x in ints.tolist()])
    return fit_range(data, valid, target)


# ---- temporal ------------------------------------------------------------------------------
def _parse_each(v: Vec, parse: Callable[[Any], int]) -> tuple[np.ndarray, np.ndarray | None]:
    # Any: `parse` takes the values as tolist gives them (str for text, int for numbers)
    vals, ok = [], np.ones(len(v), np.bool_)
    for i, x in enumerate(v.data.tolist()):
        try:
            vals.append(parse(x))
        except (TypeError_, ValueError, OverflowError):
            vals.append(0)
            ok[i] = False
    return np.array(vals, dtype=np.int64), and_valid(v.validity, None if ok.all() else ok)


def _number_text(x: object) -> str:
    return str(int(x)) if isinstance(x, (int, np.integer)) else str(x)


def _to_date(v: Vec, target: DataType) -> Vec:
    t = v.type
    if t.kind is TypeKind.DATETIME:
        return Vec(target, np.floor_divide(v.data, MICROS_PER_DAY).astype(np.int32), v.validity)
    if t.is_varlen:
        data, valid = _parse_each(v, lambda s: date_to_days(parse_date(s.strip())))
        return Vec(target, data.astype(np.int32), valid)
    ints, valid = _int_values(v)
    iv = Vec(t, ints, valid)
    data, valid = _parse_each(iv, lambda x: date_to_days(parse_date(_number_text(x))))
    return Vec(target, data.astype(np.int32), valid)


def _to_datetime(v: Vec, target: DataType) -> Vec:
    t = v.type
    unit = 10 ** (6 - target.scale)
    if t.kind is TypeKind.DATE:
        return Vec(target, v.data.astype(np.int64) * MICROS_PER_DAY, v.validity)
    if t.kind is TypeKind.DATETIME:
        if target.scale >= t.scale:
            return Vec(target, v.data, v.validity)
        return Vec(target, (v.data // unit) * unit, v.validity)
    if t.is_varlen:
        data, valid = _parse_each(
            v, lambda s: datetime_to_micros(parse_datetime(s.strip()), target.scale))
        return Vec(target, data, valid)
    ints, valid = _int_values(v)

    def parse_num(x: object) -> int:
        text = _number_text(x)
        if len(text) <= 8:
            return datetime_to_micros(parse_datetime(parse_date(text)), target.scale)
        return datetime_to_micros(_dt.datetime.strptime(text, "%Y%m%d%H%M%S"), target.scale)

    data, valid = _parse_each(Vec(t, ints, valid), parse_num)
    return Vec(target, data, valid)


# ---- strings -------------------------------------------------------------------------------
def _to_string(v: Vec, target: DataType) -> Vec:
    t = v.type
    if t.is_varlen:
        return Vec(target, v.data, v.validity)
    if t.is_integer or t.kind is TypeKind.BOOLEAN:
        out = object_array([str(x) for x in v.data.tolist()])
    else:
        fmt = t.format_value
        out = object_array([fmt(x) for x in v.data.tolist()])
    if v.validity is not None:
        out[~v.validity] = ""
    return Vec(target, out, v.validity)


def float_is_integral(x: float) -> bool:
    return math.isfinite(x) and float(x).is_integer()
