"""Segment writer: one sorted Batch -> one immutable columnar segment file (format v1).

Owns the on-disk layout of a segment (DESIGN.md section 7; Doris `SegmentWriter` /
`ColumnWriter`, seed 003). The file, front to back:

    header        "SHALESEG" | u32 version 1 | u32 0
    data pages    column 0 pages in row order, then column 1 pages, ...
    index pages   per column: ORDINAL page, ZONE_MAP page, [BLOOM_FILTER page], [bitmap
                  index: BITMAP_DICT pages, BITMAP pages, BITMAP_INDEX page]; then one
                  SHORT_KEY page
    footer        JSON (footer.py): rows, key columns, per column name / type / page count /
                  null count / index page pointers, short-key columns and page pointer
    trailer       u32 footer length | u32 crc32(footer) | "SHALESEG"

Every page (page.py) is `24-byte header | body (LZ4 when smaller) | crc32`. A data page holds a
run of rows of one column, about 64 KiB of raw values (fixed types: 65536 // width rows; var-len
types: cut by bytes, at least one row); its body is

    [validity bitmap, LSB first, padded to 8 bytes]   only when the page has nulls
    encoded values                                     absent when every row is null

with values under nulls stored as zero (fixed types) so they cost nothing in FOR / RLE. The
encoding (encoding.py: PLAIN, DICT, RLE, FOR) is chosen per page by estimated size. Index pages:
ordinal (indexes/ordinal.py), zone map per page + segment (indexes/zone_map.py), short key one
entry per 1024 rows (indexes/short_key.py). User-declared indexes (`indexes`, a
SegmentIndexSpec): bloom filters, one per data page (indexes/bloom_filter.py), and the bitmap
index (indexes/bitmap_index.py), for the named columns whose type supports them (floats and
HLL / BITMAP blobs get none; DDL refuses them anyway); the footer records what was written.

Pages are encoded one at a time and streamed to `<path>.tmp` (fileio.AtomicFile), which is
fsynced and renamed into place, so a crash leaves the whole segment or no file.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from storage.batch import Batch, Column, DictColumn
from storage.fileio import AtomicFile
from storage.indexes import bitmap_index, bloom_filter
from storage.indexes.bloom_filter import BloomFilterBuilder
from storage.indexes.ordinal import OrdinalIndexBuilder
from storage.indexes.short_key import (
    KeyPart,
    ShortKeyIndexBuilder,
    plan_prefix,
    rows_are_sorted,
)
from storage.indexes.spec import NO_INDEXES, SegmentIndexSpec
from storage.indexes.zone_map import ZoneMapBuilder
from storage.segment.encoding import (
    FixedStats,
    Layout,
    PhysicalLayout,
    choose_object,
    encode_fixed_best,
    encode_object,
    encode_varlen_best,
    fixed_stats,
    layout_of,
    padded_words,
    runs_by_bytes,
)
from storage.segment.footer import (
    ColumnFooter,
    PagePointer,
    SegmentFooter,
    ShortKeyFooter,
    encode_header,
)
from storage.segment.page import FLAG_ALL_NULL, FLAG_VALIDITY, PageKind, build_page
from storage.types import BLOB_KINDS, DataType

PAGE_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    num_rows: int
    size: int  # bytes on disk


def write_segment(
    path: Path, batch: Batch, key_columns: Sequence[str], short_key_columns: int,
    indexes: SegmentIndexSpec = NO_INDEXES,
) -> SegmentInfo:
    """Write `batch` (already sorted by `key_columns`) as one segment file at `path`.

    `short_key_columns` leading key columns form the prefix index (capped by the Doris rules in
    indexes/short_key.py). Raises ValueError when a key column is missing or the rows are not
    sorted by the short-key prefix (the index would silently return wrong rows otherwise).
    `indexes`: the bitmap indexes and bloom filters to write (storage/indexes/spec.py).
    """
    by_lower = {n.lower(): i for i, n in enumerate(batch.names)}
    if len(by_lower) != len(batch.names):
        raise ValueError(f"duplicate column names in {batch.names}")
    if short_key_columns < 0:
        raise ValueError("short_key_columns must be >= 0")
    keys: list[tuple[str, Column]] = []
    for k in key_columns:
        if k.lower() not in by_lower:
            raise ValueError(f"key column {k!r} is not in the batch")
        i = by_lower[k.lower()]
        keys.append((batch.names[i], batch.columns[i]))
    parts = plan_prefix([(n, c.type) for n, c in keys], short_key_columns)
    prefix_cols = [c for _, c in keys[: len(parts)]]
    if parts and not rows_are_sorted(parts, prefix_cols):
        raise ValueError(f"segment rows are not sorted by key columns {[p.name for p in parts]}")

    num_rows = batch.num_rows
    with AtomicFile(Path(path)) as f:
        out = _Output(f)
        out.write(encode_header())
        built = []
        for name, col in zip(batch.names, batch.columns):
            pages = _ColumnPages(name, col.type, indexes)
            pages.add(col, out, final=True)
            built.append(pages)
        _write_tail(out, batch, built, keys, parts, num_rows, prefix_cols, indexes)
    return SegmentInfo(num_rows, out.offset)


def _write_tail(out: _Output, batch: Batch, built: list[_ColumnPages],
                keys: list[tuple[str, Column]], parts: list[KeyPart], num_rows: int,
                prefix_cols: list[Column], indexes: SegmentIndexSpec) -> None:
    """Every column's index pages, the short-key page and the footer, after the data pages.
    `batch`: the segment's rows when a bitmap index needs them (else only its names)."""
    columns = []
    for name, pages in zip(batch.names, built, strict=True):
        ordinals, zones, blooms = pages.ordinals, pages.zones, pages.blooms
        n_pages = len(ordinals.first_rows)
        ordinal = out.write(build_page(PageKind.ORDINAL, ordinals.finish(), n_pages))
        zone_map = out.write(build_page(PageKind.ZONE_MAP, zones.finish(), n_pages + 1))
        bloom = None if blooms is None else \
            out.write(build_page(PageKind.BLOOM_FILTER, blooms.finish(), n_pages))
        bitmap = None
        if pages.bitmap:
            bitmap = bitmap_index.write_bitmap_index(batch.column(name), pages.layout,
                                                     out.write)
        columns.append(ColumnFooter(name, pages.type.sql(), n_pages, pages.nulls, ordinal,
                                    zone_map, bitmap, bloom,
                                    None if blooms is None else blooms.fpp))
    short_key = None
    if parts:
        body, entries = ShortKeyIndexBuilder(parts).build(prefix_cols, num_rows)
        pointer = out.write(build_page(PageKind.SHORT_KEY, body, entries))
        short_key = ShortKeyFooter(tuple(p.name for p in parts), pointer, entries)
    footer = SegmentFooter(num_rows, tuple(n for n, _ in keys), tuple(columns), short_key)
    out.write(footer.encode())


