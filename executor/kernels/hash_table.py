"""Open-addressing hash tables for GROUP BY keys (numba kernels plus their growable state).

Keys reach the table as an int64 matrix (one row per input row, one column per key part):
fixed-width columns are widened to int64 (floats by their canonical bit pattern), string
columns are first interned to dense int64 codes by a `StringDict` (hashing and comparing the
bytes of the Arrow offsets+bytes layout), and each nullable key adds a validity column. The
`GroupTable` then maps every distinct key row to a dense group id in first-seen order, using
linear probing with a full key comparison behind a stored 64-bit hash. Both tables persist
across batches, so group ids are global for the whole aggregate.
Upstream: DuckDB `GroupedAggregateHashTable` (linear probing, salted hashes), Doris
`PHHashMap` / `HashMethodSerialized`.
"""

from __future__ import annotations

import numba
import numpy as np

_SEED = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_EMPTY = -1


@numba.njit(cache=True, nogil=True)
def mix64(h: np.uint64) -> np.uint64:
    """Murmur3's 64-bit finalizer: every input bit affects every output bit."""
    h ^= h >> np.uint64(33)
    h *= _M1
    h ^= h >> np.uint64(33)
    h *= _M2
    h ^= h >> np.uint64(33)
    return h


@numba.njit(cache=True, nogil=True)
def hash_rows(keys: np.ndarray) -> np.ndarray:
    """64-bit hash of every row of an int64 key matrix (n, k)."""
    n, k = keys.shape
    out = np.empty(n, np.uint64)
    for i in range(n):
        h = _SEED
        for j in range(k):
            h = mix64(h ^ (np.uint64(keys[i, j]) + _SEED + (h << np.uint64(6))
                           + (h >> np.uint64(2))))
        out[i] = h
    return out


@numba.njit(cache=True, nogil=True)
def hash_strings(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """64-bit hash of every string (FNV-1a over its bytes, then the murmur finalizer)."""
    n = len(offsets) - 1
    out = np.empty(n, np.uint64)
    for i in range(n):
        h = _FNV_OFFSET
        for p in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[p])) * _FNV_PRIME
        out[i] = mix64(h ^ np.uint64(offsets[i + 1] - offsets[i]))
    return out


@numba.njit(cache=True, nogil=True)
def rehash(hashes: np.ndarray, count: int, capacity: int) -> np.ndarray:
    """A fresh slot array of `capacity` (a power of two) holding entries 0..count-1."""
    slots = np.full(capacity, _EMPTY, np.int64)
    mask = np.uint64(capacity - 1)
    for e in range(count):
        s = np.int64(hashes[e] & mask)
        while slots[s] != _EMPTY:
            s = (s + 1) & (capacity - 1)
        slots[s] = e
    return slots


@numba.njit(cache=True, nogil=True)
def intern_strings(offsets: np.ndarray, data: np.ndarray, hashes: np.ndarray,
                   slots: np.ndarray, dict_hashes: np.ndarray, dict_offsets: np.ndarray,
                   dict_bytes: np.ndarray, count: int, codes: np.ndarray, start: int,
                   limit: int) -> tuple[int, int]:
    """Write the dictionary code of rows start.. into `codes`, inserting new strings.

    Stops before inserting entry number `limit` (the caller grows the table and resumes).
    Returns (rows done, new dictionary size). New strings are appended to
    `dict_offsets`/`dict_bytes` and their hash to `dict_hashes`.
    """
    n = len(offsets) - 1
    cap = len(slots)
    for i in range(start, n):
        h = hashes[i]
        a0 = offsets[i]
        ln = offsets[i + 1] - a0
        s = np.int64(h & np.uint64(cap - 1))
        while True:
            e = slots[s]
            if e == _EMPTY:
                if count >= limit:
                    return i, count
                b0 = dict_offsets[count]
                for p in range(ln):
                    dict_bytes[b0 + p] = data[a0 + p]
                dict_offsets[count + 1] = b0 + ln
                dict_hashes[count] = h
                slots[s] = count
                codes[i] = count
                count += 1
                break
            if dict_hashes[e] == h:
                b0 = dict_offsets[e]
                if dict_offsets[e + 1] - b0 == ln:
                    same = True
                    for p in range(ln):
                        if dict_bytes[b0 + p] != data[a0 + p]:
                            same = False
                            break
                    if same:
                        codes[i] = e
                        break
            s = (s + 1) & (cap - 1)
    return n, count


