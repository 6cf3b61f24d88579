"""executor/build_dictionary.py: a build side's strings as codes into a sorted dictionary, with
the same values (NULLs, empty strings, unicode), and gathers on the codes equal to gathers
on the strings."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.build_dictionary import dictionary_encoded, with_encoded_strings
from storage.batch import Batch, Column, DictColumn
from storage.types import INT, varchar

texts = st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", "é", "日本", "a\x00", "Z"]),
                  st.text(max_size=4))
# mostly repeated values (encoded) as well as mostly distinct ones (left plain)
columns = st.one_of(st.lists(texts, max_size=50),
                    st.lists(st.sampled_from(["", "a", "é", None, "日本"]), max_size=50))


@settings(max_examples=100, deadline=None)
@given(columns, st.lists(st.integers(0, 49), max_size=30))
def test_encoded_column_keeps_values_and_gathers(values: list[str | None],
                                                 picks: list[int]) -> None:
    col = Column.from_physical(varchar(20), values)
    enc = dictionary_encoded(col)
    assert enc.to_pylist() == values
    distinct = {v or "" for v in values}  # the string under a NULL is empty
    if not values or len(distinct) > len(values) / 2:
        assert enc is col  # empty or mostly unique: stays plain
        return
    assert isinstance(enc, DictColumn)
    entries = [v.encode() for v in enc.dictionary.to_pylist()]
    assert entries == sorted(set(entries))  # distinct, bytewise order
    assert enc.codes.dtype == np.int32
    idx = np.array([p % len(values) for p in picks], np.int64)
    assert enc.take(idx).to_pylist() == col.take(idx).to_pylist()
    taken = enc.take(idx)
    assert taken.data.tobytes() == col.take(idx).data.tobytes()  # decoded bytes, too


def test_batch_encodes_only_plain_strings() -> None:
    ints = Column.from_physical(INT, [1, 2, 3, 4])
    strs = Column.from_physical(varchar(5), ["x", "y", "x", "x"])
    b = with_encoded_strings(Batch(("i", "s"), (ints, strs)))
    assert b.columns[0] is ints
    assert isinstance(b.columns[1], DictColumn) and b.columns[1].codes.tolist() == [0, 1, 0, 0]
    again = with_encoded_strings(b)
    assert again is b  # already encoded: untouched
    empty = Batch(("s",), (Column.from_physical(varchar(5), []),))
    assert with_encoded_strings(empty) is empty
    unique = Batch(("s",), (Column.from_physical(varchar(5), ["a", "b", "c"]),))
    assert with_encoded_strings(unique) is unique


def test_non_string_varlen_columns_stay_plain() -> None:
    from storage.types import DataType, TypeKind

    blobs = np.frombuffer(b"abababab", np.uint8).copy()  # four equal blobs
    col = Column(DataType(TypeKind.BITMAP), blobs, None, np.array([0, 2, 4, 6, 8], np.int64))
    assert dictionary_encoded(col) is col
