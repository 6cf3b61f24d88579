"""Collecting and boolean/bitwise aggregates: COLLECT_LIST, COLLECT_SET, ARRAY_AGG, COUNT_IF,
BOOL_OR / BOOL_AND, GROUP_BIT_OR / _AND / _XOR, MULTI_DISTINCT_COUNT / _SUM, TOPN and RETENTION.

Same partial -> merge -> final contract as `aggregate.py` (dense group codes). The collecting
ones keep one Python list per group (a row loop, like GROUP_CONCAT in statistics.py) holding the
values' physical form (storage/nested.py trees), so `final` builds ARRAY cells with
`nested_out`. Doris 2.1 semantics: COLLECT_LIST / COLLECT_SET skip NULLs, ARRAY_AGG keeps them;
a group without values gives `[]`; element order is unspecified (arrival order here).
COLLECT_LIST(x, n) / COLLECT_SET(x, n) keep at most n elements. COUNT_IF counts TRUE rows.
BOOL_OR / BOOL_AND and GROUP_BIT_* give NULL for a group without non-NULL input.
MULTI_DISTINCT_COUNT / _SUM are COUNT / SUM of the distinct non-NULL values (the rewrite Doris
applies to several DISTINCT aggregates). TOPN(x, n) is Doris' JSON text of the n most frequent
non-NULL values with their counts, most frequent first (Doris approximates with space-saving;
this count is exact, ties broken by the value's text). RETENTION(c1, .., cn) is ARRAY<BOOLEAN>:
r[0] = some row met c1, r[i] = r[0] and some row (any row) met c(i+1); its conditions are packed
into one STRUCT argument by the binder like MAX_BY's pair (`AggregateFunction.columns = -1`).
Upstream: Doris `aggregate_function_collect.h`, `aggregate_function_count_by_enum`,
`aggregate_function_bit.h`, `aggregate_function_topn.h`, `aggregate_function_distinct.h`.
"""

from __future__ import annotations

import json
import operator
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from sql.errors import DorisError
from sql.functions import AggregateFunction, State, register_aggregate
from sql.functions.aggregate import group_reduce
from sql.functions.coercion import sum_type
from sql.functions.nested import nested_out, scalar_out
from sql.functions.vector import Vec, as_int, object_array
from storage import nested
from storage.types import BIGINT, BOOLEAN, DOUBLE, STRING, DataType, TypeKind, array_of


def _lists(groups: int) -> np.ndarray:
    out = np.empty(groups, dtype=object)
    for i in range(groups):
        out[i] = []
    return out


def element_values(arg: Vec) -> list[Any]:
    """The argument's rows as physical element trees (None = NULL)."""
    t = arg.type
    vals = arg.data.tolist()
    if t.kind is TypeKind.NULL:
        return [None] * len(vals)
    if t.is_nested:
        vals = [nested.load(v) for v in vals]
    elif t.is_varlen:
        vals = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in vals]
    if arg.validity is not None:
        for i in np.flatnonzero(~arg.validity).tolist():
            vals[i] = None
    return vals


def _key(value: Any) -> Any:
    """A hashable form of a physical value (nested trees are lists)."""
    return json.dumps(value) if isinstance(value, list) else value


# ---- COLLECT_LIST / COLLECT_SET / ARRAY_AGG --------------------------------------------------
def _collector(keep_nulls: bool) -> Callable[[Vec | None, np.ndarray, int], State]:
    def partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
        assert arg is not None
        out = _lists(groups)
        for c, v in zip(codes.tolist(), element_values(arg)):
            if v is not None or keep_nulls:
                out[c].append(v)
        return (out,)

    return partial


def _collect_merge(state: State, codes: np.ndarray, groups: int) -> State:
    out = _lists(groups)
    for c, lst in zip(codes.tolist(), state[0].tolist()):
        out[c].extend(lst)
    return (out,)


def _collect_final(unique: bool, limit: int) -> Callable[[State, DataType], Vec]:
    def final(state: State, t: DataType) -> Vec:
        lists = state[0].tolist()
        if unique:
            lists = [list({_key(v): v for v in x}.values()) for x in lists]
        if limit >= 0:
            lists = [x[:limit] for x in lists]
        return nested_out(t, lists)

    return final


def _array_type(t: list[DataType]) -> DataType:
    return array_of(t[0])


