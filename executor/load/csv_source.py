"""CSV bodies (csv, csv_with_names, csv_with_names_and_types) -> Arrow record batches of
string columns, one per file column, named after the load's columns (`spec.targets`).

Two readers, both streaming a block at a time:
- pyarrow.csv's streaming reader whenever it can express the options: a one-byte ASCII
  column separator, `\\n` or `\\r\\n` lines, a one-byte `enclose` (pyarrow's quote_char, with
  line delimiters allowed inside enclosed fields) and `escape`;
- otherwise (multi-byte separators or line delimiters such as `||` or `\\x02`), a vectorised
  splitter: `line_blocks` cuts the body into whole lines and pyarrow.compute's `split_pattern`
  splits every line of a block into fields at once; there is no per-character Python loop.

Doris semantics kept by both: `\\N` is NULL, empty lines are skipped, `skip_lines` (or the one
or two header lines of csv_with_names[_and_types], skipped, not used for mapping: Doris maps
CSV columns by position), `trim_double_quotes` strips one pair of outer double quotes, and a
line with the wrong number of columns is a filtered row with Doris' reason.
Upstream: Doris `CsvReader` (be/src/vec/exec/format/csv/csv_reader.cpp).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from executor.load.chunks import READ_BLOCK, ForwardStream, line_blocks
from executor.load.format_options import FormatOptions
from executor.load.spec import LoadSpec, LoadStats

NULL_TEXT = "\\N"


def _printable(b: bytes) -> str:
    return b.decode("utf-8", "replace").replace("\r", "\\r").replace("\n", "\\n")


def _count_reason(actual: int, ncols: int, opts: FormatOptions, line: str) -> str:
    """Doris' reason for a line with the wrong number of columns (CsvReader::_validate_line)."""
    fewer = actual < ncols
    return (f"Reason: actual column number in csv file is {'less' if fewer else 'more'} than "
            f"schema column number.actual number: {actual}, column separator: "
            f"[{opts.separator}], line delimiter: [{_printable(opts.line_delimiter)}], "
            f"schema column number: {ncols}; . src line [{line}];")


def csv_batches(stream: BinaryIO, spec: LoadSpec,
                stats: LoadStats) -> Iterator[pa.RecordBatch]:
    names = [c.name for c in spec.targets]
    opts = spec.format
    batches = _pyarrow_batches(stream, names, opts, stats) if opts.pyarrow_csv else \
        _split_batches(stream, names, opts, stats)
    for rb in batches:
        yield _trim_double_quotes(rb) if opts.trim_double_quotes else rb


def _pyarrow_batches(stream: BinaryIO, names: list[str], opts: FormatOptions,
                     stats: LoadStats) -> Iterator[pa.RecordBatch]:
    ncols = len(names)

    def invalid_row(row: pacsv.InvalidRow) -> str:
        stats.skipped_rows += 1
        stats.filtered(_count_reason(row.actual_columns, ncols, opts,
                                     (row.text or "").rstrip("\r\n")))
        return "skip"

    enclose = opts.enclose.decode() if opts.enclose else False
    escape = opts.escape if opts.escape is not None else b"\\"  # Doris' default escape
    if opts.enclose and escape != opts.enclose:  # an escape equal to enclose (`""`): pyarrow's
        stream = _EscapeFolding(stream, escape, opts.enclose)  # type: ignore[assignment]
    # pyarrow's streaming reader parses one block after another whatever use_threads says
    # (measured: no faster with it; its invalid-row handler would then run on Arrow's
    # threads): parsing overlaps the rest of a load on a thread of its own (prefetch.py)
    read_opts = pacsv.ReadOptions(column_names=names, skip_rows=opts.skip_rows,
                                  block_size=READ_BLOCK, use_threads=False)
    parse_opts = pacsv.ParseOptions(
        delimiter=opts.column_separator.decode(), quote_char=enclose,
        escape_char=False, double_quote=True,
        # Doris allows line delimiters inside an enclosed field
        newlines_in_values=bool(enclose), ignore_empty_lines=True,
        invalid_row_handler=invalid_row)
    # strings unchecked: convert.py filters the row of a value that is not UTF-8
    conv_opts = pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                     null_values=[NULL_TEXT], strings_can_be_null=True,
                                     quoted_strings_can_be_null=False, check_utf8=False)
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


