"""The partial -> merge -> final contract of the aggregates in sql/functions/collect.py,
pairs.py and percentile.py: folding random chunks of the rows into partial states, merging the
concatenated states (as executor/hash_aggregate.py does across batches and instances) and
finalizing gives the same result as one partial over all rows, and both match a pure-Python
reference per group."""

from __future__ import annotations

import itertools
import json
import math
import operator
import random
from collections import Counter
from functools import reduce
from typing import Any

import numpy as np
import pytest

from sql.functions import aggregate_function
from sql.functions.vector import Vec, object_array
from storage import nested
from storage.types import BIGINT, DOUBLE, INT, LARGEINT, STRING, DataType, array_of, struct_of

GROUPS = 5


def _int_vec(values: list[int | None]) -> Vec:
    ok = np.array([v is not None for v in values], np.bool_)
    return Vec(INT, np.array([0 if v is None else v for v in values], np.int32),
               None if ok.all() else ok)


def _double_vec(values: list[float | None]) -> Vec:
    ok = np.array([v is not None for v in values], np.bool_)
    return Vec(DOUBLE, np.array([0.0 if v is None else v for v in values], np.float64),
               None if ok.all() else ok)


def _string_vec(values: list[str | None]) -> Vec:
    ok = np.array([v is not None for v in values], np.bool_)
    return Vec(STRING, object_array(["" if v is None else v for v in values]),
               None if ok.all() else ok)


def _pair_vec(xs: list[Any], ys: list[Any], tx: DataType, ty: DataType) -> Vec:
    t = struct_of([("col1", tx), ("col2", ty)])
    return Vec(t, object_array([nested.dump([x, y]) for x, y in zip(xs, ys)]))


def _run(name: str, arg: Vec, codes: np.ndarray, ret: DataType, consts: tuple[object, ...],
         chunks: list[slice]) -> tuple[list[Any], list[Any]]:
    fn = aggregate_function(name)
    assert fn is not None
    if consts:
        assert fn.bind is not None
        fn = fn.bind(consts)
    whole = fn.final(fn.partial(arg, codes, GROUPS), ret)
    states = []
    state_codes = []
    for sl in chunks:
        part = Vec(arg.type, arg.data[sl], None if arg.validity is None else arg.validity[sl])
        states.append(fn.partial(part, codes[sl], GROUPS))
        state_codes.append(np.arange(GROUPS))
    concat = tuple(np.concatenate([s[c] for s in states]) for c in range(len(states[0])))
    merged = fn.final(fn.merge(concat, np.concatenate(state_codes), GROUPS), ret)
    return _values(whole), _values(merged)


def _values(v: Vec) -> list[Any]:
    out = v.data.tolist()
    if v.type.is_nested:
        out = [sorted(nested.load(x), key=lambda e: (e is None, str(e))) for x in out]
    if v.validity is not None:
        out = [x if ok else None for x, ok in zip(out, v.validity.tolist())]
    return out


def _chunks(n: int, rng: random.Random) -> list[slice]:
    cuts = sorted(rng.sample(range(1, n), 3))
    bounds = [0, *cuts, n]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def _quantile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    pos = p * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _covar(pairs: list[tuple[float, float]], sample: bool) -> float | None:
    n = len(pairs)
    if n < (2 if sample else 1):
        return None
    mx = sum(x for x, _ in pairs) / n
    my = sum(y for _, y in pairs) / n
    return sum((x - mx) * (y - my) for x, y in pairs) / (n - 1 if sample else n)


