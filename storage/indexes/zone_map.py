"""Zone maps: min / max / has_null / has_not_null per data page and per segment, and pruning.

Seed 003 section 4 (Doris `ZoneMapIndexWriter`, `ColumnReader::_get_filtered_pages`): every data
page of a column gets an entry, and the segment gets one merged entry. At read time a predicate
that no value in [min, max] can satisfy skips the page (or the whole segment).

Deviations from the seed, all on the safe side:
- A page without non-null values is skipped by every comparison (not only by IS NOT NULL);
  has_null does not block skipping, since NULL never satisfies a comparison.
- Floats: a page holding a NaN gets no bounds (NaN != v is true for every v).
- Strings keep at most 64 bytes: min is truncated (still <= every value), max is truncated and
  rounded up (last byte below 0xFF incremented), or unbounded when that is impossible; bounds that
  are not the real values are marked inexact, so `!=` / NOT IN never prune on them.
- HLL / BITMAP blobs record only the null flags.

Stored as one ZONE_MAP index page with n_pages + 1 entries (the last is the segment's):
    u32 entries, u8 layout, 3 x 0; u8 flags[entries] (pad to 8);
    fixed: mins[entries], maxs[entries] (each padded to 8); 128-bit ints: 16 bytes each;
    var-len: int64 min offsets[entries+1], min bytes (pad), int64 max offsets[entries+1], max bytes.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from storage.segment.encoding import (
    Layout,
    PhysicalLayout,
    int128_to_object,
    object_to_int128,
    varlen_argminmax,
    varlen_list,
)
from storage.types import DataType

HAS_NULL = 1
HAS_NOT_NULL = 2
MIN_VALID = 4
MAX_VALID = 8
EXACT = 16  # min and max are real values of the page (not truncated / rounded)

MAX_STRING_BOUND = 64
_HEAD = struct.Struct("<IB3x")
_INT128_MIN, _INT128_MAX = -(2**127), 2**127 - 1


class NotIndexable(Exception):
    """A predicate value the indexes cannot compare exactly (pruning is skipped for it)."""


def index_value(dtype: DataType, layout: PhysicalLayout, value: object) -> object:
    """The predicate constant as it compares against zone map (and short key) bounds.

    `storage.predicates.evaluate` converts constants with numpy casts, which can wrap or round
    (an INT column compared with 1.5 or 2**40); only constants whose comparison is exact in the
    column's own domain are used for pruning, the rest raise NotIndexable (no pruning, the exact
    evaluation still runs).
    """
    if value is None:
        raise NotIndexable
    if layout.layout is Layout.VARLEN:
        if not dtype.is_string or not isinstance(value, str):
            raise NotIndexable
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise NotIndexable from None
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if layout.layout is Layout.OBJECT_INT:
        if not isinstance(value, (int, np.integer)) or not _INT128_MIN <= int(value) <= _INT128_MAX:
            raise NotIndexable
        return int(value)
    npd = layout.dtype
    if npd.kind in "iu":
        if not isinstance(value, (int, np.integer)):
            raise NotIndexable
        lo, hi = _int_bounds(npd)
        if not lo <= int(value) <= hi:
            raise NotIndexable
        return int(value)
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise NotIndexable
    as_col = float(npd.type(value))
    if math.isnan(as_col) or as_col != value:  # NaN, or not exactly representable
        raise NotIndexable
    return as_col


@functools.cache
def _int_bounds(npd: np.dtype) -> tuple[int, int]:
    """The value range of an integer dtype (np.iinfo costs microseconds per call: cached)."""
    info = np.iinfo(npd)
    return int(info.min), int(info.max)


def index_values(dtype: DataType, layout: PhysicalLayout, values: Sequence[object]) -> list[object]:
    """`index_value` of each constant of an IN list, leaving out those that raise NotIndexable
    (the column cannot hold them, so no row equals them).

    A runtime filter's key set reaches here as hundreds of ints for every segment scanned; for
    an integer column they are range-checked in one pass against the dtype's cached bounds
    instead of one `index_value` (and one np.iinfo) per value.
    """
    ints = layout.layout is Layout.FIXED and layout.dtype.kind in "iu"
    lo, hi = _int_bounds(layout.dtype) if ints else (0, -1)
    out: list[object] = []
    for v in values:
        if ints and type(v) is int:  # the common case: a plain int needs only the range check
            if lo <= v <= hi:
                out.append(v)
            continue
        try:
            out.append(index_value(dtype, layout, v))
        except NotIndexable:
            continue
    return out


def _round_up(b: bytes) -> bytes | None:
    """A string greater than every string that starts with `b` (None when b is all 0xFF)."""
    head = b.rstrip(b"\xff")
    if not head:
        return None
    return head[:-1] + bytes([head[-1] + 1])


@dataclass(slots=True)
class ZoneMapBuilder:
    """Collects one entry per page; `finish()` appends the segment entry and serializes."""

    layout: PhysicalLayout
    bounds: bool = True  # False for HLL / BITMAP: null flags only
    flags: list[int] = field(default_factory=list)
    mins: list[object] = field(default_factory=list)
    maxs: list[object] = field(default_factory=list)

    def add_page(
        self, values: np.ndarray, validity: np.ndarray | None, offsets: np.ndarray | None = None,
        words: np.ndarray | None = None, int_bounds: tuple[int, int] | None = None,
    ) -> None:
        """One page's entry. `words`: var-len only, `padded_words(values)` when the caller
        has it (the page encoder shares it). `int_bounds`: an integer page without nulls,
        its (min, max) when the caller has them (the encoder's one-pass statistics)."""
        n = len(offsets) - 1 if offsets is not None else len(values)
        nulls = 0 if validity is None else n - int(np.count_nonzero(validity))
        flags = (HAS_NULL if nulls else 0) | (HAS_NOT_NULL if nulls < n else 0)
        lo: object = self._zero()
        hi: object = self._zero()
        if nulls < n and self.bounds:
            kind = self.layout.layout
            if kind is Layout.VARLEN:
                assert offsets is not None
                valid = np.ones(n, np.bool_) if validity is None else validity
                i, j = varlen_argminmax(offsets, values, valid, words)
                lo_b = values[offsets[i] : offsets[i + 1]].tobytes()
                hi_b = values[offsets[j] : offsets[j + 1]].tobytes()
                flags |= MIN_VALID | EXACT
                if len(lo_b) > MAX_STRING_BOUND:
                    lo_b, flags = lo_b[:MAX_STRING_BOUND], flags & ~EXACT
                if len(hi_b) > MAX_STRING_BOUND:
                    rounded = _round_up(hi_b[:MAX_STRING_BOUND])
                    flags &= ~EXACT
                    if rounded is not None:
                        hi_b, flags = rounded, flags | MAX_VALID
                else:
                    flags |= MAX_VALID
                lo, hi = lo_b, (hi_b if flags & MAX_VALID else b"")
            elif int_bounds is not None and validity is None and self.layout.layout is Layout.FIXED:
                lo, hi = int_bounds
                flags |= MIN_VALID | MAX_VALID | EXACT
            else:
                vals = values if validity is None else values[validity]
                if kind is Layout.OBJECT_INT:
                    lo, hi = min(vals), max(vals)
                    flags |= MIN_VALID | MAX_VALID | EXACT
                elif not (vals.dtype.kind == "f" and np.isnan(vals).any()):
                    lo, hi = vals.min(), vals.max()
                    flags |= MIN_VALID | MAX_VALID | EXACT
        self.flags.append(flags)
        self.mins.append(lo)
        self.maxs.append(hi)

    def _zero(self) -> object:
        return b"" if self.layout.layout is Layout.VARLEN else 0

    def _segment_entry(self) -> tuple[int, object, object]:
        flags = 0
        for f in self.flags:
            flags |= f & (HAS_NULL | HAS_NOT_NULL)
        pages = [i for i, f in enumerate(self.flags) if f & HAS_NOT_NULL]
        if not pages:
            return flags, self._zero(), self._zero()
        lo: object = self._zero()
        hi: object = self._zero()
        if all(self.flags[i] & MIN_VALID for i in pages):
            flags |= MIN_VALID
            lo = min(self.mins[i] for i in pages)  # type: ignore[type-var]
        if all(self.flags[i] & MAX_VALID for i in pages):
            flags |= MAX_VALID
            hi = max(self.maxs[i] for i in pages)  # type: ignore[type-var]
        if all(self.flags[i] & EXACT for i in pages):
            flags |= EXACT
        return flags, lo, hi

    def finish(self) -> bytes:
        seg_flags, seg_lo, seg_hi = self._segment_entry()
        flags = self.flags + [seg_flags]
        mins, maxs = self.mins + [seg_lo], self.maxs + [seg_hi]
        n = len(flags)
        parts = [
            _HEAD.pack(n, int(self.layout.layout)),
            _pad(np.asarray(flags, np.uint8).tobytes()),
        ]
        kind = self.layout.layout
        for bound in (mins, maxs):
            if kind is Layout.VARLEN:
                offs = np.zeros(n + 1, np.int64)
                np.cumsum([len(b) for b in bound], out=offs[1:])  # type: ignore[arg-type]
                parts += [offs.tobytes(), _pad(b"".join(bound))]  # type: ignore[arg-type]
            elif kind is Layout.OBJECT_INT:
                parts.append(object_to_int128(np.asarray(bound, dtype=object)).tobytes())
            else:
                parts.append(_pad(np.asarray(bound, dtype=self.layout.dtype).tobytes()))
        return b"".join(parts)


# `IN` lists longer than this are matched against the pages by binary search over the sorted
# constants (pages x log n) instead of one pass over the pages per constant (pages x n).
IN_SEARCH_MIN_VALUES = 16


def _in_may_match(min_ok: np.ndarray, max_ok: np.ndarray, mins: np.ndarray, maxs: np.ndarray,
                  values: Sequence[object]) -> np.ndarray:
    """Per entry: may some constant lie in [min, max]? The smallest constant >= min (binary
    search) is the one to test against max; a missing bound does not constrain."""
    if mins.dtype == np.dtype(object):  # Python ints / bytes: numpy must not convert them
        distinct = sorted(set(values))  # type: ignore[type-var]
        vals = np.empty(len(distinct), dtype=object)
        vals[:] = distinct
    else:
        vals = np.unique(np.asarray(list(values), dtype=mins.dtype))
    n = len(vals)
    out = np.zeros(len(min_ok), np.bool_)
    if n == 0:
        return out
    first = np.zeros(len(min_ok), np.int64)  # no min: every constant is >= it
    if min_ok.any():
        first[min_ok] = np.searchsorted(vals, mins[min_ok], side="left")
    exists = first < n
    candidate = vals[np.minimum(first, n - 1)]
    bounded = exists & max_ok
    out[bounded] = np.asarray(np.less_equal(candidate[bounded], maxs[bounded]), dtype=np.bool_)
    out[exists & ~max_ok] = True
    return out


def _compare(op: np.ufunc, bounds: np.ndarray, v: object) -> np.ndarray:
    """op(bounds, v) elementwise as bools. For object bounds (Python ints, bytes) the constant is
    wrapped in a 0-d object array: numpy would otherwise turn bytes into `np.bytes_`, which drops
    trailing NUL bytes (b"a\\0" == b"a") and compares wrongly."""
    if bounds.dtype == np.dtype(object) and not isinstance(v, np.ndarray):
        boxed = np.empty((), dtype=object)
        boxed[()] = v
        v = boxed
    return np.asarray(op(bounds, v), dtype=np.bool_)


def _pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 8)


