"""The bucket hash kernel equals chained zlib.crc32 over Doris' value encodings."""

from __future__ import annotations

import datetime as dt
import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Column
from storage.distribution import bucket_of_rows, hash_columns, reference_value_bytes


def reference_hash(columns: list[Column]) -> list[int]:
    rows = [c.to_pylist() for c in columns]
    out = []
    for i in range(len(columns[0])):
        h = 0
        for col, values in zip(columns, rows):
            h = zlib.crc32(reference_value_bytes(col.type, values[i]), h)
        out.append(h)
    return out


ints = st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))
bigints = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
largeints = st.one_of(st.none(), st.integers(-(2**127), 2**127 - 1))
texts = st.one_of(st.none(), st.text(max_size=12))
dates = st.one_of(st.none(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)).map(T.date_to_days))
datetimes = st.one_of(
    st.none(), st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)).map(T.datetime_to_micros)
)
decimals = st.one_of(st.none(), st.integers(-(10**18) + 1, 10**18 - 1))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(ints, bigints, largeints, texts, dates, datetimes, decimals), min_size=1, max_size=40))
def test_kernel_matches_zlib_reference(rows: list[tuple]) -> None:
    types = [T.INT, T.BIGINT, T.LARGEINT, T.varchar(40), T.DATE, T.datetime(6), T.decimal(18, 4)]
    columns = [Column.from_physical(t, [r[i] for r in rows]) for i, t in enumerate(types)]
    for k in range(1, len(columns) + 1):
        assert hash_columns(columns[:k]).tolist() == reference_hash(columns[:k])


def test_known_values_and_null_encoding() -> None:
    # INT 1 is the 4 little-endian bytes 01 00 00 00; NULL hashes four zero bytes.
    col = Column.from_physical(T.INT, [1, None])
    assert hash_columns([col]).tolist() == [zlib.crc32(b"\x01\x00\x00\x00"), zlib.crc32(b"\x00" * 4)]
    # DATEV2 packs (year << 9) | (month << 5) | day.
    d = Column.from_physical(T.DATE, [T.date_to_days(dt.date(2024, 2, 29))])
    packed = (2024 << 9) | (2 << 5) | 29
    assert hash_columns([d]).tolist() == [zlib.crc32(packed.to_bytes(4, "little"))]


def test_buckets_are_in_range_and_stable() -> None:
    col = Column.from_physical(T.BIGINT, list(range(1000)))
    b = bucket_of_rows([col], 7)
    assert b.min() >= 0 and b.max() < 7
    assert np.array_equal(b, bucket_of_rows([col], 7))
    assert len(set(b.tolist())) == 7
