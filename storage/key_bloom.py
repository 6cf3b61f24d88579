"""KeyBloomFilter: a hash join's build keys (strings or floats) as one bloom filter, tested per row.

The `in_bloom` predicate (storage/predicates.py) carries one: a runtime filter for a join whose
build side has more distinct string / float keys than an `in` list should hold (Doris
`runtime_filter_max_in_num`). It is the same block-split filter as the bloom filter index
(storage/indexes/bloom_filter.py: 32-byte blocks, 8 salts, murmur3 64-bit hashes over the
value's bytes), sized for the build's distinct keys at RUNTIME_BLOOM_FPP. A row passes when its
key may be in the filter: false positives pass (the join drops them), a build key never fails.
Floats are hashed as float64 with -0.0 folded into 0.0 (they are join-equal); the builder
publishes no filter for keys holding NaN. The filter carries the keys' min / max: the short key
and zone maps prune with them, rows are not tested against them (the bloom filter already
rejects most rows outside, and string comparisons per row would cost as much as the probe).
`probe_rows_reference` is the plain-Python twin of the numba kernel the tests compare with.
`varlen_in` is the exact `IN` test of a string column against many constants (a runtime
filter's `in` list holds up to 1024): rows whose hash equals a constant's are compared with that
constant byte for byte in one numba pass, so a page costs no Python string per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from storage.batch import Column
from storage.indexes.bloom_filter import (
    DEFAULT_SEED,
    SALT,
    add_hashes,
    block_may_contain,
    hash_fixed,
    hash_varlen,
    optimal_bit_num,
)
from storage.segment.encoding import strings_equal

RUNTIME_BLOOM_FPP = 0.05


def key_hashes(col: Column) -> np.ndarray:
    """murmur3 64-bit hash per row of a string or float column (nulls hash as empty / 0.0)."""
    seed = np.uint64(DEFAULT_SEED)
    if col.offsets is not None:
        return hash_varlen(np.ascontiguousarray(col.offsets, dtype=np.int64),
                           np.ascontiguousarray(col.data, dtype=np.uint8), seed)
    values = np.ascontiguousarray(col.data, dtype=np.float64) + 0.0  # -0.0 + 0.0 == 0.0
    return hash_fixed(values.view(np.uint8).reshape(-1), 8, seed)


@njit(cache=True, nogil=True)
def _probe_rows(words, hashes, salt, out):  # type: ignore[no-untyped-def]
    blocks = np.uint64(words.shape[0] // 8)
    for i in range(hashes.shape[0]):
        out[i] = block_may_contain(words, np.int64(0), blocks, hashes[i], salt)


def probe_rows(words: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Bool per hash: may its value be in the filter `words`?"""
    out = np.empty(len(hashes), np.bool_)
    if len(hashes):
        _probe_rows(words, np.ascontiguousarray(hashes, dtype=np.uint64), SALT, out)
    return out


def probe_rows_reference(words: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    blocks = len(words) // 8
    out = []
    for h in (int(x) for x in hashes):
        block, key = (h >> 32) & (blocks - 1), h & 0xFFFFFFFF
        out.append(all((int(words[block * 8 + j]) >> (((key * int(SALT[j])) & 0xFFFFFFFF) >> 27))
                       & 1 for j in range(8)))
    return np.array(out, dtype=np.bool_)


class KeyBloomFilter:
    """The build keys of one join (no nulls) and their min / max (physical values: str or
    float), which the indexes prune with (`storage.predicates.index_forms`) while rows are
    tested against the filter only. Equality is identity, like IntegerSet."""

    __slots__ = ("distinct", "hi", "lo", "words")

    def __init__(self, words: np.ndarray, distinct: int, lo: object, hi: object) -> None:
        self.words = words
        self.distinct = distinct
        self.lo = lo
        self.hi = hi

    @classmethod
    def of(cls, keys: Column, lo: object, hi: object) -> KeyBloomFilter:
        hashes = np.unique(key_hashes(keys))
        words = np.zeros(optimal_bit_num(len(hashes), RUNTIME_BLOOM_FPP) // 32, np.uint32)
        add_hashes(words, hashes, SALT)
        return cls(words, len(hashes), lo, hi)

    def __repr__(self) -> str:
        return f"KeyBloomFilter(keys={self.distinct}, bytes={self.words.nbytes})"

    def contains(self, col: Column) -> np.ndarray:
        """Bool per row: may its key be a build key? (NULL rows: the caller masks them.)"""
        return probe_rows(self.words, key_hashes(col))


def varlen_in(col: Column, values: Sequence[object]) -> np.ndarray:
    """Bool per row of a var-len column: its bytes equal one of `values` (str or bytes; NULL
    rows: the caller masks them)."""
    assert col.offsets is not None
    wanted = sorted({v.encode() if isinstance(v, str) else bytes(v)  # type: ignore[call-overload]
                     for v in values})
    consts = Column.from_physical(col.type, wanted)
    const_hashes = key_hashes(consts)
    order = np.argsort(const_hashes, kind="stable")
    sorted_hashes = const_hashes[order]
    out = np.zeros(len(col), np.bool_)
    if len(np.unique(sorted_hashes)) < len(sorted_hashes):  # two constants share a hash
        members = set(wanted)
        offsets, data = col.offsets, col.data
        for i in range(len(col)):
            out[i] = data[offsets[i]:offsets[i + 1]].tobytes() in members
        return out
    row_hashes = key_hashes(col)
    pos = np.searchsorted(sorted_hashes, row_hashes)
    pos[pos == len(sorted_hashes)] = 0
    rows = np.flatnonzero(sorted_hashes[pos] == row_hashes) if len(wanted) else \
        np.zeros(0, np.int64)
    if len(rows):
        rows = rows.astype(np.int64)
        assert consts.offsets is not None  # built from byte strings
        out[rows] = strings_equal(np.ascontiguousarray(col.offsets, dtype=np.int64),
                                  np.ascontiguousarray(col.data, dtype=np.uint8), rows,
                                  consts.offsets, consts.data,
                                  order[pos[rows]].astype(np.int64))
    return out
