"""Bitmap index: per segment and column, a sorted dictionary of the distinct values and one
roaring bitmap of row ordinals per value, plus the null bitmap (seed 003 section 5; Doris
`BitmapIndexWriter` / `BitmapIndexReader`, BE `olap/rowset/segment_v2/bitmap_index_*`).

Pages (all framed and checksummed by storage/segment/page.py):
- BITMAP_DICT pages: consecutive runs of the sorted distinct non-null values, PLAIN-encoded in
  the column's physical layout (fixed-width values at their stored width, LARGEINT / wide
  DECIMAL as 16-byte two's complement, strings as offsets + UTF-8 bytes), about
  DICT_PAGE_BYTES each, LZ4-compressed by the frame. Sorted by the physical value, which is
  exactly how the column's values compare (ints, dates, datetimes, scaled decimals; strings by
  bytes = code points).
- BITMAP pages: the row sets of consecutive dictionary values, about BITMAP_PAGE_BYTES each
  (one large set may fill a page alone), as a var-len list (int64 offsets + bytes), so one
  value's set is sliced out without touching its neighbours. Each entry is a tag byte and the
  payload: tag 0 = sorted little-endian uint32 row ordinals (what a roaring array container
  holds; chosen for small sets so building needs no Python object per value), tag 1 = a
  pyroaring `BitMap.serialize()`. Both read back as a pyroaring `BitMap`.
- one BITMAP_INDEX page (its pointer is in the segment footer): the counts, the sparse index
  (first value of every dictionary page, their ordinals and file pointers), the bitmap pages'
  ordinals and pointers, and the null bitmap (one tagged entry as above):
      u32 values, u32 rows, u32 dict pages D, u32 bitmap pages B, u64 null entry length;
      int64 dict_first[D+1], dict_offset[D], dict_size[D];
      int64 bm_first[B+1], bm_offset[B], bm_size[B];
      null entry (padded to 8); sparse index: PLAIN values (D of them) in the column layout.

A point lookup reads the index page (cached per segment), one dictionary page and one bitmap
page (both through the page cache). `BitmapIndexReader.lookup(op, values)` answers
=, !=, <, <=, >, >=, IN, NOT IN, IS [NOT] NULL with the exact set of row ordinals (SQL
three-valued logic: NULL rows never match a comparison; != and NOT IN are the non-null rows
minus the matches). Constants must be index values (`zone_map.index_value`).

Build cost (loads write the index): np.unique with return_inverse and one stable argsort group
the rows by value; the small sets are contiguous slices of that order, so only sets of at least
ROARING_MIN_ROWS rows become BitMap objects.
"""

from __future__ import annotations

import array
import bisect
import struct
from collections.abc import Callable, Sequence

import numpy as np
from pyroaring import BitMap

from storage.batch import Column
from storage.segment.encoding import (
    Encoding,
    Layout,
    PhysicalLayout,
    decode_values,
    decode_varlen,
    encode_fixed,
    encode_object,
    encode_varlen,
    runs_by_bytes,
)
from storage.segment.footer import PagePointer
from storage.segment.page import PageKind, build_page
from storage.types import STRING, DataType

DICT_PAGE_BYTES = 16 * 1024
BITMAP_PAGE_BYTES = 16 * 1024
ROARING_MIN_ROWS = 64  # smaller row sets are stored as plain uint32 arrays (tag 0)
TAG_ARRAY = 0
TAG_ROARING = 1
BITMAP_OPS = frozenset({"=", "!=", "<", "<=", ">", ">=", "in", "not_in",
                        "is_null", "is_not_null"})
_HEAD = struct.Struct("<IIIIQ")


def supports(layout: PhysicalLayout, is_blob: bool = False) -> bool:
    """Whether a column of this layout can carry a bitmap index (not floats, not blobs)."""
    if is_blob:
        return False
    return not (layout.layout is Layout.FIXED and layout.dtype.kind == "f")


