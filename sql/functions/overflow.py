"""Overflow checks for integer and DECIMAL arithmetic: a result never wraps silently.

Doris 2.1 types `a + b`, `a - b` and `a * b` on integers one step wider than the wider operand
(TINYINT -> SMALLINT -> INT -> BIGINT; BIGINT and LARGEINT stay: Nereids' `promotion()`), so
only BIGINT and LARGEINT results, and DECIMALs whose precision hit 38, can overflow. Doris'
backend then wraps BIGINT/LARGEINT results silently (C++ integer arithmetic) and raises
`Arithmetic overflow: ...` for DECIMALs (check_overflow_for_decimal, on by default). We raise
for all of them, with Doris' decimal wording, MySQL's code for an out-of-range value (1690,
SQLSTATE 22003) and what to do about it.

The checks are vectorised: int64 addition/subtraction overflow is the sign test on the wrapped
result (`((x ^ r) & (y ^ r)) < 0` for +), multiplication a float64 magnitude pre-check with an
exact Python-int recheck of the few rows near the limit; wide (object) results are compared
with the type's bounds. Upstream: Doris `THROW_DECIMAL_BINARY_OP_OVERFLOW_EXCEPTION`
(be/src/vec/functions/function_binary_arithmetic.h); MySQL `ER_DATA_OUT_OF_RANGE`.
"""

from __future__ import annotations

import numpy as np

from sql.errors import DorisError, ErrorCode
from storage.types import DataType, TypeKind

_OP_NAMES = {"+": "add", "-": "subtract", "*": "multiply", "DIV": "int_divide", "neg": "negate",
             "abs": "abs", "sum": "sum =", "/": "divide"}
_WIDER_HINT = {TypeKind.BIGINT: "LARGEINT or DECIMAL(38, 0)", TypeKind.LARGEINT: "DOUBLE"}
# |x * y| below this in float64 cannot have overflowed int64 (float rounding stays far below 2x)
_MUL_SAFE = 2.0 ** 62


def overflow_error(op: str, x: object, y: object | None, t: DataType) -> DorisError:
    """Doris' `Arithmetic overflow: <x> <op> <y> ...` with the type and a way out."""
    name = _OP_NAMES.get(op, op)
    operands = f"{x} {name} {y}" if y is not None else f"{name} {x}"
    hint = _WIDER_HINT.get(t.kind, "DOUBLE" if t.is_decimal else "BIGINT")
    return DorisError(
        f"Arithmetic overflow: {operands} is out of the range of {t.sql()}; "
        f"CAST an operand to {hint} to compute it", ErrorCode.DATA_OUT_OF_RANGE)


def _first(mask: np.ndarray, valid: np.ndarray | None) -> int | None:
    if valid is not None:
        mask = mask & np.asarray(valid, np.bool_)
    if not mask.any():
        return None
    return int(np.argmax(mask))


def _value(data: np.ndarray, i: int, t: DataType) -> object:
    v = data[i]
    if t.is_decimal and t.scale:
        sign = "-" if int(v) < 0 else ""
        digits = str(abs(int(v))).rjust(t.scale + 1, "0")
        return f"{sign}{digits[:-t.scale]}.{digits[-t.scale:]}"
    return int(v)


def check_int64(op: str, x: np.ndarray, y: np.ndarray, r: np.ndarray, t: DataType,
                valid: np.ndarray | None, operand_type: DataType | None = None) -> None:
    """Raise if `r = x op y` (computed wrapping in int64) overflowed in any valid row."""
    if op == "+":
        bad = ((x ^ r) & (y ^ r)) < 0
    elif op == "-":
        bad = ((x ^ y) & (x ^ r)) < 0
    elif op == "*":
        with np.errstate(over="ignore"):
            approx = np.abs(x.astype(np.float64) * y.astype(np.float64))
        near = approx >= _MUL_SAFE
        if not near.any():
            return
        bad = np.zeros(len(r), np.bool_)
        idx = np.flatnonzero(near)
        for j, a, b in zip(idx.tolist(), x[idx].tolist(), y[idx].tolist()):
            bad[j] = not (-(1 << 63) <= a * b < (1 << 63))
    else:
        raise ValueError(op)
    i = _first(np.asarray(bad), valid)
    if i is not None:
        ot = operand_type or t
        raise overflow_error(op, _value(x, i, ot), _value(y, i, ot), t)


def check_bounds(op: str, a: np.ndarray, b: np.ndarray | None, r: np.ndarray, t: DataType,
                 valid: np.ndarray | None, operand_types: tuple[DataType, DataType] | None = None
                 ) -> None:
    """Raise if a result (any dtype; object arrays of Python ints for wide types) lies outside
    the range of `t` (for DECIMAL(p, s): |unscaled| < 10^p) in any valid row."""
    if len(r) == 0:
        return
    lo, hi = t.int_range()
    if r.dtype == np.dtype(object):
        vals = r if valid is None else r[np.asarray(valid, np.bool_)]
        if len(vals) == 0:
            return
        if lo <= min(vals) and max(vals) <= hi:
            return
        bad = np.fromiter((not (lo <= v <= hi) for v in r.tolist()), np.bool_, count=len(r))
    else:
        if r.dtype.kind == "f":
            return
        info = np.iinfo(r.dtype)
        if lo <= info.min and info.max <= hi:
            return
        bad = (r < lo) | (r > hi)
    i = _first(bad, valid)
    if i is None:
        return
    ta, tb = operand_types or (t, t)
    raise overflow_error(op, _value(a, i, ta), None if b is None else _value(b, i, tb), t)


def check_mask(op: str, bad: np.ndarray, a: np.ndarray, b: np.ndarray | None, t: DataType,
               valid: np.ndarray | None) -> None:
    """Raise for the first valid row flagged in `bad` (MIN DIV -1, -MIN)."""
    i = _first(np.asarray(bad, np.bool_), valid)
    if i is not None:
        raise overflow_error(op, _value(a, i, t), None if b is None else _value(b, i, t), t)
