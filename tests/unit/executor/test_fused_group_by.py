"""The fused GROUP BY path (executor/fused_aggregate.py FusedGroupedAggregate,
executor/kernels/fused_aggregate.py grouped_aggregate, GroupedState.batch_group_ids).

- the numba kernel equals its pure-Python reference per group on random programs, group ids
  and batches (NULLs, empty batches, values at the int64 guard), also when it stops to spill;
- HashAggregate with the fused path returns exactly the rows of the same operator with it
  switched off (the general kernel path), for random batches grouped by: a nullable TINYINT,
  a string key whose batches mix dictionary-coded (DictColumn) and plain columns, both, a
  wide-range BIGINT and a DOUBLE key (hash-table path), with NULL keys, NULL values, empty and
  all-NULL batches, one group and thousands of groups; in one operator, in two operators
  combined (parallel instances) and in two phases (states through `to_batch`/`merge_batch`);
- int64 sums past the 2^62 bound spill into exact Python ints, values past it take the
  general path (same sums, same overflow error);
- every result also equals a pure-Python GROUP BY of the rows.
"""

from __future__ import annotations

import math
import random
import threading
from collections import defaultdict
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fused_aggregates import (
    D152,
    INT_PROGRAMS,
    P,
    Q,
    S,
    X,
    aggregate_calls,
    same,
)
from support.fused_aggregates import NAMES as BASE_NAMES
from support.fused_aggregates import TYPES as BASE_TYPES
from support.operators import BatchesSource

from executor.fused_aggregate import FusedGroupedAggregate, program_bounds
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
    OP_COL,
    OP_FCOL,
    OVERFLOW,
    SPILL,
    grouped_aggregate,
    grouped_aggregate_reference,
)
from executor.operator import ExecContext
from executor.two_phase_aggregate import MergeAggregate, PartialAggregate
from planner.logical import LogicalAggregate, LogicalValues
from sql.binder.expressions import AggregateCall, Arithmetic, Cast, ColumnRef
from storage.batch import Batch, Column, DictColumn
from storage.errors import DorisError
from storage.types import BIGINT, DOUBLE, STRING, TINYINT, decimal

# ---- the kernel against its reference ------------------------------------------------------

KINDS = (K_COUNT, K_SUM_INT, K_SUM_FLOAT, K_MIN_INT, K_MAX_INT, K_MIN_FLOAT, K_MAX_FLOAT,
         K_SUM_FLOAT, K_COUNT)


def _program(rng: random.Random):  # type: ignore[no-untyped-def]
    ops: list[tuple[int, int]] = []
    starts = [0]
    for a, kind in enumerate(KINDS):
        if kind in (K_MIN_FLOAT, K_MAX_FLOAT) or (kind == K_SUM_FLOAT and a == 7):
            ops.append((OP_FCOL, 0))
        elif kind != K_COUNT or a == 0:
            ops.extend(rng.choice(INT_PROGRAMS))
        starts.append(len(ops))  # (the last COUNT is COUNT(*): an empty program)
    return (np.array(ops, np.int64).reshape(-1, 2), np.array(starts, np.int64),
            np.array(KINDS, np.int64), np.array([rng.randint(-100, 100)], np.int64))


def _columns(rng: random.Random, n: int, hi: int):  # type: ignore[no-untyped-def]
    ints = np.array([[rng.randint(-hi, hi) for _ in range(n)] for _ in range(2)],
                    np.int64).reshape(2, n)
    int_valid = np.array([[rng.random() > 0.2 for _ in range(n)]], np.bool_).reshape(1, n)
    floats = np.array([[rng.choice([-0.0, math.nan]) if rng.random() < 0.1
                        else rng.uniform(-5, 5) for _ in range(n)]], np.float64).reshape(1, n)
    float_valid = np.array([[rng.random() > 0.3 for _ in range(n)]], np.bool_).reshape(1, n)
    return (ints, int_valid, np.array([0, -1], np.int64), np.array([True, True], np.bool_),
            floats, float_valid, np.array([0], np.int64))


