"""ARRAY / MAP / STRUCT columns through the `shaledb` data source on local[2]: Spark's
ArrayType / MapType / StructType written with Arrow Stream Load (two-phase, one commit) and read
back through Flight SQL (and over the MySQL protocol, parsing Doris' text), equal to the
DataFrame written and to what pymysql reads as Doris text.
A DataFrame column of another kind than the table's is refused before any data moves."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
from pyspark.sql import types as T
from support.server import ServerProcess

from shaledb_spark.types import SchemaMismatch

DDL = ("CREATE TABLE nesteddb.t (id INT, a ARRAY<INT>, m MAP<STRING,BIGINT>, "
       "s STRUCT<f1:INT,f2:STRING>, d ARRAY<DECIMAL(10,2)>, aa ARRAY<ARRAY<STRING>>) "
       "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3")
SCHEMA = T.StructType([
    T.StructField("id", T.IntegerType()),
    T.StructField("a", T.ArrayType(T.IntegerType())),
    T.StructField("m", T.MapType(T.StringType(), T.LongType())),
    T.StructField("s", T.StructType([T.StructField("f1", T.IntegerType()),
                                     T.StructField("f2", T.StringType())])),
    T.StructField("d", T.ArrayType(T.DecimalType(10, 2))),
    T.StructField("aa", T.ArrayType(T.ArrayType(T.StringType()))),
])
ROWS = [
    (1, [1, None, 3], {"x": 1, "y": None}, (1, "é"), [Decimal("1.25")], [["a"], [], None]),
    (2, [], {}, (None, None), [], []),
    (3, None, None, None, None, None),
] + [(i, [i, i + 1], {f"k{i}": i}, (i, str(i)), [Decimal(i)], [[str(i)]])
     for i in range(4, 40)]


@pytest.fixture(scope="module")
def fsrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("spark-nested"), backends=1,
                       extra_args=("--arrow-flight-sql-port", "0")) as srv:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE nesteddb")
            cur.execute(DDL)
        yield srv


def _opts(srv: ServerProcess) -> dict[str, str]:
    return {"fenodes": f"127.0.0.1:{srv.http_port}", "user": "root", "password": "",
            "table": "nesteddb.t"}


def _normal(row) -> tuple:
    """A Spark Row / tuple with maps as dicts and structs as tuples, for comparison."""
    def conv(v):
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, (list,)):
            return [conv(x) for x in v]
        if isinstance(v, tuple):
            return tuple(conv(x) for x in v)
        return v
    return tuple(conv(v) for v in tuple(row))


def test_spark_round_trip(spark, fsrv: ServerProcess) -> None:
    spark.createDataFrame(ROWS, SCHEMA).repartition(2) \
        .write.format("shaledb").options(**_opts(fsrv)).mode("append").save()
    with fsrv.connect() as c, c.cursor() as cur:
        cur.execute("SELECT id, a, m, s, d, aa FROM nesteddb.t WHERE id <= 3 ORDER BY id")
        assert cur.fetchall() == (
            (1, "[1, null, 3]", '{"x":1, "y":null}', '{"f1":1, "f2":"é"}', "[1.25]",
             '[["a"], [], null]'),
            (2, "[]", "{}", '{"f1":null, "f2":null}', "[]", "[]"),
            (3, None, None, None, None, None),
        )
    read = spark.read.format("shaledb").options(
        **_opts(fsrv), **{"doris.read.arrow-flight-sql.port": str(fsrv.flight_port)}).load()
    assert [(f.name, f.dataType) for f in read.schema.fields] == \
        [(f.name, f.dataType) for f in SCHEMA.fields]
    got = sorted((_normal(r) for r in read.collect()), key=lambda r: r[0])
    assert got == [_normal(r) for r in ROWS]
    # the same read over the MySQL protocol parses Doris' text back into Spark's types
    via_mysql = spark.read.format("shaledb").options(
        **_opts(fsrv), **{"doris.read.mode": "thrift"}).load()
    assert sorted((_normal(r) for r in via_mysql.collect()), key=lambda r: r[0]) == got


def test_spark_write_refuses_another_kind(spark, fsrv: ServerProcess) -> None:
    schema = T.StructType([T.StructField("id", T.IntegerType()),
                           T.StructField("a", T.MapType(T.StringType(), T.IntegerType()))])
    df = spark.createDataFrame([(1, {"x": 1})], schema)
    with pytest.raises(Exception, match="cannot be loaded into nesteddb.t.a") as err:
        df.write.format("shaledb").options(**_opts(fsrv)).mode("append").save()
    assert isinstance(err.value, SchemaMismatch) or "SchemaMismatch" in str(err.value)
