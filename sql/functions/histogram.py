"""HISTOGRAM(expr [, num_buckets]) / HIST: Doris 2.1's equi-height histogram as JSON text.

State: one Counter per group of the non-NULL values (physical form) plus the argument's type
(for ordering and the bucket bounds' text). `final` orders the distinct values and builds the
buckets with Doris' greedy algorithm (`histogram_helpers.hpp`): the largest bucket size is the
smallest one (binary search, at most 10 steps from 2 * total / (buckets - 1) + 1) that lets the
values fit into `num_buckets` buckets; values are added to the current bucket while more
distinct values remain than empty buckets and the next value still fits. Output, exactly as
Doris' rapidjson writer prints it:
`{"num_buckets":N,"buckets":[{"lower":"..","upper":"..","ndv":d,"count":c,"pre_sum":p},..]}`
with the bounds as the type's text; a group without values gives `{"num_buckets":0,"buckets":[]}`.
The default is 128 buckets. Upstream: Doris `aggregate_function_histogram.h`,
`vec/utils/histogram_helpers.hpp`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from sql.errors import DorisError
from sql.functions import AggregateFunction, State, register_aggregate
from sql.functions.collect import element_values
from sql.functions.nested import scalar_out
from sql.functions.vector import Vec, as_int
from storage.types import STRING, DataType, TypeKind

DEFAULT_BUCKETS = 128


def can_assign(counts: list[int], max_size: int, buckets: int) -> bool:
    """Whether values with these counts fit into `buckets` buckets of at most `max_size`."""
    if not counts:
        return False
    used, size = 1, 0
    for c in counts:
        size += c
        if size > max_size:
            used += 1
            size = c
        if used > buckets:
            return False
    return True


def bucket_max_values(counts: list[int], buckets: int) -> int:
    """The bucket size limit for these value counts (`calculate_bucket_max_values`)."""
    total = sum(counts)
    if buckets == 1:
        return total
    upper, lower = 2 * total // (buckets - 1) + 1, 0
    for _ in range(10):
        if upper <= lower + 1:
            break
        mid = (upper + lower) // 2
        if can_assign(counts, mid, buckets):
            upper = mid
        else:
            lower = mid
    return upper


def build_buckets(values: list[Any], counts: list[int], max_buckets: int
                  ) -> list[tuple[Any, Any, int, int, int]]:
    """(lower, upper, ndv, count, pre_sum) per bucket for distinct ascending `values`."""
    if not values:
        return []
    max_size = bucket_max_values(counts, max_buckets)
    out: list[tuple[Any, Any, int, int, int]] = []
    ndv = count = cumulative = 0
    remaining = len(values)
    lower = values[0]
    for i, (value, c) in enumerate(zip(values, counts)):
        ndv += 1
        remaining -= 1
        count += c
        cumulative += c
        has_next = i + 1 < len(values)
        empty_buckets = max_buckets - len(out) - 1
        if has_next and remaining > empty_buckets and count + counts[i + 1] <= max_size:
            continue
        out.append((lower, value, ndv, count, cumulative - count))
        if has_next:
            lower = values[i + 1]
        ndv = count = 0
    return out


def histogram_json(t: DataType, counter: Counter[Any], max_buckets: int) -> str:
    values = sorted(counter)
    buckets = build_buckets(values, [counter[v] for v in values], max_buckets)
    items = [{"lower": _text(t, lo), "upper": _text(t, hi), "ndv": ndv, "count": count,
              "pre_sum": pre} for lo, hi, ndv, count, pre in buckets]
    return json.dumps({"num_buckets": len(items), "buckets": items}, separators=(",", ":"),
                      ensure_ascii=False)


def _text(t: DataType, value: Any) -> str:
    return value if isinstance(value, str) else str(t.format_value(value))


def _empty_state(groups: int) -> State:
    counters = np.empty(groups, dtype=object)
    for i in range(groups):
        counters[i] = Counter()
    return (counters, np.full(groups, None, dtype=object))


def _partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    assert arg is not None
    counters, types = _empty_state(groups)
    for c, v in zip(codes.tolist(), element_values(arg)):
        if v is not None:
            counters[c][v] += 1
    types[:] = arg.type
    return (counters, types)


def _merge(state: State, codes: np.ndarray, groups: int) -> State:
    counters, types = _empty_state(groups)
    for c, counter, t in zip(codes.tolist(), state[0].tolist(), state[1].tolist()):
        counters[c].update(counter)
        if t is not None:
            types[c] = t
    return (counters, types)


def _final(max_buckets: int) -> Callable[[State, DataType], Vec]:
    def final(state: State, t: DataType) -> Vec:
        return scalar_out(STRING, [
            histogram_json(arg_type if arg_type is not None else STRING, counter, max_buckets)
            for counter, arg_type in zip(state[0].tolist(), state[1].tolist())])
    return final


def _arg_types(name: str) -> Callable[[list[DataType]], list[DataType]]:
    def arg_types(types: list[DataType]) -> list[DataType]:
        t = types[0]
        if t.is_nested or t.kind in (TypeKind.BITMAP, TypeKind.HLL):
            raise DorisError(f"Can not find the compatibility function signature: "
                             f"{name}({t.sql().upper()})")
        return [STRING if t.kind is TypeKind.NULL else t]
    return arg_types


def _histogram_function(name: str, max_buckets: int = DEFAULT_BUCKETS) -> AggregateFunction:
    def bind(consts: tuple[object, ...]) -> AggregateFunction:
        if not consts or consts[0] is None:
            return _histogram_function(name)
        n = as_int(consts[0])
        if n <= 0:
            raise DorisError(f"The max_num_buckets of {name} must be a positive integer, got {n}")
        return _histogram_function(name, n)

    return AggregateFunction(
        name,
        arg_types=_arg_types(name),
        return_type=lambda t: STRING,
        partial=_partial,
        merge=_merge,
        final=_final(max_buckets),
        empty=lambda g, t: _empty_state(g),
        bind=bind,
    )


register_aggregate(_histogram_function("histogram"))
register_aggregate(_histogram_function("hist"))
