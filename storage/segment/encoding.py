"""Page encodings: how one page of column values becomes bytes, and back into numpy arrays.

Owns the four value encodings of segment format v1 (Doris `segment_v2` encodings: PLAIN,
DICT_ENCODING, RLE, FOR / bit-shuffle) and the numba kernels behind them. Physical layouts follow
`storage/types.py`: fixed-width numpy values, object arrays of Python ints (LARGEINT, DECIMAL with
precision > 18, stored as 16-byte little-endian two's complement) and variable-length values in
Arrow large_string layout (int64 offsets + uint8 data).

Encoded layouts (all little-endian, sections padded to 8 bytes so decoding can view them with
`np.frombuffer` without copying; `n` comes from the page header):

- PLAIN  fixed:   n values.   object ints: n x (u64 low, i64 high).
         varlen:  int64 offsets[n+1] (first 0), data bytes.
- RLE    fixed:   u32 runs, u32 0, run values[runs] (pad), u32 run lengths[runs].
- FOR    fixed:   i64 base, u8 bits, 7 x 0, u64 words: bit-packed (value - base) as unsigned.
         object ints: u64 base low, i64 base high, u8 bits, 7 x 0, words (range must fit 64 bits).
- DICT   varlen:  u32 dictionary size d, u8 bits, 3 x 0, int64 dict offsets[d+1], dict data (pad),
         u64 words: bit-packed codes. The dictionary is sorted, so codes order like values.

`choose_*` picks the smallest encoding by a cost estimate. Every kernel has a numpy reference
in tests/unit/storage/test_encodings.py. Decoders validate lengths before any kernel runs, so a
corrupt page raises ValueError instead of reading out of bounds.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import numpy as np
from numba import njit

from storage.batch import Column
from storage.types import DataType


class Encoding(enum.IntEnum):
    PLAIN = 0
    DICT = 1
    RLE = 2
    FOR = 3


class Layout(enum.IntEnum):
    FIXED = 0  # numpy fixed-width values (bool as uint8, ints, floats, dates, datetimes)
    OBJECT_INT = 1  # numpy object array of Python ints, stored as 128-bit
    VARLEN = 2  # Arrow large_string layout


@dataclass(frozen=True, slots=True)
class PhysicalLayout:
    layout: Layout
    dtype: np.dtype  # fixed: value dtype; object ints: object; varlen: uint8 (the data buffer)

    @property
    def width(self) -> int:
        """Bytes per value used to size pages (var-len: 8 for the offset)."""
        if self.layout is Layout.OBJECT_INT:
            return 16
        if self.layout is Layout.VARLEN:
            return 8
        return self.dtype.itemsize

    @property
    def is_integer(self) -> bool:
        return self.layout is Layout.OBJECT_INT or (
            self.layout is Layout.FIXED and self.dtype.kind in "iub"
        )


def layout_of(dtype: DataType) -> PhysicalLayout:
    if dtype.is_varlen:
        return PhysicalLayout(Layout.VARLEN, np.dtype(np.uint8))
    npd = dtype.numpy_dtype
    if npd == np.dtype(object):
        return PhysicalLayout(Layout.OBJECT_INT, npd)
    return PhysicalLayout(Layout.FIXED, npd)


_U64_MASK = (1 << 64) - 1
_FOR_HEAD = struct.Struct("<qB7x")
_FOR_OBJ_HEAD = struct.Struct("<QqB7x")
_RLE_HEAD = struct.Struct("<I4x")
_DICT_HEAD = struct.Struct("<IB3x")


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def _padded(b: bytes) -> bytes:
    return b + b"\0" * (_pad8(len(b)) - len(b))


def packed_words(n: int, bits: int) -> int:
    """uint64 words `bitpack` writes for n values of `bits` bits (one slack word included)."""
    return (n * bits + 63) // 64 + 1


# ---- numba kernels ------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def bitpack(values: np.ndarray, bits: int) -> np.ndarray:
    """Pack the low `bits` bits of each value into a little-endian stream of words:
    `bitpack_deltas` with base 0 (one packing loop; the same bytes)."""
    return bitpack_deltas(values, np.uint64(0), bits)


@njit(cache=True, nogil=True)
def bitunpack(words: np.ndarray, n: int, bits: int, base: np.uint64) -> np.ndarray:
    """Inverse of `bitpack`, adding `base` (wrapping mod 2**64) to every value."""
    out = np.empty(n, dtype=np.uint64)
    if bits == 0:
        for i in range(n):
            out[i] = base
        return out
    mask = (
        np.uint64(0xFFFFFFFFFFFFFFFF)
        if bits == 64
        else (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    )
    for i in range(n):
        pos = i * bits
        w = pos >> 6
        sh = pos & 63
        v = words[w] >> np.uint64(sh)
        if sh + bits > 64:
            v |= words[w + 1] << np.uint64(64 - sh)
        out[i] = (v & mask) + base
    return out


@njit(cache=True, nogil=True)
def rle_expand(run_values: np.ndarray, run_lengths: np.ndarray, n: int) -> np.ndarray:
    """Repeat run_values[r] run_lengths[r] times (sum of lengths must equal n)."""
    out = np.empty(n, dtype=run_values.dtype)
    pos = 0
    for r in range(run_values.shape[0]):
        v = run_values[r]
        for _ in range(run_lengths[r]):
            out[pos] = v
            pos += 1
    return out


@njit(cache=True, nogil=True)
def dict_gather(
    dict_offsets: np.ndarray, dict_data: np.ndarray, codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Var-len values of `codes` looked up in a dictionary (Arrow layout in and out)."""
    n = codes.shape[0]
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    for i in range(n):
        c = codes[i]
        offsets[i + 1] = offsets[i] + dict_offsets[c + 1] - dict_offsets[c]
    data = np.empty(offsets[n], dtype=np.uint8)
    for i in range(n):
        c = codes[i]
        start = dict_offsets[c]
        dst = offsets[i]
        for j in range(dict_offsets[c + 1] - start):
            data[dst + j] = dict_data[start + j]
    return offsets, data


