"""SegmentIterator: one scan of one segment, pruning with the indexes before reading data pages.

Doris `SegmentIterator` (seed 003): the rows a scan reads shrink in this order
1. segment zone map: a predicate no value in the segment can satisfy skips the segment before
   anything else (Doris checks it in `Segment::new_iterator`; `segments_skipped_zone_map`);
2. short key index: predicates on the leading prefix key columns become key ranges, and the
   sparse index turns them into row ranges (rows outside: `rows_skipped_short_key`);
3. page zone maps of the predicate columns drop the pages that cannot match (`pages_skipped_
   zone_map`, their rows `rows_skipped_zone_map`);
4. the surviving rows are walked in windows of at most `batch_size` rows: predicate columns are
   decoded and every predicate evaluated exactly (`storage.predicates.evaluate`), then the other
   requested columns are decoded only in pages that still hold a selected row.
Indexes only ever remove rows that cannot match, so step 4 alone decides the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from storage.batch import Batch, Column, selection
from storage.indexes.short_key import encode_row, key_ranges
from storage.predicates import ColumnPredicate, evaluate, evaluation_rank, index_forms
from storage.scan_stats import ScanStats
from storage.segment.reader import ColumnInfo, SegmentReader
from storage.segment.row_ranges import RowRanges


class SegmentIterator:
    def __init__(
        self,
        reader: SegmentReader,
        columns: Sequence[str],
        predicates: Sequence[ColumnPredicate],
        stats: ScanStats,
        batch_size: int,
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self.reader = reader
        self.names = tuple(columns)
        self.outputs = [reader.column(n) for n in columns]
        self.predicates = [(reader.column(p.column), p) for p in predicates]
        self._index_predicates = [(info, f) for info, p in self.predicates for f in index_forms(p)]
        # index forms whose constants compare exactly with the stored index values
        self._indexable = reader.index_predicates(predicates) if predicates else []
        # predicate groups per column, most selective kinds first (see evaluation_rank)
        groups: dict[int, tuple[ColumnInfo, list[ColumnPredicate]]] = {}
        for info, p in sorted(self.predicates, key=lambda ip: evaluation_rank(ip[1])):
            groups.setdefault(info.index, (info, []))[1].append(p)
        self._groups = list(groups.values())
        self.stats = stats
        self.batch_size = batch_size
        self._cache: dict[int, dict[int, Column]] = {}  # column index -> page -> decoded page
        self._columns: dict[int, Column | None] = {}  # column index -> whole column (or None)
        self._column_wise = False
        self._infos: dict[int, ColumnInfo] = {}

    # ---- pruning ------------------------------------------------------------------------
    def _short_key_ranges(self, n: int) -> RowRanges:
        if not self.predicates or self.reader.footer.short_key is None:
            return RowRanges.full(n)
        sk = self.reader.short_key(self.stats)
        if sk is None:
            return RowRanges.full(n)
        parts, index = sk
        infos = [self.reader.column(p.name) for p in parts]
        if not all(i.indexable for i in infos):
            return RowRanges.full(n)
        by_column: dict[str, list[ColumnPredicate]] = {}
        for info, p in self._index_predicates:
            by_column.setdefault(info.footer.name.lower(), []).append(p)
        ranges = key_ranges(parts, by_column)
        if ranges is None:
            return RowRanges.full(n)

        def row_key(row: int) -> bytes:
            """K(row), decoding (and caching) the key columns' pages that hold the row."""
            cols = []
            for info in infos:
                ordinal = self.reader.ordinal(info, self.stats)
                page = int(np.searchsorted(ordinal.first_rows, row, side="right")) - 1
                local = row - int(ordinal.first_rows[page])
                cols.append(self._page(info, page).slice(local, local + 1))
            return encode_row(parts, cols, 0)

        result = RowRanges.of(index.row_ranges(ranges, row_key))
        self._cache.clear()
        return result

    def _zone_map_ranges(self, ranges: RowRanges) -> RowRanges | None:
        """Ranges left after the zone maps; None when the segment zone map excludes it."""
        keep_by_column: dict[int, tuple[ColumnInfo, np.ndarray]] = {}
        for info, p, values in self._indexable:
            match = self.reader.zone_map(info, self.stats).may_match(p.op, values)
            if not match[-1]:
                return None
            prev = keep_by_column.get(info.index)
            pages = match[:-1] if prev is None else prev[1] & match[:-1]
            keep_by_column[info.index] = (info, pages)
        for info, keep in keep_by_column.values():
            if keep.all():
                continue
            starts, stops = self.reader.ordinal(info, self.stats).page_bounds()
            dropped = ~keep
            self.stats.pages_skipped_zone_map += int(
                np.count_nonzero(ranges.overlaps(starts[dropped], stops[dropped]))
            )
            ranges = ranges.intersect(RowRanges.from_pages(starts, stops, keep))
        return ranges

    # ---- page access --------------------------------------------------------------------
    def _page(self, info: ColumnInfo, page: int) -> Column:
        self._infos[info.index] = info
        pages = self._cache.setdefault(info.index, {})
        col = pages.get(page)
        if col is None:
            col = self.reader.read_page(info, page, self.stats)
            pages[page] = col
        return col

    def _rows(self, info: ColumnInfo, start: int, stop: int) -> Column:
        ordinal = self.reader.ordinal(info, self.stats)
        pages = ordinal.pages_between(start, stop)
        cols = [self._page(info, p) for p in pages]
        base = int(ordinal.first_rows[pages[0]])
        col = cols[0] if len(cols) == 1 else Column.concat(cols)
        return col.slice(start - base, stop - base)

    def _take(self, info: ColumnInfo, rows: np.ndarray) -> Column:
        """Rows (sorted row ids) of a column, decoding only the pages that hold them; each page
        contributes its own rows (no concatenation of whole pages)."""
        ordinal = self.reader.ordinal(info, self.stats)
        page_of_row = ordinal.page_of(rows)
        first = int(page_of_row[0])
        if first == int(page_of_row[-1]):  # all in one page
            base = int(ordinal.first_rows[first])
            return self._page(info, first).take(rows - base)
        cuts = np.flatnonzero(page_of_row[1:] != page_of_row[:-1]) + 1
        starts = np.concatenate(([0], cuts)).tolist()
        stops = np.concatenate((cuts, [len(rows)])).tolist()
        parts = []
        for a, b in zip(starts, stops):
            page = int(page_of_row[a])
            base = int(ordinal.first_rows[page])
            parts.append(self._page(info, page).take(rows[a:b] - base))
        return Column.concat(parts)

    def _whole(self, info: ColumnInfo) -> Column | None:
        """The whole decoded column when this scan works column-wise (it reads most of the
        segment, or the column is cached whole already), else None (page by page)."""
        got = self._columns.get(info.index)
        if got is None and info.index not in self._columns:
            got = self.reader.read_column(info, self.stats, decode=self._column_wise)
            self._columns[info.index] = got
        return got

    def _gather(self, info: ColumnInfo, window: RowRanges, rows: np.ndarray | None) -> Column:
        whole = self._whole(info)
        if rows is None:
            start, stop = int(window.starts[0]), int(window.stops[0])
            return whole.slice(start, stop) if whole is not None else \
                self._rows(info, start, stop)
        return whole.take(rows) if whole is not None else self._take(info, rows)

    def _select(self, info: ColumnInfo, rows: np.ndarray) -> Column:
        whole = self._whole(info)
        return whole.take(rows) if whole is not None else self._take(info, rows)

    def _evict(self, next_row: int) -> None:
        """Drop cached pages that end before `next_row` (windows only move forward)."""
        for index, pages in self._cache.items():
            ordinal = self.reader.ordinal(self._infos[index])
            for p in [p for p in pages if ordinal.page_rows(p)[1] <= next_row]:
                del pages[p]

    # ---- the scan -----------------------------------------------------------------------
    def __iter__(self) -> Iterator[Batch]:
        stats = self.stats
        n = self.reader.num_rows
        stats.rows_total += n
        # the segment zone maps first (Doris Segment::new_iterator): cheapest, and a segment
        # they exclude needs no short-key search
        for info, p, values in self._indexable:
            if not self.reader.zone_map(info, stats).segment_may_match(p.op, values):
                stats.segments_skipped += 1
                stats.segments_skipped_zone_map += 1
                stats.rows_skipped_zone_map += n
                return
        ranges = self._short_key_ranges(n)
        stats.rows_skipped_short_key += n - ranges.count
        if ranges.count == 0:
            stats.segments_skipped += 1
            return
        before = ranges.count
        pruned = self._zone_map_ranges(ranges)
        if pruned is None:
            stats.segments_skipped += 1
            stats.rows_skipped_zone_map += before
            return
        stats.segments_read += 1
        stats.rows_skipped_zone_map += before - pruned.count
        # reading most of the segment: decode (and cache) whole columns instead of pages
        self._column_wise = pruned.count * 4 >= n
        for window in pruned.windows(self.batch_size):
            batch = self._scan_window(window)
            self._evict(int(window.stops[-1]))
            if batch is not None:
                yield batch
        self._cache.clear()

    def _scan_window(self, window: RowRanges) -> Batch | None:
        """Evaluate the predicates column by column. While many rows survive, each predicate
        column is decoded for the whole window and the masks are ANDed (contiguous decoding is
        cheapest); once few rows are left (< 1/8), later columns are decoded only for the
        surviving rows, in the pages that hold them. Then the other requested columns."""
        stats = self.stats
        rows = None if len(window) == 1 else window.row_ids()
        total = window.count
        decoded: dict[int, Column] = {}  # aligned with the window (dense) or with `sel_rows`
        mask: np.ndarray | None = None  # dense mode: survivors among the window's rows
        sel_rows: np.ndarray | None = None  # sparse mode: surviving row ids
        for info, preds in self._groups:
            col = decoded.get(info.index)
            if col is None:
                col = (self._gather(info, window, rows) if sel_rows is None
                       else self._select(info, sel_rows))
                decoded[info.index] = col
            hit = evaluate(preds[0], col)
            for p in preds[1:]:
                hit &= evaluate(p, col)
            if sel_rows is None:
                mask = hit if mask is None else mask & hit
                alive = int(np.count_nonzero(mask))
                if alive == 0:
                    break
                if alive * 8 < total:
                    local = np.flatnonzero(mask)
                    sel_rows = (window.row_ids() if rows is None else rows)[local]
                    decoded = {k: c.take(local) for k, c in decoded.items()}
                    mask = None
            elif not hit.all():
                local = np.flatnonzero(hit)
                sel_rows = sel_rows[local]
                decoded = {k: c.take(local) for k, c in decoded.items()}
                if len(sel_rows) == 0:
                    break
        if sel_rows is not None:
            selected = len(sel_rows)
        elif mask is not None:
            selected = int(np.count_nonzero(mask))
        else:
            selected = total
        stats.rows_filtered_predicate += total - selected
        stats.rows_returned += selected
        if selected == 0:
            return None
        keep = selection(mask) if mask is not None and selected < total else None
        if mask is not None and selected < total:
            decoded = {k: (c.filter(mask) if keep is None else c.take(keep))
                       for k, c in decoded.items()}
        for info in self.outputs:
            if info.index in decoded:
                continue
            if sel_rows is not None:
                decoded[info.index] = self._select(info, sel_rows)
            else:
                col = self._gather(info, window, rows)
                if mask is not None and selected < total:
                    col = col.filter(mask) if keep is None else col.take(keep)
                decoded[info.index] = col
        return Batch(self.names, tuple(decoded[i.index] for i in self.outputs))
