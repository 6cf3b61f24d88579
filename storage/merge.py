"""Row merging per data model: the rules shared by the memtable and merge-on-read.

Rows with equal keys combine by the table's data model (DORIS_REFERENCE.md b.1):
- AGGREGATE KEY: each value column by its aggregation type. SUM, MAX and MIN ignore NULLs (a
  group of only NULLs stays NULL); REPLACE takes the latest row's value even when it is NULL;
  REPLACE_IF_NOT_NULL the latest non-NULL value; BITMAP_UNION / HLL_UNION the set union.
- UNIQUE KEY: the latest row wins as a whole; with `function_column.sequence_col` the row with
  the largest sequence value wins (ties: the latest; a NULL sequence loses to any value).
- DUPLICATE KEY: nothing merges.
"Latest" is load order inside one load (memtable) and version order across rowsets (reader).

`combine` sorts a batch by key (+ sequence + arrival order), finds group boundaries and reduces
each group with numpy (`ufunc.reduceat`); only BITMAP/HLL unions loop per group in Python.
`merge_runs` merges sorted, key-unique runs (one per memtable flush: a rowset, or a segment of
an OVERLAPPING rowset; in version then flush order) as a stream: each step takes from every run
the rows up to the smallest "last buffered key" of the runs that can still produce rows, so
memory stays around two batches per run (one read ahead) and output comes out key-sorted; runs
that fit in one batch all merge in a single step.
Upstream: Doris BE `MemTable::_aggregate`, `BlockReader` / `VCollectIterator` (merge-on-read),
`vertical_merge` of unique keys with a sequence column.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage import bitmap, hll
from storage.batch import Batch, Column, DictColumn
from storage.catalog.meta import AggType, KeysType, MaterializedIndexMeta, TableMeta
from storage.catalog.mv import index_table
from storage.overflow import check_wide_values

SEQUENCE_PROPERTY = "function_column.sequence_col"
_OBJ = np.dtype(object)


@dataclass(frozen=True)
class MergeSpec:
    """How rows of one materialized index merge: sort keys, value rules, sequence column."""

    keys_type: KeysType
    keys: tuple[str, ...]
    rules: dict[str, AggType] = field(default_factory=dict)  # value column -> aggregation
    sequence: str | None = None  # UNIQUE sequence column (a name in the batch), if any

    @property
    def merges(self) -> bool:
        return self.keys_type is not KeysType.DUP_KEYS

    @staticmethod
    def of(table: TableMeta, index: MaterializedIndexMeta) -> MergeSpec:
        table = index_table(table, index)  # a materialized view merges by its own schema
        keys = tuple(index.keys)
        key_set = {k.lower() for k in keys}
        rules: dict[str, AggType] = {}
        if table.keys_type is not KeysType.DUP_KEYS:
            for name in index.columns:
                if name.lower() in key_set:
                    continue
                agg = table.column(name).agg_type if table.keys_type is KeysType.AGG_KEYS else None
                # UNIQUE is AGG with every value column REPLACE (seed 004)
                rules[name] = agg if agg not in (None, AggType.NONE) else AggType.REPLACE
        sequence = None
        seq_prop = table.property(SEQUENCE_PROPERTY)
        if table.keys_type is KeysType.UNIQUE_KEYS and seq_prop:
            by_lower = {c.lower(): c for c in index.columns}
            # A rollup without the sequence column falls back to load/version order (gap).
            sequence = by_lower.get(seq_prop.lower())
        return MergeSpec(table.keys_type, keys, rules, sequence)

    def columns_needed(self) -> tuple[str, ...]:
        """Columns a merge must read besides the requested ones."""
        return self.keys + ((self.sequence,) if self.sequence else ())


# ---- sorting and grouping -----------------------------------------------------------------
def _blobs(col: Column) -> np.ndarray:
    """Var-len cells as an object array of bytes (memcmp order = UTF-8 code point order)."""
    assert col.offsets is not None
    buf = col.data.tobytes()
    offs = col.offsets.tolist()
    out = np.empty(len(col), dtype=object)
    out[:] = [buf[offs[i]: offs[i + 1]] for i in range(len(col))]
    return out


def string_ranks(col: Column) -> np.ndarray:
    """Dense ranks (int64, 0 = smallest) of a var-len column's cells in byte (memcmp) order,
    computed in Arrow: hash the cells into a dictionary, rank the (few) distinct values, and
    map each row to its value's rank. Equal to `np.unique(_blobs(col), return_inverse=True)`'s
    inverse without a Python `bytes` per cell, which made merge-on-read and compaction of
    string keys (sync materialized views over SSB-flat) spend most of their time in np.unique."""
    assert col.offsets is not None
    n = len(col)
    if n == 0:
        return np.zeros(0, np.int64)
    offsets = np.ascontiguousarray(col.offsets, dtype=np.int64)
    data = np.ascontiguousarray(col.data, dtype=np.uint8)
    arr = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    encoded = pc.dictionary_encode(arr)
    # pc.rank is 1-based; binary values compare bytewise (memcmp order)
    value_rank = pc.rank(encoded.dictionary, sort_keys="ascending", tiebreaker="dense")
    rank_of = value_rank.to_numpy().astype(np.int64) - 1
    return rank_of[encoded.indices.to_numpy(zero_copy_only=False)]


def sortable(col: Column) -> tuple[np.ndarray, np.ndarray]:
    """(valid, values) arrays whose lexicographic order is the column's storage order: NULL
    first, values under NULL zeroed so NULLs tie. A dictionary-coded string column sorts by its
    codes (its dictionary is sorted, so codes order like the strings); other strings become
    dense ranks in byte order (`string_ranks`), Python-int columns dense ranks (np.unique uses
    Python comparison, so ints compare exactly)."""
    valid = col.validity if col.validity is not None else np.ones(len(col), np.bool_)
    if isinstance(col, DictColumn):
        values = col.codes.astype(np.int64, copy=False)
    elif col.offsets is not None:
        values = string_ranks(col)
    elif col.data.dtype == _OBJ:
        _, values = np.unique(col.data, return_inverse=True)
    else:
        values = col.data
    values = values.ravel()
    if col.validity is not None:
        values = np.where(valid, values, np.zeros(1, values.dtype))
    return valid, values


def sort_order(batch: Batch, keys: Sequence[str], minor: Sequence[np.ndarray] = ()
               ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Row order by `keys` then the `minor` arrays (most significant first); returns the order
    and the per-key sortable arrays (unsorted) for `group_starts`. Ties keep input order."""
    parts: list[np.ndarray] = []
    for name in keys:
        valid, values = sortable(batch.column(name))
        parts += [valid, values]
    lex = [np.arange(batch.num_rows)] + list(reversed(minor)) + list(reversed(parts))
    return np.lexsort(lex), parts


