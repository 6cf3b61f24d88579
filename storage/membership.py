"""Membership kernels of `IntegerSet` (storage/predicates.py): which values fall in a dense bitmap.

Used by the `in_bitmap` predicate, the form a hash join's runtime filter takes when its build
keys are integers over a bounded span. A star join's scan tests every fact row's foreign key
with the most selective filter (6M rows per SSB SF 1 query), so this loop is the scan's
largest single cost once the other filters have done their work.

`MembershipTable` is the set laid out for a branch-free lookup: the offset `v - lo` is clamped
to one extra slot past the span that always answers "absent", so every row does the same
work (no unpredictable branch on a range test). Spans up to `BYTE_TABLE_MAX_SPAN` use one
byte per value (the lookup is a plain load); wider spans pack 32 values per word so the
table stays cache resident (a bool per value of a 2M-key span misses the caches on most rows).
Probe columns of 32 bits or less (INT keys) with a set inside the int32 range are offset in
32-bit unsigned arithmetic (`v - lo` wraps to a large value below `lo`, clamped like any
other miss), which compiles to narrower, faster code than the 64-bit form.
`bitmap_contains_reference` is the plain-numpy twin the tests compare with.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# One byte per value up to this span (256 KiB: the L2 cache); packed bits beyond.
BYTE_TABLE_MAX_SPAN = 1 << 18
_NARROW = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.uint8, np.uint16))


class MembershipTable:
    """A bitmap over [lo, lo + span) with one trailing "absent" slot, as bytes or packed
    32-bit words (see the module doc)."""

    __slots__ = ("lo", "packed", "span", "table")

    def __init__(self, lo: int, bits: np.ndarray) -> None:
        self.lo = int(lo)
        self.span = len(bits)
        self.packed = self.span > BYTE_TABLE_MAX_SPAN
        if self.packed:
            padded = np.zeros(((self.span + 1 + 31) // 32) * 32, np.bool_)
            padded[:self.span] = bits
            self.table = np.packbits(padded, bitorder="little").view("<u4").astype(np.uint32)
        else:
            self.table = np.zeros(self.span + 1, np.uint8)
            self.table[:self.span] = bits

    def contains(self, values: np.ndarray) -> np.ndarray:
        """Bool per value: lo <= v < lo + span and v's bit is set."""
        out = np.empty(len(values), np.uint8)
        if len(values) == 0 or self.span == 0:
            out[:] = 0
            return out.view(np.bool_)
        values = np.ascontiguousarray(values)
        narrow = (values.dtype in _NARROW and -(1 << 31) <= self.lo
                  and self.lo + self.span <= 1 << 31)
        if narrow:
            v32 = values if values.dtype == np.int32 else values.astype(np.int32)
            lo32 = np.uint32(self.lo & 0xFFFFFFFF)
            span32 = np.uint32(self.span)
            if self.packed:
                _packed32(v32, lo32, span32, self.table, out)
            else:
                _bytes32(v32, lo32, span32, self.table, out)
        else:
            v64 = values.astype(np.int64, copy=False)
            if self.packed:
                _packed64(v64, np.int64(self.lo), np.uint64(self.span), self.table, out)
            else:
                _bytes64(v64, np.int64(self.lo), np.uint64(self.span), self.table, out)
        return out.view(np.bool_)


# Each kernel: d = v - lo as an unsigned offset (values below lo wrap to huge), clamped to
# `span`, whose slot / bit is always 0. No branch on the data: the loop runs at load speed.
@njit(cache=True, nogil=True, boundscheck=False)
def _bytes32(values, lo, span, table, out):  # type: ignore[no-untyped-def]
    for i in range(values.shape[0]):
        d = np.uint32(np.uint32(values[i]) - lo)  # wraps mod 2**32 (see the module doc)
        d = min(span, d)
        out[i] = table[d]


@njit(cache=True, nogil=True, boundscheck=False)
def _packed32(values, lo, span, words, out):  # type: ignore[no-untyped-def]
    for i in range(values.shape[0]):
        d = np.uint32(np.uint32(values[i]) - lo)  # wraps mod 2**32 (see the module doc)
        d = min(span, d)
        out[i] = (words[d >> np.uint32(5)] >> (d & np.uint32(31))) & np.uint32(1)


@njit(cache=True, nogil=True, boundscheck=False)
def _bytes64(values, lo, span, table, out):  # type: ignore[no-untyped-def]
    for i in range(values.shape[0]):
        d = np.uint64(values[i] - lo)
        d = min(span, d)
        out[i] = table[d]


@njit(cache=True, nogil=True, boundscheck=False)
def _packed64(values, lo, span, words, out):  # type: ignore[no-untyped-def]
    for i in range(values.shape[0]):
        d = np.uint64(values[i] - lo)
        d = min(span, d)
        out[i] = (words[d >> np.uint64(5)] >> np.uint32(d & np.uint64(31))) & np.uint32(1)


def bitmap_contains(values: np.ndarray, lo: int, bits: np.ndarray) -> np.ndarray:
    """Bool per value: lo <= v < lo + len(bits) and bits[v - lo] (builds the table once per
    call; `IntegerSet` keeps its table across calls)."""
    return MembershipTable(lo, bits).contains(values)


def bitmap_contains_reference(values: np.ndarray, lo: int, bits: np.ndarray) -> np.ndarray:
    d = values.astype(np.int64) - lo
    inside = (d >= 0) & (d < len(bits))
    out = np.zeros(len(values), np.bool_)
    out[inside] = bits[d[inside]]
    return out