@pytest.mark.parametrize("seed", range(4))
def test_merge_of_partials_matches_one_pass_and_reference(seed: int) -> None:
    rng = random.Random(seed)
    n = 400
    codes = np.array([rng.randrange(GROUPS - 1) for _ in range(n)], np.int64)  # last: empty
    ints = [None if rng.random() < 0.15 else rng.randint(-50, 50) for _ in range(n)]
    dbls = [None if rng.random() < 0.15 else rng.uniform(-10, 10) for _ in range(n)]
    strs = [None if rng.random() < 0.15 else rng.choice(["a", "é", "", "zz"]) for _ in range(n)]
    order = rng.sample(range(n), n)  # distinct MAX_BY keys
    chunks = _chunks(n, rng)
    by_group: list[list[int]] = [[i for i in range(n) if codes[i] == g] for g in range(GROUPS)]

    def ref(fn: Any) -> list[Any]:
        return [fn(rows) for rows in by_group]

    def nonnull(vals: list[Any], rows: list[int]) -> list[Any]:
        return [vals[i] for i in rows if vals[i] is not None]

    def sorted_bag(xs: list[Any]) -> list[Any]:
        return sorted(xs, key=lambda e: (e is None, str(e)))

    def check(name: str, arg: Vec, ret: DataType, want: list[Any],
              consts: tuple[object, ...] = ()) -> None:
        whole, merged = _run(name, arg, codes, ret, consts, chunks)
        assert all(_close(a, b) for a, b in zip(whole, merged)), (name, whole, merged)
        assert all(_close(a, b) for a, b in zip(merged, want)), (name, merged, want)

    iv, dv, sv = _int_vec(ints), _double_vec(dbls), _string_vec(strs)
    check("collect_list", iv, array_of(INT), ref(lambda r: sorted_bag(nonnull(ints, r))))
    check("collect_set", sv, array_of(STRING),
          ref(lambda r: sorted_bag(list(set(nonnull(strs, r))))))
    check("array_agg", iv, array_of(INT), ref(lambda r: sorted_bag([ints[i] for i in r])))
    check("collect_list", iv, array_of(INT), ref(lambda r: []),  # at most 0 elements
          (0,))
    check("count_if", Vec(INT, np.array([1 if (x or 0) > 10 else 0 for x in ints], np.uint8)),
          BIGINT, ref(lambda r: sum(1 for i in r if (ints[i] or 0) > 10)))
    check("group_bit_xor", iv, INT,
          ref(lambda r: reduce(operator.xor, nonnull(ints, r)) if nonnull(ints, r) else None))
    check("multi_distinct_sum", iv, BIGINT,
          ref(lambda r: sum(set(nonnull(ints, r))) if nonnull(ints, r) else None))
    check("median", dv, DOUBLE,
          ref(lambda r: _quantile(nonnull(dbls, r), 0.5) if nonnull(dbls, r) else None))
    check("percentile", dv, DOUBLE,
          ref(lambda r: _quantile(nonnull(dbls, r), 0.9) if nonnull(dbls, r) else None), (0.9,))

    def top2(r: list[int]) -> str | None:
        counts = Counter(nonnull(strs, r))
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
        return json.dumps(dict(top), separators=(",", ":"), ensure_ascii=False) if top else None

    check("topn", sv, STRING, ref(top2), (2,))
    pair = _pair_vec(strs, order, STRING, INT)
    check("max_by", pair, STRING,
          ref(lambda r: strs[max(r, key=lambda i: order[i])] if r else None))
    check("min_by", pair, STRING,
          ref(lambda r: strs[min(r, key=lambda i: order[i])] if r else None))
    xy = _pair_vec(dbls, [None if v is None else float(v) for v in ints], DOUBLE, DOUBLE)

    def pairs(r: list[int]) -> list[tuple[float, float]]:
        out: list[tuple[float, float]] = []
        for i in r:
            x, y = dbls[i], ints[i]
            if x is not None and y is not None:
                out.append((x, float(y)))
        return out

    check("covar_samp", xy, DOUBLE, ref(lambda r: _covar(pairs(r), True)))
    check("covar_pop", xy, DOUBLE, ref(lambda r: _covar(pairs(r), False)))

    def corr(r: list[int]) -> float | None:
        p = pairs(r)
        if not p:
            return None
        sx = math.sqrt(_covar([(x, x) for x, _ in p], False) or 0.0)
        sy = math.sqrt(_covar([(y, y) for _, y in p], False) or 0.0)
        return 0.0 if sx == 0 or sy == 0 else (_covar(p, False) or 0.0) / (sx * sy)

    check("corr", xy, DOUBLE, ref(corr))


def test_group_bit_ops_on_largeint_past_int64() -> None:
    big = [2**126 + 5, -(2**100), None, 3]
    ok = np.array([v is not None for v in big], np.bool_)
    arg = Vec(LARGEINT, object_array([0 if v is None else v for v in big]), ok)
    codes = np.zeros(4, np.int64)
    for name, want in (("group_bit_or", (2**126 + 5) | -(2**100) | 3),
                       ("group_bit_and", (2**126 + 5) & -(2**100) & 3),
                       ("group_bit_xor", (2**126 + 5) ^ -(2**100) ^ 3)):
        whole, merged = _run(name, arg, codes, LARGEINT, (), [slice(0, 1), slice(1, 4)])
        assert whole == merged == [want] + [None] * (GROUPS - 1)
