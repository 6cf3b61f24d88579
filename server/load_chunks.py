"""How `shaledb load` cuts a file into Stream Load chunks (the client side, no server imports).

A chunk is a deterministic piece of the file, so a rerun cuts the same chunks and gives each
the same label (`<prefix>_<n>`):
- line formats (csv, csv_with_names, json lines): byte ranges ending on a line boundary, about
  `chunk_size` bytes each, streamed from the file a block at a time (a chunk is never held whole);
  csv_with_names repeats the header line at the head of every chunk;
- parquet: runs of whole row groups of about `chunk_size` decoded bytes, sent as one parquet
  file each (a row group larger than `chunk_size` is a chunk of its own);
- any other format: the whole file as one chunk.

Upstream: none in Doris (its users split files by hand or use a connector); this mirrors what
DataX / SeaTunnel's Doris writers do (batches of a byte budget, one label per batch).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LINE_FORMATS = ("csv", "csv_with_names", "json")
SEND_BLOCK = 1 << 20  # bytes read from the file and written to the socket at a time


@dataclass(frozen=True)
class Chunk:
    """Chunk `index` (1-based) of the file: bytes [start, end) for line formats, row groups
    [start, end) for parquet. `nbytes` is its share of the file's size (for progress)."""

    index: int
    start: int
    end: int
    nbytes: int
    rows: int | None = None  # known up front for parquet, counted while sending otherwise

    def key(self) -> list[int]:
        return [self.start, self.end]


def parse_size(text: str) -> int:
    """`64MB`, `512KB`, `1G`, `1048576` -> bytes (binary units, as Doris' configs)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    factor = units.get(t[-1:], 1)
    number = t[:-1] if t[-1:] in units else t
    try:
        value = int(float(number) * factor)
    except ValueError:
        raise ValueError(f"invalid size: {text!r} (use e.g. 64MB, 512KB, 1GB)") from None
    if value <= 0:
        raise ValueError(f"invalid size: {text!r} (must be positive)")
    return value


class ChunkedFile:
    """The chunks of one file and the bodies that send them."""

    def __init__(self, path: Path, fmt: str, chunk_size: int) -> None:
        self.path = path
        self.format = fmt
        self.chunk_size = chunk_size
        self.size = path.stat().st_size
        self.header = self._header_line() if fmt == "csv_with_names" else b""

    def _header_line(self) -> bytes:
        with self.path.open("rb") as f:
            return f.readline()

    def chunks(self) -> Iterator[Chunk]:
        if self.format in LINE_FORMATS:
            yield from self._line_chunks()
        elif self.format == "parquet":
            yield from self._row_group_chunks()
        else:
            yield Chunk(1, 0, self.size, self.size)

    def _line_chunks(self) -> Iterator[Chunk]:
        start = len(self.header)
        index = 1
        with self.path.open("rb") as f:
            while start < self.size:
                end = self._line_end(f, start + self.chunk_size)
                header = len(self.header) if index == 1 else 0
                yield Chunk(index, start, end, end - start + header)
                index += 1
                start = end

    def _line_end(self, f: io.BufferedReader, pos: int) -> int:
        """The offset just past the first newline at or after `pos - 1` (or the file's end)."""
        if pos >= self.size:
            return self.size
        f.seek(pos - 1)
        while True:
            block = f.read(64 << 10)
            if not block:
                return self.size
            nl = block.find(b"\n")
            if nl >= 0:
                return f.tell() - len(block) + nl + 1

    def _row_group_chunks(self) -> Iterator[Chunk]:
        import pyarrow.parquet as pq  # only parquet loads pay for it

        meta = pq.ParquetFile(self.path).metadata
        index, first, budget, rows, disk = 1, 0, 0, 0, 0
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            # total_byte_size undercounts dictionary-encoded columns (SSB lineorder: ~30 MB
            # for a million rows that are ~100 MB as CSV); count at least 4 bytes a value
            budget += max(rg.total_byte_size, 4 * rg.num_rows * rg.num_columns)
            rows += rg.num_rows
            disk += sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
            if budget >= self.chunk_size or g == meta.num_row_groups - 1:
                yield Chunk(index, first, g + 1, disk, rows)
                index, first, budget, rows, disk = index + 1, g + 1, 0, 0, 0

    def body(self, chunk: Chunk) -> tuple[int, Iterator[bytes]]:
        """(Content-Length, the body's blocks) of `chunk`, read lazily from the file."""
        if self.format == "parquet":
            data = self.parquet_chunk(chunk)
            return len(data), iter([data])
        return len(self.header) + chunk.end - chunk.start, self._byte_range(chunk)

    def _byte_range(self, chunk: Chunk) -> Iterator[bytes]:
        if self.header:
            yield self.header
        with self.path.open("rb") as f:
            f.seek(chunk.start)
            left = chunk.end - chunk.start
            while left > 0:
                block = f.read(min(SEND_BLOCK, left))
                if not block:
                    raise OSError(f"{self.path} shrank while it was loaded")
                left -= len(block)
                yield block

    def read_row_groups(self, chunk: Chunk) -> Any:  # a pyarrow.Table (pyarrow is untyped)
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.path).read_row_groups(list(range(chunk.start, chunk.end)))

    def parquet_chunk(self, chunk: Chunk) -> bytes:
        """Row groups [start, end) as one parquet file in memory (at most about a chunk)."""
        import pyarrow.parquet as pq

        out = io.BytesIO()
        pq.write_table(self.read_row_groups(chunk), out)
        return out.getvalue()

    def csv_chunk(self, chunk: Chunk, separator: str) -> bytes:
        """Row groups [start, end) as CSV text (`\\N` for NULL), for a server without parquet
        Stream Load. A value holding the separator or a newline fails (no quoting)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv

        table = self.read_row_groups(chunk)
        text = pa.table({name: pc.fill_null(pc.cast(col, pa.string()), "\\N")
                         for name, col in zip(table.column_names, table.columns, strict=True)})
        out = io.BytesIO()
        pacsv.write_csv(text, out, pacsv.WriteOptions(include_header=False, delimiter=separator,
                                                      quoting_style="none"))
        return out.getvalue()

    def parquet_columns(self) -> list[str]:
        import pyarrow.parquet as pq

        return list(pq.ParquetFile(self.path).schema_arrow.names)
