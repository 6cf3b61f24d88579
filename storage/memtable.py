"""MemTable: the rows one load sends to one tablet index, sorted and pre-aggregated.

Each load buffers its rows per (tablet, materialized index) here. `flush()` sorts them by the
index's key columns and merges rows with equal keys by the data model (`storage.merge`):
AGGREGATE tables combine value columns by their aggregation type, UNIQUE tables keep the latest
row (or the one with the largest sequence value), DUPLICATE tables keep every row in a stable
sort. Rollups of AGGREGATE tables aggregate on their own (smaller) key set with the table's
aggregation types. The result is ONE sorted run with unique keys (AGG/UNIQUE), which
`RowsetWriter` writes as segments and merge-on-read relies on. `nbytes` is what the writer
compares with `write_buffer_size` to flush a memtable before the load ends.
Rows of a DUPLICATE memtable that arrived already in key order (a file loaded in key order,
Spark's range partitions) are that sort's result as they are: checked in one pass over the keys
(`in_key_order`), they skip the sort and its copy of every value; other DUPLICATE rows with
integer keys are sorted one key at a time (`duplicate_sort_order`) instead of by np.lexsort.
Upstream: Doris BE `MemTable` (insert, `_sort`, `_aggregate`, flush, `memory_usage`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from storage.batch import Batch, DictColumn
from storage.catalog.meta import MaterializedIndexMeta, TableMeta
from storage.merge import MergeSpec, combine, key_steps

# Key dtypes compared as they are stored (numpy's comparisons order them as the sort does; a
# NaN compares false both ways and so sends the rows to the sort).
_COMPARABLE_KINDS = "biufmM"


def in_key_order(batch: Batch, keys: Sequence[str]) -> bool:
    """Whether the rows are already non-decreasing by `keys` (NULL first, as `sortable`
    orders), so a stable sort by them would keep every row in place. One vectorised pass
    over fixed-width keys; a string key answers False (its ranks cost what the sort does)."""
    steps = key_steps(batch, keys, _COMPARABLE_KINDS)
    return steps is not None and bool((steps[0] | steps[1]).all())


def duplicate_sort_order(batch: Batch, keys: Sequence[str]) -> np.ndarray | None:
    """The stable order of the rows by `keys` (ties in input order: what `combine` gives a
    DUPLICATE memtable), for integer / boolean keys without NULLs; None for other keys.

    A least-significant-key-first sort: one stable argsort per key, skipped for a key the rows
    already follow (lo_orderkey of a file loaded in order); a key spanning fewer than 65536
    values (a date within a year's partition) is sorted as uint16, which numpy radix-sorts.
    np.lexsort over (row number, valid, value) per key costs ~11 ms per 100k rows of SSB
    lineorder, ~6% of a Stream Load's CPU (docs/performance.md, branch load13).
    """
    columns = [batch.column(k) for k in keys]
    for col in columns:
        if (isinstance(col, DictColumn) or col.offsets is not None or col.validity is not None
                or col.data.dtype.kind not in "biu"):
            return None
    order: np.ndarray | None = None
    for col in reversed(columns):
        values = col.data if order is None else col.data[order]
        if values.dtype.kind == "b":
            values = values.view(np.uint8)
        if len(values) < 2 or bool((values[1:] >= values[:-1]).all()):
            continue  # already in order: a stable sort would keep every row in place
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 1 << 16:  # the difference taken in a type it cannot wrap in
            diff = values - values.dtype.type(lo) if values.dtype.kind == "u" else \
                values.astype(np.int64) - lo
            values = diff.astype(np.uint16)
        step = np.argsort(values, kind="stable")
        order = step if order is None else order[step]
    return order if order is not None else np.arange(batch.num_rows)


class MemTable:
    """Collects batches holding the index's columns (in `index.columns` order)."""

    def __init__(self, table: TableMeta, index: MaterializedIndexMeta) -> None:
        self.table = table
        self.index = index
        self.spec = MergeSpec.of(table, index)
        self._batches: list[Batch] = []
        self._rows = 0
        self._bytes = 0
        # A load may flush a memtable on a background thread while it inserts the next rows
        # (storage/txn.py): the batches are taken and the counters reset as one step.
        self._lock = threading.Lock()

    def insert(self, batch: Batch) -> None:
        if batch.num_rows:
            with self._lock:
                self._batches.append(batch)
                self._rows += batch.num_rows
                self._bytes += batch.nbytes

    @property
    def num_rows(self) -> int:
        """Rows buffered so far (before pre-aggregation)."""
        return self._rows

    @property
    def nbytes(self) -> int:
        """Bytes of the buffered batches' arrays (values, validity, offsets). Batches a load
        cuts for several indexes share arrays, so this may count some twice: it errs towards
        flushing early, never late."""
        return self._bytes

    @property
    def streams(self) -> bool:
        """Whether rows in key order may leave before the load ends (`take_in_order`): a
        DUPLICATE index without a sequence column keeps every row as it is."""
        return not self.spec.merges and self.spec.sequence is None

    def take_in_order(self, after: Batch | None) -> list[Batch] | None:
        """The buffered batches, emptying the memtable, when their rows arrived in key order
        and do not sort before `after` (the last row taken before; None: none): they are the
        next pieces of one sorted run, the rows `flush` would return, not concatenated.
        Otherwise None, and the rows stay buffered. Only for `streams` memtables."""
        keys = self.spec.keys
        with self._lock:
            batches = self._batches
            if not batches:
                return None
            pieces = ([] if after is None else [after]) + batches
            if not in_key_order(Batch.concat([b.select(keys) for b in pieces]), keys):
                return None
            self._batches = []
            self._rows = 0
            self._bytes = 0
            return batches

    def flush(self) -> Batch | None:
        """The buffered rows sorted by key and merged per the data model (None when empty)."""
        with self._lock:
            batches, self._batches = self._batches, []
            self._rows = 0
            self._bytes = 0
        if not batches:
            return None
        rows = Batch.concat(batches)
        if not self.spec.merges and self.spec.sequence is None:
            if in_key_order(rows, self.spec.keys):
                return rows  # DUPLICATE rows that arrived sorted: the stable sort keeps them so
            order = duplicate_sort_order(rows, self.spec.keys)
            if order is not None:
                return rows.take(order)
        # Load order breaks ties: REPLACE / UNIQUE keep the later row (`combine` defaults the
        # arrival order to the position in the concatenated batch).
        return combine(rows, self.spec)
