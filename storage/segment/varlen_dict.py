"""Dictionary encoding of a var-len (string) page without a Python object per value.

The page's values are grouped exactly in one numba pass (`group_values`: an open-addressing
table keyed by a hash of each value's 8-byte words, a hash match joining a group only when the
bytes are equal, so a hash collision can never merge two different strings), and the distinct
values are sorted and gathered into the dictionary by numba kernels too (`sort_rows`,
`encoding.dict_gather`), so no Python object is made per value or per distinct value.
Low-cardinality columns (SSB's lo_shipmode) and many-valued ones (SSB-flat's c_address,
p_name: a few rows per value) alike cost a few numba passes per page; sorting the distinct
values as Python bytes was a quarter of an SSB-flat Stream Load's CPU (docs/performance.md,
branch ingest).
Doris' counterpart: BinaryDictPageBuilder (BE segment_v2).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from storage.segment.encoding import (
    _compare_bytes,
    dict_gather,
    padded_words,
    word_at,
)

# Ranges this small are insertion-sorted by `sort_rows` (a numpy sort's own cost is more).
_INSERTION_RANGE = 16
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)


@njit(cache=True, nogil=True)
def group_words(offsets: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`group_values` on the `padded_words` of the data. A slot keeps its hash next to its
    group, and a group its first 8 bytes and length, so a probe is checked without chasing
    the group's first row into the data (only values over 8 bytes compare the rest)."""
    n = offsets.shape[0] - 1
    cap = 2
    while cap < 2 * n:
        cap <<= 1
    mask = np.uint64(cap - 1)
    slot_group = np.full(cap, -1, dtype=np.int64)
    slot_hash = np.zeros(cap, dtype=np.uint64)
    first = np.empty(n, dtype=np.int64)
    inverse = np.empty(n, dtype=np.int64)
    group_head = np.empty(n, dtype=np.uint64)
    group_size = np.empty(n, dtype=np.int64)
    groups = 0
    for i in range(n):
        a0 = offsets[i]
        a1 = offsets[i + 1]
        size = a1 - a0
        head = word_at(words[a0 >> 3], words[(a0 >> 3) + 1], a0, size)
        h = (head ^ (np.uint64(size) * _MIX)) * _MIX2
        pos = a0 + 8
        while pos < a1:
            h = (h ^ word_at(words[pos >> 3], words[(pos >> 3) + 1], pos, a1 - pos)) * _MIX
            h ^= h >> np.uint64(31)
            pos += 8
        h ^= h >> np.uint64(29)
        h *= _MIX2
        h ^= h >> np.uint64(32)
        s = h & mask
        while True:
            g = slot_group[s]
            if g == -1:
                slot_group[s] = groups
                slot_hash[s] = h
                first[groups] = i
                group_head[groups] = head
                group_size[groups] = size
                inverse[i] = groups
                groups += 1
                break
            if slot_hash[s] == h and group_head[g] == head and group_size[g] == size:
                same = True
                b0 = offsets[first[g]]
                pos = 8
                while same and pos < size:  # the bytes after the first 8, a word at a time
                    pa = a0 + pos
                    pb = b0 + pos
                    k = min(size - pos, 8)
                    same = word_at(words[pa >> 3], words[(pa >> 3) + 1], pa, k) == \
                        word_at(words[pb >> 3], words[(pb >> 3) + 1], pb, k)
                    pos += 8
                if same:
                    inverse[i] = g
                    break
            s = (s + np.uint64(1)) & mask
    return first[:groups].copy(), inverse


def group_values(offsets: np.ndarray, data: np.ndarray, words: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(row of each distinct value's first occurrence, each row's group), groups numbered in
    order of first appearance, exact: one pass over an open-addressing table keyed by a hash
    of the value's 8-byte words (two aligned loads each from `padded_words`, instead of a
    multiply per byte), where a hash match joins a group only when the bytes are equal too
    (a collision probes on: no verification pass afterwards). `words`: padded_words(data)."""
    return group_words(offsets, padded_words(data) if words is None else words)


def group_values_reference(offsets: np.ndarray, data: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Plain-Python twin of `group_values` (tests): groups by value, first appearance order."""
    index: dict[bytes, int] = {}
    first: list[int] = []
    inverse = []
    for i, v in enumerate(data[offsets[i]:offsets[i + 1]].tobytes()
                          for i in range(len(offsets) - 1)):
        g = index.setdefault(v, len(first))
        if g == len(first):
            first.append(i)
        inverse.append(g)
    return np.array(first, dtype=np.int64), np.array(inverse, dtype=np.int64)


