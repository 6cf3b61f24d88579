"""Operator implementations on `Vec`s: arithmetic, comparison, three-valued logic, LIKE, IN,
CASE and COALESCE (numpy reference implementations; numba kernels may replace hot paths later).

Operands arrive already coerced by the binder (see `coercion.py`), so each function only deals
with one physical layout per operand. Division and modulo by zero yield NULL, as in Doris.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from sql.functions.overflow import check_bounds, check_int64, check_mask
from sql.functions.regex import compile_regex, like_to_regex
from sql.functions.vector import Vec, and_valid, bool_vec, object_array, wide_objects, widen
from storage.types import BOOLEAN, DataType, TypeKind

_OBJ = np.dtype(object)


def _as_result_layout(v: Vec, t: DataType) -> np.ndarray:
    """Operand data in the dtype the result is computed in (object for wide types)."""
    if t.is_object and v.data.dtype != _OBJ:
        return wide_objects(v.data)
    if not t.is_object and t.numpy_dtype != v.data.dtype and not t.is_decimal:
        return v.data.astype(t.numpy_dtype)
    return v.data


# Compact wide results: a wide (object-typed) result is computed in int64 when the operands'
# actual magnitudes rule out overflow. 2**62 leaves a factor 2 for the float64 rounding of the
# bound itself, so the int64 result is exact. The Vec keeps its wide type; `widen` (applied by
# the expression compiler wherever a non-arithmetic consumer takes the value) restores objects.
_COMPACT_LIMIT = 2.0 ** 62


def _int_bound(data: np.ndarray) -> float | None:
    """max |value| as a float for an integer array (0 when empty), None for other dtypes."""
    if data.dtype.kind not in "iu":
        return None
    if len(data) == 0:
        return 0.0
    return max(abs(float(data.max())), abs(float(data.min())))


def _compact_arithmetic(op: str, a: Vec, b: Vec) -> np.ndarray | None:
    """int64 result of `a op b` for a wide result type, or None when overflow is possible."""
    ba, bb = _int_bound(a.data), _int_bound(b.data)
    if ba is None or bb is None:
        return None
    bound = ba * bb if op == "*" else ba + bb
    if bound >= _COMPACT_LIMIT:
        return None
    x, y = a.data.astype(np.int64, copy=False), b.data.astype(np.int64, copy=False)
    return x + y if op == "+" else x - y if op == "-" else x * y


def arithmetic(op: str, a: Vec, b: Vec, t: DataType) -> Vec:
    valid = and_valid(a.validity, b.validity)
    if op in ("+", "-", "*"):
        if t.is_object and t.is_decimal:
            data = _compact_arithmetic(op, a, b)
            if data is not None:
                return Vec(t, data, valid)
        x, y = _as_result_layout(a, t), _as_result_layout(b, t)
        if t.is_decimal and not t.is_object:
            x, y = x.astype(np.int64), y.astype(np.int64)
        with np.errstate(over="ignore", invalid="ignore"):
            data = x + y if op == "+" else x - y if op == "-" else x * y
        _check_overflow(op, a, b, x, y, data, t, valid)
        return Vec(t, data, valid)
    a, b = widen(a), widen(b)
    if op == "/":
        return _divide(a, b, t, valid)
    if op == "%":
        return _modulo(a, b, t, valid)
    if op == "DIV":
        return _int_divide(a, b, t, valid)
    raise ValueError(op)


def _check_overflow(op: str, a: Vec, b: Vec, x: np.ndarray, y: np.ndarray, data: np.ndarray,
                    t: DataType, valid: np.ndarray | None) -> None:
    """Raise instead of returning a wrapped or out-of-range result (overflow.py). Narrower
    integer results cannot overflow: their type is one step wider than the operands'."""
    if data.dtype == np.int64 and not t.is_decimal:
        check_int64(op, x, y, data, t, valid)
    elif t.is_object:  # LARGEINT, DECIMAL(p > 18): exact Python ints, bounded by the type
        check_bounds(op, a.data, b.data, data, t, valid, (a.type, b.type))


def _nonzero(b: Vec) -> np.ndarray:
    if b.data.dtype == _OBJ:
        return np.fromiter((x != 0 for x in b.data.tolist()), np.bool_, count=len(b))
    return b.data != 0


