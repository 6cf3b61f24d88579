"""TPC-H kit shared by tests/tpch and bench/ (bench/harness/datasets.py): data generation
(tpchgen-cli), Doris DDL, loading into ShaleDB directly through the storage API (tests only: the
benchmark, `bench/run.py tpch`, loads by Stream Load) and into DuckDB, the 22 queries, and result
normalisation for comparison.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage import types as T
from storage.batch import Batch, Column

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")

DDL = {
    "region": """CREATE TABLE region (
  r_regionkey INT NOT NULL, r_name CHAR(25) NOT NULL, r_comment VARCHAR(152))
DUPLICATE KEY(r_regionkey) DISTRIBUTED BY HASH(r_regionkey) BUCKETS 1""",
    "nation": """CREATE TABLE nation (
  n_nationkey INT NOT NULL, n_name CHAR(25) NOT NULL, n_regionkey INT NOT NULL,
  n_comment VARCHAR(152))
DUPLICATE KEY(n_nationkey) DISTRIBUTED BY HASH(n_nationkey) BUCKETS 1""",
    "supplier": """CREATE TABLE supplier (
  s_suppkey INT NOT NULL, s_name CHAR(25) NOT NULL, s_address VARCHAR(40) NOT NULL,
  s_nationkey INT NOT NULL, s_phone CHAR(15) NOT NULL, s_acctbal DECIMAL(15,2) NOT NULL,
  s_comment VARCHAR(101) NOT NULL)
DUPLICATE KEY(s_suppkey) DISTRIBUTED BY HASH(s_suppkey) BUCKETS 2""",
    "customer": """CREATE TABLE customer (
  c_custkey INT NOT NULL, c_name VARCHAR(25) NOT NULL, c_address VARCHAR(40) NOT NULL,
  c_nationkey INT NOT NULL, c_phone CHAR(15) NOT NULL, c_acctbal DECIMAL(15,2) NOT NULL,
  c_mktsegment CHAR(10) NOT NULL, c_comment VARCHAR(117) NOT NULL)
DUPLICATE KEY(c_custkey) DISTRIBUTED BY HASH(c_custkey) BUCKETS 3""",
    "part": """CREATE TABLE part (
  p_partkey INT NOT NULL, p_name VARCHAR(55) NOT NULL, p_mfgr CHAR(25) NOT NULL,
  p_brand CHAR(10) NOT NULL, p_type VARCHAR(25) NOT NULL, p_size INT NOT NULL,
  p_container CHAR(10) NOT NULL, p_retailprice DECIMAL(15,2) NOT NULL,
  p_comment VARCHAR(23) NOT NULL)
DUPLICATE KEY(p_partkey) DISTRIBUTED BY HASH(p_partkey) BUCKETS 3""",
    "partsupp": """CREATE TABLE partsupp (
  ps_partkey INT NOT NULL, ps_suppkey INT NOT NULL, ps_availqty INT NOT NULL,
  ps_supplycost DECIMAL(15,2) NOT NULL, ps_comment VARCHAR(199) NOT NULL)
DUPLICATE KEY(ps_partkey, ps_suppkey) DISTRIBUTED BY HASH(ps_partkey) BUCKETS 3""",
    "orders": """CREATE TABLE orders (
  o_orderkey BIGINT NOT NULL, o_custkey INT NOT NULL, o_orderstatus CHAR(1) NOT NULL,
  o_totalprice DECIMAL(15,2) NOT NULL, o_orderdate DATE NOT NULL,
  o_orderpriority CHAR(15) NOT NULL, o_clerk CHAR(15) NOT NULL, o_shippriority INT NOT NULL,
  o_comment VARCHAR(79) NOT NULL)
DUPLICATE KEY(o_orderkey) DISTRIBUTED BY HASH(o_orderkey) BUCKETS 4""",
    "lineitem": """CREATE TABLE lineitem (
  l_orderkey BIGINT NOT NULL, l_partkey INT NOT NULL, l_suppkey INT NOT NULL,
  l_linenumber INT NOT NULL, l_quantity DECIMAL(15,2) NOT NULL,
  l_extendedprice DECIMAL(15,2) NOT NULL, l_discount DECIMAL(15,2) NOT NULL,
  l_tax DECIMAL(15,2) NOT NULL, l_returnflag CHAR(1) NOT NULL, l_linestatus CHAR(1) NOT NULL,
  l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, l_receiptdate DATE NOT NULL,
  l_shipinstruct CHAR(25) NOT NULL, l_shipmode CHAR(10) NOT NULL,
  l_comment VARCHAR(44) NOT NULL)
DUPLICATE KEY(l_orderkey) DISTRIBUTED BY HASH(l_orderkey) BUCKETS 4""",
}


# ---- data generation ---------------------------------------------------------------------
def generate(out_dir: Path, sf: float) -> Path:
    """Write the 8 tables as parquet files into out_dir with tpchgen-cli; returns out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = Path(sys.executable).with_name("tpchgen-cli")
    cmd = [str(exe) if exe.exists() else "tpchgen-cli", "parquet", "-s", str(sf),
           f"--output-dir={out_dir}"]
    subprocess.run(cmd, check=True, capture_output=True)
    return out_dir


def read_table(data_dir: Path, table: str) -> pa.Table:
    return pq.read_table(data_dir / f"{table}.parquet")


