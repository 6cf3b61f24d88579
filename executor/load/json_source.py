"""JSON bodies (`format: json`) -> Arrow record batches of string columns named after the
load's columns (`spec.targets`), matched to the JSON fields by name as Doris does.

The body's shapes, as Doris' `NewJsonReader` takes them:
- `read_json_by_line: true`: one JSON document per line (any `line_delimiter`); the body is
  cut into blocks of whole lines (chunks.line_blocks). A block of plain objects is parsed whole
  by pyarrow.json (typed columns, converted by convert.py); a block pyarrow refuses (a bad
  line, a field whose type changes between lines, arrays per line) and every block when
  jsonpaths/json_root/num_as_string are set is parsed line by line by the stdlib's C JSON
  decoder, so a line that does not parse is one filtered row with Doris' reason;
- `strip_outer_array: true`: the body is one array of objects, streamed element by element
  with `json.JSONDecoder.raw_decode` over a sliding buffer (bounded memory);
- otherwise the body is one object (one row), read whole up to Doris' 100 MB JSON limit.
`json_root` picks the sub-document holding the rows; `jsonpaths` maps the load's columns, in
order, to paths (`$.a.b`, `$.a[0]`, `$['a']`); without it a column takes the field of its name
(exact, else case-insensitive). A missing field is NULL, or a filtered row for a NOT NULL
column ("The column `c` is not nullable, but it's not found in jsondata."). Values become the
text Doris would parse: nested values as JSON, booleans as 1/0, numbers as written when
`num_as_string` is set. `fuzzy_parse` (Doris' hint that every object has the same field
order) needs nothing here: lookups are by name either way.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from typing import BinaryIO

import pyarrow as pa
import pyarrow.json as pajson

from executor.load.chunks import line_blocks, read_blocks
from executor.load.format_options import FormatOptions, json_path_steps
from executor.load.spec import LoadFailed, LoadSpec, LoadStats
from sql.functions.json_text import MISSING, extract

JSON_MAX_BYTES = 100 * 1024 * 1024  # Doris' streaming_load_json_max_mb default
ROWS_PER_BATCH = 8192


class _Number(str):
    """A JSON number kept as written (num_as_string)."""


def _float_text(text: str) -> str:
    value = float(text)
    return str(int(value)) if value.is_integer() and "e" not in repr(value) else repr(value)


def _decoder(opts: FormatOptions) -> json.JSONDecoder:
    if opts.num_as_string:
        return json.JSONDecoder(parse_float=_Number, parse_int=_Number)
    return json.JSONDecoder(parse_float=lambda t: _Number(_float_text(t)))


def _text(v: object) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return str(v)
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return str(v)


def compile_path(path: str) -> Callable[[object], object]:
    """A Doris JSON path (`$`, `$.a.b`, `$.a[0]`, `$['a b']`; checked by format_options)
    -> a getter returning the value or `MISSING`."""
    steps = json_path_steps(path)
    return lambda doc: extract(doc, steps)


class _RowBuilder:
    """JSON documents -> record batches of the load's columns (text), bad rows filtered."""

    def __init__(self, spec: LoadSpec, stats: LoadStats) -> None:
        self.spec = spec
        self.stats = stats
        self.names = [c.name for c in spec.targets]
        self.nullable = [c.nullable for c in spec.targets]
        opts = spec.format
        self.root = compile_path(opts.json_root) if opts.json_root else None
        self.paths = [compile_path(p) for p in opts.jsonpaths] if opts.jsonpaths else None
        self.columns: list[list[str | None]] = [[] for _ in self.names]

    def bad(self, reason: str, doc: object) -> None:
        self.stats.skipped_rows += 1
        text = doc if isinstance(doc, str) else _text(doc)
        self.stats.filtered(f"Reason: {reason}. src line [{text}];")

    def add_document(self, doc: object, strip_outer_array: bool) -> None:
        """One parsed document: an object (one row) or, with strip_outer_array, an array."""
        if self.root is not None:
            doc = self.root(doc)
            if doc is MISSING:
                self.bad("JSON Root not found", None)
                return
        if strip_outer_array:
            if not isinstance(doc, list):
                self.bad("JSON data is not an array-object, `strip_outer_array` must be FALSE.",
                         doc)
                return
            for row in doc:
                self.add_row(row)
        elif isinstance(doc, list):
            self.bad("JSON data is array-object, `strip_outer_array` must be TRUE.", doc)
        else:
            self.add_row(doc)

    def add_row(self, row: object) -> None:
        if self.paths is not None:
            values = [p(row) for p in self.paths]
            values += [MISSING] * (len(self.names) - len(values))
        elif isinstance(row, dict):
            values = [row.get(n, MISSING) for n in self.names]
        else:
            self.bad("Json value is not an object", row)
            return
        if MISSING in values and not self._fill_missing(row, values):
            return
        for column, v in zip(self.columns, values):
            # the common case (a string value) without a call: this loop runs per value
            column.append(v if v.__class__ is str else None if v is None or v is MISSING
                          else _text(v))

    def _fill_missing(self, row: object, values: list[object]) -> bool:
        """Fields not found by their exact name: one differing in case is taken (Doris
        matches exactly); False when the row is bad (a NOT NULL column missing, no field)."""
        if self.paths is None and isinstance(row, dict):
            lowered = {k.lower(): v for k, v in row.items()}
            values[:] = [v if v is not MISSING else lowered.get(n.lower(), MISSING)
                         for v, n in zip(values, self.names)]
            if all(v is MISSING for v in values):
                self.bad("All fields is null, this is a invalid row.", row)
                return False
        for v, n, nullable in zip(values, self.names, self.nullable):
            if v is MISSING and not nullable:
                self.bad(f"The column `{n}` is not nullable, but it's not found in jsondata.",
                         row)
                return False
        return True

    def full(self) -> bool:
        return len(self.columns[0]) >= ROWS_PER_BATCH if self.columns else False

    def take(self) -> pa.RecordBatch | None:
        if not self.columns or not self.columns[0]:
            return None
        rb = pa.RecordBatch.from_arrays([pa.array(c, pa.string()) for c in self.columns],
                                        names=self.names)
        self.columns = [[] for _ in self.names]
        return rb


