"""The DuckDB side: the same Arrow tables in a DuckDB database FILE (not in memory), written,
checkpointed and reopened, so DuckDB reads its own storage format as ShaleDB reads its own."""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pyarrow as pa


def build(path: Path, tables: dict[str, pa.Table]) -> tuple[duckdb.DuckDBPyConnection, float]:
    """(a connection to the reopened database file, seconds the load and checkpoint took)."""
    path.unlink(missing_ok=True)
    con = duckdb.connect(str(path))
    t0 = time.perf_counter()
    for name, table in tables.items():
        con.register("_src", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM _src")
        con.unregister("_src")
    con.execute("CHECKPOINT")
    seconds = time.perf_counter() - t0
    con.close()
    return duckdb.connect(str(path), read_only=True), seconds
