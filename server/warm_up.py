"""`shaledb warm-up`: compile the load path's numba kernels into numba's on-disk cache, in a
process of its own, before a server needs them.

Every kernel is `cache=True`, so it is compiled once per install and loaded from the cache
afterwards. But the first Stream Load a fresh install receives compiles them inside the server:
that load ran at 37-42 MB/s instead of ~110 and peaked at 1.01-1.09 GB of RSS instead of
~700-800 MB (LLVM's memory while compiling; docs/performance.md, branch pipe15), over issue
13's 1 GB. This command runs small real loads (CSV through the same `run_load` a Stream Load
uses: parsing, conversion, routing, memtables, early flushes, segment writing, the commit) into
DUPLICATE, UNIQUE and AGGREGATE tables of the common column types on a throwaway data dir,
then reads them back, so those kernels are in the cache when the server starts.
`scripts/run.sh` runs it before `shaledb serve`; with a warm cache it takes a few seconds.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

# Columns of the warm-up tables: every type a load converts with its own kernels (ints of each
# width, floats, decimals, dates, datetimes, strings of each kind, booleans).
_COLUMNS = (
    ("k_date", "DATE NOT NULL"), ("k_id", "BIGINT NOT NULL"), ("c_tiny", "TINYINT"),
    ("c_small", "SMALLINT"), ("c_int", "INT"), ("c_big", "BIGINT"), ("c_float", "FLOAT"),
    ("c_double", "DOUBLE"), ("c_dec", "DECIMAL(15, 2)"), ("c_dec38", "DECIMAL(38, 6)"),
    ("c_dt", "DATETIME"), ("c_char", "CHAR(16)"), ("c_varchar", "VARCHAR(32)"),
    ("c_string", "STRING"), ("c_bool", "BOOLEAN"),
)
_VALUE_COLUMNS = ", ".join(f"{n} {t}" for n, t in _COLUMNS[2:])
_TABLES = {
    "dup": f"""CREATE TABLE {{name}} (k_date DATE NOT NULL, k_id BIGINT NOT NULL,
               {_VALUE_COLUMNS}) DUPLICATE KEY(k_date, k_id)
               PARTITION BY RANGE(k_date) (PARTITION p2023 VALUES LESS THAN ("2024-01-01"),
                                           PARTITION p2024 VALUES LESS THAN ("2025-01-01"))
               DISTRIBUTED BY HASH(k_id) BUCKETS 1""",
    "uniq": f"""CREATE TABLE {{name}} (k_date DATE NOT NULL, k_id BIGINT NOT NULL,
                {_VALUE_COLUMNS}) UNIQUE KEY(k_date, k_id) DISTRIBUTED BY HASH(k_id) BUCKETS 2""",
    "agg": """CREATE TABLE {name} (k_date DATE NOT NULL, k_id BIGINT NOT NULL,
              c_int INT SUM, c_big BIGINT MAX, c_double DOUBLE MIN, c_dec DECIMAL(15, 2) SUM,
              c_varchar VARCHAR(32) REPLACE) AGGREGATE KEY(k_date, k_id)
              DISTRIBUTED BY HASH(k_id) BUCKETS 2""",
}
# Rows per load: past storage/txn.py's EARLY_FLUSH_ROWS in one tablet (see `_csv`), so the
# early flush path compiles too.
_ROWS = 60_000


def _csv(rows: int, seed: int, names: list[str]) -> bytes:
    """`rows` CSV lines of the `_COLUMNS` in `names`, NULLs (`\\N`) and repeated keys included
    (generated with numpy and written by pyarrow's CSV writer: a few hundred ms)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    nulls = rng.random(rows) < 0.05
    # nine rows in ten in 2024: its one tablet passes EARLY_FLUSH_ROWS (the early flush path)
    days = np.where(rng.random(rows) < 0.9, rng.integers(19723, 20088, rows),
                    rng.integers(19358, 19723, rows))
    days = pa.array(days.astype("int32"), pa.date32())
    words = pa.array(["TRUCK", "MAIL", "1-URGENT", "5-LOW", "São Paulo", "", "x" * 30])
    micros = rng.integers(1_672_531_200, 1_735_603_200, rows) * 1_000_000
    values = {
        "k_date": days, "k_id": pa.array(rng.integers(0, rows // 2, rows)),
        "c_tiny": pa.array(rng.integers(-128, 128, rows), mask=nulls),
        "c_small": pa.array(rng.integers(-32768, 32768, rows)),
        # a narrow range: pages of this INT column are frame-of-reference packed
        "c_int": pa.array(rng.integers(0, 10**6, rows)),
        "c_big": pa.array(rng.integers(-2**62, 2**62, rows)),
        "c_float": pc.round(pa.array(rng.uniform(-1e3, 1e3, rows)), 3),
        "c_double": pa.array(rng.uniform(-1e9, 1e9, rows)),
        "c_dec": pc.round(pa.array(rng.uniform(-1e10, 1e10, rows)), 2),
        "c_dec38": pc.round(pa.array(rng.uniform(-1e15, 1e15, rows)), 6),
        "c_dt": pa.array(micros, pa.timestamp("us")),
        "c_char": words.take(pa.array(rng.integers(0, 6, rows))),
        "c_varchar": words.take(pa.array(rng.integers(0, 7, rows))),
        "c_string": pc.binary_join_element_wise(
            "s", pa.array(rng.integers(0, 977, rows)).cast(pa.string()), ""),
        "c_bool": pa.array(rng.integers(0, 2, rows)),
    }
    values["c_string"] = pc.if_else(pa.array(nulls), pa.scalar(None, pa.string()),
                                    values["c_string"])
    table = pa.table({n: values[n] for n in names})
    out = io.BytesIO()
    pacsv.write_csv(table, out, pacsv.WriteOptions(include_header=False, null_string="\\N",
                                                   quoting_style="none"))
    return out.getvalue()


def _load_and_read(data_dir: Path) -> int:
    """Create the tables, load each twice (a second rowset) and scan them; rows read."""
    from sqlglot import exp

    from executor.load.job import run_load
    from executor.load.spec import spec_from_properties
    from sql.ddl import ddl_ops, specs
    from sql.ddl.create_table import analyze_create_table
    from sql.parser.dialect import parse_one
    from storage.catalog import service as catalog_service
    from storage.engine import StorageEngine
    from storage.reader import ReadOptions

    engine = StorageEngine(data_dir, backends=1)
    catalog_service.create_database(engine, "warm", False)
    read = 0
    for n, (name, ddl) in enumerate(_TABLES.items()):
        stmt = parse_one(ddl.format(name=name))
        assert isinstance(stmt, exp.Create)
        defn = analyze_create_table(specs.describe_create_table(stmt), 1)
        ddl_ops.create_table(engine, "warm", defn)
        table = engine.catalog.get_table("warm", name)
        assert table is not None
        columns = [c for c, _ in _COLUMNS if table.has_column(c)]
        for seed in range(2):
            data = _csv(_ROWS, seed + 10 * n, columns)
            spec = spec_from_properties(engine.catalog, "warm", table,
                                        {"column_separator": ",", "label": f"{name}_{seed}"})
            run_load(engine, spec, io.BytesIO(data))
        for part in engine.catalog.partitions(table.table_id):
            for tablet in engine.catalog.tablets(table.table_id, part.partition_id):
                for batch in engine.read_tablet(tablet, part.visible_version,
                                                ReadOptions(table.column_names)):
                    read += batch.num_rows
    return read


def run() -> int:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="shaledb-warm-up-") as tmp:
        rows = _load_and_read(Path(tmp) / "data")
    print(f"shaledb warm-up: load kernels compiled and cached ({rows:,} rows loaded and read "
          f"back in {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0
