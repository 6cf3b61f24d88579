"""RowsetWriter: turns the rows one load sends to one tablet into a rowset's segment files.

A rowset is the unit a load adds to a tablet. The writer buffers rows in a `MemTable`, which
sorts them by the index's key columns and pre-aggregates them per the data model; `build()`
cuts that single sorted run into segments of about `SEGMENT_ROWS` rows. So the segments of one
rowset never overlap and, for AGGREGATE/UNIQUE tables, no key repeats inside a rowset: the
reader treats each rowset as one sorted run (Doris' non-overlapping rowset).
The rowset gets its version only when the load publishes (`storage.txn`), so files are written
before the version is known and stay invisible (and garbage-collectable) until the catalog
records them. Upstream: Doris `RowsetWriter` / `BetaRowsetWriter`, `MemTable`.
"""

from __future__ import annotations

import time
from pathlib import Path

from storage.batch import Batch
from storage.catalog.meta import MaterializedIndexMeta, RowsetMeta, TableMeta
from storage.memtable import MemTable
from storage.segment import write_segment

SEGMENT_ROWS = 1 << 20


def segment_path(tablet_id: int, rowset_id: str, seg_no: int) -> str:
    """Path of a segment relative to the backend's storage root."""
    return f"data/{tablet_id}/{rowset_id}_{seg_no}.seg"


class RowsetWriter:
    """Collects batches (the index's columns) for one tablet; `build()` writes the segments."""

    def __init__(
        self, root: Path, tablet_id: int, rowset_id: str, index: MaterializedIndexMeta,
        table: TableMeta, segment_rows: int | None = None,
    ) -> None:
        self._root = root
        self._tablet_id = tablet_id
        self._rowset_id = rowset_id
        self._index = index
        self._memtable = MemTable(table, index)
        self._segment_rows = segment_rows or SEGMENT_ROWS

    def add_batch(self, batch: Batch) -> None:
        self._memtable.insert(batch)

    @property
    def num_rows(self) -> int:
        """Rows received (before pre-aggregation)."""
        return self._memtable.num_rows

    def build(self) -> RowsetMeta:
        files: list[str] = []
        size = 0
        rows = 0
        run = self._memtable.flush()
        if run is not None and run.num_rows:
            rows = run.num_rows
            for seg_no, start in enumerate(range(0, rows, self._segment_rows)):
                rel = segment_path(self._tablet_id, self._rowset_id, seg_no)
                info = write_segment(
                    self._root / rel, run.slice(start, min(rows, start + self._segment_rows)),
                    key_columns=self._index.keys,
                    short_key_columns=self._index.short_key_column_count,
                )
                size += info.size
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
