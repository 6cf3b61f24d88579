"""Segment reader: opens one segment file (mmap), validates it, and decodes pages and indexes.

Owns the file side of reading (Doris `Segment` + `ColumnReader`): the footer is checked when the
reader opens; ordinal, zone map and short-key index pages are loaded lazily, the first time a scan
needs them; data pages are CRC-checked and decoded into numpy arrays, then converted to the
column type the caller asked for. The scan itself (pruning order, batches) is
`iterator.SegmentIterator`, reached through `SegmentReader.read`.

Any inconsistency (bad magic, checksum, offsets, sizes, encodings) raises `ShaleError` 1105
"Corrupted segment file <path> of tablet <id>: <what>"; no decoded value is returned from a page
that failed its checks.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import lz4.block
import numpy as np

from storage.batch import Batch, Column
from storage.errors import DorisError, ShaleError
from storage.indexes.bitmap_index import (
    BitmapIndex,
    BitmapIndexReader,
    decode_bitmap_page,
    decode_dict_page,
)
from storage.indexes.bloom_filter import BloomFilterIndex
from storage.indexes.ordinal import OrdinalIndex
from storage.indexes.short_key import KeyPart, ShortKeyIndex, plan_prefix
from storage.indexes.spec import (
    DEFAULT_BLOOM_FILTER_FPP,
    NO_INDEXES,
    SegmentIndexSpec,
)
from storage.indexes.zone_map import NotIndexable, ZoneEntry, ZoneMap
from storage.page_cache import PageCache
from storage.predicates import INDEXABLE_OPS, ColumnPredicate, Disjunction, index_forms
from storage.scan_stats import ScanStats
from storage.segment.dict_codes import DictPage, merge_pages, narrow_codes
from storage.segment.encoding import (
    Encoding,
    Layout,
    PhysicalLayout,
    decode_dict_parts,
    decode_values,
    layout_of,
)
from storage.segment.footer import HEADER, ColumnFooter, PagePointer, SegmentFooter, read_footer
from storage.segment.meta_cache import SEGMENT_META_CACHE, Identity, SegmentMeta, StoredColumn
from storage.segment.page import (
    FLAG_ALL_NULL,
    FLAG_VALIDITY,
    PageCorrupted,
    PageHeader,
    PageKind,
    parse_page,
)
from storage.segment.prune import ZonePruner, indexed_constants
from storage.types import DataType, parse_type

# What decoding a damaged page can raise before a check catches it.
_DECODE_ERRORS = (ValueError, struct.error, lz4.block.LZ4BlockError, IndexError, OverflowError)
# The whole-column key a reader without a page cache records: no cache issues id -1 (ids count
# up from 0), so a lookup with it only misses.
NO_CACHE_KEY = (-1, -1)
# Page zone-map verdicts remembered per segment (`SegmentReader.page_zone_match`)
MAX_ZONE_MATCHES = 64


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    index: int
    footer: ColumnFooter
    stored: DataType  # type written in the footer: drives decoding and the indexes
    type: DataType  # type the caller asked for: the type of returned Columns
    layout: PhysicalLayout
    # (file identity, column, type read as) naming the column's pages in the page cache; the
    # type by its repr, whose string hash is cached (a DataType hashes its fields every time)
    cache_parts: tuple[object, ...] = ()

    @property
    def indexable(self) -> bool:
        """Indexes hold stored-type values. The allowed conversions keep values equal (VARCHAR(n)
        -> STRING, integer widening, FLOAT -> DOUBLE; constants the stored type cannot hold are
        NotIndexable anyway), except a DECIMAL scale change, which rescales them."""
        return not (self.stored.is_decimal and self.stored.scale != self.type.scale)


class SegmentReader:
    """One open segment file version. Its validated metadata comes from the segment metadata
    cache when another scan parsed it already (storage/segment/meta_cache.py); the file is
    mapped only when a page must be read that the page cache (its engine's, when the reader
    has one) does not hold."""

    def __init__(
        self, path: str | os.PathLike[str], types: Mapping[str, DataType],
        tablet_id: int | None = None, published: SegmentMeta | None = None,
        page_cache: PageCache | None = None,
    ) -> None:
        """`published`: the metadata cached for this path (`SEGMENT_META_CACHE.latest`) of a
        segment of a published rowset, whose file never changes: trusted without a stat.
        Otherwise the file is looked up by its current identity. Either way a page read maps
        the file and checks that identity first. `page_cache`: where decoded pages are looked
        up and kept (the engine's, for queries); None decodes every page."""
        self._path = os.fspath(path)  # a Path only on demand: scans open thousands of readers
        self.tablet_id = tablet_id
        self._types = types
        self._cache = page_cache
        self._mm: mmap.mmap | None = None
        self._closed = False
        if published is not None:
            # A stat per segment per scan is what made many small rowsets slow under the GIL:
            # each one releases it, and a busy scan thread then waits to get it back.
            meta = published
            self._identity: Identity = meta.identity
        else:
            try:
                st = os.stat(self._path)
            except OSError as e:
                raise self.corrupted(f"cannot open: {e.strerror}") from None
            # names this version of the file in the page and metadata caches
            self._identity = (self._path, st.st_ino, st.st_mtime_ns, st.st_size)
            cached = SEGMENT_META_CACHE.get(self._identity)
            meta = cached if cached is not None else self._load_meta()
        self._meta = meta
        self._footer = meta.footer
        self._data_end = meta.data_end
        self._columns: dict[str, ColumnInfo] = {}  # lower-case name -> column as read, lazily
        self.num_rows: int = meta.footer.num_rows

    @property
    def path(self) -> Path:
        return Path(self._path)

    @property
    def has_page_cache(self) -> bool:
        return self._cache is not None

    @property
    def meta(self) -> SegmentMeta:
        return self._meta

    def _load_meta(self) -> SegmentMeta:
        """Map the file, check and parse its footer, and cache the result."""
        self._map()
        assert self._mm is not None
        try:
            footer, data_end = read_footer(self._mm)
            meta = SegmentMeta(self._identity, footer, data_end,
                               self._check_columns(footer, data_end))
        except ValueError as e:
            self.close()
            raise self.corrupted(str(e)) from None
        except ShaleError:
            self.close()
            raise
        # Unmapped again: a scan may open many segments before reading any (or only prune
        # them with the zone maps); a page read maps the file when it needs it.
        self._unmap()
        SEGMENT_META_CACHE.put(meta)
        return meta

    def _map(self) -> None:
        try:
            with open(self._path, "rb") as f:
                st = os.fstat(f.fileno())
                if (self._path, st.st_ino, st.st_mtime_ns, st.st_size) != self._identity:
                    # not the version whose metadata the reader holds (published segments
                    # never change; damage or a test may): its offsets are not this file's
                    raise self.corrupted("the file changed after it was validated")
                self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # mmap of an empty file
            raise self.corrupted("empty file") from None
        except OSError as e:
            raise self.corrupted(f"cannot open: {e.strerror}") from None

    def corrupted(self, what: str) -> ShaleError:
        tablet = "" if self.tablet_id is None else f" of tablet {self.tablet_id}"
        return DorisError(f"Corrupted segment file {self._path}{tablet}: {what}")

    @staticmethod
    def _check_columns(footer: SegmentFooter, data_end: int) -> dict[str, StoredColumn]:
        """The footer's columns, checked: unique names, index pages inside the data region, key
        columns stored. Raises ValueError."""
        def check(p: PagePointer) -> None:
            if p.offset < HEADER.size or p.offset + p.size > data_end:
                raise ValueError("index page pointer outside the file")

        out: dict[str, StoredColumn] = {}
        for i, c in enumerate(footer.columns):
            key = c.name.lower()
            if key in out:
                raise ValueError(f"duplicate column {c.name}")
            check(c.ordinal)
            check(c.zone_map)
            for optional in (c.bitmap_index, c.bloom_filter):
                if optional is not None:
                    check(optional)
            stored = parse_type(c.type_sql)
            out[key] = StoredColumn(i, c, stored, layout_of(stored))
        if footer.short_key is not None:
            check(footer.short_key.page)
        for k in footer.key_columns:
            if k.lower() not in out:
                raise ValueError(f"key column {k} is not stored")
        return out

    def _column_info(self, key: str) -> ColumnInfo:
        """Column `key` (lower case) as the caller asked to read it (`types`); checked on first
        use, so a scan pays only for the columns it touches. Kept in the metadata for the
        next reader asking for the same type object (the catalog's, for every scan)."""
        c = self._meta.columns[key]
        target = self._types.get(key, c.stored)
        known = self._meta.infos.get(key)
        if known is not None and known[0] is target:
            info = self._columns[key] = known[1]
            return info
        if target != c.stored and not can_convert(c.stored, target):
            raise ShaleError(
                f"errCode = 2, detailMessage = segment {self._path} stores column "
                f"{c.footer.name} as {c.stored.sql()}, cannot read it as {target.sql()}"
            )
        info = ColumnInfo(c.index, c.footer, c.stored, target, c.layout,
                          (self._identity, key, repr(target)))
        self._meta.infos[key] = (target, info, self._whole_column_key(info))
        self._columns[key] = info
        return info

    def _whole_column_key(self, info: ColumnInfo) -> tuple[int, int]:
        """The page-cache key of the whole column (page -1); NO_CACHE_KEY without a cache."""
        if self._cache is None:
            return NO_CACHE_KEY
        return (self._cache.file_id(info.cache_parts), -1)

    # ---- access -------------------------------------------------------------------------
    @property
    def footer(self) -> SegmentFooter:
        return self._footer

    def column(self, name: str) -> ColumnInfo:
        key = name.lower()
        info = self._columns.get(key)
        if info is not None:
            return info
        if key not in self._meta.columns:
            raise KeyError(f"column {name} is not in segment {self._path}")
        return self._column_info(key)

    def _page(
        self, offset: int, size: int, kind: PageKind, stats: ScanStats | None
    ) -> tuple[PageHeader, bytes]:
        if self._mm is None:
            if self._closed:
                raise ValueError(f"segment {self._path} is closed")
            self._map()
            assert self._mm is not None
        if stats is not None:
            stats.bytes_read += size
        # Slicing the mmap copies the page out: no buffer export stays alive (an exception's
        # traceback holding a memoryview would make mmap.close() fail), and the CRC is checked
        # on the private copy, so a concurrent change to the file cannot slip past it.
        return parse_page(self._mm[offset : offset + size], kind)

    def ordinal(self, info: ColumnInfo, stats: ScanStats | None = None) -> OrdinalIndex:
        key = info.footer.name.lower()
        idx = self._meta.ordinals.get(key)
        if idx is None:
            p = info.footer.ordinal
            try:
                _, body = self._page(p.offset, p.size, PageKind.ORDINAL, stats)
                idx = OrdinalIndex.parse(body, info.footer.num_pages, self.num_rows, self._data_end)
            except _DECODE_ERRORS as e:
                raise self.corrupted(f"ordinal index of column {info.footer.name}: {e}") from None
            self._meta.ordinals[key] = idx
        return idx

    def zone_map(self, info: ColumnInfo, stats: ScanStats | None = None) -> ZoneMap:
        key = info.footer.name.lower()
        zm = self._meta.zone_maps.get(key)
        if zm is None:
            p = info.footer.zone_map
            try:
                _, body = self._page(p.offset, p.size, PageKind.ZONE_MAP, stats)
                zm = ZoneMap.parse(body, info.layout, info.footer.num_pages + 1)
            except _DECODE_ERRORS as e:
                raise self.corrupted(f"zone map of column {info.footer.name}: {e}") from None
            self._meta.add_zone_map(key, zm)
        return zm

    def segment_zone(self, info: ColumnInfo, stats: ScanStats | None = None) -> ZoneEntry:
        """The segment-level zone map entry of a column as Python scalars (kept with the
        cached metadata: no conversion per scan)."""
        key = info.footer.name.lower()
        entry = self._meta.segment_zones.get(key)
        if entry is None:
            self.zone_map(info, stats)
            entry = self._meta.segment_zones[key]
        return entry

    def page_zone_match(self, info: ColumnInfo, op: str, values: Sequence[object],
                        stats: ScanStats | None = None) -> np.ndarray:
        """`ZoneMap.may_match(op, values)` of a column, remembered with the segment's cached
        metadata (`SegmentMeta.zone_matches`): the files never change, and dashboards ask the
        same predicates again, where comparing every page's bounds (strings: one Python
        comparison per page) was a fixed cost per segment per query. Read-only result."""
        try:
            key = (info.footer.name.lower(), op, tuple(values))
            hash(key)
        except TypeError:
            return self.zone_map(info, stats).may_match(op, values)
        memo = self._meta.zone_matches
        got = memo.get(key)
        if got is None:
            got = self.zone_map(info, stats).may_match(op, values)
            got.flags.writeable = False
            if len(memo) >= MAX_ZONE_MATCHES:
                memo.clear()  # crude bound; a miss only recomputes
            memo[key] = got
        return got

    def written_indexes(self) -> SegmentIndexSpec:
        """The bitmap indexes and bloom filters this segment holds (lower-case column names;
        the FPP of its bloom filters, the default when it has none): what an index-building
        job compares with the table's SegmentIndexSpec to see whether a rewrite is due."""
        columns = self._footer.columns
        bitmap = frozenset(c.name.lower() for c in columns if c.bitmap_index is not None)
        bloom = [c for c in columns if c.bloom_filter is not None]
        fpp = next((c.bloom_filter_fpp for c in bloom if c.bloom_filter_fpp is not None),
                   DEFAULT_BLOOM_FILTER_FPP)
        if not bitmap and not bloom:
            return NO_INDEXES
        return SegmentIndexSpec(bitmap, frozenset(c.name.lower() for c in bloom), fpp)

    def bloom_filter(self, info: ColumnInfo,
                     stats: ScanStats | None = None) -> BloomFilterIndex | None:
        """The column's per-page bloom filters, or None when the segment has none for it."""
        p = info.footer.bloom_filter
        if p is None:
            return None
        key = info.footer.name.lower()
        bf = self._meta.bloom_filters.get(key)
        if bf is None:
            try:
                _, body = self._page(p.offset, p.size, PageKind.BLOOM_FILTER, stats)
                bf = BloomFilterIndex.parse(body, info.footer.num_pages)
            except _DECODE_ERRORS as e:
                raise self.corrupted(f"bloom filter of column {info.footer.name}: {e}") from None
            self._meta.bloom_filters[key] = bf
        return bf

    def bitmap_index(self, info: ColumnInfo,
                     stats: ScanStats | None = None) -> BitmapIndexReader | None:
        """Lookups in the column's bitmap index, or None when the segment has none for it.
        The BITMAP_INDEX page is parsed once per file version (segment metadata cache); the
        dictionary and bitmap pages a lookup needs are read through the page cache."""
        p = info.footer.bitmap_index
        if p is None:
            return None
        key = info.footer.name.lower()
        name = info.footer.name
        stored = info.stored
        index = self._meta.bitmap_indexes.get(key)
        if index is None:
            try:
                _, body = self._page(p.offset, p.size, PageKind.BITMAP_INDEX, stats)
                index = BitmapIndex.parse(body, info.layout, stored, self.num_rows, self._data_end)
            except _DECODE_ERRORS as e:
                raise self.corrupted(f"bitmap index of column {name}: {e}") from None
            self._meta.bitmap_indexes[key] = index
        idx = index
        cache = self._cache
        dict_id = bitmap_id = NO_CACHE_KEY[0]
        if cache is not None:
            dict_id = cache.file_id((self._identity, key, "bitmap_index.dict"))
            bitmap_id = cache.file_id((self._identity, key, "bitmap_index.bitmaps"))

        def dict_page(page: int) -> Column:
            cached = cache.get((dict_id, page)) if cache is not None else None
            if cached is not None:
                return cached
            try:
                header, body = self._page(int(idx.dict_offset[page]), int(idx.dict_size[page]),
                                          PageKind.BITMAP_DICT, stats)
                count = int(idx.dict_first[page + 1] - idx.dict_first[page])
                if header.num_rows != count:
                    raise PageCorrupted(f"dictionary page has {header.num_rows} values, "
                                        f"the index says {count}")
                col = decode_dict_page(body, count, info.layout, stored)
            except _DECODE_ERRORS as e:
                raise self.corrupted(
                    f"bitmap index dictionary page {page} of column {name}: {e}") from None
            if cache is not None:
                cache.put((dict_id, page), col)
            return col

        def bitmap_page(page: int) -> Column:
            cached = cache.get((bitmap_id, page)) if cache is not None else None
            if cached is not None:
                return cached
            try:
                header, body = self._page(int(idx.bm_offset[page]), int(idx.bm_size[page]),
                                          PageKind.BITMAP, stats)
                count = int(idx.bm_first[page + 1] - idx.bm_first[page])
                if header.num_rows != count:
                    raise PageCorrupted(f"bitmap page has {header.num_rows} entries, "
                                        f"the index says {count}")
                col = decode_bitmap_page(body, count)
            except _DECODE_ERRORS as e:
                raise self.corrupted(
                    f"bitmap index bitmap page {page} of column {name}: {e}") from None
            if cache is not None:
                cache.put((bitmap_id, page), col)
            return col

        return BitmapIndexReader(idx, info.layout, dict_page, bitmap_page)

    def short_key(
        self, stats: ScanStats | None = None
    ) -> tuple[list[KeyPart], ShortKeyIndex] | None:
        """The prefix columns and the sparse index, or None when the segment has none."""
        sk = self._footer.short_key
        if sk is None:
            return None
        if self._meta.short_key is None:
            keys = [self.column(k) for k in self._footer.key_columns]
            parts = plan_prefix([(c.footer.name, c.stored) for c in keys], len(sk.columns))
            if [p.name for p in parts] != list(sk.columns):
                raise self.corrupted("short key columns do not match the key columns")
            try:
                _, body = self._page(sk.page.offset, sk.page.size, PageKind.SHORT_KEY, stats)
                index = ShortKeyIndex.parse(body, self.num_rows)
            except _DECODE_ERRORS as e:
                raise self.corrupted(f"short key index: {e}") from None
            self._meta.short_key = (parts, index)
        return self._meta.short_key

    def read_page(self, info: ColumnInfo, page: int, stats: ScanStats | None = None) -> Column:
        """Data page `page` of a column as a Column of the requested type: from the page cache,
        else decoded (CRC-checked) and cached. The result is shared: never write into it."""
        cache = self._cache
        if cache is None:
            return self._decode_page(info, page, stats)
        key = (cache.file_id(info.cache_parts), page)
        cached = cache.get(key)
        if cached is not None:
            if stats is not None:
                stats.pages_read += 1
                stats.pages_cached += 1
            return cached
        col = self._decode_page(info, page, stats)
        cache.put(key, col)
        return col

    def read_page_codes(self, info: ColumnInfo, page: int,
                        stats: ScanStats | None = None) -> DictPage | Column:
        """Data page `page` of a string column as its dictionary and codes when it is
        DICT-encoded (storage/segment/dict_codes.py), else as `read_page` returns it. Both
        forms go through the page cache: a DICT page as two entries (its codes with the rows'
        validity, and its dictionary), kept apart from the decoded page's entry."""
        cache = self._cache
        keys = None
        if cache is not None:
            codes_id = cache.file_id(info.cache_parts + ("dict.codes",))
            dict_id = cache.file_id(info.cache_parts + ("dict.values",))
            keys = ((codes_id, page), (dict_id, page))
            codes = cache.get(keys[0])
            values = cache.get(keys[1]) if codes is not None else None
            if codes is not None and values is not None:
                if stats is not None:
                    stats.pages_read += 1
                    stats.pages_cached += 1
                return DictPage(values, codes.data, codes.validity)
            decoded = cache.get((cache.file_id(info.cache_parts), page))
            if decoded is not None:  # decoded already (a plain page, or an output's read)
                if stats is not None:
                    stats.pages_read += 1
                    stats.pages_cached += 1
                return decoded
        ordinal = self.ordinal(info, stats)
        start, stop = ordinal.page_rows(page)
        try:
            offset, size = int(ordinal.offsets[page]), int(ordinal.sizes[page])
            header, body = self._page(offset, size, PageKind.DATA, stats)
            got = decode_dict_page_codes(header, body, info.type, info.layout, stop - start)
            if got is None:
                col = decode_data_page(header, body, info.stored, info.layout, stop - start)
        except _DECODE_ERRORS as e:
            raise self.corrupted(f"data page {page} of column {info.footer.name}: {e}") from None
        if stats is not None:
            stats.pages_read += 1
        if got is None:
            col = col if info.type == info.stored else convert_column(col, info.type)
            if cache is not None:
                cache.put((cache.file_id(info.cache_parts), page), col)
            return col
        if keys is not None:
            assert cache is not None
            cache.put(keys[0], Column(info.type, got.codes, got.validity))
            cache.put(keys[1], got.dictionary)
        return got

    def read_column_codes(self, info: ColumnInfo,
                          stats: ScanStats | None = None) -> DictPage | None:
        """A string column whose every page is DICT-encoded (or all NULL) as one DictPage over
        the union of the page dictionaries (`dict_codes.merge_pages`), else None; cached
        whole (page -1, as `read_column`). Scans reading most of a segment test their string
        predicates on it."""
        if not (info.layout.layout is Layout.VARLEN and info.type.is_string):
            return None
        cache = self._cache
        keys = None
        pages = info.footer.num_pages
        if cache is not None:
            keys = ((cache.file_id(info.cache_parts + ("dict.codes",)), -1),
                    (cache.file_id(info.cache_parts + ("dict.values",)), -1))
            codes = cache.get(keys[0])
            if codes is not None:
                values = cache.get(keys[1]) if len(codes.data) else None
                if len(codes.data) == 0:  # known: some page is plain
                    return None
                if values is not None:
                    if stats is not None:
                        stats.pages_read += pages
                        stats.pages_cached += pages
                    return DictPage(values, codes.data, codes.validity)
        parts: list[DictPage | Column] = []
        for p in range(pages):  # not through the page cache: the merged column replaces them
            ordinal = self.ordinal(info, stats)
            start, stop = ordinal.page_rows(p)
            try:
                offset, size = int(ordinal.offsets[p]), int(ordinal.sizes[p])
                header, body = self._page(offset, size, PageKind.DATA, stats)
                got: DictPage | Column | None = decode_dict_page_codes(
                    header, body, info.type, info.layout, stop - start)
                if got is None:
                    if not header.flags & FLAG_ALL_NULL:
                        break  # a plain page
                    got = decode_data_page(header, body, info.stored, info.layout, stop - start)
            except _DECODE_ERRORS as e:
                raise self.corrupted(f"data page {p} of column {info.footer.name}: {e}") from None
            if stats is not None:
                stats.pages_read += 1
            parts.append(got)
        merged = merge_pages(parts) if len(parts) == pages and parts else None
        if keys is not None:
            assert cache is not None
            if merged is None:
                cache.put(keys[0], Column(info.type, np.zeros(0, np.uint8)))
            else:
                cache.put(keys[0], Column(info.type, merged.codes, merged.validity))
                cache.put(keys[1], merged.dictionary)
        return merged

    def read_column(self, info: ColumnInfo, stats: ScanStats | None = None,
                    decode: bool = True) -> Column | None:
        """The whole column (every page, concatenated) from the page cache, else decoded and
        cached when `decode`, else None. Scans that read most of a segment use it: windows
        become slices and row selections one `take`, with no per-page bookkeeping. Without a
        page cache it is decoded (when `decode`) every time."""
        cache = self._cache
        pages = info.footer.num_pages
        cached = None
        if cache is not None:
            key = self._whole_column_key(info)
            name = info.footer.name.lower()
            known = self._meta.infos.get(name)
            if known is not None and known[1] is info and known[2] != key:
                # the id was renewed (or first issued, after a reader without a cache): keep it
                self._meta.infos[name] = (known[0], info, key)
            cached = cache.get(key)
        if cached is not None:
            if stats is not None:
                stats.pages_read += pages
                stats.pages_cached += pages
            return cached
        if not decode:
            return None
        parts = [self._decode_page(info, p, stats) for p in range(pages)]
        if not parts:
            return None
        col = parts[0] if len(parts) == 1 else Column.concat(parts)  # each counted as read
        if cache is not None:
            cache.put(key, col)
        return col

    def _decode_page(self, info: ColumnInfo, page: int, stats: ScanStats | None) -> Column:
        ordinal = self.ordinal(info, stats)
        start, stop = ordinal.page_rows(page)
        try:
            offset, size = int(ordinal.offsets[page]), int(ordinal.sizes[page])
            header, body = self._page(offset, size, PageKind.DATA, stats)
            col = decode_data_page(header, body, info.stored, info.layout, stop - start)
        except _DECODE_ERRORS as e:
            raise self.corrupted(f"data page {page} of column {info.footer.name}: {e}") from None
        if stats is not None:
            stats.pages_read += 1
        return col if info.type == info.stored else convert_column(col, info.type)

    # ---- pruning ------------------------------------------------------------------------
    def index_predicates(
        self, predicates: Sequence[ColumnPredicate]
    ) -> list[tuple[ColumnInfo, ColumnPredicate, list[object]]]:
        """The index forms of `predicates` (`storage.predicates.index_forms`) whose constants
        compare exactly with this segment's stored index values, with those values."""
        out = []
        for p in predicates:
            info = self.column(p.column)
            if not info.indexable:
                continue
            for f in index_forms(p):
                if f.op not in INDEXABLE_OPS:
                    continue
                try:
                    values = indexed_constants(info.stored, info.layout, f.op, f.values)
                except NotIndexable:
                    continue
                out.append((info, f, values))
        return out

    def may_match(self, pruner: ZonePruner, stats: ScanStats | None = None) -> bool:
        """False when the segment-level zone map of some predicate column proves that no row
        satisfies the pruner's predicates (loading those zone maps into the metadata cache)."""
        for key in pruner.columns():
            if key not in self._meta.segment_zones:
                self.zone_map(self.column(key), stats)
        return pruner.verdict(self._meta) is not False

    def read_all(self, columns: Sequence[str], stats: ScanStats | None = None) -> Batch:
        """Every row of `columns` as one Batch: whole columns from the page cache, else decoded
        and cached. For segments too small for the row-level indexes to skip anything (at
        most one short-key block), this is the whole scan minus the SegmentIterator's
        bookkeeping; the caller evaluates the predicates."""
        cols = []
        for name in columns:
            info = self.column(name)
            col = self.read_column(info, stats) if info.footer.num_pages else None
            if col is None:
                col = Column.from_physical(info.type, [])
            cols.append(col)
        if stats is not None:
            stats.rows_total += self.num_rows
            stats.segments_read += 1
        return Batch(tuple(columns), tuple(cols))

    def read(
        self,
        columns: Sequence[str],
        predicates: Sequence[ColumnPredicate] = (),
        stats: ScanStats | None = None,
        batch_size: int = 65536,
        disjunctions: Sequence[Disjunction] = (),
    ) -> Iterator[Batch]:
        """Batches of `columns` holding exactly the rows that satisfy all `predicates` and all
        `disjunctions`."""
        from storage.segment.iterator import SegmentIterator  # iterator imports this module

        return iter(SegmentIterator(self, columns, predicates, stats or ScanStats(), batch_size,
                                    disjunctions))

    def close(self) -> None:
        self._closed = True
        self._unmap()

    def _unmap(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_whole(
    segments: Sequence[tuple[str, SegmentMeta | None]], columns: Sequence[str],
    types: Mapping[str, DataType], tablet_id: int | None = None,
    stats: ScanStats | None = None, page_cache: PageCache | None = None,
) -> list[tuple[Column, ...]]:
    """The columns of `SegmentReader.read_all(columns)` of each segment (path, published
    metadata or None), in order. A tablet fed by many small loads reads hundreds of tiny
    segments per scan, so the common case (metadata and whole columns cached) is served here
    with a few dict lookups per column, without a reader object or a Batch per segment;
    anything else (and every segment, without a `page_cache`) opens a SegmentReader."""
    keys = [c.lower() for c in columns]
    get = page_cache.get if page_cache is not None else None
    out: list[tuple[Column, ...]] = []
    rows = pages = segs = 0
    for path, meta in segments:
        cols: list[Column] | None = None
        if meta is not None and get is not None:
            cols = []
            for key in keys:
                known = meta.infos.get(key)
                stored = meta.columns.get(key)
                # the ColumnInfo a reader built for the same type object (see _column_info)
                if known is None or stored is None or \
                        known[0] is not types.get(key, stored.stored):
                    cols = None
                    break
                col = get(known[2])
                if col is None:
                    cols = None
                    break
                cols.append(col)
                pages += known[1].footer.num_pages
        if cols is None:
            with SegmentReader(path, types, tablet_id, published=meta,
                               page_cache=page_cache) as reader:
                out.append(reader.read_all(columns, stats).columns)
            continue
        rows += meta.num_rows  # type: ignore[union-attr]
        segs += 1
        out.append(tuple(cols))
    if stats is not None:
        stats.rows_total += rows
        stats.segments_read += segs
        stats.pages_read += pages
        stats.pages_cached += pages
    return out


def decode_data_page(
    header: PageHeader, body: bytes, dtype: DataType, layout: PhysicalLayout, rows: int
) -> Column:
    """Validity bitmap + values of one DATA page (values under nulls are zero / empty)."""
    n = header.num_rows
    if n != rows:
        raise PageCorrupted(f"page has {n} rows, the ordinal index says {rows}")
    if header.null_count > n:
        raise PageCorrupted("page null count exceeds its rows")
    if header.flags & FLAG_ALL_NULL:
        if body or header.null_count != n:
            raise PageCorrupted("all-null page with values")
        all_null = np.zeros(n, np.bool_)
        if layout.layout is Layout.VARLEN:
            return Column(dtype, np.zeros(0, np.uint8), all_null, np.zeros(n + 1, np.int64))
        return Column(dtype, np.zeros(n, dtype=layout.dtype), all_null)  # object zeros are int 0
    validity, pos = page_validity(header, body, n)
    return decode_values(body, pos, n, layout, dtype, header.encoding, validity)


def page_validity(header: PageHeader, body: bytes, n: int) -> tuple[np.ndarray | None, int]:
    """A page's validity bitmap (None: no NULLs) and where its values start in `body`, checked
    against the header's null count."""
    if header.flags & FLAG_VALIDITY:
        nbytes = (n + 7) // 8
        bits = np.frombuffer(body, np.uint8, count=nbytes)
        validity = np.unpackbits(bits, count=n, bitorder="little").astype(np.bool_)
        if n - int(np.count_nonzero(validity)) != header.null_count:
            raise PageCorrupted("validity bitmap does not match the null count")
        return validity, nbytes + (-nbytes % 8)
    if header.null_count:
        raise PageCorrupted("page has nulls but no validity bitmap")
    return None, 0


def decode_dict_page_codes(header: PageHeader, body: bytes, dtype: DataType,
                           layout: PhysicalLayout, rows: int) -> DictPage | None:
    """A DICT string page as its dictionary (typed `dtype`) and codes, checked as
    `decode_data_page` checks it; None for any other page (plain, all NULL, not a string)."""
    if (header.encoding != Encoding.DICT or layout.layout is not Layout.VARLEN
            or not dtype.is_string or header.flags & FLAG_ALL_NULL):
        return None
    n = header.num_rows
    if n != rows:
        raise PageCorrupted(f"page has {n} rows, the ordinal index says {rows}")
    if header.null_count > n:
        raise PageCorrupted("page null count exceeds its rows")
    validity, pos = page_validity(header, body, n)
    dict_offsets, dict_data, codes = decode_dict_parts(body, pos, n)
    # copies: the body's buffer is the page's, and cached arrays must own their memory
    dictionary = Column(dtype, dict_data.copy(), None, dict_offsets.copy())
    return DictPage(dictionary, narrow_codes(codes, len(dictionary)), validity)


# ---- reading a column as another type (schema change) --------------------------------------
def can_convert(stored: DataType, target: DataType) -> bool:
    """Physical conversions the reader does: same layout (VARCHAR(10) -> STRING), integer
    widening, integers -> floating point, FLOAT -> DOUBLE, DECIMAL to a larger scale."""
    if stored.is_varlen or target.is_varlen:
        return stored.is_varlen and target.is_varlen
    if stored.is_decimal or target.is_decimal:
        return stored.is_decimal and target.is_decimal and target.scale >= stored.scale
    if stored.is_temporal or target.is_temporal:
        return stored.kind is target.kind
    if stored.is_float:
        return target.is_float and target.numpy_dtype.itemsize >= stored.numpy_dtype.itemsize
    return (target.is_integer or target.is_float) and (
        stored.is_integer or stored.kind.value == "BOOLEAN"
    )


def convert_column(col: Column, target: DataType) -> Column:
    src = col.type
    if (
        src.is_varlen
        or src.numpy_dtype == target.numpy_dtype
        and not (src.is_decimal and target.scale != src.scale)
    ):
        return col.with_type(target)
    data = col.data
    if src.is_decimal and target.scale > src.scale:
        factor = 10 ** (target.scale - src.scale)
        data = data.astype(object) * factor
    data = data.astype(target.numpy_dtype)
    return Column(target, data, col.validity)
