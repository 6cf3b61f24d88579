"""Storage page cache: decoded data pages kept in memory across queries (LRU, byte-bounded).

Decoding a page (CRC check, LZ4, bit unpacking, dictionary gather) costs far more than
evaluating a predicate over it, and analytic workloads read the same hot pages again and again;
Doris keeps decoded pages in its `StoragePageCache` for the same reason
(`storage_page_cache_limit`, default 20% of memory; `disable_storage_page_cache`).

Keys name a page of one segment file *version*: (path, inode, mtime_ns, size, column, page).
Segment files are immutable once published, and a file rewritten in place (corruption, a
restored backup) gets a new mtime, so a stale page is never served: its key simply stops being
asked for and ages out. Cached columns are made read-only, so a consumer that tried to write
into a shared page would fail loudly instead of corrupting later queries.
Thread-safe (scan workers share it). Capacity 0 disables the cache.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np

from storage.batch import Column

DEFAULT_FRACTION = 0.2  # of physical memory, Doris' storage_page_cache_limit default


def column_nbytes(col: Column) -> int:
    n = col.data.nbytes
    if col.data.dtype == np.dtype(object):
        n *= 5  # pointers plus the Python ints / Decimals they point to (rough)
    if col.validity is not None:
        n += col.validity.nbytes
    if col.offsets is not None:
        n += col.offsets.nbytes
    return n + 200  # Column / array object overhead


def _freeze(col: Column) -> None:
    for a in (col.data, col.validity, col.offsets):
        if a is not None:
            a.flags.writeable = False


class PageCache:
    def __init__(self, capacity_bytes: int) -> None:
        self.capacity = max(0, int(capacity_bytes))
        self._pages: OrderedDict[Hashable, tuple[Column, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.used = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Column | None:
        if not self.capacity:
            return None
        with self._lock:
            hit = self._pages.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._pages.move_to_end(key)
            self.hits += 1
            return hit[0]

    def put(self, key: Hashable, col: Column) -> None:
        size = column_nbytes(col)
        if not self.capacity or size > self.capacity // 4:
            return
        _freeze(col)
        with self._lock:
            old = self._pages.pop(key, None)
            if old is not None:
                self.used -= old[1]
            self._pages[key] = (col, size)
            self.used += size
            while self.used > self.capacity and self._pages:
                _, (_, freed) = self._pages.popitem(last=False)
                self.used -= freed

    def resize(self, capacity_bytes: int) -> None:
        with self._lock:
            self.capacity = max(0, int(capacity_bytes))
            while self.used > self.capacity and self._pages:
                _, (_, freed) = self._pages.popitem(last=False)
                self.used -= freed

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()
            self.used = 0

    def __len__(self) -> int:
        return len(self._pages)


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 << 30


def parse_limit(text: str | int) -> int:
    """`storage_page_cache_limit`: bytes, or a percentage of physical memory ("20%")."""
    if isinstance(text, int):
        return text
    t = text.strip()
    if t.endswith("%"):
        return int(physical_memory() * float(t[:-1]) / 100)
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if t and t[-1].upper() in units:
        return int(float(t[:-1]) * units[t[-1].upper()])
    return int(t)


_IDS: dict[Hashable, int] = {}
_IDS_LOCK = threading.Lock()


def cache_id(*parts: Hashable) -> int:
    """A small int standing for a (file version, column, type): cheap to hash in page keys.
    (Entries are tiny and bounded by the columns of the files ever opened.)"""
    key = parts
    got = _IDS.get(key)
    if got is None:
        with _IDS_LOCK:
            got = _IDS.setdefault(key, len(_IDS))
    return got


PAGE_CACHE = PageCache(int(physical_memory() * DEFAULT_FRACTION))
