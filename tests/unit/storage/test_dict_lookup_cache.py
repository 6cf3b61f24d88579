"""Dictionary lookup tables remembered with their dictionary (storage/segment/dict_codes.py
`DictPage.lookup_table`): a repeated (dictionary, predicates) pair gets the same read-only
table, equal to evaluating the predicates on the dictionary (storage.predicates.evaluate);
other predicates or another dictionary never see it; a join's in_bloom filter is not kept.
Random dictionaries hold empty strings and unicode."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Column
from storage.key_bloom import KeyBloomFilter
from storage.predicates import ColumnPredicate, evaluate
from storage.segment import dict_codes
from storage.segment.dict_codes import DictPage

POOL = ["", "a", "AIR", "ASIA", "AMERICA", "é", "日本", "🙂", "MFGR#12", "MFGR#2221", "zz"]


def _page(values: list[str]) -> DictPage:
    dictionary = Column.from_physical(T.varchar(20), sorted(set(values)))
    codes = np.arange(len(dictionary), dtype=np.uint64)
    return DictPage(dictionary, codes, None)


def _reference(page: DictPage, preds: list[ColumnPredicate]) -> np.ndarray:
    hit = np.ones(len(page.dictionary), np.bool_)
    for p in preds:
        hit &= evaluate(p, page.dictionary)
    return hit


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.sampled_from(POOL), min_size=1, max_size=8),
       spec=st.lists(st.tuples(st.sampled_from(["=", "!=", "<", ">=", "in", "not_in"]),
                               st.lists(st.sampled_from(POOL + ["nope"]), min_size=1,
                                        max_size=3)), min_size=1, max_size=2))
def test_cached_tables_equal_the_evaluation(values: list[str], spec) -> None:
    page = _page(values)
    preds = [ColumnPredicate("s", op, tuple(c) if op in ("in", "not_in") else (c[0],))
             for op, c in spec]
    first = page.lookup_table(preds)
    again = DictPage(page.dictionary, page.codes[::-1].copy(), None).lookup_table(preds)
    assert first is again  # the same dictionary object: remembered
    assert not first.flags.writeable
    assert first.tolist() == _reference(page, preds).tolist()
    # an equal dictionary in another object, and other predicates, are computed afresh
    twin = _page(values)
    assert twin.lookup_table(preds).tolist() == first.tolist()
    other = [ColumnPredicate("s", "=", ("AIR",))]
    assert page.lookup_table(other).tolist() == _reference(page, other).tolist()


def test_only_null_tests_have_no_table_and_bloom_filters_are_not_kept() -> None:
    page = _page(["AIR", "RAIL"])
    assert page.lookup_table([ColumnPredicate("s", "is_null")]) is None
    keys = Column.from_physical(T.STRING, ["AIR"])
    bloom = ColumnPredicate("s", "in_bloom", (KeyBloomFilter.of(keys, "AIR", "AIR"),))
    before = len(dict_codes._LOOKUP_TABLES)
    table = page.lookup_table([bloom])
    assert table is not None and table[0]  # AIR may be a key
    assert len(dict_codes._LOOKUP_TABLES) == before


def test_the_cache_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dict_codes, "MAX_LOOKUP_TABLES", 4)
    page = _page(POOL)
    for v in POOL:
        pred = [ColumnPredicate("s", "=", (v,))]
        assert page.lookup_table(pred).tolist() == _reference(page, pred).tolist()
    assert len(dict_codes._LOOKUP_TABLES) <= 4
