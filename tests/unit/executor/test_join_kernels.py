"""Join kernels (executor/kernels/join_hash.py) and JoinTable against plain-numpy references."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.join_table import JoinTable
from executor.kernels.join_hash import (
    build_chains, hash_int64, hash_strings, probe_count, probe_fill, strings_equal,
)
from storage.batch import Column
from storage.types import INT, varchar

MASK = (1 << 64) - 1


def _mix_ref(x: int) -> int:
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _combine_ref(h: int, v: int) -> int:
    return _mix_ref((h * 0x9E3779B97F4A7C15 + v) & MASK)


def test_hash_int64_matches_reference() -> None:
    vals = np.array([0, 1, -1, 2**62, -(2**63), 12345], np.int64)
    h = np.zeros(len(vals), np.uint64)
    hash_int64(vals, h)
    ref = [_combine_ref(0, _mix_ref(int(v) & MASK)) for v in vals]
    assert h.tolist() == ref


def test_hash_strings_matches_reference() -> None:
    words = [b"", b"a", b"abc", b"\xff\x00z"]
    offsets = np.zeros(len(words) + 1, np.int64)
    np.cumsum([len(w) for w in words], out=offsets[1:])
    data = np.frombuffer(b"".join(words), np.uint8).copy()
    h = np.full(len(words), 7, np.uint64)
    hash_strings(offsets, data, h)
    ref = []
    for w in words:
        x = 0xCBF29CE484222325
        for byte in w:
            x = ((x ^ byte) * 0x100000001B3) & MASK
        x ^= len(w)
        ref.append(_combine_ref(7, _mix_ref(x)))
    assert h.tolist() == ref


def _pairs_ref(build: np.ndarray, bvalid: np.ndarray, probe: np.ndarray,
               pvalid: np.ndarray) -> set[tuple[int, int]]:
    return {(i, j) for i in range(len(probe)) for j in range(len(build))
            if pvalid[i] and bvalid[j] and probe[i] == build[j]}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40), st.lists(st.integers(0, 6), max_size=40),
       st.integers(0, 3))
def test_chains_and_probe_equal_hash_pairs(build: list[int], probe: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    b = np.array(build, np.uint64)
    p = np.array(probe, np.uint64)
    bvalid = rng.random(len(b)) > 0.2
    pvalid = rng.random(len(p)) > 0.2
    nb = 4
    heads, nexts = build_chains(b, bvalid, nb)
    counts = probe_count(p, pvalid, heads, nexts, b)
    pi, bi = probe_fill(p, pvalid, heads, nexts, b, int(counts.sum()))
    got = set(zip(pi.tolist(), bi.tolist()))
    assert len(got) == len(pi)
    assert got == _pairs_ref(b, bvalid, p, pvalid)
    ref_counts = [sum(1 for j in range(len(b)) if bvalid[j] and b[j] == p[i]) if pvalid[i]
                  else 0 for i in range(len(p))]
    assert counts.tolist() == ref_counts


def test_strings_equal_matches_numpy() -> None:
    a = Column.from_physical(varchar(5), ["x", "yy", "", "abc"])
    b = Column.from_physical(varchar(5), ["yy", "x", "abd", ""])
    ia = np.array([0, 1, 2, 3, 3, 0], np.int64)
    ib = np.array([1, 0, 3, 2, 3, 0], np.int64)
    got = strings_equal(a.offsets, a.data, ia, b.offsets, b.data, ib)
    av, bv = np.array(a.to_pylist(), object), np.array(b.to_pylist(), object)
    assert got.tolist() == (av[ia] == bv[ib]).tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 4)),
                          st.sampled_from(["", "a", "bb", "a\x00"])), max_size=30),
       st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 4)),
                          st.sampled_from(["", "a", "bb", "a\x00"])), max_size=30))
def test_join_table_multi_column_keys(build: list[tuple],  # type: ignore[type-arg]
                                      probe: list[tuple]) -> None:  # type: ignore[type-arg]
    def cols(rows: list[tuple]) -> list[Column]:  # type: ignore[type-arg]
        return [Column.from_physical(INT, [r[0] for r in rows]),
                Column.from_physical(varchar(4), [r[1] for r in rows])]

    table = JoinTable(cols(build), len(build))
    pi, bi = table.probe(cols(probe), len(probe))
    got = sorted(zip(pi.tolist(), bi.tolist()))
    ref = sorted((i, j) for i, p in enumerate(probe) for j, b in enumerate(build)
                 if p[0] is not None and b[0] is not None and p == b)
    assert got == ref