@dataclass(frozen=True, slots=True, eq=False)
class ZoneMap:
    """Entries 0..n_pages-1 are pages, entry n_pages is the whole segment."""

    flags: np.ndarray  # uint8
    mins: np.ndarray  # column dtype, or object (Python ints / bytes)
    maxs: np.ndarray

    @staticmethod
    def parse(body: bytes, layout: PhysicalLayout, entries: int) -> ZoneMap:
        n, tag = _HEAD.unpack_from(body, 0)
        if n != entries or tag != int(layout.layout):
            raise ValueError("zone map does not match its column")
        pos = _HEAD.size
        flags = np.frombuffer(body, np.uint8, count=n, offset=pos).copy()
        pos += n + (-n % 8)
        bounds: list[np.ndarray] = []
        for _ in range(2):
            if layout.layout is Layout.VARLEN:
                offs = np.frombuffer(body, np.int64, count=n + 1, offset=pos)
                pos += 8 * (n + 1)
                size = int(offs[-1])
                if offs[0] != 0 or np.any(np.diff(offs) < 0) or pos + size > len(body):
                    raise ValueError("zone map string bounds are inconsistent")
                arr = np.empty(n, dtype=object)
                arr[:] = varlen_list(offs, np.frombuffer(body, np.uint8, count=size, offset=pos))
                pos += size + (-size % 8)
            elif layout.layout is Layout.OBJECT_INT:
                pairs = np.frombuffer(
                    body, dtype=[("lo", "<u8"), ("hi", "<i8")], count=n, offset=pos
                )
                arr = int128_to_object(pairs["lo"], pairs["hi"])
                pos += 16 * n
            else:
                arr = np.frombuffer(body, layout.dtype, count=n, offset=pos).copy()
                size = n * layout.dtype.itemsize
                pos += size + (-size % 8)
            bounds.append(arr)
        if pos != len(body):
            raise ValueError("zone map has trailing bytes")
        return ZoneMap(flags, bounds[0], bounds[1])

    @property
    def num_pages(self) -> int:
        return len(self.flags) - 1

    def may_match(self, op: str, values: Sequence[object]) -> np.ndarray:
        """Bool per entry: False only when no row of that page / segment can satisfy the predicate.

        `values` are `index_value` results. Comparisons skip entries whose bound is not valid.
        """
        f = self.flags
        has_not_null = (f & HAS_NOT_NULL) != 0
        if op == "is_null":
            return (f & HAS_NULL) != 0
        if op == "is_not_null":
            return has_not_null
        min_ok = (f & MIN_VALID) != 0
        max_ok = (f & MAX_VALID) != 0
        mins, maxs = self.mins, self.maxs

        def ge_min(v: object) -> np.ndarray:  # some value <= v may exist
            return ~min_ok | _compare(np.less_equal, mins, v)

        def le_max(v: object) -> np.ndarray:  # some value >= v may exist
            return ~max_ok | _compare(np.greater_equal, maxs, v)

        if op == "=":
            return has_not_null & ge_min(values[0]) & le_max(values[0])
        if op == "in":
            if len(values) > IN_SEARCH_MIN_VALUES:  # a join's runtime IN list: up to 1024
                return has_not_null & _in_may_match(min_ok, max_ok, mins, maxs, values)
            hit = np.zeros(len(f), np.bool_)
            for v in values:
                hit |= ge_min(v) & le_max(v)
            return has_not_null & hit
        if op == "<":
            return has_not_null & (~min_ok | _compare(np.less, mins, values[0]))
        if op == "<=":
            return has_not_null & ge_min(values[0])
        if op == ">":
            return has_not_null & (~max_ok | _compare(np.greater, maxs, values[0]))
        if op == ">=":
            return has_not_null & le_max(values[0])
        if op in ("!=", "not_in"):
            # Every non-null value equals one excluded constant only if min == max == that constant.
            single = ((f & EXACT) != 0) & min_ok & max_ok & _compare(np.equal, mins, maxs)
            excluded = np.zeros(len(f), np.bool_)
            for v in values:
                excluded |= _compare(np.equal, mins, v)
            return has_not_null & ~(single & excluded)
        raise ValueError(f"unknown predicate operator {op!r}")

    def segment_entry(self) -> ZoneEntry:
        """The segment-level entry (the last) as Python scalars, for `entry_may_match`."""
        return (int(self.flags[-1]), _scalar(self.mins[-1]), _scalar(self.maxs[-1]))

    def segment_may_match(self, op: str, values: Sequence[object]) -> bool:
        """`may_match(op, values)[-1]`: whether any row of the segment may satisfy it."""
        return entry_may_match(self.segment_entry(), op, values)


