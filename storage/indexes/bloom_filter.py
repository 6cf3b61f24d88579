"""Bloom filter index: one block-split bloom filter per data page of a column (seed 003 section 6).

Doris `BlockSplitBloomFilter` (BE `olap/rowset/segment_v2/block_split_bloom_filter.cpp`): a
filter is `num_bytes` bytes (a power of two, at least 32) cut into 32-byte blocks of eight
uint32 words. A value's 64-bit hash picks a block with its high 32 bits
(`(h >> 32) & (blocks - 1)`) and sets one bit in each of the block's eight words with its low 32
bits: word i gets bit `((uint32)h * SALT[i]) >> 27`. `num_bytes` comes from the number of
distinct values n of the page and the false-positive probability (`optimal_bit_num`:
`-n ln(fpp) / ln(2)^2` bits, rounded up to a power of two, at least 256). Each filter carries a
has-null flag, so `IS NULL` prunes pages too.

Hash: murmur3 with Doris' seed 1575457558, over the value's stored bytes (fixed-width values
little-endian at their stored width, LARGEINT / wide DECIMAL as 16-byte two's complement,
strings as their UTF-8 bytes). Doris' `murmur_hash3_x64_64` is a one-lane 64-bit variant no
maintained library ships; we take the first 64 bits of murmur3 x64_128 instead (what
`mmh3.hash64(key, seed)[0]` returns), so mmh3 is the reference our numba kernels are tested
against. Filters are only comparable within our own files, so the difference is invisible.

Stored as one BLOOM_FILTER index page per column (checksummed like every page):
    u32 pages, u32 0; int64 word_offsets[pages + 1] (into the words, in uint32 words);
    u8 has_null[pages] (padded to 8); u32 words[word_offsets[-1]].
Pruning: `=` / `IN` keep a page when any constant may be in its filter; `IS NULL` keeps pages
with the null flag. Floats (0.0 == -0.0 with different bits) and blobs are not indexed.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

import numpy as np
from numba import njit

from storage.segment.encoding import Layout, PhysicalLayout, object_to_int128

DEFAULT_SEED = 1575457558  # Doris BloomFilter::DEFAULT_SEED
MINIMUM_BYTES = 32
MAXIMUM_BYTES = 128 * 1024 * 1024
BYTES_PER_BLOCK = 32
SALT = np.array([0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
                 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint32)
# Operators a bloom filter prunes pages for.
BLOOM_OPS = frozenset({"=", "in", "is_null"})
_HEAD = struct.Struct("<II")


def supports(layout: PhysicalLayout, is_blob: bool = False) -> bool:
    """Whether a column of this layout gets bloom filters (not floats, not HLL/BITMAP blobs)."""
    if is_blob:
        return False
    return not (layout.layout is Layout.FIXED and layout.dtype.kind == "f")


def optimal_bit_num(n: int, fpp: float) -> int:
    """Doris `BloomFilter::optimal_bit_num`: bits for n distinct values at `fpp`, a power of two
    between MINIMUM_BYTES and MAXIMUM_BYTES bytes."""
    bits = int(-n * math.log(fpp) / (math.log(2) ** 2)) if n > 0 else 0
    bits = min(bits, MAXIMUM_BYTES * 8)
    if bits & (bits - 1):
        bits = 1 << bits.bit_length()
    return max(bits, MINIMUM_BYTES * 8)


# ---- murmur3 x64_128 (first 64 bits) ----------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, nogil=True, inline="always")
def _fmix(k: np.uint64) -> np.uint64:
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xFF51AFD7ED558CCD)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    k ^= k >> np.uint64(33)
    return k


@njit(cache=True, nogil=True, inline="always")
def _load64(data: np.ndarray, pos: int, count: int) -> np.uint64:
    """Little-endian word from data[pos:pos+count] (count <= 8)."""
    v = np.uint64(0)
    for j in range(count):
        v |= np.uint64(data[pos + j]) << np.uint64(8 * j)
    return v


@njit(cache=True, nogil=True)
def murmur3_64(data: np.ndarray, start: int, length: int, seed: np.uint64) -> np.uint64:
    """First 64 bits of murmur3 x64_128 of data[start:start+length] (mmh3.hash64()[0])."""
    c1 = np.uint64(0x87C37B91114253D5)
    c2 = np.uint64(0x4CF5AD432745937F)
    h1 = seed
    h2 = seed
    nblocks = length // 16
    for b in range(nblocks):
        k1 = _load64(data, start + 16 * b, 8)
        k2 = _load64(data, start + 16 * b + 8, 8)
        k1 *= c1
        k1 = _rotl(k1, 31)
        k1 *= c2
        h1 ^= k1
        h1 = _rotl(h1, 27)
        h1 += h2
        h1 = h1 * np.uint64(5) + np.uint64(0x52DCE729)
        k2 *= c2
        k2 = _rotl(k2, 33)
        k2 *= c1
        h2 ^= k2
        h2 = _rotl(h2, 31)
        h2 += h1
        h2 = h2 * np.uint64(5) + np.uint64(0x38495AB5)
    tail = start + 16 * nblocks
    rest = length & 15
    if rest > 8:
        k2 = _load64(data, tail + 8, rest - 8)
        k2 *= c2
        k2 = _rotl(k2, 33)
        k2 *= c1
        h2 ^= k2
    if rest > 0:
        k1 = _load64(data, tail, min(rest, 8))
        k1 *= c1
        k1 = _rotl(k1, 31)
        k1 *= c2
        h1 ^= k1
    h1 ^= np.uint64(length)
    h2 ^= np.uint64(length)
    h1 += h2
    h2 += h1
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 += h2
    return h1


@njit(cache=True, nogil=True)
def hash_fixed(data: np.ndarray, width: int, seed: np.uint64) -> np.ndarray:
    """murmur3_64 of each `width`-byte value of the byte buffer `data`."""
    n = data.shape[0] // width
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = murmur3_64(data, i * width, width, seed)
    return out


@njit(cache=True, nogil=True)
def hash_varlen(offsets: np.ndarray, data: np.ndarray, seed: np.uint64) -> np.ndarray:
    """murmur3_64 of each value of an offsets + bytes (Arrow large_string) buffer."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = murmur3_64(data, offsets[i], offsets[i + 1] - offsets[i], seed)
    return out


