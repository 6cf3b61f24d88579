"""File table functions at run time: find the files, infer their schema, scan them.

`LocalFiles` is the `FileFunctionResolver` the binder asks about `local(..)`: it checks the
arguments (sql/binder/table_functions.py, then the load core's `format_options`, so every format
property a load takes works here with the same checks), expands `file_path` inside the import
directory (executor/file_dirs.py) and infers the columns from the first file as Doris does:
CSV gives c1..cn (the header's names for csv_with_names*) of type STRING; parquet and orc give
their schema in Doris types; JSON gives the first object's keys (or the jsonpaths) as STRING.
`FileScan` runs a planner/physical.py `FileScan` node. CSV and JSON files are parsed by the load
core's streaming readers (executor/load/sources.py `record_batches`: enclose, escape,
multi-byte separators, jsonpaths, compression, ...). Parquet and ORC files are read in place
with pyarrow (a row group / stripe at a time): they already sit seekable on disk, where the
load core would first spool a stream. `compress_type` unset or UNKNOWN is inferred from each
file's suffix, as Doris does.
Upstream: Doris `LocalTableValuedFunction` (FE), `FileScanNode` / `CsvReader` /
`NewJsonReader` / `ParquetReader` / `OrcReader` (BE).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from executor.file_dirs import FileDirs
from executor.load.chunks import READ_BLOCK
from executor.load.convert import vector_convert
from executor.load.format_options import (
    FormatError,
    FormatOptions,
    format_options,
    json_path_steps,
)
from executor.load.sources import record_batches
from executor.load.spec import LoadFailed, LoadSpec, LoadStats
from executor.operator import Operator, chunks
from planner import physical
from sql.binder.table_functions import FileSource, check_local_properties
from sql.errors import DorisError
from storage.batch import Batch, Column
from storage.catalog.meta import (
    ColumnMeta,
    DistributionInfo,
    DistributionType,
    KeysType,
    PartitionInfo,
    PartitionType,
    TableMeta,
)
from storage.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LARGEINT,
    SMALLINT,
    STRING,
    TINYINT,
    DataType,
    TypeError_,
    datetime,
    decimal,
)

# Doris infers compress_type from the file name when it is UNKNOWN (the default)
_SUFFIX_CODECS = {".gz": "gzip", ".bz2": "bz2", ".lz4": "lz4", ".zst": "zstd", ".zstd": "zstd"}
_LOCATION = ("file_path", "backend_id", "shared_storage")
# properties the load core does not take (Doris TVF-only ones) and we do not honour yet
_UNHANDLED = ("csv_schema", "path_partition_keys")
_SCHEMA_PROBE_BYTES = 1 << 16


# ---- formats ------------------------------------------------------------------------------
def tvf_format_options(options: dict[str, str]) -> FormatOptions:
    """The load core's FormatOptions for local()'s format properties, with the TVF defaults:
    JSON one object per line (Doris' read_json_by_line defaults to true for TVFs), and
    compress_type left to the file suffix."""
    props = dict(options)
    if props.get("compress_type", "").strip().lower() in ("", "unknown"):
        props.pop("compress_type", None)
    if props.get("format") == "json" and "read_json_by_line" not in props \
            and props.get("strip_outer_array", "").lower() != "true":
        props["read_json_by_line"] = "true"
    try:
        return format_options(props)
    except FormatError as e:
        raise DorisError(e.message) from None


def file_format(opts: FormatOptions, options: dict[str, str], path: str) -> FormatOptions:
    """`opts` for one file: the codec its suffix names unless compress_type was given."""
    if options.get("compress_type", "").strip().lower() in ("", "unknown"):
        return dataclasses.replace(opts, compress_type=_SUFFIX_CODECS.get(
            Path(path).suffix.lower()))
    return opts


def _open(path: str, opts: FormatOptions) -> pa.NativeFile:
    raw = pa.OSFile(path, "rb")
    return pa.CompressedInputStream(raw, opts.compress_type) if opts.compress_type else raw


# ---- schemas ------------------------------------------------------------------------------
def arrow_type(t: pa.DataType, column: str) -> DataType:
    """Doris' type for a parquet / orc column (Doris' ParquetReader / OrcReader mapping)."""
    if pa.types.is_dictionary(t):
        return arrow_type(t.value_type, column)
    simple = [(pa.types.is_boolean, BOOLEAN), (pa.types.is_int8, TINYINT),
              (pa.types.is_int16, SMALLINT), (pa.types.is_uint8, SMALLINT),
              (pa.types.is_int32, INT), (pa.types.is_uint16, INT), (pa.types.is_int64, BIGINT),
              (pa.types.is_uint32, BIGINT), (pa.types.is_uint64, LARGEINT),
              (pa.types.is_float16, FLOAT), (pa.types.is_float32, FLOAT),
              (pa.types.is_float64, DOUBLE), (pa.types.is_date, DATE)]
    for test, dtype in simple:
        if test(t):
            return dtype
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        return STRING
    if pa.types.is_timestamp(t):
        return datetime({"s": 0, "ms": 3}.get(t.unit, 6))
    if pa.types.is_decimal(t) and t.precision <= 38:
        return decimal(t.precision, t.scale)
    raise DorisError(f"column {column} has type {t}, which file table functions do not "
                     "support yet")


def _first_line(path: str, opts: FormatOptions, skip: int) -> str | None:
    """The text of line `skip` (0-based) of a file, None when it has fewer lines."""
    stream = _open(path, opts)
    try:
        buf = b""
        while buf.count(opts.line_delimiter) <= skip:
            block = stream.read(READ_BLOCK)
            if not block:
                break
            buf += block
            if len(buf) > 64 * READ_BLOCK:
                break
    finally:
        stream.close()
    lines = buf.split(opts.line_delimiter)
    return lines[skip].decode("utf-8").rstrip("\r") if len(lines) > skip else None


def _csv_probe(path: str, opts: FormatOptions, skip: int) -> list[str] | None:
    """The fields of line `skip`: parsed by pyarrow.csv when it can take the options (enclose
    and escape included), else the one line split at the separator."""
    if not opts.pyarrow_csv:
        line = _first_line(path, opts, skip)
        return None if line is None else line.split(opts.separator)
    stream = _open(path, opts)
    try:
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, skip_rows=skip,
                                           block_size=_SCHEMA_PROBE_BYTES, use_threads=False),
            parse_options=pacsv.ParseOptions(
                delimiter=opts.column_separator.decode(),
                quote_char=opts.enclose.decode() if opts.enclose else False,
                newlines_in_values=bool(opts.enclose),
                invalid_row_handler=lambda _row: "skip"),
            convert_options=pacsv.ConvertOptions(column_types={}, check_utf8=False))
        rb = reader.read_next_batch()
    except (StopIteration, pa.ArrowInvalid):
        return None
    finally:
        stream.close()
    if not rb.num_rows:
        return None
    return [pc.cast(rb.column(i), pa.string())[0].as_py() or "" for i in range(rb.num_columns)]


def _json_names(path: str, opts: FormatOptions) -> tuple[str, ...]:
    """Doris names JSON columns by the first row's keys (or the jsonpaths' last steps)."""
    if opts.jsonpaths:
        return tuple(str(json_path_steps(p)[-1]) if json_path_steps(p) else f"c{i + 1}"
                     for i, p in enumerate(opts.jsonpaths))
    text = _first_line(path, opts, 0) if opts.read_json_by_line else None
    if text is None:
        stream = _open(path, opts)
        try:
            text = stream.read(64 * READ_BLOCK).decode("utf-8")
        finally:
            stream.close()
    doc, _ = json.JSONDecoder().raw_decode(text.lstrip())
    for step in json_path_steps(opts.json_root) if opts.json_root else []:
        doc = doc[step]
    if isinstance(doc, list):
        doc = doc[0] if doc else {}
    if not isinstance(doc, dict):
        raise DorisError(f"the first JSON value of file {path} is not an object")
    return tuple(doc)


def infer_schema(path: str, opts: FormatOptions) -> tuple[tuple[str, ...], tuple[DataType, ...]]:
    if opts.format == "parquet":
        schema = pq.read_schema(path)
    elif opts.format == "orc":
        schema = paorc.ORCFile(path).schema
    elif opts.format == "json":
        names = _json_names(path, opts)
        return names, (STRING,) * len(names)
    else:
        with_names = opts.format != "csv"
        fields = _csv_probe(path, opts, 0 if with_names else opts.skip_rows)
        if not fields:
            raise DorisError(f"The first line of file {path} is empty: cannot infer its columns")
        names = tuple(fields) if with_names else tuple(f"c{i + 1}" for i in range(len(fields)))
        return names, (STRING,) * len(names)
    return tuple(schema.names), tuple(arrow_type(f.type, f.name) for f in schema)


def estimate_rows(paths: list[str], opts: FormatOptions) -> int:
    """Rows the files hold: exact from parquet / ORC footers; for text, the bytes over the
    first line's length (compressed files counted at four times their size)."""
    if opts.format == "parquet":
        return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    if opts.format == "orc":
        return sum(paorc.ORCFile(p).nrows for p in paths)
    total = 0.0
    for p in paths:
        size = Path(p).stat().st_size
        total += size * 4 if _SUFFIX_CODECS.get(Path(p).suffix.lower()) else size
    line = _first_line(paths[0], opts, opts.skip_rows) or ""
    return int(total / max(len(line.encode()) + len(opts.line_delimiter), 1))


