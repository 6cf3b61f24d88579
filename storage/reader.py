"""TabletReader: the executor's only way into storage (merge-on-read).

`TabletReader(root, table, index, rowsets, options, stats)` yields Batches of
`options.columns` of one tablet (one materialized index) at one version, hiding rowsets,
segment files, delete versions and the data model's merge:
- DUPLICATE: rowsets stream segment by segment with every `options.predicates` pushed into the
  segment reader (rows are independent).
- AGGREGATE / UNIQUE: each memtable flush is one key-sorted run with unique keys. A
  NONOVERLAPPING rowset is one run (its segments are consecutive pieces of it); each segment of
  an OVERLAPPING rowset is a run of its own (storage/rowset.py), in seg_no order = load order.
  Runs are merged in version order, then flush order, by `storage.merge.merge_runs`, so results
  always look fully merged (seed 004 "limitations of the aggregate model": count(*) counts
  merged rows, MIN(cost) on a SUM column sees merged sums). Only KEY-column predicates go into
  the segments (a key predicate holds for every row of a key or for none); value predicates are
  applied after the merge (PREAGGREGATION OFF semantics; the executor filters again anyway).
  With a single run (one NONOVERLAPPING rowset) the rows are already merged and every
  predicate is pushed.
- Delete versions (rowsets with `delete_predicates`, no files) hide rows of LOWER versions that
  satisfy all of their conditions. Conditions on key columns are applied to each older rowset
  before the merge; a delete naming a value column (UNIQUE merge-on-write semantics) is
  applied to the merged rows of all older versions, so it sees what a query would have seen.
Upstream concept: Doris BE `TabletReader` / `BlockReader` / `RowsetReader` / `DeleteHandler`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from storage.batch import Batch
from storage.catalog.meta import MaterializedIndexMeta, RowsetMeta, TableMeta
from storage.errors import DorisError
from storage.merge import MergeSpec, merge_runs, rebatch
from storage.predicates import ColumnPredicate, ReadOptions, evaluate
from storage.segment import SegmentReader

if TYPE_CHECKING:
    from storage.scan_stats import ScanStats

__all__ = ["ColumnPredicate", "ReadOptions", "TabletReader"]

Conditions = tuple[ColumnPredicate, ...]


def _filter_deletes(batches: Iterator[Batch], deletes: Sequence[Conditions]) -> Iterator[Batch]:
    """Drop rows matching every condition of any of `deletes`."""
    for b in batches:
        keep = np.ones(b.num_rows, np.bool_)
        for conds in deletes:
            hit = np.ones(b.num_rows, np.bool_)
            for p in conds:
                hit &= evaluate(p, b.column(p.column))
            keep &= ~hit
        if keep.all():
            yield b
        elif keep.any():
            yield b.filter(keep)


def _filter_predicates(batches: Iterator[Batch], preds: Conditions) -> Iterator[Batch]:
    for b in batches:
        keep = np.ones(b.num_rows, np.bool_)
        for p in preds:
            keep &= evaluate(p, b.column(p.column))
        if keep.all():
            yield b
        elif keep.any():
            yield b.filter(keep)


class TabletReader:
    """Reads the visible rowsets of one tablet (already chosen by version) as Batches."""

    def __init__(
        self,
        root: Path,
        table: TableMeta,
        index: MaterializedIndexMeta,
        rowsets: Sequence[RowsetMeta],
        options: ReadOptions,
        stats: ScanStats | None = None,
        sort_duplicates: bool = False,
    ) -> None:
        """`sort_duplicates`: DUPLICATE rows come out merge-sorted by key across rowsets (what
        compaction writes) instead of rowset by rowset."""
        self._root = root
        self._sort_duplicates = sort_duplicates
        self._table = table
        self._index = index
        self._options = options
        self._stats = stats
        self._names = {c.lower(): c for c in index.columns}
        self._types = {c.name.lower(): c.type for c in table.columns
                       if c.name.lower() in self._names}
        ordered = sorted(rowsets, key=lambda r: (r.start_version, r.end_version))
        self._rowsets = ordered
        self._data = [r for r in ordered if r.files]
        self._spec = MergeSpec.of(table, index)

    # ---- names -----------------------------------------------------------------------------
    def _name(self, column: str) -> str:
        try:
            return self._names[column.lower()]
        except KeyError:
            raise DorisError(
                f"Unknown column '{column}' in index '{self._index.name}' of table "
                f"'{self._table.name}'"
            ) from None

    def _pred(self, p: ColumnPredicate) -> ColumnPredicate:
        return ColumnPredicate(self._name(p.column), p.op, p.values)

    def _delete_conditions(self, rowset: RowsetMeta) -> Conditions:
        return tuple(
            ColumnPredicate(self._name(c.column), c.op, tuple(c.values))
            for c in rowset.delete_predicates
        )

    def _ordered(self, names: set[str]) -> list[str]:
        return [c for c in self._index.columns if c in names]

    # ---- segments --------------------------------------------------------------------------
    def _rowset_batches(self, rowset: RowsetMeta, columns: Sequence[str], preds: Conditions,
                        files: Sequence[str] | None = None) -> Iterator[Batch]:
        """Rows of `files` (default: every segment of the rowset) in file order."""
        names = tuple(columns)
        for rel in rowset.files if files is None else files:
            reader = SegmentReader(self._root / rel, self._types, tablet_id=rowset.tablet_id)
            try:
                for b in reader.read(list(columns), preds, stats=self._stats,
                                     batch_size=self._options.batch_size):
                    if b.num_rows:
                        yield b if b.names == names else b.rename(names)
            finally:
                reader.close()

    def _runs(self, rowset: RowsetMeta, columns: Sequence[str], preds: Conditions
              ) -> list[Iterator[Batch]]:
        """The rowset's key-sorted runs, oldest first: the whole rowset, or each segment of an
        OVERLAPPING one (one memtable flush each)."""
        if not rowset.segments_overlap:
            return [self._rowset_batches(rowset, columns, preds)]
        return [self._rowset_batches(rowset, columns, preds, (rel,)) for rel in rowset.files]

    def _deletes_above(self, rowset: RowsetMeta) -> list[Conditions]:
        return [self._delete_conditions(d) for d in self._rowsets
                if d.delete_predicates and d.start_version > rowset.end_version]

    # ---- reading ---------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Batch]:
        requested = [self._name(c) for c in self._options.columns]
        preds = tuple(self._pred(p) for p in self._options.predicates)
        delete_cols = {p.column for r in self._rowsets for p in self._delete_conditions(r)}
        need = set(requested) | {p.column for p in preds} | delete_cols
        if self._spec.merges:
            need |= set(self._spec.columns_needed())
        read_cols = self._ordered(need)
        if not self._spec.merges:
            merged = self._read_duplicate(read_cols, preds)
        else:
            merged = self._read_merged(read_cols, preds, delete_cols)
        out_names = tuple(self._options.columns)
        for b in rebatch(merged, self._options.batch_size):
            yield b.select(requested).rename(out_names)

    def _read_duplicate(self, read_cols: list[str], preds: Conditions) -> Iterator[Batch]:
        if self._sort_duplicates and (len(self._data) > 1 or any(
                r.segments_overlap for r in self._data)):
            # merge_runs with a DUP spec only sorts: equal keys of different runs all survive.
            runs = [_filter_deletes(run, self._deletes_above(r))
                    for r in self._data for run in self._runs(r, read_cols, preds)]
            yield from merge_runs(runs, self._spec)
            return
        for r in self._data:
            yield from _filter_deletes(self._rowset_batches(r, read_cols, preds),
                                       self._deletes_above(r))

    def _read_merged(self, read_cols: list[str], preds: Conditions, delete_cols: set[str]
                     ) -> Iterator[Batch]:
        keys = {k.lower() for k in self._index.keys}
        single = len(self._data) == 1 and not self._data[0].segments_overlap
        # One run is already merged: any predicate may filter it before reading.
        pushed = preds if single else tuple(p for p in preds if p.column.lower() in keys)
        later = () if single else tuple(p for p in preds if p.column.lower() not in keys)
        if all(c.lower() in keys for c in delete_cols):
            runs = [_filter_deletes(run, self._deletes_above(r))
                    for r in self._data for run in self._runs(r, read_cols, pushed)]
            merged = merge_runs(runs, self._spec) if runs else iter(())
        else:
            merged = self._merge_by_epoch(read_cols, pushed)
        return _filter_predicates(merged, later) if later else merged

    def _merge_by_epoch(self, read_cols: list[str], pushed: Conditions) -> Iterator[Batch]:
        """Merge in version order, applying each delete to the merged rows below it."""
        acc: list[Iterator[Batch]] = []
        for r in self._rowsets:
            if r.files:
                acc.extend(self._runs(r, read_cols, pushed))
            elif r.delete_predicates and acc:
                acc = [_filter_deletes(merge_runs(acc, self._spec), [self._delete_conditions(r)])]
        return merge_runs(acc, self._spec) if acc else iter(())
