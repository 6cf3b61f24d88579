"""Direct-address join tables (executor/join_table.py, kernels in executor/kernels/join_hash.py):
one integer key indexed by `key - min`. Every case is checked against a plain-Python nested
loop (the pairs and their order: probe-row major, build rows ascending) and against the
hashed table, which the same data takes when the direct form is switched off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import executor.join_table as jt
from executor.join_table import JoinTable
from executor.kernels.join_hash import (
    build_direct,
    build_direct_groups,
    probe_direct,
    probe_direct_unique,
)
from storage.batch import Column
from storage.types import BIGINT, INT, SMALLINT, TINYINT, DataType


def _pairs_ref(build: list[int | None], probe: list[int | None]) -> list[tuple[int, int]]:
    return [(i, j) for i, p in enumerate(probe) for j, b in enumerate(build)
            if p is not None and b is not None and p == b]


def _probe(build: list[int | None], probe: list[int | None], t: DataType,
           rows: np.ndarray | None = None) -> tuple[JoinTable, list[tuple[int, int]]]:
    table = JoinTable([Column.from_physical(t, build)], len(build), rows)
    pi, bi = table.probe([Column.from_physical(t, probe)], len(probe))
    return table, list(zip(pi.tolist(), bi.tolist()))


keys = st.one_of(st.none(), st.integers(-20, 20))


@settings(max_examples=120, deadline=None)
@given(st.lists(keys, max_size=40), st.lists(keys, max_size=60),
       st.sampled_from([TINYINT, SMALLINT, INT, BIGINT]))
def test_direct_pairs_match_nested_loop(build: list[int | None], probe: list[int | None],
                                        t: DataType) -> None:
    table, got = _probe(build, probe, t)
    assert table.direct is not None  # a span of <= 41 keys is always direct
    assert got == _pairs_ref(build, probe)


@settings(max_examples=60, deadline=None)
@given(st.lists(keys, max_size=40), st.lists(keys, max_size=60))
def test_direct_and_hashed_tables_agree(build: list[int | None], probe: list[int | None],
                                        ) -> None:
    _, direct = _probe(build, probe, INT)
    old = jt.DIRECT_SPAN_PER_ROW, jt.DIRECT_SPAN_SMALL
    jt.DIRECT_SPAN_PER_ROW, jt.DIRECT_SPAN_SMALL = 0, 0
    try:
        table, hashed = _probe(build, probe, INT)
    finally:
        jt.DIRECT_SPAN_PER_ROW, jt.DIRECT_SPAN_SMALL = old
    # hashed, except a build without a non-NULL key (an empty direct table either way)
    assert table.direct is None or len(table.direct[2]) == 0
    assert hashed == direct  # same pairs, same order


def test_empty_and_all_null_builds_match_nothing() -> None:
    for build in ([], [None, None]):
        table, got = _probe(build, [1, None, 0], INT)
        assert table.direct is not None and got == []


def test_duplicate_build_keys_pair_every_row_in_build_order() -> None:
    table, got = _probe([5, 7, 5, 5, None, 7], [7, 5, 6, None, 5], INT)
    assert table.direct is not None and not table.direct[4]  # not unique
    assert got == [(0, 1), (0, 5), (1, 0), (1, 2), (1, 3), (4, 0), (4, 2), (4, 3)]


def test_subset_of_build_rows() -> None:
    table, got = _probe([1, 2, 3, 2], [2, 3, 1], INT, rows=np.array([1, 2]))
    assert table.direct is not None
    assert got == [(0, 1), (1, 2)]


def test_probe_keys_outside_the_span_and_at_int64_extremes() -> None:
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    table, got = _probe([hi - 2, hi, hi - 1], [lo, hi, -1, hi - 3, hi - 2, lo + 1], BIGINT)
    assert table.direct is not None
    assert got == [(1, 1), (4, 0)]
    table, got = _probe([lo, lo + 1], [hi, lo + 1, lo, 0], BIGINT)
    assert table.direct is not None
    assert got == [(1, 1), (2, 0)]


def test_wide_spans_fall_back_to_hashing() -> None:
    table, got = _probe([0, 1 << 40, 7], [7, 1 << 40, 3], BIGINT)
    assert table.direct is None
    assert got == [(0, 2), (1, 1)]


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8,
                                   np.uint16, np.uint32])
def test_kernels_against_numpy_reference(dtype: type) -> None:
    rng = np.random.default_rng(3)
    build = rng.integers(0, 50, 30).astype(dtype)
    bvalid = rng.random(30) > 0.1
    probe = rng.integers(0, 60, 200).astype(dtype)
    pvalid = rng.random(200) > 0.1
    lo, hi = int(build[bvalid].min()), int(build[bvalid].max())
    _, _, unique = build_direct(build, bvalid, lo, hi - lo + 1)
    starts, rows = build_direct_groups(build, bvalid, lo, hi - lo + 1)
    pi, bi = probe_direct(probe, pvalid, lo, hi, starts, rows)
    ref = [(i, j) for i in range(200) for j in range(30)
           if pvalid[i] and bvalid[j] and probe[i] == build[j]]
    assert list(zip(pi.tolist(), bi.tolist())) == ref
    assert not unique
    ub = np.unique(build)  # unique keys: the one-pass probe gives the same pairs
    heads, _nexts, unique = build_direct(ub, np.zeros(0, np.bool_), int(ub.min()),
                                        int(ub.max()) - int(ub.min()) + 1)
    assert unique
    pi, bi = probe_direct_unique(probe, pvalid, int(ub.min()), int(ub.max()), heads)
    ref = [(i, j) for i in range(200) for j in range(len(ub)) if pvalid[i] and probe[i] == ub[j]]
    assert list(zip(pi.tolist(), bi.tolist())) == ref
