"""Runtime filters on string and float join keys: the per-row bloom kernel equals its plain-Python
reference, never rejects a build key (strings, unicode, -0.0 / 0.0), keeps its false-positive
rate near RUNTIME_BLOOM_FPP; `in` lists over many strings evaluate exactly; the join's build
keys pick `in` (few) or `in_bloom` + bounds (many), as Doris' IN_OR_BLOOM_FILTER does."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.runtime_filter import RUNTIME_FILTER_MAX_IN_NUM, build_predicates, filter_type
from storage.batch import Column
from storage.key_bloom import (
    RUNTIME_BLOOM_FPP,
    KeyBloomFilter,
    key_hashes,
    probe_rows,
    probe_rows_reference,
    varlen_in,
)
from storage.predicates import ColumnPredicate, evaluate, index_forms
from storage.types import parse_type

VARCHAR = parse_type("VARCHAR(64)")
DOUBLE = parse_type("DOUBLE")
FLOAT = parse_type("FLOAT")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=60),
       st.lists(st.text(max_size=12), max_size=60))
def test_string_filter_passes_every_key_and_matches_reference(keys, probes) -> None:  # type: ignore[no-untyped-def]
    bloom = KeyBloomFilter.of(Column.from_physical(VARCHAR, keys), min(keys), max(keys))
    col = Column.from_physical(VARCHAR, keys + probes)
    got = bloom.contains(col)
    assert got[:len(keys)].all()
    assert (got == probe_rows_reference(bloom.words, key_hashes(col))).all()


def test_float_filter_folds_negative_zero_and_keeps_fpp() -> None:
    rng = np.random.default_rng(3)
    keys = rng.normal(size=5000)
    bloom = KeyBloomFilter.of(Column(DOUBLE, np.concatenate([keys, [0.0]])), None, None)
    assert bloom.contains(Column(DOUBLE, keys)).all()
    assert bloom.contains(Column(DOUBLE, np.array([-0.0]))).all()
    # FLOAT probe columns are hashed as the doubles they equal
    singles = keys[:100].astype(np.float32)
    widened = KeyBloomFilter.of(Column(DOUBLE, singles.astype(np.float64)), None, None)
    assert widened.contains(Column(FLOAT, singles)).all()
    others = rng.normal(size=50000) + 100.0
    rate = bloom.contains(Column(DOUBLE, others)).mean()
    assert rate < 2 * RUNTIME_BLOOM_FPP
    hashes = key_hashes(Column(DOUBLE, others[:2000]))
    assert (probe_rows(bloom.words, hashes) == probe_rows_reference(bloom.words, hashes)).all()


def test_varlen_in_with_many_values_is_exact() -> None:
    rng = random.Random(5)
    words = [f"w{i}é" for i in range(300)]
    rows = [rng.choice(words + ["", "zz", None]) for _ in range(3000)]
    col = Column.from_physical(VARCHAR, rows)
    wanted = tuple(words[::3])
    for op in ("in", "not_in"):
        got = evaluate(ColumnPredicate("s", op, wanted), col)
        want = [r is not None and ((r in wanted) == (op == "in")) for r in rows]
        assert got.tolist() == want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=80),
       st.lists(st.text(max_size=6), min_size=1, max_size=30))
def test_varlen_in_equals_python_membership(rows, values) -> None:  # type: ignore[no-untyped-def]
    col = Column.from_physical(VARCHAR, rows)
    got = varlen_in(col, values).tolist()
    assert [r is not None and r in set(values) for r in rows] == [
        g and r is not None for g, r in zip(got, rows)]


def test_build_keys_choose_in_or_bloom() -> None:
    few = Column.from_physical(VARCHAR, ["a", "b", None, "a"])
    (pred,) = build_predicates("s", few)
    assert pred.op == "in" and sorted(pred.values) == ["a", "b"]  # type: ignore[type-var]
    assert filter_type([pred]) == "in"
    many = Column.from_physical(VARCHAR, [f"k{i:05d}" for i in range(RUNTIME_FILTER_MAX_IN_NUM + 1)])
    preds = build_predicates("s", many)
    assert [p.op for p in preds] == ["in_bloom"]
    # the indexes prune with the keys' min / max; rows are tested against the filter only
    assert index_forms(preds[0]) == [
        ColumnPredicate("s", ">=", ("k00000",)),
        ColumnPredicate("s", "<=", (f"k{RUNTIME_FILTER_MAX_IN_NUM:05d}",))]
    assert filter_type(preds) == "bloom"
    floats = Column(DOUBLE, np.array([1.5, -0.0, 0.0, 2.5]))
    (pred,) = build_predicates("f", floats)
    assert pred.op == "in" and pred.values == (0.0, 1.5, 2.5)
    assert build_predicates("f", Column(DOUBLE, np.array([1.0, np.nan]))) == []
    wide = Column(DOUBLE, np.arange(2000, dtype=np.float64))
    (pred,) = build_predicates("f", wide)
    assert [f.values for f in index_forms(pred)] == [(0.0,), (1999.0,)]


def test_string_keys_that_are_not_utf8_stay_bytes() -> None:
    keys = Column(VARCHAR, np.frombuffer(b"ok\xff\xfe", np.uint8).copy(), None,
                  np.array([0, 2, 4], np.int64))
    (pred,) = build_predicates("s", keys)
    assert pred.op == "in" and sorted(pred.values, key=repr) == sorted(["ok", b"\xff\xfe"], key=repr)
    probe = Column(VARCHAR, np.frombuffer(b"ok\xff\xfex", np.uint8).copy(), None,
                   np.array([0, 2, 4, 5], np.int64))
    assert evaluate(pred, probe).tolist() == [True, True, False]
