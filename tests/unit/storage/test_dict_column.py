"""DictColumn (storage/batch.py): a string column as codes into a sorted dictionary.

Every transform (take, filter, slice, concat, with_type) and every accessor (rows, value_at,
the decoded `data` / `offsets`, Arrow) gives what the same rows as a plain Column give, for
random dictionaries with NULLs, empty strings, unicode and NUL bytes; concatenating columns
over different dictionaries keeps them encoded (a sorted, distinct union dictionary) when the
dictionaries are small next to the rows, and decodes otherwise.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.keys import column_codes
from storage import types as T
from storage.batch import Column, DictColumn, merge_dictionaries

TEXT = st.text(alphabet=st.sampled_from(["a", "b", "\x00", "é", "日", "🙂", "Z"]),
               max_size=4)


@st.composite
def dict_columns(draw: st.DrawFn, min_rows: int = 0) -> tuple[DictColumn, list[str | None]]:
    values = sorted(set(draw(st.lists(TEXT, min_size=1, max_size=8))),
                    key=lambda v: v.encode())
    dictionary = Column.from_physical(T.STRING, values)
    n = draw(st.integers(min_rows, 60))
    codes = draw(st.lists(st.integers(0, len(values) - 1), min_size=n, max_size=n))
    nulls = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    validity = None if not any(nulls) else ~np.array(nulls, np.bool_)
    col = DictColumn(dictionary, np.array(codes, np.uint8), validity)
    return col, [None if null else values[c] for c, null in zip(codes, nulls)]


@settings(max_examples=80, deadline=None)
@given(case=dict_columns(), seed=st.integers(0, 2**31))
def test_transforms_equal_the_plain_columns(case, seed: int) -> None:  # type: ignore[no-untyped-def]
    col, expected = case
    plain = Column.from_physical(T.STRING, expected)
    n = len(expected)
    assert len(col) == n and col.to_pylist() == expected
    assert [col.value_at(i) for i in range(n)] == expected
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, max(n, 1), size=n if n else 0)
    mask = rng.random(n) < 0.5
    a, b = sorted(rng.integers(0, n + 1, 2).tolist())
    for got, want in ((col.take(rows), plain.take(rows)), (col.filter(mask), plain.filter(mask)),
                      (col.slice(a, b), plain.slice(a, b))):
        assert isinstance(got, DictColumn) and not got.is_decoded
        assert got.to_pylist() == want.to_pylist()
    assert col.with_type(T.varchar(9)).type == T.varchar(9)
    # the decoded strings: the Arrow layout of the same values (under NULLs: the code's value)
    assert col.to_arrow().to_pylist() == expected
    valid = [i for i in range(n) if expected[i] is not None]
    raw = col.data.tobytes()
    offs = col.offsets.tolist()
    assert [raw[offs[i]:offs[i + 1]].decode() for i in valid] == [expected[i] for i in valid]
    # factorized on codes: the order and NULL code of the plain column's
    assert np.array_equal(column_codes(col)[0], column_codes(plain)[0])


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(dict_columns(), min_size=1, max_size=4), shared=st.booleans())
def test_concat_keeps_codes_or_decodes(parts, shared: bool) -> None:  # type: ignore[no-untyped-def]
    cols = [c for c, _ in parts]
    if shared:  # one dictionary for all parts (a segment's merged dictionary)
        first = cols[0]
        cols = [DictColumn(first.dictionary, c.codes % len(first.dictionary), c.validity)
                for c in cols]
    expected = [v for c in cols for v in c.to_pylist()]
    got = Column.concat(cols)
    assert got.to_pylist() == expected
    if shared or len(cols) == 1:
        assert isinstance(got, DictColumn)
    if isinstance(got, DictColumn):
        values = got.dictionary.to_pylist()
        assert values == sorted(set(values), key=lambda v: v.encode())  # type: ignore[union-attr]


def test_dictionaries_merge_when_small_next_to_the_rows() -> None:
    one = Column.from_physical(T.STRING, ["", "AIR", "a\x00"])
    two = Column.from_physical(T.STRING, ["AIR", "MAIL", "日本"])
    a = DictColumn(one, np.array([0, 1, 2] * 20, np.uint8))
    b = DictColumn(two, np.array([2, 1, 0] * 20, np.uint8), np.array([True, False, True] * 20))
    got = Column.concat([a, b])
    assert isinstance(got, DictColumn) and not got.is_decoded
    assert got.dictionary.to_pylist() == ["", "AIR", "MAIL", "a\x00", "日本"]
    assert got.to_pylist() == a.to_pylist() + b.to_pylist()
    merged, remaps = merge_dictionaries([one, two])
    assert merged.to_pylist() == got.dictionary.to_pylist()
    assert [r.tolist() for r in remaps] == [[0, 1, 3], [1, 2, 4]]
    # two rows over six dictionary entries: the rows are decoded instead
    small = Column.concat([a.slice(0, 1), b.slice(0, 1)])
    assert not isinstance(small, DictColumn) and small.to_pylist() == ["", "日本"]
