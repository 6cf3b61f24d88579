"""Dictionary encoding of a var-len (string) page without a Python object per value.

The page's values are grouped by their 64-bit FNV-1a hash (`varlen_hashes`, numba), each group
checked byte for byte against its first value (so a hash collision can never merge two
different strings: the caller then falls back to the exact set-based path), and only the
distinct values become Python bytes, to sort the dictionary. Low-cardinality columns (SSB's
lo_shipmode, lo_orderpriority) thus cost a few numpy passes per page instead of a list, a set
and a dict lookup per row. Doris' counterpart: BinaryDictPageBuilder (BE segment_v2).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from storage.segment.encoding import varlen_hashes


@njit(cache=True, nogil=True)
def equal_to_rep(offsets: np.ndarray, data: np.ndarray, rep: np.ndarray) -> bool:
    """Whether value i equals value rep[i], for every i (bytes and length)."""
    for i in range(offsets.shape[0] - 1):
        r = rep[i]
        if r == i:
            continue
        a0 = offsets[i]
        b0 = offsets[r]
        size = offsets[i + 1] - a0
        if offsets[r + 1] - b0 != size:
            return False
        for j in range(size):
            if data[a0 + j] != data[b0 + j]:
                return False
    return True


def equal_to_rep_reference(offsets: np.ndarray, data: np.ndarray, rep: np.ndarray) -> bool:
    """Plain-numpy twin of `equal_to_rep` (tests)."""
    return all(
        np.array_equal(data[offsets[i]:offsets[i + 1]], data[offsets[r]:offsets[r + 1]])
        for i, r in enumerate(rep.tolist())
    )


@njit(cache=True, nogil=True)
def group_by_hash(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each distinct hash's first value, each row's group), groups numbered in order of
    first appearance: one pass over an open-addressing table instead of np.unique's sort (the
    dictionary sorts its distinct values itself, so the group order does not reach the page)."""
    n = hashes.shape[0]
    cap = 2
    while cap < 2 * n:
        cap <<= 1
    mask = np.uint64(cap - 1)
    slots = np.full(cap, -1, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    inverse = np.empty(n, dtype=np.int64)
    groups = 0
    for i in range(n):
        h = hashes[i]
        s = np.int64(h & mask)
        while True:
            g = slots[s]
            if g == -1:
                slots[s] = groups
                first[groups] = i
                inverse[i] = groups
                groups += 1
                break
            if hashes[first[g]] == h:
                inverse[i] = g
                break
            s = (s + 1) & (cap - 1)
    return first[:groups].copy(), inverse


def group_by_hash_reference(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy twin of `group_by_hash` (tests): np.unique, renumbered by first appearance."""
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    renumber = np.empty(len(order), dtype=np.int64)
    renumber[order] = np.arange(len(order))
    return first[order].astype(np.int64), renumber[inverse.reshape(-1)]


def hash_groups(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each distinct hash's first value, each row's group): one hashing and grouping
    pass, shared by choosing the encoding and building the dictionary."""
    return group_by_hash(varlen_hashes(offsets, data))


def distinct_values(offsets: np.ndarray, data: np.ndarray,
                    groups: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[int, int]:
    """(number of distinct values, their total bytes), by hash: an estimate for choosing the
    encoding (exact unless two values share a 64-bit hash)."""
    first = (groups or hash_groups(offsets, data))[0]
    return len(first), int((offsets[first + 1] - offsets[first]).sum())


def dictionary(offsets: np.ndarray, data: np.ndarray,
               groups: tuple[np.ndarray, np.ndarray] | None = None,
               ) -> tuple[list[bytes], np.ndarray] | None:
    """(sorted distinct values, each row's code into them), or None on a hash collision.
    `groups` must be `hash_groups` of the same values (offsets may be shifted)."""
    first, inverse = groups or hash_groups(offsets, data)
    if not equal_to_rep(offsets, data, first[inverse]):
        return None
    values = [data[offsets[k]:offsets[k + 1]].tobytes() for k in first.tolist()]
    order = sorted(range(len(values)), key=values.__getitem__)
    rank = np.empty(len(values), dtype=np.uint64)
    rank[order] = np.arange(len(values), dtype=np.uint64)
    return [values[k] for k in order], rank[inverse]
