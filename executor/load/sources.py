"""A byte stream in a load format -> a stream of Arrow record batches, one column per file
column the load reads, named after the load's columns.

Every format is parsed by a library reader a block at a time, so a body larger than memory
loads in bounded memory:
- csv, csv_with_names, csv_with_names_and_types: csv_source.py (pyarrow.csv, or Arrow's
  split kernels for multi-byte separators) -> string columns;
- json: json_source.py (the stdlib's C decoder, line by line or element by element) -> string
  columns;
- parquet, orc, arrow: columnar_source.py (pyarrow.parquet / pyarrow.orc / pyarrow.ipc) ->
  typed columns.
A `compress_type` body is decompressed on the fly first (decompress.py). convert.py gives the
columns the table's types; a row the reader rejects (wrong column count, bad JSON) is already
counted here as a filtered row (`stats.skipped_rows`) with Doris' reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa

from executor.load.chunks import READ_BLOCK, CountedStream
from executor.load.columnar_source import arrow_batches, orc_batches, parquet_batches
from executor.load.csv_source import csv_batches
from executor.load.decompress import decompress_error, is_decompress_error, open_decompressed
from executor.load.json_source import json_batches
from executor.load.spec import LoadFailed, LoadSpec, LoadStats

__all__ = ["READ_BLOCK", "CountedStream", "record_batches"]


def record_batches(stream: BinaryIO, spec: LoadSpec, stats: LoadStats,
                   spool_dir: Path | None = None) -> Iterator[pa.RecordBatch]:
    """The parsed blocks of `stream`. `spool_dir` is where parquet/ORC bodies are spooled
    (the server's data dir; the system temp dir when None). Raises LoadFailed for a body that
    cannot be read at all (corrupt compression, not a parquet file, ...)."""
    opts = spec.format
    source = open_decompressed(stream, opts.compress_type)
    if opts.is_csv:
        batches = csv_batches(source, spec, stats)
    elif opts.format == "json":
        batches = json_batches(source, spec, stats)
    elif opts.format == "parquet":
        batches = parquet_batches(source, spec, spool_dir)
    elif opts.format == "orc":
        batches = orc_batches(source, spec, spool_dir)
    else:
        batches = arrow_batches(source, spec)
    try:
        yield from batches
    except (OSError, pa.ArrowInvalid) as e:
        if opts.compress_type is not None and is_decompress_error(e):
            raise decompress_error(opts.compress_type, e) from None
        if isinstance(e, pa.ArrowInvalid):
            raise LoadFailed(f"[DATA_QUALITY_ERROR]{e}") from None
        raise
