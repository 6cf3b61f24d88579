"""TabletReader: the executor's only way into storage (merge-on-read).

`TabletReader(root, table, index, rowsets, options, stats)` yields Batches of
`options.columns` of one tablet (one materialized index) at one version, hiding rowsets,
segment files, delete versions and the data model's merge:
- DUPLICATE: rowsets stream segment by segment with every `options.predicates` pushed into the
  segment reader (rows are independent).
- AGGREGATE / UNIQUE: each memtable flush is one key-sorted run with unique keys. A
  NONOVERLAPPING rowset is one run (its segments are consecutive pieces of it); each segment of
  an OVERLAPPING rowset is a run of its own (storage/rowset.py), read as a one-segment rowset of
  the same versions, in flush order. Runs are merged in version order, then flush order, by
  `storage.merge.merge_runs`, so results always look fully merged (seed 004 "limitations of
  the aggregate model": count(*) counts merged rows, MIN(cost) on a SUM column sees merged
  sums). Only KEY-column predicates go into the segments (a key predicate holds for every row
  of a key or for none); value predicates are applied here after the merge (PREAGGREGATION OFF
  semantics). Either way storage returns exactly the rows every pushed predicate accepts; the
  scan evaluates only the conditions without a storage form (the one statement of that
  contract: planner/lower.py split_scan_filters). With a single run (one NONOVERLAPPING rowset)
  the rows are already merged and every predicate is pushed. `options.disjunctions` (OR trees,
  exact) follow the same rule: pushed when every column they name is a key column.
- Delete versions (rowsets with `delete_predicates`, no files) hide rows of LOWER versions that
  satisfy all of their conditions. Conditions on key columns are applied to each older rowset
  before the merge; a delete naming a value column (UNIQUE merge-on-write semantics) is
  applied to the merged rows of all older versions, so it sees what a query would have seen.
Many small rowsets (loads compaction has not merged yet) stay cheap: segments and whole rowsets
whose segment-level zone maps exclude a pushed predicate are skipped from cached metadata
before any page is read (`_prune`, `storage/segment/prune.py`); segments of at most one
short-key block are read whole from the caches in one call (`segment.reader.read_whole`) and
filtered, deleted and merged as one batch instead of one run each.
Upstream concept: Doris BE `TabletReader` / `BlockReader` / `RowsetReader` / `DeleteHandler`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from storage.batch import Batch, Column
from storage.catalog.meta import MaterializedIndexMeta, RowsetMeta, TableMeta
from storage.catalog.mv import index_table
from storage.errors import DorisError
from storage.indexes.short_key import SHORT_KEY_INTERVAL
from storage.merge import MergeSpec, combine, merge_runs
from storage.page_cache import PageCache
from storage.predicates import (
    ColumnPredicate,
    Disjunction,
    ReadOptions,
    evaluate,
    evaluate_disjunction,
)
from storage.segment import SegmentReader
from storage.segment.meta_cache import SEGMENT_META_CACHE, SegmentMeta
from storage.segment.prune import ZonePruner
from storage.segment.reader import read_whole
from storage.types import DataType

if TYPE_CHECKING:
    from storage.scan_stats import ScanStats

__all__ = ["ColumnPredicate", "ReadOptions", "TabletReader"]

Conditions = tuple[ColumnPredicate, ...]
Disjunctions = tuple[Disjunction, ...]
# Segments up to one short-key block are read whole and filtered in one step (see
# `TabletReader._segment_batches`): their indexes cannot skip anything inside them.
SMALL_SEGMENT_ROWS = SHORT_KEY_INTERVAL


def coalesce(batches: Iterator[Batch], size: int) -> Iterator[Batch]:
    """Batches of about `size` rows, copying as little as possible: a batch of at least half
    of `size` rows passes through untouched (a window the predicates thinned is no reason to
    copy every column: concatenating it with its neighbours cost TPC-H Q1 a third of its
    scan), larger ones are sliced (no copy) into `size` rows, and smaller ones (merges and
    tiny segments emit them, and the tail of a sliced batch) are concatenated up to half of
    `size` or more."""
    half = max(size // 2, 1)
    buf: list[Batch] = []
    rows = 0
    for b in batches:
        n = b.num_rows
        if n >= half:
            if buf:
                yield Batch.concat(buf) if len(buf) > 1 else buf[0]
                buf, rows = [], 0
            if n <= size:
                yield b
                continue
            full = n - n % size
            for start in range(0, full, size):
                yield b.slice(start, start + size)
            if n - full >= half:
                yield b.slice(full, n)
                continue
            b, n = b.slice(full, n), n - full
        if n == 0:
            continue
        buf.append(b)
        rows += n
        if rows >= half:
            yield Batch.concat(buf) if len(buf) > 1 else buf[0]
            buf, rows = [], 0
    if buf:
        yield Batch.concat(buf) if len(buf) > 1 else buf[0]


# (id(table), id(index)) -> (table, index, lower-case name -> column name, lower-case name ->
# type): built once per schema object instead of once per tablet per scan (a 40-column table
# read through 56 tablets made them a visible share of a small query). The objects are kept
# in the entry, so their ids cannot be reused while it lives.
MAX_COLUMN_MAPS = 1024
_COLUMN_MAPS: dict[tuple[int, int], tuple[TableMeta, MaterializedIndexMeta, dict[str, str],
                                          dict[str, DataType]]] = {}


def _column_maps(table: TableMeta, index: MaterializedIndexMeta
                 ) -> tuple[dict[str, str], dict[str, DataType]]:
    """The index's columns by lower-case name, and their types (shared: do not modify)."""
    key = (id(table), id(index))
    got = _COLUMN_MAPS.get(key)
    if got is not None and got[0] is table and got[1] is index:
        return got[2], got[3]
    names = {c.lower(): c for c in index.columns}
    types = {c.name.lower(): c.type for c in table.columns if c.name.lower() in names}
    if len(_COLUMN_MAPS) >= MAX_COLUMN_MAPS:
        _COLUMN_MAPS.clear()
    _COLUMN_MAPS[key] = (table, index, names, types)
    return names, types


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


