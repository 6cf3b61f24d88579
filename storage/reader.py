"""TabletReader: the executor's only way into storage.

`TabletReader(root, schema, rowsets, options)` yields Batches of the requested columns of one
tablet at one version, hiding rowsets and segment files. `ColumnPredicate` is a closed set of
column-vs-constant predicates that storage may use to skip data; callers still apply their own
filters, so pruning here can only save work, never change results.
Upstream concept: Doris BE `TabletReader` / `RowsetReader` / `SegmentIterator`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from storage.batch import Batch
from storage.catalog.meta import ColumnMeta, RowsetMeta
from storage.predicates import ColumnPredicate, ReadOptions  # noqa: F401 - re-exported
from storage.segment import read_segment


class TabletReader:
    """Reads the visible rowsets of one tablet (already chosen by version) as Batches."""

    def __init__(
        self,
        root: Path,
        schema: Sequence[ColumnMeta],
        rowsets: Sequence[RowsetMeta],
        options: ReadOptions,
    ) -> None:
        self._root = root
        self._types = {c.name.lower(): c.type for c in schema}
        self._rowsets = sorted(rowsets, key=lambda r: r.start_version)
        self._options = options

    def __iter__(self) -> Iterator[Batch]:
        names = self._options.columns
        types = [self._types[n.lower()] for n in names]
        size = self._options.batch_size
        for rowset in self._rowsets:
            for rel in rowset.files:
                batch = read_segment(self._root / rel, names, types)
                for start in range(0, batch.num_rows, size):
                    yield batch.slice(start, min(start + size, batch.num_rows))
