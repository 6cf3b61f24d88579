"""Dictionary building for var-len pages (storage/segment/varlen_dict.py): the numba
`dictionary` gives the sorted distinct values and codes of the set-based definition;
`sort_rows` (the radix sort of the dictionary) equals a stable sort by bytes, and a DICT page
body is byte for byte the set-based definition's."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.segment.varlen_dict import (
    dictionary,
    dictionary_arrays,
    distinct_values,
    sort_rows,
    sort_rows_reference,
)


def varlen(values: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(values), np.uint8).copy()


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.sampled_from([b"", b"AIR", b"MAIL", b"RAIL", b"SHIP", b"\xff", b"a"])
                       | st.binary(max_size=4), max_size=80))
def test_dictionary_is_the_sorted_set_and_its_codes(values: list[bytes]) -> None:
    offsets, data = varlen(values)
    built = dictionary(offsets, data)
    assert built is not None
    words, codes = built
    expected = sorted(set(values))
    assert words == expected
    assert [words[c] for c in codes.tolist()] == values
    assert distinct_values(offsets, data) == (len(expected), sum(map(len, expected)))


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.sampled_from([b"", b"AIR", b"MAIL", b"TRUCK"]) | st.binary(max_size=3),
                       max_size=60), shift=st.integers(0, 3))
def test_one_hashing_pass_gives_the_same_page(values: list[bytes], shift: int) -> None:
    from storage.segment import encoding as E

    offsets, data = varlen(values)
    data = np.concatenate([np.zeros(shift, np.uint8), data])  # a page that starts mid-buffer
    offsets = offsets + shift
    enc = E.choose_varlen(offsets, data)
    assert E.encode_varlen_best(offsets, data) == (enc, E.encode_varlen(offsets, data, enc))


# Values that share long prefixes, contain zero bytes (a zero-padded chunk must not tie a value
# with its extension by 0x00) and run past several 7-byte chunks of `sort_rows`' radix passes.
_TRICKY = st.lists(
    st.sampled_from([b"", b"\x00", b"\x00\x00", b"Customer#000000001", b"Customer#000000010",
                     b"Customer#00000001", b"abcdefg", b"abcdefg\x00", b"abcdefgh",
                     b"abcdefg\x00\x00", b"\xff" * 9, b"\xff" * 8, b"\xff\xfe"])
    | st.binary(max_size=24)
    | st.builds(lambda tail: b"shared prefix of the page " + tail, st.binary(max_size=10)),
    max_size=120)


@settings(max_examples=300, deadline=None)
@given(values=_TRICKY, seed=st.integers(0, 1000))
def test_sort_rows_is_a_stable_sort_by_bytes(values: list[bytes], seed: int) -> None:
    offsets, data = varlen(values)
    rows = np.random.default_rng(seed).permutation(len(values)).astype(np.int64)
    got = sort_rows(offsets, data, rows)
    assert got.tolist() == sort_rows_reference(offsets, data, rows).tolist()
    assert [values[r] for r in got.tolist()] == sorted(values)


@settings(max_examples=200, deadline=None)
@given(values=_TRICKY, shift=st.integers(0, 3))
def test_dictionary_arrays_are_the_sorted_set_and_its_codes(values: list[bytes],
                                                            shift: int) -> None:
    offsets, data = varlen(values)
    data = np.concatenate([np.zeros(shift, np.uint8), data])  # a page that starts mid-buffer
    offsets = offsets + shift
    dict_offsets, dict_data, codes = dictionary_arrays(offsets, data)
    expected = sorted(set(values))
    blob = dict_data.tobytes()
    words = [blob[a:b] for a, b in zip(dict_offsets[:-1].tolist(), dict_offsets[1:].tolist())]
    assert words == expected
    assert codes.dtype == np.uint64
    assert [words[c] for c in codes.tolist()] == values


@settings(max_examples=150, deadline=None)
@given(values=_TRICKY)
def test_dict_page_bytes_equal_the_set_based_definition(values: list[bytes]) -> None:
    """The DICT page body is what the pre-numba writer produced (sorted set, codes by lookup),
    so segments written before and after read the same."""
    import struct

    from storage.segment import encoding as E

    offsets, data = varlen(values)
    words = sorted(set(values))
    index = {v: i for i, v in enumerate(words)}
    codes = np.array([index[v] for v in values], np.uint64)
    bits = max(len(words) - 1, 0).bit_length()
    dict_offsets = np.zeros(len(words) + 1, np.int64)
    np.cumsum([len(w) for w in words], out=dict_offsets[1:])
    joined = b"".join(words)
    expected = (struct.pack("<IB3x", len(words), bits) + dict_offsets.tobytes()
                + joined + b"\0" * (-len(joined) % 8) + E.bitpack(codes, bits).tobytes())
    assert E.encode_varlen(offsets, data, E.Encoding.DICT) == expected
