"""SegmentIterator: one scan of one segment, pruning with the indexes before reading data pages.

Doris `SegmentIterator` (seed 003): the rows a scan reads shrink in this order
1. segment zone map: a predicate no value in the segment can satisfy skips the segment before
   anything else (Doris checks it in `Segment::new_iterator`; `segments_skipped_zone_map`);
2. short key index: predicates on the leading prefix key columns become key ranges, and the
   sparse index turns them into row ranges (rows outside: `rows_skipped_short_key`);
3. bitmap indexes (`_apply_bitmap_indexes`, Doris `_apply_bitmap_index`): every predicate on a
   column whose segment has a bitmap index, and every disjunction whose columns all have one,
   becomes a roaring bitmap of rows; they are ANDed (a disjunction: OR of ANDs) into one row
   selection, before any data page is decoded. The scan then walks only row ranges holding
   selected rows (runs closer than SELECTION_GAP rows apart are walked as one range) and, in
   each window, decodes only the pages holding selected rows (`rows_skipped_bitmap_index`,
   `pages_skipped_bitmap_index`: pages of the read columns without a selected row). The
   predicates the bitmaps answered are exact, so they are not evaluated again.
   Fallback, as Doris does where an index cannot help:
   - a predicate whose lookup would read more than MAX_BITMAPS_PER_PREDICATE bitmaps (a
     range over most of a huge dictionary, an IN list longer than that) is not answered by
     the index (`BitmapIndexReader.cost`; a range reads its complement when that is smaller);
   - constants the index cannot compare exactly (`zone_map.index_value` raises
     NotIndexable), `in_bitmap` runtime key sets of more than MAX_KEY_SET_PROBES keys (smaller
     ones on integer columns are looked up as IN lists), and columns read as another decimal
     scale are not answered by it;
   - a selection keeping more than half of the rows left by the short key index is dropped
     (walking it costs more than decoding), and every predicate is evaluated as without it.
4. page zone maps of the predicate columns drop the pages that cannot match (`pages_skipped_
   zone_map`, their rows `rows_skipped_zone_map`); for a disjunction the bitmaps did not
   answer, the rows kept are the union over its branches of what the zone maps keep for every
   predicate of the branch (rows only: `rows_skipped_zone_map`);
5. bloom filters of the predicate columns drop the pages whose filter rules out every
   constant of an `=` / `IN` predicate (a join's runtime key set of at most
   MAX_KEY_SET_PROBES integer keys is probed as an IN list too), or that have no NULL for
   `IS NULL` (`pages_skipped_bloom_filter`, `rows_skipped_bloom_filter`);
6. the surviving rows are walked in windows of at most `batch_size` rows: predicate columns are
   decoded and every remaining predicate and disjunction evaluated exactly
   (`storage.predicates.evaluate` / `evaluate_disjunction`), then the other requested columns
   are decoded only in pages that still hold a selected row. A scan reading most of the
   segment (column-wise, one row range per window) runs its tests on selection vectors
   (storage/segment/selection.py): each test narrows the row numbers the previous ones kept.
Steps 1-5 depend only on the segment and the predicates: their outcome is kept per segment and
predicate set (storage/segment/scan_plan.py), so a repeated query starts at step 6.
Indexes only ever remove rows that cannot match (the bitmap selection is exact), so the result
is that of step 6 alone. (The tablet reader reads segments of at most one short-key block,
about one page per column, whole without this iterator: no index could skip a page there.)
The row counters partition `rows_total` (storage/scan_stats.py); rows of a walked range that
the bitmap selection excludes count as `rows_skipped_bitmap_index`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property

import numpy as np
from pyroaring import BitMap

from storage.batch import Batch, Column, selection
from storage.indexes.bitmap_index import BITMAP_OPS, BitmapIndexReader
from storage.indexes.bloom_filter import BLOOM_OPS
from storage.indexes.short_key import encode_row, key_ranges
from storage.indexes.zone_map import (
    EXACT,
    HAS_NOT_NULL,
    HAS_NULL,
    MAX_VALID,
    MIN_VALID,
    NotIndexable,
    ZoneEntry,
    entry_may_match,
    index_value,
    index_values,
)
from storage.predicates import (
    ColumnPredicate,
    Disjunction,
    evaluate,
    evaluate_disjunction,
    evaluation_rank,
    index_forms,
)
from storage.scan_stats import ScanStats
from storage.segment import scan_plan
from storage.segment import selection as selection_kernels
from storage.segment.dict_codes import DICT_OPS, DictPage
from storage.segment.encoding import Layout
from storage.segment.range_test import IntegerRange
from storage.segment.reader import ColumnInfo, SegmentReader
from storage.segment.row_ranges import RowRanges, sorted_span

MAX_BITMAPS_PER_PREDICATE = 1024
# A join's runtime key set (`in_bitmap`) this small is probed as an IN list in the bloom
# filters and the bitmap indexes (its [min, max] goes to the zone maps anyway).
MAX_KEY_SET_PROBES = 1024
_NO_VALIDITY = np.ones(0, np.bool_)  # the kernels' validity argument for a column without NULLs
SELECTION_GAP = 1024  # selected rows closer than this are walked as one row range
# The leading key column is decoded whole for a binary search (`_leading_key_rows`) only in
# segments of at most this many rows (a few pages of an integer column).
MAX_KEY_DECODE_ROWS = 1 << 18
# A row test of a window: the columns it reads and its mask over them.
RowTest = tuple[tuple[ColumnInfo, ...], Callable[[list[Column], int], np.ndarray]]


class SegmentIterator:
    def __init__(
        self,
        reader: SegmentReader,
        columns: Sequence[str],
        predicates: Sequence[ColumnPredicate],
        stats: ScanStats,
        batch_size: int,
        disjunctions: Sequence[Disjunction] = (),
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self.reader = reader
        self.names = tuple(columns)
        self.outputs = [reader.column(n) for n in columns]
        self.predicates = [(reader.column(p.column), p) for p in predicates]
        self.disjunctions = list(disjunctions)
        for d in self.disjunctions:
            for c in d.columns():
                reader.column(c)  # a missing column fails here, as for predicates
        self._given = predicates  # `_indexable` and `_index_predicates` are built on first use
        self.stats = stats
        self.batch_size = batch_size
        # column index -> page -> decoded page (or a DICT string page's codes, dict_codes.py)
        self._cache: dict[int, dict[int, Column | DictPage]] = {}
        self._dict_skipped: set[tuple[int, int]] = set()  # (column, page) counted as skipped
        # column index -> (the column's pages merged into one DictPage, or None when some page
        # is plain; the lookup table of its predicates): column-wise scans
        self._whole_codes: dict[int, tuple[DictPage | None, np.ndarray | None]] = {}
        self._columns: dict[int, Column | None] = {}  # column index -> whole column (or None)
        # column index -> merged codes of a string output column no predicate read (or None)
        self._output_codes: dict[int, DictPage | None] = {}
        self._column_wise = False
        self._infos: dict[int, ColumnInfo] = {}
        # the bitmap selection (sorted row ids) the windows start from, or None
        self._selection: np.ndarray | None = None
        self._tests: list[RowTest] = []
        self._answered_disjunctions: set[int] = set()  # positions the bitmaps answered

    # ---- pruning ------------------------------------------------------------------------
    def _drop_covered_predicates(self) -> None:
        """Forget the predicates every row of this segment satisfies, by its segment zone map
        (integer columns without NULLs whose [min, max] lies inside the predicate's range:
        `lo_orderdate BETWEEN 19930101 AND 19931231` on a segment of 1993). They could drop no
        row, yet would cost a short-key search, page zone maps and a test of every row."""
        covered = set()
        for info, p, values in self._indexable:
            layout = info.layout
            if (layout.layout is Layout.FIXED and layout.dtype.kind in "iu"
                    and segment_satisfies(self.reader.segment_zone(info, self.stats),
                                          p.op, values)):
                covered.add(id(p))
        if not covered:
            return
        self.predicates = [(i, p) for i, p in self.predicates if id(p) not in covered]
        self._index_predicates = [(i, p) for i, p in self._index_predicates
                                  if id(p) not in covered]
        self._indexable = [e for e in self._indexable if id(e[1]) not in covered]

    def _short_key_ranges(self, n: int) -> RowRanges:
        if not self.predicates or self.reader.footer.short_key is None:
            return RowRanges.full(n)
        sk = self.reader.short_key(self.stats)
        if sk is None:
            return RowRanges.full(n)
        parts, index = sk
        by_column: dict[str, list[ColumnPredicate]] = {}
        for info, p in self._index_predicates:
            by_column.setdefault(info.footer.name.lower(), []).append(p)
        if parts[0].name.lower() not in by_column:
            return RowRanges.full(n)  # no constraint on the leading key column
        infos = [self.reader.column(p.name) for p in parts]
        if not all(i.indexable for i in infos):
            return RowRanges.full(n)
        if not any(p.name.lower() in by_column for p in parts[1:]):
            exact = self._leading_key_rows(infos[0], n)
            if exact is not None:
                return exact
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

    def _leading_key_rows(self, info: ColumnInfo, n: int) -> RowRanges | None:
        """The rows whose leading key column satisfies its range predicates, by binary search
        over that column itself (rows are sorted by the key) when it is an integer column
        without NULLs, decoded whole once into the page cache: two `searchsorted` calls
        instead of the short-key search, which decodes a row key per probe (~20 per segment
        per query). None when the column is not such, or its predicates are not all range
        comparisons (`=` stays with the short key: a point lookup decodes ~2 pages)."""
        layout = info.layout
        if (layout.layout is not Layout.FIXED or layout.dtype.kind not in "iu"
                or info.type != info.stored):
            return None
        lo: tuple[int, bool] | None = None  # (value, inclusive)
        hi: tuple[int, bool] | None = None
        for i, p, values in self._indexable:
            if i.index != info.index:
                continue
            # `=` is a point lookup: the short key finds it decoding ~2 pages, cold or not
            if p.op not in ("<", "<=", ">", ">=") or not isinstance(values[0], int):
                return None
            v = values[0]
            if p.op in (">", ">="):
                b = (v, p.op != ">")
                lo = b if lo is None or (b[0], not b[1]) > (lo[0], not lo[1]) else lo
            if p.op in ("<", "<="):
                b = (v, p.op != "<")
                hi = b if hi is None or (b[0], b[1]) < (hi[0], hi[1]) else hi
        if (lo is None and hi is None) or not self.reader.has_page_cache:
            return None  # without a page cache the whole column would be decoded every time
        # decoded whole only in segments of modest size; in a bigger one the column is used
        # only when a column-wise scan has cached it already (else the short key)
        col = self.reader.read_column(info, self.stats, decode=n <= MAX_KEY_DECODE_ROWS)
        if col is None or col.validity is not None or len(col) != n:
            return None
        return RowRanges.of([sorted_span(col.data, lo, hi)])

    def _zone_map_ranges(self, ranges: RowRanges) -> RowRanges | None:
        """Ranges left after the zone maps; None when the segment zone map excludes it."""
        keep_by_column: dict[int, tuple[ColumnInfo, np.ndarray]] = {}
        for info, p, values in self._indexable:
            match = self.reader.page_zone_match(info, p.op, values, self.stats)
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

    def _bitmap_plan(self, p: ColumnPredicate, readers: dict[int, BitmapIndexReader | None]
                     ) -> tuple[BitmapIndexReader, str, list[object]] | None:
        """The bitmap index, operator and index values that answer `p` exactly, or None when
        the index cannot (see the fallback rules in the module doc)."""
        info = self.reader.column(p.column)
        key_set = p.op == "in_bitmap"
        if key_set:
            p = _key_set_as_in(p, info)
        if p.op not in BITMAP_OPS:
            return None
        if info.footer.bitmap_index is None or not info.indexable:
            return None
        if info.index not in readers:
            readers[info.index] = self.reader.bitmap_index(info, self.stats)
        index = readers[info.index]
        if index is None:
            return None
        try:
            values = (_index_values(p, info) if key_set
                      else [index_value(info.stored, info.layout, v) for v in p.values])
        except NotIndexable:
            return None
        if index.cost(p.op, values) > MAX_BITMAPS_PER_PREDICATE:
            return None
        return index, p.op, values

    def _conjunction_bitmap(self, preds: Sequence[ColumnPredicate],
                            readers: dict[int, BitmapIndexReader | None],
                            rows: BitMap | None) -> tuple[BitMap | None, list[int]]:
        """(the rows of `rows` (None: all) satisfying the answerable predicates of `preds`,
        their positions). Positive tests first; negative ones (`keeps_most`) then subtract
        their few bitmaps from that result, or are left to exact evaluation when no positive
        test narrowed it (they would keep most rows)."""
        plans = [(i, self._bitmap_plan(p, readers)) for i, p in enumerate(preds)]
        negative = []
        answered = []
        for i, plan in plans:
            if plan is None:
                continue
            index, op, values = plan
            if index.keeps_most(op, values):
                negative.append((i, index, op, values))
                continue
            rows = index.lookup(op, values) if rows is None else index.restrict(op, values, rows)
            answered.append(i)
            if not rows:
                return rows, answered
        if rows is not None:
            for i, index, op, values in negative:
                rows = index.restrict(op, values, rows)
                answered.append(i)
        return rows, answered

    def _bitmap_selection(self) -> tuple[BitMap | None, set[int], set[int]]:
        """(rows satisfying every predicate and disjunction the bitmap indexes answer, the
        positions of those predicates, of those disjunctions); None when none is answered."""
        readers: dict[int, BitmapIndexReader | None] = {}
        try:
            result, answered = self._conjunction_bitmap(
                [p for _, p in self.predicates], readers, None)
            preds = set(answered)
            disjs: set[int] = set()
            for i, d in enumerate(self.disjunctions):
                if result is not None and not result:
                    break
                union = BitMap()
                for branch in d.branches:
                    full = BitMap()
                    full.add_range(0, self.reader.num_rows)
                    rows, done = self._conjunction_bitmap(
                        branch, readers, full if result is None else result)
                    if rows is not None and not rows:
                        continue  # no row satisfies the predicates answered so far
                    if len(done) < len(branch):
                        break  # some predicate is not answerable: the disjunction is not
                    assert rows is not None
                    union |= rows
                else:
                    disjs.add(i)
                    result = union if result is None else result & union
            return result, preds, disjs
        except ValueError as e:  # a row set that does not decode (its page passed its CRC)
            raise self.reader.corrupted(f"bitmap index: {e}") from None

    def _apply_bitmap_indexes(self, ranges: RowRanges) -> RowRanges:
        """Ranges holding the rows of the bitmap selection (see the module doc); sets
        `_selection` and drops the answered predicates from the row tests when it is used."""
        if not any(i.footer.bitmap_index is not None for i, _ in self.predicates) and not any(
                self.reader.column(c).footer.bitmap_index is not None
                for d in self.disjunctions for c in d.columns()):
            return ranges
        started = time.perf_counter_ns()
        stats = self.stats
        try:
            bitmap, preds, disjs = self._bitmap_selection()
            if bitmap is None:
                return ranges
            rows = np.frombuffer(bitmap.to_array(), dtype=np.uint32).astype(np.int64)
            # keep the rows inside the short-key ranges
            at = np.searchsorted(ranges.starts, rows, side="right") - 1
            inside = at >= 0
            inside[inside] = rows[inside] < ranges.stops[at[inside]]
            rows = rows[inside]
            if len(rows) * 2 > ranges.count:
                return ranges  # keeps most rows: walking the selection costs more (fallback)
            if len(rows):
                cuts = np.flatnonzero(np.diff(rows) > SELECTION_GAP) + 1
                starts = rows[np.concatenate(([0], cuts))]
                stops = rows[np.concatenate((cuts - 1, [len(rows) - 1]))] + 1
                walked = RowRanges(starts.astype(np.int64), stops.astype(np.int64))
            else:
                walked = RowRanges.of(())
            self._count_bitmap_pages(ranges, rows)
            stats.rows_skipped_bitmap_index += ranges.count - walked.count
            self._selection = rows
            self._answered_disjunctions = disjs
            self._tests = self._row_tests(preds, disjs)
            return walked
        finally:
            stats.bitmap_index_filter_ns += time.perf_counter_ns() - started

    def _count_bitmap_pages(self, ranges: RowRanges, rows: np.ndarray) -> None:
        """Pages of the read columns that the ranges reached but that hold no selected row."""
        seen: set[int] = set()
        infos = [*self.outputs, *(i for i, _ in self.predicates),
                 *(self.reader.column(c) for d in self.disjunctions for c in d.columns())]
        for info in infos:
            if info.index in seen or info.footer.num_pages == 0:
                continue
            seen.add(info.index)
            ordinal = self.reader.ordinal(info, self.stats)
            starts, stops = ordinal.page_bounds()
            if len(ranges) == 1:  # pages overlapping the one range
                lo, hi = int(ranges.starts[0]), int(ranges.stops[0])
                reached = int(np.searchsorted(starts, hi)) - int(
                    np.searchsorted(stops, lo, side="right"))
            else:
                reached = int(np.count_nonzero(ranges.overlaps(starts, stops)))
            pages = ordinal.page_of(rows)  # non-decreasing: rows are sorted
            holding = int(np.count_nonzero(np.diff(pages))) + 1 if len(pages) else 0
            self.stats.pages_skipped_bitmap_index += reached - holding

    def _disjunction_zone_ranges(self, ranges: RowRanges) -> RowRanges:
        """Ranges left after the page zone maps test the disjunctions: a row range survives
        when, for some branch, every predicate's zone maps keep its pages (the union over
        branches of their intersections)."""
        for i, d in enumerate(self.disjunctions):
            if i in self._answered_disjunctions or ranges.count == 0:
                continue
            pairs: list[tuple[int, int]] = []
            for branch in d.branches:
                kept = ranges
                for info, f, values in self.reader.index_predicates(branch):
                    match = self.reader.zone_map(info, self.stats).may_match(f.op, values)
                    if not match[-1]:
                        kept = RowRanges.of(())
                    elif not match[:-1].all():
                        starts, stops = self.reader.ordinal(info, self.stats).page_bounds()
                        kept = kept.intersect(RowRanges.from_pages(starts, stops, match[:-1]))
                    if kept.count == 0:
                        break
                if kept == ranges:
                    break  # this branch keeps everything: so does the disjunction
                pairs.extend(zip(kept.starts.tolist(), kept.stops.tolist()))
            else:
                ranges = RowRanges.of(pairs)
        return ranges

    def _bloom_filter_ranges(self, ranges: RowRanges, answered: set[int]) -> RowRanges:
        """Ranges left after the bloom filters drop pages (`=`, `IN`, `IS NULL`)."""
        keep_by_column: dict[int, tuple[ColumnInfo, np.ndarray]] = {}
        started = time.perf_counter_ns()
        try:
            probes = list(self._indexable)
            for info, p in self.predicates:
                # no bloom filter on the column: no IN list to build (Python per key)
                if (p.op == "in_bitmap" and info.indexable
                        and info.footer.bloom_filter is not None):
                    q = _key_set_as_in(p, info)
                    if q.op == "in":
                        probes.append((info, q, _index_values(q, info)))
            for info, p, values in probes:
                if (p.op not in BLOOM_OPS or info.footer.bloom_filter is None
                        or info.index in answered):
                    continue
                filters = self.reader.bloom_filter(info, self.stats)
                if filters is None:
                    continue
                match = filters.may_contain(p.op, values, info.layout)
                prev = keep_by_column.get(info.index)
                keep_by_column[info.index] = (info, match if prev is None else prev[1] & match)
            before = ranges.count
            for info, keep in keep_by_column.values():
                if keep.all():
                    continue
                starts, stops = self.reader.ordinal(info, self.stats).page_bounds()
                dropped = ~keep
                self.stats.pages_skipped_bloom_filter += int(
                    np.count_nonzero(ranges.overlaps(starts[dropped], stops[dropped])))
                ranges = ranges.intersect(RowRanges.from_pages(starts, stops, keep))
            self.stats.rows_skipped_bloom_filter += before - ranges.count
            return ranges
        finally:
            self.stats.bloom_filter_ns += time.perf_counter_ns() - started

    def _row_tests(self, skip_preds: set[int] = frozenset(),  # type: ignore[assignment]
                   skip_disjs: set[int] = frozenset()) -> list[RowTest]:  # type: ignore[assignment]
        """The exact tests each window runs: per predicate column its predicates (most
        selective kinds first), then the disjunctions; minus those the bitmaps answered."""
        groups: dict[int, tuple[ColumnInfo, list[ColumnPredicate]]] = {}
        order = sorted(range(len(self.predicates)),
                       key=lambda i: evaluation_rank(self.predicates[i][1]))
        for i in order:
            if i in skip_preds:
                continue
            info, p = self.predicates[i]
            groups.setdefault(info.index, (info, []))[1].append(p)
        tests: list[RowTest] = []
        for info, preds in groups.values():
            if (info.layout.layout is Layout.VARLEN and info.type.is_string
                    and all(p.op in DICT_OPS for p in preds)):
                tests.append(((info,), _DictTest(preds)))
            elif info.layout.layout is Layout.FIXED and (
                    rng := IntegerRange.of(preds, info.layout.dtype)) is not None:
                tests.append(((info,), _RangeTest(rng)))
            else:
                tests.append(((info,), _conjunction(preds)))
        for i, d in enumerate(self.disjunctions):
            if i in skip_disjs:
                continue
            infos: list[ColumnInfo] = []
            for c in sorted(d.columns()):
                infos.append(self.reader.column(c))
            tests.append((tuple(infos), _disjunction(d, [c for c in sorted(d.columns())])))
        return tests

    # ---- page access --------------------------------------------------------------------
    def _page(self, info: ColumnInfo, page: int) -> Column:
        self._infos[info.index] = info
        pages = self._cache.setdefault(info.index, {})
        col = pages.get(page)
        if col is None:
            col = self.reader.read_page(info, page, self.stats)
            pages[page] = col
        elif isinstance(col, DictPage):  # read for its codes; now all its strings are needed
            col = pages[page] = col.decode()
        return col

    def _page_or_codes(self, info: ColumnInfo, page: int) -> Column | DictPage:
        """A page of a string column as its dictionary and codes when it is DICT-encoded (see
        storage/segment/dict_codes.py), else decoded; other columns decoded."""
        if not (info.layout.layout is Layout.VARLEN and info.type.is_string):
            return self._page(info, page)
        self._infos[info.index] = info
        pages = self._cache.setdefault(info.index, {})
        got = pages.get(page)
        if got is None:
            got = pages[page] = self.reader.read_page_codes(info, page, self.stats)
        return got

    def _code_mask(self, info: ColumnInfo, test: _DictTest, window: RowRanges,
                   rows: np.ndarray | None) -> np.ndarray:
        """`test` (predicates of one string column) over the window's rows (`rows`: sorted
        row ids, None: the window's single range), page by page: DICT pages on their codes,
        plain pages on their decoded strings. No string is gathered for a DICT page."""
        if self._column_wise:  # most of the segment: one merged dictionary for the scan
            whole, table = self._whole_codes_of(info, test)
            if whole is not None:
                part = whole.select(rows) if rows is not None else \
                    whole.slice(int(window.starts[0]), int(window.stops[0]))
                return part.mask(test.predicates, table)
        ordinal = self.reader.ordinal(info, self.stats)
        masks: dict[int, np.ndarray] = {}

        def page_mask(page: int) -> np.ndarray:
            got = masks.get(page)
            if got is not None:
                return got
            data = self._page_or_codes(info, page)
            if isinstance(data, DictPage):
                table = data.lookup_table(test.predicates)
                if table is not None and not table.any() and \
                        (info.index, page) not in self._dict_skipped:
                    self._dict_skipped.add((info.index, page))
                    self.stats.pages_skipped_dictionary += 1
                got = data.mask(test.predicates, table)
            else:
                got = test([data], len(data))
            masks[page] = got
            return got

        if rows is None:
            start, stop = int(window.starts[0]), int(window.stops[0])
            parts = []
            for page in ordinal.pages_between(start, stop):
                first, end = ordinal.page_rows(page)
                parts.append(page_mask(page)[max(start, first) - first:min(stop, end) - first])
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        if len(rows) == 0:
            return np.zeros(0, np.bool_)
        page_of_row = ordinal.page_of(rows)
        cuts = np.flatnonzero(page_of_row[1:] != page_of_row[:-1]) + 1
        starts = np.concatenate(([0], cuts)).tolist()
        stops = np.concatenate((cuts, [len(rows)])).tolist()
        out = np.empty(len(rows), np.bool_)
        for a, b in zip(starts, stops):
            page = int(page_of_row[a])
            base = int(ordinal.first_rows[page])
            out[a:b] = page_mask(page)[rows[a:b] - base]
        return out

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
            return self._page_or_codes(info, first).take(rows - base)
        cuts = np.flatnonzero(page_of_row[1:] != page_of_row[:-1]) + 1
        starts = np.concatenate(([0], cuts)).tolist()
        stops = np.concatenate((cuts, [len(rows)])).tolist()
        parts = []
        for a, b in zip(starts, stops):
            page = int(page_of_row[a])
            base = int(ordinal.first_rows[page])
            parts.append(self._page_or_codes(info, page).take(rows[a:b] - base))
        return Column.concat(parts)

    def _whole(self, info: ColumnInfo) -> Column | None:
        """The whole decoded column when this scan works column-wise (it reads most of the
        segment, or the column is cached whole already), else None (page by page)."""
        got = self._columns.get(info.index)
        if got is None and info.index not in self._columns:
            got = self.reader.read_column(info, self.stats, decode=self._column_wise)
            self._columns[info.index] = got
        return got

    def _merged_codes(self, info: ColumnInfo) -> DictPage | None:
        """The column's merged dictionary codes when a predicate test read them already
        (`_code_mask`), or, in a column-wise scan, for any string column whose pages are all
        DICT-encoded: its output rows then leave as codes (a DictColumn, decoded only if an
        operator reads the strings; GROUP BY keys stay codes)."""
        got = self._whole_codes.get(info.index)
        if got is not None:
            return got[0]
        if not (self._column_wise and info.layout.layout is Layout.VARLEN
                and info.type.is_string):
            return None
        if info.index not in self._output_codes:
            self._output_codes[info.index] = self.reader.read_column_codes(info, self.stats)
        return self._output_codes[info.index]

    def _gather(self, info: ColumnInfo, window: RowRanges, rows: np.ndarray | None) -> Column:
        codes = self._merged_codes(info)
        if codes is not None:
            return codes.take(rows) if rows is not None else \
                codes.slice(int(window.starts[0]), int(window.stops[0])).decode()
        whole = self._whole(info)
        if rows is None:
            start, stop = int(window.starts[0]), int(window.stops[0])
            return whole.slice(start, stop) if whole is not None else \
                self._rows(info, start, stop)
        return whole.take(rows) if whole is not None else self._take(info, rows)

    def _select(self, info: ColumnInfo, rows: np.ndarray) -> Column:
        codes = self._merged_codes(info)
        if codes is not None:
            return codes.take(rows)
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
        pruned = self._planned()
        if pruned is None:
            return
        n = self.reader.num_rows
        # reading most of the segment: decode (and cache) whole columns instead of pages; a
        # bitmap selection reads only the pages holding selected rows
        self._column_wise = self._selection is None and pruned.count * 4 >= n
        for window in pruned.windows(self.batch_size):
            batch = self._scan_window(window)
            self._evict(int(window.stops[-1]))
            if batch is not None:
                yield batch
        self._cache.clear()

    def _planned(self) -> RowRanges | None:
        """The row ranges to walk (None: skip the segment), from the segment's cached scan
        plan for these predicates when an earlier scan pruned it (storage/segment/
        scan_plan.py), else pruned now and remembered."""
        reader = self.reader
        key = scan_plan.plan_key(
            (reader.has_page_cache, *self.names),
            [(info.cache_parts, p) for info, p in self.predicates],
            self.disjunctions, lambda c: reader.column(c).cache_parts)
        plans = reader.meta.scan_plans
        if key is not None:
            plan = plans.get(key)
            if isinstance(plan, scan_plan.ScanPlan):
                scan_plan.replay(self.stats, plan.counts)
                self._tests = list(plan.tests)  # type: ignore[arg-type]
                # int64 again: row arithmetic on uint32 would wrap below zero
                self._selection = (None if plan.selection is None
                                   else plan.selection.astype(np.int64))
                self._answered_disjunctions = set(plan.answered_disjunctions)
                return plan.ranges
        before = scan_plan.counts(self.stats)
        ranges = self._prune()
        if key is not None:
            scan_plan.remember(plans, key, ranges, self._tests, self._selection,
                               self._answered_disjunctions, before,
                               scan_plan.counts(self.stats))
        return ranges

    # Pruning's inputs, built when a scan prunes (one whose plan is cached needs neither).
    @cached_property
    def _index_predicates(self) -> list[tuple[ColumnInfo, ColumnPredicate]]:
        """The predicates' index forms."""
        return [(info, f) for info, p in self.predicates for f in index_forms(p)]

    @cached_property
    def _indexable(self) -> list[tuple[ColumnInfo, ColumnPredicate, list[object]]]:
        """Index forms whose constants compare exactly with the stored index values."""
        return self.reader.index_predicates(self._given) if self._given else []

    def _prune(self) -> RowRanges | None:
        """Steps 1-5 of the module doc: the row ranges whose rows the windows test (None: no
        row of the segment can match). Sets the row tests and the bitmap selection."""
        stats = self.stats
        n = self.reader.num_rows
        stats.rows_total += n
        # the segment zone maps first (Doris Segment::new_iterator): cheapest, and a segment
        # they exclude needs no short-key search
        for info, p, values in self._indexable:
            if not entry_may_match(self.reader.segment_zone(info, stats), p.op, values):
                stats.segments_skipped += 1
                stats.segments_skipped_zone_map += 1
                stats.rows_skipped_zone_map += n
                return None
        self._drop_covered_predicates()
        ranges = self._short_key_ranges(n)
        stats.rows_skipped_short_key += n - ranges.count
        if ranges.count == 0:
            stats.segments_skipped += 1
            return None
        self._tests = self._row_tests()
        ranges = self._apply_bitmap_indexes(ranges)
        if ranges.count == 0:
            stats.segments_skipped += 1
            return None
        before = ranges.count
        pruned = self._zone_map_ranges(ranges)
        if pruned is None:
            stats.segments_skipped += 1
            stats.rows_skipped_zone_map += before
            return None
        if self.disjunctions:
            pruned = self._disjunction_zone_ranges(pruned)
        stats.rows_skipped_zone_map += before - pruned.count
        if pruned.count == 0:
            stats.segments_skipped += 1
            return None
        answered = set()
        if self._selection is not None:  # columns whose predicates the bitmaps answered
            remaining = {i.index for infos, _ in self._tests for i in infos}
            answered = {i.index for i, _ in self.predicates} - remaining
        pruned = self._bloom_filter_ranges(pruned, answered)
        if pruned.count == 0:
            stats.segments_skipped += 1
            return None
        stats.segments_read += 1
        return pruned

    def _window_selection(self, window: RowRanges) -> np.ndarray:
        """The bitmap-selected rows inside `window` (sorted row ids)."""
        sel = self._selection
        assert sel is not None
        lo, hi = np.searchsorted(sel, [window.starts[0], window.stops[-1]])
        rows = sel[lo:hi]
        if len(window) > 1:
            at = np.searchsorted(window.starts, rows, side="right") - 1
            rows = rows[rows < window.stops[at]]
        return rows

    def _selective(self, window: RowRanges) -> bool:
        """Whether the window runs on selection vectors (`_scan_selected`): one row range of
        a column-wise scan without a bitmap selection."""
        return self._column_wise and self._selection is None and len(window) == 1

    def _scan_selected(self, window: RowRanges) -> Batch | None:
        """The window's rows through selection vectors (storage/segment/selection.py): the
        first test yields the window rows it keeps, each later one narrows them, looking only
        at those rows; the outputs are gathered at the survivors. Dictionary-code and integer
        range tests run as kernels on the scan's whole columns; any other test evaluates its
        columns (decoded for the window) at the surviving rows; a string column with plain
        pages is tested page by page as in `_scan_window` (`_code_mask`)."""
        stats = self.stats
        start, stop = int(window.starts[0]), int(window.stops[0])
        total = stop - start
        sel: np.ndarray | None = None  # surviving rows, window-relative; None: all
        for infos, test in self._tests:
            sel = self._select_rows(infos, test, window, start, stop, sel)
            if len(sel) == 0:
                break
            if len(sel) == total:
                sel = None  # every row so far: later tests and outputs read slices, not takes
        selected = total if sel is None else len(sel)
        stats.rows_filtered_predicate += total - selected
        stats.rows_returned += selected
        if selected == 0:
            return None
        if sel is None:
            cols = tuple(self._gather(info, window, None) for info in self.outputs)
        else:
            ids = sel + start
            cols = tuple(self._select(info, ids) for info in self.outputs)
        return Batch(self.names, cols)

    def _select_rows(self, infos: tuple[ColumnInfo, ...], test: Callable[..., np.ndarray],
                     window: RowRanges, start: int, stop: int, sel: np.ndarray | None
                     ) -> np.ndarray:
        """The rows of `sel` (window-relative; None: every row) passing `test`."""
        info = infos[0]
        if isinstance(test, _DictTest) and not any(
                p.op == "is_null" for p in test.predicates):
            whole, table = self._whole_codes_of(info, test)
            if whole is not None and table is not None:
                codes = whole.codes[start:stop]
                valid = whole.validity
                has = valid is not None
                v = valid[start:stop] if valid is not None else _NO_VALIDITY
                return (selection_kernels.codes_first(codes, table, v, has) if sel is None
                        else selection_kernels.codes_next(codes, table, v, has, sel))
        if isinstance(test, _DictTest):  # page by page: DICT pages on their codes
            hit = self._code_mask(info, test, window, None if sel is None else sel + start)
            return np.flatnonzero(hit) if sel is None else sel[hit]
        if isinstance(test, _RangeTest):
            whole_col = self._whole(info)
            if whole_col is not None and whole_col.offsets is None:
                rng = test.rng
                data = whole_col.data[start:stop]
                if rng.lo > rng.hi:
                    return np.zeros(0, np.int64)
                as_values = data.dtype.type
                lo, hi = as_values(rng.lo), as_values(rng.hi)
                has = whole_col.validity is not None
                v = whole_col.validity[start:stop] if has else _NO_VALIDITY  # type: ignore[index]
                return (selection_kernels.range_first(data, v, has, lo, hi, rng.excluded)
                        if sel is None else selection_kernels.range_next(
                            data, v, has, lo, hi, rng.excluded, sel))
        cols = [self._gather(i, window, None) for i in infos]
        if sel is not None:
            cols = [c.take(sel) for c in cols]
        hit = test(cols, stop - start if sel is None else len(sel))
        return np.flatnonzero(hit) if sel is None else sel[hit]

    def _whole_codes_of(self, info: ColumnInfo, test: _DictTest
                        ) -> tuple[DictPage | None, np.ndarray | None]:
        """The column's pages merged into one DictPage (None when some page is plain) and the
        lookup table of `test`'s predicates on it, read once per scan."""
        got = self._whole_codes.get(info.index)
        if got is None:
            whole = self.reader.read_column_codes(info, self.stats)
            table = None if whole is None else whole.lookup_table(test.predicates)
            got = self._whole_codes[info.index] = (whole, table)
        return got

    def _scan_window(self, window: RowRanges) -> Batch | None:
        """Run the row tests column by column. While many rows survive, each test's columns
        are decoded for the whole window and the masks are ANDed (contiguous decoding is
        cheapest); once few rows are left (< 1/8), or from the start when a bitmap selection
        picks the rows, later columns are decoded only for the surviving rows, in the pages
        that hold them. Then the other requested columns."""
        if self._selective(window):
            return self._scan_selected(window)
        stats = self.stats
        rows = None if len(window) == 1 else window.row_ids()
        total = window.count
        decoded: dict[int, Column] = {}  # aligned with the window (dense) or with `sel_rows`
        mask: np.ndarray | None = None  # dense mode: survivors among the window's rows
        sel_rows: np.ndarray | None = None  # sparse mode: surviving row ids
        if self._selection is not None:
            sel_rows = self._window_selection(window)
            stats.rows_skipped_bitmap_index += total - len(sel_rows)
            total = len(sel_rows)
            if total == 0:
                return None
        for infos, test in self._tests:
            if isinstance(test, _DictTest) and infos[0].index not in decoded:
                # on the dictionary codes; the strings are gathered later, for survivors only
                hit = self._code_mask(infos[0], test, window,
                                      sel_rows if sel_rows is not None else rows)
            else:
                cols = []
                for info in infos:
                    col = decoded.get(info.index)
                    if col is None:
                        col = (self._gather(info, window, rows) if sel_rows is None
                               else self._select(info, sel_rows))
                        decoded[info.index] = col
                    cols.append(col)
                hit = test(cols, total if sel_rows is None else len(sel_rows))
            if sel_rows is None:
                mask = hit if mask is None else mask & hit
                alive = int(np.count_nonzero(mask))
                if alive == 0:
                    break
                if alive * 8 < total:
                    local = np.flatnonzero(mask)
                    sel_rows = window.take(local) if rows is None else rows[local]
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
            elif (mask is not None and selected < total and info.type.is_string
                  and info.layout.layout is Layout.VARLEN):
                # late materialisation: gather only the surviving rows' strings
                local = keep if keep is not None else np.flatnonzero(mask)
                ids = window.take(local) if rows is None else rows[local]
                decoded[info.index] = self._select(info, ids)
            else:
                col = self._gather(info, window, rows)
                if mask is not None and selected < total:
                    col = col.filter(mask) if keep is None else col.take(keep)
                decoded[info.index] = col
        return Batch(self.names, tuple(decoded[i.index] for i in self.outputs))