def murmur3_64_reference(key: bytes, seed: int = DEFAULT_SEED) -> int:
    """The reference the kernels are tested against: mmh3 (first 64 bits of x64_128)."""
    import mmh3

    return mmh3.hash64(key, seed, signed=False)[0]


def hash_values(data: np.ndarray, layout: PhysicalLayout,
                offsets: np.ndarray | None = None) -> np.ndarray:
    """Hashes of physical values (a fixed / object-int array, or var-len offsets + bytes)."""
    seed = np.uint64(DEFAULT_SEED)
    if layout.layout is Layout.VARLEN:
        assert offsets is not None
        return hash_varlen(np.ascontiguousarray(offsets, dtype=np.int64),
                           np.ascontiguousarray(data, dtype=np.uint8), seed)
    if layout.layout is Layout.OBJECT_INT:
        raw = object_to_int128(data).view(np.uint8).reshape(-1)
        return hash_fixed(raw, 16, seed)
    arr = np.ascontiguousarray(data, dtype=layout.dtype)
    return hash_fixed(arr.view(np.uint8).reshape(-1), arr.dtype.itemsize, seed)


def hash_constants(values: Sequence[object], layout: PhysicalLayout) -> np.ndarray:
    """Hashes of predicate constants already converted to index values
    (`zone_map.index_value`: ints, bytes for strings)."""
    if layout.layout is Layout.VARLEN:
        raw = [bytes(v) for v in values]  # type: ignore[call-overload]
        offsets = np.zeros(len(raw) + 1, np.int64)
        np.cumsum([len(v) for v in raw], out=offsets[1:])
        data = np.frombuffer(b"".join(raw), np.uint8) if raw else np.zeros(0, np.uint8)
        return hash_values(data, layout, offsets)
    if layout.layout is Layout.OBJECT_INT:
        return hash_values(np.array(list(values), dtype=object), layout)
    return hash_values(np.array(list(values), dtype=layout.dtype), layout)


