"""storage/merge.py's string ranks (Arrow dictionary + rank) against the pure-Python reference
they replaced (`np.unique` over the cells as Python bytes): same dense ranks in byte order, for
NULLs, empty strings, unicode, sliced columns (offsets not starting at 0) and dictionary-coded
columns, and `combine` of an AGGREGATE batch with string keys and a string MIN / MAX value
against a pure-Python fold."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.batch import Batch, Column, DictColumn
from storage.catalog.meta import AggType, KeysType
from storage.merge import MergeSpec, combine, sortable, string_ranks
from storage.types import parse_type

VARCHAR = parse_type("VARCHAR(20)")
INT = parse_type("INT")
CELLS = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "ü", "üa", "\x00", "zz"]),
                  st.text(max_size=4))


def _reference_ranks(values: list[str | None]) -> np.ndarray:
    blobs = [b"" if v is None else v.encode() for v in values]
    uniq = sorted(set(blobs))
    return np.array([uniq.index(b) for b in blobs], np.int64)


@settings(max_examples=150, deadline=None)
@given(st.lists(CELLS, max_size=40), st.integers(0, 5))
def test_string_ranks_equal_python_bytes_order(values: list[str | None], cut: int) -> None:
    col = Column.from_physical(VARCHAR, values)
    sliced = col.slice(min(cut, len(values)), len(values))  # offsets need not start at 0
    got = string_ranks(sliced)
    want = _reference_ranks(values[min(cut, len(values)):])
    # NULL cells hold some bytes; compare only the valid ones (sortable zeroes the others)
    valid = np.array([v is not None for v in values[min(cut, len(values)):]], np.bool_)
    ok_got = got[valid]
    ok_want = _reference_ranks([v for v in values[min(cut, len(values)):] if v is not None])
    assert np.array_equal(np.argsort(ok_got, kind="stable"), np.argsort(ok_want, kind="stable"))
    assert np.array_equal(ok_got[:, None] == ok_got[None, :], ok_want[:, None] == ok_want[None, :])
    if valid.all():
        assert np.array_equal(got, want)


@settings(max_examples=100, deadline=None)
@given(st.lists(CELLS, min_size=1, max_size=30))
def test_sortable_orders_dictionary_codes_like_strings(values: list[str | None]) -> None:
    plain = Column.from_physical(VARCHAR, values)
    distinct = sorted({v.encode() for v in values if v is not None})
    dictionary = Column.from_physical(VARCHAR, [b.decode() for b in distinct])
    codes = np.array([0 if v is None else distinct.index(v.encode()) for v in values], np.int32)
    validity = np.array([v is not None for v in values], np.bool_)
    if not distinct:
        return  # a dictionary needs a value; the all-NULL column is covered above
    coded = DictColumn(dictionary, codes, None if validity.all() else validity, VARCHAR)
    pv, pvals = sortable(plain)
    dv, dvals = sortable(coded)
    assert np.array_equal(pv, dv)
    assert np.array_equal(np.lexsort([pvals, pv]), np.lexsort([dvals, dv]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(CELLS, st.integers(-3, 3), CELLS), max_size=40))
def test_combine_string_keys_and_extremes_equal_python_fold(rows: list[tuple]) -> None:
    batch = Batch(("k", "i", "mn", "mx"), (
        Column.from_physical(VARCHAR, [r[0] for r in rows]),
        Column.from_physical(INT, [r[1] for r in rows]),
        Column.from_physical(VARCHAR, [r[2] for r in rows]),
        Column.from_physical(VARCHAR, [r[2] for r in rows]),
    ))
    spec = MergeSpec(KeysType.AGG_KEYS, ("k", "i"), {"mn": AggType.MIN, "mx": AggType.MAX})
    out = combine(batch, spec)
    want: dict[tuple, list] = {}
    for k, i, v in rows:
        acc = want.setdefault((k, i), [None, None])
        if v is not None:
            b = v.encode()
            acc[0] = b if acc[0] is None or b < acc[0] else acc[0]
            acc[1] = b if acc[1] is None or b > acc[1] else acc[1]
    got = {(r[0], r[1]): [None if x is None else x.encode() for x in r[2:]] for r in out.rows()}
    assert got == want

    def key(k: tuple) -> tuple:
        return (k[0] is not None, (k[0] or "").encode(), k[1] is not None, k[1] or 0)

    assert [(r[0], r[1]) for r in out.rows()] == sorted(want, key=key)
