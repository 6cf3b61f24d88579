"""Round trips through the `shaledb` data source on local[2]: every Doris type written by
Spark (two-phase Stream Load, one commit) and read back (tablet-parallel), compared with what
pymysql reads from the same table."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from pyspark.sql import types as T

ALL_TYPES_DDL = (
    "CREATE TABLE alltypes (id INT, flag BOOLEAN, ti TINYINT, si SMALLINT, bi BIGINT, "
    "li LARGEINT, f FLOAT, d DOUBLE, dec1 DECIMAL(10,2), dec2 DECIMAL(38,10), dt DATE, "
    "ts DATETIME, ts6 DATETIME(6), c CHAR(5), v VARCHAR(20), s STRING) DUPLICATE KEY(id) "
    "DISTRIBUTED BY HASH(id) BUCKETS 3 PROPERTIES('replication_num'='1')"
)
SCHEMA = T.StructType([
    T.StructField("id", T.IntegerType()), T.StructField("flag", T.BooleanType()),
    T.StructField("ti", T.ByteType()), T.StructField("si", T.ShortType()),
    T.StructField("bi", T.LongType()), T.StructField("li", T.StringType()),
    T.StructField("f", T.FloatType()), T.StructField("d", T.DoubleType()),
    T.StructField("dec1", T.DecimalType(10, 2)), T.StructField("dec2", T.DecimalType(38, 10)),
    T.StructField("dt", T.DateType()), T.StructField("ts", T.TimestampNTZType()),
    T.StructField("ts6", T.TimestampNTZType()), T.StructField("c", T.StringType()),
    T.StructField("v", T.StringType()), T.StructField("s", T.StringType()),
])
ROWS = [
    (1, True, -128, 32767, 9000000000000000000, str(2**127 - 1), 1.5, -2.25e-300,
     Decimal("12345678.90"), Decimal("-1234567890.0123456789"), dt.date(2024, 2, 29),
     dt.datetime(2024, 2, 29, 1, 2, 3), dt.datetime(2024, 2, 29, 1, 2, 3, 123456), "ab",
     "it's", "long \n text"),
    (2, False, 127, -32768, -9000000000000000000, str(-(2**127)), -0.25, 1e300,
     Decimal("-0.01"), Decimal("0.0000000001"), dt.date(1, 1, 1),
     dt.datetime(9999, 12, 31, 23, 59, 59), dt.datetime(1970, 1, 1, 0, 0, 0, 1), "abcde", "",
     "日本語"),
    (3, None, None, None, None, None, None, None, None, None, None, None, None, None, None,
     None),
] + [(i, i % 2 == 0, i % 100, i, i * 1000, str(i), i / 4, i / 8, Decimal(i) / 100,
      Decimal(i), dt.date(2020, 1, 1) + dt.timedelta(days=i),
      dt.datetime(2020, 1, 1) + dt.timedelta(seconds=i), dt.datetime(2020, 1, 1, 0, 0, 0, i),
      f"c{i % 10}", f"v{i}", f"s{i}" * 3) for i in range(4, 300)]


def test_every_type_round_trips(spark, db, db_conn, spark_options) -> None:
    with db_conn.cursor() as cur:
        cur.execute(ALL_TYPES_DDL)
    opts = {**spark_options, "table": f"{db}.alltypes"}
    df = spark.createDataFrame(ROWS, SCHEMA).repartition(2)
    df.write.format("shaledb").options(**opts).mode("append").save()

    with db_conn.cursor() as cur:
        cur.execute("SELECT * FROM alltypes ORDER BY id")
        reference = cur.fetchall()
    assert len(reference) == len(ROWS)
    back = spark.read.format("shaledb").options(**opts).load()
    assert [(f.name, f.dataType) for f in back.schema.fields] == \
        [(f.name, f.dataType) for f in SCHEMA.fields]
    got = sorted((tuple(r) for r in back.collect()), key=lambda r: r[0])
    assert got == [tuple(r) for r in ROWS]
    # pymysql reads the same values (BOOLEAN as 0/1, LARGEINT as a number)
    for mine, ref in zip(got, reference):
        assert ref[0] == mine[0]
        assert ref[1] == (None if mine[1] is None else int(mine[1]))
        assert ref[2:5] == mine[2:5]
        assert (None if ref[5] is None else str(ref[5])) == mine[5]
        assert ref[6:] == mine[6:]