def _key_set_as_in(p: ColumnPredicate, info: ColumnInfo) -> ColumnPredicate:
    """A small runtime key set (`in_bitmap`) on an integer column as the equivalent IN list
    (same rows: both test the column's integer values for membership); else `p` itself."""
    (members,) = p.values
    layout = info.layout
    if (layout.layout is not Layout.FIXED or layout.dtype.kind not in "iu"
            or len(members) > MAX_KEY_SET_PROBES):  # type: ignore[arg-type]
        return p
    lo = members.lo  # type: ignore[attr-defined]
    values = (np.flatnonzero(members.bits) + lo).tolist()  # type: ignore[attr-defined]
    return ColumnPredicate(p.column, "in", tuple(values))


def _index_values(p: ColumnPredicate, info: ColumnInfo) -> list[object]:
    """The constants of an IN list as index values; those the column cannot hold are left
    out (no row equals them)."""
    return index_values(info.stored, info.layout, p.values)


class _DictTest:
    """The predicates of one string column, all answerable on dictionary codes: the window
    tests them page by page (`SegmentIterator._code_mask`); called on decoded strings (a plain
    page, or a column decoded already) it is the plain conjunction."""

    __slots__ = ("_plain", "predicates")

    def __init__(self, predicates: list[ColumnPredicate]) -> None:
        self.predicates = predicates
        self._plain = _conjunction(predicates)

    def __call__(self, cols: list[Column], n: int) -> np.ndarray:
        return self._plain(cols, n)


