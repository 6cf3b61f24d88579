"""SELECT .. INTO OUTFILE: a query's result batches -> files in CSV, parquet or ORC.

Owns Doris' OUTFILE semantics: the properties (`column_separator`, `line_delimiter`,
`max_file_size` (5MB..2GB, default 1GB), `success_file_name`, `delete_existing_files`), the file
names `<prefix><query_id>_<n>.<ext>`, and the one result row (FileNumber, TotalRows, FileSize,
URL). Files are written with pyarrow's writers, each into a temporary name in its directory,
fsynced and renamed into place, so a reader never sees half a file; a failed query removes what
it wrote. Paths are confined to the export directory (executor/file_dirs.py). Values keep
Doris' types in parquet / ORC (DATE, TIMESTAMP, DECIMAL); CSV holds Doris' text forms with
`\\N` for NULL. Upstream: Doris `OutFileClause` (FE), `VFileResultWriter` (BE).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from executor.file_dirs import FileDirs
from sql.errors import DorisError
from storage.batch import Batch, Column
from storage.types import BIGINT, INT, STRING, DataType, TypeKind

OUTFILE_FORMATS = ("csv", "csv_with_names", "csv_with_names_and_types", "parquet", "orc")
PROPERTIES = frozenset({"column_separator", "line_delimiter", "max_file_size",
                        "success_file_name", "delete_existing_files", "compress_type"})
MIN_FILE_SIZE = 5 * 1024 * 1024
MAX_FILE_SIZE = 2 * 1024 * 1024 * 1024
DEFAULT_FILE_SIZE = 1024 * 1024 * 1024
RESULT_COLUMNS = ("FileNumber", "TotalRows", "FileSize", "URL")
RESULT_TYPES = (INT, BIGINT, BIGINT, STRING)
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


@dataclass(frozen=True, slots=True)
class OutfileOptions:
    """A validated OUTFILE (or one EXPORT task's) target and format."""

    directory: Path
    prefix: str
    format: str
    separator: str = "\t"
    line_delimiter: str = "\n"
    max_file_size: int = DEFAULT_FILE_SIZE
    success_file_name: str = ""
    delete_existing_files: bool = False

    @property
    def extension(self) -> str:
        return {"parquet": "parquet", "orc": "orc"}.get(self.format, "csv")


@dataclass(frozen=True, slots=True)
class OutfileResult:
    files: tuple[Path, ...]
    rows: int
    bytes: int
    url: str

    def row(self) -> tuple[object, ...]:
        return (len(self.files), self.rows, self.bytes, self.url)


def parse_size(text: str) -> int:
    m = _SIZE.match(text)
    if not m:
        raise DorisError(f"invalid max_file_size: {text}")
    return int(m.group(1)) * _UNITS[(m.group(2) or "").lower()]


def _unescape(text: str) -> str:
    """Doris' separators may be written `\\t`, `\\n`, `\\x01`."""
    if text.lower().startswith("\\x") and len(text) == 4:
        try:
            return chr(int(text.lower().removeprefix("\\x"), base=16))
        except ValueError:
            return text
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


def outfile_options(dirs: FileDirs, url: str, fmt: str, props: Mapping[str, str],
                    what: str = "OUTFILE") -> OutfileOptions:
    """Check the target and properties (Doris' OutFileClause analysis)."""
    fmt = fmt.strip().lower()
    if fmt not in OUTFILE_FORMATS:
        raise DorisError(f"format:{fmt} is not supported.")
    for key in props:
        if key not in PROPERTIES:
            raise DorisError(f"Unknown properties: [{key}]")
    if props.get("compress_type", "plain").lower() not in ("plain", "snappy", "none"):
        raise DorisError("compress_type is not supported yet for OUTFILE here")
    directory, prefix = dirs.export_prefix(url, what)
    size = DEFAULT_FILE_SIZE
    if "max_file_size" in props:
        size = parse_size(props["max_file_size"])
        if not MIN_FILE_SIZE <= size <= MAX_FILE_SIZE:
            raise DorisError("max file size should between 5MB and 2GB. Given: "
                             f"{props['max_file_size']}")
    sep = _unescape(props.get("column_separator", "\t"))
    if fmt.startswith("csv") and len(sep.encode()) != 1:
        raise DorisError(f"column_separator [{props['column_separator']}] is not supported "
                         "yet: use a single-byte separator")
    eol = _unescape(props.get("line_delimiter", "\n"))
    if not eol:
        raise DorisError("line_delimiter can not be empty")
    success = props.get("success_file_name", "")
    if "/" in success or success in (".", ".."):
        raise DorisError(f"success_file_name [{success}] must be a plain file name")
    delete = props.get("delete_existing_files", "false").strip().lower() == "true"
    return OutfileOptions(directory, prefix, fmt, sep, eol, size, success, delete)


def outfile_sink_lines(lines: list[str], url: str) -> list[str]:
    """EXPLAIN of an OUTFILE: the query's plan with its result sink drawn as Doris' file sink."""
    out: list[str] = []
    skip = False
    for line in lines:
        if line.strip() == "VRESULT SINK":
            indent = line[: len(line) - len(line.lstrip())]
            out += [f"{indent}RESULT FILE SINK", f"{indent}  FILE PATH: {url}",
                    f"{indent}  STORAGE TYPE: LOCAL"]
            skip = True
            continue
        if skip and line.strip() == "MYSQL_PROTOCAL":
            continue
        skip = False
        out.append(line)
    return out


# ---- Column -> Arrow, in the file's types ------------------------------------------------------
def _decimal_array(t: DataType, col: Column) -> pa.Array:
    n = len(col)
    mask = None if col.validity is None else \
        pa.py_buffer(np.packbits(col.validity, bitorder="little"))
    if col.data.dtype == np.dtype(object):  # wide decimals: exact Python ints
        words = np.empty((n, 2), dtype=np.uint64)
        for i, v in enumerate(col.data.tolist()):
            u = int(v) & ((1 << 128) - 1)
            words[i, 0], words[i, 1] = u & ((1 << 64) - 1), u >> 64
    else:
        lo = col.data.astype(np.int64)
        words = np.empty((n, 2), dtype=np.int64)
        words[:, 0] = lo
        words[:, 1] = lo >> 63  # sign extension to 128 bits
    return pa.Array.from_buffers(pa.decimal128(max(t.precision, 1), t.scale), n,
                                 [mask, pa.py_buffer(np.ascontiguousarray(words))])


def arrow_array(t: DataType, col: Column) -> pa.Array:
    """A result column as Arrow in the type a parquet / ORC file keeps."""
    k = t.kind
    if k is TypeKind.DECIMAL:
        return _decimal_array(t, col)
    arr = col.to_arrow()
    if k is TypeKind.BOOLEAN:
        return pc.cast(arr, pa.bool_())
    if k is TypeKind.DATE:
        return arr.cast(pa.int32()).view(pa.date32())
    if k is TypeKind.DATETIME:
        return arr.cast(pa.int64()).view(pa.timestamp("us"))
    if k is TypeKind.LARGEINT:
        return pc.cast(arr, pa.string())
    if k is TypeKind.NULL:
        return pa.nulls(len(col), pa.string())
    if t.is_string:
        return arr.cast(pa.string())
    if k in (TypeKind.HLL, TypeKind.BITMAP):
        raise DorisError(f"can not export a {t.sql()} column")
    return arr


def text_array(t: DataType, col: Column) -> pa.Array:
    """A result column for CSV: Arrow types whose CSV text is Doris' text form (DATETIME at
    its scale, BOOLEAN as 1 / 0); pyarrow's CSV writer never quotes these."""
    k = t.kind
    if t.is_nested:  # Doris' text form, `[1, 2, null]` / `{"k":1}`, as a Stream Load reads it
        return pa.array([t.format_value(v) for v in col.to_pylist()], pa.string())
    if k is TypeKind.DATETIME and t.scale not in (0, 3, 6):
        return pa.array([t.format_value(v) for v in col.to_pylist()], pa.string())
    arr = arrow_array(t, col)
    if k is TypeKind.DATETIME:
        unit = {0: "s", 3: "ms", 6: "us"}[t.scale]
        arr = pc.cast(arr, pa.timestamp(unit), safe=False)
    if k is TypeKind.BOOLEAN:
        arr = pc.cast(arr, pa.uint8())
    return arr


# ---- writing ----------------------------------------------------------------------------------
class _FileSink:
    """One output file under a temporary name: written, fsynced, then renamed into place."""

    def __init__(self, final: Path) -> None:
        self.final = final
        self.temp = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.tmp")
        self.stream: Any = pa.OSFile(str(self.temp), "wb")

    def size(self) -> int:
        return int(self.stream.tell())

    def publish(self) -> int:
        self.stream.close()
        fd = os.open(self.temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self.temp, self.final)
        return self.final.stat().st_size

    def discard(self) -> None:
        with contextlib.suppress(Exception):  # already broken; the temp file goes anyway
            self.stream.close()
        self.temp.unlink(missing_ok=True)


class _Writer:
    """A format writer over one _FileSink."""

    def __init__(self, sink: _FileSink, opts: OutfileOptions, names: list[str],
                 types: list[DataType]) -> None:
        self.sink = sink
        self.opts = opts
        self.types = types
        # parquet / orc: made with the first batch's schema (or at close, for no rows)
        self.writer: pq.ParquetWriter | paorc.ORCWriter | None = None
        fmt = opts.format
        if fmt.startswith("csv"):
            header = ""
            eol = opts.line_delimiter
            if fmt in ("csv_with_names", "csv_with_names_and_types"):
                header += opts.separator.join(names) + eol
            if fmt == "csv_with_names_and_types":
                header += opts.separator.join(t.desc_sql() for t in types) + eol
            sink.stream.write(header.encode())
            self.convert = text_array
            self.names = [f"c{i}" for i in range(len(names))]
        else:
            self.names = list(names)
            self.convert = arrow_array

    def write(self, batch: Batch) -> None:
        arrays = [self.convert(t, c) for t, c in zip(self.types, batch.columns)]
        rb = pa.RecordBatch.from_arrays(arrays, names=self.names)
        if self.opts.format.startswith("csv"):
            self._write_csv(rb)
            return
        if self.writer is None:
            if self.opts.format == "parquet":
                self.writer = pq.ParquetWriter(self.sink.stream, rb.schema)
            else:
                self.writer = self._orc_writer()
        if isinstance(self.writer, paorc.ORCWriter):
            self.writer.write(pa.Table.from_batches([rb]))
        else:  # ParquetWriter takes a record batch
            self.writer.write(rb)

    def _orc_writer(self) -> paorc.ORCWriter:
        # stripes well below max_file_size, so the size check after each batch sees the bytes
        stripe = max(1 << 20, min(64 << 20, self.opts.max_file_size // 8))
        return paorc.ORCWriter(self.sink.stream, stripe_size=stripe)

    def _write_csv(self, rb: pa.RecordBatch) -> None:
        """Doris writes values as they are (no quotes); a batch holding a value with the
        separator, a quote or a line break is written with its strings quoted instead, so
        the file still reads back (DuckDB, pyarrow) as the rows that were written."""
        opts = self.opts
        specials = [opts.separator, '"', "\n", "\r"]
        needs_quotes = any(
            pc.any(pc.match_substring(col, s)).as_py()
            for col in rb.columns if pa.types.is_string(col.type)
            and col.null_count < len(col) for s in specials)
        pacsv.write_csv(rb, self.sink.stream, write_options=pacsv.WriteOptions(
            include_header=False, delimiter=opts.separator, eol=opts.line_delimiter,
            null_string="\\N", quoting_style="needed" if needs_quotes else "none"))

    def close(self, names: list[str]) -> None:
        if self.opts.format.startswith("csv"):
            return
        if self.writer is None:  # no rows: a file with the schema only
            empty = [pa.array([], arrow_array(t, Column.from_physical(t, [])).type)
                     for t in self.types]
            rb = pa.RecordBatch.from_arrays(empty, names=names)
            if self.opts.format == "parquet":
                self.writer = pq.ParquetWriter(self.sink.stream, rb.schema)
            else:
                self.writer = self._orc_writer()
                self.writer.write(pa.Table.from_batches([rb]))
        self.writer.close()


def write_outfile(batches: Iterable[Batch], names: list[str], types: list[DataType],
                  opts: OutfileOptions, query_id: str) -> OutfileResult:
    """Write every batch; a new file starts once the current one passes max_file_size.
    On any error the files written so far are removed and the error is raised."""
    base = f"{opts.prefix}{query_id}_"
    url = f"file://{opts.directory}/{base}"
    if opts.delete_existing_files:
        clear_directory(opts.directory)
    done: list[Path] = []
    total_rows = total_bytes = 0
    sink: _FileSink | None = None
    writer: _Writer | None = None
    try:
        for batch in _rows_of(batches):
            if sink is None:
                sink = _FileSink(opts.directory / f"{base}{len(done)}.{opts.extension}")
                writer = _Writer(sink, opts, names, types)
            assert writer is not None
            writer.write(batch)
            total_rows += batch.num_rows
            if sink.size() >= opts.max_file_size:
                writer.close(names)
                total_bytes += sink.publish()
                done.append(sink.final)
                sink = writer = None
        if sink is None and not done:  # an empty result still gives one (empty) file
            sink = _FileSink(opts.directory / f"{base}0.{opts.extension}")
            writer = _Writer(sink, opts, names, types)
        if sink is not None and writer is not None:
            writer.close(names)
            total_bytes += sink.publish()
            done.append(sink.final)
            sink = None
        if opts.success_file_name:
            marker = _FileSink(opts.directory / opts.success_file_name)
            marker.publish()
    except BaseException:
        if sink is not None:
            sink.discard()
        for path in done:
            path.unlink(missing_ok=True)
        raise
    _fsync_dir(opts.directory)
    return OutfileResult(tuple(done), total_rows, total_bytes, url)


_PARTIAL = re.compile(r"^\..+\.[0-9a-f]{8}\.tmp$")


def remove_partial_files(root: Path) -> int:
    """Delete what an OUTFILE / EXPORT interrupted by a crash left under `root` (its hidden
    `.<name>.<id>.tmp` files); run at server start, when no writer can be running."""
    removed = 0
    if not root.is_dir():
        return 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if _PARTIAL.match(name):
                Path(dirpath, name).unlink(missing_ok=True)
                removed += 1
    return removed


def _rows_of(batches: Iterable[Batch]) -> Iterator[Batch]:
    for b in batches:
        if b.num_rows:
            yield b


def clear_directory(directory: Path) -> None:
    """delete_existing_files: everything in the target directory (inside export_dir only)."""
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
