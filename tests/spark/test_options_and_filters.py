"""shaledb_spark's pure parts, no Spark job or server: option aliases of spark-doris-connector,
Spark filters -> SQL conditions (only those the server evaluates as Spark does), and the
write-side type check naming the column."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import types as T
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    In,
    IsNull,
    Not,
    StringContains,
    StringStartsWith,
)

from shaledb_spark.options import OptionError, parse_options
from shaledb_spark.reader import filter_sql
from shaledb_spark.types import SchemaMismatch, check_write_schema, spark_schema


def test_doris_option_names_are_aliases() -> None:
    opts = parse_options({"doris.table.identifier": "d.t", "doris.fenodes": "h:8030,h2:8030",
                          "doris.user": "u", "doris.password": "p",
                          "doris.read.field": "a, b", "doris.filter.query": "a > 1",
                          "doris.request.tablet.size": "4", "doris.sink.label.prefix": "x",
                          "doris.sink.properties.timeout": "600", "doris.query.port": "9030"})
    assert (opts.db, opts.table, opts.host, opts.http_port, opts.user, opts.password) == \
        ("d", "t", "h", 8030, "u", "p")
    assert (opts.read_fields, opts.filter_query, opts.tablet_size, opts.label_prefix,
            opts.sink_properties, opts.query_port) == (("a", "b"), "a > 1", 4, "x",
                                                       {"timeout": "600"}, 9030)
    with pytest.raises(OptionError, match="must be `db.table`"):
        parse_options({"table": "t", "fenodes": "h:1"})
    with pytest.raises(OptionError, match="host:http_port"):
        parse_options({"table": "d.t", "fenodes": "h"})


TYPES = {"a": T.IntegerType(), "s": T.StringType(), "d": T.DateType(),
         "ts": T.TimestampType(), "m": T.DecimalType(10, 2)}


@pytest.mark.parametrize(("flt", "sql"), [
    (EqualTo(("a",), 1), "`a` = 1"),
    (Not(EqualTo(("a",), 1)), "NOT (`a` = 1)"),
    (EqualNullSafe(("a",), 1), "`a` <=> 1"),
    (GreaterThan(("d",), dt.date(2024, 2, 29)), "`d` > '2024-02-29'"),
    (In(("s",), ("x", "it's")), "`s` IN ('x', 'it''s')"),
    (IsNull(("m",)), "`m` IS NULL"),
    (EqualTo(("m",), Decimal("1.50")), "`m` = 1.50"),
    (StringStartsWith(("s",), "ab"), "`s` LIKE 'ab%'"),
    (StringContains(("s",), "b"), "`s` LIKE '%b%'"),
    # stay with Spark: LIKE wildcards in the value, time-zoned instants, unknown columns
    (StringStartsWith(("s",), "a_"), None),
    (EqualTo(("ts",), dt.datetime(2024, 1, 1)), None),
    (EqualTo(("nope",), 1), None),
    (EqualTo(("a", "b"), 1), None),
])
def test_filter_sql(flt, sql) -> None:
    assert filter_sql(flt, TYPES) == sql


def test_write_check_names_the_column() -> None:
    props = [{"name": "k", "type": "INT", "is_nullable": "Yes"},
             {"name": "amount", "type": "DECIMAL64", "precision": 12, "scale": 2}]
    ok = T.StructType([T.StructField("k", T.ShortType()),
                       T.StructField("amount", T.DecimalType(10, 2))])
    check_write_schema(props, ok, "d.t")
    too_wide = T.StructType([T.StructField("k", T.LongType())])
    with pytest.raises(SchemaMismatch, match="column `k`: Spark type bigint cannot be loaded "
                                             "into d.t.k of Doris type INT"):
        check_write_schema(props, too_wide, "d.t")
    scale = T.StructType([T.StructField("amount", T.DecimalType(12, 4))])
    with pytest.raises(SchemaMismatch, match=r"column `amount`.*DECIMAL\(12,2\)"):
        check_write_schema(props, scale, "d.t")
    assert spark_schema(props, ("amount",)) == T.StructType(
        [T.StructField("amount", T.DecimalType(12, 2), metadata={"doris_type": "DECIMAL64"})])
    with_bitmap = [*props, {"name": "users", "type": "BITMAP", "aggregation_type":
                            "BITMAP_UNION"}, {"name": "big", "type": "LARGEINT"}]
    # BITMAP: binary (its serialized value), or text when the job asks for it; LARGEINT as
    # spark-doris-connector maps it
    assert [f.dataType for f in spark_schema(with_bitmap).fields[2:]] == [
        T.BinaryType(), T.DecimalType(38, 0)]
    assert spark_schema(with_bitmap, ("users",), bitmap_as_text=True).fields[0].dataType == \
        T.StringType()
    check_write_schema(with_bitmap, T.StructType([T.StructField("users", T.BinaryType())]),
                       "d.t")
    with pytest.raises(SchemaMismatch, match="column `users`: Spark type string cannot"):
        check_write_schema(with_bitmap, T.StructType([T.StructField("users", T.StringType())]),
                           "d.t")
    # ... unless the load's columns list builds it from a source column (doris.write.fields)
    check_write_schema(with_bitmap, T.StructType([T.StructField("uid", T.LongType())]), "d.t",
                       sources=("uid",))
    with pytest.raises(SchemaMismatch, match="column `arr`: Spark type array<int> cannot"):
        check_write_schema([*props, {"name": "arr", "type": "STRING"}],
                           T.StructType([T.StructField("arr", T.ArrayType(T.IntegerType()))]),
                           "d.t")
