"""The batch reader: one Spark input partition per group of `doris.request.tablet.size`
tablets, each reading only its tablets (`SELECT .. FROM db.t TABLET (..) WHERE ..`).

Planning (driver): `pushFilters` turns the filters Spark offers (the Python Data Source API's
`pyspark.sql.datasource` filters) into SQL conditions where the server evaluates them exactly
as Spark would, and hands the rest back to Spark; `doris.filter.query` is added as written.
`partitions` asks `_query_plan` (server/connector_api.py) for the tablets that query reads, so
partition and bucket pruning of the pushed filters drop whole tablets before any task starts.
Columns: the DataFrame's schema (`doris.read.field` narrows it) is what every query selects;
a BITMAP or HLL column as its base64 text (`bitmap_to_base64(bm) AS bm`, decoded to binary by
fetch.py), or `bitmap_to_string` for doris.read.bitmap-to-string. Filters on those columns
stay with Spark (a sketch has no order; its text is not what the server compares).
Reading (tasks): fetch.py's `fetch_batches`, pyarrow RecordBatches straight to Spark.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pyspark.sql import types as T
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from shaledb_spark import rest
from shaledb_spark.options import ConnectorOptions
from shaledb_spark.types import OBJECT_TYPES, field_doris_type

if TYPE_CHECKING:
    import pyarrow as pa

_COMPARISONS: dict[type, str] = {
    EqualTo: "=", EqualNullSafe: "<=>", GreaterThan: ">", GreaterThanOrEqual: ">=",
    LessThan: "<", LessThanOrEqual: "<=",
}


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: Any) -> str | None:
    """A Python value as a SQL literal the server compares as Spark would; None if unsure."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        return None if value.tzinfo is not None else f"'{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"'{value.isoformat()}'"
    return None


def filter_sql(f: Filter, types: dict[str, T.DataType]) -> str | None:
    """The SQL condition of one Spark filter, or None when it stays with Spark."""
    if isinstance(f, Not):
        inner = filter_sql(f.child, types)
        return None if inner is None else f"NOT ({inner})"
    attribute: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
    if len(attribute) != 1 or attribute[0].lower() not in types:
        return None
    col = quote_ident(attribute[0])
    st = types[attribute[0].lower()]
    if isinstance(st, (T.BinaryType, T.TimestampType)):
        return None  # binary blobs, and instants whose wall time depends on a time zone
    if isinstance(f, IsNull):
        return f"{col} IS NULL"
    if isinstance(f, IsNotNull):
        return f"{col} IS NOT NULL"
    if type(f) in _COMPARISONS:
        lit = sql_literal(getattr(f, "value", None))
        return None if lit is None else f"{col} {_COMPARISONS[type(f)]} {lit}"
    if isinstance(f, In):
        lits = [sql_literal(v) for v in f.value]
        if not lits or any(x is None for x in lits):
            return None
        return f"{col} IN ({', '.join(x for x in lits if x is not None)})"
    if isinstance(f, (StringStartsWith, StringEndsWith, StringContains)):
        text = f.value
        if not isinstance(text, str) or any(ch in text for ch in "%_\\"):
            return None  # LIKE wildcards in the value: leave it to Spark
        pattern = {StringStartsWith: f"{text}%", StringEndsWith: f"%{text}",
                   StringContains: f"%{text}%"}[type(f)]
        return f"{col} LIKE {sql_literal(pattern)}"
    return None


@dataclass(frozen=True)
class TabletPartition(InputPartition):
    """One Spark input partition: the tablets it reads (all at the planned versions), and the
    Flight SQL port planning found (pyspark pickles the reader for the tasks before it calls
    `partitions()`, so what planning learns travels in the partitions)."""

    tablets: tuple[int, ...]
    flight_port: int | None = None


def select_item(f: T.StructField, opts: ConnectorOptions) -> str:
    """The select-list entry that reads field `f` (BITMAP/HLL through their text forms)."""
    col = quote_ident(f.name)
    doris = field_doris_type(f)
    if doris not in OBJECT_TYPES:
        return col
    if doris == "BITMAP" and opts.bitmap_text == "string":
        return f"bitmap_to_string({col}) AS {col}"
    return f"{doris.lower()}_to_base64({col}) AS {col}"


class ShaleDBReader(DataSourceReader):
    def __init__(self, opts: ConnectorOptions, schema: T.StructType) -> None:
        self.opts = opts
        self.schema = schema
        self.pushed: list[str] = []

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        types = {f.name.lower(): f.dataType for f in self.schema.fields
                 if field_doris_type(f) not in OBJECT_TYPES}
        kept: list[Filter] = []
        for f in filters:
            sql = filter_sql(f, types)
            if sql is None:
                kept.append(f)
            else:
                self.pushed.append(sql)
        return kept

    def _conditions(self) -> list[str]:
        conds = list(self.pushed)
        if self.opts.filter_query.strip():
            conds.append(f"({self.opts.filter_query})")
        return conds

    def query(self, tablets: tuple[int, ...] | None = None) -> str:
        cols = ", ".join(select_item(f, self.opts) for f in self.schema.fields) or "1"
        table = f"{quote_ident(self.opts.db)}.{quote_ident(self.opts.table)}"
        if tablets is not None:
            table += f" TABLET({', '.join(map(str, tablets))})"
        conds = self._conditions()
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        return f"SELECT {cols} FROM {table}{where}"

    def partitions(self) -> list[InputPartition]:
        port = self.opts.flight_port
        if port is None and self.opts.read_mode != "thrift":  # on the driver, once
            port = rest.advertised_flight_port(self.opts)
            if port is None and self.opts.read_mode == "arrow":
                raise rest.ShaleDBError(
                    "doris.read.mode=arrow: give doris.read.arrow-flight-sql.port, or enable "
                    "arrow_flight_sql_port on the server (it advertises none)")
        plan = rest.query_plan(self.opts, self.query())
        ids = sorted(int(t) for t in plan)
        size = self.opts.tablet_size
        groups = [tuple(ids[i:i + size]) for i in range(0, len(ids), size)]
        return [TabletPartition(g, port) for g in groups] or [TabletPartition((), port)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TabletPartition)
        if not partition.tablets:
            return
        from shaledb_spark import fetch  # pyarrow: on the executors only

        opts = dataclasses.replace(self.opts, flight_port=partition.flight_port)
        yield from fetch.fetch_batches(opts, self.query(partition.tablets), self.schema)
