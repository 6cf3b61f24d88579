"""CREATE TABLE analysis: Doris' validation rules and wording, and the definitions it builds."""

from __future__ import annotations

import pytest

from sql.ddl import specs as V
from sql.ddl.create_table import analyze_create_table
from sql.errors import DorisError
from sql.parser.dialect import parse_one
from storage.catalog.meta import AggType, DistributionType, KeysType, PartitionType


def analyze(sql: str, backends: int = 3):
    return analyze_create_table(V.describe_create_table(parse_one(sql)), backends)


BAD = [
    ("CREATE TABLE t (a INT, b INT SUM) AGGREGATE KEY(a, b) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "Key column can not set aggregation type: b"),
    ("CREATE TABLE t (a INT, b INT) AGGREGATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     r"AGG_KEYS table should specify aggregate type for non-key column\[b\]"),
    ("CREATE TABLE t (a INT, b INT SUM) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     r"DUP_KEYS table should not specify aggregate type for non-key column\[b\]"),
    ("CREATE TABLE t (a INT, b INT) DUPLICATE KEY(b) DISTRIBUTED BY HASH(a) BUCKETS 1",
     r"Key columns should be a ordered prefix of the schema. KeyColumns\[0\] \(starts from zero\) is b"),
    ("CREATE TABLE t (a INT, b INT) DUPLICATE KEY(zz) DISTRIBUTED BY HASH(a) BUCKETS 1",
     r"Key column\[zz\] doesn't exist."),
    ("CREATE TABLE t (a INT, b INT SUM) AGGREGATE KEY(a) DISTRIBUTED BY HASH(b) BUCKETS 1",
     r"Distribution column\[b\] is not key column"),
    ("CREATE TABLE t (a INT, b INT) UNIQUE KEY(a) DISTRIBUTED BY HASH(b) BUCKETS 1",
     r"Distribution column\[b\] is not key column"),
    ("CREATE TABLE t (a INT, b INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(c) BUCKETS 1",
     r"Distribution column\(c\) doesn't exist"),
    ("CREATE TABLE t (a INT, b INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 0",
     "Number of hash distribution should be greater than zero."),
    ("CREATE TABLE t (a INT, a BIGINT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "Duplicate column name 'a'"),
    ("CREATE TABLE t (a DOUBLE, b INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(b) BUCKETS 1",
     "Float or double can not used as a key, use decimal instead."),
    ("CREATE TABLE t (a VARCHAR(0)) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "Varchar size must between 1 and 65533"),
    ("CREATE TABLE t (a DECIMAL(40, 2)) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "Precision of decimal must between 1 and 38"),
    ("CREATE TABLE t (a INT DEFAULT 'abc') DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "Invalid default value for 'a'"),
    ("CREATE TABLE t (a INT, v VARCHAR(10) SUM) AGGREGATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "Aggregate type SUM is not compatible with primitive type varchar"),
    ("CREATE TABLE t (a INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1 PROPERTIES ('foo' = 'bar')",
     r"Unknown properties: \{foo=bar\}"),
    ("CREATE TABLE t (a INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1 PROPERTIES ('replication_num' = '5')",
     "Failed to find enough backend"),
    ("CREATE TABLE t (a TINYINT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1 PROPERTIES ('bloom_filter_columns' = 'a')",
     "TINYINT is not supported in bloom filter index. invalid column: a"),
    ("CREATE TABLE t (a INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1 PROPERTIES ('bloom_filter_columns' = 'zz')",
     "Bloom filter column does not exist in table. invalid column: zz"),
    ("CREATE TABLE t (a INT, dt DATE) DUPLICATE KEY(a) PARTITION BY RANGE(dt) () DISTRIBUTED BY HASH(a) BUCKETS 1 "
     "PROPERTIES ('dynamic_partition.enable' = 'true', 'dynamic_partition.prefix' = 'p', 'dynamic_partition.end' = '3')",
     "Must assign dynamic_partition.time_unit properties"),
    ("CREATE TABLE t (a INT, dt DATE) DUPLICATE KEY(a) PARTITION BY RANGE(dt) () DISTRIBUTED BY HASH(a) BUCKETS 1 "
     "PROPERTIES ('dynamic_partition.time_unit' = 'HOUR', 'dynamic_partition.prefix' = 'p', 'dynamic_partition.end' = '3')",
     "dynamic_partition.time_unit could not be HOUR when type of partition column dt is DATE or DATEV2"),
    ("CREATE TABLE t (a INT, dt DATE) DUPLICATE KEY(a) PARTITION BY RANGE(dt) () DISTRIBUTED BY HASH(a) BUCKETS 1 "
     "PROPERTIES ('dynamic_partition.time_unit' = 'DAY', 'dynamic_partition.prefix' = 'p', 'dynamic_partition.end' = '3', 'dynamic_partition.start' = '1')",
     "Dynamic partition start must less than 0"),
    ("CREATE TABLE t (a INT, dt DATE) DUPLICATE KEY(a) PARTITION BY RANGE(zz) () DISTRIBUTED BY HASH(a) BUCKETS 1",
     "partition key zz is not exists"),
    ("CREATE TABLE t (a INT, b INT SUM) AGGREGATE KEY(a) PARTITION BY RANGE(b) () DISTRIBUTED BY HASH(a) BUCKETS 1",
     "The partition column could not be aggregated column"),
    ("CREATE TABLE t (a INT, b INT) DUPLICATE KEY(a) PARTITION BY RANGE(a) (PARTITION p1 VALUES LESS THAN ('1'), PARTITION p1 VALUES LESS THAN ('2')) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "Duplicated named partition: p1"),
    ("CREATE TABLE t (a INT, b INT) UNIQUE KEY(a) DISTRIBUTED BY RANDOM BUCKETS 1",
     "Create unique keys table should not contain random distribution desc"),
    ("CREATE TABLE t (a INT, b INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1 ROLLUP (r1(zz))",
     r"Column\[zz\] does not exist in base table"),
    ("CREATE TABLE t (a INT, b INT SUM, c INT) AGGREGATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     r"AGG_KEYS table should specify aggregate type for non-key column\[c\]"),
    ("CREATE TABLE t (a INT, b INT SUM, INDEX i (b) USING BITMAP) AGGREGATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "BITMAP index only used in columns of DUP_KEYS/UNIQUE_KEYS table or key columns of AGG_KEYS table. invalid column: b"),
]


@pytest.mark.parametrize(("sql", "message"), BAD)
def test_invalid_tables_are_rejected_with_doris_wording(sql: str, message: str) -> None:
    with pytest.raises(DorisError, match=message) as info:
        analyze(sql)
    assert info.value.code == 1105
    assert info.value.message.startswith("errCode = 2, detailMessage = ")


def test_aggregate_table_definition() -> None:
    d = analyze("""CREATE TABLE IF NOT EXISTS example_tbl (
        user_id LARGEINT NOT NULL COMMENT "user id", date DATE NOT NULL, city VARCHAR(20),
        last_visit_date DATETIME REPLACE DEFAULT "1970-01-01 00:00:00", cost BIGINT SUM DEFAULT "0",
        max_dwell_time INT MAX DEFAULT "0", min_dwell_time INT MIN DEFAULT "99999")
        AGGREGATE KEY(user_id, date, city) DISTRIBUTED BY HASH(user_id) BUCKETS 1
        PROPERTIES ("replication_allocation" = "tag.location.default: 1")""")
    assert d.keys_type is KeysType.AGG_KEYS
    assert d.key_columns == ("user_id", "date", "city")
    by = {c.name: c for c in d.columns}
    assert by["user_id"].nullable is False and by["user_id"].comment == "user id"
    assert by["cost"].agg_type is AggType.SUM and by["cost"].default == "0"
    assert by["last_visit_date"].agg_type is AggType.REPLACE
    assert by["city"].type.sql() == "varchar(20)" and by["city"].nullable is True
    assert d.distribution.type is DistributionType.HASH and d.distribution.buckets == 1
    assert d.if_not_exists


def test_default_keys_and_distribution() -> None:
    d = analyze("CREATE TABLE t (a INT, b VARCHAR(10), c BIGINT)")
    assert d.keys_type is KeysType.DUP_KEYS
    assert d.key_columns == ("a", "b")  # stops after the first VARCHAR
    assert d.distribution.type is DistributionType.RANDOM and d.distribution.auto_buckets
    agg = analyze("CREATE TABLE t (a INT, b INT, c BIGINT SUM) DISTRIBUTED BY HASH(a) BUCKETS 2")
    assert agg.keys_type is KeysType.AGG_KEYS and agg.key_columns == ("a", "b")


def test_partition_specs() -> None:
    d = analyze("""CREATE TABLE t (k INT, dt DATE) DUPLICATE KEY(k)
        PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-01-01"),
        PARTITION p2 VALUES [("2024-01-01"), ("2024-02-01")), PARTITION p3 VALUES LESS THAN MAXVALUE)
        DISTRIBUTED BY HASH(k) BUCKETS AUTO""")
    assert d.partition_info.type is PartitionType.RANGE and d.partition_info.columns == ("dt",)
    assert [(p.name, p.kind) for p in d.partitions] == [("p1", "LESS_THAN"), ("p2", "FIXED"), ("p3", "LESS_THAN")]
    assert d.partitions[2].less_than is None
    assert d.distribution.auto_buckets
