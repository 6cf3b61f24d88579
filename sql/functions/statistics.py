"""Statistical and collecting aggregates: STDDEV/VARIANCE family, ANY_VALUE, GROUP_CONCAT.

Same partial -> merge -> final contract as `aggregate.py`. Variances keep (count, mean, M2) per
group: `partial` computes them per batch with bincount, `merge` combines state rows with Chan's
parallel formula (numerically stable, order independent). Sample variants of a group with one
row give NULL (MySQL/DuckDB; Doris returns NULL too). ANY_VALUE keeps the first non-NULL value
seen. GROUP_CONCAT collects the non-NULL strings of each group in arrival order (per-group Python
lists: a row loop, acceptable for now) and joins them with the separator, Doris' default being
", " (MySQL uses ","); `GROUP_CONCAT(x ORDER BY x [DESC])` sorts the collected values, and
ORDER BY other expressions sorts `__order_pack` strings (sort keys encoded before the text, see
strings.py). Its constant arguments (separator, direction, packed key count) reach it through
`AggregateFunction.bind`.
Upstream: Doris `AggregateFunctionStddev`, `AggregateFunctionGroupConcat`, `any_value`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sql.errors import DorisError
from sql.functions import AggregateFunction, State, register_aggregate
from sql.functions.vector import Vec, as_int, object_array
from storage.types import DOUBLE, STRING, DataType, TypeKind

_OBJ = np.dtype(object)


def _valid_rows(arg: Vec, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if arg.validity is None:
        return arg.data, codes
    return arg.data[arg.validity], codes[arg.validity]


# ---- STDDEV / VARIANCE ---------------------------------------------------------------------
def _double_arg(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def rule(t: list[DataType]) -> list[DataType]:
        if len(t) != 1:
            raise DorisError(f"{name} requires exactly one argument")
        a = t[0]
        if a.is_numeric or a.is_string or a.kind is TypeKind.NULL:
            return [DOUBLE]
        raise DorisError(f"{name} requires a numeric parameter: {name}({a.sql()})")

    return rule


def _var_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    vals, cs = _valid_rows(arg, codes)
    x = vals.astype(np.float64)
    n = np.bincount(cs, minlength=groups).astype(np.float64)
    s = np.bincount(cs, weights=x, minlength=groups)
    mean = np.divide(s, n, out=np.zeros(groups), where=n > 0)
    dev = x - mean[cs]
    m2 = np.bincount(cs, weights=dev * dev, minlength=groups)
    return n, mean, m2


def _var_merge(state: State, codes: np.ndarray, groups: int) -> State:
    n, mean, m2 = state
    total = np.bincount(codes, weights=n, minlength=groups)
    s = np.bincount(codes, weights=n * mean, minlength=groups)
    new_mean = np.divide(s, total, out=np.zeros(groups), where=total > 0)
    d = mean - new_mean[codes]
    new_m2 = np.bincount(codes, weights=m2 + n * d * d, minlength=groups)
    return total, new_mean, new_m2


def _var_final(sample: bool, root: bool) -> Callable[[State, DataType], Vec]:
    def final(state: State, t: DataType) -> Vec:
        n, _, m2 = state
        need = 2 if sample else 1
        ok = n >= need
        denom = np.where(ok, n - 1 if sample else n, 1.0)
        var = np.maximum(m2 / denom, 0.0)
        out = np.sqrt(var) if root else var
        return Vec(DOUBLE, np.where(ok, out, 0.0), None if ok.all() else ok)

    return final


def _var_empty(groups: int, t: DataType) -> State:
    return np.zeros(groups), np.zeros(groups), np.zeros(groups)


for _name, _sample, _root, _aliases in (
        ("stddev_pop", False, True, ("stddev", "std")),
        ("stddev_samp", True, True, ()),
        ("var_pop", False, False, ("variance", "variance_pop")),
        ("var_samp", True, False, ("variance_samp",))):
    register_aggregate(AggregateFunction(
        _name,
        arg_types=_double_arg(_name),
        return_type=lambda t: DOUBLE,
        partial=_var_partial,
        merge=_var_merge,
        final=_var_final(_sample, _root),
        empty=_var_empty,
    ), *_aliases)


# ---- ANY_VALUE -----------------------------------------------------------------------------
def _first_per_group(vals: np.ndarray, cs: np.ndarray, groups: int, like: DataType) -> State:
    out = _empty_values(groups, like, vals)
    has = np.zeros(groups, np.bool_)
    if len(cs):
        uniq, first = np.unique(cs, return_index=True)
        out[uniq] = vals[first]
        has[uniq] = True
    return out, has


def _empty_values(groups: int, t: DataType, like: np.ndarray | None = None) -> np.ndarray:
    if (like is not None and like.dtype == _OBJ) or t.is_varlen or t.is_object:
        out = np.empty(groups, dtype=object)
        text = t.is_varlen if like is None or not len(like) else isinstance(like[0], str)
        out[:] = "" if text else 0  # the value under a NULL matches the column's layout
        return out
    return np.zeros(groups, dtype=like.dtype if like is not None else t.numpy_dtype)


def _any_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    vals, cs = _valid_rows(arg, codes)
    return _first_per_group(vals, cs, groups, arg.type)


def _any_merge(state: State, codes: np.ndarray, groups: int) -> State:
    vals, has = state
    kind = STRING if vals.dtype == _OBJ else DOUBLE
    return _first_per_group(vals[has], codes[has], groups, kind)


def _any_final(state: State, t: DataType) -> Vec:
    vals, has = state
    if t.is_varlen or t.is_object:
        data = vals if vals.dtype == _OBJ else object_array(vals.tolist())
    else:
        data = vals.astype(t.numpy_dtype)
    return Vec(t, data, None if has.all() else has)


register_aggregate(AggregateFunction(
    "any_value",
    arg_types=lambda t: list(t),
    return_type=lambda t: t[0],
    partial=_any_partial,
    merge=_any_merge,
    final=_any_final,
    empty=lambda g, t: (_empty_values(g, t), np.zeros(g, np.bool_)),
), "any")


# ---- GROUP_CONCAT --------------------------------------------------------------------------
def _lists(groups: int) -> np.ndarray:
    out = np.empty(groups, dtype=object)
    for i in range(groups):
        out[i] = []
    return out


def _gc_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    """Per group a list of (sort key, text): the key is the typed value, so ORDER BY x sorts
    numbers and dates by value, not by their text."""
    assert arg is not None
    vals, cs = _valid_rows(arg, codes)
    t = arg.type
    out = _lists(groups)
    if t.is_string:
        for c, v in zip(cs.tolist(), vals.tolist()):
            out[c].append((v, v))
    else:
        for c, v in zip(cs.tolist(), vals.tolist()):
            out[c].append((v, str(t.format_value(v))))
    return (out,)


def _gc_merge(state: State, codes: np.ndarray, groups: int) -> State:
    out = _lists(groups)
    for c, lst in zip(codes.tolist(), state[0].tolist()):
        out[c].extend(lst)
    return (out,)


def _gc_final(sep: str, order: int, packed: int) -> Callable[[State, DataType], Vec]:
    """`order`: 0 arrival order, 1 ascending, -1 descending; `packed` > 0: the values are
    `__order_pack` strings carrying that many sort keys before the text."""
    def final(state: State, t: DataType) -> Vec:
        lists = state[0].tolist()
        if order:
            lists = [sorted(x, key=lambda p: p[0], reverse=order < 0) for x in lists]
        if packed:
            lists = [[(k, v.split("\x00", packed)[-1]) for k, v in x] for x in lists]
        has = np.array([bool(x) for x in lists], dtype=np.bool_)
        data = object_array([sep.join(p[1] for p in x) for x in lists])
        return Vec(STRING, data, None if has.all() else has)

    return final


def _gc_function(sep: str, order: int, packed: int = 0) -> AggregateFunction:
    return AggregateFunction(
        "group_concat",
        arg_types=lambda t: [STRING if x.kind is TypeKind.NULL else x for x in t],
        return_type=lambda t: STRING,
        partial=_gc_partial,
        merge=_gc_merge,
        final=_gc_final(sep, order, packed),
        empty=lambda g, t: (_lists(g),),
        bind=_gc_bind,
    )


def _gc_bind(consts: tuple[object, ...]) -> AggregateFunction:
    """Constants after the value: (separator, sort direction, packed sort keys); a NULL
    separator means the default."""
    sep = consts[0] if consts and consts[0] is not None else GROUP_CONCAT_SEPARATOR
    order = as_int(consts[1]) if len(consts) > 1 and consts[1] is not None else 0
    packed = as_int(consts[2]) if len(consts) > 2 and consts[2] is not None else 0
    return _gc_function(str(sep), order, packed)


GROUP_CONCAT_SEPARATOR = ", "
register_aggregate(_gc_function(GROUP_CONCAT_SEPARATOR, 0))
