"""Math scalar functions beyond `scalar.py`: trigonometry, DEGREES/RADIANS, RAND, CONV, BIN,
CRC32 (registered into `sql.functions`).

Floating-point functions compute in float64 with numpy and return NULL outside their domain
(ASIN(2), ACOS(-3)), as Doris does rather than NaN. RAND is non-deterministic per row (a seeded
RAND(n) repeats its sequence per batch). CONV/BIN/CRC32 loop per row in Python.
Upstream: Doris `function_math.cpp`, MySQL "Mathematical Functions".
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np

from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.vector import Vec, object_array
from storage.types import BIGINT, DOUBLE, STRING, DataType


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable, *aliases: str,
         propagate: bool = True) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, propagate), *aliases)


def _dbl_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    return [DOUBLE] * len(t), DOUBLE


def _double_fn(fn: Callable[..., np.ndarray],
               domain: Callable[..., np.ndarray] | None = None) -> Callable:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        x = [v.data.astype(np.float64) for v in a]
        with np.errstate(all="ignore"):
            out = fn(*x)
        ok = np.isfinite(out)
        if domain is not None:
            ok &= domain(*x)
        return Vec(DOUBLE, np.where(ok, out, 0.0), None if ok.all() else ok)

    return impl


def _atan(*x: np.ndarray) -> np.ndarray:
    return np.arctan(x[0]) if len(x) == 1 else np.arctan2(x[0], x[1])


_reg("sin", 1, 1, _dbl_sig, _double_fn(np.sin))
_reg("cos", 1, 1, _dbl_sig, _double_fn(np.cos))
_reg("tan", 1, 1, _dbl_sig, _double_fn(np.tan))
_reg("cot", 1, 1, _dbl_sig, _double_fn(lambda x: 1.0 / np.tan(x), lambda x: x != 0))
_reg("asin", 1, 1, _dbl_sig, _double_fn(np.arcsin, lambda x: np.abs(x) <= 1))
_reg("acos", 1, 1, _dbl_sig, _double_fn(np.arccos, lambda x: np.abs(x) <= 1))
_reg("atan", 1, 2, _dbl_sig, _double_fn(_atan))
_reg("atan2", 2, 2, _dbl_sig, _double_fn(np.arctan2))
_reg("degrees", 1, 1, _dbl_sig, _double_fn(np.degrees))
_reg("radians", 1, 1, _dbl_sig, _double_fn(np.radians))
_reg("e", 0, 0, _dbl_sig, lambda a, env: Vec(DOUBLE, np.full(env.n, np.e)))
_reg("log", 1, 2, _dbl_sig, _double_fn(
    lambda *x: np.log(x[0]) if len(x) == 1 else np.log(x[1]) / np.log(x[0]),
    lambda *x: (x[0] > 0) if len(x) == 1 else (x[0] > 0) & (x[0] != 1) & (x[1] > 0)))


def _rand(a: list[Vec], env: EvalEnv) -> Vec:
    seed = int(a[0].data[0]) if a and len(a[0]) else None
    rng = np.random.default_rng(seed)
    return Vec(DOUBLE, rng.random(env.n))


# one seeded sequence over the whole batch: never evaluated in slices
register_scalar(ScalarFunction("rand", 0, 1, lambda t: ([BIGINT] * len(t), DOUBLE), _rand,
                               row_independent=False), "random")


# ---- radix / checksums ---------------------------------------------------------------------
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _to_base(n: int, base: int) -> str:
    if n == 0:
        return "0"
    out = []
    while n:
        n, r = divmod(n, base)
        out.append(_DIGITS[r])
    return "".join(reversed(out))


def conv(text: str, src: int, dst: int) -> str | None:
    """MySQL CONV: parse the longest valid prefix in base |src|, print in base |dst|; a negative
    `dst` prints signed, otherwise negatives wrap to unsigned 64-bit."""
    if not (2 <= abs(src) <= 36 and 2 <= abs(dst) <= 36):
        return None
    s = text.strip().upper()
    neg = s.startswith("-")
    s = s[1:] if neg else s
    val = 0
    for ch in s:
        d = _DIGITS.find(ch)
        if d < 0 or d >= abs(src):
            break
        val = val * abs(src) + d
    val = min(val, 2**64 - 1)
    if neg:
        val = -val
    if dst < 0:
        return ("-" if val < 0 else "") + _to_base(abs(val), -dst)
    return _to_base(val % 2**64, dst)


def _conv(a: list[Vec], env: EvalEnv) -> Vec:
    vals = [conv(str(t), int(s), int(d)) for t, s, d in
            zip(a[0].data.tolist(), a[1].data.tolist(), a[2].data.tolist())]
    ok = np.array([v is not None for v in vals], dtype=np.bool_)
    return Vec(STRING, object_array([v or "" for v in vals]), None if ok.all() else ok)


_reg("conv", 3, 3, lambda t: ([STRING, BIGINT, BIGINT], STRING), _conv)
_reg("bin", 1, 1, lambda t: ([BIGINT], STRING),
     lambda a, env: Vec(STRING, object_array([_to_base(int(x) % 2**64, 2)
                                              for x in a[0].data.tolist()])))
_reg("crc32", 1, 1, lambda t: ([STRING], BIGINT),
     lambda a, env: Vec(BIGINT, np.array([zlib.crc32(str(s).encode("utf-8"))
                                          for s in a[0].data.tolist()], dtype=np.int64)))
