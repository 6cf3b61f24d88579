"""Loading the DuckDB side of a comparison test.

`duckdb.executemany` inserts row by row (about 1-3k rows/s measured on the 2-core CI box: a
120k-row fixture took over a minute); `insert_rows` hands DuckDB the rows as one Arrow table
and inserts them in one statement, by position, with DuckDB's implicit casts to the target
columns' types (as `executemany`'s parameters had).
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pyarrow as pa


def insert_rows(duck: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Sequence[object]]) -> None:
    """INSERT INTO `table` every row of `rows` (tuples in the table's column order)."""
    if not rows:
        return
    columns = list(zip(*rows, strict=True))
    arrow = pa.table({f"c{i}": pa.array(values) for i, values in enumerate(columns)})
    view = f"__rows_{id(arrow)}"
    duck.register(view, arrow)
    try:
        duck.execute(f"INSERT INTO {table} SELECT * FROM {view}")
    finally:
        duck.unregister(view)
