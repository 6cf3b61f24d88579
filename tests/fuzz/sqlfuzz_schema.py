"""The SQL fuzzer's test schema: Doris tables of every data model, their rows, and the same
logical rows in DuckDB.

Four tables share one set of column names and types (so any two join on any column pair of the
same type, and a set operation's branches can read different tables):

    k_int INT, k_big BIGINT, d DECIMAL(10, 2), f DOUBLE, s VARCHAR(16), dt DATE, ts DATETIME

- `t_dup`: DUPLICATE, RANGE-partitioned on dt (NULL dates land in the lowest partition, one
  partition stays empty), HASH(k_int) in 3 buckets, a rollup, a DELETE after the loads.
- `t_agg`: AGGREGATE KEY(k_int, s, dt), k_big SUM, d MAX, f MIN, ts MAX; partitioned like
  t_dup, HASH(s) in 2 buckets, two rollups (queries over their columns read them
  pre-aggregated). Rows with equal keys (NULL keys included) merge across loads.
- `t_uni`: UNIQUE KEY(k_int), HASH(k_int) in 4 buckets; a later load replaces a key's row; a
  DELETE after the loads.
- `t_rnd`: DUPLICATE, not partitioned, RANDOM distribution in 2 buckets; small.

Every table is loaded by several INSERTs over the MySQL protocol (several rowsets per tablet,
so reads merge them as Doris does); DuckDB receives the table's logical rows (the AGGREGATE /
UNIQUE merge computed here in Python, the way Doris defines it).

Values stay small on purpose: integer overflow and out-of-range dates belong to another part of
issue 12, so nothing here can overflow a BIGINT through the grammar's arithmetic (multiplication
only by literals up to 5) or leave 0000-9999 through date arithmetic (a few days).
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
from dataclasses import dataclass

import duckdb

# column name -> (Doris type, DuckDB type, the fuzzer's type tag used by the grammar)
COLUMNS: dict[str, tuple[str, str, str]] = {
    "k_int": ("INT", "INTEGER", "int"),
    "k_big": ("BIGINT", "BIGINT", "int"),
    "d": ("DECIMAL(10, 2)", "DECIMAL(10, 2)", "dec"),
    "f": ("DOUBLE", "DOUBLE", "dbl"),
    "s": ("VARCHAR(16)", "VARCHAR", "str"),
    "dt": ("DATE", "DATE", "date"),
    "ts": ("DATETIME", "TIMESTAMP", "ts"),
}

PARTITIONS = """PARTITION BY RANGE(dt) (
    PARTITION p_old VALUES LESS THAN ("2023-01-01"),
    PARTITION p_a VALUES LESS THAN ("2024-01-03"),
    PARTITION p_b VALUES LESS THAN ("2024-01-06"),
    PARTITION p_rest VALUES LESS THAN MAXVALUE)"""


@dataclass(frozen=True)
class FuzzTable:
    name: str
    model: str  # DUPLICATE | AGGREGATE | UNIQUE
    keys: tuple[str, ...]
    distribution: str
    partitioned: bool
    loads: int
    rows_per_load: int
    aggregation: tuple[tuple[str, str], ...] = ()  # AGGREGATE value column -> SUM/MAX/MIN
    rollup: str = ""  # a ROLLUP clause: queries needing only its columns may read it
    delete_where: tuple[str, object] | None = None  # DELETE .. WHERE col = value after loads

    @property
    def column_order(self) -> list[str]:
        """Doris wants the key columns first."""
        return list(self.keys) + [c for c in COLUMNS if c not in self.keys]

    def create_sql(self) -> str:
        agg = dict(self.aggregation)
        cols = ", ".join(f"{c} {COLUMNS[c][0]}" + (f" {agg[c]}" if c in agg else "")
                         for c in self.column_order)
        return (f"CREATE TABLE {self.name} ({cols}) {self.model} KEY({', '.join(self.keys)}) "
                + (PARTITIONS + " " if self.partitioned else "")
                + f"DISTRIBUTED BY {self.distribution} "
                + 'PROPERTIES ("replication_num" = "1")'
                + (f" ROLLUP ({self.rollup})" if self.rollup else ""))


TABLES = (
    FuzzTable("t_dup", "DUPLICATE", ("k_int", "k_big"), "HASH(k_int) BUCKETS 3", True, 3, 40,
              rollup="r_dup(s, dt, k_int, f)", delete_where=("s", "zz")),
    FuzzTable("t_agg", "AGGREGATE", ("k_int", "s", "dt"), "HASH(s) BUCKETS 2", True, 3, 40,
              (("k_big", "SUM"), ("d", "MAX"), ("f", "MIN"), ("ts", "MAX")),
              rollup="r_agg(s, k_int, k_big, d), r_agg_dt(dt, s, f)"),
    FuzzTable("t_uni", "UNIQUE", ("k_int",), "HASH(k_int) BUCKETS 4", False, 3, 15,
              delete_where=("k_int", 5)),
    FuzzTable("t_rnd", "DUPLICATE", ("k_int",), "RANDOM BUCKETS 2", False, 2, 12),
)
TABLE_NAMES = tuple(t.name for t in TABLES)

INTS = list(range(-3, 12))
BIGS = [0, -7, 2**33, 123_456_789_012, 5_000_000_000]
DECS = [decimal.Decimal(x) for x in ("0.00", "1.50", "-2.25", "3.10", "12345.67", "7.00",
                                      "-0.01")]
# binary fractions only, so sums are exact whatever order the engines add them in
DBLS = [0.0, 1.5, -2.25, 3.125, 1e10, -0.5, 2.0]
# '%' and '_' exercise LIKE escapes; 'B' vs 'b' the byte order; 'été' multi-byte characters;
# 'a ' a trailing space (Doris compares bytes: 'a ' <> 'a', no PAD SPACE as MySQL has)
STRS = ["a", "b", "B", "ab", "", "zz", "x y", "\u00e9t\u00e9", "A%", "a_b", "a "]
DATES = [dt.date(2024, 1, d) for d in range(1, 9)]


def _maybe(rnd: random.Random, values: list, null_rate: float = 0.12) -> object:
    return None if rnd.random() < null_rate else rnd.choice(values)


def random_row(rnd: random.Random) -> dict[str, object]:
    k_int = _maybe(rnd, INTS)
    day = _maybe(rnd, DATES)
    return {
        "k_int": k_int,
        # mostly follows k_int, so joins on k_big find partners too
        "k_big": (k_int * 1_000_003 if k_int is not None and rnd.random() < 0.6
                  else _maybe(rnd, BIGS)),
        "d": _maybe(rnd, DECS),
        "f": _maybe(rnd, DBLS),
        "s": _maybe(rnd, STRS),
        "dt": day,
        "ts": (None if rnd.random() < 0.12 else dt.datetime(
            2024, 1, rnd.randrange(1, 9), rnd.choice((0, 7, 23)), rnd.choice((0, 30, 59)),
            rnd.choice((0, 1, 59)))),
    }


def sql_literal(x: object) -> str:
    if x is None:
        return "NULL"
    if isinstance(x, (str, dt.date)):  # dt.datetime is a dt.date
        return "'" + str(x).replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(x) if isinstance(x, float) else str(x)


def _merge_aggregate(table: FuzzTable, merged: dict, row: dict) -> None:
    """AGGREGATE model: rows with equal keys merge; SUM/MAX/MIN ignore NULLs (all NULL: NULL)."""
    key = tuple(row[k] for k in table.keys)
    old = merged.get(key)
    if old is None:
        merged[key] = dict(row)
        return
    for col, fn in table.aggregation:
        a, b = old[col], row[col]
        if a is None or b is None:
            old[col] = a if b is None else b
        else:
            old[col] = a + b if fn == "SUM" else max(a, b) if fn == "MAX" else min(a, b)


def load_tables(cur, duck: duckdb.DuckDBPyConnection, seed: int) -> dict[str, int]:
    """Create and load every table in ShaleDB (cursor `cur`, its current database) and DuckDB;
    returns the logical row count of each table."""
    rnd = random.Random(seed)
    counts = {}
    for table in TABLES:
        cur.execute(table.create_sql())
        duck.execute(f"CREATE TABLE {table.name} ("
                     + ", ".join(f"{c} {COLUMNS[c][1]}" for c in COLUMNS) + ")")
        logical: list[dict] = []
        merged: dict[tuple, dict] = {}
        for _ in range(table.loads):
            rows = [random_row(rnd) for _ in range(rnd.randrange(1, table.rows_per_load + 1))]
            if table.model == "AGGREGATE":
                # few distinct keys (NULL included), so rows really merge, within and across loads
                for r in rows:
                    r["k_int"] = _maybe(rnd, [1, 2, 3], 0.15)
                    r["s"] = _maybe(rnd, ["a", "b", "\u00e9t\u00e9"], 0.15)
                    r["dt"] = _maybe(rnd, DATES[:3] + DATES[5:6], 0.1)
            if table.model == "UNIQUE":
                # one row per key in a load (within a load Doris keeps an arbitrary one)
                rows = list({r["k_int"]: r for r in rows}.values())
                merged.update({r["k_int"]: r for r in rows})
            elif table.model == "AGGREGATE":
                for r in rows:
                    _merge_aggregate(table, merged, r)
            else:
                logical += rows
            order = table.column_order
            cur.execute(f"INSERT INTO {table.name} ({', '.join(order)}) VALUES "
                        + ", ".join("(" + ", ".join(sql_literal(r[c]) for c in order) + ")"
                                    for r in rows))
        logical += list(merged.values())
        if table.delete_where is not None:  # a delete version hiding rows of every load
            col, value = table.delete_where
            cur.execute("SET delete_without_partition = true")  # Doris asks for it on RANGE
            cur.execute(f"DELETE FROM {table.name} WHERE {col} = {sql_literal(value)}")
            logical = [r for r in logical if r[col] != value]
        if logical:
            duck.executemany(
                f"INSERT INTO {table.name} ({', '.join(COLUMNS)}) VALUES "
                f"({', '.join('?' for _ in COLUMNS)})",
                [[r[c] for c in COLUMNS] for r in logical])
        counts[table.name] = len(logical)
    return counts