def group_starts(parts: Sequence[np.ndarray], order: np.ndarray, n: int) -> np.ndarray:
    """First row (in sorted order) of each run of equal keys."""
    if n == 0:
        return np.zeros(0, np.int64)
    new = np.zeros(n, np.bool_)
    new[0] = True
    for arr in parts:
        s = arr[order]
        new[1:] |= s[1:] != s[:-1]
    return np.flatnonzero(new)


# ---- reducing groups ----------------------------------------------------------------------
def _any_valid(valid: np.ndarray | None, starts: np.ndarray) -> np.ndarray | None:
    if valid is None:
        return None
    return np.logical_or.reduceat(valid, starts) if len(starts) else np.zeros(0, np.bool_)


def _with_validity(col: Column, valid: np.ndarray | None) -> Column:
    if valid is not None and valid.all():
        valid = None
    return Column(col.type, col.data, valid, col.offsets)


def _sum(col: Column, starts: np.ndarray) -> Column:
    data = col.data
    if col.validity is not None:
        data = np.where(col.validity, data, np.zeros(1, data.dtype))
    out = np.add.reduceat(data, starts).astype(col.data.dtype, copy=False)
    check_wide_values(col.type, out)  # Python-int sums (LARGEINT) never wrap: range-checked
    return _with_validity(Column(col.type, out), _any_valid(col.validity, starts))


def _extreme(col: Column, starts: np.ndarray, is_max: bool) -> Column:
    ufunc = np.maximum if is_max else np.minimum
    valid = col.validity
    if col.offsets is None and col.data.dtype != _OBJ:
        data = col.data
        if valid is not None:
            if data.dtype.kind == "f":
                fill = -np.inf if is_max else np.inf
            else:
                info = np.iinfo(data.dtype)
                fill = info.min if is_max else info.max
            data = np.where(valid, data, np.array(fill).astype(data.dtype))
        out = ufunc.reduceat(data, starts)
        return _with_validity(Column(col.type, out), _any_valid(valid, starts))
    # strings / Python ints: reduce dense ranks, then take a row holding the winning rank
    if col.offsets is not None:
        ranks = string_ranks(col)
        uniq, first = np.unique(ranks, return_index=True)  # ranks are 0..k-1: uniq[r] == r
    else:
        uniq, first, ranks = np.unique(col.data, return_index=True, return_inverse=True)
        ranks = ranks.ravel().astype(np.int64)
    if valid is not None:
        ranks = np.where(valid, ranks, -1 if is_max else len(uniq))
    best = ufunc.reduceat(ranks, starts)
    ok = (best >= 0) & (best < len(uniq))
    rows = first[np.clip(best, 0, len(uniq) - 1)]  # reduce_groups never sees an empty batch
    picked = col.take(rows)
    return _with_validity(Column(col.type, picked.data, None, picked.offsets), ok)


