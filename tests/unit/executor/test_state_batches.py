"""Partial aggregate states cross exchanges as Batches (GroupedState.to_batch / merge_batch):
splitting the serialized states of several instances by key hash and merging them gives
exactly what one state over all the input gives, for every kernel aggregate, NULL keys and
values, string keys, and sums that outgrow int64."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kernels import AGGS, K, S, _batches
from test_wide_decimal_fast import M, _agg_plan, wide_values

from executor.exchange import hash_instances
from executor.grouped_state import GroupedState, state_names
from planner.logical import LogicalAggregate, LogicalValues
from storage.batch import Batch, Column
from storage.types import BIGINT


def _sink(state: GroupedState, batches: list[Batch]) -> None:
    plan = state.plan
    for b in batches:
        keys = [b.column(e.name) for _, e in plan.group_by]
        args = [b.column(a.args[0].name) if a.args else None for _, a in plan.aggregates]
        state.sink(keys, args, b.num_rows)


def _through_exchange(plan: LogicalAggregate, parts: list[list[Batch]],
                      receivers: int) -> list[list[object]]:
    """Each part's state serialized, routed by key hash to `receivers` merging states; the
    finalized rows of all of them, sorted."""
    merged = [GroupedState(plan) for _ in range(receivers)]
    nkeys = len(plan.group_by)
    for part in parts:
        state = GroupedState(plan)
        _sink(state, part)
        batch = state.to_batch()
        if batch is None:
            continue
        assert isinstance(batch, Batch) and batch.names == state_names(plan)
        if not nkeys:
            merged[0].merge_batch(batch)
            continue
        target = hash_instances(list(batch.columns[:nkeys]), batch.num_rows, receivers)
        for i in range(receivers):
            merged[i].merge_batch(batch.take(np.flatnonzero(target == i)))
    rows: list[list[object]] = []
    for m in merged:
        out = m.finalize()
        if out is not None:
            rows.extend(list(r) for r in zip(*(c.to_pylist() for c in out)))
    return sorted(rows, key=repr)


def _one_state(plan: LogicalAggregate, batches: list[Batch]) -> list[list[object]]:
    state = GroupedState(plan)
    _sink(state, batches)
    out = state.finalize()
    assert out is not None
    return sorted((list(r) for r in zip(*(c.to_pylist() for c in out))), key=repr)


@pytest.mark.parametrize("group_by", [(), (("gk", K),), (("gs", S), ("gk", K))])
@pytest.mark.parametrize("receivers", [1, 3])
def test_state_batches_merge_like_one_state(group_by: tuple, receivers: int) -> None:  # type: ignore[type-arg]
    plan = LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), group_by, AGGS)
    batches = _batches(600, 11, 40)
    parts = [batches[i::4] for i in range(4)]
    assert _through_exchange(plan, parts, receivers) == _one_state(plan, batches)


def test_an_instance_without_groups_sends_nothing() -> None:
    plan = LogicalAggregate(LogicalValues(("k",), (BIGINT,), ()), (("gk", K),), AGGS)
    assert GroupedState(plan).to_batch() is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), wide_values), min_size=1, max_size=20),
                min_size=2, max_size=5))
def test_wide_sums_cross_as_exact_values(parts: list) -> None:  # type: ignore[type-arg]
    plan = _agg_plan(M)
    batches = [[Batch(("k", "m"), (Column.from_physical(BIGINT, [r[0] for r in rows]),
                                   Column.from_physical(M.type, [r[1] for r in rows])))]
               for rows in parts]
    assert _through_exchange(plan, batches, 2) == _one_state(plan, [b for p in batches
                                                                    for b in p])
