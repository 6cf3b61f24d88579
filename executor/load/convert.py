"""File columns -> the table's column types, for every load path.

Text formats (CSV, JSON read as text) give string columns; parquet, ORC, Arrow and pyarrow's
JSON reader give typed ones (ints, floats, decimals, dates, timestamps, nested values). Each
column is converted whole with Arrow casts where they agree with Doris' rules; otherwise value
by value through `DataType.to_physical` on the value's text, which names the bad value. Text
that is not UTF-8 makes its row bad (CSV is read without pyarrow's whole-block UTF-8 check so
that one bad value filters one row, not the load). A bad value is a
filtered row in strict mode (and always for strings too long or NULL in a NOT NULL column);
outside strict mode it becomes NULL, as in Doris. Columns the file does not carry take their
DEFAULT.
"""

from __future__ import annotations

import datetime as _dt
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from executor.insert import default_value
from executor.load.spec import LoadSpec, LoadStats, StatsRecord
from sql.errors import DorisError
from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta
from storage.types import DataType, TypeError_, TypeKind

_ARROW_CASTS = {
    TypeKind.TINYINT: pa.int64(), TypeKind.SMALLINT: pa.int64(), TypeKind.INT: pa.int64(),
    TypeKind.BIGINT: pa.int64(), TypeKind.FLOAT: pa.float32(), TypeKind.DOUBLE: pa.float64(),
    TypeKind.DATE: pa.date32(), TypeKind.DATETIME: pa.timestamp("us"),
}
_INT_KINDS = (TypeKind.BOOLEAN, TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT,
              TypeKind.BIGINT)


def _is_text(arr: pa.Array) -> bool:
    return pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)


def vector_convert(t: DataType, arr: pa.Array) -> Column | None:
    """The whole column converted with Arrow casts, or None when some value needs the
    per-value path (a bad value, rounding, out of range, or a type cast here does not cover)."""
    if _is_text(arr):
        return _text_convert(t, arr)
    return _typed_convert(t, arr)