# ---- row-set entries ----------------------------------------------------------------------
def _entry_of_rows(rows: np.ndarray) -> bytes:
    """Tagged bytes of a sorted uint32 row array."""
    if len(rows) < ROARING_MIN_ROWS:
        return bytes((TAG_ARRAY,)) + rows.astype("<u4", copy=False).tobytes()
    return bytes((TAG_ROARING,)) + _bitmap_of(rows).serialize()


def _bitmap_of(rows: np.ndarray) -> BitMap:
    return BitMap(array.array("I", np.ascontiguousarray(rows, dtype=np.uint32).tobytes()))


def decode_entry(raw: bytes | memoryview) -> BitMap:
    """A tagged row-set entry as a BitMap; raises ValueError when it is malformed."""
    if len(raw) < 1:
        raise ValueError("empty bitmap entry")
    tag = raw[0]
    if tag == TAG_ARRAY:
        if (len(raw) - 1) % 4:
            raise ValueError("bitmap entry array is not whole")
        rows = np.frombuffer(raw, dtype="<u4", offset=1)
        if len(rows) > 1 and np.any(rows[1:] <= rows[:-1]):
            raise ValueError("bitmap entry rows are not sorted")
        return _bitmap_of(rows)
    if tag == TAG_ROARING:
        try:
            return BitMap.deserialize(bytes(raw[1:]))
        except (ValueError, MemoryError, OverflowError) as e:  # what pyroaring raises
            raise ValueError(f"bitmap entry does not deserialize: {e}") from None
    raise ValueError(f"unknown bitmap entry tag {tag}")


# ---- physical value runs --------------------------------------------------------------------
def _encode_values(values: Column, layout: PhysicalLayout) -> bytes:
    if layout.layout is Layout.VARLEN:
        assert values.offsets is not None
        return encode_varlen(values.offsets, values.data, Encoding.PLAIN)
    if layout.layout is Layout.OBJECT_INT:
        return encode_object(values.data, Encoding.PLAIN)
    return encode_fixed(values.data, Encoding.PLAIN)


def _sorted_distinct(col: Column, layout: PhysicalLayout, rows: np.ndarray
                     ) -> tuple[Column, np.ndarray]:
    """(sorted distinct values of `rows` of `col` as a Column, each row's value ordinal)."""
    if layout.layout is Layout.VARLEN:
        from storage.segment.varlen_dict import dictionary, group_values

        assert col.offsets is not None
        piece = col.take(rows)
        assert piece.offsets is not None
        offs = (piece.offsets - piece.offsets[0]).astype(np.int64)
        data = piece.data[piece.offsets[0]:piece.offsets[-1]]
        distinct, codes = dictionary(offs, data, group_values(offs, data))
        inverse = codes.astype(np.int64)
        dict_offsets = np.zeros(len(distinct) + 1, np.int64)
        np.cumsum([len(v) for v in distinct], out=dict_offsets[1:])
        blob = np.frombuffer(b"".join(distinct), np.uint8).copy() if distinct else \
            np.zeros(0, np.uint8)
        return Column(col.type, blob, None, dict_offsets), inverse
    values = col.data[rows]
    if layout.layout is Layout.OBJECT_INT:
        distinct_list = sorted(set(values.tolist()))
        where = {v: i for i, v in enumerate(distinct_list)}
        inverse = np.fromiter((where[v] for v in values.tolist()), np.int64, len(values))
        distinct_obj = np.empty(len(distinct_list), dtype=object)
        distinct_obj[:] = distinct_list
        return Column(col.type, distinct_obj, None), inverse
    uniq, inverse = np.unique(values.astype(layout.dtype, copy=False), return_inverse=True)
    return Column(col.type, uniq, None), inverse.reshape(-1).astype(np.int64)


