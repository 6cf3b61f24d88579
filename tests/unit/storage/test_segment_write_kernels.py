"""The segment writer's word-at-a-time string kernels against plain-Python references
(docs/performance.md, "Segment writer CPU"): `compare_words` orders like bytes, the zone map's
`varlen_argminmax` picks the first smallest / largest valid value, `group_values` groups
exactly by value in first-appearance order, and a var-len page body (`encode_varlen_best`) is
byte for byte the set-based definition's. Values share long prefixes (so the 8- and 16-byte
word boundaries and the tail compare are hit), include empty strings, NUL and 0xFF bytes,
UTF-8 text, and sit at any offset in the data buffer (word alignment). Fixed-width pages: the
RLE / FOR kernels give the numpy reference's bytes and the zone map built from the encoder's
statistics is the one built from the values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.indexes.zone_map import ZoneMapBuilder
from storage.segment import encoding as E
from storage.segment.varlen_dict import group_values, group_values_reference

PREFIXES = [b"", b"a", b"name_100", b"name_1000", b"abcdefghijklmnop", b"abcdefghijklmnopq",
            b"\xff" * 9, b"\x00" * 8, "Müller-Lüdenscheid ".encode()]
VALUES = st.builds(lambda p, s: p + s, st.sampled_from(PREFIXES),
                   st.one_of(st.binary(max_size=20), st.text(max_size=6).map(str.encode)))
SETTINGS = settings(max_examples=200, deadline=None)


def varlen(values: list[bytes], skew: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and data of `values`, the data starting `skew` bytes into its buffer."""
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return offsets + skew, np.frombuffer(b"\x07" * skew + b"".join(values), np.uint8).copy()


@SETTINGS
@given(values=st.lists(VALUES, min_size=2, max_size=12), skew=st.integers(0, 9))
def test_compare_words_orders_like_bytes(values: list[bytes], skew: int) -> None:
    offsets, data = varlen(values, skew)
    words = E.padded_words(data)
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            got = E.compare_words(words, offsets[i], offsets[i + 1], offsets[j], offsets[j + 1])
            assert got == (a > b) - (a < b), (a, b)


@SETTINGS
@given(values=st.lists(VALUES, max_size=60), skew=st.integers(0, 9), data=st.data())
def test_argminmax_equals_reference(values: list[bytes], skew: int, data: st.DataObject) -> None:
    offsets, buf = varlen(values, skew)
    valid = np.array(data.draw(st.lists(st.booleans(), min_size=len(values),
                                        max_size=len(values))), dtype=np.bool_)
    expected = E.varlen_argminmax_reference(offsets, buf, valid)
    assert E.varlen_argminmax(offsets, buf, valid) == expected
    assert E.varlen_argminmax(offsets, buf, np.ones(len(values), np.bool_)) == \
        E.varlen_argminmax_reference(offsets, buf, np.ones(len(values), np.bool_))
    rows = [i for i in range(len(values)) if valid[i]]
    if rows:  # the reference itself: first smallest, first largest
        lo, hi = expected
        assert values[lo] == min(values[i] for i in rows) and lo == min(
            i for i in rows if values[i] == values[lo])
        assert values[hi] == max(values[i] for i in rows) and hi == min(
            i for i in rows if values[i] == values[hi])


@SETTINGS
@given(values=st.lists(st.sampled_from([b"", b"AIR", b"REG AIR", b"name_1000", b"name_10000",
                                        b"abcdefghijklmnopq", b"abcdefghijklmnopr"]) | VALUES,
                       max_size=80), skew=st.integers(0, 9))
def test_group_values_equals_reference(values: list[bytes], skew: int) -> None:
    offsets, data = varlen(values, skew)
    first, inverse = group_values(offsets, data)
    ref_first, ref_inverse = group_values_reference(offsets, data)
    assert first.tolist() == ref_first.tolist()
    assert inverse.tolist() == ref_inverse.tolist()