def _collect_function(name: str, unique: bool, keep_nulls: bool, limit: int = -1
                      ) -> AggregateFunction:
    def bind(consts: tuple[object, ...]) -> AggregateFunction:
        n = as_int(consts[0]) if consts and consts[0] is not None else -1
        return _collect_function(name, unique, keep_nulls, n)

    return AggregateFunction(
        name,
        arg_types=lambda t: list(t),
        return_type=_array_type,
        partial=_collector(keep_nulls),
        merge=_collect_merge,
        final=_collect_final(unique, limit),
        empty=lambda g, t: (_lists(g),),
        bind=None if keep_nulls else bind,
    )


register_aggregate(_collect_function("collect_list", False, False))
register_aggregate(_collect_function("collect_set", True, False))
register_aggregate(_collect_function("array_agg", False, True))


# ---- COUNT_IF ------------------------------------------------------------------------------
def _true_rows(arg: Vec) -> np.ndarray:
    true = arg.data.astype(np.bool_)
    return true if arg.validity is None else true & arg.validity


def _count_if_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    return (np.bincount(codes[_true_rows(arg)], minlength=groups).astype(np.int64),)


def _count_merge(state: State, codes: np.ndarray, groups: int) -> State:
    return (np.bincount(codes, weights=state[0], minlength=groups).astype(np.int64),)