def _divide(a: Vec, b: Vec, t: DataType, valid: np.ndarray | None) -> Vec:
    nz = _nonzero(b)
    valid = and_valid(valid, None if nz.all() else nz)
    if t.is_decimal:
        # unscaled result = a * 10^(s_b + s_r - s_a) / b, rounded half away from zero
        mul = 10 ** (b.type.scale + t.scale - a.type.scale)
        if not t.is_object and a.data.dtype != _OBJ and b.data.dtype != _OBJ:
            num = a.data.astype(np.int64) * mul
            den = np.where(nz, b.data, 1).astype(np.int64)
            q = (2 * np.abs(num) + np.abs(den)) // (2 * np.abs(den))
            data = np.where((num < 0) != (den < 0), -q, q)
            check_bounds("/", a.data, b.data, data, t, valid, (a.type, b.type))
            return Vec(t, data, valid)
        out = []
        for x, y in zip(a.data.tolist(), b.data.tolist()):
            x, y = int(x) * mul, int(y)
            if y == 0:
                out.append(0)
                continue
            q, r = divmod(abs(x), abs(y))
            if 2 * r >= abs(y):
                q += 1
            out.append(-q if (x < 0) != (y < 0) else q)
        data_o = object_array(out)
        # DECIMAL(38, s) quotients of big dividends by small divisors can pass 38 digits
        check_bounds("/", a.data, b.data, data_o, t, valid, (a.type, b.type))
        if not t.is_object:
            data_o = data_o.astype(np.int64)
        return Vec(t, data_o, valid)
    x = a.data.astype(np.float64)
    y = np.where(nz, b.data, 1).astype(np.float64)
    with np.errstate(all="ignore"):
        return Vec(t, x / y, valid)


def _modulo(a: Vec, b: Vec, t: DataType, valid: np.ndarray | None) -> Vec:
    nz = _nonzero(b)
    valid = and_valid(valid, None if nz.all() else nz)
    x, y = _as_result_layout(a, t), _as_result_layout(b, t)
    if x.dtype == _OBJ:
        out = []
        for p, q in zip(x.tolist(), y.tolist()):
            out.append(0 if q == 0 else (abs(p) % abs(q)) * (-1 if p < 0 else 1))
        return Vec(t, object_array(out), valid)
    y = np.where(nz, y, 1)
    with np.errstate(all="ignore"):
        return Vec(t, np.fmod(x, y).astype(x.dtype), valid)  # sign follows the dividend (C/MySQL)


