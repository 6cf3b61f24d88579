"""MySQL DDL from tools (Spark, pandas, ORMs) mapped to Doris types (sql/parser/mysql_ddl.py), through
the real CREATE TABLE analysis. Spark's JDBC writer end to end: tests/clients/test_spark_jdbc.py."""

from __future__ import annotations

import pytest

from sql.ddl import specs as V
from sql.ddl.create_table import analyze_create_table
from sql.parser.dialect import parse_one
from storage.catalog.meta import DistributionType, KeysType


def column_types(sql: str) -> dict[str, str]:
    d = analyze_create_table(V.describe_create_table(parse_one(sql)), 1)
    return {c.name: c.type.sql() for c in d.columns}


@pytest.mark.parametrize(
    ("mysql", "doris"),
    [
        ("INTEGER", "int"),
        ("INT(11)", "int"),
        ("MEDIUMINT", "int"),
        ("BIGINT", "bigint"),
        ("TINYINT UNSIGNED", "smallint"),
        ("SMALLINT UNSIGNED", "int"),
        ("INT UNSIGNED", "bigint"),
        ("BIGINT UNSIGNED", "largeint"),
        ("DOUBLE PRECISION", "double"),
        ("FLOAT(53)", "double"),
        ("FLOAT(25)", "double"),
        ("FLOAT(24)", "float"),
        ("FLOAT", "float"),
        ("TEXT", "text"),
        ("TINYTEXT", "text"),
        ("MEDIUMTEXT", "text"),
        ("LONGTEXT", "text"),
        ("BLOB", "text"),
        ("LONGBLOB", "text"),
        ("VARBINARY(16)", "text"),
        ("BINARY(4)", "text"),
        ("BIT(1)", "boolean"),
        ("BIT", "boolean"),
        ("BIT(8)", "bigint"),
        ("BOOL", "boolean"),
        ("BOOLEAN", "boolean"),
        ("TIMESTAMP", "datetime"),
        ("TIMESTAMP(3)", "datetime(3)"),
        ("DATETIME", "datetime"),
        ("VARCHAR(7)", "varchar(7)"),
        ("DECIMAL(12,2)", "decimal(12,2)"),
    ],
)
def test_mysql_column_types(mysql: str, doris: str) -> None:
    assert column_types(f"CREATE TABLE t (k INT, c {mysql})")["c"] == doris


def test_spark_ddl_becomes_a_duplicate_table_with_doris_defaults() -> None:
    # What Spark 4's MySQL dialect sends for (id INT, name STRING, v DOUBLE, ok BOOLEAN,
    # ts TIMESTAMP, f DOUBLE).
    sql = (
        "CREATE TABLE target (`id` INTEGER , `name` LONGTEXT , `v` DOUBLE PRECISION , "
        "`ok` BIT(1) , `ts` TIMESTAMP , `f` FLOAT(53) ) "
    )
    d = analyze_create_table(V.describe_create_table(parse_one(sql)), 1)
    assert d.keys_type is KeysType.DUP_KEYS and d.key_columns == ("id",)
    assert d.distribution.type is DistributionType.RANDOM and d.distribution.auto_buckets
    assert [c.type.sql() for c in d.columns] == [
        "int",
        "text",
        "double",
        "boolean",
        "datetime",
        "double",
    ]
