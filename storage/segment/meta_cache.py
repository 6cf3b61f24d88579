"""Segment metadata cache: parsed footers and index pages kept across scans (Doris SegmentCache).

Opening a segment used to cost an mmap, a footer CRC check and JSON parse, a type parse per
column, and the ordinal, zone map and short-key index pages parsed and validated again on every
scan. For one big segment that is noise; for a tablet with hundreds of small rowsets (loads that
compaction has not merged yet) it was most of the query. Doris keeps loaded `Segment` objects in
its `SegmentCache` (`segment_cache_capacity`, `segment_cache_memory_percentage`) for the same
reason.

A `SegmentMeta` holds what a reader parsed from one segment file *version*: the footer, the
stored type and layout of each column, and (filled lazily, the first time a scan needs them)
the ordinal indexes, zone maps, the short-key index, and the bitmap index and bloom filter
pages of the columns that have them. Everything in it is immutable once
stored, so scans on several threads share it; two threads parsing the same index at once both
store equal values. Only metadata that passed validation is stored: a damaged file raises on
every open.

Keys are the file identity `(path, inode, mtime_ns, size)` from `os.stat`, as for the page
cache (storage/page_cache.py): a file rewritten in place is a new key, so a reader that stats
the file never gets stale metadata. The tablet reader skips even that stat for segments of
published rowsets, whose files never change: `latest(path)` gives the entry a reader stored
last for the path (a stat per segment per scan, releasing the GIL each time, was a large part
of reading many small rowsets); a page read still checks the identity when it maps the file.
Bounded by entry count and by estimated bytes (LRU); `StorageEngine.forget_segment_files` drops
the entries (and the engine's cached pages) of deleted files at once. Thread-safe. Capacity 0
disables the cache.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from storage.indexes.bitmap_index import BitmapIndex
from storage.indexes.bloom_filter import BloomFilterIndex
from storage.indexes.ordinal import OrdinalIndex
from storage.indexes.short_key import KeyPart, ShortKeyIndex
from storage.indexes.zone_map import ZoneEntry, ZoneMap
from storage.page_cache import physical_memory
from storage.segment.encoding import PhysicalLayout
from storage.segment.footer import ColumnFooter, SegmentFooter
from storage.types import DataType

if TYPE_CHECKING:
    import numpy as np

    from storage.segment.reader import ColumnInfo

Identity = tuple[str, int, int, int]  # (path, inode, mtime_ns, size)

DEFAULT_CAPACITY = 1_000_000  # segments, Doris' segment_cache_capacity default
DEFAULT_MEMORY_FRACTION = 0.02  # of physical memory, Doris' segment_cache_memory_percentage = 2
# Parsed indexes take more memory than their stored pages (numpy headers, Python bytes and ints
# in object-dtype zone maps); a rough factor keeps the byte bound honest without measuring.
_PARSED_FACTOR = 3
_ENTRY_OVERHEAD = 2048


@dataclass(frozen=True, slots=True)
class StoredColumn:
    """One column as written: position in the footer, its footer entry, type and layout."""

    index: int
    footer: ColumnFooter
    stored: DataType
    layout: PhysicalLayout


@dataclass(slots=True, eq=False)
class SegmentMeta:
    """The validated metadata of one segment file version (see the module doc)."""

    identity: Identity
    footer: SegmentFooter
    data_end: int  # where the footer starts: every page lies before it
    columns: dict[str, StoredColumn]  # lower-case name -> column
    ordinals: dict[str, OrdinalIndex] = field(default_factory=dict)  # filled lazily
    zone_maps: dict[str, ZoneMap] = field(default_factory=dict)  # filled lazily
    short_key: tuple[list[KeyPart], ShortKeyIndex] | None = None  # filled lazily
    # the BITMAP_INDEX pages (their dictionary and bitmap pages go through the page cache)
    # and BLOOM_FILTER pages of the columns that have them, filled lazily
    bitmap_indexes: dict[str, BitmapIndex] = field(default_factory=dict)
    bloom_filters: dict[str, BloomFilterIndex] = field(default_factory=dict)
    # the segment-level entry of each loaded zone map as Python scalars (zone_map.ZoneEntry)
    segment_zones: dict[str, ZoneEntry] = field(default_factory=dict)
    # column -> (type object last read as, its reader.ColumnInfo, the page-cache key of the
    # whole column): saves rebuilding them for every scan. A key whose id the page cache has
    # since forgotten only misses (ids are never reused), and the next read renews it.
    infos: dict[str, tuple[DataType, ColumnInfo, tuple[int, int]]] = field(default_factory=dict)
    # (column, op, index values) -> the page zone maps' verdict (reader.page_zone_match)
    zone_matches: dict[tuple[str, str, tuple[object, ...]], np.ndarray] = field(
        default_factory=dict)
    # (columns, predicates, disjunctions) of a scan -> what the segment iterator's pruning
    # concluded for them (storage/segment/scan_plan.py): repeated queries skip the zone maps,
    # short key, bitmap indexes and bloom filters of a segment they pruned before
    scan_plans: dict[object, object] = field(default_factory=dict)
    num_rows: int = field(init=False)

    def __post_init__(self) -> None:
        self.num_rows = self.footer.num_rows  # a plain attribute: read per segment per scan

    def add_zone_map(self, key: str, zm: ZoneMap) -> None:
        self.segment_zones[key] = zm.segment_entry()
        self.zone_maps[key] = zm

    @property
    def path(self) -> str:
        return self.identity[0]

    def nbytes(self) -> int:
        """Estimated memory once every index is loaded (known up front from the footer's page
        sizes, so lazy loading never changes an entry's charge)."""
        pages = sum(c.footer.ordinal.size + c.footer.zone_map.size for c in self.columns.values())
        pages += sum(p.size for c in self.columns.values()
                     for p in (c.footer.bitmap_index, c.footer.bloom_filter) if p is not None)
        if self.footer.short_key is not None:
            pages += self.footer.short_key.page.size
        return _ENTRY_OVERHEAD + _PARSED_FACTOR * (pages + 256 * len(self.columns))


class SegmentMetaCache:
    """LRU of `SegmentMeta` by file identity, bounded by count and estimated bytes."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY,
                 capacity_bytes: int | None = None) -> None:
        self.capacity = max(0, int(capacity))
        self.capacity_bytes = (int(physical_memory() * DEFAULT_MEMORY_FRACTION)
                               if capacity_bytes is None else max(0, int(capacity_bytes)))
        self._entries: OrderedDict[Identity, tuple[SegmentMeta, int]] = OrderedDict()
        self._latest: dict[str, SegmentMeta] = {}  # path -> its entry most recently stored
        self._lock = threading.Lock()
        self.used = 0
        self.hits = 0
        self.misses = 0

    def get(self, identity: Identity) -> SegmentMeta | None:
        if not self.capacity:
            return None
        with self._lock:
            hit = self._entries.get(identity)
            if hit is None:
                self.misses += 1
                return None
            self._entries.move_to_end(identity)
            self.hits += 1
            return hit[0]

    def latest(self, path: str) -> SegmentMeta | None:
        """The cached metadata of the version of file `path` a reader stored last, without
        looking at the file (no stat). Only for decisions that stay right for every version a
        published segment can have: its files never change after publish (a new rowset gets
        new files), so this is the file's metadata; a file damaged in place afterwards is
        still caught by any scan that reads it (readers key by the file's current identity)."""
        return self._latest.get(path) if self.capacity else None

    def put(self, meta: SegmentMeta) -> None:
        size = meta.nbytes()
        if not self.capacity or size > self.capacity_bytes // 4:
            return
        with self._lock:
            old = self._entries.pop(meta.identity, None)
            if old is not None:
                self._drop_latest(old[0])
                self.used -= old[1]
            self._entries[meta.identity] = (meta, size)
            self._latest[meta.path] = meta
            self.used += size
            self._evict()

    def _evict(self) -> None:
        while self._entries and (len(self._entries) > self.capacity
                                 or self.used > self.capacity_bytes):
            _, (meta, size) = self._entries.popitem(last=False)
            self._drop_latest(meta)
            self.used -= size

    def _drop_latest(self, meta: SegmentMeta) -> None:
        if self._latest.get(meta.path) is meta:
            del self._latest[meta.path]

    def resize(self, capacity: int, capacity_bytes: int | None = None) -> None:
        with self._lock:
            self.capacity = max(0, int(capacity))
            if capacity_bytes is not None:
                self.capacity_bytes = max(0, int(capacity_bytes))
            self._evict()

    def forget_files(self, paths: Iterable[str | os.PathLike[str]]) -> int:
        """Drop the entries of the files `paths` and of every file under those that are
        directories (files being deleted); returns the number of entries dropped."""
        exact = {os.fspath(p) for p in paths}
        if not exact:
            return 0
        under = tuple(p.rstrip(os.sep) + os.sep for p in exact)
        with self._lock:
            doomed = [k for k in self._entries if k[0] in exact or k[0].startswith(under)]
            for k in doomed:
                meta, size = self._entries.pop(k)
                self._drop_latest(meta)
                self.used -= size
            return len(doomed)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._latest.clear()
            self.used = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, identity: object) -> bool:
        return identity in self._entries


SEGMENT_META_CACHE = SegmentMetaCache()

