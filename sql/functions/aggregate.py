"""Aggregate functions: COUNT, SUM, MIN, MAX, AVG as partial -> merge -> final over group codes.

Every aggregate works on dense group codes (0..G-1) computed by the hash aggregate operator.
`partial` reduces one batch's rows to one state row per group; `merge` reduces concatenated
state rows (from many batches) per group; `final` turns states into the result Vec. NULL inputs
are ignored; a group with no non-NULL input gives NULL (COUNT gives 0). DISTINCT variants are
handled by the operator (it de-duplicates (group, value) pairs first).

Return types (Doris 2.1): COUNT -> BIGINT; SUM(integer) -> BIGINT, SUM(LARGEINT) -> LARGEINT,
SUM(DECIMAL(p,s)) -> DECIMAL(38,s), SUM(FLOAT/DOUBLE) -> DOUBLE; AVG(DECIMAL(p,s)) ->
DECIMAL(38, max(s,4)), AVG(other numeric) -> DOUBLE; MIN/MAX keep the argument type.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sql.errors import DorisError
from sql.functions import AggregateFunction, MergeFn, PartialFn, State, register_aggregate
from sql.functions.coercion import avg_type, sum_type
from sql.functions.overflow import check_bounds
from sql.functions.vector import Vec, object_array, wide_objects
from storage.types import BIGINT, DOUBLE, DataType

_OBJ = np.dtype(object)


def group_reduce(values: np.ndarray, codes: np.ndarray, groups: int, ufunc: np.ufunc
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Reduce `values` per group code with `ufunc` -> (result per group, group-has-rows mask).

    Sort by code once, then `ufunc.reduceat` over each run: exact for int64 and object arrays
    (unlike bincount weights, which go through float64).
    """
    has = np.zeros(groups, np.bool_)
    if values.dtype == _OBJ:
        out = _zeros_obj(groups, values)
    else:
        out = np.zeros(groups, dtype=values.dtype)
    if len(values) == 0:
        return out, has
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    sv = values[order]
    starts = np.flatnonzero(np.concatenate(([True], sc[1:] != sc[:-1])))
    res = ufunc.reduceat(sv, starts)
    out[sc[starts]] = res
    has[sc[starts]] = True
    return out, has


def _zeros_obj(n: int, like: np.ndarray) -> np.ndarray:
    out = np.empty(n, dtype=object)
    # min/max of strings need "" placeholders; numbers 0
    out[:] = "" if len(like) and isinstance(like[0], str) else 0
    return out


