"""Kernel-backed GROUP BY state: a persistent hash table of group keys plus per-group states.

`GroupedState` is what `HashAggregate` sinks into when every key and aggregate fits the numba
kernels (executor/kernels/): keys of fixed-width types or strings, and COUNT / SUM / MIN / MAX /
AVG (not DISTINCT) over fixed-width numeric arguments. Each batch's key columns become an int64
key matrix (strings interned to codes, floats by canonical bits, one validity column per key),
the `GroupTable` gives a global group id per row, and the update kernels fold the arguments
into state arrays indexed by group id (the fused path, executor/fused_aggregate.py, takes
the group ids from `batch_group_ids`, which hashes only one row per dense key combination,
and merges its accumulators with `merge_aligned`). `combine` merges a twin's state (parallel partial
aggregation). `finalize` converts the states into the layout of the registered aggregate
functions (sql/functions/aggregate.py) and calls their `final`, so results and types are those
of the numpy path; groups come out ordered by key, like that path.
Object-dtype values (LARGEINT, DECIMAL wider than 18 digits) and other aggregates stay on the
numpy path. Upstream: DuckDB `GroupedAggregateHashTable`, Doris `AggregationNode`.
"""

from __future__ import annotations

import numpy as np

from executor.kernels.aggregates import (
    count_rows,
    count_valid,
    max_update,
    min_update,
    sum_update,
)
from executor.kernels.fused_aggregate import first_rows
from executor.kernels.hash_table import GroupTable, StringDict
from executor.keys import group_codes
from executor.memory import column_bytes
from planner.aggregate_phase import AggregateExprs, kernel_state_supported, numpy_kind
from sql.functions import State, aggregate_function
from sql.functions.aggregate import group_reduce
from sql.functions.vector import wide_objects
from storage.batch import Batch, Column, DictColumn
from storage.types import BIGINT, DOUBLE, LARGEINT, DataType

_OBJ = np.dtype(object)
_EXACT_LIMIT = 2.0 ** 62  # int64 sums switch to Python ints beyond this bound
_MAX_REMAPS = 256  # dictionaries remembered per key (one per segment scanned, typically)
# A DictColumn key gets a lookup array from its dictionary once a batch has this many rows per
# dictionary entry: smaller batches (a selective scan's one batch per segment) intern their
# rows' strings directly, which takes fewer steps than building the array.
_ROWS_PER_ENTRY = 8
# The fused path looks groups up by dense key combination while they number at most
# max(batch rows, this): the lookup array then costs no more than a pass over the rows.
_DENSE_MIN = 4096
# which aggregates this state runs is part of the plan (it decides aggregate phases)
kernel_supported = kernel_state_supported


def _state_suffixes(name: str) -> tuple[str, ...]:
    return {"count": ("count",), "sum": ("sum",), "avg": ("sum", "count"),
            "min": ("value",), "max": ("value",)}[name]


def state_names(plan: AggregateExprs) -> tuple[str, ...]:
    """Column names of a serialized partial state (GroupedState.to_batch): the group keys
    under their output names (the exchange hashes them), then `<aggregate>.<part>`."""
    names = [n for n, _ in plan.group_by]
    for n, a in plan.aggregates:
        names.extend(f"{n}.{part}" for part in _state_suffixes(a.name))
    return tuple(names)


def _zeros_like_grown(arr: np.ndarray, need: int) -> np.ndarray:
    if len(arr) >= need:
        return arr
    out = np.zeros(max(need, 2 * len(arr), 16), arr.dtype)
    if arr.dtype == _OBJ:
        out[:] = 0
    out[: len(arr)] = arr
    return out


def _ones(n: int) -> np.ndarray:
    return np.ones(n, np.bool_)