class _EscapeFolding(ForwardStream):
    """A stream view that rewrites Doris' escaped enclose (`\\"`) as a doubled one (`""`),
    which pyarrow unescapes, and an escaped escape (`\\\\`) as one escape char. pyarrow's own
    escape_char would also unescape outside enclosed fields and turn `\\N` (NULL) into `N`.
    The rewrite is `bytes.replace` per block; a block ending in the escape char keeps it for
    the next block."""

    _HOLD = b"\x00\x1bshaledb-escape\x1b\x00"  # stands for an escaped escape meanwhile

    def __init__(self, raw: BinaryIO, escape: bytes, enclose: bytes) -> None:
        self._raw = raw
        self._escape = escape
        self._enclose = enclose
        self._carry = b""

    def read(self, n: int = -1) -> bytes:
        block = self._raw.read(READ_BLOCK if n is None or n < 0 else n)
        data = self._carry + bytes(block)
        self._carry = b""
        if block:
            # an odd run of escape chars at the end: its last one escapes the next block's byte
            run = len(data) - len(data.rstrip(self._escape))
            if run % 2:
                data, self._carry = data[:-1], data[-1:]
            if not data:
                return self.read(n)
        esc = self._escape
        data = data.replace(esc + esc, self._HOLD)
        data = data.replace(esc + self._enclose, self._enclose + self._enclose)
        return data.replace(self._HOLD, esc)


def _split_batches(stream: BinaryIO, names: list[str], opts: FormatOptions,
                   stats: LoadStats) -> Iterator[pa.RecordBatch]:
    """Multi-byte separators / line delimiters: a block of whole lines split by Arrow kernels."""
    ncols = len(names)
    to_skip = opts.skip_rows
    sep = opts.column_separator
    for block in line_blocks(stream, opts.line_delimiter):
        lines = pc.split_pattern(pa.array([block], pa.large_binary()),
                                 opts.line_delimiter).flatten()
        if to_skip:
            skipped = min(to_skip, len(lines))
            lines, to_skip = lines.slice(skipped), to_skip - skipped
        lines = lines.filter(pc.greater(pc.binary_length(lines), 0))  # empty lines skipped
        if not len(lines):
            continue
        fields = pc.split_pattern(lines, sep)
        counts = pc.list_value_length(fields)
        wrong = pc.not_equal(counts, ncols)
        if pc.any(wrong).as_py():
            for i in pc.indices_nonzero(wrong).to_pylist():
                stats.skipped_rows += 1
                stats.filtered(_count_reason(counts[i].as_py(), ncols, opts,
                                             lines[i].as_py().decode("utf-8", "replace")))
            keep = pc.invert(wrong)
            fields = fields.filter(keep)
        if not len(fields):
            continue
        columns = []
        for j in range(ncols):
            col = pc.list_element(fields, j)
            columns.append(pc.if_else(pc.equal(col, NULL_TEXT.encode()),
                                      pa.scalar(None, col.type), col))
        yield pa.RecordBatch.from_arrays(columns, names=names)


def _trim_double_quotes(rb: pa.RecordBatch) -> pa.RecordBatch:
    """Doris' trim_double_quotes: one pair of outer double quotes stripped from each field."""
    columns = []
    for col in rb.columns:
        binary = col.cast(pa.large_binary())
        quoted = pc.and_(pc.and_(pc.starts_with(binary, '"'), pc.ends_with(binary, '"')),
                         pc.greater_equal(pc.binary_length(binary), 2))
        inner = pc.binary_slice(binary, 1, -1)
        columns.append(pc.if_else(quoted, inner, binary))
    return pa.RecordBatch.from_arrays(columns, names=rb.schema.names)