@njit(cache=True, nogil=True)
def _compare_bytes(data: np.ndarray, a0: int, a1: int, b0: int, b1: int) -> int:
    la = a1 - a0
    lb = b1 - b0
    m = min(la, lb)
    for j in range(m):
        x = data[a0 + j]
        y = data[b0 + j]
        if x != y:
            return -1 if x < y else 1
    if la == lb:
        return 0
    return -1 if la < lb else 1


@njit(cache=True, nogil=True)
def varlen_compare_adjacent(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """out[i] = sign(value[i] <=> value[i+1]) in unsigned byte order (-1, 0, 1)."""
    n = offsets.shape[0] - 1
    out = np.zeros(max(n - 1, 0), dtype=np.int8)
    for i in range(n - 1):
        out[i] = _compare_bytes(data, offsets[i], offsets[i + 1], offsets[i + 1], offsets[i + 2])
    return out


@njit(cache=True, nogil=True)
def varlen_compare_const(offsets: np.ndarray, data: np.ndarray, const: np.ndarray) -> np.ndarray:
    """out[i] = sign(value[i] <=> const) in unsigned byte order (-1, 0, 1)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.int8)
    m = const.shape[0]
    for i in range(n):
        a, b = offsets[i], offsets[i + 1]
        la = b - a
        k = min(la, m)
        c = 0
        for j in range(k):
            x, y = data[a + j], const[j]
            if x != y:
                c = -1 if x < y else 1
                break
        if c == 0 and la != m:
            c = -1 if la < m else 1
        out[i] = c
    return out


def varlen_compare_const_reference(offsets: np.ndarray, data: np.ndarray,
                                   const: bytes) -> np.ndarray:
    """Plain-Python twin of `varlen_compare_const` (tests)."""
    raw = data.tobytes()
    out = [(raw[offsets[i]:offsets[i + 1]] > const) - (raw[offsets[i]:offsets[i + 1]] < const)
           for i in range(len(offsets) - 1)]
    return np.asarray(out, dtype=np.int8)


@njit(cache=True, nogil=True)
def strings_equal(offs_a: np.ndarray, data_a: np.ndarray, ia: np.ndarray,
                  offs_b: np.ndarray, data_b: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """out[k] = string ia[k] of a == string ib[k] of b (byte-wise)."""
    out = np.zeros(ia.shape[0], np.bool_)
    for k in range(ia.shape[0]):
        sa, ea = offs_a[ia[k]], offs_a[ia[k] + 1]
        sb, eb = offs_b[ib[k]], offs_b[ib[k] + 1]
        if ea - sa != eb - sb:
            continue
        same = True
        for t in range(ea - sa):
            if data_a[sa + t] != data_b[sb + t]:
                same = False
                break
        out[k] = same
    return out


def padded_words(data: np.ndarray) -> np.ndarray:
    """`data` (uint8) copied into uint64 words with at least 8 zero bytes after it, so the
    kernels below read any 8 bytes of a value with two aligned word loads (`le_word`)."""
    buf = np.zeros(len(data) // 8 + 2, np.uint64)
    buf.view(np.uint8)[: len(data)] = data
    return buf


# The hot loops below load words themselves (`words[q]`, `words[q + 1]`) and pass only scalars
# to helpers: handing an array to another numba function costs an atomic incref / decref per
# call in this numba version (~20 ns, more than the work).
@njit(cache=True, nogil=True)
def word_at(lo: np.uint64, hi: np.uint64, pos: int, count: int) -> np.uint64:
    """`count` (0..8) bytes at byte `pos` of a `padded_words` buffer, as a little-endian word
    zero above them, given the buffer's words lo = words[pos >> 3] and hi = the next one."""
    if count <= 0:
        return np.uint64(0)
    sh = (pos & 7) << 3
    w = lo
    if sh != 0:
        w = (lo >> np.uint64(sh)) | (hi << np.uint64(64 - sh))
    if count < 8:
        w &= (np.uint64(1) << np.uint64(count << 3)) - np.uint64(1)
    return w


@njit(cache=True, nogil=True)
def bswap64(x: np.uint64) -> np.uint64:
    x = ((x & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)) | \
        ((x >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF))
    x = ((x & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)) | \
        ((x >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF))
    return (x << np.uint64(32)) | (x >> np.uint64(32))


@njit(cache=True, nogil=True)
def compare_words(words: np.ndarray, a0: int, a1: int, b0: int, b1: int) -> int:
    """`_compare_bytes` of data[a0:a1] and data[b0:b1] read 8 bytes at a time from the
    `padded_words` of data: big-endian zero-padded words compare like the bytes they hold, and
    equal words where a value ends there mean the shorter is a prefix of the longer."""
    la = a1 - a0
    lb = b1 - b0
    pos = 0
    while True:
        ka = min(la - pos, 8)
        kb = min(lb - pos, 8)
        pa = a0 + pos
        pb = b0 + pos
        wa = bswap64(word_at(words[pa >> 3], words[(pa >> 3) + 1], pa, ka))
        wb = bswap64(word_at(words[pb >> 3], words[(pb >> 3) + 1], pb, kb))
        if wa != wb:
            return -1 if wa < wb else 1
        if ka < 8 or kb < 8:
            if la == lb:
                return 0
            return -1 if la < lb else 1
        pos += 8


@njit(cache=True, nogil=True)
def _compare_head(wa0: np.uint64, wa1: np.uint64, la: int,
                  wb0: np.uint64, wb1: np.uint64, lb: int) -> int:
    """Order of two values by their first two big-endian words and lengths: -1 / 0 / 1, or 2
    when both go on past 16 bytes with those words equal (the rest decides)."""
    if wa0 != wb0:
        return -1 if wa0 < wb0 else 1
    if la > 8 and lb > 8:
        if wa1 != wb1:
            return -1 if wa1 < wb1 else 1
        if la > 16 and lb > 16:
            return 2
    if la == lb:
        return 0
    return -1 if la < lb else 1


@njit(cache=True, nogil=True)
def argminmax_words(offsets: np.ndarray, words: np.ndarray,
                    valid: np.ndarray) -> tuple[int, int]:
    """`varlen_argminmax` on the `padded_words` of the data: each value's first two big-endian
    words are loaded once and compared with the bounds' (kept in scalars); only values equal
    to a bound on 16 bytes and longer compare the rest (`compare_words`)."""
    lo = -1
    hi = -1
    lo0 = lo1 = hi0 = hi1 = np.uint64(0)
    llo = lhi = 0
    for i in range(offsets.shape[0] - 1):
        if not valid[i]:
            continue
        a0 = offsets[i]
        la = offsets[i + 1] - a0
        w0 = bswap64(word_at(words[a0 >> 3], words[(a0 >> 3) + 1], a0, min(la, 8)))
        p1 = a0 + 8
        w1 = bswap64(word_at(words[p1 >> 3], words[(p1 >> 3) + 1], p1, min(la - 8, 8)))
        if lo < 0:
            lo = hi = i
            lo0, lo1, llo = w0, w1, la
            hi0, hi1, lhi = w0, w1, la
            continue
        c = _compare_head(w0, w1, la, lo0, lo1, llo)
        if c == 2:
            c = compare_words(words, a0, a0 + la, offsets[lo], offsets[lo + 1])
        if c < 0:
            lo = i
            lo0, lo1, llo = w0, w1, la
            continue  # below the minimum: not above the maximum
        c = _compare_head(w0, w1, la, hi0, hi1, lhi)
        if c == 2:
            c = compare_words(words, a0, a0 + la, offsets[hi], offsets[hi + 1])
        if c > 0:
            hi = i
            hi0, hi1, lhi = w0, w1, la
    return lo, hi


def varlen_argminmax(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray,
                     words: np.ndarray | None = None) -> tuple[int, int]:
    """Row numbers of the smallest and largest valid value in byte order (-1 when none valid),
    the first of equal values; values are compared 8 bytes at a time (`compare_words`).
    `words`: `padded_words(data)` when the caller has it."""
    return argminmax_words(offsets, padded_words(data) if words is None else words, valid)


def varlen_argminmax_reference(offsets: np.ndarray, data: np.ndarray,
                               valid: np.ndarray) -> tuple[int, int]:
    """Plain-Python twin of `varlen_argminmax` (tests): the first smallest / largest value."""
    values = varlen_list(offsets, data)
    rows = [i for i in range(len(values)) if valid[i]]
    if not rows:
        return -1, -1
    lo = min(rows, key=lambda i: (values[i], i))
    hi = min(rows, key=lambda i: (_Desc(values[i]), i))
    return lo, hi


class _Desc:
    """Reverses the order of a bytes value (the reference's largest-first key)."""

    __slots__ = ("v",)

    def __init__(self, v: bytes) -> None:
        self.v = v

    def __lt__(self, other: _Desc) -> bool:
        return self.v > other.v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.v == other.v

    __hash__ = None  # type: ignore[assignment]


# ---- helpers ------------------------------------------------------------------------------
def object_to_int128(values: np.ndarray) -> np.ndarray:
    """Object array of Python ints -> structured (lo u64, hi i64): 16-byte two's complement."""
    out = np.empty(len(values), dtype=[("lo", "<u8"), ("hi", "<i8")])
    out["lo"] = np.fromiter((int(v) & _U64_MASK for v in values), np.uint64, len(values))
    out["hi"] = np.fromiter((int(v) >> 64 for v in values), np.int64, len(values))
    return out


def int128_to_object(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(object) + hi.astype(object) * (1 << 64)


@njit(cache=True, nogil=True)
def run_count(bits: np.ndarray) -> int:
    """Runs of equal values in a non-empty unsigned-integer array (bit patterns for floats)."""
    runs = 1
    for i in range(1, bits.shape[0]):  # branch-free: vectorized
        runs += bits[i] != bits[i - 1]
    return runs


@njit(cache=True, nogil=True)
def int_page_stats(values: np.ndarray) -> tuple:
    """(run count, min, max) of a non-empty integer array in one pass: what choose_fixed and
    encode_fixed need, instead of a diff, a flatnonzero, a min and a max over the page."""
    lo = values[0]
    hi = values[0]
    runs = 1
    # branch-free (min / max / a compare added), so LLVM vectorizes it: ~5x the branchy loop
    for i in range(1, values.shape[0]):
        v = values[i]
        runs += v != values[i - 1]
        lo = min(lo, v)
        hi = max(hi, v)
    return runs, lo, hi


def varlen_list(offsets: np.ndarray, data: np.ndarray) -> list[bytes]:
    buf = data.tobytes()
    offs = offsets.tolist()
    return [buf[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Start row of each run of bit-identical values (so NaN and -0.0 runs are exact)."""
    if len(values) == 0:
        return np.zeros(0, np.int64)
    bits = values.view(np.dtype(f"u{values.dtype.itemsize}"))
    change = np.flatnonzero(bits[1:] != bits[:-1]) + 1
    return np.concatenate(([0], change)).astype(np.int64)


def _int_span(values: np.ndarray) -> tuple[int, int]:
    lo, hi = int(values.min()), int(values.max())
    return lo, (hi - lo).bit_length()


# ---- fixed-width ----------------------------------------------------------------------------
@dataclass(frozen=True)
class FixedStats:
    """What choosing and encoding a fixed-width page needs, from one pass (`fixed_stats`)."""

    runs: int
    base: int = 0  # integers only: the minimum (FOR's base)
    bits: int = 0  # integers only: bit width of max - min
    high: int = 0  # integers only: the maximum (the zone map's bound)


def _int_view(values: np.ndarray) -> np.ndarray:
    # numba has no comparisons on bool arrays worth trusting; the bytes are 0 / 1.
    return values.view(np.uint8) if values.dtype.kind == "b" else values


def fixed_stats(values: np.ndarray) -> FixedStats:
    """Run count (bit-identical runs, so NaN and -0.0 are exact) and, for integers, FOR's base
    and bit width, of a non-empty page."""
    values = np.ascontiguousarray(values)
    if values.dtype.kind in "iub":
        runs, lo, hi = int_page_stats(_int_view(values))
        lo, hi = int(lo), int(hi)
        return FixedStats(int(runs), lo, (hi - lo).bit_length(), hi)
    bits = values.view(np.dtype(f"u{values.dtype.itemsize}"))
    return FixedStats(int(run_count(bits)))


def fixed_stats_reference(values: np.ndarray) -> FixedStats:
    """numpy reference for `fixed_stats` (tests compare the two)."""
    runs = len(_run_starts(values))
    if values.dtype.kind in "iub":
        lo, bits = _int_span(values)
        return FixedStats(runs, lo, bits, int(values.max()))
    return FixedStats(runs)


@njit(cache=True, nogil=True)
def bitpack_deltas(values: np.ndarray, base: np.uint64, bits: int) -> np.ndarray:
    """`bitpack` of (int64(value) - base) mod 2**64 for integer values of any width: FOR's
    words in one pass, without the int64 copy and the subtracted copy of the page."""
    n = values.shape[0]
    out = np.zeros((n * bits + 63) // 64 + 1, dtype=np.uint64)
    if bits == 0:
        return out
    mask = (
        np.uint64(0xFFFFFFFFFFFFFFFF)
        if bits == 64
        else (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    )
    # a word is filled in a register and stored once (not two read-modify-writes per value)
    acc = np.uint64(0)
    fill = 0  # bits of `acc` in use
    w = 0
    for i in range(n):
        v = (np.uint64(np.int64(values[i])) - base) & mask
        acc |= v << np.uint64(fill)
        fill += bits
        if fill >= 64:
            out[w] = acc
            w += 1
            fill -= 64
            # the value's bits that did not fit start the next word
            acc = (v >> np.uint64(bits - fill)) if fill > 0 else np.uint64(0)
    if fill > 0:
        out[w] = acc
    return out


@njit(cache=True, nogil=True)
def run_starts_lengths(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start row, u32 length) of each run of equal values of a non-empty unsigned-integer
    array (bit patterns): RLE's runs in one pass."""
    n = bits.shape[0]
    starts = np.empty(n, dtype=np.int64)
    lengths = np.empty(n, dtype=np.uint32)
    runs = 0
    start = 0
    for i in range(1, n):
        if bits[i] != bits[i - 1]:
            starts[runs] = start
            lengths[runs] = i - start
            runs += 1
            start = i
    starts[runs] = start
    lengths[runs] = n - start
    runs += 1
    return starts[:runs].copy(), lengths[:runs].copy()


def encode_fixed(values: np.ndarray, encoding: Encoding,
                 stats: FixedStats | None = None) -> bytes:
    n = len(values)
    if encoding is Encoding.PLAIN:
        return np.ascontiguousarray(values).tobytes()
    if encoding is Encoding.RLE:
        if not n:
            return _RLE_HEAD.pack(0)
        values = np.ascontiguousarray(values)
        starts, lengths = run_starts_lengths(values.view(np.dtype(f"u{values.dtype.itemsize}")))
        run_values = values[starts].tobytes()
        return b"".join((_RLE_HEAD.pack(len(starts)), _padded(run_values), lengths.tobytes()))
    if encoding is Encoding.FOR:
        if values.dtype.kind not in "iub":
            raise ValueError("FOR encodes integers only")
        if not n:
            base, bits = 0, 0
        elif stats is not None:
            base, bits = stats.base, stats.bits
        else:
            base, bits = _int_span(values)
        words = bitpack_deltas(np.ascontiguousarray(_int_view(values)),
                               np.uint64(base & _U64_MASK), bits)
        return _FOR_HEAD.pack(base, bits) + words.tobytes()
    raise ValueError(f"{encoding.name} does not apply to fixed-width values")


def encode_fixed_reference(values: np.ndarray, encoding: Encoding) -> bytes:
    """numpy twin of `encode_fixed` (tests: the kernels give these bytes)."""
    n = len(values)
    if encoding is Encoding.PLAIN:
        return np.ascontiguousarray(values).tobytes()
    if encoding is Encoding.RLE:
        starts = _run_starts(values)
        lengths = np.diff(np.append(starts, n)).astype(np.uint32)
        run_values = np.ascontiguousarray(values[starts]).tobytes()
        return b"".join((_RLE_HEAD.pack(len(starts)), _padded(run_values), lengths.tobytes()))
    if encoding is Encoding.FOR:
        base, bits = _int_span(values) if n else (0, 0)
        deltas = values.astype(np.int64).view(np.uint64) - np.uint64(base & _U64_MASK)
        return _FOR_HEAD.pack(base, bits) + bitpack(deltas, bits).tobytes()
    raise ValueError(f"{encoding.name} does not apply to fixed-width values")


def choose_fixed(values: np.ndarray, stats: FixedStats | None = None) -> Encoding:
    """Smallest of PLAIN / RLE / FOR (integers) by a size estimate."""
    n, w = len(values), values.dtype.itemsize
    costs = {Encoding.PLAIN: n * w}
    if n:
        if stats is None:
            stats = fixed_stats(values)
        costs[Encoding.RLE] = 8 + _pad8(stats.runs * w) + 4 * stats.runs
        if values.dtype.kind in "iub":
            costs[Encoding.FOR] = 16 + 8 * packed_words(n, stats.bits)
    return min(costs, key=lambda e: (costs[e], e))


def encode_fixed_best(values: np.ndarray,
                      stats: FixedStats | None = None) -> tuple[Encoding, bytes]:
    """(chosen encoding, body) with the page statistics computed once (`stats`: the caller's
    `fixed_stats(values)`, when it has them)."""
    if stats is None and len(values):
        stats = fixed_stats(values)
    enc = choose_fixed(values, stats)
    return enc, encode_fixed(values, enc, stats)


def decode_fixed(buf: bytes, pos: int, n: int, dtype: np.dtype, encoding: int) -> np.ndarray:
    if encoding == Encoding.PLAIN:
        if len(buf) - pos != n * dtype.itemsize:
            raise ValueError("PLAIN page has the wrong size")
        return np.frombuffer(buf, dtype=dtype, count=n, offset=pos).copy()
    if encoding == Encoding.RLE:
        (runs,) = _RLE_HEAD.unpack_from(buf, pos)
        vpos = pos + _RLE_HEAD.size
        lpos = vpos + _pad8(runs * dtype.itemsize)
        if lpos + 4 * runs != len(buf):
            raise ValueError("RLE page has the wrong size")
        run_values = np.frombuffer(buf, dtype=dtype, count=runs, offset=vpos)
        lengths = np.frombuffer(buf, dtype=np.uint32, count=runs, offset=lpos)
        if int(lengths.sum(dtype=np.uint64)) != n:
            raise ValueError("RLE run lengths do not add up to the page's rows")
        return rle_expand(run_values, lengths, n)
    if encoding == Encoding.FOR:
        base, bits = _FOR_HEAD.unpack_from(buf, pos)
        words = _words(buf, pos + _FOR_HEAD.size, n, bits)
        raw = bitunpack(words, n, bits, np.uint64(base & _U64_MASK)).view(np.int64)
        out = raw.astype(dtype, copy=False)
        if dtype != np.dtype(np.int64) and not np.array_equal(out, raw):
            raise ValueError("FOR value out of range for the column type")
        return out
    raise ValueError(f"encoding {encoding} does not apply to fixed-width values")


def _words(buf: bytes, pos: int, n: int, bits: int) -> np.ndarray:
    count = packed_words(n, bits)
    if bits > 64 or len(buf) - pos != 8 * count:
        raise ValueError("bit-packed section has the wrong size")
    return np.frombuffer(buf, dtype=np.uint64, count=count, offset=pos)


# ---- object ints (LARGEINT, wide DECIMAL) ---------------------------------------------------
def encode_object(values: np.ndarray, encoding: Encoding) -> bytes:
    if encoding is Encoding.PLAIN:
        return object_to_int128(values).tobytes()
    if encoding is Encoding.FOR:
        base = min(values) if len(values) else 0
        span = (max(values) - base) if len(values) else 0
        if span >> 64:
            raise ValueError("FOR needs a value range below 2**64")
        deltas = np.fromiter((v - base for v in values), np.uint64, len(values))
        head = _FOR_OBJ_HEAD.pack(int(base) & _U64_MASK, int(base) >> 64, span.bit_length())
        return head + bitpack(deltas, span.bit_length()).tobytes()
    raise ValueError(f"{encoding.name} does not apply to 128-bit integers")


def choose_object(values: np.ndarray) -> Encoding:
    if len(values) == 0:
        return Encoding.PLAIN
    span = max(values) - min(values)
    if span >> 64:
        return Encoding.PLAIN
    return (
        Encoding.FOR
        if 24 + 8 * packed_words(len(values), span.bit_length()) < 16 * len(values)
        else Encoding.PLAIN
    )


def decode_object(buf: bytes, pos: int, n: int, encoding: int) -> np.ndarray:
    if encoding == Encoding.PLAIN:
        if len(buf) - pos != 16 * n:
            raise ValueError("PLAIN page has the wrong size")
        pairs = np.frombuffer(buf, dtype=[("lo", "<u8"), ("hi", "<i8")], count=n, offset=pos)
        return int128_to_object(pairs["lo"], pairs["hi"])
    if encoding == Encoding.FOR:
        lo, hi, bits = _FOR_OBJ_HEAD.unpack_from(buf, pos)
        deltas = bitunpack(_words(buf, pos + _FOR_OBJ_HEAD.size, n, bits), n, bits, np.uint64(0))
        return deltas.astype(object) + (lo + (hi << 64))
    raise ValueError(f"encoding {encoding} does not apply to 128-bit integers")


# ---- var-len (strings, HLL/BITMAP blobs) ----------------------------------------------------
def encode_varlen(offsets: np.ndarray, data: np.ndarray, encoding: Encoding,
                  groups: tuple[np.ndarray, np.ndarray] | None = None) -> bytes:
    """The page body; `groups` (varlen_dict.group_values of these values) saves rehashing."""
    rel = (offsets - offsets[0]).astype(np.int64)
    payload = data[offsets[0] : offsets[-1]]
    if encoding is Encoding.PLAIN:
        return rel.tobytes() + payload.tobytes()
    if encoding is Encoding.DICT:
        from storage.segment.varlen_dict import dictionary_arrays

        dict_offsets, dict_data, codes = dictionary_arrays(rel, payload, groups)
        d = len(dict_offsets) - 1
        words = dict_data.tobytes()
        bits = max(d - 1, 0).bit_length()
        return b"".join(
            (
                _DICT_HEAD.pack(d, bits),
                dict_offsets.tobytes(),
                _padded(words),
                bitpack(codes, bits).tobytes(),
            )
        )
    raise ValueError(f"{encoding.name} does not apply to var-len values")


def choose_varlen(offsets: np.ndarray, data: np.ndarray,
                  groups: tuple[np.ndarray, np.ndarray] | None = None) -> Encoding:
    """DICT when the distinct values (plus bit-packed codes) are smaller than PLAIN."""
    n = len(offsets) - 1
    total = int(offsets[-1] - offsets[0])
    plain = 8 * (n + 1) + total
    if n < 2:
        return Encoding.PLAIN
    # Distinct values counted by hash (varlen_dict.py): all distinct (names, ids) means PLAIN
    # without building anything per value.
    from storage.segment.varlen_dict import distinct_values

    d, distinct_bytes = distinct_values(offsets, data, groups)
    if d == n:
        return Encoding.PLAIN
    dict_cost = 8 + 8 * (d + 1) + distinct_bytes + 8 * packed_words(n, (d - 1).bit_length())
    return Encoding.DICT if dict_cost < plain else Encoding.PLAIN


def encode_varlen_best(offsets: np.ndarray, data: np.ndarray,
                       words: np.ndarray | None = None) -> tuple[Encoding, bytes]:
    """`choose_varlen` and `encode_varlen` with one hashing and sort of the values.
    `words`: `padded_words(data)` when the caller has it (the zone map uses it too)."""
    groups = None
    if len(offsets) > 2:
        from storage.segment.varlen_dict import group_values

        groups = group_values(offsets, data, words)
    enc = choose_varlen(offsets, data, groups)
    return enc, encode_varlen(offsets, data, enc, groups)


def decode_varlen(buf: bytes, pos: int, n: int, encoding: int) -> tuple[np.ndarray, np.ndarray]:
    if encoding == Encoding.PLAIN:
        if len(buf) - pos < 8 * (n + 1):
            raise ValueError("PLAIN page is too short for its offsets")
        offsets = np.frombuffer(buf, dtype=np.int64, count=n + 1, offset=pos).copy()
        data = np.frombuffer(buf, dtype=np.uint8, offset=pos + 8 * (n + 1)).copy()
        _check_offsets(offsets, len(data))
        return offsets, data
    if encoding == Encoding.DICT:
        return dict_gather(*decode_dict_parts(buf, pos, n))
    raise ValueError(f"encoding {encoding} does not apply to var-len values")


def decode_dict_parts(buf: bytes, pos: int, n: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dictionary offsets, dictionary bytes, each row's code) of a DICT var-len page body at
    buf[pos:], checked; the dictionary is sorted, so codes order like the values. Scans that
    test predicates on the codes (storage/segment/dict_codes.py) stop here, before gathering."""
    d, bits = _DICT_HEAD.unpack_from(buf, pos)
    opos = pos + _DICT_HEAD.size
    if opos + 8 * (d + 1) > len(buf):
        raise ValueError("DICT page is too short for its dictionary")
    dict_offsets = np.frombuffer(buf, dtype=np.int64, count=d + 1, offset=opos)
    dpos = opos + 8 * (d + 1)
    dict_len = int(dict_offsets[-1])
    if not 0 <= dict_len <= len(buf) - dpos:
        raise ValueError("DICT dictionary exceeds the page")
    _check_offsets(dict_offsets, dict_len)
    dict_data = np.frombuffer(buf, dtype=np.uint8, count=dict_len, offset=dpos)
    codes = bitunpack(_words(buf, dpos + _pad8(dict_len), n, bits), n, bits, np.uint64(0))
    if n and (d == 0 or int(codes.max()) >= d):
        raise ValueError("DICT code outside the dictionary")
    return dict_offsets, dict_data, codes


def _check_offsets(offsets: np.ndarray, data_len: int) -> None:
    if (
        offsets[0] != 0
        or offsets[-1] != data_len
        or (len(offsets) > 1 and np.any(np.diff(offsets) < 0))
    ):
        raise ValueError("var-len offsets are inconsistent")


def runs_by_bytes(sizes: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Consecutive [start, stop) runs of items whose sizes add up to about `limit` bytes each,
    at least one item per run (data pages of var-len columns, index dictionary pages)."""
    n = len(sizes)
    if n == 0:
        return []
    cost = np.cumsum(sizes, dtype=np.int64)
    out = []
    start = 0
    while start < n:
        base = int(cost[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(cost, base + limit, side="right")))
        out.append((start, stop))
        start = stop
    return out


def decode_values(body: bytes, pos: int, n: int, layout: PhysicalLayout, dtype: DataType,
                  encoding: int, validity: np.ndarray | None = None) -> Column:
    """n values encoded with `encoding` (a page header's byte, an `Encoding` value) at
    body[pos:], as a Column of `dtype`."""
    if layout.layout is Layout.VARLEN:
        offsets, data = decode_varlen(body, pos, n, encoding)
        return Column(dtype, data, validity, offsets)
    if layout.layout is Layout.OBJECT_INT:
        return Column(dtype, decode_object(body, pos, n, encoding), validity)
    return Column(dtype, decode_fixed(body, pos, n, layout.dtype, encoding), validity)
