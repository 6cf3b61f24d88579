"""numba kernels of the hash join: key hashing, the chained build table and probing.

Keys arrive as typed numpy arrays: fixed-width values as int64 bit patterns, strings in the
Arrow large_string layout (int64 offsets + uint8 bytes). `hash_int64` / `hash_strings` fold one
key column into a running uint64 hash per row (multi-column keys call them once per column).
`build_chains` threads the build rows into bucket chains (`heads` per bucket, `nexts` per row,
-1 ends a chain); rows with a NULL key are left out, so NULL never matches. `probe_count` /
`probe_fill` emit the (probe row, build row) candidate pairs whose hashes are equal; the caller
verifies real key equality (hash collisions) with numpy. `strings_equal` compares string pairs.
Every kernel has a plain-numpy reference in tests/unit/executor/test_join_kernels.py.
Upstream: DuckDB `JoinHashTable` (chained, pointer-based), Doris `HashJoinNode` build/probe.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# string pairs are compared by the storage kernel (also used by runtime key filters)
from storage.segment.encoding import strings_equal  # noqa: F401 - re-exported

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_FNV_PRIME = np.uint64(0x100000001B3)
_FNV_BASIS = np.uint64(0xCBF29CE484222325)


@njit(cache=True, nogil=True)
def _mix(x: np.uint64) -> np.uint64:
    # splitmix64 finaliser: spreads every input bit over the whole word
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True)
def hash_int64(values: np.ndarray, h: np.ndarray) -> None:
    """h[i] = mix(h[i] * GOLD + mix(values[i])) for int64 `values` (in place)."""
    for i in range(values.shape[0]):
        v = _mix(np.uint64(values[i]))
        h[i] = _mix(h[i] * _GOLD + v)


@njit(cache=True, nogil=True)
def hash_strings(offsets: np.ndarray, data: np.ndarray, h: np.ndarray) -> None:
    """Fold FNV-1a of each string (offsets+bytes layout) into `h` (in place)."""
    for i in range(offsets.shape[0] - 1):
        x = _FNV_BASIS
        for j in range(offsets[i], offsets[i + 1]):
            x = (x ^ np.uint64(data[j])) * _FNV_PRIME
        x = x ^ np.uint64(offsets[i + 1] - offsets[i])
        h[i] = _mix(h[i] * _GOLD + _mix(x))


@njit(cache=True, nogil=True)
def build_chains(hashes: np.ndarray, valid: np.ndarray, nbuckets: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Bucket chains over the valid rows; `nbuckets` must be a power of two."""
    heads = np.full(nbuckets, -1, np.int64)
    nexts = np.full(hashes.shape[0], -1, np.int64)
    mask = np.uint64(nbuckets - 1)
    # insert in reverse so every chain lists build rows in ascending order
    for i in range(hashes.shape[0] - 1, -1, -1):
        if valid[i]:
            b = np.int64(hashes[i] & mask)
            nexts[i] = heads[b]
            heads[b] = i
    return heads, nexts


@njit(cache=True, nogil=True)
def probe_count(hashes: np.ndarray, valid: np.ndarray, heads: np.ndarray, nexts: np.ndarray,
                build_hashes: np.ndarray) -> np.ndarray:
    """Number of build rows with an equal hash, per probe row (0 for NULL keys)."""
    mask = np.uint64(heads.shape[0] - 1)
    counts = np.zeros(hashes.shape[0], np.int64)
    for i in range(hashes.shape[0]):
        if not valid[i]:
            continue
        h = hashes[i]
        j = heads[np.int64(h & mask)]
        c = 0
        while j >= 0:
            if build_hashes[j] == h:
                c += 1
            j = nexts[j]
        counts[i] = c
    return counts