def json_batches(stream: BinaryIO, spec: LoadSpec,
                 stats: LoadStats) -> Iterator[pa.RecordBatch]:
    opts = spec.format
    rows = _RowBuilder(spec, stats)
    decoder = _decoder(opts)
    if opts.read_json_by_line:
        fast = _arrow_reads_lines(opts)
        for block in line_blocks(stream, opts.line_delimiter):
            rb = _arrow_block(block, spec) if fast else None
            if rb is not None:
                yield rb
                continue
            for doc in _line_documents(block, opts, decoder, rows):
                rows.add_document(doc, opts.strip_outer_array)
                if rows.full():
                    taken = rows.take()
                    if taken is not None:
                        yield taken
        taken = rows.take()
        if taken is not None:
            yield taken
        return
    if opts.strip_outer_array and opts.json_root is None:
        yield from _array_batches(stream, spec, decoder, rows)
        return
    for doc in _whole_document(stream, decoder, rows):
        rows.add_document(doc, opts.strip_outer_array)
        while rows.full():
            rb = rows.take()
            if rb is not None:
                yield rb
    rb = rows.take()
    if rb is not None:
        yield rb


def _array_batches(stream: BinaryIO, spec: LoadSpec, decoder: json.JSONDecoder,
                   rows: _RowBuilder) -> Iterator[pa.RecordBatch]:
    """A top-level array, ROWS_PER_BATCH elements at a time: their text handed to pyarrow.json
    as one block when it can read them (typed columns, no per-value Python), else their
    parsed objects through `rows`."""
    fast = _arrow_reads_objects(spec.format)
    docs: list[object] = []
    texts: list[str] = []

    def flush() -> Iterator[pa.RecordBatch]:
        rb = None
        if fast and docs and all(d.__class__ is dict for d in docs):
            rb = _arrow_block("\n".join(texts).encode(), spec, newlines_in_values=True)
        if rb is None:
            for d in docs:
                rows.add_row(d)
            rb = rows.take()
        docs.clear()
        texts.clear()
        if rb is not None:
            yield rb

    for doc, text in _array_elements(stream, decoder, rows):
        if text is None:  # the body is not an array: Doris' reason for it
            rows.add_document(doc, True)
            continue
        docs.append(doc)
        texts.append(text)
        if len(docs) >= ROWS_PER_BATCH:
            yield from flush()
    yield from flush()


def _too_large(size: int) -> LoadFailed:
    """Doris' refusal of a JSON body over streaming_load_json_max_mb (not read by line)."""
    return LoadFailed(f"[INTERNAL_ERROR]The size of this batch exceed the max size "
                      f"[{JSON_MAX_BYTES}]  of json type data  data [ {size} ]. Split the file, "
                      "or use 'read_json_by_line'")


def _parse_error(e: Exception) -> str:
    return f"Parse json data for JsonDoc failed. code: 2, error info: {e}"


def _arrow_reads_objects(opts: FormatOptions) -> bool:
    """Whether pyarrow.json can read the objects as Doris means them: fields by name, numbers
    parsed (not kept as text)."""
    return opts.jsonpaths is None and opts.json_root is None and not opts.num_as_string


def _arrow_reads_lines(opts: FormatOptions) -> bool:
    """... and the lines are plain objects per `\\n` line."""
    return (opts.line_delimiter == b"\n" and not opts.strip_outer_array
            and _arrow_reads_objects(opts))


