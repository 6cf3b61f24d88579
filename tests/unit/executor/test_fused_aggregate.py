"""The fused global aggregate (executor/fused_aggregate.py, kernels/fused_aggregate.py).

- the numba kernel equals its pure-Python reference on random programs and batches (NULLs,
  empty batches, values at the int64 guard);
- HashAggregate with the fused path returns exactly the rows of the general path (the same
  operator with the fused path switched off) for random batches: NULLs, empty and all-NULL
  batches, DECIMAL arithmetic, casts, float columns (NaN included), and values large enough
  that some batches overflow the kernel's int64 bound and take the general path;
- shapes the fused path does not cover (GROUP BY, DISTINCT, strings) keep the general path.
"""

from __future__ import annotations

import math
import random
import threading
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fused_aggregates import (
    D152,
    INT_PROGRAMS,
    NAMES,
    P,
    Q,
    S,
    X,
    aggregate_calls,
    same,
)
from support.operators import BatchesSource

from executor.fused_aggregate import FusedGlobalAggregate, program_bounds
from executor.hash_aggregate import HashAggregate
from executor.kernels.fused_aggregate import (
    K_COUNT,
    K_MAX_FLOAT,
    K_MAX_INT,
    K_MIN_FLOAT,
    K_MIN_INT,
    K_SUM_FLOAT,
    K_SUM_INT,
    OK,
    OP_FCOL,
    global_aggregate,
    global_aggregate_reference,
)
from executor.operator import ExecContext
from planner.logical import LogicalAggregate, LogicalValues
from sql.binder.expressions import AggregateCall, Arithmetic, Cast
from storage.batch import Batch, Column
from storage.errors import DorisError
from storage.types import BIGINT, DOUBLE, INT, STRING, TINYINT, decimal

# ---- the kernel against its reference ------------------------------------------------------



def _kernel_inputs(rng: random.Random, n: int, big: bool):  # type: ignore[no-untyped-def]
    hi = 2 ** 40 if big else 1000
    ints = np.array([[rng.randint(-hi, hi) for _ in range(n)] for _ in range(2)],
                    np.int64).reshape(2, n)
    int_valid = np.array([[rng.random() > 0.2 for _ in range(n)]], np.bool_).reshape(1, n)
    int_vidx = np.array([0, -1], np.int64)  # column 0 has NULLs
    int_wide = np.array([True, big], np.bool_)
    floats = np.array([[rng.choice([rng.uniform(-5, 5), math.nan]) if rng.random() < 0.1
                        else rng.uniform(-5, 5) for _ in range(n)]], np.float64).reshape(1, n)
    float_valid = np.array([[rng.random() > 0.3 for _ in range(n)]], np.bool_).reshape(1, n)
    return ints, int_valid, int_vidx, int_wide, floats, float_valid, np.array([0], np.int64)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.sampled_from([0, 1, 7, 300, 2500]),
       big=st.booleans())
def test_kernel_matches_reference(seed: int, n: int, big: bool) -> None:
    rng = random.Random(seed)
    ops: list[tuple[int, int]] = []
    starts = [0]
    kinds = []
    for kind in (K_COUNT, K_SUM_INT, K_SUM_FLOAT, K_MIN_INT, K_MAX_INT, K_MIN_FLOAT,
                 K_MAX_FLOAT, K_SUM_FLOAT):
        if kind in (K_MIN_FLOAT, K_MAX_FLOAT) or (kind == K_SUM_FLOAT and len(kinds) == 7):
            ops.append((OP_FCOL, 0))
        elif kind != K_COUNT or rng.random() < 0.5:
            ops.extend(rng.choice(INT_PROGRAMS))
        kinds.append(kind)
        starts.append(len(ops))
    args = _kernel_inputs(rng, n, big)
    consts = np.array([rng.randint(-100, 100)], np.int64)
    k = len(kinds)
    init = (np.where(np.array(kinds) == K_SUM_INT, 0, np.array([rng.randint(-9, 9)
            for _ in range(k)])).astype(np.int64), np.full(k, 0.25), np.zeros(k, np.bool_))
    want = [a.copy() for a in init] + [np.zeros(k, np.int64)]
    prog = (np.array(ops, np.int64).reshape(-1, 2), np.array(starts, np.int64),
            np.array(kinds, np.int64), consts)
    ref_status = global_aggregate_reference(*prog, *args, *want)
    # every program checked, and those `program_bounds` proves within 2^62 unchecked
    proven = program_bounds(prog[0], prog[1], consts,
                            [int(np.abs(row.astype(object)).max()) if len(row) else 0
                             for row in args[0]])
    for safe, value_bounds in ((np.zeros(k, np.bool_), np.zeros(k)), proven):
        out = [a.copy() for a in init] + [np.zeros(k, np.int64)]
        status = global_aggregate(*prog, safe, value_bounds, *args, *out)
        if status != OK or ref_status != OK:
            # the kernel checks every intermediate, the reference only the values it reduces
            assert big
            continue
        for g, w in zip(out, want):
            np.testing.assert_array_equal(g, w)