@numba.njit(cache=True, nogil=True)
def find_or_insert(keys: np.ndarray, hashes: np.ndarray, slots: np.ndarray,
                   group_keys: np.ndarray, group_hashes: np.ndarray, count: int,
                   gids: np.ndarray, first: np.ndarray, base: int, start: int, limit: int
                   ) -> tuple[int, int]:
    """Write the group id of key rows start.. into `gids`, inserting unseen keys.

    Group ids are dense and in first-seen order; `first[g - base]` receives the row of the
    first occurrence of each new group g. Stops before creating group number `limit`.
    Returns (rows done, new group count).
    """
    n, k = keys.shape
    cap = len(slots)
    for i in range(start, n):
        h = hashes[i]
        s = np.int64(h & np.uint64(cap - 1))
        while True:
            g = slots[s]
            if g == _EMPTY:
                if count >= limit:
                    return i, count
                for j in range(k):
                    group_keys[count, j] = keys[i, j]
                group_hashes[count] = h
                slots[s] = count
                gids[i] = count
                first[count - base] = i
                count += 1
                break
            if group_hashes[g] == h:
                same = True
                for j in range(k):
                    if group_keys[g, j] != keys[i, j]:
                        same = False
                        break
                if same:
                    gids[i] = g
                    break
            s = (s + 1) & (cap - 1)
    return n, count


def _grow(arr: np.ndarray, need: int) -> np.ndarray:
    if len(arr) >= need:
        return arr
    out = np.empty((max(need, 2 * len(arr)),) + arr.shape[1:], arr.dtype)
    out[: len(arr)] = arr
    return out


class _Slots:
    """Slot array of a table (load factor at most 1/2) and entry arrays that follow it."""

    def __init__(self) -> None:
        self.count = 0
        self.slots = np.full(16, _EMPTY, np.int64)
        self.hashes = np.zeros(8, np.uint64)

    @property
    def limit(self) -> int:
        return len(self.slots) // 2

    def _double(self) -> None:
        self.slots = rehash(self.hashes, self.count, 2 * len(self.slots))
        self.hashes = _grow(self.hashes, self.limit)


class StringDict(_Slots):
    """Persistent string -> dense code dictionary (codes in first-seen order)."""

    def __init__(self) -> None:
        super().__init__()
        self.offsets = np.zeros(9, np.int64)
        self.bytes = np.zeros(64, np.uint8)

    def codes(self, offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
        """Code of every string of an Arrow offsets+bytes column."""
        n = len(offsets) - 1
        codes = np.empty(n, np.int64)
        if n == 0:
            return codes
        if offsets[0] != 0:
            data = data[offsets[0]: offsets[-1]]
            offsets = offsets - offsets[0]
        self.bytes = _grow(self.bytes, int(self.offsets[self.count]) + int(offsets[-1]))
        hashes = hash_strings(offsets, data)
        done = 0
        while True:
            done, self.count = intern_strings(offsets, data, hashes, self.slots, self.hashes,
                                              self.offsets, self.bytes, self.count, codes, done,
                                              self.limit)
            if done == n:
                return codes
            self._double()
            self.offsets = _grow(self.offsets, self.limit + 1)

    def _double(self) -> None:
        super()._double()
        self.offsets = _grow(self.offsets, self.limit + 1)

    @property
    def nbytes(self) -> int:
        return int(self.slots.nbytes + self.hashes.nbytes + self.offsets.nbytes
                   + self.bytes.nbytes)


class GroupTable(_Slots):
    """Persistent key-row -> dense group id table over int64 key matrices of `width` columns."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width
        self.keys = np.zeros((8, width), np.int64)

    def _double(self) -> None:
        super()._double()
        self.keys = _grow(self.keys, self.limit)

    def insert(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(group id per row, first row index of each new group) for an (n, width) matrix."""
        n = len(keys)
        gids = np.empty(n, np.int64)
        first = np.empty(n, np.int64)
        if n == 0:
            return gids, first[:0]
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        hashes = hash_rows(keys)
        base = self.count
        done = 0
        while True:
            done, self.count = find_or_insert(keys, hashes, self.slots, self.keys, self.hashes,
                                              self.count, gids, first, base, done, self.limit)
            if done == n:
                return gids, first[: self.count - base]
            self._double()

    @property
    def nbytes(self) -> int:
        return int(self.slots.nbytes + self.keys.nbytes + self.hashes.nbytes)
