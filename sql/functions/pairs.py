"""Aggregates of two columns: MAX_BY / MIN_BY, CORR, COVAR_POP / COVAR_SAMP.

The binder packs the two columns into one STRUCT argument (`AggregateFunction.columns = 2`,
see sql/binder/bind_expressions.py `_multi_arg_aggregate`), so the operators still see one
argument; `_pair_columns` decodes the struct cells back into two physical columns (a row loop
over JSON cells: Python speed, acceptable for these rarely hot aggregates).

MAX_BY(x, y) / MIN_BY(x, y): x of the row with the largest / smallest non-NULL y (the first
such row on ties; x may be NULL), NULL for a group without non-NULL y. CORR / COVAR_*: over the
rows where both are non-NULL, state (n, mean x, mean y, co-moment, M2 x, M2 y) merged with Chan's
parallel formula (order independent, like the variances in statistics.py). COVAR_SAMP of one
row and any of a group without rows give NULL; CORR of a constant column gives 0 (Doris
`AggregateFunctionCorr`: a zero denominator gives 0, where DuckDB gives NaN).
Upstream: Doris `aggregate_function_max_min_by.h`, `aggregate_function_corr.cpp`,
`aggregate_function_covar.h`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sql.errors import DorisError
from sql.functions import AggregateFunction, State, register_aggregate
from sql.functions.nested import scalar_out
from sql.functions.vector import Vec
from storage import nested
from storage.types import DOUBLE, DataType, TypeKind

_OBJ = np.dtype(object)


def _pair_columns(arg: Vec) -> tuple[list[Any], list[Any]]:
    """The packed STRUCT(x, y) argument -> (x values, y values), None = NULL."""
    xs: list[Any] = []
    ys: list[Any] = []
    valid = arg.validity
    for i, cell in enumerate(arg.data.tolist()):
        if valid is not None and not valid[i]:
            xs.append(None)
            ys.append(None)
            continue
        x, y = nested.load(cell)
        xs.append(x)
        ys.append(y)
    return xs, ys


def _two_args(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def rule(t: list[DataType]) -> list[DataType]:
        if len(t) != 2:
            raise DorisError(f"{name} requires exactly two arguments")
        return [DOUBLE if x.kind is TypeKind.NULL else x for x in t]

    return rule


# ---- MAX_BY / MIN_BY -----------------------------------------------------------------------
def _objects(groups: int) -> np.ndarray:
    return np.full(groups, None, dtype=object)


def _by_function(larger: bool) -> tuple[Callable[..., State], Callable[..., State]]:
    def fold(xs: list[Any], ys: list[Any], cs: list[int], groups: int) -> State:
        best_x, best_y = _objects(groups), _objects(groups)
        has = np.zeros(groups, np.bool_)
        for c, x, y in zip(cs, xs, ys):
            if y is None:
                continue
            if not has[c] or (y > best_y[c] if larger else y < best_y[c]):
                best_x[c], best_y[c] = x, y
                has[c] = True
        return best_x, best_y, has

    def partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
        assert arg is not None
        xs, ys = _pair_columns(arg)
        return fold(xs, ys, codes.tolist(), groups)

    def merge(state: State, codes: np.ndarray, groups: int) -> State:
        bx, by, has = state
        keep = np.flatnonzero(has)
        return fold(bx[keep].tolist(), by[keep].tolist(), codes[keep].tolist(), groups)

    return partial, merge


def _by_final(state: State, t: DataType) -> Vec:
    return scalar_out(t, state[0].tolist())


def _by_empty(groups: int, t: DataType) -> State:
    return _objects(groups), _objects(groups), np.zeros(groups, np.bool_)


for _name, _larger in (("max_by", True), ("min_by", False)):
    _p, _m = _by_function(_larger)
    register_aggregate(AggregateFunction(
        _name,
        arg_types=_two_args(_name),
        return_type=lambda t: t[0],
        partial=_p,
        merge=_m,
        final=_by_final,
        empty=_by_empty,
        columns=2,
    ))


# ---- CORR / COVAR_POP / COVAR_SAMP -----------------------------------------------------------
def _double_pair(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def rule(t: list[DataType]) -> list[DataType]:
        if len(t) != 2:
            raise DorisError(f"{name} requires exactly two arguments")
        for x in t:
            if not (x.is_numeric or x.is_string or x.kind is TypeKind.NULL):
                raise DorisError(f"{name} requires numeric parameters: {name}({x.sql()})")
        return [DOUBLE, DOUBLE]

    return rule


def _moments(x: np.ndarray, y: np.ndarray, cs: np.ndarray, groups: int) -> State:
    n = np.bincount(cs, minlength=groups).astype(np.float64)
    mx = np.divide(np.bincount(cs, weights=x, minlength=groups), n, out=np.zeros(groups),
                   where=n > 0)
    my = np.divide(np.bincount(cs, weights=y, minlength=groups), n, out=np.zeros(groups),
                   where=n > 0)
    dx, dy = x - mx[cs], y - my[cs]
    cxy = np.bincount(cs, weights=dx * dy, minlength=groups)
    m2x = np.bincount(cs, weights=dx * dx, minlength=groups)
    m2y = np.bincount(cs, weights=dy * dy, minlength=groups)
    return n, mx, my, cxy, m2x, m2y


def _moments_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    xs, ys = _pair_columns(arg)
    both = [i for i, (a, b) in enumerate(zip(xs, ys)) if a is not None and b is not None]
    x = np.array([float(xs[i]) for i in both], np.float64)
    y = np.array([float(ys[i]) for i in both], np.float64)
    return _moments(x, y, codes[np.array(both, np.int64)], groups)


def _moments_merge(state: State, codes: np.ndarray, groups: int) -> State:
    """Chan et al.: combine (n, means, co-moments) of disjoint row sets."""
    n, mx, my, cxy, m2x, m2y = state
    total = np.bincount(codes, weights=n, minlength=groups)
    nmx = np.divide(np.bincount(codes, weights=n * mx, minlength=groups), total,
                    out=np.zeros(groups), where=total > 0)
    nmy = np.divide(np.bincount(codes, weights=n * my, minlength=groups), total,
                    out=np.zeros(groups), where=total > 0)
    dx, dy = mx - nmx[codes], my - nmy[codes]
    return (total, nmx, nmy,
            np.bincount(codes, weights=cxy + n * dx * dy, minlength=groups),
            np.bincount(codes, weights=m2x + n * dx * dx, minlength=groups),
            np.bincount(codes, weights=m2y + n * dy * dy, minlength=groups))


def _covar_final(sample: bool) -> Callable[[State, DataType], Vec]:
    def final(state: State, t: DataType) -> Vec:
        n, cxy = state[0], state[3]
        ok = n >= (2 if sample else 1)
        denom = np.where(ok, n - 1 if sample else n, 1.0)
        return Vec(DOUBLE, np.where(ok, cxy / denom, 0.0), None if ok.all() else ok)

    return final


def _corr_final(state: State, t: DataType) -> Vec:
    n, _, _, cxy, m2x, m2y = state
    ok = n >= 1
    denom = np.sqrt(m2x * m2y)
    with np.errstate(all="ignore"):
        r = np.where(denom > 0, cxy / np.where(denom > 0, denom, 1.0), 0.0)
    return Vec(DOUBLE, np.where(ok, r, 0.0), None if ok.all() else ok)


def _moments_empty(groups: int, t: DataType) -> State:
    return tuple(np.zeros(groups) for _ in range(6))


for _name, _final in (("corr", _corr_final), ("covar_pop", _covar_final(False)),
                      ("covar_samp", _covar_final(True))):
    register_aggregate(AggregateFunction(
        _name,
        arg_types=_double_pair(_name),
        return_type=lambda t: DOUBLE,
        partial=_moments_partial,
        merge=_moments_merge,
        final=_final,
        empty=_moments_empty,
        columns=2,
    ), *(("covar",) if _name == "covar_pop" else ()))