def _run_kernel(gids, prog, cols, groups: int, checked: bool):  # type: ignore[no-untyped-def]
    """The kernel over a whole batch from zero accumulators, spilling like the operator;
    `checked`: every program checks its intermediates (else those `program_bounds` proves
    safe run unchecked)."""
    k = len(KINDS)
    isums, fvals = np.zeros((k, groups), np.int64), np.zeros((k, groups), np.float64)
    counts = np.zeros((k, groups), np.int64)
    bounds = np.zeros(k, np.float64)
    ops, starts, _, consts = prog
    if checked:
        safe, value_bounds = np.zeros(k, np.bool_), np.zeros(k)
    else:
        col_bounds = [max(abs(int(v)) for v in row) if len(row) else 0
                      for row in cols[0].tolist()]
        safe, value_bounds = program_bounds(ops, starts, consts, col_bounds)
    spilled = [[0] * groups for _ in range(k)]
    start = 0
    while True:
        status, done = grouped_aggregate(gids, start, *prog, safe, value_bounds, *cols, isums,
                                         fvals, counts, bounds)
        if status == OK:
            break
        if status == OVERFLOW:
            return None
        assert status == SPILL and done >= start
        for a in range(k):
            if KINDS[a] == K_SUM_INT:
                spilled[a] = [s + int(v) for s, v in zip(spilled[a], isums[a].tolist())]
                isums[a] = 0
                bounds[a] = 0.0
        start = done
    out = []
    for a, kind in enumerate(KINDS):
        per: dict[int, tuple] = {}  # type: ignore[type-arg]
        for g in range(groups):
            if counts[a, g] == 0:
                continue
            if kind == K_COUNT:
                v: object = None
            elif kind == K_SUM_INT:
                v = spilled[a][g] + int(isums[a, g])
            elif kind in (K_MIN_INT, K_MAX_INT):
                v = int(isums[a, g])
            else:
                v = float(fvals[a, g])
            per[g] = (v, int(counts[a, g]))
        out.append(per)
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.sampled_from([0, 1, 7, 1024, 3000]),
       groups=st.sampled_from([1, 3, 500]), hi=st.sampled_from([1000, 2 ** 40, 2 ** 61]))
def test_kernel_matches_reference(seed: int, n: int, groups: int, hi: int) -> None:
    rng = random.Random(seed)
    prog = _program(rng)
    cols = _columns(rng, n, hi)
    gids = np.array([rng.randrange(groups) for _ in range(n)], np.int64)
    want = grouped_aggregate_reference(gids, *prog, *cols, groups)
    for checked in (True, False):
        got = _run_kernel(gids, prog, cols, groups, checked)
        if got is None or want is None:
            # the kernel checks every intermediate, the reference only the values it reduces
            assert hi > 1000
            continue
        for g_a, w_a in zip(got, want):
            assert set(g_a) == set(w_a)
            for g in g_a:
                assert g_a[g][1] == w_a[g][1]
                assert same(g_a[g][0], w_a[g][0]), (g, g_a[g], w_a[g])


