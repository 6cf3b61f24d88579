"""Page framing: the header, LZ4 compression and CRC32 every page of a segment file carries.

A page is the unit of I/O and integrity: data pages (one column's values for a run of rows) and
index pages (ordinal index, zone map, short key) share one frame, as in Doris `PageIO`:

    header (24 bytes, little-endian):
        u8  kind          PageKind (data, ordinal, zone map, short key, bitmap index, bloom)
        u8  encoding      data pages: encoding.Encoding; index pages: 0
        u8  flags         bit0 LZ4 body, bit1 validity bitmap present, bit2 all values null
        u8  reserved      0
        u32 num_rows      rows (data pages) or entries (index pages)
        u32 null_count
        u32 raw_size      size of the body before compression
        u32 stored_size   size of the body as stored
        u32 reserved      0
    body (stored_size bytes; LZ4 block compressed when flag bit0)
    u32 crc32            zlib.crc32 of header + stored body

The body is compressed only when LZ4 makes it smaller, so random data costs no decompression.
The CRC covers every stored byte, so a flipped bit anywhere in a page is caught before decoding.
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass

import lz4.block

HEADER = struct.Struct("<BBBBIIIII")
CRC = struct.Struct("<I")
FRAME_OVERHEAD = HEADER.size + CRC.size

FLAG_LZ4 = 1
FLAG_VALIDITY = 2
FLAG_ALL_NULL = 4
_KNOWN_FLAGS = FLAG_LZ4 | FLAG_VALIDITY | FLAG_ALL_NULL


class PageKind(enum.IntEnum):
    DATA = 1
    ORDINAL = 2
    ZONE_MAP = 3
    SHORT_KEY = 4
    BITMAP_DICT = 5  # bitmap index: a run of the sorted dictionary (indexes/bitmap_index.py)
    BITMAP = 6  # bitmap index: the row sets of a run of dictionary values
    BITMAP_INDEX = 7  # bitmap index: counts, sparse index, page tables, null rows
    BLOOM_FILTER = 8  # one column's bloom filters, one per data page (indexes/bloom_filter.py)


class PageCorrupted(ValueError):
    """A page failed its checks; the segment reader turns it into the user-facing error."""


@dataclass(frozen=True, slots=True)
class PageHeader:
    kind: int
    encoding: int
    flags: int
    num_rows: int
    null_count: int
    raw_size: int
    stored_size: int


def build_page(
    kind: PageKind,
    body: bytes,
    num_rows: int,
    *,
    encoding: int = 0,
    flags: int = 0,
    null_count: int = 0,
) -> bytes:
    """Frame `body` (compressing it when that saves space) and append its CRC32."""
    stored = body
    if len(body) >= 64:
        packed = lz4.block.compress(body, store_size=False)
        if len(packed) < len(body):
            stored, flags = packed, flags | FLAG_LZ4
    header = HEADER.pack(
        int(kind), encoding, flags, 0, num_rows, null_count, len(body), len(stored), 0
    )
    crc = zlib.crc32(stored, zlib.crc32(header))
    return b"".join((header, stored, CRC.pack(crc)))


def parse_page(page: bytes, kind: PageKind) -> tuple[PageHeader, bytes]:
    """Check the frame in `page` (exactly one page) and return its header and raw body.

    The body is always a fresh `bytes` object (never a view of the file), so arrays decoded from
    it stay valid after the file is closed, and it starts 8-byte aligned for numpy/numba.
    """
    buf = memoryview(page)
    if len(buf) < FRAME_OVERHEAD:
        raise PageCorrupted(f"page of {len(buf)} bytes is shorter than its frame")
    fields = HEADER.unpack_from(buf, 0)
    h = PageHeader(fields[0], fields[1], fields[2], fields[4], fields[5], fields[6], fields[7])
    if h.stored_size != len(buf) - FRAME_OVERHEAD:
        raise PageCorrupted(
            f"page stored size {h.stored_size} does not match its extent {len(buf)}"
        )
    (crc,) = CRC.unpack_from(buf, len(buf) - CRC.size)
    if zlib.crc32(buf[: len(buf) - CRC.size]) != crc:
        raise PageCorrupted("page checksum mismatch")
    if h.kind != int(kind):
        raise PageCorrupted(f"expected a {kind.name} page, found page kind {h.kind}")
    if h.flags & ~_KNOWN_FLAGS or fields[3] or fields[8]:
        raise PageCorrupted("page header has unknown flags")
    stored = buf[HEADER.size : HEADER.size + h.stored_size]
    if h.flags & FLAG_LZ4:
        try:
            body = lz4.block.decompress(stored, uncompressed_size=h.raw_size)
        except lz4.block.LZ4BlockError as e:
            raise PageCorrupted(f"page does not decompress: {e}") from None
        if len(body) != h.raw_size:
            raise PageCorrupted("page decompressed to the wrong size")
    else:
        if h.raw_size != h.stored_size:
            raise PageCorrupted("uncompressed page with raw size != stored size")
        body = bytes(stored)
    return h, body
