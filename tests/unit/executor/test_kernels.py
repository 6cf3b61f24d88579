"""Hash table and aggregate kernels against plain-numpy references (hypothesis), and the
kernel GROUP BY path of HashAggregate against its numpy path."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.operators import BatchesSource

import executor.hash_aggregate as hash_aggregate_module
from executor.grouped_state import GroupedState, kernel_supported
from executor.hash_aggregate import HashAggregate
from executor.kernels.aggregates import (
    count_rows,
    count_valid,
    max_update,
    min_update,
    sum_update,
)
from executor.kernels.hash_table import GroupTable, StringDict, hash_rows, hash_strings
from executor.operator import ExecContext
from planner.logical import LogicalAggregate, LogicalValues
from sql.binder.expressions import AggregateCall, ColumnRef
from storage.batch import Batch, Column
from storage.types import BIGINT, DOUBLE, INT, STRING, decimal

small_ints = st.lists(st.integers(-5, 5), max_size=200)


def _str_column(values: list[str]) -> Column:
    return Column.from_physical(STRING, values)


# ---- hash table kernels ---------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-2**63, 2**63 - 1)
                          | st.sampled_from([0, 1])), max_size=300),
       st.integers(1, 50))
def test_group_table_matches_first_seen_reference(rows: list[tuple[int, int]], chunk: int) -> None:
    table = GroupTable(2)
    got: list[int] = []
    firsts: list[int] = []
    for start in range(0, len(rows), chunk):
        part = np.array(rows[start: start + chunk], np.int64).reshape(-1, 2)
        gids, first = table.insert(part)
        got.extend(gids.tolist())
        firsts.extend((start + first).tolist())
    # numpy reference: group ids = order of first appearance of each distinct row
    ref_ids: dict[tuple[int, int], int] = {}
    ref_first: list[int] = []
    for i, r in enumerate(rows):
        if r not in ref_ids:
            ref_ids[r] = len(ref_ids)
            ref_first.append(i)
    assert got == [ref_ids[r] for r in rows]
    assert firsts == ref_first
    assert table.count == len(ref_ids)
    if rows:
        uniq = np.unique(np.array(rows, np.int64).reshape(-1, 2), axis=0)
        assert len(uniq) == table.count


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab\x00é", max_size=5), max_size=200), st.integers(1, 40))
def test_string_dict_matches_reference(values: list[str], chunk: int) -> None:
    d = StringDict()
    got: list[int] = []
    for start in range(0, len(values), chunk):
        col = _str_column(values[start: start + chunk])
        got.extend(d.codes(col.offsets, col.data).tolist())
    ref: dict[str, int] = {}
    assert got == [ref.setdefault(v, len(ref)) for v in values]
    assert d.count == len(set(values))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=6), min_size=1, max_size=50))
def test_hash_strings_equal_for_equal_bytes(values: list[str]) -> None:
    col = _str_column(values)
    h = hash_strings(col.offsets, col.data)
    # slicing (non-zero first offset) does not change a string's hash
    sliced = col.slice(1, len(values)) if len(values) > 1 else col
    hs = hash_strings(sliced.offsets, sliced.data)
    assert np.array_equal(hs, h[len(values) - len(hs):])
    by_value: dict[str, int] = {}
    for v, x in zip(values, h.tolist()):
        assert by_value.setdefault(v, x) == x


def test_hash_rows_is_deterministic_and_spreads() -> None:
    keys = np.arange(10000, dtype=np.int64).reshape(-1, 2)
    h = hash_rows(keys)
    assert np.array_equal(h, hash_rows(keys.copy()))
    assert len(np.unique(h)) == len(h)
    assert len(np.unique(h & np.uint64(1023))) > 900  # low bits (slot index) are well mixed


# ---- aggregate kernels ----------------------------------------------------------------------
group_rows = st.integers(1, 8).flatmap(lambda g: st.tuples(
    st.just(g), st.lists(st.tuples(st.integers(0, g - 1), st.integers(-1000, 1000),
                                   st.booleans()), max_size=200)))


@settings(max_examples=80, deadline=None)
@given(group_rows)
def test_count_and_sum_kernels_match_numpy(case: tuple[int, list[tuple[int, int, bool]]]) -> None:
    g, rows = case
    gids = np.array([r[0] for r in rows], np.int64)
    vals = np.array([r[1] for r in rows], np.int64)
    valid = np.array([r[2] for r in rows], np.bool_)
    counts = np.zeros(g, np.int64)
    count_rows(gids, counts)
    assert np.array_equal(counts, np.bincount(gids, minlength=g))
    counts = np.zeros(g, np.int64)
    count_valid(gids, valid, counts)
    assert np.array_equal(counts, np.bincount(gids[valid], minlength=g))
    for dtype in (np.int64, np.float64):
        sums, has = np.zeros(g, dtype), np.zeros(g, np.bool_)
        sum_update(gids, vals.astype(dtype), valid, sums, has)
        ref = np.zeros(g, dtype)
        np.add.at(ref, gids[valid], vals[valid].astype(dtype))
        assert np.array_equal(sums, ref)
        assert np.array_equal(has, np.bincount(gids[valid], minlength=g) > 0)


@settings(max_examples=80, deadline=None)
@given(group_rows, st.sampled_from([np.int32, np.int64, np.float64, np.float32]))
def test_min_max_kernels_match_numpy(case: tuple[int, list[tuple[int, int, bool]]],
                                     dtype: type) -> None:
    g, rows = case
    gids = np.array([r[0] for r in rows], np.int64)
    vals = np.array([r[1] for r in rows], dtype)
    valid = np.array([r[2] for r in rows], np.bool_)
    for kernel, ufunc in ((min_update, np.minimum), (max_update, np.maximum)):
        out, has = np.zeros(g, dtype), np.zeros(g, np.bool_)
        kernel(gids, vals, valid, out, has)
        ref_has = np.bincount(gids[valid], minlength=g) > 0
        init = np.iinfo(dtype) if np.dtype(dtype).kind == "i" else np.finfo(dtype)
        ref = np.full(g, init.max if ufunc is np.minimum else init.min, dtype)
        ufunc.at(ref, gids[valid], vals[valid])
        assert np.array_equal(has, ref_has)
        assert np.array_equal(out[has], ref[has])


def test_min_max_nan_wins_like_numpy() -> None:
    gids = np.zeros(3, np.int64)
    vals = np.array([1.0, np.nan, 0.5])
    for kernel in (min_update, max_update):
        out, has = np.zeros(1), np.zeros(1, np.bool_)
        kernel(gids, vals, np.ones(3, np.bool_), out, has)
        assert np.isnan(out[0])


# ---- the operator: kernel path == numpy path ------------------------------------------------


K, S, V, M, I = (ColumnRef("k", BIGINT), ColumnRef("s", STRING), ColumnRef("v", DOUBLE),
                 ColumnRef("m", decimal(10, 2)), ColumnRef("i", INT))
AGGS = (
    ("c", AggregateCall("count", (), False, BIGINT)),
    ("cs", AggregateCall("count", (S,), False, BIGINT)),
    ("sv", AggregateCall("sum", (V,), False, DOUBLE)),
    ("sm", AggregateCall("sum", (M,), False, decimal(38, 2))),
    ("si", AggregateCall("sum", (I,), False, BIGINT)),
    ("mn", AggregateCall("min", (M,), False, decimal(10, 2))),
    ("mx", AggregateCall("max", (V,), False, DOUBLE)),
    ("xi", AggregateCall("max", (I,), False, INT)),
    ("am", AggregateCall("avg", (M,), False, decimal(38, 4))),
    ("ai", AggregateCall("avg", (I,), False, DOUBLE)),
)


def _batches(n: int, seed: int, size: int) -> list[Batch]:
    rng = random.Random(seed)
    rows = [(rng.choice([None, 1, 2, 3, -5, 2**40]), rng.choice([None, "a", "b", "", "bb", "é"]),
             rng.choice([None, 0.5, -0.0, 0.0, 2.25]), rng.choice([None, rng.randint(-999, 999)]),
             rng.choice([None, rng.randint(-2**31, 2**31 - 1)])) for _ in range(n)]
    out = []
    for i in range(0, n, size):
        c = rows[i: i + size]
        out.append(Batch(("k", "s", "v", "m", "i"), (
            Column.from_physical(BIGINT, [r[0] for r in c]),
            Column.from_physical(STRING, [r[1] for r in c]),
            Column.from_physical(DOUBLE, [r[2] for r in c]),
            Column.from_physical(decimal(10, 2), [r[3] for r in c]),
            Column.from_physical(INT, [r[4] for r in c]))))
    return out


def _run(batches: list[Batch], group_by: tuple, kernels: bool,  # type: ignore[type-arg]
         monkeypatch: pytest.MonkeyPatch) -> list[tuple]:  # type: ignore[type-arg]
    monkeypatch.setattr(hash_aggregate_module, "kernel_supported", lambda plan: kernels)
    plan = LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), group_by, AGGS)
    op = HashAggregate(plan, BatchesSource(batches))
    assert (op._grouped is not None) == kernels
    op.open(ExecContext(cancel=threading.Event()))
    rows = [r for b in op.batches() for r in b.rows()]
    op.close()
    return rows


@pytest.mark.parametrize("group_by", [(), (("gk", K),), (("gs", S), ("gk", K)),
                                      (("gv", V),), (("gi", I), ("gs", S))])
@pytest.mark.parametrize("size", [1, 13, 4096])
def test_kernel_path_equals_numpy_path(group_by: tuple, size: int,  # type: ignore[type-arg]
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    plan = LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), group_by, AGGS)
    assert kernel_supported(plan)
    batches = _batches(500, size, size)
    assert _run(batches, group_by, True, monkeypatch) == _run(batches, group_by, False,
                                                              monkeypatch)
    assert _run([], group_by, True, monkeypatch) == _run([], group_by, False, monkeypatch)


def test_combine_of_twins_equals_one_state() -> None:
    group_by = (("gs", S), ("gk", K))
    plan = LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), group_by, AGGS)
    batches = _batches(400, 7, 50)

    def sink_all(state: GroupedState, parts: list[Batch]) -> None:
        for b in parts:
            keys = [b.column(e.name) for _, e in group_by]
            args = [b.column(a.args[0].name) if a.args else None for _, a in AGGS]
            state.sink(keys, args, b.num_rows)

    one, left, right = GroupedState(plan), GroupedState(plan), GroupedState(plan)
    sink_all(one, batches)
    sink_all(left, batches[::2])
    sink_all(right, batches[1::2])
    left.combine(right)
    a, b = one.finalize(), left.finalize()
    assert a is not None and b is not None
    assert [c.to_pylist() for c in a] == [c.to_pylist() for c in b]


def test_int_sum_switches_to_exact_python_ints_on_overflow() -> None:
    big = Column.from_physical(BIGINT, [2**62, 2**62, 2**62, -1])
    keys = Column.from_physical(BIGINT, [1, 1, 1, 2])
    plan = LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), (("gk", K),),
                            (("s", AggregateCall("sum", (K,), False, decimal(38, 0))),))
    state = GroupedState(plan)
    for _ in range(2):
        state.sink([keys], [big], 4)
    out = state.finalize()
    assert out is not None
    assert out[1].to_pylist() == [6 * 2**62, -2]
