"""Join hash table: the build side's key columns hashed into bucket chains, probed per batch.

Key columns of both sides have the same type (the binder casts both operands of `=` to their
comparison type). Fixed-width keys are hashed as int64 bit patterns (floats with -0.0 folded
into 0.0), strings through their offsets+bytes buffers, LARGEINT / wide DECIMAL (Python ints)
through Python's hash. Candidate pairs with equal hashes are verified column by column, so
hash collisions never produce wrong matches. A row with any NULL key never matches.
Kernels: executor/kernels/join_hash.py. Upstream: DuckDB `JoinHashTable`.
"""

from __future__ import annotations

import numpy as np

from executor.kernels.join_hash import (
    build_chains,
    hash_int64,
    hash_strings,
    probe_count,
    probe_fill,
    strings_equal,
)
from storage.batch import Column


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
        self.hashes = hash_keys(cols, n)
        nb = 1
        while nb < 2 * max(n, 1):
            nb *= 2
        self.heads, self.nexts = build_chains(self.hashes, valid, nb)

    def probe(self, cols: list[Column], n: int) -> tuple[np.ndarray, np.ndarray]:
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
