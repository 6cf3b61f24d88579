"""Round trips through the `shaledb` data source on local[2]: every Doris type written by
Spark (two-phase Stream Load, one commit) and read back (tablet-parallel), compared with what
pymysql reads from the same table. LARGEINT is DecimalType(38, 0) as in spark-doris-connector
(a wider value fails the read naming the column); BITMAP and HLL are BinaryType (their
serialized value, loaded back unchanged), BITMAP as text with doris.read.bitmap-to-string, and
`doris.write.fields` builds them with to_bitmap / hll_hash as a Doris job does."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
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
    T.StructField("bi", T.LongType()), T.StructField("li", T.DecimalType(38, 0)),
    T.StructField("f", T.FloatType()), T.StructField("d", T.DoubleType()),
    T.StructField("dec1", T.DecimalType(10, 2)), T.StructField("dec2", T.DecimalType(38, 10)),
    T.StructField("dt", T.DateType()), T.StructField("ts", T.TimestampNTZType()),
    T.StructField("ts6", T.TimestampNTZType()), T.StructField("c", T.StringType()),
    T.StructField("v", T.StringType()), T.StructField("s", T.StringType()),
])
ROWS = [
    (1, True, -128, 32767, 9000000000000000000, Decimal(10**38 - 1), 1.5, -2.25e-300,
     Decimal("12345678.90"), Decimal("-1234567890.0123456789"), dt.date(2024, 2, 29),
     dt.datetime(2024, 2, 29, 1, 2, 3), dt.datetime(2024, 2, 29, 1, 2, 3, 123456), "ab",
     "it's", "long \n text"),
    (2, False, 127, -32768, -9000000000000000000, Decimal(-(10**38 - 1)), -0.25, 1e300,
     Decimal("-0.01"), Decimal("0.0000000001"), dt.date(1, 1, 1),
     dt.datetime(9999, 12, 31, 23, 59, 59), dt.datetime(1970, 1, 1, 0, 0, 0, 1), "abcde", "",
     "日本語"),
    (3, None, None, None, None, None, None, None, None, None, None, None, None, None, None,
     None),
] + [(i, i % 2 == 0, i % 100, i, i * 1000, Decimal(i * 10**20), i / 4, i / 8, Decimal(i) / 100,
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
    # pymysql reads the same values (BOOLEAN as 0/1, LARGEINT as its digits)
    for mine, ref in zip(got, reference):
        assert ref[0] == mine[0]
        assert ref[1] == (None if mine[1] is None else int(mine[1]))
        assert ref[2:5] == mine[2:5]
        assert (None if ref[5] is None else Decimal(ref[5])) == mine[5]
        assert ref[6:] == mine[6:]


SKETCH_DDL = ("CREATE TABLE {name} (id INT, li LARGEINT, bm BITMAP BITMAP_UNION, "
              "h HLL HLL_UNION) AGGREGATE KEY(id, li) DISTRIBUTED BY HASH(id) BUCKETS 2 "
              "PROPERTIES('replication_num'='1')")
SKETCH_ROWS = ("(1, 5, to_bitmap(5), hll_hash('a')), "
               "(2, -170141183460469231731687303715884105, bitmap_from_string('1,2,3,4294967296'),"
               " hll_empty()), (3, NULL, bitmap_empty(), NULL), (4, 0, NULL, hll_hash('x'))")
SKETCH_TEXT = "SELECT id, li, bitmap_to_string(bm), hll_cardinality(h) FROM {name} ORDER BY id"


def sketch_round_trip(spark, cur, db: str, opts: dict[str, str]) -> None:
    """BITMAP/HLL read as binary, written back into a twin table: the same sketches."""
    cur.execute(SKETCH_DDL.format(name="sk"))
    cur.execute(SKETCH_DDL.format(name="sk2"))
    cur.execute(f"INSERT INTO sk VALUES {SKETCH_ROWS}")
    back = spark.read.format("shaledb").options(**{**opts, "table": f"{db}.sk"}).load()
    assert [(f.name, f.dataType) for f in back.schema.fields] == [
        ("id", T.IntegerType()), ("li", T.DecimalType(38, 0)), ("bm", T.BinaryType()),
        ("h", T.BinaryType())]
    rows = sorted(back.collect(), key=lambda r: r.id)
    assert [r.li for r in rows] == [Decimal(5), Decimal(-170141183460469231731687303715884105),
                                    None, Decimal(0)]
    assert all(isinstance(r.bm, (bytes, bytearray)) for r in rows[:3]) and rows[3].bm is None
    back.write.format("shaledb").options(**{**opts, "table": f"{db}.sk2"}).mode("append").save()
    cur.execute(SKETCH_TEXT.format(name="sk"))
    want = cur.fetchall()
    cur.execute(SKETCH_TEXT.format(name="sk2"))
    assert cur.fetchall() == want
    assert [r[2:] for r in want] == [("5", 1), ("1,2,3,4294967296", 0), ("", 0), (None, 1)]
    text = spark.read.format("doris").options(**{**opts, "table": f"{db}.sk",
                                                 "doris.read.bitmap-to-string": "true"}).load()
    assert dict(text.select("id", "bm").collect()) == {1: "5", 2: "1,2,3,4294967296", 3: "",
                                                      4: None}


def test_sketches_and_largeint(spark, db, db_conn, spark_options) -> None:
    with db_conn.cursor() as cur:
        sketch_round_trip(spark, cur, db, spark_options)
        # a Doris job builds sketches from plain columns with doris.write.fields
        cur.execute(SKETCH_DDL.format(name="built"))
        df = spark.createDataFrame([(1, 7, "a"), (1, 8, "b"), (2, 7, "a")],
                                   "id int, uid long, name string")
        fields = "id,uid,name,bm=to_bitmap(uid),h=hll_hash(name)"
        df.write.format("doris").options(**{**spark_options, "table": f"{db}.built",
                                            "doris.write.fields": fields}).mode("append").save()
        cur.execute(SKETCH_TEXT.format(name="built"))
        assert cur.fetchall() == ((1, None, "7,8", 2), (2, None, "7", 1))
        # not base64 of a sketch: NULL (Doris' bitmap/hll_from_base64)
        cur.execute("SELECT bitmap_from_base64('zz') IS NULL, hll_from_base64('AQ==') IS NULL,"
                    " bitmap_count(bitmap_from_base64(bitmap_to_base64(bitmap_empty())))")
        assert cur.fetchone() == (1, 1, 0)
        # a LARGEINT beyond DecimalType(38, 0) fails the read naming the column, never wraps
        cur.execute(SKETCH_DDL.format(name="wide"))
        cur.execute(f"INSERT INTO wide VALUES (1, {2**127 - 1}, NULL, NULL)")
    wide = spark.read.format("shaledb").options(**{**spark_options, "table": f"{db}.wide"})
    with pytest.raises(Exception, match="column `li`: LARGEINT value 1701411834604692317"):
        wide.load().collect()