# ---- block-split filters ---------------------------------------------------------------
@njit(cache=True, nogil=True)
def add_hashes(words: np.ndarray, hashes: np.ndarray, salt: np.ndarray) -> None:
    """Set the bits of every hash in one filter (`words`: uint32, a multiple of 8)."""
    blocks = np.uint64(words.shape[0] // 8)
    for i in range(hashes.shape[0]):
        h = hashes[i]
        block = np.int64((h >> np.uint64(32)) & (blocks - np.uint64(1)))
        key = np.uint32(h & np.uint64(0xFFFFFFFF))
        for j in range(8):
            bit = np.uint32(key * salt[j]) >> np.uint32(27)
            words[block * 8 + j] |= np.uint32(1) << bit


@njit(cache=True, nogil=True)
def block_may_contain(words: np.ndarray, base: np.int64, blocks: np.uint64, h: np.uint64,
                      salt: np.ndarray) -> bool:
    """May the value hashed to `h` be in the filter of `blocks` 32-byte blocks that starts at
    word `base` of `words`? (Doris BlockSplitBloomFilter::test_hash.)"""
    block = np.int64((h >> np.uint64(32)) & (blocks - np.uint64(1)))
    key = np.uint32(h & np.uint64(0xFFFFFFFF))
    for j in range(8):
        bit = np.uint32(key * salt[j]) >> np.uint32(27)
        if (words[base + block * 8 + j] >> bit) & np.uint32(1) == 0:
            return False
    return True


@njit(cache=True, nogil=True)
def probe_pages(words: np.ndarray, word_offsets: np.ndarray, hashes: np.ndarray,
               salt: np.ndarray) -> np.ndarray:
    """Per filter (page): may any of `hashes` be in it?"""
    pages = word_offsets.shape[0] - 1
    out = np.zeros(pages, dtype=np.bool_)
    for p in range(pages):
        base = np.int64(word_offsets[p])
        blocks = np.uint64((word_offsets[p + 1] - base) // 8)
        for i in range(hashes.shape[0]):
            if block_may_contain(words, base, blocks, hashes[i], salt):
                out[p] = True
                break
    return out


def probe_pages_reference(words: np.ndarray, word_offsets: np.ndarray,
                         hashes: np.ndarray) -> np.ndarray:
    """Plain-Python twin of `probe_pages` (tests)."""
    out = []
    for p in range(len(word_offsets) - 1):
        filt = words[int(word_offsets[p]):int(word_offsets[p + 1])]
        blocks = len(filt) // 8
        hit_any = False
        for h in (int(x) for x in hashes):
            block = (h >> 32) & (blocks - 1)
            key = h & 0xFFFFFFFF
            if all((int(filt[block * 8 + j]) >> (((key * int(SALT[j])) & 0xFFFFFFFF) >> 27)) & 1
                   for j in range(8)):
                hit_any = True
                break
        out.append(hit_any)
    return np.array(out, dtype=np.bool_)


class BloomFilterBuilder:
    """Collects one filter per data page while a column's pages are written."""

    def __init__(self, layout: PhysicalLayout, fpp: float) -> None:
        if not 0 < fpp < 1:
            raise ValueError(f"bloom filter fpp must be in (0, 1), got {fpp}")
        self.layout = layout
        self.fpp = fpp
        self._filters: list[np.ndarray] = []
        self._has_null: list[bool] = []

    def add_page(self, data: np.ndarray, validity: np.ndarray | None,
                 offsets: np.ndarray | None) -> None:
        """Add the filter of one page's values (physical layout, validity None = no nulls)."""
        has_null = validity is not None and not validity.all()
        hashes = hash_values(data, self.layout, offsets)
        if validity is not None:
            hashes = hashes[validity]
        distinct = np.unique(hashes)
        words = np.zeros(optimal_bit_num(len(distinct), self.fpp) // 32, dtype=np.uint32)
        add_hashes(words, distinct, SALT)
        self._filters.append(words)
        self._has_null.append(bool(has_null))

    def finish(self) -> bytes:
        """The BLOOM_FILTER page body (see the module doc)."""
        n = len(self._filters)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum([len(w) for w in self._filters], out=offsets[1:])
        flags = np.array(self._has_null, dtype=np.uint8).tobytes()
        flags += b"\0" * (-len(flags) % 8)
        words = np.concatenate(self._filters) if self._filters else np.zeros(0, np.uint32)
        return b"".join((_HEAD.pack(n, 0), offsets.tobytes(), flags, words.tobytes()))


class BloomFilterIndex:
    """The parsed bloom filters of one column: one per data page."""

    __slots__ = ("has_null", "nbytes", "word_offsets", "words")

    def __init__(self, words: np.ndarray, word_offsets: np.ndarray, has_null: np.ndarray) -> None:
        self.words = words
        self.word_offsets = word_offsets
        self.has_null = has_null
        self.nbytes = words.nbytes + word_offsets.nbytes + has_null.nbytes

    @property
    def num_pages(self) -> int:
        return len(self.has_null)

    @staticmethod
    def parse(body: bytes, num_pages: int) -> BloomFilterIndex:
        """Decode and validate a BLOOM_FILTER page body; raises ValueError."""
        if len(body) < _HEAD.size:
            raise ValueError("bloom filter page is too short")
        n, zero = _HEAD.unpack_from(body, 0)
        if n != num_pages or zero:
            raise ValueError(f"bloom filter page has {n} filters for {num_pages} pages")
        pos = _HEAD.size
        if len(body) < pos + 8 * (n + 1):
            raise ValueError("bloom filter page is too short for its offsets")
        offsets = np.frombuffer(body, np.int64, count=n + 1, offset=pos).copy()
        pos += 8 * (n + 1)
        flags_len = n + (-n % 8)
        if len(body) < pos + flags_len:
            raise ValueError("bloom filter page is too short for its null flags")
        has_null = np.frombuffer(body, np.uint8, count=n, offset=pos).copy()
        pos += flags_len
        rest = len(body) - pos
        if rest % 4:
            raise ValueError("bloom filter words are not whole")
        words = np.frombuffer(body, np.uint32, offset=pos).copy()
        sizes = np.diff(offsets)
        if (offsets[0] != 0 or offsets[-1] != len(words) or np.any(sizes < 8)
                or np.any(sizes & (sizes - 1)) or np.any(has_null > 1)):
            raise ValueError("bloom filter offsets are inconsistent")
        return BloomFilterIndex(words, offsets, has_null.astype(np.bool_))

    def may_contain(self, op: str, values: Sequence[object],
                    layout: PhysicalLayout) -> np.ndarray:
        """Per page: may a row satisfy `column op values`? (values: index values; op in
        BLOOM_OPS). A page is dropped only when no constant can be in it."""
        if op == "is_null":
            return self.has_null.copy()
        if not values:
            return np.zeros(self.num_pages, np.bool_)
        hashes = hash_constants(values, layout)
        return probe_pages(self.words, self.word_offsets, hashes, SALT)
