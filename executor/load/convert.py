"""File columns -> the table's column types, for every load path.

Each column is converted whole with Arrow casts where they agree with Doris' rules; otherwise
value by value through `DataType.to_physical`, which names the bad value. A bad value is a
filtered row in strict mode (and always for strings too long or NULL in a NOT NULL column);
outside strict mode it becomes NULL, as in Doris. Columns the file does not carry take their
DEFAULT.
"""

from __future__ import annotations

import datetime as _dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from executor.insert import default_value
from executor.load.spec import LoadSpec, LoadStats
from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta
from storage.types import DataType, TypeError_, TypeKind

_ARROW_CASTS = {
    TypeKind.TINYINT: pa.int64(), TypeKind.SMALLINT: pa.int64(), TypeKind.INT: pa.int64(),
    TypeKind.BIGINT: pa.int64(), TypeKind.FLOAT: pa.float32(), TypeKind.DOUBLE: pa.float64(),
    TypeKind.DATE: pa.date32(), TypeKind.DATETIME: pa.timestamp("us"),
}


def vector_convert(t: DataType, text: pa.Array) -> Column | None:
    """The whole column converted with Arrow casts, or None when some value needs the
    per-value path (a bad value, rounding, out of range, or a type cast here does not cover)."""
    k = t.kind
    try:
        if t.is_string:
            if k is not TypeKind.STRING and len(text) and \
                    (pc.max(pc.binary_length(text)).as_py() or 0) > t.length:
                return None
            return Column.from_arrow(t, text)
        if t.is_integer and k in _ARROW_CASTS:
            # straight to the column's width: pyarrow refuses a value out of its range (the
            # per-value path then names it), no int64 pass and min_max check (docs/performance.md)
            return Column.from_arrow(t, pc.cast(text, pa.from_numpy_dtype(t.numpy_dtype)))
        if k in _ARROW_CASTS:
            arr = pc.cast(text, _ARROW_CASTS[k])
            if k is TypeKind.DATETIME:
                arr = arr.cast(pa.int64())
                if t.scale < 6:
                    unit = 10 ** (6 - t.scale)
                    arr = pc.multiply(pc.divide(arr, unit), unit)  # truncates (int division)
            if k is TypeKind.DATE:
                arr = arr.cast(pa.int32())
            return Column.from_arrow(t, arr)
        if k is TypeKind.DECIMAL and t.precision <= 18:
            arr = pc.cast(text, pa.decimal128(t.precision, t.scale))
            words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[2 * arr.offset::2][:len(arr)]
            valid = None
            if arr.null_count:
                valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
            return Column(t, np.where(valid, words, 0) if valid is not None else words.copy(), valid)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        return None
    return None


def convert_column(col: ColumnMeta, text: pa.Array, strict: bool,
             bad: np.ndarray, reasons: dict[int, str]) -> Column:
    """One file column -> the table column's type. Rows whose value does not convert are set in
    `bad` (strict mode) or become NULL (Doris' default); a NULL for a NOT NULL column is bad."""
    t = col.type
    column = vector_convert(t, text)
    if column is None:
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


def to_batch(req: LoadSpec, rb: pa.RecordBatch, stats: LoadStats, now: _dt.datetime) -> Batch:
    """A parsed block -> the full-schema Batch of its good rows; bad rows counted as filtered."""
    n = rb.num_rows
    bad = np.zeros(n, dtype=np.bool_)
    reasons: dict[int, str] = {}
    converted = {c.name.lower(): convert_column(c, rb.column(j), req.strict, bad, reasons)
                 for j, c in enumerate(req.targets)}
    for i in sorted(reasons):
        stats.filtered(f"Reason: {reasons[i]}. src line: [{_line(rb, i, req.separator)}]")
    cols = []
    for c in req.table.columns:
        col = converted.get(c.name.lower())
        cols.append(col if col is not None else Column.constant(c.type, default_value(c, now), n))
    batch = Batch(req.table.column_names, tuple(cols))
    return batch.filter(~bad) if bad.any() else batch


def _line(rb: pa.RecordBatch, i: int, sep: str) -> str:
    return sep.join("\\N" if v is None else str(v) for v in (c[i].as_py() for c in rb.columns))