def write_bitmap_index(col: Column, layout: PhysicalLayout,
                       write: Callable[[bytes], PagePointer]) -> PagePointer:
    """Write the dictionary and bitmap pages of a whole column with `write` (appends one page
    to the segment file and returns where) and then the BITMAP_INDEX page; returns its
    pointer (what the segment footer records)."""
    n = len(col)
    validity = col.validity
    if validity is None:
        valid_rows = np.arange(n, dtype=np.int64)
        null_rows = np.zeros(0, np.uint32)
    else:
        valid_rows = np.flatnonzero(validity)
        null_rows = np.flatnonzero(~validity).astype(np.uint32)
    distinct, inverse = _sorted_distinct(col, layout, valid_rows)
    d = len(distinct)
    # rows grouped by value ordinal, ascending within each value (stable sort)
    order = np.argsort(inverse, kind="stable")
    grouped = valid_rows[order].astype(np.uint32)
    counts = np.bincount(inverse, minlength=d).astype(np.int64)
    bounds = np.zeros(d + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])

    # dictionary pages
    if layout.layout is Layout.VARLEN:
        assert distinct.offsets is not None
        value_sizes = np.diff(distinct.offsets) + 8
    else:
        value_sizes = np.full(d, layout.width, np.int64)
    dict_runs = runs_by_bytes(value_sizes, DICT_PAGE_BYTES)
    dict_first, dict_ptrs = [], []
    for a, b in dict_runs:
        piece = distinct.slice(a, b)
        dict_ptrs.append(write(build_page(PageKind.BITMAP_DICT, _encode_values(piece, layout),
                                          b - a)))
        dict_first.append(a)
    dict_first.append(d)

    # bitmap pages: entry sizes estimated from the row counts (array: 4 bytes a row)
    entry_sizes = np.where(counts < ROARING_MIN_ROWS, 1 + 4 * counts,
                           1 + np.minimum(4 * counts, 8 + 2 * counts)) + 8
    bm_first, bm_ptrs = [], []
    small = counts < ROARING_MIN_ROWS
    for a, b in runs_by_bytes(entry_sizes, BITMAP_PAGE_BYTES):
        if small[a:b].all():
            # every set is a slice of `grouped`: one tag byte in front of each, vectorized
            rows = grouped[bounds[a]:bounds[b]]
            body = _tagged_arrays(rows, counts[a:b])
        else:
            entries = [_entry_of_rows(grouped[bounds[i]:bounds[i + 1]]) for i in range(a, b)]
            offsets = np.zeros(b - a + 1, np.int64)
            np.cumsum([len(e) for e in entries], out=offsets[1:])
            body = offsets.tobytes() + b"".join(entries)
        bm_ptrs.append(write(build_page(PageKind.BITMAP, body, b - a)))
        bm_first.append(a)
    bm_first.append(d)

    null_entry = _entry_of_rows(null_rows)
    sparse = distinct.take(np.asarray(dict_first[:-1], np.int64)) if d else distinct
    meta = b"".join((
        _HEAD.pack(d, n, len(dict_ptrs), len(bm_ptrs), len(null_entry)),
        np.asarray(dict_first, np.int64).tobytes(),
        np.asarray([p.offset for p in dict_ptrs], np.int64).tobytes(),
        np.asarray([p.size for p in dict_ptrs], np.int64).tobytes(),
        np.asarray(bm_first, np.int64).tobytes(),
        np.asarray([p.offset for p in bm_ptrs], np.int64).tobytes(),
        np.asarray([p.size for p in bm_ptrs], np.int64).tobytes(),
        null_entry, b"\0" * (-len(null_entry) % 8),
        _encode_values(sparse, layout),
    ))
    return write(build_page(PageKind.BITMAP_INDEX, meta, d))


