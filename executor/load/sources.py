"""A byte stream in a load format -> a stream of Arrow record batches in the file's column order.

Parsing is pyarrow's (pyarrow.csv's streaming reader today): the stream is read a block at a
time, so a body larger than memory loads in bounded memory. CSV columns arrive as strings
(NULL for `\\N`) and convert.py gives them the table's types; a row with the wrong number of
columns is a filtered row with Doris' reason, not a failed load.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa
import pyarrow.csv as pacsv

from executor.load.spec import LoadSpec, LoadStats

READ_BLOCK = 1 << 20  # bytes pyarrow reads per block (its default block_size)


class CountedStream:
    """A file-like view of `raw` that counts the bytes read and the time spent waiting."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.nbytes = 0
        self.wait_s = 0.0
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        start = time.perf_counter()
        data = self._raw.read(READ_BLOCK if n is None or n < 0 else n)
        self.wait_s += time.perf_counter() - start
        self.nbytes += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


def record_batches(stream: BinaryIO, spec: LoadSpec, stats: LoadStats) -> Iterator[pa.RecordBatch]:
    """The parsed blocks of `stream`, one column per file column (`spec.targets`)."""
    ncols = len(spec.targets)
    sep = spec.separator

    def invalid_row(row: pacsv.InvalidRow) -> str:
        text = (row.text or "").rstrip("\r\n")
        fewer = row.actual_columns < row.expected_columns
        stats.skipped_rows += 1
        stats.filtered(
            f"Reason: actual column number in csv file is {'less' if fewer else 'more'} than "
            f"schema column number.actual number: {row.actual_columns}, column separator: "
            f"[{sep}], line delimiter: [\\n], schema column number: {ncols}; . src line "
            f"[{text}];")
        return "skip"

    names = [f"c{i}" for i in range(ncols)]
    read_opts = pacsv.ReadOptions(column_names=names, skip_rows=spec.format.skip_rows,
                                  block_size=READ_BLOCK, use_threads=False)
    parse_opts = pacsv.ParseOptions(delimiter=sep, quote_char=False, escape_char=False,
                                    newlines_in_values=False, ignore_empty_lines=True,
                                    invalid_row_handler=invalid_row)
    conv_opts = pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                     null_values=["\\N"], strings_can_be_null=True)
    try:
        reader = pacsv.open_csv(stream, read_options=read_opts, parse_options=parse_opts,
                                convert_options=conv_opts)
    except pa.ArrowInvalid as e:
        if "Empty CSV file" not in str(e):
            raise
        return
    while True:
        try:
            yield reader.read_next_batch()
        except StopIteration:
            return
