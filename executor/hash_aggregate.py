"""Hash aggregate operator: GROUP BY with COUNT/SUM/MIN/MAX/AVG (and DISTINCT variants).

Fast path: when every key and aggregate fits the numba kernels (`kernel_supported`), batches
are folded into a `GroupedState` (executor/grouped_state.py: open-addressing hash table of the
keys, update kernels per aggregate), whose results equal the numpy path below; when every call
is a plain numeric one, the fused path (executor/fused_aggregate.py) folds all of a batch's
calls in one nogil kernel pass instead, into accumulators that merge into that state.
Numpy path (DISTINCT, object-dtype values, BITMAP/HLL and other aggregates): two-phase, like
Doris' and DuckDB's aggregates: `sink` factorizes each batch's keys into dense codes (numpy
`np.unique`, see executor/keys.py), reduces the batch to one partial state row per group
(`AggregateFunction.partial`) and keeps the distinct group keys; `finalize` factorizes the
keys of all partials together and merges the states per final group (`merge`, then `final`).
Partials are compacted when they grow, so memory follows the number of groups, not rows.
DISTINCT aggregates keep de-duplicated (group key, value) pairs instead and aggregate them at
the end. NULL keys form their own group. Without GROUP BY there is exactly one output row, even
for empty input. Output groups come out ordered by key (a by-product of np.unique).
Upstream: Doris `AggregationNode` (streaming pre-agg + merge), DuckDB `PhysicalHashAggregate`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from executor.compile import compile_column
from executor.fused_aggregate import FusedGlobalAggregate, FusedGroupedAggregate
from executor.grouped_state import GroupedState, kernel_supported
from executor.keys import column_codes, group_codes
from executor.memory import column_bytes
from executor.operator import ExecContext, Operator, SinkOperator, chunks
from planner.aggregate_phase import AggregateExprs
from sql.functions import AggregateFunction, State, aggregate_function
from sql.functions.vector import Vec
from storage.batch import Batch, Column

_COMPACT_ROWS = 1 << 20


_COMPACT_ARG_AGGS = frozenset({"sum", "avg"})  # aggregates whose kernels take compact args


@dataclass
class _Partial:
    keys: list[Column]  # one row per group of this partial
    states: list[State]  # per non-distinct aggregate
    groups: int


@dataclass
class _DistinctRows:
    keys: list[Column]  # one row per distinct (group, value) pair
    values: Column


class HashAggregate(SinkOperator):
    def __init__(self, plan: AggregateExprs, child: Operator) -> None:
        super().__init__(child)
        self.plan = plan
        self._fns: list[AggregateFunction] = []
        for _, a in plan.aggregates:
            fn = aggregate_function(a.name)
            assert fn is not None, a.name
            if fn.bind is not None:  # constant arguments, e.g. GROUP_CONCAT's separator
                fn = fn.bind(tuple(getattr(x, "value", None) for x in a.args[1:]))
            self._fns.append(fn)
        self._plain = [i for i, (_, a) in enumerate(plan.aggregates) if not a.distinct]
        self._distinct = [i for i, (_, a) in enumerate(plan.aggregates) if a.distinct]
        self._partials: list[_Partial] = []
        self._dist_rows: dict[int, list[_DistinctRows]] = {i: [] for i in self._distinct}
        self._partial_rows = 0
        self._compact_at = _COMPACT_ROWS
        self._partial_bytes = 0
        self._grouped: GroupedState | None = GroupedState(plan) if kernel_supported(plan) \
            else None
        # a global aggregate of plain numeric arguments folds batches in one fused kernel
        # pass (executor/fused_aggregate.py) and hands its totals to `_grouped` at the end
        self._fused = FusedGlobalAggregate.of(plan) if self._grouped is not None else None
        # with GROUP BY the same kernel folds every aggregate of a batch per group id
        self._fused_grouped = FusedGroupedAggregate.of(plan) if self._grouped is not None \
            else None

    def open(self, ctx: ExecContext) -> None:
        super().open(ctx)
        self._key_fns = [compile_column(e, ctx.cancel) for _, e in self.plan.group_by]
        # SUM/AVG kernels take wide DECIMAL arithmetic results as exact int64 when they fit
        kernel = self._grouped is not None
        self._arg_fns = [compile_column(a.args[0], ctx.cancel,
                                        compact=kernel and a.name in _COMPACT_ARG_AGGS)
                         if a.args else None
                         for _, a in self.plan.aggregates]

    # ---- sink ------------------------------------------------------------------------------
    def flush_fused(self) -> None:
        """Hand the fused path's totals to the grouped state (before it is read or merged)."""
        if self._fused is not None:
            assert self._grouped is not None
            self._fused.flush_into(self._grouped)
        if self._fused_grouped is not None:
            assert self._grouped is not None
            self._fused_grouped.flush_into(self._grouped)

    def sink(self, batch: Batch) -> None:
        if self._fused is not None and self._fused.sink(batch):
            return  # else (an int64 bound was reached) the batch takes the general path
        n = batch.num_rows
        keys = [fn(batch) for fn in self._key_fns]
        fused = self._fused_grouped
        if fused is not None and n:
            assert self._grouped is not None
            done = fused.sink(self._grouped, keys, batch)
            if done == n:
                self.ctx.memory.set(self, "HashAggregate",
                                    self._grouped.nbytes() + fused.nbytes())
                return
            # an int64 bound was reached: the rest of this batch and every later one take the
            # general path, after the accumulators (so float sums stay in row order)
            fused.flush_into(self._grouped)
            self._fused_grouped = None
            batch = batch.slice(done, n)
            keys = [k.slice(done, n) for k in keys]
            n = batch.num_rows
        if self._grouped is not None:
            args = [fn(batch) if fn is not None else None for fn in self._arg_fns]
            self._grouped.sink(keys, args, n)
            self.ctx.memory.set(self, "HashAggregate", self._grouped.nbytes())
            return
        codes, groups, first = group_codes(keys, n)
        group_keys = [k.take(first) for k in keys]
        states: list[State] = []
        for i in self._plain:
            fn_arg = self._arg_fns[i]
            arg = Vec.from_column(fn_arg(batch)) if fn_arg is not None else None
            states.append(self._fns[i].partial(arg, codes, groups))
        self._partials.append(_Partial(group_keys, states, groups))
        for i in self._distinct:
            fn_arg = self._arg_fns[i]
            assert fn_arg is not None
            values = fn_arg(batch)
            self._dist_rows[i].append(_dedupe(keys, values, codes, groups))
        self._partial_rows += groups
        self._partial_bytes += _partial_bytes(self._partials[-1])
        for i in self._distinct:
            self._partial_bytes += _partial_bytes(self._dist_rows[i][-1])
        if self._partial_rows >= self._compact_at and len(self._partials) > 1:
            self._compact()
        self.ctx.memory.set(self, "HashAggregate", self._partial_bytes)

    def combine(self, other: SinkOperator) -> None:
        assert isinstance(other, HashAggregate)
        if self._grouped is not None:
            assert other._grouped is not None
            self.flush_fused()
            other.flush_fused()
            self._grouped.combine(other._grouped)
            return
        self._partials.extend(other._partials)
        for i in self._distinct:
            self._dist_rows[i].extend(other._dist_rows[i])
        self._partial_rows += other._partial_rows

    def _merged(self) -> tuple[list[Column], list[State], int, np.ndarray, int]:
        """Merge all partials: (group key columns, merged states, group count, key codes of
        the concatenated partial keys, number of partial rows)."""
        nkeys = len(self.plan.group_by)
        keys = [Column.concat([p.keys[k] for p in self._partials]) for k in range(nkeys)]
        rows = sum(p.groups for p in self._partials)
        codes, groups, first = group_codes(keys, rows)
        merged: list[State] = []
        for j, i in enumerate(self._plain):
            parts = [p.states[j] for p in self._partials]
            state = tuple(_concat([s[c] for s in parts]) for c in range(len(parts[0])))
            merged.append(self._fns[i].merge(state, codes, groups))
        return [k.take(first) for k in keys], merged, groups, codes, rows

    def _compact(self) -> None:
        keys, merged, groups, _, _ = self._merged()
        self._partials = [_Partial(keys, merged, groups)]
        self._partial_rows = groups
        self._partial_bytes = _partial_bytes(self._partials[0]) + sum(
            _partial_bytes(d) for i in self._distinct for d in self._dist_rows[i])
        self._compact_at = max(_COMPACT_ROWS, 2 * groups)

    # ---- finalize --------------------------------------------------------------------------
    def finalize(self) -> Iterator[Batch]:
        plan = self.plan
        names = tuple(n for n, _ in plan.group_by) + tuple(n for n, _ in plan.aggregates)
        if self._grouped is not None:
            self.flush_fused()
            cols = self._grouped.finalize()
            if cols is not None:
                yield from chunks(Batch(names, tuple(cols)), self.ctx.batch_size)
                return
        if not self._partials:
            if plan.group_by:
                return
            cols = []
            for (_, a), fn in zip(plan.aggregates, self._fns):
                arg_t = a.args[0].dtype if a.args else a.type
                assert fn.empty is not None
                cols.append(fn.final(fn.empty(1, arg_t), a.type).to_column().with_type(a.type))
            yield Batch(names, tuple(cols))
            return
        key_cols, merged, groups, _, _ = self._merged()
        out: list[Column] = list(key_cols)
        by_index: dict[int, Column] = {}
        for j, i in enumerate(self._plain):
            a = plan.aggregates[i][1]
            by_index[i] = self._fns[i].final(merged[j], a.type).to_column().with_type(a.type)
        for i in self._distinct:
            by_index[i] = self._final_distinct(i, key_cols, groups)
        out.extend(by_index[i] for i in range(len(plan.aggregates)))
        yield from chunks(Batch(names, tuple(out)), self.ctx.batch_size)

    def _final_distinct(self, i: int, key_cols: list[Column], groups: int) -> Column:
        a = self.plan.aggregates[i][1]
        fn = self._fns[i]
        parts = self._dist_rows[i]
        nkeys = len(key_cols)
        # final group ids of the distinct rows: factorize them together with the final keys
        all_keys = [Column.concat([key_cols[k]] + [p.keys[k] for p in parts])
                    for k in range(nkeys)]
        values = Column.concat([p.values for p in parts])
        total = groups + len(values)
        if nkeys:
            codes, ncodes, _ = group_codes(all_keys, total)
            # every distinct row's key is one of the final keys (the first `groups` rows):
            # map the joint codes back to final group ids
            mapping = np.zeros(ncodes, np.int64)
            mapping[codes[:groups]] = np.arange(groups)
            row_codes = mapping[codes[groups:]]
        else:
            row_codes = np.zeros(len(values), np.int64)
        d = _dedupe_codes(values, row_codes, groups)
        vals = values.take(d)
        state = fn.partial(Vec.from_column(vals), row_codes[d], groups)
        return fn.final(state, a.type).to_column().with_type(a.type)

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.memory.release(self)
        super().close()