def _valid_rows(arg: Vec, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if arg.validity is None:
        return arg.data, codes
    return arg.data[arg.validity], codes[arg.validity]


# ---- COUNT ---------------------------------------------------------------------------------
def _count_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    if arg is not None and arg.validity is not None:
        codes = codes[arg.validity]
    return (np.bincount(codes, minlength=groups).astype(np.int64),)


def _sum_counts(state: State, codes: np.ndarray, groups: int) -> State:
    return (_int_group_sum(state[0], codes, groups),)


def _int_group_sum(values: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    out, _ = group_reduce(values.astype(np.int64), codes, groups, np.add)
    return out


register_aggregate(AggregateFunction(
    "count",
    arg_types=lambda t: list(t),
    return_type=lambda t: BIGINT,
    partial=_count_partial,
    merge=_sum_counts,
    final=lambda s, t: Vec(BIGINT, s[0]),
    empty=lambda g, t: (np.zeros(g, np.int64),),
))


# ---- SUM -----------------------------------------------------------------------------------
def _sum_layout(values: np.ndarray, t: DataType) -> np.ndarray:
    """Values in the dtype the sum is computed in: int64 when no overflow is possible."""
    if t.is_float:
        return values.astype(np.float64)
    if values.dtype == _OBJ:
        return values
    if t.is_decimal or t.is_integer or values.dtype.kind in "iub":
        v = values.astype(np.int64)
        if len(v) and (float(np.abs(v).max()) * len(v) >= 2.0**62):
            return wide_objects(v)  # exact beyond int64
        return v
    return values.astype(np.float64)


def _sum_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    vals, cs = _valid_rows(arg, codes)
    vals = _sum_layout(vals, arg.type)
    sums, has = group_reduce(vals, cs, groups, np.add)
    return sums, has


def _sum_merge(state: State, codes: np.ndarray, groups: int) -> State:
    sums, has = state
    vals, cs = sums[has], codes[has]
    if (vals.dtype != _OBJ and vals.dtype.kind in "iu" and len(vals)
            and float(np.abs(vals).max()) * len(vals) >= 2.0**62):
        vals = wide_objects(vals)
    return group_reduce(vals, cs, groups, np.add)


def _sum_final(state: State, t: DataType) -> Vec:
    sums, has = state
    if sums.dtype == _OBJ and not t.is_float:
        # exact sums past the result type (SUM(BIGINT) is BIGINT, which Doris wraps; SUM of a
        # DECIMAL is DECIMAL(38, s)): an error, never a wrapped or 39-digit value
        check_bounds("sum", sums, None, sums, t, has)
    return Vec(t, _to_layout(sums, t), None if has.all() else has)


def _to_layout(values: np.ndarray, t: DataType) -> np.ndarray:
    if t.is_object:
        return wide_objects(values)
    if values.dtype == _OBJ:
        return np.array([int(x) for x in values.tolist()], dtype=t.numpy_dtype) if not t.is_float \
            else np.array([float(x) for x in values.tolist()], dtype=np.float64)
    return values.astype(t.numpy_dtype)


def _numeric_args(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def rule(t: list[DataType]) -> list[DataType]:
        if len(t) != 1:
            raise DorisError(f"{name} requires exactly one argument")
        a = t[0]
        if a.is_numeric:
            return [a]
        if a.is_string or a.kind.value == "NULL":
            return [DOUBLE]
        raise DorisError(f"{name} requires a numeric parameter: {name}({a.sql()})")

    return rule


def _empty_sum(groups: int, t: DataType) -> State:
    return np.zeros(groups, np.int64), np.zeros(groups, np.bool_)


register_aggregate(AggregateFunction(
    "sum",
    arg_types=_numeric_args("sum"),
    return_type=lambda t: sum_type(t[0]),
    partial=_sum_partial,
    merge=_sum_merge,
    final=_sum_final,
    empty=_empty_sum,
))


# ---- MIN / MAX -----------------------------------------------------------------------------
def _minmax(ufunc: np.ufunc) -> tuple[PartialFn, MergeFn]:
    def partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
        assert arg is not None
        vals, cs = _valid_rows(arg, codes)
        return group_reduce(vals, cs, groups, ufunc)

    def merge(state: State, codes: np.ndarray, groups: int) -> State:
        vals, has = state
        return group_reduce(vals[has], codes[has], groups, ufunc)

    return partial, merge


def _minmax_final(state: State, t: DataType) -> Vec:
    vals, has = state
    if t.is_varlen:
        return Vec(t, vals if vals.dtype == _OBJ else object_array(list(vals)),
                   None if has.all() else has)
    return Vec(t, _to_layout(vals, t), None if has.all() else has)


def _empty_minmax(groups: int, t: DataType) -> State:
    vals = np.empty(groups, dtype=object) if (t.is_varlen or t.is_object) else np.zeros(
        groups, t.numpy_dtype)
    if vals.dtype == _OBJ:
        vals[:] = "" if t.is_varlen else 0
    return vals, np.zeros(groups, np.bool_)


for _name, _uf in (("min", np.minimum), ("max", np.maximum)):
    _p, _m = _minmax(_uf)
    register_aggregate(AggregateFunction(
        _name,
        arg_types=lambda t: list(t),
        return_type=lambda t: t[0],
        partial=_p,
        merge=_m,
        final=_minmax_final,
        empty=_empty_minmax,
    ))


# ---- AVG -----------------------------------------------------------------------------------
def _avg_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    vals, cs = _valid_rows(arg, codes)
    if arg.type.is_decimal:
        sums, _ = group_reduce(_sum_layout(vals, arg.type), cs, groups, np.add)
        # avg keeps the input scale in its state; `final` rescales to the result scale
        scale = np.full(groups, arg.type.scale, np.int64)
    else:
        sums, _ = group_reduce(vals.astype(np.float64) if vals.dtype != _OBJ else
                               np.array([float(x) for x in vals.tolist()], np.float64),
                               cs, groups, np.add)
        scale = np.zeros(groups, np.int64)
    counts = np.bincount(cs, minlength=groups).astype(np.int64)
    return sums, counts, scale


def _avg_merge(state: State, codes: np.ndarray, groups: int) -> State:
    sums, counts, scale = state
    if sums.dtype.kind in "iu" and len(sums) and float(np.abs(sums).max()) * len(sums) >= 2.0**62:
        sums = wide_objects(sums)
    s, _ = group_reduce(sums, codes, groups, np.add)
    c = _int_group_sum(counts, codes, groups)
    sc = np.zeros(groups, np.int64)
    sc[codes] = scale
    return s, c, sc


def _avg_decimal_int64(sums: np.ndarray, counts: np.ndarray, scale: np.ndarray,
                       t: DataType) -> np.ndarray | None:
    """Vectorised decimal AVG (`_avg_final`'s loop) when every step provably fits int64:
    unscaled sum * 10^(result scale - input scale), divided by the count, rounded half away
    from zero as (2|num| + c) // 2c. None when the bound does not hold."""
    if sums.dtype.kind != "i" or len(sums) == 0:
        return None
    exps = t.scale - scale.astype(np.int64)
    if exps.min() < 0 or exps.max() > 18:
        return None
    mul = np.power(np.int64(10), exps)
    bound = float(np.abs(sums.astype(np.float64)).max()) * float(mul.max())
    if bound >= 2.0 ** 60 or float(counts.max()) >= 2.0 ** 60:
        return None
    num = sums.astype(np.int64) * mul
    has = counts > 0
    c = np.where(has, counts, 1).astype(np.int64)
    q = (2 * np.abs(num) + c) // (2 * c)
    return np.where(has, np.where(num < 0, -q, q), 0)


def _avg_final(state: State, t: DataType) -> Vec:
    sums, counts, scale = state
    has = counts > 0
    if t.is_decimal:
        fast = _avg_decimal_int64(sums, counts, scale, t)
        if fast is not None:
            return Vec(t, wide_objects(fast) if t.is_object else fast,
                       None if has.all() else has)
        out = []
        for s, c, sc in zip(sums.tolist(), counts.tolist(), scale.tolist()):
            if c == 0:
                out.append(0)
                continue
            num = int(s) * 10 ** (t.scale - int(sc))
            q, r = divmod(abs(num), c)
            if 2 * r >= c:
                q += 1
            out.append(-q if num < 0 else q)
        return Vec(t, object_array(out), None if has.all() else has)
    with np.errstate(all="ignore"):
        data = sums.astype(np.float64) / np.where(has, counts, 1)
    return Vec(DOUBLE, data, None if has.all() else has)


register_aggregate(AggregateFunction(
    "avg",
    arg_types=_numeric_args("avg"),
    return_type=lambda t: avg_type(t[0]),
    partial=_avg_partial,
    merge=_avg_merge,
    final=_avg_final,
    empty=lambda g, t: (np.zeros(g, np.int64), np.zeros(g, np.int64), np.zeros(g, np.int64)),
))
