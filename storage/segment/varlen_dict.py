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


def hash_groups(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each distinct hash's first value, each row's group): one sort of the hashes,
    shared by choosing the encoding and building the dictionary."""
    _, first, inverse = np.unique(varlen_hashes(offsets, data), return_index=True,
                                  return_inverse=True)
    return first, inverse.reshape(-1)


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
