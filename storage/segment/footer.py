"""Segment file header, footer and trailer: where everything in the file is, and its checksum.

Doris `SegmentFooterPB` + the 12-byte tail; here the footer is JSON (small: per-page data lives in
the index pages it points to) followed by a fixed trailer:

    file start:  magic "SHALESEG" | u32 format version | u32 0                 (16 bytes)
    file end:    footer JSON | u32 footer length | u32 crc32(footer) | magic  (16-byte trailer)

A reader checks both magics, the version, the footer length and CRC before trusting any offset,
then checks every offset it follows against the file's data region.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from mmap import mmap

Buffer = bytes | mmap

MAGIC = b"SHALESEG"
FORMAT_VERSION = 1
HEADER = struct.Struct("<8sII")
TRAILER = struct.Struct("<II8s")


@dataclass(frozen=True, slots=True)
class PagePointer:
    offset: int
    size: int

    def to_json(self) -> list[int]:
        return [self.offset, self.size]

    @staticmethod
    def from_json(v: object) -> PagePointer:
        if not (isinstance(v, list) and len(v) == 2 and all(type(x) is int and x >= 0 for x in v)):
            raise ValueError("bad page pointer")
        return PagePointer(v[0], v[1])


@dataclass(frozen=True, slots=True)
class ColumnFooter:
    name: str
    type_sql: str  # DataType.sql() of the written column
    num_pages: int
    null_count: int
    ordinal: PagePointer  # ORDINAL index page
    zone_map: PagePointer  # ZONE_MAP index page
    # Optional indexes (issue 14): absent from the JSON when the column has none, so segments
    # written before them read unchanged.
    bitmap_index: PagePointer | None = None  # BITMAP_INDEX page (indexes/bitmap_index.py)
    bloom_filter: PagePointer | None = None  # BLOOM_FILTER page (indexes/bloom_filter.py)
    bloom_filter_fpp: float | None = None  # the FPP the bloom filters were sized for


@dataclass(frozen=True, slots=True)
class ShortKeyFooter:
    columns: tuple[str, ...]  # the prefix columns actually indexed (after the 36-byte rule)
    page: PagePointer
    num_entries: int


@dataclass(frozen=True, slots=True)
class SegmentFooter:
    num_rows: int
    key_columns: tuple[str, ...]
    columns: tuple[ColumnFooter, ...]
    short_key: ShortKeyFooter | None

    def encode(self) -> bytes:
        """Footer JSON + trailer, ready to append to the file."""
        doc = {
            "format_version": FORMAT_VERSION,
            "num_rows": self.num_rows,
            "key_columns": list(self.key_columns),
            "short_key": None
            if self.short_key is None
            else {
                "columns": list(self.short_key.columns),
                "page": self.short_key.page.to_json(),
                "entries": self.short_key.num_entries,
            },
            "columns": [_column_json(c) for c in self.columns],
        }
        body = json.dumps(doc, separators=(",", ":")).encode("utf-8")
        return body + TRAILER.pack(len(body), zlib.crc32(body), MAGIC)

    @staticmethod
    def decode(body: bytes) -> SegmentFooter:
        """Parse footer JSON already checked against its CRC; raises ValueError on bad fields."""
        try:
            doc = json.loads(body.decode("utf-8"))
            if doc["format_version"] != FORMAT_VERSION:
                raise ValueError(f"unsupported footer version {doc['format_version']}")
            sk = doc["short_key"]
            short_key = (
                None
                if sk is None
                else ShortKeyFooter(
                    tuple(_str(x) for x in sk["columns"]),
                    PagePointer.from_json(sk["page"]),
                    _int(sk["entries"]),
                )
            )
            columns = tuple(
                ColumnFooter(
                    _str(c["name"]),
                    _str(c["type"]),
                    _int(c["pages"]),
                    _int(c["nulls"]),
                    PagePointer.from_json(c["ordinal"]),
                    PagePointer.from_json(c["zone_map"]),
                    _optional_pointer(c, "bitmap_index"),
                    _optional_pointer(c, "bloom_filter"),
                    _optional_fpp(c),
                )
                for c in doc["columns"]
            )
            return SegmentFooter(
                _int(doc["num_rows"]),
                tuple(_str(x) for x in doc["key_columns"]),
                columns,
                short_key,
            )
        except (KeyError, TypeError, AttributeError, UnicodeDecodeError,
                json.JSONDecodeError) as e:
            raise ValueError(f"footer is malformed: {e}") from None


def _column_json(c: ColumnFooter) -> dict[str, object]:
    doc: dict[str, object] = {
        "name": c.name,
        "type": c.type_sql,
        "pages": c.num_pages,
        "nulls": c.null_count,
        "ordinal": c.ordinal.to_json(),
        "zone_map": c.zone_map.to_json(),
    }
    if c.bitmap_index is not None:
        doc["bitmap_index"] = c.bitmap_index.to_json()
    if c.bloom_filter is not None:
        doc["bloom_filter"] = c.bloom_filter.to_json()
        doc["bloom_filter_fpp"] = c.bloom_filter_fpp
    return doc


def _optional_pointer(doc: dict[str, object], key: str) -> PagePointer | None:
    v = doc.get(key)
    return None if v is None else PagePointer.from_json(v)


def _optional_fpp(doc: dict[str, object]) -> float | None:
    v = doc.get("bloom_filter_fpp")
    if v is None:
        return None
    if type(v) not in (int, float) or not 0 < v < 1:  # type: ignore[operator]
        raise ValueError("bad bloom filter fpp in footer")
    return float(v)  # type: ignore[arg-type]


def _int(v: object) -> int:
    if type(v) is not int or v < 0:
        raise ValueError("bad integer in footer")
    return v


def _str(v: object) -> str:
    if not isinstance(v, str):
        # ValueError like every other malformed footer value: the reader reports them all alike
        raise ValueError("bad string in footer")  # noqa: TRY004
    return v


def encode_header() -> bytes:
    return HEADER.pack(MAGIC, FORMAT_VERSION, 0)


def check_header(buf: Buffer) -> None:
    magic, version, reserved = HEADER.unpack_from(buf, 0)
    if magic != MAGIC:
        raise ValueError("bad magic at file start")
    if version != FORMAT_VERSION or reserved:
        raise ValueError(f"unsupported segment format version {version}")


def read_footer(buf: Buffer) -> tuple[SegmentFooter, int]:
    """(footer, offset where the footer starts = end of the data and index region).

    `buf` is the mmap itself: slices copy, `unpack_from` borrows the buffer only for the call.
    """
    size = len(buf)
    if size < HEADER.size + TRAILER.size:
        raise ValueError(f"file of {size} bytes is too short")
    check_header(buf)
    length, crc, magic = TRAILER.unpack_from(buf, size - TRAILER.size)
    if magic != MAGIC:
        raise ValueError("bad magic at file end (truncated?)")
    start = size - TRAILER.size - length
    if start < HEADER.size:
        raise ValueError("footer length exceeds the file")
    body = bytes(buf[start : size - TRAILER.size])
    if zlib.crc32(body) != crc:
        raise ValueError("footer checksum mismatch")
    return SegmentFooter.decode(body), start