def distinct_values(offsets: np.ndarray, data: np.ndarray,
                    groups: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[int, int]:
    """(number of distinct values, their total bytes), exact (`group_values`)."""
    first = (groups or group_values(offsets, data))[0]
    return len(first), int((offsets[first + 1] - offsets[first]).sum())


@njit(cache=True, nogil=True)
def _shared_prefix(offsets: np.ndarray, data: np.ndarray, a: np.ndarray, lo: int, hi: int,
                   depth: int) -> int:
    """How many bytes from `depth` on every value of a[lo:hi] shares with the first."""
    r0 = a[lo]
    shared = offsets[r0 + 1] - offsets[r0] - depth
    for k in range(lo + 1, hi):
        r = a[k]
        size = min(shared, offsets[r + 1] - offsets[r] - depth)
        j = 0
        while j < size and data[offsets[r] + depth + j] == data[offsets[r0] + depth + j]:
            j += 1
        shared = j
        if shared == 0:
            break
    return shared


@njit(cache=True, nogil=True)
def _insertion_sort(offsets: np.ndarray, data: np.ndarray, a: np.ndarray, lo: int, hi: int,
                    depth: int) -> None:
    """a[lo:hi], whose values share their first `depth` bytes, ordered by value in place
    (stable)."""
    for i in range(lo + 1, hi):
        v = a[i]
        j = i - 1
        while j >= lo and _compare_bytes(data, offsets[v] + depth, offsets[v + 1],
                                         offsets[a[j]] + depth, offsets[a[j] + 1]) < 0:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit(cache=True, nogil=True)
def sort_rows(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`rows` ordered by their values in unsigned byte order (a prefix before its extensions),
    stable. An MSD radix sort by 7-byte chunks: each chunk, big endian and zero-padded, with
    the bytes left in the value (at most 8) as the low byte, is a uint64 key whose order is the
    values' order on those bytes (the low byte puts a value before its extensions); numpy's
    stable sort orders a range by it, and a run of equal keys whose values go on past the
    chunk is sorted by the next one. Bytes every value of a range shares (`Customer#0000`) are
    skipped first."""
    n = rows.shape[0]
    a = rows.copy()
    if n < 2:
        return a
    # work stack of ranges (lo, hi, depth): a[lo:hi] share their first `depth` bytes
    stack = np.empty((max(n, 1), 3), dtype=np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, 0
    top = 1
    keys = np.empty(n, dtype=np.uint64)
    while top:
        top -= 1
        lo, hi, depth = stack[top, 0], stack[top, 1], stack[top, 2]
        depth += _shared_prefix(offsets, data, a, lo, hi, depth)
        if hi - lo <= _INSERTION_RANGE:
            _insertion_sort(offsets, data, a, lo, hi, depth)
            continue
        for k in range(lo, hi):
            r = a[k]
            start = offsets[r] + depth
            left = offsets[r + 1] - start
            key = np.uint64(0)
            for j in range(7):
                byte = np.uint64(data[start + j]) if j < left else np.uint64(0)
                key = (key << np.uint64(8)) | byte
            keys[k] = (key << np.uint64(8)) | np.uint64(min(left, 8))
        order = np.argsort(keys[lo:hi], kind="mergesort")
        a[lo:hi] = a[lo:hi][order]
        keys[lo:hi] = keys[lo:hi][order]
        run = lo
        while run < hi:
            end = run + 1
            while end < hi and keys[end] == keys[run]:
                end += 1
            # equal keys with fewer than 8 bytes left are equal values: that run is done
            if end - run > 1 and (keys[run] & np.uint64(0xFF)) == np.uint64(8):
                stack[top, 0], stack[top, 1], stack[top, 2] = run, end, depth + 7
                top += 1
            run = end
    return a


def sort_rows_reference(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Plain-Python twin of `sort_rows` (tests): a stable sort by the values as bytes."""
    values = [data[offsets[r]:offsets[r + 1]].tobytes() for r in rows.tolist()]
    return rows[np.array(sorted(range(len(values)), key=values.__getitem__), dtype=np.int64)]


def dictionary_arrays(offsets: np.ndarray, data: np.ndarray,
                      groups: tuple[np.ndarray, np.ndarray] | None = None,
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dictionary offsets from 0, dictionary bytes, each row's code as uint64) with the
    distinct values sorted. Always built: `group_values` groups exactly, so no hash collision
    needs a set-based fallback. `groups` must be `group_values` of the same values (offsets
    may be shifted)."""
    first, inverse = groups or group_values(offsets, data)
    # `group_values` groups exactly (values compared byte for byte on every hash match)
    order = sort_rows(offsets, data, first)  # distinct values' first rows, sorted by value
    dict_offsets, dict_data = dict_gather(offsets, data, order)  # the sorted values' bytes
    # group g's code: the position of its first row in the sorted order
    rank_of_row = np.empty(len(offsets) - 1, dtype=np.uint64)
    rank_of_row[order] = np.arange(len(order), dtype=np.uint64)
    return dict_offsets, dict_data, rank_of_row[first][inverse]


def dictionary(offsets: np.ndarray, data: np.ndarray,
               groups: tuple[np.ndarray, np.ndarray] | None = None,
               ) -> tuple[list[bytes], np.ndarray]:
    """(sorted distinct values, each row's code into them): `dictionary_arrays` with the
    values as bytes (the bitmap index's dictionary pages)."""
    dict_offsets, dict_data, codes = dictionary_arrays(offsets, data, groups)
    blob = dict_data.tobytes()
    bounds = dict_offsets.tolist()
    return [blob[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)], codes