def test_kernel_spills_exact_sums() -> None:
    """One group summing values near 2^50: the kernel stops with SPILL before the bound and
    the caller's spilled Python ints plus the restarted sums are exact."""
    n = 40000
    big = 2 ** 50 - 3
    prog = (np.array([[OP_COL, 0]], np.int64), np.array([0, 1], np.int64),
            np.array([K_SUM_INT], np.int64), np.zeros(1, np.int64))
    ints = np.full((1, n), big, np.int64)
    ints[0, 1::2] = -1
    args = (ints, np.ones((0, n), np.bool_), np.array([-1], np.int64),
            np.array([True], np.bool_), np.zeros((0, n)), np.ones((0, n), np.bool_),
            np.zeros(0, np.int64))
    isums, fvals = np.zeros((1, 1), np.int64), np.zeros((1, 1))
    counts, bounds = np.zeros((1, 1), np.int64), np.zeros(1)
    safe, value_bounds = program_bounds(*prog[:2], prog[3], [big])
    assert safe[0] and value_bounds[0] == float(big)
    gids = np.zeros(n, np.int64)
    total, start, spills = 0, 0, 0
    while True:
        status, done = grouped_aggregate(gids, start, *prog, safe, value_bounds, *args, isums,
                                         fvals, counts, bounds)
        if status == OK:
            break
        assert status == SPILL
        spills += 1
        total += int(isums[0, 0])
        isums[0, 0], bounds[0], start = 0, 0.0, done
    total += int(isums[0, 0])
    assert spills > 0
    assert total == (n // 2) * big - n // 2
    assert counts[0, 0] == n


# ---- the operator: fused against general ---------------------------------------------------

NAMES = (*BASE_NAMES, "w", "r")
TYPES = (*BASE_TYPES, BIGINT, DOUBLE)
W, R = ColumnRef("w", BIGINT), ColumnRef("r", DOUBLE)
POOL = ["", "a", "AIR", "b", "é", "日本", "🙂", "a\x00", "ZZ"]
KEYS = {
    "q": (("q", Q),),
    "s": (("s", S),),
    "s,q": (("s", S), ("q", Q)),
    "w": (("w", W),),  # values from a wide range: the hash table, not dense combinations
    "r": (("r", R),),  # DOUBLE: the hash table
    "x": (("x", X),),  # thousands of groups
}


def _calls() -> list[AggregateCall]:
    return [*aggregate_calls(), AggregateCall("max", (Q,), False, TINYINT)]


def _string_column(rng: random.Random, values: list[object]) -> Column:
    """Plain or dictionary-coded (a sorted distinct dictionary, codes per row)."""
    if rng.random() < 0.5:
        return Column.from_physical(STRING, values)
    present = sorted({v for v in values if v is not None} | set(rng.sample(POOL, 2)),
                     key=lambda v: v.encode())  # type: ignore[union-attr]
    dictionary = Column.from_physical(STRING, present)
    index = {v: i for i, v in enumerate(present)}
    codes = np.array([index[v] if v is not None else rng.randrange(len(present))
                      for v in values], np.int32)
    valid = np.array([v is not None for v in values], np.bool_)
    return DictColumn(dictionary, codes, None if valid.all() else valid)


def _batches(rng: random.Random, big_x: bool, many: bool) -> list[Batch]:
    out = []
    for _ in range(rng.randint(0, 5)):
        n = rng.choice([0, 1, 5, 64, 1500, 5000 if many else 300])
        all_null = rng.random() < 0.1

        def maybe(v: object, all_null: bool = all_null) -> object:
            return None if all_null or rng.random() < 0.15 else v

        xs = 2 ** 62 if big_x else (10 ** 6 if not many else 3000)
        cols = [
            [maybe(rng.randint(-128, 127) if rng.random() < 0.3 else rng.randint(0, 3))
             for _ in range(n)],
            [maybe(rng.randint(-10 ** 9, 10 ** 9)) for _ in range(n)],
            [maybe(rng.randint(0, 10)) for _ in range(n)],
            [maybe(rng.randint(-xs, xs)) for _ in range(n)],
            [maybe(rng.choice([-0.0, 0.0, math.nan]) if rng.random() < 0.05
                   else rng.uniform(-1e6, 1e6)) for _ in range(n)],
            [maybe(rng.choice(POOL)) for _ in range(n)],
            [maybe(rng.choice([-2 ** 60, 7, 2 ** 59, 0])) for _ in range(n)],
            [maybe(rng.choice([-0.0, 0.0, 1.5, math.nan])) for _ in range(n)],
        ]
        columns = [Column.from_physical(t, v) if name != "s" else _string_column(rng, v)
                   for name, t, v in zip(NAMES, TYPES, cols)]
        out.append(Batch(NAMES, tuple(columns)))
    return out


def _plan(calls: list[AggregateCall], keys: str) -> LogicalAggregate:
    dummy = LogicalValues(NAMES, TYPES, ())
    return LogicalAggregate(dummy, KEYS[keys], tuple((f"a{i}", c) for i, c in enumerate(calls)))


def _ctx() -> ExecContext:
    return ExecContext(cancel=threading.Event())


def _rows(op: HashAggregate) -> list[tuple]:  # type: ignore[type-arg]
    op.open(_ctx())
    try:
        return [r for b in op.batches() for r in b.rows()]
    except DorisError as e:  # e.g. SUM over BIGINT out of range: the same error both ways
        return [(str(e),)]
    finally:
        op.close()


def _operator(plan: LogicalAggregate, batches: list[Batch], fused: bool) -> HashAggregate:
    op = HashAggregate(plan, BatchesSource(batches))
    assert op._fused_grouped is not None
    if not fused:
        op._fused_grouped = None
    return op


def _combined(plan: LogicalAggregate, batches: list[Batch], fused: bool) -> list[tuple]:  # type: ignore[type-arg]
    """Two instances (every other batch each) combined, as parallel scan instances are."""
    ops = [_operator(plan, [], fused) for _ in range(2)]
    for i, op in enumerate(ops):
        op.open(_ctx())
        for b in batches[i::2]:
            op.sink(b)
    ops[0].combine(ops[1])
    try:
        rows = [r for b in ops[0].finalize() for r in b.rows()]
    except DorisError as e:
        rows = [(str(e),)]
    for op in ops:
        op.close()
    return rows


def _two_phase(plan: LogicalAggregate, batches: list[Batch], fused: bool) -> list[tuple]:  # type: ignore[type-arg]
    """Each half through a PartialAggregate, the states merged by a MergeAggregate."""
    states: list[Batch] = []
    for i in range(2):
        part = PartialAggregate(plan, BatchesSource(batches[i::2]))
        if not fused:
            part._fused_grouped = None
        part.open(_ctx())
        states.extend(part.batches())
        part.close()
    merge = MergeAggregate(plan, BatchesSource(states))
    return _rows(merge)


def _assertsame(got: list[tuple], want: list[tuple],  # type: ignore[type-arg]
                 split_float_sums: bool = False) -> None:
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert len(g) == len(w) and all(same(a, b, split_float_sums)
                                        for a, b in zip(g, w)), (g, w)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10 ** 6), keys=st.sampled_from(sorted(KEYS)),
       big_x=st.booleans())
