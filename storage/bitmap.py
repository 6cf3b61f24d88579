"""BITMAP values: how a Doris BITMAP (a set of uint64) is encoded inside a var-len Column.

A BITMAP cell holds the portable serialization of a 64-bit roaring bitmap (pyroaring
`BitMap64`), the same container format Doris' `BitmapValue` uses for large sets. The bytes sit
in the Column's Arrow large_binary layout like any blob; NULL cells hold b"" under a validity
mask. `b""` also decodes to the empty set, so a blob written by older code or an empty default
never fails to load. Everything that combines bitmaps (the memtable and merge-on-read for
BITMAP_UNION columns, the bitmap_* SQL functions) goes through this module.
Upstream: Doris BE `BitmapValue` (util/bitmap_value.h), `bitmap_union` aggregation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyroaring import BitMap64

MAX_VALUE = (1 << 64) - 1
EMPTY: bytes = BitMap64().serialize()


def decode(blob: bytes | None) -> BitMap64:
    """Bitmap of a serialized cell (None or b"" = empty set)."""
    if not blob:
        return BitMap64()
    return BitMap64.deserialize(blob)


def encode(bitmap: BitMap64) -> bytes:
    bitmap.run_optimize()  # run containers make dense id ranges tiny on disk
    return bytes(bitmap.serialize())


def from_values(values: Iterable[int]) -> bytes:
    """Serialized bitmap of the given uint64 values (callers filter the range)."""
    return encode(BitMap64(values))


def single(value: int | None) -> bytes:
    """to_bitmap(v): a one-element bitmap; NULL or a value outside [0, 2^64) gives the empty
    bitmap (Doris' vectorized to_bitmap leaves the row's bitmap empty in those cases)."""
    if value is None or value < 0 or value > MAX_VALUE:
        return EMPTY
    return encode(BitMap64([value]))


def union(blobs: Sequence[bytes]) -> bytes:
    """Union of serialized bitmaps (the BITMAP_UNION aggregation of one group)."""
    if len(blobs) == 1:
        return blobs[0] if blobs[0] else EMPTY
    return encode(BitMap64.union(*(decode(b) for b in blobs)))


def cardinality(blob: bytes | None) -> int:
    return len(decode(blob))


def to_string(blob: bytes | None) -> str:
    """bitmap_to_string: ascending members joined by ',' ('' for the empty set)."""
    return ",".join(str(v) for v in decode(blob))