def _arrow_block(block: bytes, spec: LoadSpec,
                 newlines_in_values: bool = False) -> pa.RecordBatch | None:
    """A block of JSON lines parsed by pyarrow.json into the load's columns (typed), or None
    when pyarrow refuses it (the caller parses it line by line). String columns are read as
    strings, so a date-like text stays text; a NOT NULL column missing from every line is
    left out (convert.py then filters the rows with Doris' reason)."""
    if not block.strip():
        return None
    if any(c.type.is_nested for c in spec.targets):
        # pyarrow infers `{}` objects as structs (a MAP's keys would become NULL fields):
        # nested values go the per-line way, handed over as JSON text (storage/nested.py)
        return None
    schema = pa.schema([(c.name, pa.string()) for c in spec.targets if c.type.is_string])
    try:
        table = pajson.read_json(
            pa.BufferReader(block),
            read_options=pajson.ReadOptions(use_threads=False, block_size=len(block) + 1),
            parse_options=pajson.ParseOptions(explicit_schema=schema,
                                              newlines_in_values=newlines_in_values))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    names, arrays = [], []
    for c in spec.targets:
        # the exact name first, then one differing in case; the explicit schema adds its
        # string columns as all NULL even when no line has the key: such a column is absent
        for name in sorted((n for n in table.column_names if n.lower() == c.name.lower()),
                           key=lambda n: n != c.name):
            col = table.column(name)
            if col.null_count < table.num_rows or f'"{name}"'.encode() in block:
                names.append(c.name)
                arrays.append(col.combine_chunks())
                break
    if not names:
        return None  # no field of the load in these lines: Doris' per-row reasons apply
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _line_documents(block: bytes, opts: FormatOptions, decoder: json.JSONDecoder,
                    rows: _RowBuilder) -> Iterator[object]:
    for line in block.split(opts.line_delimiter):
        if not line.strip():
            continue
        try:
            doc = decoder.decode(line.decode())
        except (UnicodeDecodeError, ValueError) as e:
            rows.bad(_parse_error(e), line.decode("utf-8", "replace"))
            continue
        yield doc


def _whole_document(stream: BinaryIO, decoder: json.JSONDecoder,
                    rows: _RowBuilder) -> Iterator[object]:
    parts: list[bytes] = []
    size = 0
    for block in read_blocks(stream):
        size += len(block)
        if size > JSON_MAX_BYTES:
            raise _too_large(size)
        parts.append(block)
    body = b"".join(parts)
    if not body.strip():
        return
    try:
        doc = decoder.decode(body.decode())
    except (UnicodeDecodeError, ValueError) as e:
        rows.bad(_parse_error(e), body[:100].decode("utf-8", "replace"))
        return
    yield doc


def _array_elements(stream: BinaryIO, decoder: json.JSONDecoder,
                    rows: _RowBuilder) -> Iterator[tuple[object, str | None]]:
    """The elements of a top-level JSON array with their text, parsed one at a time from a
    sliding buffer: an element cut by the block boundary is retried once more bytes have
    arrived. A body that is not an array is yielded whole, with None for its text."""
    text_decoder = codecs.getincrementaldecoder("utf-8")()
    blocks = read_blocks(stream)
    buf = ""
    pos = 0
    eof = False

    def more() -> bool:
        nonlocal buf, pos, eof
        if eof:
            return False
        block = next(blocks, None)
        try:
            text = text_decoder.decode(block or b"", final=block is None)
        except UnicodeDecodeError as e:
            raise LoadFailed(f"[DATA_QUALITY_ERROR]{_parse_error(e)}") from None
        if block is None:
            eof = True
        buf = buf[pos:] + text
        pos = 0
        return True

    def skip_space() -> bool:
        """Advance past whitespace; False at the end of the body."""
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos < len(buf):
                return True
            if not more():
                return False

    if not skip_space():
        return
    if buf[pos] != "[":
        # not an array: parse the whole body to give Doris' reason for it
        while more():
            if len(buf) > JSON_MAX_BYTES:
                raise _too_large(len(buf))
        rest = buf[pos:]
        try:
            doc = decoder.decode(rest)
        except ValueError as e:
            rows.bad(_parse_error(e), rest[:100])
            return
        yield doc, None
        return
    pos += 1
    first = True
    while True:
        if not skip_space():
            rows.bad(_parse_error(ValueError("unexpected end of the array")), "")
            return
        if buf[pos] == "]":
            return
        if not first:
            if buf[pos] != ",":
                rows.bad(_parse_error(ValueError(f"expected ',' at char {pos}")), buf[pos:100])
                return
            pos += 1
            if not skip_space():
                rows.bad(_parse_error(ValueError("unexpected end of the array")), "")
                return
        first = False
        while True:
            try:
                doc, end = decoder.raw_decode(buf, pos)
                break
            except ValueError as e:
                # an element larger than Doris' JSON limit is malformed, not just cut off
                if len(buf) - pos > JSON_MAX_BYTES or not more():
                    rows.bad(_parse_error(e), buf[pos:pos + 100])
                    return
        start, pos = pos, end
        yield doc, buf[start:end]
