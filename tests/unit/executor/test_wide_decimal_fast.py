"""Wide-DECIMAL fast paths against Python's exact int arithmetic.

Covers the compact int64 results of wide DECIMAL `+ - *` and negation (sql/functions/
operators.py), their widening back to Python ints wherever a non-arithmetic consumer takes them
(executor/compile.py), and the GroupedState SUM/AVG path over wide DECIMAL arguments (int64
while bounded, exact Python ints beyond), at the int64 overflow boundary, with negative values,
NULLs and mixed scales.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.operators import BatchesSource

import executor.hash_aggregate as hash_aggregate_module
from executor.compile import compile_column, compile_expr
from executor.grouped_state import GroupedState, kernel_supported
from executor.hash_aggregate import HashAggregate
from executor.operator import ExecContext
from planner.logical import LogicalAggregate, LogicalValues
from sql.binder.expressions import (
    AggregateCall,
    Arithmetic,
    Cast,
    ColumnRef,
    Comparison,
    Literal,
    Negate,
)
from sql.errors import DorisError
from sql.functions.operators import arithmetic, negate
from sql.functions.vector import Vec, wide_objects, widen
from storage.batch import Batch, Column
from storage.types import BIGINT, decimal

I64 = 2**63
LIMIT = 2**62  # the compact bound of operators.py
W = decimal(38, 4)
N18 = decimal(18, 2)


def _vec(t, values: list[int | None]) -> Vec:  # type: ignore[no-untyped-def]
    return Vec.from_column(Column.from_physical(t, values))


def _py(v: Vec) -> list[object]:
    """Values as Python objects, None under NULL, after the canonical widening."""
    w = widen(v)
    out = w.data.tolist()
    if w.validity is not None:
        out = [x if ok else None for x, ok in zip(out, w.validity.tolist())]
    return out


def _ref(op: str, x: int | None, y: int | None) -> int | None:
    if x is None or y is None:
        return None
    return x + y if op == "+" else x - y if op == "-" else x * y


near_bound = st.one_of(
    st.integers(-(10**18) + 1, 10**18 - 1),
    st.integers(2**31 - 3, 2**31 + 3), st.integers(-(2**31) - 3, -(2**31) + 3),
    st.sampled_from([0, 1, -1, 2**61, -(2**61), 2**62 - 1, -(2**62) + 1]),
    st.none(),
)


# ---- arithmetic ----------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["+", "-", "*"]), st.lists(st.tuples(near_bound, near_bound), max_size=40))
def test_wide_arithmetic_matches_python_ints(op: str, pairs: list) -> None:
    t = decimal(19, 0)  # 19 digits hold |x| < 2**62 operands
    a = _vec(t, [p[0] for p in pairs])
    b = _vec(t, [p[1] for p in pairs])
    a = Vec(t, a.data.astype(np.int64), a.validity)  # operands as an int64 (compact) layout
    b = Vec(t, b.data.astype(np.int64), b.validity)
    res = arithmetic(op, a, b, decimal(38, 0))
    assert res.type == decimal(38, 0)
    got = _py(res)
    assert got == [_ref(op, x, y) for x, y in pairs]
    assert all(type(x) is int for x in widen(res).data.tolist())


def test_compact_result_exactly_below_the_bound_and_objects_above() -> None:
    a = _vec(N18, [2**31 - 1, -(2**31) + 1, 0])
    b = _vec(N18, [2**31 - 1, 2**31 - 1, 5])
    res = arithmetic("*", a, b, W)
    assert res.data.dtype == np.int64  # the bound (2**31-1)**2 < 2**62: compact
    assert _py(res) == [(2**31 - 1) ** 2, -((2**31 - 1) ** 2), 0]
    a = _vec(N18, [10**17, -(10**17), 3])
    b = _vec(N18, [99, 10**17 - 1, -(10**17)])
    res = arithmetic("*", a, b, W)
    assert res.data.dtype == object  # 10**34 may not fit: exact Python ints
    assert _py(res) == [10**17 * 99, -(10**17) * (10**17 - 1), -3 * 10**17]
    # just past int64: 2**32 * (2**31 + 1) = 2**63 + 2**32 would wrap around in int64
    res = arithmetic("*", _vec(N18, [2**32, -(2**32), 1]), _vec(N18, [2**31 + 1, 2**31, 1]), W)
    assert _py(res) == [2**63 + 2**32, -(2**63), 1]
    big = (2**62 - 1)
    res = arithmetic("+", _vec(decimal(19, 0), [big, -big]), _vec(decimal(19, 0), [big, -big]),
                     decimal(38, 0))
    assert res.data.dtype == object and _py(res) == [2 * big, -2 * big]


def test_mixed_object_and_int64_operands_and_nulls() -> None:
    wide = Vec(W, np.array([10**30, -(10**30), 7, 0], dtype=object),
               np.array([True, True, False, True]))
    narrow = _vec(W, [3, -4, 5, None])
    narrow = Vec(W, narrow.data.astype(np.int64), narrow.validity)
    for op in "+-*":
        got = _py(arithmetic(op, wide, narrow, W))
        assert got == [_ref(op, 10**30, 3), _ref(op, -(10**30), -4), None, None]


def test_negate_compact_and_wide() -> None:
    v = _vec(N18, [5, -(10**17), None, 0])
    res = negate(v, W)
    assert res.data.dtype == np.int64
    assert _py(res) == [-5, 10**17, None, 0]
    obj = Vec(W, np.array([10**30, -3], dtype=object))
    assert _py(negate(obj, W)) == [-(10**30), 3]


def test_wide_objects_makes_python_ints() -> None:
    for arr in (np.array([-(2**63), 2**63 - 1, 0]), np.array([2**64 - 1, 0], np.uint64),
                np.array([True, False]), np.array([3.0, -2.0])):
        out = wide_objects(arr)
        assert out.dtype == object
        assert all(type(x) is int for x in out.tolist())
        assert out.tolist() == [int(x) for x in arr.tolist()]


# ---- the compiler keeps compact values inside arithmetic chains ----------------------------
P = ColumnRef("p", decimal(15, 2))
D = ColumnRef("d", decimal(15, 2))
ONE = Literal(100, decimal(16, 2))


def _q1_batch(p: list[int | None], d: list[int | None]) -> Batch:
    return Batch(("p", "d"), (Column.from_physical(decimal(15, 2), p),
                              Column.from_physical(decimal(15, 2), d)))


def _q1_expr() -> Arithmetic:
    disc = Arithmetic("-", ONE, Cast(D, decimal(16, 2)), decimal(16, 2))
    prod = Arithmetic("*", P, disc, decimal(31, 4))
    return Arithmetic("*", prod, Arithmetic("+", ONE, Cast(D, decimal(16, 2)), decimal(16, 2)),
                      decimal(38, 6))


MAXP = 10**15 - 1  # DECIMAL(15,2) extremes


@pytest.mark.parametrize("p,d", [
    ([MAXP, -MAXP, 12345, None, 0], [99, -99, 7, 3, None]),
    ([MAXP] * 3, [-(10**11), 10**11, 0]),  # the second product leaves int64
    ([12345, -1, None, 10**9], [5, -6, 7, 99]),  # compact all the way
])
def test_compiled_chain_exact_and_widened(p: list, d: list) -> None:  # type: ignore[type-arg]
    b = _q1_batch(p, d)
    expect = [None if x is None or y is None else x * (100 - y) * (100 + y) for x, y in zip(p, d)]
    col = compile_column(_q1_expr())(b)
    assert col.data.dtype == object and col.to_pylist() == expect
    vec = compile_expr(_q1_expr())(b)
    assert vec.data.dtype == object and _py(vec) == expect
    compact = compile_column(_q1_expr(), compact=True)(b)
    assert (compact.data.dtype == np.int64) == (max(abs(x or 0) for x in p) < 10**10)
    got = [None if not ok else int(x) for x, ok in
           zip(compact.data.tolist(), (compact.validity if compact.validity is not None
                                       else np.ones(len(p), bool)).tolist())]
    assert got == expect


def test_chain_past_decimal38_is_an_overflow_error() -> None:
    """|p * (1 - d) * (1 + d)| reaches 10**45 (unscaled) here: past DECIMAL(38, 6). Doris raises
    `Arithmetic overflow`; the value is never returned with more digits than its type holds."""
    b = _q1_batch([MAXP] * 3, [-(10**15) + 1, 10**15 - 1, 0])
    for fn in (compile_column(_q1_expr()), compile_column(_q1_expr(), compact=True)):
        with pytest.raises(DorisError, match="Arithmetic overflow: .* decimal\\(38,6\\)"):
            fn(b)


def test_consumers_of_compact_results_see_python_ints() -> None:
    # CAST scales up by 10**k: on a leaked int64 array this would wrap around silently
    x = ColumnRef("x", decimal(18, 0))
    prod = Arithmetic("*", x, x, decimal(37, 0))
    b = Batch(("x",), (Column.from_physical(decimal(18, 0), [2**31 - 1, -(2**30), 3]),))
    up = compile_column(Cast(prod, decimal(38, 1)))(b).to_pylist()
    assert up == [(2**31 - 1) ** 2 * 10, 2**60 * 10, 90]
    cmp = compile_column(Comparison(">", prod, Literal(2**61, decimal(37, 0))))(b).to_pylist()
    assert cmp == [1, 0, 0]
    neg = compile_column(Negate(prod, decimal(37, 0)))(b)
    assert neg.data.dtype == object and neg.to_pylist() == [-(2**31 - 1) ** 2, -(2**60), -9]


# ---- SUM / AVG over wide DECIMAL arguments on the GroupedState path --------------------------
K = ColumnRef("k", BIGINT)
M = ColumnRef("m", W)


def _agg_plan(arg) -> LogicalAggregate:  # type: ignore[no-untyped-def]
    return LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), (("gk", K),), (
        ("s", AggregateCall("sum", (arg,), False, decimal(38, arg.type.scale))),
        ("a", AggregateCall("avg", (arg,), False, decimal(38, arg.type.scale + 4))),
        ("c", AggregateCall("count", (), False, BIGINT)),
    ))


def test_kernel_supports_wide_decimal_sum_and_avg_only() -> None:
    assert kernel_supported(_agg_plan(M))
    minmax = LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), (("gk", K),),
                              (("m", AggregateCall("max", (M,), False, W)),))
    assert not kernel_supported(minmax)


def _run(batches: list[Batch], plan: LogicalAggregate, kernels: bool,
         monkeypatch: pytest.MonkeyPatch) -> list[tuple]:  # type: ignore[type-arg]
    monkeypatch.setattr(hash_aggregate_module, "kernel_supported", lambda plan: kernels)
    op = HashAggregate(plan, BatchesSource(batches))
    assert (op._grouped is not None) == kernels
    op.open(ExecContext(cancel=threading.Event()))
    rows = [r for b in op.batches() for r in b.rows()]
    op.close()
    return rows


wide_values = st.one_of(st.integers(-(2**62), 2**62), st.integers(-(10**37), 10**37),
                        st.integers(-5, 5), st.none())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), wide_values), max_size=30), max_size=5))
def test_wide_sum_kernel_equals_python_sums(parts: list) -> None:
    batches = [Batch(("k", "m"), (Column.from_physical(BIGINT, [r[0] for r in rows]),
                                  Column.from_physical(W, [r[1] for r in rows])))
               for rows in parts if rows]
    plan = _agg_plan(M)
    state = GroupedState(plan)
    for b in batches:
        state.sink([b.column("k")], [b.column("m"), b.column("m"), None], b.num_rows)
    out = state.finalize()
    expect: dict[int, list[int]] = {}
    for rows in parts:
        for k, v in rows:
            expect.setdefault(k, [])
            if v is not None:
                expect[k].append(v)
    if not expect:
        assert out is None
        return
    assert out is not None
    assert out[0].to_pylist() == sorted(expect)
    assert out[1].to_pylist() == [sum(expect[k]) if expect[k] else None for k in sorted(expect)]
    assert all(type(x) is int for x in out[1].data.tolist())


@pytest.mark.parametrize("size", [1, 7, 1000])
@pytest.mark.parametrize("maxp", [MAXP, 4 * 10**14])
def test_compact_sum_of_products_overflowing_int64(size: int, maxp: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # |p * (1 - d) * (1 + d)| up to 10**19 per row (objects) or 4*10**18 (compact int64 rows):
    # either way the sums leave int64 after a few rows
    rng = np.random.default_rng(size)
    n = 3000
    p = [None if i % 17 == 0 else int(x) for i, x in
         enumerate(rng.integers(-maxp, maxp, n))]
    p[1], p[2] = maxp, maxp
    d = [int(x) for x in rng.integers(-99, 100, n)]
    keys = [int(x) for x in rng.integers(0, 3, n)]
    expr = _q1_expr()
    plan = _agg_plan(expr)
    batches = [Batch(("k", "p", "d"), (Column.from_physical(BIGINT, keys[i: i + size]),
                                       Column.from_physical(decimal(15, 2), p[i: i + size]),
                                       Column.from_physical(decimal(15, 2), d[i: i + size])))
               for i in range(0, n, size)]
    fast = _run(batches, plan, True, monkeypatch)
    assert fast == _run(batches, plan, False, monkeypatch)
    sums: dict[int, int] = {}
    for k, x, y in zip(keys, p, d):
        if x is not None:
            sums[k] = sums.get(k, 0) + x * (100 - y) * (100 + y)
    assert [r[1] for r in fast] == [sums[k] for k in sorted(sums)]
    assert max(abs(s) for s in sums.values()) >= 2**63  # the case under test


# ---- decimal AVG final: vectorised int64 division vs exact rounding --------------------------
def _avg_ref(s: int, c: int, sc: int, out_scale: int) -> int:
    if c == 0:
        return 0
    num = s * 10 ** (out_scale - sc)
    q, r = divmod(abs(num), c)  # half away from zero
    q += 1 if 2 * r >= c else 0
    return -q if num < 0 else q


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.integers(-(2**62), 2**62), st.integers(-999, 999)),
                          st.integers(0, 7)), max_size=30),
       st.sampled_from([(38, 6), (38, 4), (38, 24)]), st.integers(0, 2))
def test_avg_final_matches_exact_rounding(rows: list[tuple[int, int]], out: tuple[int, int],
                                          in_scale: int) -> None:
    from sql.functions.aggregate import _avg_final

    t = decimal(*out)
    sums = np.array([r[0] for r in rows], np.int64)
    counts = np.array([r[1] for r in rows], np.int64)
    scale = np.full(len(rows), in_scale, np.int64)
    res = _avg_final((sums, counts, scale), t).to_column().with_type(t)
    expect = [None if c == 0 else _avg_ref(s, c, in_scale, t.scale) for s, c in rows]
    assert res.to_pylist() == expect
    assert res.data.dtype == t.numpy_dtype


def test_avg_final_halves_round_away_from_zero() -> None:
    from sql.functions.aggregate import _avg_final

    t = decimal(38, 0)
    sums = np.array([1, -1, 3, -3, 5, 2**59, -(2**59)], np.int64)
    counts = np.array([2, 2, 2, 2, 4, 3, 3], np.int64)
    got = _avg_final((sums, counts, np.zeros(7, np.int64)), t).data.tolist()
    assert got == [_avg_ref(s, c, 0, 0) for s, c in zip(sums.tolist(), counts.tolist())]
    assert got[:5] == [1, -1, 2, -2, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), wide_values), min_size=1, max_size=20),
                min_size=2, max_size=6), st.integers(0, 5))
def test_wide_sum_states_combine_and_split(parts: list, cut: int) -> None:
    """Twin states (one may be int64, the other Python ints) merge exactly; subsets keep sums."""
    plan = _agg_plan(M)
    batches = [Batch(("k", "m"), (Column.from_physical(BIGINT, [r[0] for r in rows]),
                                  Column.from_physical(W, [r[1] for r in rows])))
               for rows in parts]
    cut = 1 + cut % (len(batches) - 1)
    left, right = GroupedState(plan), GroupedState(plan)
    for state, part in ((left, batches[:cut]), (right, batches[cut:])):
        for b in part:
            state.sink([b.column("k")], [b.column("m"), b.column("m"), None], b.num_rows)
    merged = GroupedState(plan)
    for state in (left, right):
        idx = np.arange(state.groups)
        merged.combine(state.subset(idx[::2]))  # the two-phase split: shares by group
        merged.combine(state.subset(idx[1::2]))
    out = merged.finalize()
    sums: dict[int, list[int]] = {}
    for rows in parts:
        for k, v in rows:
            sums.setdefault(k, [])
            if v is not None:
                sums[k].append(v)
    assert out is not None
    assert out[0].to_pylist() == sorted(sums)
    assert out[1].to_pylist() == [sum(sums[k]) if sums[k] else None for k in sorted(sums)]
    assert out[3].to_pylist() == [len([r for rows in parts for r in rows if r[0] == k])
                                  for k in sorted(sums)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_long_sums_spill_to_python_ints_and_stay_int64(seed: int) -> None:
    """Each batch fits int64 but the running sums do not: int64 sums spill into exact ints."""
    rng = np.random.default_rng(seed)
    plan = _agg_plan(M)
    parts = []
    for _ in range(60):
        vals = [None if rng.random() < 0.1 else int(x) * (1 if seed != 2 else -1)
                for x in rng.integers(2**57, 2**58, 4)]
        parts.append([(int(k), v) for k, v in zip(rng.integers(0, 3, 4), vals)])
    def compact(vals: list[int | None]) -> Column:  # a wide DECIMAL column as exact int64
        valid = np.array([v is not None for v in vals])
        return Column(W, np.array([v or 0 for v in vals], np.int64), valid)

    batches = [Batch(("k", "m"), (Column.from_physical(BIGINT, [r[0] for r in rows]),
                                  compact([r[1] for r in rows])))
               for rows in parts]
    states = [GroupedState(plan) for _ in range(3)]
    for i, b in enumerate(batches):
        for st_ in (states[0], states[1 + i % 2]):
            st_.sink([b.column("k")], [b.column("m"), b.column("m"), None], b.num_rows)
    one = states[0]
    assert one.aggs[0].sum is not None and one.aggs[0].sum.spill is not None
    assert one.aggs[0].sum.sums.dtype == np.int64  # still on the kernel
    merged = GroupedState(plan)
    for st_ in states[1:]:
        idx = np.arange(st_.groups)
        merged.combine(st_.subset(idx[::2]))
        merged.combine(st_.subset(idx[1::2]))
    expect: dict[int, list[int]] = {}
    for rows in parts:
        for k, v in rows:
            expect.setdefault(k, [])
            if v is not None:
                expect[k].append(v)
    for state in (one, merged):
        out = state.finalize()
        assert out is not None
        assert out[0].to_pylist() == sorted(expect)
        assert out[1].to_pylist() == [sum(expect[k]) for k in sorted(expect)]
        avg = [_avg_ref(sum(expect[k]), len(expect[k]), 4, 8) for k in sorted(expect)]
        assert out[2].to_pylist() == avg


# ---- range check of casts over Python ints ---------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.integers(-(10**40), 10**40), st.integers(-(10**19), 10**19),
                          st.sampled_from([10**38 - 1, -(10**38) + 1, 10**38, -(10**38),
                                           10**18 - 1, 10**18, 2**63 - 1, -(2**63)])),
                max_size=30),
       st.sampled_from([(38, 0), (38, 2), (18, 0), (30, 4)]))
def test_fit_range_on_python_ints(values: list, prec_scale: tuple) -> None:  # type: ignore[type-arg]
    from sql.functions.cast import fit_range

    t = decimal(*prec_scale)
    lo, hi = -(10**t.precision) + 1, 10**t.precision - 1
    res = fit_range(np.array(values, dtype=object), None, t)
    ok = [lo <= v <= hi for v in values]
    assert res.data.dtype == t.numpy_dtype
    assert res.data.tolist() == [v if g else 0 for v, g in zip(values, ok)]
    assert all(type(x) is int for x in res.data.tolist())
    expect_valid = None if all(ok) else ok
    assert (None if res.validity is None else res.validity.tolist()) == expect_valid