def test_fused_equals_general(seed: int, keys: str, big_x: bool) -> None:
    rng = random.Random(seed)
    batches = _batches(rng, big_x, many=keys == "x")
    plan = _plan(_calls(), keys)
    want = _rows(_operator(plan, batches, fused=False))
    _assertsame(_rows(_operator(plan, batches, fused=True)), want, big_x)
    _assertsame(_combined(plan, batches, fused=True), _combined(plan, batches, fused=False),
                 big_x)
    if want and len(want[0]) > 1:  # (not an error)
        _assertsame(_two_phase(plan, batches, fused=True),
                     _two_phase(plan, batches, fused=False), big_x)


def _python_group_by(batches: list[Batch], key: str, arg: str) -> dict:  # type: ignore[type-arg]
    """{key: (count(*), sum(arg), min(arg), max(arg))} over the rows (NULL arg ignored)."""
    acc: dict = defaultdict(lambda: [0, None, None, None])  # type: ignore[type-arg]
    for b in batches:
        for k, v in zip(b.column(key).to_pylist(), b.column(arg).to_pylist()):
            slot = acc[k]
            slot[0] += 1
            if v is None:
                continue
            slot[1] = v if slot[1] is None else slot[1] + v
            slot[2] = v if slot[2] is None else min(slot[2], v)
            slot[3] = v if slot[3] is None else max(slot[3], v)
    return {k: tuple(v) for k, v in acc.items()}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10 ** 6), key=st.sampled_from(["q", "s", "w", "x"]))
def test_fused_equals_python(seed: int, key: str) -> None:
    rng = random.Random(seed)
    batches = _batches(rng, False, many=key == "x")
    calls = [AggregateCall("count", (), False, BIGINT),
             AggregateCall("sum", (P,), False, decimal(38, 2)),
             AggregateCall("min", (P,), False, D152),
             AggregateCall("max", (P,), False, D152)]
    got = {r[0]: r[1:] for r in _rows(_operator(_plan(calls, key), batches, fused=True))}
    assert got == _python_group_by(batches, key, "p")