# ---- the operator: fused against general -----------------------------------------------------




def _calls() -> list[AggregateCall]:
    return aggregate_calls()


def _batches(rng: random.Random, big_x: bool) -> list[Batch]:
    out = []
    for _ in range(rng.randint(0, 6)):
        n = rng.choice([0, 1, 5, 64, 200, 2100])
        all_null = rng.random() < 0.15

        def maybe(v: object, all_null: bool = all_null) -> object:
            return None if all_null or rng.random() < 0.2 else v

        xs = 2 ** 62 if big_x else 10 ** 6
        cols = (
            [maybe(rng.randint(-128, 127)) for _ in range(n)],
            [maybe(rng.randint(-10 ** 9, 10 ** 9)) for _ in range(n)],
            [maybe(rng.randint(0, 10)) for _ in range(n)],
            [maybe(rng.randint(-xs, xs)) for _ in range(n)],
            [maybe(rng.choice([-0.0, math.nan]) if rng.random() < 0.05
                   else rng.uniform(-1e6, 1e6)) for _ in range(n)],
            [maybe(rng.choice(["a", "", "日本"])) for _ in range(n)],
        )
        types = (TINYINT, D152, D152, BIGINT, DOUBLE, STRING)
        out.append(Batch(NAMES, tuple(Column.from_physical(t, v) for t, v in zip(types, cols))))
    return out


def _run(calls: list[AggregateCall], batches: list[Batch], fused: bool,
         group_by: tuple = ()) -> tuple[list[tuple], bool]:  # type: ignore[type-arg]
    dummy = LogicalValues(NAMES, (TINYINT, D152, D152, BIGINT, DOUBLE, STRING), ())
    plan = LogicalAggregate(dummy, group_by, tuple((f"a{i}", c) for i, c in enumerate(calls)))
    op = HashAggregate(plan, BatchesSource(batches))
    had_fused = op._fused is not None
    if not fused:
        op._fused = None
    op.open(ExecContext(cancel=threading.Event()))
    try:
        rows = [r for b in op.batches() for r in b.rows()]
    except DorisError as e:  # e.g. SUM over BIGINT out of range: the same error both ways
        rows = [(str(e),)]
    op.close()
    return rows, had_fused


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10 ** 6), big_x=st.booleans())
def test_fused_equals_general(seed: int, big_x: bool) -> None:
    rng = random.Random(seed)
    batches = _batches(rng, big_x)
    calls = _calls()
    got, used = _run(calls, batches, fused=True)
    want, _ = _run(calls, batches, fused=False)
    assert used
    assert len(got) == len(want) == 1 and len(got[0]) == len(want[0])
    assert all(same(g, w, split_float_sums=big_x) for g, w in zip(got[0], want[0])), (
        got, want)


def test_overflowing_batches_take_the_general_path() -> None:
    """BIGINT values near 2^63: the kernel reports OVERFLOW and the sum stays exact
    (a DECIMAL(38) result of SUM over the products)."""
    big = 2 ** 62 + 12345
    b = Batch(("x",), (Column.from_physical(BIGINT, [big, big, -7]),))
    calls = [AggregateCall("sum", (Cast(X, decimal(20, 0)),), False, decimal(38, 0)),
             AggregateCall("max", (X,), False, BIGINT)]
    got, used = _run(calls, [b, b], fused=True)
    assert used
    assert got == [(Decimal(4 * big - 14), big)]


def test_no_rows_and_all_null() -> None:
    empty = Batch(NAMES, tuple(Column.from_physical(t, []) for t in
                               (TINYINT, D152, D152, BIGINT, DOUBLE, STRING)))
    calls = _calls()
    for batches in ([], [empty]):
        got, _ = _run(calls, batches, fused=True)
        want, _ = _run(calls, batches, fused=False)
        assert got == want
        assert got[0][0] == 0 and got[0][1] is None


@pytest.mark.parametrize("calls, group_by", [
    ([AggregateCall("sum", (X,), False, BIGINT)], (("q", Q),)),
    ([AggregateCall("sum", (X,), True, BIGINT)], ()),
    ([AggregateCall("max", (S,), False, STRING)], ()),
    ([AggregateCall("sum", (Arithmetic("/", X, X, DOUBLE),), False, DOUBLE)], ()),
    ([AggregateCall("sum", (Cast(P, INT),), False, BIGINT)], ()),  # a narrowing cast
])
def test_unsupported_shapes_keep_the_general_path(calls, group_by) -> None:  # type: ignore[no-untyped-def]
    dummy = LogicalValues(NAMES, (TINYINT, D152, D152, BIGINT, DOUBLE, STRING), ())
    plan = LogicalAggregate(dummy, tuple(group_by),
                            tuple((f"a{i}", c) for i, c in enumerate(calls)))
    assert FusedGlobalAggregate.of(plan) is None
