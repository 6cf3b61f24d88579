"""The benchmark data sets: each a set of Arrow tables with Doris' DDL for them and the queries.

- `ssb(sf)`: the 5 SSB tables from bench/ssb.py's numpy generator (fixed seed) and its 13
  queries.
- `ssb_flat(sf, rollups)`: Doris' `lineorder_flat` (the SSB-flat kit's DDL: every lineorder
  column plus the customer, supplier and part attributes, yearly range partitions on
  lo_orderdate, hash buckets on lo_orderkey; 8 buckets here instead of the kit's 48, for 2 cores)
  joined from the SSB tables in DuckDB, with the 13 flat queries of bench/ssb_flat_rollups.py and,
  `with_rollups`, the per-query-group sync materialized views from there.
- `tpch(sf, work)`: the 8 TPC-H tables from tpchgen-cli and the 22 queries (tests/tpch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import pyarrow as pa


@dataclass
class Dataset:
    name: str
    tables: dict[str, pa.Table]  # in load order
    ddl: dict[str, str]  # CREATE TABLE per table (Doris dialect)
    queries: dict[str, str]  # query id -> ShaleDB SQL
    duck_sql: Callable[[str], str] = lambda sql: sql  # ShaleDB SQL -> DuckDB SQL
    ordered: Callable[[str], bool] = lambda sql: "ORDER BY" in sql.upper()
    notes: list[str] = field(default_factory=list)
    # statements run after a table's CREATE TABLE and before its load (CREATE MATERIALIZED VIEW;
    # the loader waits for their build jobs, so the loads write the views as Doris' do)
    setup: dict[str, list[str]] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(t.num_rows for t in self.tables.values())


def ssb(sf: float) -> Dataset:
    import ssb as kit

    data = kit.generate(sf, kit.SEED)
    return Dataset("ssb", {t: data[t] for t in kit.TABLES}, dict(kit.DDL), dict(kit.QUERIES),
                   notes=[f"bench/ssb.py's generator, seed {kit.SEED}; Doris' SSB DDL."])


# Doris' SSB-flat kit column list, lower-cased; types as there (tinyint for the small counters,
# lo_commitdate DATE, VARCHAR(100) for the strings).
_FLAT_COLUMNS = """lo_orderdate INT NOT NULL, lo_orderkey INT NOT NULL,
  lo_linenumber TINYINT NOT NULL, lo_custkey INT NOT NULL, lo_partkey INT NOT NULL,
  lo_suppkey INT NOT NULL, lo_orderpriority VARCHAR(100) NOT NULL,
  lo_shippriority TINYINT NOT NULL, lo_quantity TINYINT NOT NULL,
  lo_extendedprice INT NOT NULL, lo_ordtotalprice INT NOT NULL, lo_discount TINYINT NOT NULL,
  lo_revenue INT NOT NULL, lo_supplycost INT NOT NULL, lo_tax TINYINT NOT NULL,
  lo_commitdate DATE NOT NULL, lo_shipmode VARCHAR(100) NOT NULL,
  c_name VARCHAR(100) NOT NULL, c_address VARCHAR(100) NOT NULL, c_city VARCHAR(100) NOT NULL,
  c_nation VARCHAR(100) NOT NULL, c_region VARCHAR(100) NOT NULL, c_phone VARCHAR(100) NOT NULL,
  c_mktsegment VARCHAR(100) NOT NULL, s_name VARCHAR(100) NOT NULL,
  s_address VARCHAR(100) NOT NULL, s_city VARCHAR(100) NOT NULL, s_nation VARCHAR(100) NOT NULL,
  s_region VARCHAR(100) NOT NULL, s_phone VARCHAR(100) NOT NULL, p_name VARCHAR(100) NOT NULL,
  p_mfgr VARCHAR(100) NOT NULL, p_category VARCHAR(100) NOT NULL, p_brand VARCHAR(100) NOT NULL,
  p_color VARCHAR(100) NOT NULL, p_type VARCHAR(100) NOT NULL, p_size TINYINT NOT NULL,
  p_container VARCHAR(100) NOT NULL"""
_YEARS = ",\n  ".join(
    f'PARTITION p{y} VALUES [("{"-2147483648" if y == 1992 else f"{y}0101"}"), ("{y + 1}0101"))'
    for y in range(1992, 1999))
FLAT_DDL = f"""CREATE TABLE lineorder_flat ({_FLAT_COLUMNS})
DUPLICATE KEY(lo_orderdate, lo_orderkey)
PARTITION BY RANGE(lo_orderdate) (
  {_YEARS})
