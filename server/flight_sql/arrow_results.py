"""Result columns as Arrow, the way Flight SQL clients receive them: the executor's columnar
`Batch`es (storage/batch.py) become Arrow record batches column by column, with no row ever
built (numbers, dates and strings are buffer views or vectorised casts).

The Arrow types are those of Doris' Arrow Flight SQL results (and of our OUTFILE parquet,
executor/outfile.py `arrow_array`): integers, floats and BOOLEAN natively, DECIMAL(p, s) as
decimal128(p, s), DATE as date32, DATETIME as timestamp[us], CHAR / VARCHAR / STRING and
LARGEINT (exact digits) as utf8, HLL / BITMAP as binary, ARRAY / MAP / STRUCT as Arrow list /
map / struct of their element types (storage/nested.py `arrow_type`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa

from executor.outfile import arrow_array
from storage import nested
from storage.batch import Batch, Column
from storage.types import DataType, TypeKind

_BLOB_KINDS = (TypeKind.HLL, TypeKind.BITMAP)


def column_array(dtype: DataType, column: Column) -> pa.Array:
    """One result column as Arrow in its Flight SQL type."""
    if dtype.is_nested:
        return nested.to_arrow(dtype, column.to_pylist())  # type: ignore[arg-type]
    if dtype.kind in _BLOB_KINDS:
        return column.to_arrow().cast(pa.binary())
    return arrow_array(dtype, column)


def arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type a column of `dtype` is sent as."""
    return column_array(dtype, Column.from_physical(dtype, [])).type


def result_schema(names: Sequence[str], types: Sequence[DataType]) -> pa.Schema:
    return pa.schema([pa.field(n, arrow_type(t)) for n, t in zip(names, types)])


def record_batches(schema: pa.Schema, types: Sequence[DataType],
                   batches: Iterable[Batch]) -> Iterator[pa.RecordBatch]:
    """The executor's batches as record batches of `schema` (empty batches are skipped)."""
    for batch in batches:
        if not batch.columns or len(batch.columns[0]) == 0:
            continue
        arrays = [column_array(t, c) for t, c in zip(types, batch.columns)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def text_table(names: Sequence[str], rows: Sequence[Sequence[object]]) -> pa.Table:
    """A small all-text result (SHOW output, account statements): utf8 columns of the values'
    text, as the MySQL protocol sends them; NULL stays null."""
    columns = [pa.array([None if row[i] is None else _text(row[i]) for row in rows], pa.string())
               for i in range(len(names))]
    return pa.table(columns, names=list(names))


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