# ---- ShaleDB loading ---------------------------------------------------------------------
def _column(dtype: T.DataType, arr: pa.ChunkedArray) -> Column:
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if dtype.is_varlen:
        return Column.from_physical(dtype, arr.cast(pa.string()).to_pylist())
    if dtype.kind is T.TypeKind.DECIMAL:
        scaled = pc.multiply(arr.cast(pa.float64()), float(10 ** dtype.scale))
        data = np.rint(scaled.to_numpy(zero_copy_only=False)).astype(np.int64)
        return Column(dtype, data)
    if dtype.kind is T.TypeKind.DATE:
        data = arr.cast(pa.date32()).cast(pa.int32()).to_numpy(zero_copy_only=False)
        return Column(dtype, data.astype(dtype.numpy_dtype))
    return Column(dtype, arr.to_numpy(zero_copy_only=False).astype(dtype.numpy_dtype))


def load_shaledb(engine, db: str, data_dir: Path, batch_rows: int = 200_000) -> None:  # noqa: ANN001
    """Create database `db` and the 8 tables in a StorageEngine and load the parquet files."""
    from sql.ddl import ddl_ops
    from sql.ddl import specs as V
    from sql.ddl.create_table import analyze_create_table
    from sql.parser.dialect import parse_one
    from storage.catalog import service as catalog_service
    from storage.txn import LoadTxn

    if engine.catalog.get_database(db) is None:
        catalog_service.create_database(engine, db, False)
    backends = len(engine.catalog.backends())
    for name in TABLES:
        defn = analyze_create_table(V.describe_create_table(parse_one(DDL[name])), backends)
        ddl_ops.create_table(engine, db, defn)
        meta = engine.catalog.get_table(db, name)
        data = read_table(data_dir, name)
        txn = LoadTxn(engine, engine.catalog.get_database(db), meta)
        for start in range(0, max(data.num_rows, 1), batch_rows):
            part = data.slice(start, batch_rows)
            if part.num_rows == 0:
                break
            cols = tuple(_column(c.type, part.column(c.name)) for c in meta.columns)
            txn.add_batch(Batch(tuple(meta.column_names), cols))
        txn.commit()


def load_duckdb(con, data_dir: Path) -> None:  # noqa: ANN001
    for name in TABLES:
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet('{data_dir / name}.parquet')")


# ---- result normalisation ----------------------------------------------------------------
def normalize_physical(types: list[T.DataType], rows: list[tuple]) -> list[tuple]:
    """ShaleDB in-process rows (physical values) -> comparable Python values."""
    out = []
    for r in rows:
        vals = []
        for t, v in zip(types, r):
            if v is None:
                vals.append(None)
            elif t.kind is T.TypeKind.DECIMAL:
                vals.append(v / 10 ** t.scale)
            elif t.kind is T.TypeKind.DATE:
                vals.append(T.days_to_date(v).isoformat())
            elif t.kind is T.TypeKind.DATETIME:
                vals.append(T.format_datetime(v, t.scale))
            else:
                vals.append(v)
        out.append(tuple(vals))
    return out


def normalize_py(rows: list[tuple]) -> list[tuple]:
    """DuckDB / pymysql rows -> comparable Python values."""
    out = []
    for r in rows:
        vals = []
        for v in r:
            if isinstance(v, decimal.Decimal):
                vals.append(float(v))
            elif isinstance(v, _dt.datetime):
                vals.append(v.isoformat(sep=" "))
            elif isinstance(v, _dt.date):
                vals.append(v.isoformat())
            elif isinstance(v, bytes):
                vals.append(v.decode())
            else:
                vals.append(v)
        out.append(tuple(vals))
    return out


def _close(a: object, b: object, scale: int | None = None) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        # A DECIMAL result of scale s is the exact value rounded to s places (Doris gives
        # AVG(DECIMAL(p, s)) the scale max(s, 4)); DuckDB keeps more digits.
        slack = 0.5 * 10.0 ** -scale if scale is not None else 0.0
        return abs(float(a) - float(b)) <= slack + 1e-6 * max(abs(float(b)), 1.0)
    if isinstance(a, str) and isinstance(b, str):
        return a.rstrip() == b.rstrip()
    return a == b


def _sort_key(row: tuple) -> tuple:
    # Floats are rounded so that tolerance differences do not change the order.
    return tuple((0, "") if v is None else
                 (1, round(float(v), 4)) if isinstance(v, (int, float)) else (2, str(v).rstrip())
                 for v in row)


def decimal_scales(types: list[T.DataType]) -> list[int | None]:
    return [t.scale if t.kind is T.TypeKind.DECIMAL else None for t in types]


def compare(actual: list[tuple], expected: list[tuple], ordered: bool,
            scales: list[int | None] | None = None) -> str | None:
    """None when equal (order-insensitive unless `ordered`), else a description. `scales`: the
    DECIMAL scale of each actual column (None for other types)."""
    if len(actual) != len(expected):
        return f"row count {len(actual)} != expected {len(expected)}"
    if not ordered:
        actual, expected = sorted(actual, key=_sort_key), sorted(expected, key=_sort_key)
    for i, (a, e) in enumerate(zip(actual, expected)):
        sc = scales or [None] * len(a)
        if len(a) != len(e) or not all(_close(x, y, s) for x, y, s in zip(a, e, sc)):
            return f"row {i}: {a!r} != expected {e!r}"
    return None