class _Sum:
    """Per-group sum with a `has` mask: int64 while exact, Python ints beyond, or float64.

    Integer sums keep `bound`, an upper bound of any |partial sum| in `sums`. When a batch would
    take it past 2^62, the int64 sums are first spilled into `spill` (exact Python ints per
    group) and restarted from zero, so long wide-DECIMAL sums stay on the int64 kernel; only a
    batch whose own bound is too large (or Python-int input) turns `sums` into objects.
    The exact per-group sum is `sums + spill` (`total`).
    """

    def __init__(self, is_float: bool) -> None:
        self.sums = np.zeros(16, np.float64 if is_float else np.int64)
        self.has = np.zeros(16, np.bool_)
        self.bound = 0.0  # upper bound of any |partial sum| so far (ints only)
        self.spill: np.ndarray | None = None  # object array of spilled int64 sums

    def grow(self, groups: int) -> None:
        self.sums = _zeros_like_grown(self.sums, groups)
        self.has = _zeros_like_grown(self.has, groups)
        if self.spill is not None:
            self.spill = _zeros_like_grown(self.spill, groups)

    def _to_object(self) -> None:
        self.sums = wide_objects(self.sums)
        if self.spill is not None:
            n = min(len(self.spill), len(self.sums))
            self.sums[:n] = self.sums[:n] + self.spill[:n]
            self.spill = None

    def _spill(self) -> None:
        spill = self.spill if self.spill is not None else np.zeros(0, _OBJ)
        spill = _zeros_like_grown(spill, len(self.sums))
        n = len(self.sums)
        spill[:n] = spill[:n] + wide_objects(self.sums)
        self.spill = spill
        self.sums = np.zeros(len(self.sums), np.int64)
        self.bound = 0.0

    def total(self, n: int) -> np.ndarray:
        """The exact sums of the first n groups (object dtype once anything spilled)."""
        if self.spill is None:
            return self.sums[:n]
        return wide_objects(self.sums[:n]) + self.spill[:n]

    def update(self, gids: np.ndarray, values: np.ndarray, valid: np.ndarray, groups: int,
               bound: float) -> None:
        if self.sums.dtype.kind == "i":
            if self.bound + bound >= _EXACT_LIMIT and bound < _EXACT_LIMIT:
                self._spill()
            self.bound += bound
            if self.bound >= _EXACT_LIMIT:
                self._to_object()
        if self.sums.dtype == _OBJ:
            vals = values[valid]
            if vals.dtype != _OBJ:
                vals = wide_objects(vals)
            part, has = group_reduce(vals, gids[valid], groups, np.add)
            self.sums[:groups] = self.sums[:groups] + part
            self.has[:groups] |= has
            return
        sum_update(gids, values, valid, self.sums, self.has)

    def update_values(self, gids: np.ndarray, values: np.ndarray, valid: np.ndarray,
                      groups: int) -> None:
        """Fold raw argument values (already in the sum's dtype)."""
        bound = 0.0
        if values.dtype == _OBJ:
            if self.sums.dtype.kind == "i":
                self._to_object()
            self.bound = _EXACT_LIMIT
        elif values.dtype.kind == "i" and len(values):
            bound = float(np.abs(values.astype(np.float64)).max()) * len(values)
        self.update(gids, values, valid, groups, bound)

    def merge(self, gids: np.ndarray, other: _Sum, n: int, groups: int) -> None:
        if other.spill is not None and other.sums.dtype.kind == "i":
            # the other's int64 part merges as usual, its spilled part into our spill
            if self.sums.dtype.kind == "i":
                part, _ = group_reduce(other.spill[:n], gids, groups, np.add)
                if self.spill is None:
                    self.spill = np.zeros(len(self.sums), _OBJ)
                self.spill = _zeros_like_grown(self.spill, groups)
                self.spill[:groups] = self.spill[:groups] + part
            else:
                part, _ = group_reduce(other.spill[:n], gids, groups, np.add)
                self.sums[:groups] = self.sums[:groups] + part
        vals = other.sums[:n]
        if self.sums.dtype == _OBJ or vals.dtype == _OBJ:
            if self.sums.dtype != _OBJ:
                self._to_object()
            self.bound = _EXACT_LIMIT
        self.update(gids, vals, other.has[:n], groups, other.bound)

    def nbytes(self) -> int:
        spill = 0 if self.spill is None else 8 * len(self.spill)
        return int(self.sums.nbytes + self.has.nbytes + spill)

    def taken(self, idx: np.ndarray) -> _Sum:
        out = _Sum(self.sums.dtype.kind == "f")
        out.sums, out.has, out.bound = self.sums[idx], self.has[idx], self.bound
        out.spill = None if self.spill is None else self.spill[idx]
        return out


