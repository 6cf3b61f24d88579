"""Join hash table: the build side's key columns hashed into bucket chains, probed per batch.

Key columns of both sides have the same type (the binder casts both operands of `=` to their
comparison type). Fixed-width keys are hashed as int64 bit patterns (floats with -0.0 folded
into 0.0), strings through their offsets+bytes buffers, LARGEINT / wide DECIMAL (Python ints)
through Python's hash. Candidate pairs with equal hashes are verified column by column, so
hash collisions never produce wrong matches. A row with any NULL key never matches.
One integer key whose build values span few more slots than the build has rows (a dimension's
primary key) is a direct-address table instead: `heads[key - min]`, no hashing, no
verification (`DIRECT_SPAN_*` say how wide a span is worth it); pairs come out in the same
order either way. Kernels: executor/kernels/join_hash.py. Upstream: DuckDB `JoinHashTable`
(and its perfect hash join for small integer key ranges).
"""

from __future__ import annotations

import numpy as np

from executor.kernels.join_hash import (
    build_chains,
    build_direct,
    build_direct_groups,
    hash_int64,
    hash_strings,
    probe_count,
    probe_direct,
    probe_direct_unique,
    probe_fill,
    strings_equal,
)
from storage.batch import Column

# A direct-address table is used when the key span is at most DIRECT_SPAN_PER_ROW slots per
# build row (memory no larger than the hash table's buckets, chains and hashes) or at most
# DIRECT_SPAN_SMALL slots (2 MiB of heads: cheap whatever the build, e.g. a filtered
# dimension whose few keys spread over its whole key range).
DIRECT_SPAN_PER_ROW = 8
DIRECT_SPAN_SMALL = 1 << 18
_EMPTY_VALID = np.zeros(0, np.bool_)
_NO_ROWS = np.zeros(0, np.int64)


def direct_key(col: Column) -> np.ndarray | None:
    """The values of a key column a direct-address table can index (any signed integer width,
    unsigned below 64 bits: compared as int64 without loss), else None."""
    if col.offsets is not None:
        return None
    data = col.data
    if data.dtype.kind == "i" or (data.dtype.kind == "u" and data.dtype.itemsize < 8):
        return np.ascontiguousarray(data)
    return None


def key_as_int64(col: Column) -> np.ndarray:
    """A fixed-width key column as int64 values whose equality is the column's equality."""
    data = col.data
    if data.dtype == np.dtype(object):
        return np.fromiter((hash(v) for v in data), dtype=np.int64, count=len(data))
    if data.dtype.kind == "f":
        d = data.astype(np.float64)
        return np.where(d == 0.0, 0.0, d).view(np.int64)
    return data.astype(np.int64, copy=False)


def hash_keys(cols: list[Column], n: int) -> np.ndarray:
    """One hash per row of the key columns; a NULL hashes alike whatever value lies under it.

    Expressions leave their own values under a NULL (`f + k` keeps k where f is NULL), so
    hashing those would send the rows of one NULL group to different instances of a shuffle
    (two NULL groups after a two-phase aggregate)."""
    h = np.zeros(n, np.uint64)
    for col in cols:
        nulls = None if col.validity is None else np.flatnonzero(~col.validity)
        before = h[nulls] if nulls is not None and len(nulls) else None
        if col.offsets is not None:
            hash_strings(col.offsets, col.data, h)
        else:
            hash_int64(np.ascontiguousarray(key_as_int64(col)), h)
        if before is not None:
            hash_int64(np.zeros(len(before), np.int64), before)
            h[nulls] = before
    return h


def keys_valid(cols: list[Column], n: int) -> np.ndarray:
    valid = np.ones(n, np.bool_)
    for col in cols:
        if col.validity is not None:
            valid &= col.validity
    return valid


def pairs_equal(a: Column, ia: np.ndarray, b: Column, ib: np.ndarray) -> np.ndarray:
    """Whether value ia[k] of `a` equals value ib[k] of `b` (ignoring validity)."""
    if a.offsets is not None:
        assert b.offsets is not None
        return np.asarray(strings_equal(a.offsets, a.data, ia, b.offsets, b.data, ib))
    x, y = a.data[ia], b.data[ib]
    return np.asarray(x == y, dtype=np.bool_)


class JoinTable:
    """The build side's keys; `probe` returns verified (probe row, build row) pairs."""

    def __init__(self, cols: list[Column], n: int, rows: np.ndarray | None = None) -> None:
        self.cols = cols
        self.n = n
        valid = keys_valid(cols, n)
        if rows is not None:  # restrict the table to a subset of the build rows
            sub = np.zeros(n, np.bool_)
            sub[rows] = True
            valid &= sub
        self._valid = valid
        self._hashed = False
        # direct-address form, or None: (lo, hi, heads, -, True) for unique keys,
        # (lo, hi, starts, rows, False) when keys repeat (build_direct_groups)
        self.direct: tuple[int, int, np.ndarray, np.ndarray, bool] | None = None
        keys = direct_key(cols[0]) if len(cols) == 1 else None
        if keys is not None:
            present = keys[valid] if not valid.all() else keys
            if len(present) == 0:  # no key can match: an empty direct table
                self.direct = (0, -1, np.zeros(0, np.int64), np.zeros(0, np.int64), True)
                return
            lo, hi = int(present.min()), int(present.max())
            span = hi - lo + 1
            if span <= max(DIRECT_SPAN_PER_ROW * len(present), DIRECT_SPAN_SMALL):
                live = _EMPTY_VALID if len(present) == n else valid
                heads, _, unique = build_direct(keys, live, lo, span)
                if unique:
                    self.direct = (lo, hi, heads, _NO_ROWS, True)
                else:  # repeated keys: rows grouped by key (contiguous runs to copy)
                    starts, rows = build_direct_groups(keys, live, lo, span)
                    self.direct = (lo, hi, starts, rows, False)
                return
        self._hash()

    def _hash(self) -> None:
        """The hashed (bucket chain) form of the table."""
        self.hashes = hash_keys(self.cols, self.n)
        nb = 1
        while nb < 2 * max(self.n, 1):
            nb *= 2
        self.heads, self.nexts = build_chains(self.hashes, self._valid, nb)
        self._hashed = True

    def probe(self, cols: list[Column], n: int) -> tuple[np.ndarray, np.ndarray]:
        if self.direct is not None:
            keys = direct_key(cols[0])
            if keys is not None:
                lo, hi, heads, rows, unique = self.direct
                v = cols[0].validity
                valid = _EMPTY_VALID if v is None else v
                if unique:
                    return probe_direct_unique(keys, valid, lo, hi, heads)
                return probe_direct(keys, valid, lo, hi, heads, rows)
            if not self._hashed:  # a probe key a direct table cannot index (not expected)
                self._hash()
        h = hash_keys(cols, n)
        valid = keys_valid(cols, n)
        counts = probe_count(h, valid, self.heads, self.nexts, self.hashes)
        total = int(counts.sum())
        pi, bi = probe_fill(h, valid, self.heads, self.nexts, self.hashes, total)
        if total == 0:
            return pi, bi
        ok = np.ones(total, np.bool_)
        for pc, bc in zip(cols, self.cols):
            ok &= pairs_equal(pc, pi, bc, bi)
        if not ok.all():
            pi, bi = pi[ok], bi[ok]
        return pi, bi