class _RangeTest:
    """The conjunction of an integer column's comparisons, in one pass (range_test.py); the
    selection-vector windows use its range directly (selection.py)."""

    __slots__ = ("rng",)

    def __init__(self, rng: IntegerRange) -> None:
        self.rng = rng

    def __call__(self, cols: list[Column], n: int) -> np.ndarray:
        col = cols[0]
        return self.rng.mask(col.data, col.validity)


def _conjunction(preds: list[ColumnPredicate]) -> Callable[[list[Column], int], np.ndarray]:
    def test(cols: list[Column], n: int) -> np.ndarray:
        hit = evaluate(preds[0], cols[0])
        for p in preds[1:]:
            hit &= evaluate(p, cols[0])
        return hit
    return test


def _disjunction(d: Disjunction, names: list[str]) -> Callable[[list[Column], int], np.ndarray]:
    """The exact test of a disjunction over its columns (`names`, lower case, in order)."""
    def test(cols: list[Column], n: int) -> np.ndarray:
        by_name = dict(zip(names, cols))
        return evaluate_disjunction(d, lambda c: by_name[c.lower()], n)
    return test


def segment_satisfies(entry: ZoneEntry, op: str, values: Sequence[object]) -> bool:
    """Whether every row of a segment satisfies `op values`, by its segment zone map entry
    (`values`: index values). Only exact bounds of a column without NULLs prove it (a NULL
    satisfies no comparison); False whenever unsure."""
    flags, lo, hi = entry
    if flags & HAS_NULL or not flags & HAS_NOT_NULL:
        return False
    if op == "is_not_null":
        return True
    need = MIN_VALID | MAX_VALID | EXACT
    if flags & need != need:
        return False
    try:
        if op == "<":
            return bool(hi < values[0])  # type: ignore[operator]
        if op == "<=":
            return bool(hi <= values[0])  # type: ignore[operator]
        if op == ">":
            return bool(lo > values[0])  # type: ignore[operator]
        if op == ">=":
            return bool(lo >= values[0])  # type: ignore[operator]
        if op == "=":
            return bool(lo == hi == values[0])
        if op == "in":
            return bool(lo == hi) and any(lo == v for v in values)
        if op in ("!=", "not_in"):
            return all(v < lo or v > hi for v in values)  # type: ignore[operator]
    except TypeError:  # a constant of another kind than the bounds: not provable here
        return False
    return False
