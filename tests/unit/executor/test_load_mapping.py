"""executor/load/mapping.py in process: a parsed block (Arrow record batch) through a `columns` /
`where` mapping, for text (CSV) and typed (Parquet-like) sources, checked value by value."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from executor.load.mapping import MappingError, build_mapping, load_now
from storage.catalog.meta import (
    ColumnMeta,
    DistributionInfo,
    DistributionType,
    KeysType,
    PartitionInfo,
    PartitionType,
    TableMeta,
)
from storage.types import BIGINT, DATE, INT, varchar

TABLE = TableMeta(
    1, 1, "t", KeysType.DUP_KEYS,
    (ColumnMeta("k", INT, is_key=True, nullable=False), ColumnMeta("v", BIGINT),
     ColumnMeta("s", varchar(4), nullable=False), ColumnMeta("d", DATE),
     ColumnMeta("n", INT, has_default=True, default="7")),
    PartitionInfo(PartitionType.UNPARTITIONED), DistributionInfo(DistributionType.HASH, ("k",), 1),
    10)
NOW = dt.datetime(2024, 5, 6, 7, 8, 9)


def run(mapping, rb: pa.RecordBatch, strict: bool = False):
    bad = np.zeros(rb.num_rows, dtype=np.bool_)
    reasons: dict[int, str] = {}
    batch, unselected, _ = mapping.to_batch(rb, strict, bad, reasons, NOW)
    return batch.rows(), unselected, reasons


def text_batch(**columns: list[str | None]) -> pa.RecordBatch:
    """A CSV block: string columns named after the file columns (csv_source.py's naming)."""
    return pa.record_batch([pa.array(c, pa.string()) for c in columns.values()],
                           names=list(columns))


def test_temporary_columns_expressions_and_defaults() -> None:
    m = build_mapping(TABLE, "k, tmp, skip, v = tmp * 10, s = upper(skip), d = "
                             "str_to_date(tmp, '%Y')", None)
    rb = text_batch(k=["1", "2", "3"], tmp=["2024", "x", None], skip=["ab", "cd", "ef"])
    got, unselected, reasons = run(m, rb)
    assert unselected == 0 and reasons == {}
    assert got == [(1, 20240, "AB", DATE.to_physical(dt.date(2024, 1, 1)), 7), (2, None, "CD", None, 7),
                   (3, None, "EF", None, 7)]


def test_computed_null_for_not_null_is_filtered_and_where_counts_unselected() -> None:
    m = build_mapping(TABLE, "k, s, v = k + 100, s = nullif(s, 'zz')", "v > 101")
    rb = text_batch(k=["1", "2", "3", "4"], s=["a", "zz", "b", "c"])
    got, unselected, reasons = run(m, rb, strict=True)
    assert reasons == {1: "null value for not null column, column=s"}
    assert unselected == 1  # k=1 (v=101)
    assert got == [(3, 103, "b", None, 7), (4, 104, "c", None, 7)]


def test_typed_source_columns_keep_their_type() -> None:
    """A Parquet-like block, fields in their own order and matched by name (case-insensitive):
    integers are BIGINT to expressions, not text; a field the block lacks is NULL."""
    m = build_mapping(TABLE, "k, raw, s, gone, v = raw DIV 3 + coalesce(gone, 0)", None)
    rb = pa.record_batch([pa.array(["x", "y"]), pa.array([10, 11], pa.int64()),
                          pa.array([1, 2], pa.int32())], names=["S", "raw", "k"])
    got, _, _ = run(m, rb)
    assert got == [(1, 3, "x", None, 7), (2, 3, "y", None, 7)]


def test_mapping_errors_before_data() -> None:
    with pytest.raises(MappingError, match="Mapping column is not in table. column: z"):
        build_mapping(TABLE, "k, z = k", None)
    with pytest.raises(MappingError, match="Unknown column 'q' in 'table list'"):
        build_mapping(TABLE, "k, v = q", None)
    with pytest.raises(MappingError, match="Unknown column 'tmp' in 'table list'"):
        build_mapping(TABLE, "k, tmp", "tmp > 1")  # where sees table columns only
    with pytest.raises(MappingError, match="Unknown or incorrect time zone"):
        load_now("Nowhere/Town")
    assert abs(load_now("+00:00") - dt.datetime.now(dt.UTC).replace(tzinfo=None)) < \
        dt.timedelta(minutes=1)