def _typed_convert(t: DataType, arr: pa.Array) -> Column | None:
    """A typed file column (parquet, ORC, Arrow, pyarrow JSON) whose type fits the table's."""
    k, ty = t.kind, arr.type
    try:
        if pa.types.is_null(ty):
            return Column.from_physical(t, [None] * len(arr))
        if (t.is_integer or k is TypeKind.BOOLEAN) and k in _INT_KINDS and \
                (pa.types.is_integer(ty) or pa.types.is_boolean(ty)):
            as64 = pc.cast(arr, pa.int64())
            lo, hi = t.int_range()
            mm = pc.min_max(as64)
            if mm["min"].as_py() is not None and (mm["min"].as_py() < lo or mm["max"].as_py() > hi):
                return None
            return Column.from_arrow(t, as64)
        if k in (TypeKind.FLOAT, TypeKind.DOUBLE) and (
                pa.types.is_integer(ty) or pa.types.is_floating(ty) or pa.types.is_decimal(ty)):
            return Column.from_arrow(t, pc.cast(arr, _ARROW_CASTS[k]))
        if k is TypeKind.DECIMAL and t.precision <= 18 and (
                pa.types.is_integer(ty) or pa.types.is_decimal(ty)):
            return _decimal_column(t, pc.cast(arr, pa.decimal128(t.precision, t.scale)))
        if k is TypeKind.DATE and (pa.types.is_date(ty) or pa.types.is_timestamp(ty)):
            return Column.from_arrow(t, pc.cast(arr, pa.date32(), safe=False).cast(pa.int32()))
        if k is TypeKind.DATETIME and (pa.types.is_date(ty) or pa.types.is_timestamp(ty)):
            micros = pc.cast(arr, pa.timestamp("us"), safe=False)
            return _datetime_column(t, micros.cast(pa.int64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        return None
    return None


def as_text(arr: pa.Array) -> pa.Array:
    """A typed column as the text Doris would parse: JSON for nested values, 1/0 for booleans,
    `YYYY-MM-DD hh:mm:ss[.ffffff]` for timestamps."""
    ty = arr.type
    if _is_text(arr):
        return arr
    if pa.types.is_dictionary(ty):
        return as_text(arr.dictionary_decode())
    if pa.types.is_boolean(ty):
        return pc.cast(pc.cast(arr, pa.int8()), pa.string())
    if pa.types.is_timestamp(ty):
        return pc.strftime(arr, "%Y-%m-%d %H:%M:%S")
    if pa.types.is_nested(ty):
        return pa.array([None if v is None else json.dumps(v, separators=(",", ":"), default=str)
                         for v in arr.to_pylist()], pa.string())
    if pa.types.is_binary(ty) or pa.types.is_large_binary(ty):
        return arr  # checked for UTF-8 by the caller
    try:
        return pc.cast(arr, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else str(v) for v in arr.to_pylist()], pa.string())


def _utf8_text(arr: pa.Array, bad: np.ndarray, reasons: dict[int, str],
               col: ColumnMeta) -> pa.Array:
    """`arr` as a string array; a value that is not UTF-8 makes its row bad (and NULL here)."""
    try:
        if _is_text(arr):
            arr.validate(full=True)
            return arr
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        pass
    values: list[str | None] = []
    for i, v in enumerate(arr.cast(pa.large_binary()).to_pylist()):
        try:
            values.append(None if v is None else v.decode())
        except UnicodeDecodeError:
            values.append(None)
            if not bad[i]:
                bad[i] = True
                reasons[i] = ("Unable to display, only support csv data in utf8 codec, please "
                              f"check the data encoding (column `{col.name}`)")
    return pa.array(values, pa.string())


def _decimal_column(t: DataType, arr: pa.Array) -> Column:
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[2 * arr.offset::2][:len(arr)]
    valid = None
    if arr.null_count:
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
    return Column(t, np.where(valid, words, 0) if valid is not None else words.copy(), valid)


def _datetime_column(t: DataType, micros: pa.Array) -> Column:
    if t.scale < 6:
        unit = 10 ** (6 - t.scale)
        micros = pc.multiply(pc.divide(micros, unit), unit)  # truncates (int division)
    return Column.from_arrow(t, micros)


def has_hex_prefix(text: pa.Array) -> bool:
    """Whether some value of a string column may hold `0x` / `0X`, which Arrow's integer
    parsing reads as hexadecimal and Doris refuses as not a number (the per-value path then
    decides). Decimal text has no byte above '9', so one vectorised max over the column's
    bytes usually answers; else a search of them (a hit outside its values only costs the
    per-value path)."""
    data = text.buffers()[2]
    if data is None:
        return False
    raw = np.frombuffer(data, dtype=np.uint8)
    if not len(raw) or int(raw.max()) <= ord("9"):
        return False
    found = data.to_pybytes()
    return b"0x" in found or b"0X" in found


def _text_convert(t: DataType, text: pa.Array) -> Column | None:
    k = t.kind
    try:
        if t.is_string:
            if k is not TypeKind.STRING and len(text) and \
                    (pc.max(pc.binary_length(text)).as_py() or 0) > t.length:
                return None
            return Column.from_arrow(t, text)
        if t.is_integer and k in _ARROW_CASTS:
            if has_hex_prefix(text):  # Arrow reads 0x10 as 16; Doris refuses it
                return None
            # straight to the column's width: pyarrow refuses a value out of its range (the
            # per-value path then names it), no int64 pass and min_max check (docs/performance.md)
            return Column.from_arrow(t, pc.cast(text, pa.from_numpy_dtype(t.numpy_dtype)))
        if k in _ARROW_CASTS:
            arr = pc.cast(text, _ARROW_CASTS[k])
            if k is TypeKind.DATETIME:
                return _datetime_column(t, arr.cast(pa.int64()))
            if k is TypeKind.DATE:
                arr = arr.cast(pa.int32())
            return Column.from_arrow(t, arr)
        if k is TypeKind.DECIMAL and t.precision <= 18:
            return _decimal_column(t, pc.cast(text, pa.decimal128(t.precision, t.scale)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        return None
    return None


def convert_column(col: ColumnMeta, text: pa.Array, strict: bool,
                   bad: np.ndarray, reasons: dict[int, str], timezone: str = "UTC") -> Column:
    """One file column -> the table column's type. Rows whose value does not convert are set in
    `bad` (strict mode) or become NULL (Doris' default); a NULL for a NOT NULL column is bad.
    `timezone` is the wall clock of a zoned timestamp."""
    t = col.type
    if pa.types.is_dictionary(text.type):
        text = text.dictionary_decode()
    column = None
    if _is_text(text) and (t.is_numeric or t.is_temporal):
        # Arrow's number and date parsers accept ASCII only, so a cast that succeeds proves
        # the text valid UTF-8: the whole-column UTF-8 check runs only when it fails
        # (docs/performance.md, branch load13)
        column = vector_convert(t, text)
    if column is None and (_is_text(text) or pa.types.is_binary(text.type)
                           or pa.types.is_large_binary(text.type)):
        text = _utf8_text(text, bad, reasons, col)
    if pa.types.is_timestamp(text.type) and text.type.tz is not None:  # Doris' load timezone
        text = pc.local_timestamp(text.cast(pa.timestamp(text.type.unit, timezone)))
    if column is None:
        column = vector_convert(t, text)
    if column is None:
        text = as_text(text)
        values: list[object] = []
        for i, v in enumerate(text.to_pylist()):
            if v is None:
                values.append(None)
                continue
            try:
                values.append(t.to_physical(v))
            except (TypeError_, ValueError, ArithmeticError) as e:
                values.append(None)
                if (strict or t.is_string or not col.nullable) and not bad[i]:
                    bad[i] = True
                    reasons[i] = f"column `{col.name}` ({t.sql()}): {e}; value: {v}"
        column = Column.from_physical(t, values)
    if not col.nullable and column.validity is not None:
        for i in np.flatnonzero(~column.validity & ~bad).tolist():
            bad[i] = True
            reasons[i] = f"null value for not null column, column={col.name}"
    return column


def to_batch(req: LoadSpec, rb: pa.RecordBatch, stats: LoadStats | StatsRecord,
             now: _dt.datetime) -> Batch:
    """A parsed block -> the full-schema Batch of its good rows; bad rows counted as filtered."""
    return converted_rows(req, rb, stats, now)[0]


def converted_rows(req: LoadSpec, rb: pa.RecordBatch, stats: LoadStats | StatsRecord,
                   now: _dt.datetime) -> tuple[Batch, np.ndarray | None]:
    """A parsed block -> (the full-schema Batch of its good rows, their positions in `rb` or
    None when every row is good); bad rows counted as filtered, with their row.

    The block's columns are matched to the load's columns by name (case-insensitively, as
    Doris matches parquet/ORC/JSON fields); a column the file does not carry takes its
    DEFAULT, and when it has none every row is bad with Doris' reason."""
    n = rb.num_rows
    bad = np.zeros(n, dtype=np.bool_)
    reasons: dict[int, str] = {}
    in_file = {name.lower(): j for j, name in enumerate(rb.schema.names)}
    converted = {c.name.lower(): convert_column(c, rb.column(in_file[c.name.lower()]),
                                                req.strict, bad, reasons,
                                                req.format.timezone)
                 for c in req.targets if c.name.lower() in in_file}
    cols = []
    for c in req.table.columns:
        col = converted.get(c.name.lower())
        if col is None:
            try:
                col = Column.constant(c.type, default_value(c, now), n)
            except DorisError:
                col = Column.constant(c.type, None, n)
                for i in np.flatnonzero(~bad).tolist():
                    bad[i] = True
                    reasons[i] = f"The column `{c.name}` is not nullable, but it's not found " \
                                 "in the file."
        cols.append(col)
    for i in sorted(reasons):
        stats.filtered(f"Reason: {reasons[i]}. src line: [{_line(rb, i, req.separator)}]", i)
    batch = Batch(req.table.column_names, tuple(cols))
    if not bad.any():
        return batch, None
    return batch.filter(~bad), np.flatnonzero(~bad)


def _line(rb: pa.RecordBatch, i: int, sep: str) -> str:
    """Row `i` of the file as text for an error message (never raises: bad UTF-8 shown
    replaced, nested values as JSON)."""
    out = []
    for c in rb.columns:
        v = c[i].as_py() if not (_is_text(c) or pa.types.is_binary(c.type)) else \
            c.cast(pa.binary())[i].as_py()
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        out.append("\\N" if v is None else str(v))
    return sep.join(out)
