"""Bloom filter index (storage/indexes/bloom_filter.py): the murmur3 kernels against mmh3, the
block-split filter against its Python twin, the measured false-positive rate, the page format,
and corrupt bloom filter pages in a segment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Batch, Column
from storage.errors import ShaleError
from storage.indexes import bloom_filter as bf
from storage.indexes.spec import SegmentIndexSpec
from storage.segment import SegmentReader, write_segment
from storage.segment.encoding import layout_of

SEED = np.uint64(bf.DEFAULT_SEED)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=70), max_size=20))
def test_varlen_kernel_equals_mmh3(values: list[bytes]) -> None:
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    data = np.frombuffer(b"".join(values), np.uint8) if values else np.zeros(0, np.uint8)
    got = bf.hash_varlen(offsets, data, SEED)
    assert got.tolist() == [bf.murmur3_64_reference(v) for v in values]


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_fixed_kernel_equals_mmh3(dtype: type) -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, 500, dtype=dtype)
    got = bf.hash_fixed(values.view(np.uint8), values.dtype.itemsize, SEED)
    want = [bf.murmur3_64_reference(v.tobytes()) for v in values]
    assert got.tolist() == want


def test_int128_and_string_values_hash_their_stored_bytes() -> None:
    large = np.empty(3, dtype=object)
    large[:] = [0, -1, 2**100 + 5]
    got = bf.hash_values(large, layout_of(T.LARGEINT))
    want = [bf.murmur3_64_reference((v % 2**128).to_bytes(16, "little")) for v in large]
    assert got.tolist() == want
    text = bf.hash_constants(["é".encode(), b""], layout_of(T.STRING))
    assert text.tolist() == [bf.murmur3_64_reference("é".encode()), bf.murmur3_64_reference(b"")]


def test_optimal_bit_num_is_doris_sizing() -> None:
    assert bf.optimal_bit_num(0, 0.05) == 256
    assert bf.optimal_bit_num(1, 0.05) == 256
    for n in (100, 1000, 12345):
        bits = bf.optimal_bit_num(n, 0.05)
        assert bits & (bits - 1) == 0
        assert bits >= -n * np.log(0.05) / np.log(2) ** 2 > bits / 2


def test_probe_kernel_equals_reference() -> None:
    rng = np.random.default_rng(3)
    layout = layout_of(T.BIGINT)
    builder = bf.BloomFilterBuilder(layout, 0.05)
    pages = [rng.integers(0, 10**9, int(n)) for n in (1, 50, 700, 3000)]
    for p in pages:
        builder.add_page(p, None, None)
    index = bf.BloomFilterIndex.parse(builder.finish(), len(pages))
    for p in pages:  # no false negatives, and the kernel agrees with the Python twin
        for probe in (p[:1], p[-1:], rng.integers(0, 10**9, 5)):
            hashes = bf.hash_values(probe, layout)
            got = bf.probe_pages(index.words, index.word_offsets, hashes, bf.SALT)
            assert got.tolist() == bf.probe_pages_reference(
                index.words, index.word_offsets, hashes).tolist()
    for i, p in enumerate(pages):
        assert index.may_contain("=", [int(p[0])], layout)[i]
        assert index.may_contain("in", [-5, int(p[-1])], layout)[i]


@pytest.mark.parametrize("fpp", [0.05, 0.01])
def test_measured_false_positive_rate_is_within_2x(fpp: float) -> None:
    """Keys sized so the filter's bit count is close to Doris' formula (rounding to a power of
    two adds up to 2x bits, which would only make the rate smaller)."""
    rng = np.random.default_rng(11)
    layout = layout_of(T.BIGINT)
    bits = 1 << 15
    n = int(bits * np.log(2) ** 2 / -np.log(fpp) * 0.98)
    assert bf.optimal_bit_num(n, fpp) == bits
    keys = rng.choice(2**62, n, replace=False)
    builder = bf.BloomFilterBuilder(layout, fpp)
    builder.add_page(keys, None, None)
    index = bf.BloomFilterIndex.parse(builder.finish(), 1)
    probes = rng.integers(2**62, 2**63 - 1, 40_000)  # never inserted
    hashes = bf.hash_values(probes, layout)
    hits = sum(bool(bf.probe_pages(index.words, index.word_offsets, hashes[i:i + 1], bf.SALT)[0])
               for i in range(len(hashes)))
    rate = hits / len(hashes)
    assert fpp / 4 < rate <= 2 * fpp, rate
    inserted = bf.hash_values(keys[:2000], layout)
    assert all(bf.probe_pages(index.words, index.word_offsets, inserted[i:i + 1], bf.SALT)[0]
               for i in range(len(inserted)))


def test_null_flags_and_round_trip() -> None:
    layout = layout_of(T.STRING)
    builder = bf.BloomFilterBuilder(layout, 0.01)
    col = Column.from_physical(T.STRING, ["a", None, "日本"])
    builder.add_page(col.data, col.validity, col.offsets)
    col2 = Column.from_physical(T.STRING, ["x", "y"])
    builder.add_page(col2.data, None, col2.offsets)
    body = builder.finish()
    index = bf.BloomFilterIndex.parse(body, 2)
    assert index.may_contain("is_null", [], layout).tolist() == [True, False]
    assert index.may_contain("=", ["日本".encode()], layout)[0]
    assert index.may_contain("in", [], layout).tolist() == [False, False]
    with pytest.raises(ValueError):
        bf.BloomFilterIndex.parse(body, 3)
    with pytest.raises(ValueError):
        bf.BloomFilterIndex.parse(body[:-3], 2)
    broken = bytearray(body)
    broken[8] ^= 0x40  # first word offset
    with pytest.raises(ValueError):
        bf.BloomFilterIndex.parse(bytes(broken), 2)
    with pytest.raises(ValueError):
        bf.BloomFilterBuilder(layout, 1.5)


def test_floats_and_blobs_get_no_filter(tmp_path: Path) -> None:
    batch = Batch(("k", "d"), (Column(T.BIGINT, np.arange(10)), Column(T.DOUBLE, np.ones(10))))
    write_segment(tmp_path / "f.seg", batch, ["k"], 1,
                  indexes=SegmentIndexSpec(bloom_filter_columns=frozenset({"k", "d"})))
    with SegmentReader(tmp_path / "f.seg", dict(zip(batch.names, batch.types))) as r:
        assert r.column("k").footer.bloom_filter is not None
        assert r.column("d").footer.bloom_filter is None
        assert r.bloom_filter(r.column("d")) is None


def test_corrupt_bloom_filter_page_names_the_file(tmp_path: Path) -> None:
    n = 30_000
    batch = Batch(("k", "v"), (Column(T.BIGINT, np.arange(n)),
                               Column(T.BIGINT, np.arange(n) * 7 % 1000)))
    path = tmp_path / "b.seg"
    write_segment(path, batch, ["k"], 1,
                  indexes=SegmentIndexSpec(bloom_filter_columns=frozenset({"v"})))
    types = dict(zip(batch.names, batch.types))
    with SegmentReader(path, types) as r:
        pointer = r.column("v").footer.bloom_filter
        assert pointer is not None
        assert r.bloom_filter(r.column("v")).num_pages == r.column("v").footer.num_pages
    raw = path.read_bytes()
    for pos in (pointer.offset + 3, pointer.offset + pointer.size // 2,
                pointer.offset + pointer.size - 1):
        broken = bytearray(raw)
        broken[pos] ^= 0x20
        path.write_bytes(bytes(broken))
        with SegmentReader(path, types, tablet_id=5) as r, pytest.raises(ShaleError) as info:
            r.bloom_filter(r.column("v"))
        assert info.value.message.startswith(
            f"errCode = 2, detailMessage = Corrupted segment file {path} of tablet 5: "
            "bloom filter of column v")