def to_column(t: DataType, arr: pa.Array | pa.ChunkedArray) -> Column:
    """An Arrow column of a file -> our Column of Doris type `t` (whole-column casts where
    they apply, else value by value)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_nested(arr.type):  # an object / array value: its JSON text
        return Column.from_physical(t, [
            None if v is None else json.dumps(v, default=str, separators=(",", ":"))
            for v in arr.to_pylist()])
    if t.is_string and not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = pc.cast(arr, pa.large_string()) if not pa.types.is_binary(arr.type) else arr
    column = vector_convert(t, arr)
    if column is not None:
        return column
    values: list[object] = []
    for v in arr.to_pylist():
        try:
            values.append(t.to_physical(v))
        except (TypeError_, ValueError, ArithmeticError):
            values.append(None)  # as Doris outside strict mode: a value that does not fit
    return Column.from_physical(t, values)


# ---- binding ------------------------------------------------------------------------------
class LocalFiles:
    """`local(..)` resolution against the import directory (sql.binder.table_functions'
    resolver)."""

    def __init__(self, dirs: FileDirs, backend_ids: Callable[[], list[int]]) -> None:
        self.dirs = dirs
        self.backend_ids = backend_ids  # looked up only when a statement uses local()

    def resolve(self, function: str, properties: dict[str, str], alias: str) -> FileSource:
        if function != "local":
            raise DorisError(f"Can not find table function {function}()")
        check_local_properties(properties)
        if "backend_id" in properties:
            try:
                be = int(properties["backend_id"])
            except ValueError:
                raise DorisError(f"backend_id must be a number, got "
                                 f"{properties['backend_id']}") from None
            known = self.backend_ids()
            if known and be not in known:
                raise DorisError(f"backend not found with backend_id = {be}")
        for key in _UNHANDLED:
            if properties.get(key, "").strip():
                raise DorisError(f"property {key} of local() is not supported yet")
        options = {k: v for k, v in properties.items() if k not in _LOCATION}
        options["format"] = options["format"].strip().lower()
        opts = tvf_format_options(options)
        paths = [str(p) for p in self.dirs.import_files(properties["file_path"])]
        try:
            first = file_format(opts, options, paths[0])
            names, types = infer_schema(paths[0], first)
            rows = estimate_rows(paths, first)
        except (OSError, pa.ArrowException, UnicodeDecodeError, ValueError, LookupError) as e:
            raise DorisError(f"cannot read file {paths[0]}: {e}") from None
        return FileSource(function, alias, tuple(paths), opts.format,
                          tuple(sorted(options.items())), names, types, rows)


# ---- scanning -----------------------------------------------------------------------------
def _load_spec(names: tuple[str, ...], opts: FormatOptions) -> LoadSpec:
    """The load core's parse description for a file of `names` string columns (the table is
    a stand-in: the readers need the columns and the format)."""
    columns = tuple(ColumnMeta(n, STRING) for n in names)
    table = TableMeta(0, 0, "local", KeysType.DUP_KEYS, columns,
                      PartitionInfo(PartitionType.UNPARTITIONED),
                      DistributionInfo(DistributionType.RANDOM, (), 1), 0)
    return LoadSpec(db="", table=table, label="", targets=list(columns), format=opts,
                    max_filter_ratio=1.0, strict=False)


class FileScan(Operator):
    def __init__(self, plan: physical.FileScan) -> None:
        super().__init__()
        self.plan = plan
        self.load_stats = LoadStats()  # rows the readers skipped (wrong column count, bad JSON)

    def produce(self) -> Iterator[Batch]:
        p = self.plan
        wanted = [p.file_columns.index(c) for c in p.columns]
        options = dict(p.options)
        opts = tvf_format_options(options)
        for path in p.paths:
            for rb in self._file_batches(path, file_format(opts, options, path)):
                try:
                    cols = tuple(to_column(p.file_types[i], rb.column(i)) for i in wanted)
                except pa.ArrowException as e:
                    raise DorisError(f"failed to read file {path}: {e}") from None
                yield from chunks(Batch(p.columns, cols), self.ctx.batch_size)

    def _file_batches(self, path: str, opts: FormatOptions) -> Iterator[pa.RecordBatch]:
        p = self.plan
        try:
            if p.format == "parquet":
                yield from self._reorder(pq.ParquetFile(path).iter_batches(
                    batch_size=self.ctx.batch_size, columns=list(p.file_columns),
                    use_threads=False))
            elif p.format == "orc":
                orc = paorc.ORCFile(path)
                yield from self._reorder(orc.read_stripe(i) for i in range(orc.nstripes))
            else:  # csv*, json: the load core's streaming readers
                spec = _load_spec(p.file_columns, opts)
                with open(path, "rb") as raw:
                    for rb in record_batches(raw, spec, self.load_stats):
                        rb.validate(full=True)  # invalid UTF-8 is an error, as in a load
                        yield self._reorder_one(rb)
        except LoadFailed as e:
            raise DorisError(f"failed to read file {path}: {e.message}") from None
        except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
            raise DorisError(f"failed to read file {path}: {e}") from None

    def _reorder(self, batches: Iterator[pa.RecordBatch | pa.Table]) -> Iterator[pa.RecordBatch]:
        for rb in batches:
            yield self._reorder_one(rb)

    def _reorder_one(self, rb: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
        """Columns by name in the inferred order (a later file may order or lack them)."""
        names = self.plan.file_columns
        have = rb.schema.names
        arrays = [rb.column(have.index(n)) if n in have else pa.nulls(rb.num_rows)
                  for n in names]
        if isinstance(rb, pa.Table):
            arrays = [a.combine_chunks() for a in arrays]
        return pa.RecordBatch.from_arrays(arrays, names=list(names))