def test_empty_input_one_group_and_all_null_keys() -> None:
    plan = _plan(_calls(), "s,q")
    empty = Batch(NAMES, tuple(Column.from_physical(t, []) for t in TYPES))
    assert _rows(_operator(plan, [], fused=True)) == []
    assert _rows(_operator(plan, [empty], fused=True)) == []
    one = Batch(NAMES, tuple(Column.from_physical(t, [v] * 3) for t, v in
                             zip(TYPES, [1, 250, 5, 9, 0.5, "日本", 7, 1.0])))
    rows = _rows(_operator(plan, [one, one], fused=True))
    assert rows == _rows(_operator(plan, [one, one], fused=False))
    assert len(rows) == 1 and rows[0][:3] == ("日本", 1, 6)
    nulls = Batch(NAMES, tuple(Column.from_physical(t, [None] * 4) for t in TYPES))
    rows = _rows(_operator(plan, [nulls, one], fused=True))
    assert rows == _rows(_operator(plan, [nulls, one], fused=False))
    assert [r[:3] for r in rows] == [("日本", 1, 3), (None, None, 4)]


def test_sums_past_the_bound_spill_and_values_past_it_fall_back() -> None:
    """BIGINT sums of one group crossing 2^62 stay exact (spilled into Python ints); a value
    past 2^62 makes the rest take the general path, with the general path's result (a
    DECIMAL(38) sum) or error (BIGINT SUM out of range)."""
    big = 2 ** 50 + 12345
    n = 5000
    keys = Column.from_physical(TINYINT, [1] * n)
    xs = Column.from_physical(BIGINT, [big] * n)
    b = Batch(("q", "x"), (keys, xs))
    dummy = LogicalValues(("q", "x"), (TINYINT, BIGINT), ())
    exact = [AggregateCall("sum", (Cast(X, decimal(20, 0)),), False, decimal(38, 0)),
             AggregateCall("max", (X,), False, BIGINT)]
    plan = LogicalAggregate(dummy, (("q", Q),), tuple((f"a{i}", c) for i, c in
                                                      enumerate(exact)))
    fused = HashAggregate(plan, BatchesSource([b, b]))
    rows = _rows(fused)
    assert rows == [(1, Decimal(2 * n * big), big)]
    assert 2 * n * big > 2 ** 63 and fused._fused_grouped is not None  # it spilled, exactly
    huge = Batch(("q", "x"), (Column.from_physical(TINYINT, [1, 2]),
                              Column.from_physical(BIGINT, [2 ** 62 + 1, 5])))
    for calls in (exact, [AggregateCall("sum", (X,), False, BIGINT)]):
        plan = LogicalAggregate(dummy, (("q", Q),), tuple((f"a{i}", c) for i, c in
                                                          enumerate(calls)))
        got = _rows(HashAggregate(plan, BatchesSource([b, huge, b])))
        general = HashAggregate(plan, BatchesSource([b, huge, b]))
        general._fused_grouped = None
        assert got == _rows(general)


@pytest.mark.parametrize("calls", [
    [AggregateCall("sum", (X,), True, BIGINT)],  # DISTINCT
    [AggregateCall("sum", (Arithmetic("/", X, X, DOUBLE),), False, DOUBLE)],
    [AggregateCall("count", (S,), False, BIGINT)],
])
def test_unsupported_shapes_keep_the_general_path(calls) -> None:  # type: ignore[no-untyped-def]
    assert FusedGroupedAggregate.of(_plan(calls, "q")) is None


def test_dense_keys_hash_only_one_row_per_combination() -> None:
    """Two dictionary keys and a small int key: the table sees one row per combination."""
    plan = _plan([AggregateCall("count", (), False, BIGINT)], "s,q")
    op = _operator(plan, [], fused=True)
    assert op._grouped is not None
    rng = random.Random(3)
    values = [rng.choice(POOL) for _ in range(4000)]
    s = _string_column(random.Random(1), values)
    q = Column.from_physical(TINYINT, [rng.randint(0, 3) for _ in range(4000)])
    inserted: list[int] = []
    table = op._grouped.table
    insert = table.insert
    table.insert = lambda keys: (inserted.append(len(keys)), insert(keys))[1]  # type: ignore[method-assign]
    gids = op._grouped.batch_group_ids([s, q], 4000)
    assert inserted == [len({(v, k) for v, k in zip(values, q.to_pylist())})]
    keys = op._grouped.key_columns()
    pairs = list(zip(keys[0].to_pylist(), keys[1].to_pylist()))
    assert [pairs[g] for g in gids.tolist()] == list(zip(values, q.to_pylist()))