def _boolean_arg(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def rule(t: list[DataType]) -> list[DataType]:
        if len(t) != 1:
            raise DorisError(f"{name} requires exactly one argument")
        if not (t[0].is_numeric or t[0].kind in (TypeKind.BOOLEAN, TypeKind.NULL)):
            raise DorisError(f"{name} requires a boolean parameter: {name}({t[0].sql()})")
        return [BOOLEAN]

    return rule


register_aggregate(AggregateFunction(
    "count_if",
    arg_types=_boolean_arg("count_if"),
    return_type=lambda t: BIGINT,
    partial=_count_if_partial,
    merge=_count_merge,
    final=lambda s, t: Vec(BIGINT, s[0]),
    empty=lambda g, t: (np.zeros(g, np.int64),),
))


# ---- BOOL_OR / BOOL_AND --------------------------------------------------------------------
def _bool_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    """(groups with a TRUE row, groups with a FALSE row, groups with a non-NULL row)."""
    assert arg is not None
    valid = np.ones(len(codes), np.bool_) if arg.validity is None else arg.validity
    true = arg.data.astype(np.bool_) & valid
    false = ~arg.data.astype(np.bool_) & valid
    return (np.bincount(codes[true], minlength=groups) > 0,
            np.bincount(codes[false], minlength=groups) > 0,
            np.bincount(codes[valid], minlength=groups) > 0)


def _bool_merge(state: State, codes: np.ndarray, groups: int) -> State:
    return tuple(np.bincount(codes[s], minlength=groups) > 0 for s in state)


def _bool_final(is_or: bool) -> Callable[[State, DataType], Vec]:
    def final(state: State, t: DataType) -> Vec:
        true, false, has = state
        data = true if is_or else ~false
        return Vec(BOOLEAN, data.astype(np.uint8), None if has.all() else has)

    return final


for _name, _is_or, _aliases in (("bool_or", True, ("boolor_agg",)),
                                ("bool_and", False, ("booland_agg",))):
    register_aggregate(AggregateFunction(
        _name,
        arg_types=_boolean_arg(_name),
        return_type=lambda t: BOOLEAN,
        partial=_bool_partial,
        merge=_bool_merge,
        final=_bool_final(_is_or),
        empty=lambda g, t: tuple(np.zeros(g, np.bool_) for _ in range(3)),
    ), *_aliases)


# ---- GROUP_BIT_OR / _AND / _XOR --------------------------------------------------------------
def _integer_arg(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def rule(t: list[DataType]) -> list[DataType]:
        if len(t) != 1:
            raise DorisError(f"{name} requires exactly one argument")
        if t[0].kind is TypeKind.NULL or t[0].kind is TypeKind.BOOLEAN:
            return [BIGINT]
        if not t[0].is_integer:
            raise DorisError(f"{name} requires an integer parameter: {name}({t[0].sql()})")
        return [t[0]]

    return rule


def _bit_functions(ufunc: np.ufunc, op: Callable[[int, int], int]
                   ) -> tuple[Callable[..., State], Callable[..., State]]:
    def reduce(vals: np.ndarray, cs: np.ndarray, groups: int) -> State:
        if vals.dtype == np.dtype(object):  # LARGEINT: Python ints, past int64 for numpy
            out = np.zeros(groups, dtype=object)
            has = np.zeros(groups, np.bool_)
            for c, v in zip(cs.tolist(), vals.tolist()):
                out[c] = op(out[c], int(v)) if has[c] else int(v)
                has[c] = True
            return out, has
        return group_reduce(vals, cs, groups, ufunc)

    def partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
        assert arg is not None
        if arg.validity is None:
            return reduce(arg.data, codes, groups)
        return reduce(arg.data[arg.validity], codes[arg.validity], groups)

    def merge(state: State, codes: np.ndarray, groups: int) -> State:
        vals, has = state
        return reduce(vals[has], codes[has], groups)

    return partial, merge


def _bit_final(state: State, t: DataType) -> Vec:
    vals, has = state
    data = object_array(vals.tolist()) if t.is_object else vals.astype(t.numpy_dtype)
    return Vec(t, data, None if has.all() else has)


def _bit_empty(groups: int, t: DataType) -> State:
    vals = np.zeros(groups, dtype=object) if t.is_object else np.zeros(groups, t.numpy_dtype)
    return vals, np.zeros(groups, np.bool_)


for _name, _uf, _op in (("group_bit_or", np.bitwise_or, operator.or_),
                        ("group_bit_and", np.bitwise_and, operator.and_),
                        ("group_bit_xor", np.bitwise_xor, operator.xor)):
    _p, _m = _bit_functions(_uf, _op)
    register_aggregate(AggregateFunction(
        _name,
        arg_types=_integer_arg(_name),
        return_type=lambda t: t[0],
        partial=_p,
        merge=_m,
        final=_bit_final,
        empty=_bit_empty,
    ))


# ---- MULTI_DISTINCT_COUNT / MULTI_DISTINCT_SUM ---------------------------------------------
def _sets(groups: int) -> np.ndarray:
    out = np.empty(groups, dtype=object)
    for i in range(groups):
        out[i] = set()
    return out


def _distinct_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    out = _sets(groups)
    for c, v in zip(codes.tolist(), element_values(arg)):
        if v is not None:
            out[c].add(_key(v))
    return (out,)


def _distinct_merge(state: State, codes: np.ndarray, groups: int) -> State:
    out = _sets(groups)
    for c, s in zip(codes.tolist(), state[0].tolist()):
        out[c] |= s
    return (out,)


def _distinct_count_final(state: State, t: DataType) -> Vec:
    return Vec(BIGINT, np.array([len(s) for s in state[0].tolist()], np.int64))


def _distinct_sum_final(state: State, t: DataType) -> Vec:
    sums = [sum(s) if s else None for s in state[0].tolist()]
    if t.is_float:
        sums = [None if x is None else float(x) for x in sums]
    return scalar_out(t, sums)


def _numeric_arg(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def rule(t: list[DataType]) -> list[DataType]:
        if len(t) != 1:
            raise DorisError(f"{name} requires exactly one argument")
        if t[0].is_numeric:
            return [t[0]]
        if t[0].is_string or t[0].kind is TypeKind.NULL:
            return [DOUBLE]
        raise DorisError(f"{name} requires a numeric parameter: {name}({t[0].sql()})")

    return rule


register_aggregate(AggregateFunction(
    "multi_distinct_count",
    arg_types=lambda t: list(t),
    return_type=lambda t: BIGINT,
    partial=_distinct_partial,
    merge=_distinct_merge,
    final=_distinct_count_final,
    empty=lambda g, t: (_sets(g),),
))
register_aggregate(AggregateFunction(
    "multi_distinct_sum",
    arg_types=_numeric_arg("multi_distinct_sum"),
    return_type=lambda t: sum_type(t[0]),
    partial=_distinct_partial,
    merge=_distinct_merge,
    final=_distinct_sum_final,
    empty=lambda g, t: (_sets(g),),
))


# ---- TOPN ----------------------------------------------------------------------------------
def _counters(groups: int) -> np.ndarray:
    out = np.empty(groups, dtype=object)
    for i in range(groups):
        out[i] = Counter()
    return out


def _topn_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    out = _counters(groups)
    t = arg.type
    for c, v in zip(codes.tolist(), element_values(arg)):
        if v is not None:
            out[c][v if isinstance(v, str) else str(t.format_value(v))] += 1
    return (out,)


def _topn_merge(state: State, codes: np.ndarray, groups: int) -> State:
    out = _counters(groups)
    for c, counter in zip(codes.tolist(), state[0].tolist()):
        out[c].update(counter)
    return (out,)


def _topn_final(n: int) -> Callable[[State, DataType], Vec]:
    def final(state: State, t: DataType) -> Vec:
        texts: list[str | None] = []
        for counter in state[0].tolist():
            if not counter:
                texts.append(None)
                continue
            top = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
            texts.append(json.dumps(dict(top), separators=(",", ":"), ensure_ascii=False))
        return scalar_out(STRING, texts)

    return final


def _topn_function(n: int) -> AggregateFunction:
    def bind(consts: tuple[object, ...]) -> AggregateFunction:
        if not consts or consts[0] is None:
            raise DorisError("topn requires a constant top_num: topn(expr, top_num)")
        k = as_int(consts[0])
        if k <= 0:
            raise DorisError(f"topn's top_num must be positive, got {k}")
        return _topn_function(k)

    return AggregateFunction(
        "topn",
        arg_types=lambda t: [STRING if x.kind is TypeKind.NULL else x for x in t],
        return_type=lambda t: STRING,
        partial=_topn_partial,
        merge=_topn_merge,
        final=_topn_final(n),
        empty=lambda g, t: (_counters(g),),
        bind=bind,
    )


register_aggregate(_topn_function(1))


# ---- RETENTION -----------------------------------------------------------------------------
def _condition_flags(arg: Vec) -> np.ndarray:
    """Rows x conditions boolean matrix (NULL = false): one BOOLEAN argument, or several
    packed into one STRUCT by the binder (`AggregateFunction.columns = -1`)."""
    if not arg.type.is_nested:
        return _true_rows(arg)[:, None]
    rows = element_values(arg)
    width = len(arg.type.children)
    flags = np.zeros((len(rows), width), np.bool_)
    for i, row in enumerate(rows):
        if row is not None:
            flags[i] = [bool(x) for x in row]
    return flags


def _retention_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    """Per group and condition: did any row meet it (a groups x conditions matrix in one
    object cell per group, so the state stays one entry per group)."""
    assert arg is not None
    flags = _condition_flags(arg)
    seen = np.zeros((groups, flags.shape[1]), np.bool_)
    np.logical_or.at(seen, codes, flags)
    out = np.empty(groups, dtype=object)
    for g in range(groups):
        out[g] = seen[g]
    return (out,)


def _retention_merge(state: State, codes: np.ndarray, groups: int) -> State:
    out = np.empty(groups, dtype=object)
    out[:] = None
    for c, flags in zip(codes.tolist(), state[0].tolist()):
        out[c] = flags if out[c] is None else out[c] | flags
    return (out,)


def _retention_final(state: State, t: DataType) -> Vec:
    """Doris: r[0] = some row met the first condition; r[i] = r[0] and some row met the i-th."""
    lists = []
    for flags in state[0].tolist():
        first = bool(flags[0])
        lists.append([int(first and bool(f)) for f in flags])
    return nested_out(t, lists)


def _retention_empty(groups: int, t: DataType) -> State:
    """No rows: every condition unmet (`t` is the argument type: one BOOLEAN or the STRUCT of
    the conditions)."""
    width = len(t.children) if t.is_nested else 1
    out = np.empty(groups, dtype=object)
    for g in range(groups):
        out[g] = np.zeros(width, np.bool_)
    return (out,)


def _retention_args(t: list[DataType]) -> list[DataType]:
    if not 1 <= len(t) <= 32:
        raise DorisError("retention requires 1 to 32 conditions")
    for x in t:
        if not (x.is_numeric or x.kind in (TypeKind.BOOLEAN, TypeKind.NULL)):
            raise DorisError(f"retention requires boolean conditions: retention({x.sql()})")
    return [BOOLEAN] * len(t)


register_aggregate(AggregateFunction(
    "retention",
    arg_types=_retention_args,
    return_type=lambda t: array_of(BOOLEAN),
    partial=_retention_partial,
    merge=_retention_merge,
    final=_retention_final,
    empty=_retention_empty,
    columns=-1,
))
