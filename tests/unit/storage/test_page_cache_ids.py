"""The page cache's file-version id registry stays bounded while segment files come and go, and
the pages it serves always belong to the file version being read (storage/page_cache.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from storage import types as T
from storage.batch import Batch, Column
from storage.page_cache import PageCache
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, write_segment

ROWS = 1000  # one data page per column
TYPES = {"k": T.BIGINT, "v": T.BIGINT}


@pytest.fixture
def small_cache() -> PageCache:
    """A cache (as an engine owns one) with room for a few pages and a short idle list."""
    cache = PageCache(6 * (8 * ROWS + 200))
    cache.idle_ids = 16
    return cache


def _version(path: Path, n: int) -> list[int]:
    """Write version `n` of the segment at `path` (a new file each time, as a load or a
    compaction writes one); its v column is unique to the version."""
    k = np.arange(ROWS, dtype=np.int64)
    v = k * 7 + n
    write_segment(path, Batch(["k", "v"], [Column(T.BIGINT, k), Column(T.BIGINT, v)]), ["k"], 1)
    return v.tolist()


def _read_v(path: Path, cache: PageCache | None) -> tuple[list[int], ScanStats]:
    stats = ScanStats()
    with SegmentReader(path, TYPES, page_cache=cache) as reader:
        batches = list(reader.read(["k", "v"], stats=stats))
    return [x for b in batches for x in b.columns[1].to_pylist()], stats


def test_ids_stay_bounded_over_many_file_versions(tmp_path: Path, small_cache: PageCache) -> None:
    files = [tmp_path / f"seg_{i}.dat" for i in range(5)]
    highest = 0
    for n in range(300):  # 300 versions x 2 columns: 600 ids without a bound
        path = files[n % len(files)]  # rewritten in place: a new inode, mtime and version
        want = _version(path, n)
        got, first = _read_v(path, small_cache)
        assert got == want  # never a page of an earlier version of the same path
        again, second = _read_v(path, small_cache)
        assert again == want
        assert second.pages_cached > first.pages_cached  # the second read is served from the cache
        highest = max(highest, small_cache.registered_ids(tmp_path))
        assert small_cache.registered_ids() <= len(small_cache) + small_cache.idle_ids
    assert highest <= len(files) * 2 + small_cache.idle_ids
    assert small_cache.used <= small_cache.capacity


def test_forget_files_drops_pages_and_ids_of_deleted_files(
        tmp_path: Path, small_cache: PageCache) -> None:
    keep, doomed_dir = tmp_path / "keep.dat", tmp_path / "tablet"
    doomed_dir.mkdir()
    doomed = doomed_dir / "seg.dat"
    want_keep, want_doomed = _version(keep, 1), _version(doomed, 2)
    assert _read_v(keep, small_cache)[0] == want_keep
    assert _read_v(doomed, small_cache)[0] == want_doomed
    assert small_cache.registered_ids(doomed_dir) == 2
    pages = len(small_cache)
    assert small_cache.forget_files([doomed_dir]) == 2  # the directory: every file under it
    assert small_cache.registered_ids(doomed_dir) == 0 and len(small_cache) == pages - 2
    got, stats = _read_v(keep, small_cache)
    assert got == want_keep and stats.pages_cached > 0  # other files keep their pages
    assert small_cache.forget_files([keep]) == 2 and len(small_cache) == pages - 4


def test_registry_unit_behaviour() -> None:
    cache = PageCache(capacity_bytes=4 * (8 * 10 + 200))
    cache.idle_ids = 2
    col = Column(T.BIGINT, np.arange(10, dtype=np.int64))
    a = cache.file_id((("/d/a", 1, 1, 1), "c", T.BIGINT))
    assert cache.file_id((("/d/a", 1, 1, 1), "c", T.BIGINT)) == a
    cache.put((a, 0), col)
    ids = [cache.file_id(((f"/d/x{i}", 1, 1, 1), "c", T.BIGINT)) for i in range(10)]
    assert len(set(ids + [a])) == 11  # ids are never reused
    # a has a cached page, so it stays; of the idle ones only the 2 most recent remain
    assert cache.registered_ids() == 3 and cache.file_id((("/d/a", 1, 1, 1), "c", T.BIGINT)) == a
    assert cache.file_id(((f"/d/x{0}", 1, 1, 1), "c", T.BIGINT)) not in ids  # forgotten: a new id
    cache.clear()
    assert cache.registered_ids() == 2 and cache.get((a, 0)) is None
    cache.put(("plain", 1), col)  # keys without a registered id still work
    assert cache.get(("plain", 1)) is col


def test_a_reader_without_a_cache_decodes_every_time(tmp_path: Path) -> None:
    """Compaction and ALTER jobs read without a page cache: nothing is served from or kept in
    one, and the rows are the same."""
    path = tmp_path / "seg.dat"
    want = _version(path, 3)
    for _ in range(2):
        got, stats = _read_v(path, None)
        assert got == want and stats.pages_read > 0 and stats.pages_cached == 0


def test_caches_never_share_ids(tmp_path: Path) -> None:
    """Each engine has its own cache, while the segment metadata (shared, keyed by file)
    remembers the whole-column key a reader last used: an id one cache issued must only miss
    in another, never name another file's pages there."""
    from storage.segment.reader import read_whole

    one, two = PageCache(1 << 20), PageCache(1 << 20)
    a, b = tmp_path / "a.dat", tmp_path / "b.dat"
    want_a, want_b = _version(a, 1), _version(b, 2)
    metas = {}
    for path, cache in ((a, one), (b, two)):  # each file's whole columns cached in one cache
        with SegmentReader(path, TYPES, page_cache=cache) as reader:
            reader.read_all(["k", "v"])
            metas[path] = reader.meta
    assert metas[a].infos["v"][2] != metas[b].infos["v"][2]
    stats = ScanStats()
    (cols,) = read_whole([(str(a), metas[a])], ["k", "v"], TYPES, stats=stats, page_cache=two)
    assert cols[1].to_pylist() == want_a and stats.pages_cached == 0  # a miss, then decoded
    (cols,) = read_whole([(str(b), metas[b])], ["k", "v"], TYPES, page_cache=two)
    assert cols[1].to_pylist() == want_b
