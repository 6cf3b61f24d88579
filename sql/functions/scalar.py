"""Scalar functions: type rules and numpy implementations (registered into `sql.functions`).

Math, conditional and string functions with MySQL/Doris semantics (date/time functions live in
`temporal.py`). String functions work on the decoded object arrays of `Vec` (character
semantics; LENGTH counts bytes as MySQL does).
Session-constant functions (DATABASE(), USER(), NOW(), VERSION() ...) are folded to literals by
the binder and are not listed here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sql.errors import DorisError
from sql.functions import EvalEnv, ScalarFunction, ScalarImpl, register_scalar
from sql.functions.coercion import common_type
from sql.functions.operators import coalesce as _coalesce
from sql.functions.operators import compare
from sql.functions.overflow import check_bounds
from sql.functions.vector import Vec, and_valid, object_array
from storage.errors import QueryCancelled
from storage.types import (
    BIGINT,
    BOOLEAN,
    DOUBLE,
    INT,
    STRING,
    TINYINT,
    DataType,
    TypeKind,
    decimal,
)

_OBJ = np.dtype(object)


def _numeric_arg(t: DataType) -> DataType:
    return t if t.is_numeric else DOUBLE


def _string_arg(t: DataType) -> DataType:
    return t if t.is_string else STRING


def _sig(args: list[DataType | None], ret: DataType) -> tuple[list[DataType | None], DataType]:
    return args, ret


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable, *aliases: str,
         propagate: bool = True, literal_args: tuple[int, ...] = ()) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, propagate, literal_args),
                    *aliases)


def _map_str(fn: Callable[..., object], t: DataType, *vecs: Vec) -> Vec:
    """Apply a Python function row-wise to decoded values (nulls are masked by the caller)."""
    cols = [v.data.tolist() for v in vecs]
    out = object_array([fn(*row) for row in zip(*cols)])
    return Vec(t, out, None)


def _map_num(fn: Callable[..., object], t: DataType, *vecs: Vec) -> Vec:
    cols = [v.data.tolist() for v in vecs]
    return Vec(t, np.array([fn(*row) for row in zip(*cols)], dtype=t.numpy_dtype), None)


# ---- math ----------------------------------------------------------------------------------
# Doris' ABS signatures widen integers one step (BIGINT -> LARGEINT), so |MIN| fits
_ABS_RESULT = {TypeKind.TINYINT: TypeKind.SMALLINT, TypeKind.SMALLINT: TypeKind.INT,
               TypeKind.INT: TypeKind.BIGINT, TypeKind.BIGINT: TypeKind.LARGEINT}


def _abs_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    arg = _numeric_arg(t[0])
    wider = _ABS_RESULT.get(arg.kind)
    return _sig([arg], DataType(wider) if wider is not None else arg)


def _abs(a: list[Vec], env: EvalEnv) -> Vec:
    v = a[0]
    if v.data.dtype == _OBJ:
        out = object_array([abs(x) for x in v.data.tolist()])
        if v.type.kind is TypeKind.LARGEINT:
            check_bounds("abs", v.data, None, out, v.type, v.validity)
        return Vec(v.type, out)
    if v.data.dtype == np.int64 and v.type.is_integer:  # BIGINT -> LARGEINT: Python ints
        return Vec(v.type, object_array([abs(x) for x in v.data.tolist()]))
    with np.errstate(over="ignore"):
        return Vec(v.type, np.abs(v.data.astype(np.int64) if v.type.is_integer else v.data))


_reg("abs", 1, 1, _abs_sig, _abs)


def _round_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    x = _numeric_arg(t[0])
    args: list[DataType | None] = [x, BIGINT] if len(t) > 1 else [x]
    if x.is_float:
        return args, DOUBLE
    return args, x  # decimals: scale fixed up by the binder via `round_result_type`


def round_result_type(x: DataType, digits: int) -> DataType:
    if x.is_decimal:
        return decimal(x.precision, max(0, min(x.scale, digits)))
    return x


def _round_impl(mode: str) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        v = a[0]
        digits = int(a[1].data[0]) if len(a) > 1 and len(a[1]) else 0
        t = v.type
        if t.is_float:
            scale = 10.0 ** digits
            x = v.data.astype(np.float64) * scale
            if mode == "round":  # half away from zero, as Doris/MySQL for exact values
                r = np.sign(x) * np.floor(np.abs(x) + 0.5)
            else:
                r = np.trunc(x)
            with np.errstate(all="ignore"):
                return Vec(DOUBLE, r / scale)
        src_scale = t.scale if t.is_decimal else 0
        out_t = round_result_type(t, digits) if t.is_decimal else t
        drop = src_scale - digits  # number of decimal digits removed
        if drop <= 0:
            return Vec(out_t, v.data)
        div = 10**drop
        back = 10 ** (out_t.scale - digits)  # digits < 0 leaves zeros at scale 0

        def one(x: int) -> int:
            q, r = divmod(abs(int(x)), div)
            if mode == "round" and 2 * r >= div:
                q += 1
            q = q * back
            return -q if x < 0 else q

        vals = [one(x) for x in v.data.tolist()]
        data = object_array(vals) if out_t.is_object else np.array(vals, dtype=out_t.numpy_dtype)
        return Vec(out_t, data)

    return impl


_reg("round", 1, 2, _round_sig, _round_impl("round"), literal_args=(1,))
_reg("truncate", 2, 2, _round_sig, _round_impl("truncate"), literal_args=(1,))


def _floor_ceil(kind: str) -> tuple[Callable, Callable]:
    def sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
        x = _numeric_arg(t[0])
        if x.is_decimal:
            return [x], decimal(min(38, x.precision - x.scale + 1), 0)
        return [x], DOUBLE if x.is_float else x

    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        v = a[0]
        t = v.type
        if t.is_float:
            rounder = np.floor if kind == "floor" else np.ceil
            return Vec(DOUBLE, rounder(v.data).astype(np.float64))
        if not t.is_decimal:
            return v
        out_t = decimal(min(38, t.precision - t.scale + 1), 0)
        div = 10**t.scale
        if kind == "floor":
            vals = [int(x) // div for x in v.data.tolist()]
        else:
            vals = [-((-int(x)) // div) for x in v.data.tolist()]
        data = object_array(vals) if out_t.is_object else np.array(vals, dtype=np.int64)
        return Vec(out_t, data)

    return sig, impl


_reg("floor", 1, 1, *_floor_ceil("floor"))
_reg("ceil", 1, 1, *_floor_ceil("ceil"), "ceiling")


def _double_fn(fn: Callable[..., np.ndarray], domain: Callable[..., np.ndarray] | None = None
               ) -> ScalarImpl:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        x = [v.data.astype(np.float64) for v in a]
        with np.errstate(all="ignore"):
            out = fn(*x)
        ok = np.isfinite(out) if domain is None else domain(*x)
        return Vec(DOUBLE, np.where(ok, out, 0.0), None if ok.all() else ok)

    return impl


def _dbl_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    return [DOUBLE] * len(t), DOUBLE


_reg("sqrt", 1, 1, _dbl_sig, _double_fn(np.sqrt, lambda x: x >= 0))
_reg("exp", 1, 1, _dbl_sig, _double_fn(np.exp))
_reg("ln", 1, 1, _dbl_sig, _double_fn(np.log, lambda x: x > 0))
_reg("log10", 1, 1, _dbl_sig, _double_fn(np.log10, lambda x: x > 0))
_reg("log2", 1, 1, _dbl_sig, _double_fn(np.log2, lambda x: x > 0))
_reg("pow", 2, 2, _dbl_sig, _double_fn(np.power), "power")
_reg("pi", 0, 0, _dbl_sig, lambda a, env: Vec(DOUBLE, np.full(env.n, np.pi)))
_reg("sign", 1, 1, lambda t: _sig([DOUBLE], TINYINT),
     lambda a, env: Vec(TINYINT, np.sign(a[0].data).astype(np.int8)))


def _minmax_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    c = common_type(t)
    return [c] * len(t), c


def _greatest(pick: str) -> Callable:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        data = a[0].data
        for v in a[1:]:
            if data.dtype == _OBJ:
                data = object_array([(max if pick == "max" else min)(x, y)
                                     for x, y in zip(data.tolist(), v.data.tolist())])
            else:
                data = (np.maximum if pick == "max" else np.minimum)(data, v.data)
        return Vec(a[0].type, data)

    return impl


_reg("greatest", 1, -1, _minmax_sig, _greatest("max"))
_reg("least", 1, -1, _minmax_sig, _greatest("min"))


# ---- conditional ---------------------------------------------------------------------------
def _coalesce_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    c = common_type(t)
    return [c] * len(t), c


_reg("coalesce", 1, -1, _coalesce_sig, lambda a, env: _coalesce(a, a[0].type, env.n),
     "ifnull", "nvl", propagate=False)


def _nullif(a: list[Vec], env: EvalEnv) -> Vec:
    x, y = a
    eq = compare("=", x, y)
    hit = (eq.data != 0) & (eq.validity if eq.validity is not None else True)
    return Vec(x.type, x.data, and_valid(x.validity, ~hit))


def _nullif_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    c = common_type(t)
    return [c, c], c


_reg("nullif", 2, 2, _nullif_sig, _nullif, propagate=False)


# ---- strings -------------------------------------------------------------------------------
def _str_sig(ret: DataType | None = None, extra: tuple[DataType, ...] = ()) -> Callable:
    def sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
        first = _string_arg(t[0])
        rest: list[DataType | None] = list(extra[: len(t) - 1])
        return [first, *rest], ret if ret is not None else first

    return sig


def _concat_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    args = [_string_arg(x) for x in t]
    if any(x.kind is TypeKind.STRING for x in args):
        return list(args), STRING
    length = min(65533, sum(x.length for x in args) or 1)
    return list(args), DataType(TypeKind.VARCHAR, length=length)


_reg("concat", 1, -1, _concat_sig,
     lambda a, env: _map_str(lambda *s: "".join(s), STRING, *a))


def _concat_ws(a: list[Vec], env: EvalEnv) -> Vec:
    sep = a[0]
    parts = a[1:]
    rows = []
    seps = sep.data.tolist()
    cols = [(p.data.tolist(), p.validity) for p in parts]
    for i in range(env.n):
        rows.append(seps[i].join(c[i] for c, val in cols if val is None or val[i]))
    return Vec(STRING, object_array(rows), sep.validity)


_reg("concat_ws", 2, -1, lambda t: ([_string_arg(x) for x in t], STRING), _concat_ws,
     propagate=False)
_reg("upper", 1, 1, _str_sig(), lambda a, env: _map_str(str.upper, a[0].type, a[0]), "ucase")
_reg("lower", 1, 1, _str_sig(), lambda a, env: _map_str(str.lower, a[0].type, a[0]), "lcase")
_reg("length", 1, 1, _str_sig(INT),
     lambda a, env: _map_num(lambda s: len(s.encode("utf-8")), INT, a[0]), "octet_length")
_reg("char_length", 1, 1, _str_sig(INT), lambda a, env: _map_num(len, INT, a[0]),
     "character_length")
# TRIM / LTRIM / RTRIM (with optional characters) live in strings.py
_reg("reverse", 1, 1, _str_sig(), lambda a, env: _map_str(lambda s: s[::-1], a[0].type, a[0]))


def _substr(s: str, pos: int, length: int | None = None) -> str:
    """MySQL SUBSTRING: 1-based, negative pos counts from the end, pos 0 gives ''."""
    n = len(s)
    if pos == 0 or pos > n or -pos > n:
        return ""
    start = pos - 1 if pos > 0 else n + pos
    if length is None:
        return s[start:]
    if length <= 0:
        return ""
    return s[start: start + length]


_reg("substr", 2, 3, _str_sig(None, (BIGINT, BIGINT)),
     lambda a, env: _map_str(_substr, a[0].type, *a), "substring", "mid")
_reg("left", 2, 2, _str_sig(None, (BIGINT,)),
     lambda a, env: _map_str(lambda s, k: s[:max(k, 0)], a[0].type, *a), "strleft")
_reg("right", 2, 2, _str_sig(None, (BIGINT,)),
     # a length past the string's is the whole string (s[-k:] would wrap around)
     lambda a, env: _map_str(lambda s, k: s[max(len(s) - k, 0):] if k > 0 else "",
                             a[0].type, *a),
     "strright")
_reg("repeat", 2, 2, _str_sig(STRING, (BIGINT,)),
     lambda a, env: _map_str(lambda s, k: s * max(k, 0), STRING, *a))
_reg("replace", 3, 3, _str_sig(STRING, (STRING, STRING)),
     lambda a, env: _map_str(lambda s, f, t: s.replace(f, t) if f else s, STRING, *a))
_reg("instr", 2, 2, _str_sig(INT, (STRING,)),
     lambda a, env: _map_num(lambda s, sub: s.find(sub) + 1, INT, *a))
_reg("locate", 2, 3, lambda t: ([STRING, STRING] + ([BIGINT] if len(t) > 2 else []), INT),
     lambda a, env: _map_num(lambda sub, s, p=1: (s.find(sub, max(p, 1) - 1) + 1) if p > 0 else 0,
                             INT, *a))
_reg("starts_with", 2, 2, _str_sig(BOOLEAN, (STRING,)),
     lambda a, env: _map_num(lambda s, p: s.startswith(p), BOOLEAN, *a))
_reg("ends_with", 2, 2, _str_sig(BOOLEAN, (STRING,)),
     lambda a, env: _map_num(lambda s, p: s.endswith(p), BOOLEAN, *a))


def _pad(left: bool) -> Callable:
    def one(s: str, n: int, pad: str) -> str | None:
        if n < 0:
            return None
        if len(s) >= n:
            return s[:n]
        if not pad:
            return None
        fill = (pad * (n // len(pad) + 1))[: n - len(s)]
        return fill + s if left else s + fill

    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        vals = [one(*row) for row in zip(*(v.data.tolist() for v in a))]
        ok = np.array([x is not None for x in vals], dtype=np.bool_)
        return Vec(STRING, object_array([x or "" for x in vals]), None if ok.all() else ok)

    return impl


_reg("lpad", 3, 3, _str_sig(STRING, (BIGINT, STRING)), _pad(True))
_reg("rpad", 3, 3, _str_sig(STRING, (BIGINT, STRING)), _pad(False))


# ---- misc ----------------------------------------------------------------------------------
def _sleep(a: list[Vec], env: EvalEnv) -> Vec:
    """SLEEP(n): waits on the query's cancel token so KILL QUERY interrupts it; returns false."""
    secs = a[0].data.astype(np.float64)
    valid = a[0].validity
    for i in range(len(secs)):
        if valid is not None and not valid[i]:
            continue
        wait = max(float(secs[i]), 0.0)
        if env.cancel is not None:
            if env.cancel.wait(wait):
                raise QueryCancelled()
        else:
            import time

            time.sleep(wait)
    return Vec(BOOLEAN, np.zeros(len(secs), np.uint8))


_reg("sleep", 1, 1, lambda t: _sig([DOUBLE], BOOLEAN), _sleep)


def literal_arg_error(fn: str, pos: int) -> DorisError:
    return DorisError(f"argument {pos + 1} of {fn} must be a constant")