class _Agg:
    """The kernel state of one aggregate call."""

    def __init__(self, name: str, arg_type: DataType | None) -> None:
        self.name = name
        self.arg_type = arg_type
        self.counts = np.zeros(16, np.int64)
        self.sum: _Sum | None = None
        self.vals = np.zeros(0)
        self.has = np.zeros(16, np.bool_)
        if name in ("sum", "avg"):
            assert arg_type is not None
            self.sum = _Sum(arg_type.is_float or numpy_kind(arg_type) == "f")
        if name in ("min", "max"):
            assert arg_type is not None
            self.vals = np.zeros(16, arg_type.numpy_dtype)

    def grow(self, groups: int) -> None:
        self.counts = _zeros_like_grown(self.counts, groups)
        self.has = _zeros_like_grown(self.has, groups)
        if self.sum is not None:
            self.sum.grow(groups)
        if self.name in ("min", "max"):
            self.vals = _zeros_like_grown(self.vals, groups)

    def update(self, gids: np.ndarray, arg: Column | None, groups: int) -> None:
        if self.name == "count":
            if arg is None or arg.validity is None:
                count_rows(gids, self.counts)
            else:
                count_valid(gids, arg.validity, self.counts)
            return
        assert arg is not None
        valid = arg.validity if arg.validity is not None else _ones(len(gids))
        if self.sum is not None:
            if arg.data.dtype == _OBJ:  # wide DECIMAL values beyond int64: exact objects
                vals = arg.data
            else:
                vals = arg.data.astype(self.sum.sums.dtype if self.sum.sums.dtype != _OBJ
                                       else np.int64, copy=False)
            self.sum.update_values(gids, vals, valid, groups)
            if self.name == "avg":
                count_valid(gids, valid, self.counts)
            return
        kernel = min_update if self.name == "min" else max_update
        kernel(gids, arg.data, valid, self.vals, self.has)

    def merge(self, gids: np.ndarray, other: _Agg, n: int, groups: int) -> None:
        if self.name in ("count", "avg"):
            sum_update(gids, other.counts[:n], _ones(n), self.counts, np.zeros(groups, np.bool_))
        if self.sum is not None:
            assert other.sum is not None
            self.sum.merge(gids, other.sum, n, groups)
            return
        if self.name in ("min", "max"):
            kernel = min_update if self.name == "min" else max_update
            kernel(gids, other.vals[:n], other.has[:n], self.vals, self.has)

    def state(self, groups: int) -> State:
        """The state in the layout of the registered aggregate function."""
        if self.name == "count":
            return (self.counts[:groups],)
        if self.name in ("min", "max"):
            return self.vals[:groups], self.has[:groups]
        assert self.sum is not None and self.arg_type is not None
        sums = self.sum.total(groups)
        if self.name == "sum":
            return sums, self.sum.has[:groups]
        scale = self.arg_type.scale if self.arg_type.is_decimal else 0
        if not self.arg_type.is_decimal and sums.dtype != np.float64:
            sums = sums.astype(np.float64) if sums.dtype != _OBJ else np.array(
                [float(x) for x in sums.tolist()], np.float64)
        return sums, self.counts[:groups], np.full(groups, scale, np.int64)

    def nbytes(self) -> int:
        n = self.counts.nbytes + self.has.nbytes + self.vals.nbytes
        return int(n + (self.sum.nbytes() if self.sum is not None else 0))

    def state_columns(self, groups: int) -> list[Column]:
        """This state of the first `groups` groups as columns (state_names gives their names):
        COUNT its counts; MIN/MAX the values (NULL: no value yet); SUM the exact sums (NULL:
        no value yet; BIGINT, DOUBLE, or LARGEINT objects once wider); AVG sums and counts."""
        out: list[Column] = []
        if self.name in ("min", "max"):
            assert self.arg_type is not None
            out.append(Column(self.arg_type, self.vals[:groups].copy(),
                              self.has[:groups].copy()))
        if self.sum is not None:
            sums = self.sum.total(groups).copy()
            t = LARGEINT if sums.dtype == _OBJ else DOUBLE if sums.dtype.kind == "f" else BIGINT
            out.append(Column(t, sums, self.sum.has[:groups].copy()))
        if self.name in ("count", "avg"):
            out.append(Column(BIGINT, self.counts[:groups].copy()))
        return out

    def from_columns(self, cols: list[Column]) -> _Agg:
        """A merge source holding the state `state_columns` wrote (this agg's twin)."""
        n = len(cols[0])
        out = _Agg.__new__(_Agg)
        out.name, out.arg_type = self.name, self.arg_type
        out.counts, out.has, out.vals, out.sum = np.zeros(n, np.int64), _ones(n), self.vals, None
        rest = list(cols)
        if self.name in ("min", "max"):
            v = rest.pop(0)
            out.vals, out.has = v.data, v.validity if v.validity is not None else _ones(n)
        if self.sum is not None:
            v = rest.pop(0)
            s = _Sum(v.data.dtype.kind == "f")
            s.sums, s.has = v.data, v.validity if v.validity is not None else _ones(n)
            if v.data.dtype == _OBJ:
                s.bound = _EXACT_LIMIT
            elif v.data.dtype.kind == "i" and n:
                s.bound = float(np.abs(v.data.astype(np.float64)).max())
            out.sum = s
        if self.name in ("count", "avg"):
            out.counts = rest.pop(0).data
        return out

    def taken(self, idx: np.ndarray) -> _Agg:
        """The states of groups `idx` (in that order), as a merge source."""
        out = _Agg.__new__(_Agg)
        out.name, out.arg_type = self.name, self.arg_type
        out.counts, out.has = self.counts[idx], self.has[idx]
        out.vals = self.vals[idx] if self.name in ("min", "max") else self.vals
        out.sum = self.sum.taken(idx) if self.sum is not None else None
        return out