DISTRIBUTED BY HASH(lo_orderkey) BUCKETS 8
{{rollups}}PROPERTIES ("replication_num" = "1")"""

_FLAT_SELECT = """SELECT lo_orderdate, lo_orderkey, lo_linenumber::TINYINT AS lo_linenumber,
  lo_custkey, lo_partkey, lo_suppkey, lo_orderpriority, lo_shippriority::TINYINT AS lo_shippriority,
  lo_quantity::TINYINT AS lo_quantity, lo_extendedprice, lo_ordtotalprice,
  lo_discount::TINYINT AS lo_discount, lo_revenue, lo_supplycost, lo_tax::TINYINT AS lo_tax,
  strptime(lo_commitdate::VARCHAR, '%Y%m%d')::DATE AS lo_commitdate, lo_shipmode,
  c_name, c_address, c_city, c_nation, c_region, c_phone, c_mktsegment,
  s_name, s_address, s_city, s_nation, s_region, s_phone,
  p_name, p_mfgr, p_category, p_brand, p_color, p_type, p_size::TINYINT AS p_size, p_container
FROM lineorder JOIN customer ON lo_custkey = c_custkey JOIN supplier ON lo_suppkey = s_suppkey
  JOIN part ON lo_partkey = p_partkey ORDER BY lo_orderdate, lo_orderkey, lo_linenumber"""


def ssb_flat(sf: float) -> Dataset:
    import ssb as kit
    import ssb_flat_rollups as flat_kit

    data = kit.generate(sf, kit.SEED)
    con = duckdb.connect()
    for name, table in data.items():
        con.register(name, table)
    flat = con.sql(_FLAT_SELECT).to_arrow_table()
    con.close()
    notes = [(f"bench/ssb.py's generator (seed {kit.SEED}) joined into Doris' lineorder_flat "
             "(SSB-flat kit DDL: yearly range partitions, HASH(lo_orderkey) BUCKETS 8 instead of "
             "48 for 2 cores).")]
    return Dataset("ssb-flat", {"lineorder_flat": flat},
                   {"lineorder_flat": FLAT_DDL.format(rollups="")},
                   dict(flat_kit.QUERIES), duck_sql=lambda sql: sql.replace(" DIV ", " // "),
                   notes=notes)


def with_rollups(flat: Dataset) -> Dataset:
    """The same SSB-flat data with the sync materialized views a Doris user would create for
    the query groups (bench/ssb_flat_rollups.py MATERIALIZED_VIEWS: each group's filter columns
    and group keys as keys, its aggregate as the value), created before the load."""
    import ssb_flat_rollups as flat_kit

    note = ("Sync materialized views (one per query group, created before the load): "
            + "; ".join(f"`{v}`" for v in flat_kit.MV_STATEMENTS))
    return replace(flat, setup={"lineorder_flat": list(flat_kit.MV_STATEMENTS)},
                   notes=[*flat.notes, note])


def tpch(sf: float, work: Path) -> Dataset:
    import tpch_common as C
    from tpch_queries import ORDERED, QUERIES

    pq_dir = C.generate(work / "tpch_parquet", sf)
    tables = {t: C.read_table(pq_dir, t) for t in C.TABLES}
    queries = {str(q): sql for q, sql in sorted(QUERIES.items())}
    ordered = {QUERIES[q] for q in ORDERED}
    return Dataset("tpch", tables, dict(C.DDL), queries, ordered=lambda sql: sql in ordered,
                   notes=["tpchgen-cli data, the 22 queries of tests/tpch (Doris DDL there)."])