def _divide_by_positive_constant(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """x DIV c (truncating, int64) when every divisor is the same positive integer c, the
    usual shape (`lo_orderdate DIV 10000` in a GROUP BY key, once per batch): one flooring
    division, corrected only where the dividend is negative, instead of the general path's
    dozen passes (zero and MIN DIV -1 checks, which a positive constant cannot need). None
    when the divisors are not such a constant."""
    if len(y) == 0 or y.dtype.kind not in "iu" or x.dtype.kind not in "iu":
        return None
    c = int(y[0])
    if c <= 0 or not (y == c).all():
        return None
    x = x.astype(np.int64, copy=False)
    q = np.floor_divide(x, c)
    if x.min() < 0:  # floor -> truncation for negative dividends that leave a remainder
        q += (x < 0) & (q * c != x)
    return q


def _int_divide(a: Vec, b: Vec, t: DataType, valid: np.ndarray | None) -> Vec:
    q = (_divide_by_positive_constant(a.data, b.data)
         if a.type.is_integer and b.type.is_integer else None)
    if q is not None:  # no zero divisor: validity unchanged
        return Vec(t, q, valid)
    nz = _nonzero(b)
    valid = and_valid(valid, None if nz.all() else nz)
    if a.type.is_float or b.type.is_float:
        y = np.where(nz, b.data, 1.0).astype(np.float64)
        with np.errstate(all="ignore"):
            q = np.trunc(a.data.astype(np.float64) / y)
        ok = np.isfinite(q) & (np.abs(q) < 9.2e18)
        return Vec(t, np.where(ok, q, 0).astype(np.int64), and_valid(valid, ok))
    if a.data.dtype == _OBJ or b.data.dtype == _OBJ:
        out = [0 if y == 0 else (abs(x) // abs(y)) * (-1 if (x < 0) != (y < 0) else 1)
               for x, y in zip(a.data.tolist(), b.data.tolist())]
        data_o = object_array(out)
        check_bounds("DIV", a.data, b.data, data_o, t, valid)
        return Vec(t, data_o if t.is_object else data_o.astype(np.int64), valid)
    x = a.data.astype(np.int64)
    y = np.where(nz, b.data, 1).astype(np.int64)
    # the one overflowing quotient: MIN DIV -1 (np.abs(MIN) wraps to MIN in int64)
    if not t.is_decimal:
        check_mask("DIV", (x == t.int_range()[0]) & (y == -1), x, y, t, valid)
    # truncating division from numpy's flooring one (no np.abs: |MIN| wraps in int64)
    with np.errstate(over="ignore"):
        q = np.floor_divide(x, y)
        r = x - q * y
    return Vec(t, q + ((r != 0) & ((x < 0) != (y < 0))), valid)


def negate(a: Vec, t: DataType) -> Vec:
    if t.is_object and t.is_decimal:
        bound = _int_bound(a.data)
        if bound is not None and bound < _COMPACT_LIMIT:
            return Vec(t, -a.data.astype(np.int64, copy=False), a.validity)
    x = _as_result_layout(a, t)
    with np.errstate(over="ignore"):
        data = -x
    if x.dtype == _OBJ:
        check_bounds("neg", x, None, data, t, a.validity)
    elif x.dtype.kind == "i" and not t.is_decimal:  # -MIN is the one value that wraps
        check_mask("neg", x == t.int_range()[0], x, None, t, a.validity)
    return Vec(t, data, a.validity)


# ---- comparisons ---------------------------------------------------------------------------
_CMP = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
        ">": np.greater, ">=": np.greater_equal}


def compare(op: str, a: Vec, b: Vec) -> Vec:
    if op == "<=>":
        eq = np.asarray(np.equal(a.data, b.data), dtype=np.bool_)
        an, bn = a.null_mask(), b.null_mask()
        return bool_vec((eq & ~an & ~bn) | (an & bn), None)
    data = np.asarray(_CMP[op](a.data, b.data), dtype=np.bool_)
    return bool_vec(data, and_valid(a.validity, b.validity))


def _comparison_constant(value: object) -> int | float | str | bytes | np.ndarray:
    """A constant as numpy's comparisons take it: a Python scalar as it is (physical values are
    ints, floats and strings), anything else as the 0-d object array numpy would make of it."""
    if isinstance(value, int | float | str | bytes):
        return value
    boxed = np.empty((), dtype=object)
    boxed[()] = value
    return boxed


def compare_scalar(op: str, a: Vec, value: object) -> Vec:
    """Column-vs-constant comparison without materialising the constant."""
    if value is None:
        if op == "<=>":
            return bool_vec(a.null_mask(), None)
        return bool_vec(np.zeros(len(a), np.bool_), np.zeros(len(a), np.bool_))
    if op == "<=>":
        op = "="
        data = np.asarray(_CMP[op](a.data, _comparison_constant(value)), dtype=np.bool_)
        return bool_vec(data & ~a.null_mask(), None)
    data = np.asarray(_CMP[op](a.data, _comparison_constant(value)), dtype=np.bool_)
    return bool_vec(data, a.validity)


# ---- three-valued logic --------------------------------------------------------------------
def _known(v: Vec) -> tuple[np.ndarray, np.ndarray]:
    """(known true, known false) masks of a boolean-ish Vec."""
    if v.type.kind is TypeKind.NULL:
        z = np.zeros(len(v), np.bool_)
        return z, z
    if v.data.dtype == _OBJ:
        truth = np.fromiter((bool(x) for x in v.data.tolist()), np.bool_, count=len(v))
    else:
        truth = v.data != 0
    if v.validity is None:
        return truth, ~truth
    return truth & v.validity, ~truth & v.validity


def logical_and(args: Sequence[Vec]) -> Vec:
    t, f = _known(args[0])
    for v in args[1:]:
        t2, f2 = _known(v)
        t, f = t & t2, f | f2
    return bool_vec(t, None if (t | f).all() else (t | f))


def logical_or(args: Sequence[Vec]) -> Vec:
    t, f = _known(args[0])
    for v in args[1:]:
        t2, f2 = _known(v)
        t, f = t | t2, f & f2
    return bool_vec(t, None if (t | f).all() else (t | f))


def logical_not(a: Vec) -> Vec:
    f = _known(a)[1]
    return bool_vec(f, a.validity)


def is_null(a: Vec, negated: bool) -> Vec:
    nulls = a.null_mask()
    return bool_vec(~nulls if negated else nulls, None)


# ---- LIKE ----------------------------------------------------------------------------------
@lru_cache(maxsize=256)
def like_matcher(pattern: str, escape: str = "\\") -> Callable[[str], bool]:
    """A predicate str -> bool for a LIKE pattern (`%` any run, `_` one character).

    Patterns beyond plain text and `%text%` run on RE2 (`regex.py`): a user's pattern never
    reaches Python's backtracking `re` (`%a%a%a%a%b` would be polynomial there)."""
    plain = not any(c in pattern for c in "%_" + escape)
    if plain:
        return lambda s: s == pattern
    inner = pattern[1:-1]
    if (pattern.startswith("%") and pattern.endswith("%") and len(pattern) >= 2
            and not any(c in inner for c in "%_" + escape)):
        return lambda s: inner in s
    rx = compile_regex(like_to_regex(pattern, escape))
    return lambda s: bool(rx.fullmatches([s])[0])


def like_values(pattern: str, escape: str, vals: list[str]) -> np.ndarray:
    """LIKE of every value against one pattern (one RE2 loop for the general case)."""
    if any(c in pattern for c in "%_" + escape):
        inner = pattern[1:-1]
        if not (pattern.startswith("%") and pattern.endswith("%") and len(pattern) >= 2
                and not any(c in inner for c in "%_" + escape)):
            return compile_regex(like_to_regex(pattern, escape)).fullmatches(vals)
    m = like_matcher(pattern, escape)
    return np.fromiter((m(s) for s in vals), np.bool_, count=len(vals))


def like(a: Vec, pattern: Vec, negated: bool, escape: str = "\\") -> Vec:
    pats = pattern.data.tolist()
    vals = a.data.tolist()
    if len(set(pats)) <= 1:
        data = like_values(pats[0] if pats else "", escape, vals)
    else:
        data = np.fromiter((like_matcher(p, escape)(s) for s, p in zip(vals, pats)),
                           np.bool_, count=len(vals))
    if negated:
        data = ~data
    return bool_vec(data, and_valid(a.validity, pattern.validity))


# ---- IN ------------------------------------------------------------------------------------
def in_constants(a: Vec, values: Sequence[object], negated: bool) -> Vec:
    """`a [NOT] IN (constants)` with SQL NULL rules (a NULL in the list makes misses NULL)."""
    has_null = any(v is None for v in values)
    consts = [v for v in values if v is not None]
    if a.data.dtype == _OBJ:
        s = set(consts)
        hit = np.fromiter((x in s for x in a.data.tolist()), np.bool_, count=len(a))
    elif consts:
        hit = np.isin(a.data, np.array(consts, dtype=a.data.dtype))
    else:
        hit = np.zeros(len(a), np.bool_)
    valid = a.validity
    if has_null:
        valid = and_valid(valid, hit)  # miss with a NULL in the list -> NULL
    return bool_vec(~hit if negated else hit, valid)


def in_vectors(a: Vec, values: Sequence[Vec], negated: bool) -> Vec:
    res = logical_or([compare("=", a, v) for v in values])
    return logical_not(res) if negated else res


# ---- CASE / COALESCE -----------------------------------------------------------------------
def _fill(t: DataType, n: int) -> np.ndarray:
    if t.is_varlen:
        out = np.empty(n, dtype=object)
        out[:] = ""
        return out
    if t.is_object:
        out = np.empty(n, dtype=object)
        out[:] = 0
        return out
    return np.zeros(n, dtype=t.numpy_dtype)


def case(conds: Sequence[Vec], thens: Sequence[Vec], default: Vec | None, t: DataType,
         n: int) -> Vec:
    if default is not None:
        data = np.array(default.data, dtype=_fill(t, 0).dtype, copy=True)
        valid = np.ones(n, np.bool_) if default.validity is None else default.validity.copy()
    else:
        data, valid = _fill(t, n), np.zeros(n, np.bool_)
    for cond, then in zip(reversed(conds), reversed(thens)):
        take, _ = _known(cond)
        if data.dtype == _OBJ:
            data = _where_obj(take, then.data, data)
        else:
            data = np.where(take, then.data, data)
        tv = np.ones(n, np.bool_) if then.validity is None else then.validity
        valid = np.where(take, tv, valid)
    return Vec(t, data, None if valid.all() else valid)


def _where_obj(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = b.copy()
    out[mask] = a[mask]
    return out


def coalesce(args: Sequence[Vec], t: DataType, n: int) -> Vec:
    return case([bool_vec(~a.null_mask(), None) for a in args], list(args), None, t, n)


def boolean_result(data: np.ndarray, valid: np.ndarray | None) -> Vec:
    return Vec(BOOLEAN, np.asarray(data, np.bool_).view(np.uint8), valid)