class GroupedState:
    """Hash table of group keys and kernel aggregate states for one aggregate (`AggregateExprs`)."""

    def __init__(self, plan: AggregateExprs) -> None:
        self.plan = plan
        nkeys = len(plan.group_by)
        self.table = GroupTable(2 * nkeys)
        self.dicts: list[StringDict | None] = [StringDict() if e.dtype.is_varlen else None
                                               for _, e in plan.group_by]
        self.aggs = [_Agg(a.name, a.args[0].dtype if a.args else None)
                     for _, a in plan.aggregates]
        # float AVG sums run in float64 whatever the argument's integer type
        for agg, (_, a) in zip(self.aggs, plan.aggregates):
            if a.name == "avg" and a.args and not a.args[0].dtype.is_decimal:
                agg.sum = _Sum(True)
        # per key: id(dictionary) -> (dictionary, each entry's code, -1 until a row used it)
        self._remaps: list[dict[int, tuple[Column, np.ndarray]]] = [{} for _ in plan.group_by]
        self.key_parts: list[list[Column]] = []
        self._key_bytes = 0
        self.rows = 0  # input rows seen (a global aggregate has one group iff rows > 0)

    @property
    def groups(self) -> int:
        return self.table.count

    def _key_matrix(self, keys: list[Column], n: int) -> np.ndarray:
        mat = np.empty((n, 2 * len(keys)), np.int64)
        for j, col in enumerate(keys):
            d = self.dicts[j]
            if isinstance(col, DictColumn) and (
                    len(col) >= _ROWS_PER_ENTRY * len(col.dictionary)
                    or id(col.dictionary) in self._remaps[j]):
                vals = self._dictionary_codes(j, col)
            elif col.offsets is not None:
                assert d is not None
                vals = d.codes(col.offsets, col.data)
            elif col.data.dtype.kind == "f":
                x = col.data.astype(np.float64) + 0.0  # -0.0 -> 0.0
                x[np.isnan(x)] = np.nan  # one canonical NaN
                vals = x.view(np.int64)
            else:
                vals = col.data.astype(np.int64, copy=False)
            if col.validity is not None:
                mat[:, 2 * j] = np.where(col.validity, vals, 0)
                mat[:, 2 * j + 1] = col.validity
            else:
                mat[:, 2 * j] = vals
                mat[:, 2 * j + 1] = 1
        return mat

    def _dictionary_codes(self, j: int, col: DictColumn) -> np.ndarray:
        """Key j's code (in this state's StringDict) of every row of a DictColumn key.

        Each dictionary (a segment's, shared by all its batches) gets a lookup array from its
        entries to their codes here, remembered by identity; an entry is interned when a row
        first uses it, so a scan keeping few rows of a large dictionary hashes only the strings
        it uses, and every later row is one integer lookup. (Used once a batch has
        `_ROWS_PER_ENTRY` rows per dictionary entry, see `_key_matrix`.)"""
        dictionary = col.dictionary
        cache = self._remaps[j]
        got = cache.get(id(dictionary))
        if got is not None and got[0] is dictionary:
            remap = got[1]
        else:
            remap = np.full(len(dictionary), -1, np.int64)
            if len(cache) >= _MAX_REMAPS:
                cache.clear()
            cache[id(dictionary)] = (dictionary, remap)  # held: its id stays unique
        codes = col.codes
        vals = remap[codes]
        unseen = vals < 0
        if unseen.any():
            used = np.zeros(len(dictionary), np.bool_)
            used[codes[unseen]] = True  # (np.unique would sort or hash every row)
            entries = np.flatnonzero(used)
            strings = DictColumn(dictionary, entries)
            d = self.dicts[j]
            assert d is not None
            remap[entries] = d.codes(strings.offsets, strings.data)
            vals = remap[codes]
        return vals

    def _group_ids(self, keys: list[Column], n: int) -> np.ndarray:
        if not keys:
            gids = np.zeros(n, np.int64)
            if n and self.table.count == 0:
                self.table.count = 1
            return gids
        gids, first = self.table.insert(self._key_matrix(keys, n))
        if len(first):
            part = [k.take(first) for k in keys]
            self.key_parts.append(part)
            self._key_bytes += sum(column_bytes(c) for c in part)
        return gids

    def batch_group_ids(self, keys: list[Column], n: int) -> np.ndarray:
        """The group id of every row of a batch's key columns (inserting new groups): what
        `sink` uses, for the fused path (executor/fused_aggregate.py), which folds the rows.

        When every key has a small dense code per row (a DictColumn's dictionary entry, a
        string's code in this state's StringDict, an integer's offset from the batch's
        minimum; NULL one more code) and their combinations number at most
        max(rows, `_DENSE_MIN`), only the first row of each combination present goes through
        the hash table; the other rows look their group up by combination (no key matrix,
        no hashing per row). Otherwise every row goes through the table."""
        self.rows += n
        dense = self._dense_codes(keys, n)
        if dense is None:
            return self._group_ids(keys, n)
        combos, size = dense
        first = first_rows(combos, size)
        present = np.flatnonzero(first >= 0)
        # in row order, so new groups are numbered as the hash table numbers them (first
        # seen first): finalize checks the groups' results (e.g. overflow) in that order
        by_row = np.argsort(first[present])
        present = present[by_row]
        reps = first[present]
        lookup = np.zeros(size, np.int64)
        lookup[present] = self._group_ids([k.take(reps) for k in keys], len(reps))
        return lookup[combos]

    def _dense_codes(self, keys: list[Column], n: int) -> tuple[np.ndarray, int] | None:
        """(combination code per row, number of combinations), or None when some key has no
        small dense code or the combinations are too many."""
        limit = max(n, _DENSE_MIN)
        parts: list[tuple[np.ndarray, int]] = []
        size = 1
        for j, col in enumerate(keys):
            valid = col.validity
            if valid is not None and valid.all():
                valid = None
            if isinstance(col, DictColumn):
                codes, card = col.codes, len(col.dictionary)
            elif col.offsets is not None:
                d = self.dicts[j]
                assert d is not None
                codes = d.codes(col.offsets, col.data)
                card = d.count
            elif col.data.dtype.kind in "ib" or (col.data.dtype.kind == "u"
                                                 and col.data.dtype.itemsize < 8):
                data = col.data
                live = data if valid is None else data[valid]
                if len(live) == 0:
                    codes, card = np.zeros(n, np.int64), 1
                else:
                    low, high = int(live.min()), int(live.max())
                    card = high - low + 1
                    if card > limit:
                        return None
                    codes = data.astype(np.int64) - low
            else:
                return None
            if valid is not None:
                codes = np.where(valid, codes, card)
                card += 1
            size *= card
            if size > limit:
                return None
            parts.append((codes, card))
        combos = np.zeros(n, np.int64)
        for codes, card in parts:
            combos *= card
            combos += codes
        return combos, size

    def sink(self, keys: list[Column], args: list[Column | None], n: int) -> None:
        """Fold one batch: its key columns and each aggregate's argument (None for COUNT(*))."""
        if n == 0:
            return
        self.rows += n
        gids = self._group_ids(keys, n)
        groups = self.groups
        for agg, arg in zip(self.aggs, args):
            agg.grow(groups)
            agg.update(gids, arg, groups)

    def combine(self, other: GroupedState) -> None:
        """Merge a twin's groups and states into this one."""
        if other.rows == 0:
            return
        self.rows += other.rows
        n = other.groups
        gids = self._group_ids(other.key_columns(), n)
        groups = self.groups
        for agg, o in zip(self.aggs, other.aggs):
            agg.grow(groups)
            agg.merge(gids, o, n, groups)

    def subset(self, idx: np.ndarray) -> GroupedState:
        """A state holding only groups `idx` (two-phase aggregation splits the partial state
        of an instance by group-key hash, one share per merging instance)."""
        out = GroupedState(self.plan)
        m = len(idx)
        if m == 0:
            return out
        keys = [k.take(idx) for k in self.key_columns()]
        gids = out._group_ids(keys, m)
        out.rows = m
        for mine, theirs in zip(out.aggs, self.aggs):
            mine.grow(m)
            mine.merge(gids, theirs.taken(idx), m, m)
        return out

    def to_batch(self) -> Batch | None:
        """The whole state as one Batch (key columns, then every aggregate's state columns,
        named by `state_names`): what an `update serialize` phase sends through an exchange.
        None when it holds no group."""
        groups = self.groups
        if groups == 0:
            return None
        cols = self.key_columns()
        for agg in self.aggs:
            cols.extend(agg.state_columns(groups))
        return Batch(state_names(self.plan), tuple(cols))

    def merge_batch(self, batch: Batch) -> None:
        """Merge a state another instance serialized with `to_batch`."""
        n = batch.num_rows
        if n == 0:
            return
        cols = list(batch.columns)
        nkeys = len(self.plan.group_by)
        self.rows += n
        self._merge_states(self._group_ids(cols[:nkeys], n), cols[nkeys:])

    def merge_aligned(self, cols: list[Column]) -> None:
        """Merge aggregate state columns (laid out as `to_batch` writes them after the keys)
        whose row g is a state of this table's group g (the fused path's accumulators)."""
        n = len(cols[0])
        if n == 0:
            return
        self.rows += n
        self._merge_states(np.arange(n, dtype=np.int64), cols)

    def _merge_states(self, gids: np.ndarray, cols: list[Column]) -> None:
        n = len(gids)
        groups = self.groups
        at = 0
        for agg in self.aggs:
            width = len(_state_suffixes(agg.name))
            agg.grow(groups)
            agg.merge(gids, agg.from_columns(cols[at: at + width]), n, groups)
            at += width

    def key_columns(self) -> list[Column]:
        nkeys = len(self.plan.group_by)
        if not self.key_parts:
            return []
        if len(self.key_parts) > 1:
            self.key_parts = [[Column.concat([p[k] for p in self.key_parts])
                               for k in range(nkeys)]]
        return list(self.key_parts[0])

    def nbytes(self) -> int:
        """Bytes held: hash table, string dictionaries, key columns and states."""
        n = self.table.nbytes + self._key_bytes + sum(a.nbytes() for a in self.aggs)
        return int(n + sum(d.nbytes for d in self.dicts if d is not None))

    def finalize(self) -> list[Column] | None:
        """Key columns then one column per aggregate, ordered by key; None when no groups."""
        groups = self.groups
        if groups == 0:
            return None
        keys = self.key_columns()
        order: np.ndarray | None = None
        if keys and groups > 1:
            rank, _, _ = group_codes(keys, groups)
            order = np.empty(groups, np.int64)
            order[rank] = np.arange(groups)
        out = [k.take(order) if order is not None else k for k in keys]
        for agg, (_, a) in zip(self.aggs, self.plan.aggregates):
            fn = aggregate_function(a.name)
            assert fn is not None
            col = fn.final(agg.state(groups), a.type).to_column().with_type(a.type)
            out.append(col.take(order) if order is not None else col)
        return out