@njit(cache=True, nogil=True)
def probe_fill(hashes: np.ndarray, valid: np.ndarray, heads: np.ndarray, nexts: np.ndarray,
               build_hashes: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs counted by `probe_count`, probe-row major."""
    mask = np.uint64(heads.shape[0] - 1)
    pi = np.empty(total, np.int64)
    bi = np.empty(total, np.int64)
    k = 0
    for i in range(hashes.shape[0]):
        if not valid[i]:
            continue
        h = hashes[i]
        j = heads[np.int64(h & mask)]
        while j >= 0:
            if build_hashes[j] == h:
                pi[k] = i
                bi[k] = j
                k += 1
            j = nexts[j]
    return pi, bi


@njit(cache=True, nogil=True)
def is_identity(indices: np.ndarray) -> bool:
    """Whether indices == arange(len(indices)): every probe row matched exactly once, in order
    (the usual foreign-key -> primary-key join), so the probe side needs no gather."""
    for i in range(indices.shape[0]):
        if indices[i] != i:
            return False
    return True


# ---- direct-address tables: one integer key over a span not much wider than the build ------
# A dimension's primary key (SSB's d_datekey, c_custkey, s_suppkey, p_partkey; TPC-H's keys)
# spans few more values than the build has rows, so `heads[key - lo]` finds a key's first
# build row with one load: no hashing of either side, no chain walk past other keys, and no
# verification pass (the slot *is* the key). Keys that repeat (a fact table's foreign key as
# the build side) group their rows by key instead (ascending build rows, like the chains of
# `build_chains`), so pairs come out in the same order as from the hashed table.


@njit(cache=True, nogil=True)
def build_direct(keys: np.ndarray, valid: np.ndarray, lo: int, span: int
                 ) -> tuple[np.ndarray, np.ndarray, bool]:
    """Slots `heads[key - lo]` -> first build row with that key, `nexts` per row (-1 ends),
    and whether every key is unique. Rows with valid[i] False (NULL keys) are left out;
    an empty `valid` means every row is valid. Every valid key lies in [lo, lo + span)."""
    heads = np.full(span, -1, np.int64)
    nexts = np.full(keys.shape[0], -1, np.int64)
    all_valid = valid.shape[0] == 0
    unique = True
    for i in range(keys.shape[0] - 1, -1, -1):  # reverse: chains list rows ascending
        if all_valid or valid[i]:
            s = np.int64(keys[i]) - lo
            if heads[s] >= 0:
                unique = False
            nexts[i] = heads[s]
            heads[s] = i
    return heads, nexts, unique


@njit(cache=True, nogil=True)
def probe_direct_unique(keys: np.ndarray, valid: np.ndarray, lo: int, hi: int,
                        heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(probe row, build row) pairs against a table of unique keys: at most one per probe
    row, so one pass fills them (empty `valid`: every probe row is valid)."""
    n = keys.shape[0]
    all_valid = valid.shape[0] == 0
    pi = np.empty(n, np.int64)
    bi = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        if all_valid or valid[i]:
            v = np.int64(keys[i])
            if lo <= v <= hi:  # compared before subtracting: no int64 wrap-around
                j = heads[v - lo]
                if j >= 0:
                    pi[k] = i
                    bi[k] = j
                    k += 1
    return pi[:k], bi[:k]


@njit(cache=True, nogil=True)
def build_direct_groups(keys: np.ndarray, valid: np.ndarray, lo: int, span: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Build rows grouped by key (a counting sort, CSR layout) for keys that repeat: the rows
    with key `lo + s` are rows[starts[s]:starts[s + 1]], ascending. A probe then copies one
    contiguous run per probe row instead of chasing a chain through the build (one cache
    miss per pair when the build is large: TPC-H Q13's orders by o_custkey)."""
    all_valid = valid.shape[0] == 0
    starts = np.zeros(span + 1, np.int64)
    for i in range(keys.shape[0]):
        if all_valid or valid[i]:
            starts[np.int64(keys[i]) - lo + 1] += 1
    for s in range(span):
        starts[s + 1] += starts[s]
    fill = starts[:-1].copy()
    rows = np.empty(starts[span], np.int64)
    for i in range(keys.shape[0]):  # ascending i: each run lists its rows ascending
        if all_valid or valid[i]:
            slot = np.int64(keys[i]) - lo
            rows[fill[slot]] = i
            fill[slot] += 1
    return starts, rows


@njit(cache=True, nogil=True)
def probe_direct(keys: np.ndarray, valid: np.ndarray, lo: int, hi: int, starts: np.ndarray,
                 rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (probe row, build row) pair with equal keys against `build_direct_groups`,
    probe-row major, build rows ascending: a counting pass sizes the output, a second fills
    it."""
    n = keys.shape[0]
    all_valid = valid.shape[0] == 0
    total = 0
    for i in range(n):
        if all_valid or valid[i]:
            v = np.int64(keys[i])
            if lo <= v <= hi:  # compared before subtracting: no int64 wrap-around
                total += starts[v - lo + 1] - starts[v - lo]
    pi = np.empty(total, np.int64)
    bi = np.empty(total, np.int64)
    k = 0
    for i in range(n):
        if all_valid or valid[i]:
            v = np.int64(keys[i])
            if lo <= v <= hi:
                for r in range(starts[v - lo], starts[v - lo + 1]):
                    pi[k] = i
                    bi[k] = rows[r]
                    k += 1
    return pi, bi
