"""File table functions at run time: find the files, infer their schema, scan them.

`LocalFiles` is the `FileFunctionResolver` the binder asks about `local(..)`: it checks the
arguments (sql/table_functions.py), expands `file_path` inside the import directory
(executor/file_dirs.py) and infers the columns from the first file as Doris does: CSV gives
c1..cn (or the header's names for csv_with_names*) of type STRING; parquet and orc give their
schema in Doris types; JSON gives the first object's keys as STRING columns.
`FileScan` is the operator of `LogicalFileScan`: CSV files are parsed by the load core's
streaming reader (executor/load/sources.py `record_batches`), parquet / orc / JSON by pyarrow's
readers; decompression (compress_type, or the file suffix) by pyarrow's codecs.
Upstream: Doris `LocalTableValuedFunction` (FE), `FileScanNode` / `CsvReader` /
`ParquetReader` / `OrcReader` (BE).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from executor.file_dirs import FileDirs
from executor.load.convert import vector_convert
from executor.load.sources import record_batches
from executor.load.spec import FormatOptions, LoadFailed, LoadSpec, LoadStats, parse_separator
from executor.operator import Operator, chunks
from planner.logical import LogicalFileScan
from sql.errors import DorisError
from sql.table_functions import FileSource, check_local_properties
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

# compress_type -> pyarrow codec; "" = plain. Doris' names, plus the suffixes it infers from.
_CODECS = {"plain": "", "gz": "gzip", "gzip": "gzip", "bz2": "bz2", "lz4frame": "lz4",
           "lz4": "lz4", "zstd": "zstd"}
_SUFFIX_CODECS = {".gz": "gzip", ".bz2": "bz2", ".lz4": "lz4", ".zst": "zstd", ".zstd": "zstd"}
_SCHEMA_PROBE_BYTES = 1 << 16
# local() arguments honoured here; Doris' other format properties are refused unless they
# have their default value (false / empty), rather than silently ignored
_HANDLED = frozenset({"file_path", "backend_id", "shared_storage", "format", "column_separator",
                      "line_delimiter", "compress_type", "skip_lines", "read_json_by_line"})


def codec_of(path: str, compress_type: str) -> str:
    kind = compress_type.strip().lower()
    if kind in ("", "unknown"):
        return _SUFFIX_CODECS.get(Path(path).suffix.lower(), "")
    if kind not in _CODECS:
        raise DorisError(f"compress_type {compress_type} is not supported (supported: PLAIN, "
                         "GZ, BZ2, LZ4FRAME, ZSTD)")
    return _CODECS[kind]


def open_stream(path: str, compress_type: str) -> Any:
    """The file's bytes, decompressed: a pyarrow input stream (file-like)."""
    raw = pa.OSFile(path, "rb")
    codec = codec_of(path, compress_type)
    return pa.CompressedInputStream(raw, codec) if codec else raw


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


def to_column(t: DataType, arr: pa.Array | pa.ChunkedArray) -> Column:
    """An Arrow column of a file -> our Column of Doris type `t` (whole-column casts where
    they apply, else value by value)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_nested(arr.type):  # a JSON object or array value: its JSON text
        return Column.from_physical(t, [None if v is None else json.dumps(v, default=str)
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


def _csv_separator(source_options: dict[str, str]) -> str:
    try:
        return parse_separator(source_options.get("column_separator", "\t"))
    except LoadFailed as e:
        raise DorisError(e.message) from None


def _csv_skip(fmt: str, options: dict[str, str]) -> int:
    header = {"csv": 0, "csv_with_names": 1, "csv_with_names_and_types": 2}[fmt]
    try:
        return header + int(options.get("skip_lines", "0"))
    except ValueError:
        raise DorisError(f"skip_lines must be a number, got {options['skip_lines']}") from None


def _csv_first_rows(path: str, options: dict[str, str], sep: str,
                    skip: int) -> list[list[str]]:
    """The first rows of a CSV file after `skip` lines (for the column count and the
    header's names)."""
    stream = open_stream(path, options.get("compress_type", ""))
    try:
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, skip_rows=skip,
                                           block_size=_SCHEMA_PROBE_BYTES, use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=sep, quote_char=False,
                                             invalid_row_handler=lambda _row: "skip"),
            convert_options=pacsv.ConvertOptions(
                column_types={}, strings_can_be_null=False,
                auto_dict_encode=False, check_utf8=False))
        rb = reader.read_next_batch()
    except (StopIteration, pa.ArrowInvalid):
        return []
    finally:
        stream.close()
    table = pa.Table.from_batches([rb]).cast(
        pa.schema([(n, pa.string()) for n in rb.schema.names]))
    return [list(r.values()) for r in table.slice(0, 64).to_pylist()]