def _replace_if_not_null(col: Column, starts: np.ndarray, last: np.ndarray) -> Column:
    if col.validity is None:
        return col.take(last)
    rows = np.where(col.validity, np.arange(len(col)), -1)
    best = np.maximum.reduceat(rows, starts)
    ok = best >= 0
    picked = col.take(np.where(ok, best, last))
    return _with_validity(Column(col.type, picked.data, None, picked.offsets), ok)


def union_runs(col: Column, starts: np.ndarray, union: Callable[[Sequence[bytes]], bytes]
               ) -> Column:
    """Set union (BITMAP / HLL) per group; NULL cells are ignored, an all-NULL group is NULL."""
    blobs = _blobs(col)
    valid = col.validity
    bounds = np.append(starts, len(col)).tolist()
    out: list[bytes | None] = []
    for g in range(len(starts)):
        lo, hi = bounds[g], bounds[g + 1]
        if hi - lo == 1:  # the common case: nothing to merge
            out.append(blobs[lo] if valid is None or valid[lo] else None)
            continue
        members = [b for i, b in enumerate(blobs[lo:hi].tolist(), lo) if valid is None or valid[i]]
        out.append(union(members) if members else None)
    return Column.from_physical(col.type, out)


def reduce_groups(batch: Batch, starts: np.ndarray, spec: MergeSpec) -> Batch:
    """One row per group of a key-sorted batch (rows of a group in arrival order)."""
    n = batch.num_rows
    if len(starts) == n:
        return batch
    last = np.append(starts[1:], n) - 1
    cols: list[Column] = []
    for name, col in zip(batch.names, batch.columns):
        rule = spec.rules.get(name)
        if rule is None:  # key column: equal within the group
            cols.append(col.take(starts))
        elif rule is AggType.SUM:
            cols.append(_sum(col, starts))
        elif rule in (AggType.MAX, AggType.MIN):
            cols.append(_extreme(col, starts, rule is AggType.MAX))
        elif rule is AggType.REPLACE_IF_NOT_NULL:
            cols.append(_replace_if_not_null(col, starts, last))
        elif rule is AggType.BITMAP_UNION:
            cols.append(union_runs(col, starts, bitmap.union))
        elif rule is AggType.HLL_UNION:
            cols.append(union_runs(col, starts, hll.union))
        else:  # REPLACE (and UNIQUE values): the latest row, NULL included
            cols.append(col.take(last))
    return Batch(batch.names, tuple(cols))


def key_steps(batch: Batch, keys: Sequence[str],
              kinds: str = "biu") -> tuple[np.ndarray, np.ndarray] | None:
    """Compare each row with the next on `keys` (NULL first, as `sortable` orders): `greater`
    where row i+1 sorts after row i, `equal` where their keys are equal; None when a key is not
    fixed-width of a dtype kind in `kinds` (strings and dictionary codes would need the ranks
    `sortable` computes, the cost this O(rows) check exists to avoid). A NaN compares false both
    ways, so it is neither greater nor equal."""
    n = batch.num_rows
    greater = np.zeros(max(n - 1, 0), np.bool_)  # row i+1 > row i on the keys compared so far
    equal = np.ones(max(n - 1, 0), np.bool_)
    for name in keys:
        col = batch.column(name)
        if (isinstance(col, DictColumn) or col.offsets is not None
                or col.data.dtype.kind not in kinds):
            return None
        parts = [col.data] if col.validity is None else list(sortable(col))
        for values in parts:
            a, b = values[:-1], values[1:]
            greater |= equal & (b > a)
            equal &= b == a
    return greater, equal


def _strictly_increasing(batch: Batch, keys: Sequence[str]) -> bool:
    """Rows already in key order with no key twice: what many small loads of disjoint key
    ranges (an append-only feed) give merge-on-read. Integer keys only."""
    steps = key_steps(batch, keys)
    return steps is not None and bool(steps[0].all())


