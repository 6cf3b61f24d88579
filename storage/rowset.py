"""RowsetWriter: turns the rows one load sends to one tablet into a rowset's segment files.

A rowset is the unit a load adds to a tablet: one or more segments, sorted by the index's key
columns (the memtable's job in Doris). The rowset gets its version only when the load publishes
(`storage.txn`), so files are written before the version is known and stay invisible (and
garbage-collectable) until the catalog records them. Upstream: Doris `RowsetWriter`, `MemTable`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from storage.batch import Batch, Column
from storage.catalog.meta import RowsetMeta
from storage.segment import write_segment

SEGMENT_ROWS = 1 << 20


def sort_indices(batch: Batch, key_columns: Sequence[str]) -> np.ndarray:
    """Stable row order by the key columns, NULLs first (Doris orders NULL lowest)."""
    keys: list[np.ndarray] = []
    for name in reversed(key_columns):  # np.lexsort: last key is primary
        col: Column = batch.column(name)
        values = col.string_values() if col.offsets is not None else col.data
        if values.dtype == np.dtype(object):
            _, values = np.unique(values, return_inverse=True)
        keys.append(values)
        keys.append(col.validity if col.validity is not None else np.ones(len(col), np.bool_))
    if not keys:
        return np.arange(batch.num_rows)
    return np.lexsort(keys)


class RowsetWriter:
    """Collects batches for one tablet; `build()` sorts, writes segments, returns the meta."""

    def __init__(
        self, root: Path, tablet_id: int, rowset_id: str, key_columns: Sequence[str]
    ) -> None:
        self._root = root
        self._tablet_id = tablet_id
        self._rowset_id = rowset_id
        self._keys = tuple(key_columns)
        self._batches: list[Batch] = []

    def add_batch(self, batch: Batch) -> None:
        if batch.num_rows:
            self._batches.append(batch)

    @property
    def num_rows(self) -> int:
        return sum(b.num_rows for b in self._batches)

    def build(self) -> RowsetMeta:
        files: list[str] = []
        size = 0
        rows = 0
        if self._batches:
            merged = Batch.concat(self._batches)
            merged = merged.take(sort_indices(merged, self._keys))
            rows = merged.num_rows
            for seg_no, start in enumerate(range(0, rows, SEGMENT_ROWS)):
                rel = f"data/{self._tablet_id}/{self._rowset_id}_{seg_no}.seg"
                size += write_segment(self._root / rel, merged.slice(start, min(rows, start + SEGMENT_ROWS)))
                files.append(rel)
        return RowsetMeta(
            rowset_id=self._rowset_id,
            tablet_id=self._tablet_id,
            start_version=0,
            end_version=0,
            num_rows=rows,
            data_size=size,
            files=tuple(files),
            create_time=time.time(),
        )
