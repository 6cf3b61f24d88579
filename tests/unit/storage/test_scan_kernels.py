"""Kernels added for fast scans, each against its plain reference: bitmap membership (runtime
filters), var-len compare with a constant (string predicates), var-len gather (Column.take),
and the storage page cache (LRU bound, identity keys, read-only pages)."""

from __future__ import annotations

import numpy as np
import pytest

from storage.batch import Column
from storage.gather import gather_varlen, gather_varlen_reference
from storage.membership import bitmap_contains, bitmap_contains_reference
from storage.page_cache import PageCache, parse_limit
from storage.predicates import ColumnPredicate, IntegerSet, evaluate
from storage.segment.encoding import varlen_compare_const, varlen_compare_const_reference
from storage.types import BIGINT, INT, varchar


@pytest.mark.parametrize("seed", range(5))
def test_bitmap_membership_matches_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    members = rng.integers(-50, 500, 40)
    s = IntegerSet.of(members)
    for dtype in (np.int32, np.int64, np.int16):
        values = rng.integers(-100, 700, 2000).astype(dtype)
        got = s.contains(values)
        assert np.array_equal(got, bitmap_contains_reference(values, s.lo, s.bits))
        assert np.array_equal(got, np.isin(values, members))
    assert not IntegerSet.of(np.zeros(0, np.int64)).contains(np.arange(5)).any()
    assert bitmap_contains(np.zeros(0, np.int64), 0, np.ones(3, np.bool_)).shape == (0,)


def test_in_bitmap_predicate_is_exact_and_skips_nulls() -> None:
    col = Column.from_physical(INT, [1, None, 5, 7, 9, None, 5])
    pred = ColumnPredicate("c", "in_bitmap", (IntegerSet.of(np.array([5, 9])),))
    assert evaluate(pred, col).tolist() == [False, False, True, False, True, False, True]


WORDS = ["", "a", "ab", "abc", "b", "ba", "MFGR#12", "MFGR#121", "MFGR#1", "é", "日本", "zz"]


@pytest.mark.parametrize("const", ["", "a", "ab", "MFGR#12", "é", "日本", "zzz"])
def test_varlen_compare_const_matches_reference(const: str) -> None:
    col = Column.from_physical(varchar(20), WORDS)
    raw = const.encode()
    got = varlen_compare_const(col.offsets, col.data, np.frombuffer(raw, np.uint8))
    assert np.array_equal(got, varlen_compare_const_reference(col.offsets, col.data, raw))
    for op, fn in (("=", lambda a: a == const), ("<", lambda a: a < const),
                   (">=", lambda a: a >= const), ("!=", lambda a: a != const)):
        assert evaluate(ColumnPredicate("c", op, (const,)), col).tolist() == \
            [fn(w) for w in WORDS], op


def test_varlen_in_list_and_nulls() -> None:
    col = Column.from_physical(varchar(20), ["a", None, "b", "c", "b"])
    assert evaluate(ColumnPredicate("c", "in", ("b", "c")), col).tolist() == \
        [False, False, True, True, True]
    assert evaluate(ColumnPredicate("c", "not_in", ("b",)), col).tolist() == \
        [True, False, False, True, False]


@pytest.mark.parametrize("seed", range(4))
def test_gather_varlen_matches_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    words = ["".join(chr(97 + x) for x in rng.integers(0, 26, rng.integers(0, 9)))
             for _ in range(300)]
    col = Column.from_physical(varchar(10), words)
    idx = rng.integers(0, 300, 1000).astype(np.int64)
    got = gather_varlen(col.offsets, col.data, idx)
    want = gather_varlen_reference(col.offsets, col.data, idx)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert col.take(idx).to_pylist() == [words[i] for i in idx]
    assert col.take(np.zeros(0, np.int64)).to_pylist() == []


def test_page_cache_is_bounded_lru_and_freezes_pages() -> None:
    cache = PageCache(capacity_bytes=4 * (8 * 1000 + 200))
    cols = [Column.from_physical(BIGINT, list(range(1000))) for _ in range(6)]
    for i, c in enumerate(cols[:4]):
        cache.put(("f", i), c)
    assert len(cache) == 4 and cache.get(("f", 0)) is cols[0]  # 0 becomes most recent
    cache.put(("f", 4), cols[4])  # evicts the least recently used: 1
    assert cache.get(("f", 1)) is None and cache.get(("f", 0)) is cols[0]
    assert cache.used <= cache.capacity
    with pytest.raises(ValueError):
        cols[0].data[0] = 5  # shared pages are read-only
    cache.resize(0)
    assert len(cache) == 0 and cache.get(("f", 0)) is None
    assert parse_limit("1G") == 1 << 30 and parse_limit("2048") == 2048
    assert parse_limit("10%") > 0