def _partial_bytes(part: _Partial | _DistinctRows) -> int:
    """Approximate bytes held by one partial (object arrays counted at 8 bytes a value)."""
    cols = list(part.keys) + ([part.values] if isinstance(part, _DistinctRows) else [])
    n = sum(column_bytes(c) for c in cols)
    if isinstance(part, _Partial):
        n += sum(a.nbytes for st in part.states for a in st)
    return int(n)


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    if len(arrays) == 1:
        return arrays[0]
    if any(a.dtype == np.dtype(object) for a in arrays):
        out = np.empty(sum(len(a) for a in arrays), dtype=object)
        pos = 0
        for a in arrays:
            out[pos: pos + len(a)] = a
            pos += len(a)
        return out
    return np.concatenate(arrays)


def _dedupe_codes(values: Column, codes: np.ndarray, groups: int) -> np.ndarray:
    """Row indices of the first occurrence of each distinct non-NULL (group, value) pair."""
    vcodes, card = column_codes(values)
    pair = codes * card + vcodes
    _, first = np.unique(pair, return_index=True)
    first = np.sort(first)
    if values.validity is not None:
        first = first[values.validity[first]]
    return first


def _dedupe(keys: list[Column], values: Column, codes: np.ndarray, groups: int) -> _DistinctRows:
    idx = _dedupe_codes(values, codes, groups)
    return _DistinctRows([k.take(idx) for k in keys], values.take(idx))
