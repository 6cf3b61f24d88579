"""Exact quantile aggregates: PERCENTILE, PERCENTILE_APPROX, MEDIAN, PERCENTILE_ARRAY.

The state is each group's non-NULL values (one float64 array per group, concatenated on merge);
`final` sorts them and interpolates linearly between the two closest ranks: position p * (n - 1),
result lower + (upper - lower) * fraction (Doris `PercentileExact`, DuckDB `quantile_cont`).
PERCENTILE_APPROX(x, p [, compression]) is computed exactly here: Doris' t-digest answer is an
approximation of this same value, so results agree with Doris' documented examples within the
digest's tolerance (exactly on small inputs, where the digest keeps every value). A group without
values gives NULL; p must be a constant in [0, 1]. MEDIAN(x) is PERCENTILE(x, 0.5).
PERCENTILE_ARRAY(x, [p1, ...]) returns ARRAY<DOUBLE> with one value per p.
Upstream: Doris `aggregate_function_percentile.h` (`PercentileExact`, `PercentileApprox`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sql.errors import DorisError
from sql.functions import AggregateFunction, State, register_aggregate
from sql.functions.nested import nested_out
from sql.functions.vector import Vec
from storage import nested
from storage.types import DOUBLE, DataType, TypeKind, array_of


def _arrays(groups: int) -> np.ndarray:
    out = np.empty(groups, dtype=object)
    empty = np.zeros(0, np.float64)
    for i in range(groups):
        out[i] = empty
    return out


def _split_by_group(values: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    out = _arrays(groups)
    if len(values) == 0:
        return out
    order = np.argsort(codes, kind="stable")
    sc, sv = codes[order], values[order]
    starts = np.flatnonzero(np.concatenate(([True], sc[1:] != sc[:-1])))
    for g, part in zip(sc[starts].tolist(), np.split(sv, starts[1:])):
        out[g] = part
    return out


def _partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    vals, cs = arg.data, codes
    if arg.validity is not None:
        vals, cs = vals[arg.validity], cs[arg.validity]
    x = np.asarray(vals.tolist() if vals.dtype == np.dtype(object) else vals, np.float64)
    return (_split_by_group(x, cs, groups),)


def _merge(state: State, codes: np.ndarray, groups: int) -> State:
    parts: list[list[np.ndarray]] = [[] for _ in range(groups)]
    for c, arr in zip(codes.tolist(), state[0].tolist()):
        parts[c].append(arr)
    out = _arrays(groups)
    for g, lst in enumerate(parts):
        if lst:
            out[g] = np.concatenate(lst)
    return (out,)


def interpolated(sorted_values: np.ndarray, p: float) -> float:
    """Linear interpolation between the closest ranks of sorted values (n >= 1)."""
    pos = p * (len(sorted_values) - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac)


def _final(ps: tuple[float, ...], as_array: bool) -> Callable[[State, DataType], Vec]:
    def final(state: State, t: DataType) -> Vec:
        arrays = state[0].tolist()
        has = np.array([len(a) > 0 for a in arrays], np.bool_)
        if as_array:
            return nested_out(t, [[interpolated(np.sort(a), p) for p in ps] if len(a) else None
                                  for a in arrays])
        data = np.array([interpolated(np.sort(a), ps[0]) if len(a) else 0.0 for a in arrays],
                        np.float64)
        return Vec(DOUBLE, data, None if has.all() else has)

    return final


def _checked(name: str, p: object) -> float:
    if p is None:
        raise DorisError(f"{name}: the percentile must not be NULL")
    value = float(p)  # type: ignore[arg-type]
    if not 0.0 <= value <= 1.0:
        raise DorisError(f"{name}: the percentile must be in [0, 1], got {value}")
    return value


def _double_arg(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def rule(t: list[DataType]) -> list[DataType]:
        a = t[0]
        if a.is_numeric or a.is_string or a.kind is TypeKind.NULL:
            return [DOUBLE]
        raise DorisError(f"{name} requires a numeric parameter: {name}({a.sql()})")

    return rule


def _function(name: str, ps: tuple[float, ...], as_array: bool = False) -> AggregateFunction:
    def bind(consts: tuple[object, ...]) -> AggregateFunction:
        if not consts:
            raise DorisError(f"{name} requires a constant percentile")
        if as_array:
            raw = consts[0]
            values = nested.load(raw) if isinstance(raw, bytes) else raw
            if not isinstance(values, list):
                raise DorisError(f"{name} requires an array of percentiles")
            return _function(name, tuple(_checked(name, v) for v in values), True)
        return _function(name, (_checked(name, consts[0]),))

    return AggregateFunction(
        name,
        arg_types=_double_arg(name),
        return_type=(lambda t: array_of(DOUBLE)) if as_array else (lambda t: DOUBLE),
        partial=_partial,
        merge=_merge,
        final=_final(ps, as_array),
        empty=lambda g, t: (_arrays(g),),
        bind=None if name == "median" else bind,
    )


register_aggregate(_function("percentile", (0.5,)))
register_aggregate(_function("percentile_approx", (0.5,)))
register_aggregate(_function("median", (0.5,)))
register_aggregate(_function("percentile_array", (0.5,), True))