ZoneEntry = tuple[int, object, object]  # (flags, min, max) of one zone map entry


def entry_may_match(entry: ZoneEntry, op: str, values: Sequence[object]) -> bool:
    """`ZoneMap.may_match` for one entry, on Python scalars: a tablet with many small rowsets
    asks this once per segment, where building the per-page arrays would cost more than the
    answer saves. `values` are `index_value` results."""
    f, lo, hi = entry
    if op == "is_null":
        return bool(f & HAS_NULL)
    if not f & HAS_NOT_NULL:
        return False  # every other operator needs a non-null value
    if op == "is_not_null":
        return True
    min_ok, max_ok = bool(f & MIN_VALID), bool(f & MAX_VALID)
    if op == "=":
        v = values[0]
        return (not min_ok or lo <= v) and (not max_ok or hi >= v)  # type: ignore[operator]
    if op == "in":
        return any((not min_ok or lo <= v) and (not max_ok or hi >= v)  # type: ignore[operator]
                   for v in values)
    if op == "<":
        return not min_ok or lo < values[0]  # type: ignore[operator]
    if op == "<=":
        return not min_ok or lo <= values[0]  # type: ignore[operator]
    if op == ">":
        return not max_ok or hi > values[0]  # type: ignore[operator]
    if op == ">=":
        return not max_ok or hi >= values[0]  # type: ignore[operator]
    if op in ("!=", "not_in"):
        single = bool(f & EXACT) and min_ok and max_ok and lo == hi
        return not (single and any(lo == v for v in values))
    raise ValueError(f"unknown predicate operator {op!r}")


def _scalar(v: object) -> object:
    """A bound as a Python value (numpy scalars compare exactly the same way, only slower)."""
    return v.item() if isinstance(v, np.generic) else v