def encode_varlen_reference(values: list[bytes]) -> tuple[E.Encoding, bytes]:
    """The set-based definition of a var-len page body: PLAIN unless a sorted dictionary of
    the distinct values plus bit-packed codes is smaller."""
    n = len(values)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    plain = offsets.tobytes() + b"".join(values)
    distinct = sorted(set(values))
    d = len(distinct)
    if n < 2 or d == n:
        return E.Encoding.PLAIN, plain
    cost = 8 + 8 * (d + 1) + sum(map(len, distinct)) + 8 * E.packed_words(n, (d - 1).bit_length())
    if cost >= 8 * (n + 1) + int(offsets[-1]):
        return E.Encoding.PLAIN, plain
    index = {v: i for i, v in enumerate(distinct)}
    codes = np.array([index[v] for v in values], np.uint64)
    bits = (d - 1).bit_length()
    dict_offsets = np.zeros(d + 1, np.int64)
    np.cumsum([len(v) for v in distinct], out=dict_offsets[1:])
    blob = b"".join(distinct)
    body = (E._DICT_HEAD.pack(d, bits) + dict_offsets.tobytes() + blob
            + b"\0" * (-len(blob) % 8) + E.bitpack(codes, bits).tobytes())
    return E.Encoding.DICT, body


@SETTINGS
@given(values=st.lists(st.sampled_from([b"", b"MAIL", b"TRUCK", b"REG AIR", b"1-URGENT",
                                        b"5-LOW" * 4]) | VALUES, max_size=120),
       skew=st.integers(0, 9))
def test_varlen_page_body_is_the_set_based_definition(values: list[bytes], skew: int) -> None:
    offsets, data = varlen(values, skew)
    page_offsets, page_data = offsets - offsets[0], data[skew:]
    assert E.encode_varlen_best(page_offsets, page_data) == encode_varlen_reference(values)
    words = E.padded_words(page_data)
    assert E.encode_varlen_best(page_offsets, page_data, words) == \
        encode_varlen_reference(values)


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", [*INT_DTYPES, np.bool_, np.float32, np.float64])
@SETTINGS
@given(data=st.data())
def test_fixed_page_kernels_give_the_numpy_bytes(dtype: type, data: st.DataObject) -> None:
    """RLE and FOR bodies from `run_starts_lengths` / `bitpack_deltas` equal the numpy
    reference's, and the zone map entry from the encoder's one-pass bounds equals the one
    computed from the values, for runs, extremes of each dtype and short pages."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        pool = st.booleans()
    elif dt.kind == "f":
        pool = st.sampled_from([0.0, -0.0, 1.5, -2.25, float("nan"), float("inf"), 3e38])
    else:
        info = np.iinfo(dt)
        top = min(int(info.max), 2**63 - 1)  # FOR's base is an i64 (no column is uint64)
        pool = st.one_of(st.integers(int(info.min), top),
                         st.sampled_from([int(info.min), top, 0, 1]))
    runs = data.draw(st.lists(st.tuples(pool, st.integers(1, 5)), max_size=40))
    values = np.array([v for v, k in runs for _ in range(k)], dtype=dt)
    encodings = [E.Encoding.PLAIN, E.Encoding.RLE] + ([E.Encoding.FOR] if dt.kind in "iub" else [])
    for enc in encodings:
        assert E.encode_fixed(values, enc) == E.encode_fixed_reference(values, enc), enc
    if len(values):
        stats = E.fixed_stats(values)
        assert E.encode_fixed_best(values, stats) == E.encode_fixed_best(values)
        if dt.kind in "iub":
            layout = E.PhysicalLayout(E.Layout.FIXED, dt)
            plain, fast = ZoneMapBuilder(layout), ZoneMapBuilder(layout)
            plain.add_page(values, None)
            fast.add_page(values, None, int_bounds=(stats.base, stats.high))
            assert fast.finish() == plain.finish()


def test_bitpack_deltas_equals_bitpack_for_every_width() -> None:
    """The register-filling FOR packer gives `bitpack`'s words for every bit width and for
    page lengths around word boundaries (a value straddling two words, the last partial
    word), with a base subtracted modulo 2**64."""
    rng = np.random.default_rng(5)
    for bits in range(65):
        for n in (0, 1, 2, 3, 63, 64, 65, 127, 1000):
            if bits == 64:
                values = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
            else:
                values = rng.integers(0, 2**bits, n, dtype=np.int64) - 7
            base = np.uint64(2**64 - 7)  # -7: the deltas are values + 7, < 2**bits
            deltas = values.view(np.uint64) - base
            mask = np.uint64(2**64 - 1) if bits == 64 else np.uint64(2**bits - 1)
            expected = E.bitpack(deltas & mask, bits)
            assert np.array_equal(E.bitpack_deltas(values, base, bits), expected), (bits, n)