def _filter_predicates(batches: Iterator[Batch], preds: Conditions,
                       disjunctions: Disjunctions = ()) -> Iterator[Batch]:
    for b in batches:
        keep = np.ones(b.num_rows, np.bool_)
        for p in preds:
            keep &= evaluate(p, b.column(p.column))
        for d in disjunctions:
            keep &= evaluate_disjunction(d, b.column, b.num_rows)
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
        page_cache: PageCache | None = None,
    ) -> None:
        """`sort_duplicates`: DUPLICATE rows come out merge-sorted by key across runs (what
        compaction writes) instead of rowset by rowset. `page_cache`: the engine's, for query
        reads (storage/page_cache.py); None (compaction, ALTER jobs) decodes every page."""
        table = index_table(table, index)  # a materialized view: its own columns and types
        self._root = root
        self._page_cache = page_cache
        self._sort_duplicates = sort_duplicates
        self._table = table
        self._index = index
        self._options = options
        self._stats = stats
        self._names, self._types = _column_maps(table, index)
        ordered = sorted(rowsets, key=attrgetter("start_version", "end_version"))
        self._rowsets = ordered
        self._data = [r for r in ordered if r.files]
        self._spec = MergeSpec.of(table, index)
        # (start version, conditions) of the delete versions, oldest first
        self._deletes = [(r.start_version, self._delete_conditions(r))
                         for r in ordered if r.delete_predicates]
        # rowset id -> its segments the zone maps did not exclude: (path, cached metadata of
        # the published file, or None when not cached yet) (`_prune`)
        self._segments: dict[str, list[tuple[str, SegmentMeta | None]]] = {}
        # run id -> rowset id, for the one-segment runs an OVERLAPPING rowset is split into
        self._origin: dict[str, str] = {}
        # the disjunctions evaluated inside the segment reads (with the pushed predicates);
        # set by __iter__ (see `_read_merged` for AGG / UNIQUE)
        self._pushed_disjunctions: Disjunctions = ()

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
    def _prune(self, preds: Conditions) -> list[RowsetMeta]:
        """The data rowsets that may hold rows satisfying `preds`, oldest first, with the paths
        of their segments that may (in `self._segments`). A segment whose segment-level zone
        maps exclude a predicate is skipped, and a rowset with no segment left is skipped
        whole, before any page is read: from the metadata cache, without touching the file
        (storage/segment/prune.py). The files of published rowsets never change, so their
        cached metadata is used without a stat (`SegmentMetaCache.latest`). Only predicates
        every returned row must satisfy may be passed (the caller's contract); the pushed
        disjunctions (`_pushed_disjunctions`, set before) prune too."""
        stats = self._stats
        pruner = ZonePruner.shared(self._types, preds, self._pushed_disjunctions)
        # normalised as pathlib spells it, so paths match what deletes forget
        root = os.path.join(os.path.normpath(os.fspath(self._root)), "")
        latest = SEGMENT_META_CACHE.latest
        live = []
        for r in self._data:
            segments = []
            for rel in r.files:
                path = root + rel  # files are relative to the backend root
                meta = latest(path)
                if pruner:
                    verdict = pruner.verdict(meta) if meta is not None else None
                    if verdict is None:  # not cached yet: open it (loads the zone maps)
                        with SegmentReader(path, self._types, tablet_id=r.tablet_id,
                                           page_cache=self._page_cache) as reader:
                            verdict = reader.may_match(pruner, stats)
                            meta = reader.meta
                    if not verdict:
                        assert meta is not None  # cached, or stored by the reader just opened
                        if stats is not None:  # what the segment iterator would count
                            stats.rows_total += meta.num_rows
                            stats.rows_skipped_zone_map += meta.num_rows
                            stats.segments_skipped += 1
                            stats.segments_skipped_zone_map += 1
                        continue
                segments.append((path, meta))
            if segments and r.segments_overlap and len(segments) > 1:
                # Each segment of an OVERLAPPING rowset is a sorted run of its own (one memtable
                # flush, storage/rowset.py): read it as a one-segment rowset of the same
                # versions, in flush order, so merges and deletes treat it like a rowset.
                for seg_no, seg in enumerate(segments):
                    run = replace(r, rowset_id=f"{r.rowset_id}/{seg_no}", files=(seg[0],),
                                  num_rows=seg[1].num_rows if seg[1] is not None else 0,
                                  segments_overlap=False)
                    self._segments[run.rowset_id] = [seg]
                    self._origin[run.rowset_id] = r.rowset_id
                    live.append(run)
            elif segments:
                self._segments[r.rowset_id] = segments
                live.append(r)
            if stats is not None:
                if segments:
                    stats.rowsets_read += 1
                else:
                    stats.rowsets_skipped += 1
        return live

    def _segment_batches(self, reader: SegmentReader, columns: Sequence[str], preds: Conditions
                         ) -> Iterator[Batch]:
        """Rows of one segment satisfying `preds`. A segment of at most one short-key block
        (and so about one page per column) gives the row-level indexes nothing to skip: it is
        read whole (`read_all`) and filtered here, without a SegmentIterator."""
        if reader.num_rows <= SMALL_SEGMENT_ROWS:
            b = self._select(reader.read_all(columns, self._stats), preds)
            if b is not None:
                yield b
            return
        names = tuple(columns)
        for b in reader.read(list(columns), preds, stats=self._stats,
                             batch_size=self._options.batch_size,
                             disjunctions=self._pushed_disjunctions):
            if b.num_rows:
                yield b if b.names == names else b.rename(names)

    def _select(self, b: Batch, preds: Conditions) -> Batch | None:
        """The rows of `b` (read whole from small segments) satisfying `preds`."""
        keep = self._select_mask(b, preds)
        if keep is None:
            return b if b.num_rows else None
        return b.filter(keep) if keep.any() else None

    def _select_mask(self, b: Batch, preds: Conditions) -> np.ndarray | None:
        """Mask of the rows of `b` satisfying `preds` (None: all of them), counted as the
        segment iterator counts them."""
        n = b.num_rows
        keep = None
        for p in preds:
            hit = evaluate(p, b.column(p.column))
            keep = hit if keep is None else keep & hit
        for d in self._pushed_disjunctions:
            hit = evaluate_disjunction(d, b.column, n)
            keep = hit if keep is None else keep & hit
        kept = n if keep is None else int(np.count_nonzero(keep))
        if self._stats is not None:
            self._stats.rows_filtered_predicate += n - kept
            self._stats.rows_returned += kept
        return None if kept == n else keep

    def _rowset_batches(self, rowset: RowsetMeta, columns: Sequence[str], preds: Conditions
                        ) -> Iterator[Batch]:
        for path, meta in self._segments.pop(rowset.rowset_id, ()):
            with SegmentReader(path, self._types, rowset.tablet_id, published=meta,
                               page_cache=self._page_cache) as reader:
                yield from self._segment_batches(reader, columns, preds)

    def _small(self, rowset: RowsetMeta) -> bool:
        """Every segment of the (pruned) rowset is small and its metadata cached."""
        return all(meta is not None and meta.num_rows <= SMALL_SEGMENT_ROWS
                   for _, meta in self._segments[rowset.rowset_id])

    def _read_small(self, rowsets: Sequence[RowsetMeta], columns: Sequence[str]
                    ) -> tuple[Batch, np.ndarray]:
        """Every row of `rowsets` (all `_small`) as one Batch, in order, and for each row the
        position of its rowset in `rowsets`. One `read_whole` call and one concatenation per
        column: a Batch per tiny segment would cost more than reading it."""
        segments = [self._segments.pop(r.rowset_id) for r in rowsets]
        flat = read_whole([seg for segs in segments for seg in segs], columns, self._types,
                          rowsets[0].tablet_id if rowsets else None, self._stats,
                          self._page_cache)
        cols = tuple(Column.concat([c[i] for c in flat]) for i in range(len(columns)))
        batch = Batch(tuple(columns), cols)
        lengths = [len(c[0]) for c in flat]
        owner = np.repeat(np.arange(len(rowsets)), [len(segs) for segs in segments])
        return batch, np.repeat(owner, lengths)

    def _runs(self, rowsets: Sequence[RowsetMeta], columns: Sequence[str], preds: Conditions
              ) -> list[Iterator[Batch]]:
        """One run (its rows satisfying `preds`, deletes not applied) per rowset, in order:
        small rowsets read here at once, the others lazily segment by segment."""
        small = [r for r in rowsets if self._small(r)]
        eager: dict[str, Batch] = {}
        if small:
            batch, owner = self._read_small(small, columns)
            bounds = np.searchsorted(owner, np.arange(len(small) + 1))
            for i, r in enumerate(small):
                eager[r.rowset_id] = batch.slice(int(bounds[i]), int(bounds[i + 1]))
        runs: list[Iterator[Batch]] = []
        for r in rowsets:
            b = eager.get(r.rowset_id)
            if b is None:
                runs.append(self._rowset_batches(r, columns, preds))
            else:
                selected = self._select(b, preds)
                runs.append(iter(() if selected is None else (selected,)))
        return runs

    def _read_all_small(self, rowsets: Sequence[RowsetMeta], columns: Sequence[str],
                        preds: Conditions) -> Iterator[Batch]:
        """AGG/UNIQUE when every rowset is small: each is one run of one batch, so the merge
        is one `combine` of all their rows with their rowset order as arrival order (the one
        step merge_runs takes for such runs), and predicates and key-column deletes are
        evaluated once over all rows instead of once per tiny rowset."""
        batch, owner = self._read_small(rowsets, columns)
        keep = self._select_mask(batch, preds)
        if self._deletes:
            ends = np.array([r.end_version for r in rowsets])[owner]
            for version, conds in self._deletes:
                hit = ends < version  # rows of rowsets below the delete version
                for p in conds:
                    hit &= evaluate(p, batch.column(p.column))
                keep = ~hit if keep is None else keep & ~hit
        if keep is not None:
            batch, owner = batch.filter(keep), owner[keep]
        if batch.num_rows == 0:
            return iter(())
        return iter((combine(batch, self._spec, owner) if len(rowsets) > 1 else batch,))

    def _deletes_above(self, rowset: RowsetMeta) -> list[Conditions]:
        if not self._deletes:
            return []
        return [conds for version, conds in self._deletes if version > rowset.end_version]

    # ---- reading ---------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Batch]:
        requested = [self._name(c) for c in self._options.columns]
        preds = tuple(self._pred(p) for p in self._options.predicates)
        disjunctions = tuple(
            Disjunction(tuple(tuple(self._pred(p) for p in branch) for branch in d.branches))
            for d in self._options.disjunctions)
        delete_cols = {p.column for _, conds in self._deletes for p in conds}
        need = set(requested) | {p.column for p in preds} | delete_cols
        need |= {p.column for d in disjunctions for b in d.branches for p in b}
        if self._spec.merges:
            need |= set(self._spec.columns_needed())
        read_cols = self._ordered(need)
        if not self._spec.merges:
            self._pushed_disjunctions = disjunctions  # rows are independent
            merged = self._read_duplicate(read_cols, preds)
        else:
            merged = self._read_merged(read_cols, preds, delete_cols, disjunctions)
        out_names = tuple(self._options.columns)
        for b in coalesce(merged, self._options.batch_size):
            yield b.select(requested).rename(out_names)

    def _read_duplicate(self, read_cols: list[str], preds: Conditions) -> Iterator[Batch]:
        """Rowset by rowset. Rows are independent, so consecutive small rowsets under the same
        delete versions are read at once and filtered as one batch of up to batch_size rows
        (predicates and deletes evaluated once, not once per tiny rowset)."""
        live = self._prune(preds)
        if self._sort_duplicates and len(live) > 1:
            # merge_runs with a DUP spec only sorts: equal keys of different runs all survive.
            runs = []
            for r, run in zip(live, self._runs(live, read_cols, preds)):
                deletes = self._deletes_above(r)
                runs.append(_filter_deletes(run, deletes) if deletes else run)
            yield from merge_runs(runs, self._spec)
            return
        i = 0
        while i < len(live):
            deletes = self._deletes_above(live[i])
            if not self._small(live[i]):
                batches = self._rowset_batches(live[i], read_cols, preds)
                yield from _filter_deletes(batches, deletes) if deletes else batches
                i += 1
                continue
            group, rows = [], 0
            while (i < len(live) and rows < self._options.batch_size and self._small(live[i])
                   and len(self._deletes_above(live[i])) == len(deletes)):
                group.append(live[i])
                rows += live[i].num_rows
                i += 1
            b = self._select(self._read_small(group, read_cols)[0], preds)
            if b is not None:
                yield from _filter_deletes(iter((b,)), deletes) if deletes else (b,)

    def _read_merged(self, read_cols: list[str], preds: Conditions, delete_cols: set[str],
                     disjunctions: Disjunctions = ()) -> Iterator[Batch]:
        keys = {k.lower() for k in self._index.keys}
        single = len(self._data) == 1 and not self._data[0].segments_overlap
        # One run (a NONOVERLAPPING rowset) is already merged: any predicate may filter it.
        # Otherwise only key predicates (and disjunctions over key columns only) go into the
        # segments, so neither they nor the segments' indexes (bitmap, bloom filter) ever see
        # a value column before the merge.
        pushed = preds if single else tuple(p for p in preds if p.column.lower() in keys)
        later = () if single else tuple(p for p in preds if p.column.lower() not in keys)
        self._pushed_disjunctions = disjunctions if single else tuple(
            d for d in disjunctions if d.columns() <= keys)
        later_disjunctions = () if single else tuple(
            d for d in disjunctions if not d.columns() <= keys)
        # Skipping a rowset by `pushed` is safe: a key predicate excludes every row of a key
        # in every rowset at once, so the merge of the remaining rowsets loses no partner row.
        live = self._prune(pushed)
        if not live:
            merged: Iterator[Batch] = iter(())
        elif all(c.lower() in keys for c in delete_cols) and all(map(self._small, live)):
            merged = self._read_all_small(live, read_cols, pushed)
        elif all(c.lower() in keys for c in delete_cols):
            runs = []
            for r, run in zip(live, self._runs(live, read_cols, pushed)):
                deletes = self._deletes_above(r)
                runs.append(_filter_deletes(run, deletes) if deletes else run)
            merged = merge_runs(runs, self._spec)
        else:
            merged = self._merge_by_epoch(live, read_cols, pushed)
        if later or later_disjunctions:
            return _filter_predicates(merged, later, later_disjunctions)
        return merged

    def _merge_by_epoch(self, live: list[RowsetMeta], read_cols: list[str], pushed: Conditions
                        ) -> Iterator[Batch]:
        """Merge in version order, applying each delete to the merged rows below it."""
        acc: list[Iterator[Batch]] = []
        runs: dict[str, list[Iterator[Batch]]] = {}
        for run_of, run in zip(live, self._runs(live, read_cols, pushed)):
            runs.setdefault(self._origin.get(run_of.rowset_id, run_of.rowset_id), []).append(run)
        for r in self._rowsets:
            if r.files:
                acc.extend(runs.get(r.rowset_id, ()))
            elif r.delete_predicates and acc:
                acc = [_filter_deletes(merge_runs(acc, self._spec), [self._delete_conditions(r)])]
        return merge_runs(acc, self._spec) if acc else iter(())
