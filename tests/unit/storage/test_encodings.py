"""Segment page encodings: every encoding round-trips every physical layout, the chosen encoding
is the smallest, data pages keep nulls, and each numba kernel equals a plain Python/numpy
reference."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Column
from storage.segment import encoding as E
from storage.segment.page import PageCorrupted, PageKind, build_page, parse_page
from storage.segment.reader import decode_data_page
from storage.segment.writer import encode_data_page

SETTINGS = settings(max_examples=80, deadline=None)

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8]


def int_values(dtype: type) -> st.SearchStrategy[list[int]]:
    info = np.iinfo(dtype)
    edge = st.sampled_from(
        [int(info.min), int(info.max), 0, -1 if info.min < 0 else 1, int(info.min) + 1]
    )
    value = st.one_of(
        edge,
        st.integers(int(info.min), int(info.max)),
        st.integers(-3, 3).filter(lambda v: info.min <= v <= info.max),
    )
    # Runs of repeated values so RLE gets real runs.
    runs = st.lists(st.tuples(value, st.integers(1, 20)), max_size=30)
    return runs.map(lambda rs: [v for v, k in rs for _ in range(k)])


FLOAT_EDGES = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1.5, -2.25, 3.4e38, 5e-324]


def float_values() -> st.SearchStrategy[list[float]]:
    value = st.one_of(st.sampled_from(FLOAT_EDGES), st.floats(allow_nan=True, allow_infinity=True))
    return st.lists(st.tuples(value, st.integers(1, 10)), max_size=30).map(
        lambda rs: [v for v, k in rs for _ in range(k)]
    )


LARGE_EDGES = [-(2**127), 2**127 - 1, 0, -1, 2**64, -(2**64), 2**63, -(2**63) - 1]
texts = st.one_of(
    st.sampled_from(["", "a", "ab", "a\x00b", "\x00", "é", "日本語", "🙂x", "z" * 70]),
    st.text(max_size=12),
)


def fixed_encodings(dtype: np.dtype) -> list[E.Encoding]:
    out = [E.Encoding.PLAIN, E.Encoding.RLE]
    return out + [E.Encoding.FOR] if dtype.kind in "iub" else out


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical arrays (NaN payloads and -0.0 included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    u = np.dtype(f"u{a.dtype.itemsize}")
    return bool(np.array_equal(a.view(u), b.view(u)))


# ---- value encodings ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INT_DTYPES)
@SETTINGS
@given(data=st.data())
def test_integer_encodings_round_trip(dtype: type, data: st.DataObject) -> None:
    values = np.array(data.draw(int_values(dtype)), dtype=dtype)
    sizes = {}
    for enc in fixed_encodings(values.dtype):
        buf = E.encode_fixed(values, enc)
        sizes[enc] = len(buf)
        out = E.decode_fixed(buf, 0, len(values), values.dtype, enc)
        assert same_bits(out, values), enc
    chosen = E.choose_fixed(values)
    assert sizes[chosen] == min(sizes.values())  # the cost estimate is exact for fixed types


@pytest.mark.parametrize("dtype", [*INT_DTYPES, np.uint16, np.uint32, np.uint64])
@SETTINGS
@given(data=st.data())
def test_fixed_stats_kernel_equals_numpy_reference(dtype: type, data: st.DataObject) -> None:
    values = np.array(data.draw(int_values(dtype).filter(bool)), dtype=dtype)
    stats = E.fixed_stats(values)
    assert stats == E.fixed_stats_reference(values)
    # One-pass statistics give the very bytes the two-pass choose + encode gave.
    enc, body = E.encode_fixed_best(values)
    assert enc is E.choose_fixed(values) and body == E.encode_fixed(values, enc)


@SETTINGS
@given(values=float_values().filter(bool), data=st.data())
def test_fixed_stats_floats_and_bools_equal_reference(values: list[float],
                                                      data: st.DataObject) -> None:
    arr = np.array(values, dtype=np.float64)
    assert E.fixed_stats(arr) == E.fixed_stats_reference(arr)  # NaN / -0.0 runs by bits
    flags = np.array(data.draw(st.lists(st.booleans(), min_size=1, max_size=50)), np.bool_)
    assert E.fixed_stats(flags) == E.fixed_stats_reference(flags)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@SETTINGS
@given(values=float_values())
def test_float_encodings_round_trip(dtype: type, values: list[float]) -> None:
    with np.errstate(over="ignore"):
        arr = np.array(values, dtype=dtype)
    for enc in fixed_encodings(arr.dtype):
        out = E.decode_fixed(E.encode_fixed(arr, enc), 0, len(arr), arr.dtype, enc)
        assert same_bits(out, arr), enc
    assert E.choose_fixed(arr) in (E.Encoding.PLAIN, E.Encoding.RLE)
    with pytest.raises(ValueError):
        E.encode_fixed(arr, E.Encoding.FOR)


@pytest.mark.parametrize(
    "dtype",
    [T.DATE, T.datetime(6), T.decimal(9, 2), T.decimal(18, 4), T.BOOLEAN, T.TINYINT, T.BIGINT],
)
@SETTINGS
@given(data=st.data())
def test_logical_fixed_types_use_their_layout(dtype: T.DataType, data: st.DataObject) -> None:
    layout = E.layout_of(dtype)
    assert layout.layout is E.Layout.FIXED and layout.dtype == dtype.numpy_dtype
    lo, hi = dtype.int_range() if not dtype.is_temporal else (-(2**31), 2**31 - 1)
    if dtype.kind is T.TypeKind.DATETIME:
        lo, hi = -(2**63), 2**63 - 1
    values = np.array(data.draw(st.lists(st.integers(lo, hi), max_size=200)), dtype=layout.dtype)
    for enc in fixed_encodings(layout.dtype):
        out = E.decode_fixed(E.encode_fixed(values, enc), 0, len(values), layout.dtype, enc)
        assert np.array_equal(out, values)


@pytest.mark.parametrize("dtype", [T.LARGEINT, T.decimal(38, 10), T.decimal(27, 0)])
@SETTINGS
@given(data=st.data())
def test_128_bit_integers_round_trip(dtype: T.DataType, data: st.DataObject) -> None:
    lo, hi = dtype.int_range()
    value = st.one_of(
        st.sampled_from([v for v in LARGE_EDGES if lo <= v <= hi]), st.integers(lo, hi)
    )
    narrow_base = data.draw(st.integers(lo, hi - 2**40))
    narrow = st.integers(narrow_base, narrow_base + 2**40)
    values = data.draw(st.one_of(st.lists(value, max_size=60), st.lists(narrow, max_size=60)))
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    assert E.layout_of(dtype).layout is E.Layout.OBJECT_INT
    out = E.decode_object(E.encode_object(arr, E.Encoding.PLAIN), 0, len(arr), E.Encoding.PLAIN)
    assert out.tolist() == values and all(type(v) is int for v in out.tolist())
    if not values or max(values) - min(values) < 2**64:
        out = E.decode_object(E.encode_object(arr, E.Encoding.FOR), 0, len(arr), E.Encoding.FOR)
        assert out.tolist() == values
    else:
        with pytest.raises(ValueError):
            E.encode_object(arr, E.Encoding.FOR)
    chosen = E.choose_object(arr)
    assert E.decode_object(E.encode_object(arr, chosen), 0, len(arr), chosen).tolist() == values


def varlen(values: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(values), np.uint8).copy()


@SETTINGS
@given(
    values=st.lists(
        st.one_of(texts.map(lambda s: s.encode("utf-8")), st.binary(max_size=8)), max_size=80
    ),
    repeat=st.integers(1, 5),
)
def test_varlen_encodings_round_trip(values: list[bytes], repeat: int) -> None:
    values = values * repeat
    offsets, data = varlen(values)
    sizes = {}
    for enc in (E.Encoding.PLAIN, E.Encoding.DICT):
        buf = E.encode_varlen(offsets, data, enc)
        sizes[enc] = len(buf)
        out_offsets, out_data = E.decode_varlen(buf, 0, len(values), enc)
        assert E.varlen_list(out_offsets, out_data) == values, enc
    assert (
        sizes[E.choose_varlen(offsets, data)] <= min(sizes.values()) + 8
    )  # estimate ignores padding


@SETTINGS
@given(values=st.lists(st.binary(max_size=6), max_size=60))
def test_the_distinct_shortcut(values: list[bytes]) -> None:
    offsets, data = varlen(values)
    # the all-distinct shortcut gives what the full estimate gives
    n, d = len(values), len(set(values))
    if n >= 2 and d == n:
        dict_cost = (8 + 8 * (d + 1) + sum(map(len, set(values)))
                     + 8 * E.packed_words(n, (d - 1).bit_length()))
        assert dict_cost >= 8 * (n + 1) + len(data)
        assert E.choose_varlen(offsets, data) is E.Encoding.PLAIN


def test_varlen_encoding_of_a_slice_with_nonzero_base_offset() -> None:
    offsets, data = varlen([b"xx", b"abc", b"", b"abc"])
    for enc in (E.Encoding.PLAIN, E.Encoding.DICT):
        out = E.decode_varlen(E.encode_varlen(offsets[1:], data, enc), 0, 3, enc)
        assert E.varlen_list(*out) == [b"abc", b"", b"abc"]


# ---- data pages: validity, all-null, no-null ------------------------------------------------
PAGE_TYPES = [
    T.BOOLEAN,
    T.TINYINT,
    T.SMALLINT,
    T.INT,
    T.BIGINT,
    T.LARGEINT,
    T.FLOAT,
    T.DOUBLE,
    T.decimal(9, 2),
    T.decimal(30, 4),
    T.DATE,
    T.datetime(3),
    T.varchar(20),
    T.STRING,
]


def physical_values(dtype: T.DataType) -> st.SearchStrategy[object]:
    if dtype.is_string:
        return texts
    if dtype.is_float:
        return st.floats(width=32 if dtype.kind is T.TypeKind.FLOAT else 64)
    if dtype.kind is T.TypeKind.BOOLEAN:
        return st.integers(0, 1)
    if dtype.kind is T.TypeKind.DATE:
        return st.integers(-719162, 2932896)
    if dtype.kind is T.TypeKind.DATETIME:
        return st.integers(-(2**62), 2**62)
    lo, hi = dtype.int_range()
    return st.one_of(st.sampled_from([lo, hi, 0]), st.integers(lo, hi))


def canon(values: list[object]) -> list[object]:
    return [np.float64(v).tobytes() if isinstance(v, float) else v for v in values]


@pytest.mark.parametrize("dtype", PAGE_TYPES, ids=lambda t: t.sql())
@SETTINGS
@given(data=st.data())
def test_data_page_round_trip_with_nulls(dtype: T.DataType, data: st.DataObject) -> None:
    mode = data.draw(st.sampled_from(["mixed", "all_null", "no_null"]))
    n = data.draw(st.integers(0 if mode == "no_null" else 1, 120))
    if mode == "all_null":
        values: list[object] = [None] * n
    else:
        nullable = (
            st.one_of(st.none(), physical_values(dtype))
            if mode == "mixed"
            else physical_values(dtype)
        )
        values = data.draw(st.lists(nullable, min_size=n, max_size=n))
    col = Column.from_physical(dtype, values)
    layout = E.layout_of(dtype)
    validity = col.validity if col.validity is not None and not col.validity.all() else None
    page, nulls = encode_data_page(col, layout, validity)
    assert nulls == sum(v is None for v in values)
    header, body = parse_page(page, PageKind.DATA)
    out = decode_data_page(header, body, dtype, layout, n)
    assert canon(out.to_pylist()) == canon(col.to_pylist())
    assert out.data.flags.writeable


# ---- page framing -------------------------------------------------------------------------
@given(body=st.one_of(st.binary(max_size=300), st.integers(0, 5000).map(lambda k: b"ab" * k)))
@settings(max_examples=50, deadline=None)
def test_page_frame_round_trip_and_checksum(body: bytes) -> None:
    page = build_page(PageKind.ORDINAL, body, 3)
    header, out = parse_page(page, PageKind.ORDINAL)
    assert out == body and header.num_rows == 3 and header.raw_size == len(body)
    assert zlib.crc32(page[:-4]) == int.from_bytes(page[-4:], "little")
    for pos in {0, 5, len(page) // 2, len(page) - 1}:
        broken = bytearray(page)
        broken[pos] ^= 0x40
        with pytest.raises(PageCorrupted):
            parse_page(bytes(broken), PageKind.ORDINAL)
    with pytest.raises(PageCorrupted):
        parse_page(page, PageKind.DATA)


def test_compressible_pages_are_lz4_compressed() -> None:
    page = build_page(PageKind.DATA, b"abcd" * 10000, 1)
    assert len(page) < 1000


# ---- numba kernels vs references ----------------------------------------------------------
def reference_bitpack(values: list[int], bits: int) -> bytes:
    acc = 0
    for i, v in enumerate(values):
        acc |= (v & ((1 << bits) - 1)) << (i * bits)
    return acc.to_bytes(8 * E.packed_words(len(values), bits), "little")


@SETTINGS
@given(bits=st.integers(0, 64), data=st.data())
def test_bitpack_kernels_match_reference(bits: int, data: st.DataObject) -> None:
    values = data.draw(st.lists(st.integers(0, (1 << bits) - 1), max_size=100))
    arr = np.array(values, dtype=np.uint64)
    words = E.bitpack(arr, bits)
    assert words.tobytes() == reference_bitpack(values, bits)
    # bits above `bits` (values >= 2**63 too) are dropped: bitpack is bitpack_deltas, base 0
    wide = data.draw(st.lists(st.integers(0, 2**64 - 1), max_size=100))
    assert E.bitpack(np.array(wide, dtype=np.uint64), bits).tobytes() == \
        reference_bitpack(wide, bits)
    base = data.draw(st.integers(0, 2**64 - 1))
    out = E.bitunpack(words, len(values), bits, np.uint64(base))
    assert out.tolist() == [(v + base) % 2**64 for v in values]


@SETTINGS
@given(runs=st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(0, 50)), max_size=40))
def test_rle_expand_matches_np_repeat(runs: list[tuple[int, int]]) -> None:
    values = np.array([v for v, _ in runs], dtype=np.int64)
    lengths = np.array([k for _, k in runs], dtype=np.uint32)
    out = E.rle_expand(values, lengths, int(lengths.sum()))
    assert np.array_equal(out, np.repeat(values, lengths))
    f = values.astype(np.float32)
    assert np.array_equal(E.rle_expand(f, lengths, int(lengths.sum())), np.repeat(f, lengths))


@SETTINGS
@given(
    dictionary=st.lists(st.binary(max_size=6), min_size=1, max_size=20, unique=True), data=st.data()
)
def test_dict_gather_matches_reference(dictionary: list[bytes], data: st.DataObject) -> None:
    codes = data.draw(st.lists(st.integers(0, len(dictionary) - 1), max_size=100))
    d_offsets, d_data = varlen(dictionary)
    offsets, out = E.dict_gather(d_offsets, d_data, np.array(codes, dtype=np.uint64))
    assert E.varlen_list(offsets, out) == [dictionary[c] for c in codes]


@SETTINGS
@given(values=st.lists(st.binary(max_size=5), max_size=60), data=st.data())
def test_varlen_compare_kernels_match_python_bytes_order(
    values: list[bytes], data: st.DataObject
) -> None:
    offsets, buf = varlen(values)
    cmp = E.varlen_compare_adjacent(offsets, buf)
    assert cmp.tolist() == [(a > b) - (a < b) for a, b in itertools.pairwise(values)]
    valid = data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
    lo, hi = E.varlen_argminmax(offsets, buf, np.array(valid, dtype=np.bool_))
    rows = [i for i in range(len(values)) if valid[i]]
    if not rows:
        assert (lo, hi) == (-1, -1)
    else:
        assert lo == min(rows, key=lambda i: values[i])
        assert hi == rows[max(range(len(rows)), key=lambda k: (values[rows[k]], -k))]


def test_decoders_reject_inconsistent_pages() -> None:
    values = np.arange(100, dtype=np.int64)
    for enc in fixed_encodings(values.dtype):
        buf = E.encode_fixed(values, enc)
        with pytest.raises(ValueError):
            E.decode_fixed(buf, 0, 101, values.dtype, enc)
    offsets, data = varlen([b"a", b"bb", b"c"])
    buf = bytearray(E.encode_varlen(offsets, data, E.Encoding.DICT))
    buf[-16] = 0xFF  # 2-bit codes 3, 3, 3: outside the three-entry dictionary
    with pytest.raises(ValueError):
        E.decode_varlen(bytes(buf), 0, 3, E.Encoding.DICT)