class _Output:
    """The temporary file plus the running offset (the next page's position)."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.offset = 0

    def write(self, data: bytes | memoryview) -> PagePointer:
        pointer = PagePointer(self.offset, len(data))
        self.f.write(data)
        self.offset += len(data)
        return pointer


def page_bounds(col: Column, layout: PhysicalLayout) -> list[tuple[int, int]]:
    """Row ranges of the data pages: about PAGE_SIZE raw bytes each, at least one row."""
    return _bounds(len(col), layout, col.offsets)


def _bounds(n: int, layout: PhysicalLayout,
            offsets: np.ndarray | None) -> list[tuple[int, int]]:
    """`page_bounds` of n rows (var-len: their offsets)."""
    if offsets is None:
        step = max(1, PAGE_SIZE // layout.width)
        return [(s, min(n, s + step)) for s in range(0, n, step)]
    # Raw bytes of row i: its data plus an 8-byte offset.
    return runs_by_bytes(np.diff(offsets) + 8, PAGE_SIZE)


def _joined_offsets(first: Column, second: Column) -> np.ndarray:
    """The offsets of `first` then `second` (var-len), as their concatenation would have."""
    assert first.offsets is not None and second.offsets is not None
    a = first.offsets - first.offsets[0]
    b = second.offsets[1:] - second.offsets[0] + a[-1]
    return np.concatenate([a, b])


def _bloom_builder(name: str, layout: PhysicalLayout, dtype: DataType,
                   spec: SegmentIndexSpec) -> BloomFilterBuilder | None:
    if name.lower() not in spec.bloom_filter_columns or not bloom_filter.supports(
            layout, dtype.kind in BLOB_KINDS):
        return None
    return BloomFilterBuilder(layout, spec.bloom_filter_fpp)


class _ColumnPages:
    """One column's data pages as rows arrive: `add` encodes every page that is complete
    (a page's rows are fixed by the rows before it: fixed-width pages hold PAGE_SIZE // width
    rows, var-len pages are cut greedily by bytes), keeping the rows of the last, maybe
    partial, page for the next `add`; `final=True` encodes those too. So a column added in
    pieces is cut into the same pages, with the same bytes, as the whole column at once."""

    def __init__(self, name: str, dtype: DataType, indexes: SegmentIndexSpec) -> None:
        self.type = dtype
        self.layout = layout_of(dtype)
        self.ordinals = OrdinalIndexBuilder()
        self.zones = ZoneMapBuilder(self.layout, bounds=dtype.kind not in BLOB_KINDS)
        self.blooms = _bloom_builder(name, self.layout, dtype, indexes)
        self.bitmap = name.lower() in indexes.bitmap_columns and bitmap_index.supports(
            self.layout, dtype.kind in BLOB_KINDS)
        self.nulls = 0
        self.rows = 0  # rows encoded into pages so far
        self._pending: Column | None = None  # rows of the page not yet complete

    @property
    def pending_bytes(self) -> int:
        return 0 if self._pending is None else self._pending.nbytes

    def add(self, col: Column, out: _Output, final: bool) -> None:
        pending, self._pending = self._pending, None
        if pending is not None and len(pending) and (isinstance(col, DictColumn)
                                                     or isinstance(pending, DictColumn)):
            col, pending = Column.concat([pending, col]), None
        lp = 0 if pending is None else len(pending)
        # the pages of pending + col, cut without concatenating them: only the page that
        # holds both pending rows and new ones is a concatenation (one copy less of a value)
        bounds = _bounds(lp + len(col), self.layout, None if col.offsets is None else (
            col.offsets if pending is None else _joined_offsets(pending, col)))

        def piece(start: int, stop: int) -> Column:
            if start >= lp:
                return col.slice(start - lp, stop - lp)
            assert pending is not None
            if stop <= lp:
                return pending.slice(start, stop)
            return Column.concat([pending.slice(start, lp), col.slice(0, stop - lp)])

        if not final and bounds:
            last = piece(*bounds[-1])
            # a copy: a slice would keep the caller's whole arrays alive
            self._pending = last.take(np.arange(len(last)))
            bounds = bounds[:-1]
        for start, stop in bounds:
            self._page(piece(start, stop), out)

    def _page(self, piece: Column, out: _Output) -> None:
        validity = piece.validity
        if validity is not None and validity.all():
            validity = None
        # var-len: the page's bytes as aligned words, read by both the zone map's min / max
        # and the dictionary's grouping (encoding.padded_words)
        words = None if piece.offsets is None else padded_words(piece.data)
        # an integer page without nulls: one pass (encoding.fixed_stats) gives the encoder's
        # runs / base / bit width and the zone map's min / max
        stats = None
        if validity is None and self.layout.is_integer and self.layout.layout is Layout.FIXED \
                and len(piece):
            stats = fixed_stats(piece.data.astype(self.layout.dtype, copy=False))
        self.zones.add_page(piece.data, validity, piece.offsets, words,
                            None if stats is None else (stats.base, stats.high))
        if self.blooms is not None:
            self.blooms.add_page(piece.data, validity, piece.offsets)
        page, page_nulls = encode_data_page(piece, self.layout, validity, words, stats)
        self.nulls += page_nulls
        self.ordinals.add(self.rows, out.offset, len(page))
        self.rows += len(piece)
        out.write(page)


class SegmentStream:
    """A segment written while its rows arrive: `append` takes the next rows of one sorted run
    (each batch sorted, and after the previous one, by the key columns) and encodes the data
    pages they complete into memory (LZ4-compressed pages, a fraction of the raw rows);
    `finish` encodes the last pages and writes the file as `write_segment` would have from
    all the rows at once, byte for byte: the encoding work is done as rows arrive instead
    of all at the end (a two-phase load's precommit then only writes and fsyncs). The key
    columns are kept raw for the short-key index and the sort check. No bitmap index (it
    needs the whole column: `supports` says so)."""

    def __init__(self, names: Sequence[str], types: Sequence[DataType],
                 key_columns: Sequence[str], short_key_columns: int,
                 indexes: SegmentIndexSpec = NO_INDEXES) -> None:
        if not self.supports(names, indexes):
            raise ValueError("a segment with a bitmap index is written whole (write_segment)")
        self.names = tuple(names)
        by_lower = {n.lower(): n for n in self.names}
        missing = [k for k in key_columns if k.lower() not in by_lower]
        if missing:
            raise ValueError(f"key column {missing[0]!r} is not in the batch")
        self._key_columns = [by_lower[k.lower()] for k in key_columns]
        self._short_key_columns = short_key_columns
        self._indexes = indexes
        self._columns = [_ColumnPages(n, t, indexes) for n, t in zip(names, types, strict=True)]
        self._buffers = [io.BytesIO() for _ in self.names]
        self._outs = [_Output(b) for b in self._buffers]
        self._keys: list[Batch] = []
        self._key_bytes = 0
        self.num_rows = 0

    @property
    def nbytes(self) -> int:
        """Bytes held: the encoded pages, the rows of pages not yet complete, the keys."""
        pending = sum(p.pending_bytes for p in self._columns)
        return sum(o.offset for o in self._outs) + pending + self._key_bytes

    @staticmethod
    def supports(names: Sequence[str], indexes: SegmentIndexSpec) -> bool:
        return not any(n.lower() in indexes.bitmap_columns for n in names)

    def append(self, batch: Batch) -> None:
        if batch.names != self.names:
            raise ValueError(f"columns {batch.names} are not the segment's {self.names}")
        for pages, out, col in zip(self._columns, self._outs, batch.columns, strict=True):
            pages.add(col, out, final=False)
        keys = batch.select(self._key_columns).take(np.arange(batch.num_rows))  # a copy
        self._keys.append(keys)
        self._key_bytes += keys.nbytes
        self.num_rows += batch.num_rows

    def finish(self, path: Path) -> SegmentInfo:
        """Write the segment to `path` (fsynced, renamed into place)."""
        keys: list[tuple[str, Column]] = []
        if self._keys:
            keys_batch = Batch.concat(self._keys)
            keys = list(zip(keys_batch.names, keys_batch.columns, strict=True))
        else:
            keys = [(k, Column.from_physical(self._columns[self.names.index(k)].type, []))
                    for k in self._key_columns]
        parts = plan_prefix([(n, c.type) for n, c in keys], self._short_key_columns)
        prefix_cols = [c for _, c in keys[: len(parts)]]
        if parts and not rows_are_sorted(parts, prefix_cols):
            raise ValueError(
                f"segment rows are not sorted by key columns {[p.name for p in parts]}")
        with AtomicFile(Path(path)) as f:
            out = _Output(f)
            out.write(encode_header())
            for pages, buf, col_out in zip(self._columns, self._buffers, self._outs):
                pages.add(Column.from_physical(pages.type, []), col_out, final=True)
                base = out.offset
                pages.ordinals.offsets = [base + o for o in pages.ordinals.offsets]
                out.write(buf.getbuffer())
                buf.close()
            names_only = Batch(self.names, tuple(Column.from_physical(p.type, [])
                                                 for p in self._columns))
            _write_tail(out, names_only, self._columns, keys, parts, self.num_rows,
                        prefix_cols, self._indexes)
        self._buffers = []
        return SegmentInfo(self.num_rows, out.offset)


def encode_data_page(
    col: Column, layout: PhysicalLayout, validity: np.ndarray | None,
    words: np.ndarray | None = None, stats: FixedStats | None = None,
) -> tuple[bytes, int]:
    """(framed DATA page, null count) for one page's rows (`words`: var-len, the
    `padded_words` of col.data; `stats`: fixed width without nulls, `fixed_stats` of the
    values; either when the caller has it)."""
    n = len(col)
    nulls = 0 if validity is None else n - int(np.count_nonzero(validity))
    if n and nulls == n:
        return build_page(PageKind.DATA, b"", n, flags=FLAG_ALL_NULL, null_count=nulls), nulls
    head = b""
    flags = 0
    if validity is not None:
        bitmap = np.packbits(validity, bitorder="little").tobytes()
        head = bitmap + b"\0" * (-len(bitmap) % 8)
        flags = FLAG_VALIDITY
    if layout.layout is Layout.VARLEN:
        assert col.offsets is not None
        enc, body = encode_varlen_best(col.offsets, col.data, words)
    elif layout.layout is Layout.OBJECT_INT:
        values = col.data if validity is None else np.where(validity, col.data, 0)
        enc = choose_object(values)
        body = encode_object(values, enc)
    else:
        values = col.data.astype(layout.dtype, copy=False)
        if validity is not None:
            values = np.where(validity, values, np.zeros(1, layout.dtype))
        enc, body = encode_fixed_best(values, stats if validity is None else None)
    page = build_page(
        PageKind.DATA, head + body, n, encoding=int(enc), flags=flags, null_count=nulls
    )
    return page, nulls
