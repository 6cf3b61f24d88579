"""Segment files, first format: one Arrow IPC file per segment.

This is the interim on-disk format behind `RowsetWriter` and `TabletReader`; the v1 columnar
format of DESIGN.md section 7 (pages, encodings, zone maps, short-key index) replaces it behind
the same two functions. Files are written to a temporary name, fsynced, renamed into place and
the directory fsynced, so a crash leaves either the whole file or none.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from storage.batch import Batch
from storage.types import DataType

FORMAT_TAG = b"shaledb-segment-arrow-v0"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, payload: bytes | memoryview) -> None:
    """Write bytes to `path` so that readers and crashes see all of it or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_segment(path: Path, batch: Batch) -> int:
    """Write one segment; returns its size in bytes."""
    rb = batch.to_arrow()
    schema = rb.schema.with_metadata({b"format": FORMAT_TAG})
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, schema) as writer:
        writer.write_batch(rb.replace_schema_metadata(schema.metadata))
    buf = sink.getvalue()
    write_atomic(path, memoryview(buf))
    return buf.size


def read_segment(path: Path, names: Sequence[str], types: Sequence[DataType]) -> Batch:
    """Read the named columns of a segment (names matched case-insensitively)."""
    with pa.memory_map(str(path), "r") as source:
        table = ipc.open_file(source).read_all()
    lower = {n.lower(): i for i, n in enumerate(table.schema.names)}
    arrays = [table.column(lower[n.lower()]) for n in names]
    sub = pa.table(arrays, names=list(names))
    return Batch.from_arrow(sub, types)