def combine(batch: Batch, spec: MergeSpec, arrival: np.ndarray | None = None) -> Batch:
    """Sort `batch` by key and merge equal keys per `spec`. `arrival` orders rows with equal
    keys (older first); default: position in the batch. DUP batches are only sorted."""
    if spec.merges and _strictly_increasing(batch, spec.keys):
        return batch  # no two rows share a key: sorting and merging change nothing
    minor: list[np.ndarray] = []
    if spec.sequence is not None:
        minor += list(sortable(batch.column(spec.sequence)))
    if arrival is not None:
        minor.append(arrival)
    order, parts = sort_order(batch, spec.keys, minor)
    if not spec.merges:
        return batch.take(order)
    starts = group_starts(parts, order, batch.num_rows)
    if len(starts) == batch.num_rows:
        return batch.take(order)
    return reduce_groups(batch.take(order), starts, spec)


# ---- streaming merge of sorted runs -------------------------------------------------------
class _KeyRows:
    """A batch's key tuples by row, for `bisect` (NULL sorts first: (False, None) < (True, v))."""

    def __init__(self, batch: Batch, keys: Sequence[str]) -> None:
        self._cols = [batch.column(k) for k in keys]
        self._n = batch.num_rows

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> tuple[object, ...]:
        out: list[object] = []
        for c in self._cols:
            if c.validity is not None and not c.validity[i]:
                out += [False, None]
            elif c.offsets is not None:
                out += [True, c.data[c.offsets[i]: c.offsets[i + 1]].tobytes()]
            else:
                v = c.data[i]
                out += [True, v.item() if isinstance(v, np.generic) else v]
        return tuple(out)


class _Run:
    """One sorted run being merged: its current batch, plus one batch read ahead, so the merge
    knows when the current batch holds the run's last rows (the run is then "closed")."""

    __slots__ = ("_ended", "_it", "_queue")

    def __init__(self, it: Iterator[Batch]) -> None:
        self._it = it
        self._queue: deque[Batch] = deque()
        self._ended = False
        self._fill()

    def _fill(self) -> None:
        while not self._ended and len(self._queue) < 2:
            nxt = next(self._it, None)
            if nxt is None:
                self._ended = True
            elif nxt.num_rows:
                self._queue.append(nxt)

    @property
    def head(self) -> Batch | None:
        return self._queue[0] if self._queue else None

    @property
    def open(self) -> bool:
        """More rows follow the current batch."""
        return len(self._queue) > 1 or not self._ended

    def advance(self, cut: int) -> None:
        """Drop the first `cut` rows of the current batch."""
        b = self._queue[0]
        if cut < b.num_rows:
            self._queue[0] = b.slice(cut, b.num_rows)
        else:
            self._queue.popleft()
            self._fill()


def merge_runs(runs: Sequence[Iterator[Batch]], spec: MergeSpec) -> Iterator[Batch]:
    """Merge key-sorted runs with unique keys (oldest first) into one key-sorted stream with
    unique keys. Every batch of every run must carry the key (and sequence) columns.

    Each step takes, from every run, the rows up to the frontier: the smallest last key of the
    current batches of the runs with more rows to come (later rows of such a run have larger
    keys, so every row of a key is in the same step). Runs are read one batch ahead, so a run
    whose current batch is its last does not hold the frontier back: many small runs (one
    batch each, a tablet with many small rowsets) merge in ONE step, one `combine` over all
    of them, instead of one step per run. Either way each key's rows meet in one `combine`, in
    run order, so the result does not depend on how runs are batched."""
    if len(runs) == 1:
        yield from runs[0]
        return
    state = [_Run(it) for it in runs]
    while True:
        live = [(i, r) for i, r in enumerate(state) if r.head is not None]
        if not live:
            return
        frontier: tuple[object, ...] | None = None
        for _, r in live:
            if r.open:
                b = r.head
                assert b is not None
                last = _KeyRows(b, spec.keys)[b.num_rows - 1]
                if frontier is None or last < frontier:
                    frontier = last
        parts: list[Batch] = []
        tags: list[np.ndarray] = []
        for i, r in live:
            b = r.head
            assert b is not None
            cut = b.num_rows if frontier is None else \
                bisect.bisect_right(_KeyRows(b, spec.keys), frontier)
            if cut:
                parts.append(b if cut == b.num_rows else b.slice(0, cut))
                tags.append(np.full(cut, i, np.int64))
                r.advance(cut)
        if len(parts) == 1:
            yield parts[0]
        else:
            yield combine(Batch.concat(parts), spec, np.concatenate(tags))

