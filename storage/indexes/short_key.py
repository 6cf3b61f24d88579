"""Short key (prefix) index: a sparse index over the sorted key prefix, turning key ranges into
row ranges.

Seed 003 section 2 and seed 004 (Doris `ShortKeyIndexBuilder` / `SegmentIterator::
_lookup_ordinal`): every 1024th row contributes one entry, the byte-comparable encoding of its
prefix key; a key range is located by binary search over the entries, then by binary search over
the rows of the one candidate block between two entries.

The prefix: at most `short_key_columns` (<= 3) leading key columns, at most 36 value bytes (fixed
types by their physical width, a DECIMAL(p<=18) counts 8), ending at (and truncating) the first
CHAR / VARCHAR / STRING column; a FLOAT / DOUBLE / HLL / BITMAP column ends it before itself.
Component encoding, so that bytes order == value order with NULL first:
- NULL: 0x00, then width zero bytes for fixed types (so later components stay aligned);
- integers (BOOLEAN, TINYINT..LARGEINT, DATE, DATETIME, DECIMAL unscaled): 0x01 + big-endian
  of (value + 2**(8*width-1)), i.e. two's complement with the sign bit flipped;
- strings: 0x01 + UTF-8 bytes with 0x00 escaped as 0x00 0xFF, then terminator 0x00 0x00
  (escaping keeps "ab" < "ab\\0"), truncated to the bytes the 36-byte budget leaves.
Truncation only makes keys coarser (monotone), so lookups with a truncated search key treat a
strict bound as inclusive; the rows found are always a superset of the matching rows, and the
reader evaluates every predicate exactly afterwards.

Stored as one SHORT_KEY index page: u32 entries, u32 interval, int64 offsets[entries+1], bytes.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from storage.batch import Column
from storage.indexes.zone_map import NotIndexable, index_value
from storage.predicates import INDEXABLE_OPS, ColumnPredicate
from storage.segment.encoding import layout_of, varlen_compare_adjacent, varlen_list
from storage.types import BLOB_KINDS, DataType

SHORT_KEY_INTERVAL = 1024
MAX_SHORT_KEY_BYTES = 36
MAX_SHORT_KEY_COLUMNS = 3
MAX_KEY_RANGES = 256  # IN lists expand to points up to this many ranges, then to [min, max]
_HEAD = struct.Struct("<II")


@dataclass(frozen=True, slots=True)
class KeyPart:
    name: str
    dtype: DataType
    width: int  # fixed types: value bytes; strings: the most encoded bytes kept after the marker
    is_string: bool


def plan_prefix(
    key_columns: Sequence[tuple[str, DataType]], short_key_columns: int
) -> list[KeyPart]:
    """The columns (and their widths) that form the short key, by the Doris rules above."""
    parts: list[KeyPart] = []
    used = 0
    for name, dtype in list(key_columns)[: min(short_key_columns, MAX_SHORT_KEY_COLUMNS)]:
        if dtype.is_float or dtype.kind in BLOB_KINDS:
            break
        if dtype.is_string:
            if used < MAX_SHORT_KEY_BYTES:
                parts.append(KeyPart(name, dtype, MAX_SHORT_KEY_BYTES - used, True))
            break
        layout = layout_of(dtype)
        if used + layout.width > MAX_SHORT_KEY_BYTES:
            break
        parts.append(KeyPart(name, dtype, layout.width, False))
        used += layout.width
    return parts


def encode_component(part: KeyPart, value: object) -> bytes:
    """Untruncated byte-comparable encoding of one physical value (None = NULL)."""
    if value is None:
        return b"\x00" if part.is_string else b"\x00" * (part.width + 1)
    if part.is_string:
        raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)  # type: ignore[call-overload]
        return b"\x01" + raw.replace(b"\x00", b"\x00\xff") + b"\x00\x00"
    bias = 1 << (8 * part.width - 1)
    return b"\x01" + (int(value) + bias).to_bytes(part.width, "big")  # type: ignore[call-overload]


def truncate_key(parts: Sequence[KeyPart], key: bytes) -> tuple[bytes, bool]:
    """Cut a concatenated key to the stored prefix length; returns (key, exact)."""
    limit = sum(p.width + 1 for p in parts)
    return (key, True) if len(key) <= limit else (key[:limit], False)


def encode_row(parts: Sequence[KeyPart], columns: Sequence[Column], row: int) -> bytes:
    """K(row): the stored prefix key of one row of the decoded key columns."""
    pieces = []
    for p, c in zip(parts, columns):
        if c.validity is not None and not c.validity[row]:
            value: object = None
        elif c.offsets is not None:  # raw bytes: no UTF-8 round trip
            value = c.data[c.offsets[row] : c.offsets[row + 1]].tobytes()
        else:
            value = c.data[row]
        pieces.append(encode_component(p, value))
    return truncate_key(parts, b"".join(pieces))[0]


def rows_are_sorted(parts: Sequence[KeyPart], columns: Sequence[Column]) -> bool:
    """True when rows are in non-decreasing prefix-key order (NULL first), checked by value."""
    n = len(columns[0]) if columns else 0
    if n < 2:
        return True
    undecided = np.ones(n - 1, np.bool_)
    for col in columns[: len(parts)]:
        if col.offsets is not None:
            cmp = varlen_compare_adjacent(col.offsets, col.data).astype(np.int8)
        else:
            a, b = col.data[:-1], col.data[1:]
            cmp = np.asarray(a > b, np.int8) - np.asarray(a < b, np.int8)
        if col.validity is not None:
            va, vb = col.validity[:-1], col.validity[1:]
            cmp = np.where(va & vb, cmp, np.asarray(va, np.int8) - np.asarray(vb, np.int8))
        if np.any(undecided & (cmp > 0)):
            return False
        undecided &= cmp == 0
    return True


class ShortKeyIndexBuilder:
    def __init__(self, parts: Sequence[KeyPart], interval: int | None = None) -> None:
        self.parts = list(parts)
        # Read at call time so tests can shrink the interval to get many blocks from few rows.
        self.interval = SHORT_KEY_INTERVAL if interval is None else interval

    def build(self, columns: Sequence[Column], num_rows: int) -> tuple[bytes, int]:
        """(page body, entry count) for the rows 0, interval, 2*interval, ... of `columns`."""
        entries = [encode_row(self.parts, columns, r) for r in range(0, num_rows, self.interval)]
        offsets = np.zeros(len(entries) + 1, np.int64)
        np.cumsum([len(e) for e in entries], out=offsets[1:])
        body = _HEAD.pack(len(entries), self.interval) + offsets.tobytes() + b"".join(entries)
        return body, len(entries)


@dataclass(frozen=True, slots=True)
class KeyBound:
    key: bytes
    inclusive: bool


@dataclass(frozen=True, slots=True)
class KeyRange:
    """Rows r with lower <= K(r)[:len(lower.key)] and K(r)[:len(upper.key)] <= upper (strict
    when not inclusive); None = unbounded."""

    lower: KeyBound | None
    upper: KeyBound | None


class ShortKeyIndex:
    def __init__(self, entries: list[bytes], interval: int, num_rows: int) -> None:
        self.entries = entries
        self.interval = interval
        self.num_rows = num_rows

    @staticmethod
    def parse(body: bytes, num_rows: int) -> ShortKeyIndex:
        count, interval = _HEAD.unpack_from(body, 0)
        expected = -(-num_rows // interval) if interval else -1
        if count != expected:
            raise ValueError("short key index has the wrong number of entries")
        offsets = np.frombuffer(body, np.int64, count=count + 1, offset=_HEAD.size)
        start = _HEAD.size + 8 * (count + 1)
        if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or start + int(offsets[-1]) != len(body):
            raise ValueError("short key entries are inconsistent")
        entries = varlen_list(offsets, np.frombuffer(body, np.uint8, offset=start))
        if any(entries[i] > entries[i + 1] for i in range(len(entries) - 1)):
            raise ValueError("short key entries are not sorted")
        return ShortKeyIndex(entries, interval, num_rows)

    def seek(self, key: bytes, strict: bool, row_key: Callable[[int], bytes]) -> int:
        """First row r with K(r)[:len(key)] > key (strict) or >= key; num_rows when none.

        Binary search over the sparse entries finds the one block that can hold the answer (the
        entry before it is known to be below, the entry at its end known to satisfy), then a
        binary search over that block's rows, decoding only the probed rows' keys.
        """
        width = len(key)
        search = bisect.bisect_right if strict else bisect.bisect_left
        i = search(self.entries, key, key=lambda e: e[:width])
        if i == 0:
            return 0
        lo = (i - 1) * self.interval + 1
        hi = min(i * self.interval, self.num_rows)
        rows = range(lo, hi)
        return lo + search(rows, key, key=lambda r: row_key(r)[:width])

    def row_ranges(
        self, ranges: Sequence[KeyRange], row_key: Callable[[int], bytes]
    ) -> list[tuple[int, int]]:
        out = []
        for kr in ranges:
            lo = 0 if kr.lower is None else self.seek(kr.lower.key, not kr.lower.inclusive, row_key)
            hi = (
                self.num_rows
                if kr.upper is None
                else self.seek(kr.upper.key, kr.upper.inclusive, row_key)
            )
            if hi > lo:
                out.append((lo, hi))
        return out


# ---- predicates -> key ranges -----------------------------------------------------------------
@dataclass(slots=True)
class _Constraint:
    points: set[bytes] | None = None
    lo: KeyBound | None = None
    hi: KeyBound | None = None

    def allows(self, enc: bytes) -> bool:
        if self.lo is not None and (
            enc < self.lo.key or (enc == self.lo.key and not self.lo.inclusive)
        ):
            return False
        return not (
            self.hi is not None
            and (enc > self.hi.key or (enc == self.hi.key and not self.hi.inclusive))
        )


def _tighter(a: KeyBound | None, b: KeyBound, lower: bool) -> KeyBound:
    if a is None or a.key != b.key:
        if a is None or (b.key > a.key) == lower:
            return b
        return a
    return KeyBound(a.key, a.inclusive and b.inclusive)


def _constraint(part: KeyPart, preds: Sequence[ColumnPredicate]) -> _Constraint | None:
    layout = layout_of(part.dtype)
    c = _Constraint()
    used = False
    for p in preds:
        if p.op not in INDEXABLE_OPS:
            continue
        try:
            enc = [encode_component(part, index_value(part.dtype, layout, v)) for v in p.values]
        except NotIndexable:
            continue
        null = encode_component(part, None)
        if p.op in ("=", "in", "is_null"):
            pts = {null} if p.op == "is_null" else set(enc)
            c.points = pts if c.points is None else c.points & pts
        elif p.op in ("<", "<="):
            c.hi = _tighter(c.hi, KeyBound(enc[0], p.op == "<="), lower=False)
        elif p.op in (">", ">="):
            c.lo = _tighter(c.lo, KeyBound(enc[0], p.op == ">="), lower=True)
        elif p.op == "is_not_null":
            c.lo = _tighter(c.lo, KeyBound(null, False), lower=True)
        else:
            continue
        used = True
    if not used:
        return None
    if c.points is not None:
        c.points = {e for e in c.points if c.allows(e)}
    elif c.lo is None:  # only an upper bound: rows from NULL upwards (NULL never matches `<`)
        c.lo = KeyBound(encode_component(part, None), False)
    return c


def key_ranges(
    parts: Sequence[KeyPart], predicates: Mapping[str, Sequence[ColumnPredicate]]
) -> list[KeyRange] | None:
    """Key ranges implied by predicates on the leading prefix columns; None = no constraint.

    Leading columns with `=` / IN / IS NULL multiply into point prefixes; the first column with a
    range (or an IN list too large to expand) ends the key. An empty list means no row matches.
    """
    prefixes = [b""]
    tail: tuple[KeyBound | None, KeyBound | None] | None = None
    used = 0
    for part in parts:
        c = _constraint(part, predicates.get(part.name.lower(), ()))
        if c is None:
            break
        used += 1
        if c.points is not None:
            pts = sorted(c.points)
            if not pts:
                return []
            if len(prefixes) * len(pts) <= MAX_KEY_RANGES:
                prefixes = [p + e for p in prefixes for e in pts]
                continue
            c = _Constraint(lo=KeyBound(pts[0], True), hi=KeyBound(pts[-1], True))
        tail = (c.lo, c.hi)
        break
    if not used:
        return None
    sub = parts[:used]
    out = []
    for prefix in prefixes:
        if tail is None:
            bound = _bound(sub, prefix, True)
            out.append(KeyRange(bound, bound))
            continue
        lo, hi = tail
        lower = (
            _bound(sub, prefix + lo.key, lo.inclusive)
            if lo
            else (_bound(sub, prefix, True) if prefix else None)
        )
        upper = (
            _bound(sub, prefix + hi.key, hi.inclusive)
            if hi
            else (_bound(sub, prefix, True) if prefix else None)
        )
        out.append(KeyRange(lower, upper))
    return out


def _bound(parts: Sequence[KeyPart], key: bytes, inclusive: bool) -> KeyBound:
    cut, exact = truncate_key(parts, key)
    return KeyBound(cut, inclusive or not exact)