def infer_schema(paths: list[str], fmt: str, options: dict[str, str]) \
        -> tuple[tuple[str, ...], tuple[DataType, ...]]:
    first = paths[0]
    if fmt == "parquet":
        schema = pq.read_schema(first)
    elif fmt == "orc":
        schema = paorc.ORCFile(first).schema
    elif fmt == "json":
        rows = list(_json_batches(first, options, 1 << 16))
        names = tuple(rows[0].schema.names) if rows else ()
        return names, tuple(STRING for _ in names)
    else:
        sep = _csv_separator(options)
        lead = _csv_skip("csv", options)  # skip_lines come before the header, if any
        rows = _csv_first_rows(first, options, sep, lead)
        if not rows:
            raise DorisError(f"The first line of file {first} is empty: cannot infer its columns")
        if fmt == "csv":
            return tuple(f"c{i + 1}" for i in range(len(rows[0]))), (STRING,) * len(rows[0])
        return tuple(rows[0]), (STRING,) * len(rows[0])
    return tuple(schema.names), tuple(arrow_type(f.type, f.name) for f in schema)


def _json_batches(path: str, options: dict[str, str], block: int) -> Iterator[pa.RecordBatch]:
    if options.get("read_json_by_line", "true").strip().lower() != "true":
        raise DorisError("JSON files are read one object per line here (read_json_by_line = "
                         "true)")
    stream = open_stream(path, options.get("compress_type", ""))
    try:
        table = pajson.read_json(stream, read_options=pajson.ReadOptions(block_size=block,
                                                                          use_threads=False))
    finally:
        stream.close()
    yield from table.to_batches()


class LocalFiles:
    """`local(..)` resolution against the import directory (sql.table_functions' resolver)."""

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
        fmt = properties["format"].strip().lower()
        if properties.get("line_delimiter", "\\n") not in ("\\n", "\n", "\\r\\n", "\r\n"):
            raise DorisError(f"line_delimiter [{properties['line_delimiter']}] is not supported "
                             "yet: use \\n or \\r\\n")
        for key, value in properties.items():
            if key not in _HANDLED and value.strip().lower() not in ("", "false"):
                raise DorisError(f"property {key} of local() is not supported yet")
        options = {k: v for k, v in properties.items()
                   if k not in ("file_path", "backend_id", "shared_storage")}
        options.pop("format", None)
        paths = [str(p) for p in self.dirs.import_files(properties["file_path"])]
        try:
            names, types = infer_schema(paths, fmt, options)
        except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
            raise DorisError(f"cannot read file {paths[0]}: {e}") from None
        return FileSource(function, alias, tuple(paths), fmt, tuple(sorted(options.items())),
                          names, types)


def _load_spec(names: tuple[str, ...], sep: str, skip: int) -> LoadSpec:
    """The load core's parse description for a CSV file of `names` string columns (the table
    is a stand-in: record_batches reads the column count and the format). Header lines are
    counted in `skip` here, so the format given to the load core is plain csv."""
    columns = tuple(ColumnMeta(f"c{i + 1}", STRING) for i in range(len(names)))
    table = TableMeta(0, 0, "local", KeysType.DUP_KEYS, columns,
                      PartitionInfo(PartitionType.UNPARTITIONED),
                      DistributionInfo(DistributionType.RANDOM, (), 1), 0)
    return LoadSpec(db="", table=table, label="", targets=list(columns),
                    format=FormatOptions(format="csv", separator=sep, skip_rows=skip),
                    max_filter_ratio=1.0, strict=False)


class FileScan(Operator):
    def __init__(self, plan: LogicalFileScan) -> None:
        super().__init__()
        self.plan = plan
        self.load_stats = LoadStats()  # rows with a wrong column count (skipped, as Doris)

    def produce(self) -> Iterator[Batch]:
        p = self.plan
        wanted = [p.file_columns.index(c) for c in p.columns]
        for path in p.paths:
            for rb in self._file_batches(path):
                try:
                    cols = tuple(to_column(p.file_types[i], rb.column(i)) for i in wanted)
                except pa.ArrowException as e:
                    raise DorisError(f"failed to read file {path}: {e}") from None
                yield from chunks(Batch(p.columns, cols), self.ctx.batch_size)

    def _file_batches(self, path: str) -> Iterator[pa.RecordBatch]:
        p = self.plan
        options = dict(p.options)
        try:
            if p.format == "parquet":
                yield from self._reorder(pq.ParquetFile(path).iter_batches(
                    batch_size=self.ctx.batch_size, columns=list(p.file_columns)))
            elif p.format == "orc":
                orc = paorc.ORCFile(path)
                yield from self._reorder(orc.read_stripe(i) for i in range(orc.nstripes))
            elif p.format == "json":
                yield from self._reorder(_json_batches(path, options, 1 << 20))
            else:
                spec = _load_spec(p.file_columns, _csv_separator(options),
                                  _csv_skip(p.format, options))
                stream = open_stream(path, options.get("compress_type", ""))
                try:
                    for rb in record_batches(stream, spec, self.load_stats):
                        rb.validate(full=True)  # invalid UTF-8 is an error, as in a load
                        yield rb
                finally:
                    stream.close()
        except (OSError, pa.ArrowException) as e:
            raise DorisError(f"failed to read file {path}: {e}") from None

    def _reorder(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Columns by name in the inferred order (a later file may order or lack them)."""
        names = self.plan.file_columns
        for rb in batches:
            have = rb.schema.names
            arrays = [rb.column(have.index(n)) if n in have else pa.nulls(rb.num_rows)
                      for n in names]
            yield pa.RecordBatch.from_arrays(arrays, names=list(names))