def _tagged_arrays(rows: np.ndarray, counts: np.ndarray) -> bytes:
    """A BITMAP page body of small sets: var-len entries `TAG_ARRAY + rows` built without a
    Python object per set (the rows of consecutive values are consecutive in `rows`)."""
    k = len(counts)
    sizes = 1 + 4 * counts
    offsets = np.zeros(k + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    out = np.zeros(int(offsets[-1]), np.uint8)
    row_bytes = rows.astype("<u4", copy=False).view(np.uint8)
    # byte positions of each entry's payload: everything but the tag bytes
    payload = np.ones(len(out), np.bool_)
    payload[offsets[:-1]] = False
    out[payload] = row_bytes
    out[offsets[:-1]] = TAG_ARRAY
    return offsets.tobytes() + out.tobytes()


# ---- reading --------------------------------------------------------------------------------
class BitmapIndex:
    """The parsed BITMAP_INDEX page of one column of one segment (immutable, cached in the
    segment metadata)."""

    __slots__ = ("bm_first", "bm_offset", "bm_size", "dict_first", "dict_offset", "dict_size",
                 "nbytes", "nulls", "num_rows", "num_values", "sparse")

    def __init__(self, num_values: int, num_rows: int, dict_first: np.ndarray,
                 dict_offset: np.ndarray, dict_size: np.ndarray, bm_first: np.ndarray,
                 bm_offset: np.ndarray, bm_size: np.ndarray, nulls: BitMap,
                 sparse: Column) -> None:
        self.num_values = num_values
        self.num_rows = num_rows
        self.dict_first = dict_first
        self.dict_offset = dict_offset
        self.dict_size = dict_size
        self.bm_first = bm_first
        self.bm_offset = bm_offset
        self.bm_size = bm_size
        self.nulls = nulls
        self.sparse = sparse
        self.nbytes = 256 + 48 * (len(dict_offset) + len(bm_offset)) + len(sparse.data) * 2

    @staticmethod
    def parse(body: bytes, layout: PhysicalLayout, dtype: DataType, num_rows: int,
              data_end: int) -> BitmapIndex:
        """Decode and validate a BITMAP_INDEX page body (`dtype`: the column's stored type);
        raises ValueError."""
        if len(body) < _HEAD.size:
            raise ValueError("bitmap index page is too short")
        d, rows, nd, nb, null_len = _HEAD.unpack_from(body, 0)
        if rows != num_rows:
            raise ValueError(f"bitmap index covers {rows} rows, the segment has {num_rows}")
        pos = _HEAD.size
        need = pos + 8 * (3 * nd + 1 + 3 * nb + 1)
        if len(body) < need + null_len:
            raise ValueError("bitmap index page is too short for its tables")

        def take(count: int) -> np.ndarray:
            nonlocal pos
            out = np.frombuffer(body, np.int64, count=count, offset=pos).copy()
            pos += 8 * count
            return out

        dict_first, dict_offset, dict_size = take(nd + 1), take(nd), take(nd)
        bm_first, bm_offset, bm_size = take(nb + 1), take(nb), take(nb)
        for first, offset, size in ((dict_first, dict_offset, dict_size),
                                    (bm_first, bm_offset, bm_size)):
            if (first[0] != 0 or first[-1] != d or np.any(np.diff(first) <= 0)
                    or np.any(offset < 0) or np.any(size <= 0)
                    or np.any(offset + size > data_end)):
                raise ValueError("bitmap index page tables are inconsistent")
        nulls = decode_entry(memoryview(body)[pos:pos + null_len])
        pos += null_len + (-null_len % 8)
        sparse = decode_values(body, pos, nd, layout, dtype, Encoding.PLAIN)
        if (len(nulls) and nulls.max() >= num_rows) or len(nulls) > num_rows:
            raise ValueError("bitmap index null rows outside the segment")
        return BitmapIndex(d, rows, dict_first, dict_offset, dict_size, bm_first, bm_offset,
                           bm_size, nulls, sparse)


# (page number) -> the decoded dictionary page (values) / bitmap page (var-len entries)
PageLoader = Callable[[int], Column]


class BitmapIndexReader:
    """Lookups in one column's bitmap index. Pages come from the `dict_page` / `bitmap_page`
    loaders (the segment reader: page cache, CRC checks, corruption errors)."""

    def __init__(self, index: BitmapIndex, layout: PhysicalLayout,
                 dict_page: PageLoader, bitmap_page: PageLoader) -> None:
        self.index = index
        self.layout = layout
        self._dict_page = dict_page
        self._bitmap_page = bitmap_page

    # ---- dictionary ---------------------------------------------------------------------
    def _bisect(self, col: Column, key: object, right: bool) -> int:
        """Position of `key` among the sorted values of `col` (bisect_left / bisect_right)."""
        layout = self.layout.layout
        if layout is Layout.FIXED:
            return int(np.searchsorted(col.data, np.array(key, dtype=col.data.dtype),
                                       side="right" if right else "left"))
        if layout is Layout.OBJECT_INT:
            values = col.data.tolist()
            return (bisect.bisect_right if right else bisect.bisect_left)(values, key)
        assert col.offsets is not None
        offsets, data = col.offsets, col.data
        lo, hi = 0, len(offsets) - 1
        while lo < hi:  # a few slices per lookup, no list of the whole page
            mid = (lo + hi) // 2
            v = data[offsets[mid]:offsets[mid + 1]].tobytes()
            if v < key or (right and v == key):  # type: ignore[operator]
                lo = mid + 1
            else:
                hi = mid
        return lo

    def seek(self, key: object) -> tuple[int, bool]:
        """(ordinal of the first dictionary value >= key, whether it equals key): the sparse
        index picks the one dictionary page that can hold it."""
        idx = self.index
        if idx.num_values == 0:
            return 0, False
        page = self._bisect(idx.sparse, key, right=True) - 1
        if page < 0:
            return 0, False
        values = self._dict_page(page)
        pos = self._bisect(values, key, right=False)
        exact = pos < len(values) and _value(values, pos, self.layout) == key
        return int(idx.dict_first[page]) + pos, exact

    # ---- bitmaps ------------------------------------------------------------------------
    def bitmap(self, ordinal: int) -> BitMap:
        """The rows holding dictionary value `ordinal`."""
        idx = self.index
        page = int(np.searchsorted(idx.bm_first, ordinal, side="right")) - 1
        entries = self._bitmap_page(page)
        local = ordinal - int(idx.bm_first[page])
        assert entries.offsets is not None
        a, b = int(entries.offsets[local]), int(entries.offsets[local + 1])
        return decode_entry(entries.data.data[a:b])

    def union(self, lo: int, hi: int) -> BitMap:
        """Rows holding any dictionary value with ordinal in [lo, hi)."""
        idx = self.index
        out = BitMap()
        if hi <= lo:
            return out
        first = int(np.searchsorted(idx.bm_first, lo, side="right")) - 1
        last = int(np.searchsorted(idx.bm_first, hi - 1, side="right")) - 1
        arrays: list[np.ndarray] = []
        parts: list[BitMap] = []
        for page in range(first, last + 1):
            entries = self._bitmap_page(page)
            assert entries.offsets is not None
            base = int(idx.bm_first[page])
            a = max(lo, base) - base
            b = min(hi, int(idx.bm_first[page + 1])) - base
            offs = entries.offsets
            data = entries.data
            starts = offs[a:b]
            sizes = offs[a + 1:b + 1] - starts
            if np.all(data[starts] == TAG_ARRAY) and not np.any((sizes - 1) % 4):
                # only plain arrays: drop the tag bytes and read the rest as one array
                piece = data[int(offs[a]):int(offs[b])]
                keep = np.ones(len(piece), np.bool_)
                keep[starts - offs[a]] = False
                arrays.append(np.frombuffer(piece[keep].tobytes(), "<u4"))
                continue
            for k in range(a, b):
                parts.append(decode_entry(data.data[int(offs[k]):int(offs[k + 1])]))
        if arrays:
            out |= _bitmap_of(np.concatenate(arrays))
        if parts:
            out |= BitMap.union(*parts)
        return out

    def non_null(self) -> BitMap:
        rows = BitMap()
        rows.add_range(0, self.index.num_rows)
        return rows - self.index.nulls

    # ---- predicates ---------------------------------------------------------------------
    def ordinal_range(self, op: str, key: object) -> tuple[int, int]:
        """Dictionary ordinals [lo, hi) of the values satisfying `value op key` (a range op)."""
        pos, exact = self.seek(key)
        n = self.index.num_values
        after = pos + 1 if exact else pos  # first ordinal > key
        return {"<": (0, pos), "<=": (0, after), ">": (after, n), ">=": (pos, n)}[op]

    def cost(self, op: str, values: Sequence[object]) -> int:
        """Bitmaps `lookup` reads (an upper bound for IN lists): the fallback rule's input."""
        if op in ("is_null", "is_not_null"):
            return 0
        if op in ("=", "!=", "in", "not_in"):
            return len(values)
        lo, hi = self.ordinal_range(op, values[0])
        span = hi - lo
        return min(span, self.index.num_values - span)

    def keeps_most(self, op: str, values: Sequence[object]) -> bool:
        """Whether `op` is a negative test (!=, NOT IN, IS NOT NULL, or a range over more than
        half of the dictionary): its rows are the non-null rows minus a few bitmaps, usually
        most of the segment."""
        if op in ("!=", "not_in", "is_not_null"):
            return True
        if op in ("<", "<=", ">", ">="):
            lo, hi = self.ordinal_range(op, values[0])
            return (hi - lo) * 2 > self.index.num_values
        return False

    def restrict(self, op: str, values: Sequence[object], rows: BitMap) -> BitMap:
        """`rows` & lookup(op, values), computed as `rows` minus the few bitmaps of a negative
        test (see keeps_most) instead of building its large result."""
        if op == "is_not_null":
            return rows - self.index.nulls
        if op in ("!=", "not_in"):
            hits = self.lookup("in", values)
            return rows - self.index.nulls - hits
        if op in ("<", "<=", ">", ">="):
            lo, hi = self.ordinal_range(op, values[0])
            n = self.index.num_values
            if (hi - lo) * 2 > n:
                return rows - self.index.nulls - self.union(0, lo) - self.union(hi, n)
        return rows & self.lookup(op, values)

    def lookup(self, op: str, values: Sequence[object]) -> BitMap:
        """Rows satisfying `column op values` (values: index values, see the module doc)."""
        if op == "is_null":
            return self.index.nulls.copy()
        if op == "is_not_null":
            return self.non_null()
        if op in ("=", "!=", "in", "not_in"):
            hits = BitMap()
            for v in values:
                ordinal, exact = self.seek(v)
                if exact:
                    hits |= self.bitmap(ordinal)
            return hits if op in ("=", "in") else self.non_null() - hits
        if op not in ("<", "<=", ">", ">="):
            raise ValueError(f"the bitmap index does not answer {op!r}")
        lo, hi = self.ordinal_range(op, values[0])
        n = self.index.num_values
        if (hi - lo) * 2 <= n:
            return self.union(lo, hi)
        # the complement reads fewer bitmaps
        return self.non_null() - (self.union(0, lo) | self.union(hi, n))


def _value(col: Column, pos: int, layout: PhysicalLayout) -> object:
    if layout.layout is Layout.VARLEN:
        assert col.offsets is not None
        return col.data[col.offsets[pos]:col.offsets[pos + 1]].tobytes()
    v = col.data[pos]
    return int(v) if layout.layout is Layout.OBJECT_INT or col.data.dtype.kind in "iub" else v


def decode_dict_page(body: bytes, num_values: int, layout: PhysicalLayout,
                     dtype: DataType) -> Column:
    """A BITMAP_DICT page body as a Column of the stored type; raises ValueError."""
    return decode_values(body, 0, num_values, layout, dtype, Encoding.PLAIN)


def decode_bitmap_page(body: bytes, num_entries: int) -> Column:
    """A BITMAP page body as a var-len Column of its tagged entries; raises ValueError."""
    offsets, data = decode_varlen(body, 0, num_entries, Encoding.PLAIN)
    if num_entries and np.any(np.diff(offsets) < 1):
        raise ValueError("empty bitmap entry")
    return Column(STRING, data, None, offsets)
