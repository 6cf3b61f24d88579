"""Storage page cache: decoded data pages kept in memory across queries (LRU, byte-bounded).

Decoding a page (CRC check, LZ4, bit unpacking, dictionary gather) costs far more than
evaluating a predicate over it, and analytic workloads read the same hot pages again and again;
Doris keeps decoded pages in its `StoragePageCache` for the same reason
(`storage_page_cache_limit`, default 20% of memory; `disable_storage_page_cache`).

Keys are (file id, page), where the file id (`PageCache.file_id`) stands for one column and type
of one segment file *version*: (path, inode, mtime_ns, size). Segment files are immutable once
published, and a file rewritten in place (corruption, a restored backup) gets a new mtime, so a
stale page is never served: its key simply stops being asked for and ages out. The id registry
is bounded too: an id lives while pages of it are cached, then among the most recently used
idle ones; `forget_files` drops the pages and ids of deleted files at once. Cached columns are
made read-only, so a consumer that tried to write into a shared page would fail loudly instead
of corrupting later queries.
Thread-safe (scan workers share it). Capacity 0 disables the cache.

Each storage engine owns one (`StorageEngine.page_cache`; the server sizes it from
`storage_page_cache_limit`) and hands it to the readers of its queries; readers without one
(compaction, ALTER jobs, tools) decode every page, so rowsets about to be replaced do not push
hot query pages out. File ids are unique in the process, not only per cache: the segment
metadata cache (shared, keyed by file) remembers the id a reader last used, and an id issued by
another engine's cache must only miss, never name another file's pages.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable

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


IDLE_IDS = 4096  # file-version ids kept while none of their pages is cached (recently used first)
# Every cache's ids come from here (see the module doc); next() on a count is atomic in CPython.
_FILE_IDS = itertools.count()


class PageCache:
    """Byte-bounded LRU of decoded pages, plus the registry of the small ints (`file_id`) that
    name a (file version, column, type) in page keys.

    Keys are `(file_id, page)` tuples (any hashable works; its first element is the owner).
    The registry stays bounded: an id lives while pages of it are cached, and afterwards among
    the IDLE_IDS most recently used idle ids; then it is forgotten. Ids are never reused, so a
    reader still holding a forgotten id only misses (its pages become unreachable and age out).
    """

    def __init__(self, capacity_bytes: int) -> None:
        self.capacity = max(0, int(capacity_bytes))
        self._pages: OrderedDict[Hashable, tuple[Column, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.used = 0
        self.hits = 0
        self.misses = 0
        self._ids: dict[Hashable, int] = {}  # (file version, column, type) -> id
        self._parts: dict[int, Hashable] = {}  # id -> (file version, column, type)
        self._owned: dict[Hashable, set[Hashable]] = {}  # id -> keys of its cached pages
        self._idle: OrderedDict[int, None] = OrderedDict()  # registered ids with no page cached
        self.idle_ids = IDLE_IDS

    # ---- file-version ids -------------------------------------------------------------------
    def file_id(self, parts: Hashable) -> int:
        """The id standing for `parts` (a file version, column and type) in page keys: a small
        int is much cheaper to hash than the nested tuple on every page lookup."""
        got = self._ids.get(parts)  # lock-free fast path: dict reads are atomic
        if got is not None and got not in self._idle:
            return got
        with self._lock:
            got = self._ids.get(parts)
            if got is None:
                got = next(_FILE_IDS)
                self._ids[parts] = got
                self._parts[got] = parts
                self._idle[got] = None
                self._trim_idle()
            elif got in self._idle:
                self._idle.move_to_end(got)
            return got

    def registered_ids(self, under: str | os.PathLike[str] | None = None) -> int:
        """How many file-version ids the registry holds (bounded, see the class doc); with
        `under`, only those of files in that directory."""
        if under is None:
            return len(self._ids)
        prefix = os.fspath(under).rstrip(os.sep) + os.sep
        with self._lock:
            return sum(1 for parts in self._ids if _path_of(parts).startswith(prefix))

    def forget_files(self, paths: Iterable[str | os.PathLike[str]]) -> int:
        """Drop the pages and ids of the files `paths`, and of every file under those that are
        directories (files being deleted); returns the number of pages dropped."""
        exact = {os.fspath(p) for p in paths}
        if not exact:
            return 0
        under = tuple(p.rstrip(os.sep) + os.sep for p in exact)
        with self._lock:
            doomed = [i for i, parts in self._parts.items()
                      if (p := _path_of(parts)) in exact or p.startswith(under)]
            dropped = 0
            for i in doomed:
                for key in self._owned.pop(i, ()):
                    _, size = self._pages.pop(key)
                    self.used -= size
                    dropped += 1
                self._idle.pop(i, None)
                del self._ids[self._parts.pop(i)]
            return dropped

    def _trim_idle(self) -> None:
        while len(self._idle) > self.idle_ids:
            i, _ = self._idle.popitem(last=False)
            del self._ids[self._parts.pop(i)]

    def _forget_page(self, key: Hashable) -> None:
        owner = _owner(key)
        keys = self._owned.get(owner)
        if keys is None:
            return
        keys.discard(key)
        if not keys:
            del self._owned[owner]
            if owner in self._parts:  # its last page left: the id becomes idle
                self._idle[owner] = None
                self._trim_idle()

    def _evict_to(self, capacity: int) -> None:
        while self.used > capacity and self._pages:
            key, (_, freed) = self._pages.popitem(last=False)
            self.used -= freed
            self._forget_page(key)

    # ---- pages -------------------------------------------------------------------------------
    def get(self, key: Hashable) -> Column | None:
        # Lock-free: scans of many small segments ask for thousands of pages per query from
        # several threads, and a contended lock hands the GIL over on every call. Each
        # OrderedDict call is atomic under the GIL; the counters are statistics only.
        if not self.capacity:
            return None
        hit = self._pages.get(key)
        if hit is None:
            self.misses += 1
            return None
        try:
            self._pages.move_to_end(key)  # recently used
        except KeyError:  # evicted or forgotten since the lookup: the page is still valid
            pass
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
            owner = _owner(key)
            if owner in self._parts:
                self._owned.setdefault(owner, set()).add(key)
                self._idle.pop(owner, None)
            # else: an id forgotten since the reader looked it up (or a key without one): the
            # page is unreachable for new lookups and ages out like any other
            self._evict_to(self.capacity)

    def resize(self, capacity_bytes: int) -> None:
        with self._lock:
            self.capacity = max(0, int(capacity_bytes))
            self._evict_to(self.capacity)

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()
            self.used = 0
            for owner in list(self._owned):
                del self._owned[owner]
                self._idle[owner] = None  # type: ignore[index]
            self._trim_idle()

    def __len__(self) -> int:
        return len(self._pages)


def _owner(key: Hashable) -> Hashable:
    return key[0] if isinstance(key, tuple) and key else key


def _path_of(parts: Hashable) -> str:
    """The file path in `file_id` parts: ((path, inode, mtime_ns, size), column, type)."""
    try:
        return str(parts[0][0])  # type: ignore[index]
    except (TypeError, IndexError):
        return ""


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


def default_capacity() -> int:
    """Doris' default `storage_page_cache_limit`: 20% of physical memory."""
    return int(physical_memory() * DEFAULT_FRACTION)
