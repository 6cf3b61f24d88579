"""Segment files (format v1, DESIGN.md section 7): the public API of the segment package.

A segment is one immutable, sorted, columnar file of a rowset. `write_segment` writes one from a
Batch already sorted by the key columns; `SegmentReader` opens it and scans it with the short key,
zone map and ordinal indexes (Doris `segment_v2`, seed 003); `read_segment` reads whole columns.
The file layout is documented at the top of `writer.py`.

The names are loaded on first use (PEP 562): `storage.indexes` builds on
`storage.segment.encoding`, and the reader and writer build on `storage.indexes`, so importing the
package must not import the reader and writer eagerly.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from storage.batch import Batch
from storage.types import DataType

if TYPE_CHECKING:
    from storage.segment.reader import SegmentReader
    from storage.segment.writer import SegmentInfo, write_segment

__all__ = ["SegmentInfo", "SegmentReader", "read_segment", "write_segment"]


def __getattr__(name: str) -> object:
    if name == "SegmentReader":
        from storage.segment.reader import SegmentReader

        return SegmentReader
    if name in ("SegmentInfo", "write_segment"):
        from storage.segment import writer

        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_segment(path: Path, names: Sequence[str], types: Sequence[DataType]) -> Batch:
    """Read the named columns of a whole segment (names matched case-insensitively)."""
    from storage.segment.reader import SegmentReader

    with SegmentReader(path, {n.lower(): t for n, t in zip(names, types)}) as reader:
        batches = list(reader.read(names, batch_size=max(reader.num_rows, 1)))
    if not batches:
        return Batch.empty(names, types)
    return Batch.concat(batches)
