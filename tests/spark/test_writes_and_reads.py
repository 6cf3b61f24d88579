"""The `shaledb` / `doris` data source's guarantees on local[2,2] against a live server:
append and overwrite (row counts exact), a task that fails once and is retried loads each row
exactly once, a job whose task fails for good leaves nothing visible (driver abort), a
DataFrame column the table cannot take fails before any data moves, and reads push their
filters and tablets into the SQL the server runs (its audit log shows it)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T
from support.audit import wait_for_audit_lines

DDL = ("CREATE TABLE ev (id BIGINT, grp INT, name VARCHAR(16)) DUPLICATE KEY(id) "
       "DISTRIBUTED BY HASH(id) BUCKETS 4 PROPERTIES('replication_num'='1')")


@pytest.fixture
def ev(db, db_conn, spark_options) -> dict[str, str]:
    with db_conn.cursor() as cur:
        cur.execute(DDL)
    return {**spark_options, "table": f"{db}.ev"}


def rows_in(db_conn, where: str = "") -> tuple[int, int]:
    with db_conn.cursor() as cur:
        cur.execute(f"SELECT count(*), count(DISTINCT id) FROM ev {where}")
        return cur.fetchone()


def frame(spark, n: int, start: int = 0):
    return spark.range(start, start + n, numPartitions=2).select(
        F.col("id"), (F.col("id") % 7).cast("int").alias("grp"),
        F.concat(F.lit("n"), F.col("id").cast("string")).alias("name"))


def test_append_then_overwrite_with_doris_names(spark, ev, db_conn) -> None:
    frame(spark, 100).write.format("shaledb").options(**ev).mode("append").save()
    frame(spark, 50, start=100).write.format("shaledb").options(**ev).mode("append").save()
    assert rows_in(db_conn) == (150, 150)
    # the same job written for spark-doris-connector: format("doris") and its option names
    doris = {"doris.table.identifier": ev["table"], "doris.fenodes": ev["fenodes"],
             "doris.user": "root", "doris.password": "",
             "doris.sink.label.prefix": "nightly", "doris.sink.properties.timeout": "600"}
    frame(spark, 10, start=1000).write.format("doris").options(**doris).mode("overwrite").save()
    assert rows_in(db_conn) == (10, 10)
    with db_conn.cursor() as cur:
        cur.execute("SELECT min(id), max(id) FROM ev")
        assert cur.fetchone() == (1000, 1009)
        cur.execute("SHOW TABLES")  # the staging table of the overwrite is gone
        assert [r[0] for r in cur.fetchall()] == ["ev"]
        cur.execute("SHOW STREAM LOAD WHERE LABEL LIKE 'nightly_%'")
        assert len(cur.fetchall()) == 2  # one load per Spark partition, with our prefix


def test_task_failing_once_is_retried_exactly_once(spark, ev, db_conn) -> None:
    def flaky(batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        seen = 0
        for b in batches:
            seen += b.num_rows
            # attempt 0 of partition 0 dies after its first batch has been streamed
            if ctx.partitionId() == 0 and ctx.attemptNumber() == 0 and seen > 3000:
                raise RuntimeError("injected task failure")
            yield b

    df = frame(spark, 20000).mapInArrow(flaky, "id long, grp int, name string")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2000")
    try:
        df.write.format("shaledb").options(**ev).mode("append").save()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert rows_in(db_conn) == (20000, 20000)


def test_task_failing_for_good_leaves_nothing(spark, server, ev, db_conn) -> None:
    port, db = server.port, ev["table"].split(".")[0]

    def broken(batches):
        from pyspark import TaskContext

        if TaskContext.get().partitionId() == 1:
            # fail only once partition 0 has precommitted its load (no race with the abort)
            import pymysql

            conn = pymysql.connect(host="127.0.0.1", port=port, user="root", database=db)
            with conn.cursor() as cur:
                while True:
                    cur.execute("SHOW LOAD WHERE LABEL LIKE 'doomed_%'")
                    if any(r[2] == "LOADING" for r in cur.fetchall()):
                        break
            conn.close()
            raise RuntimeError("injected permanent failure")
        yield from batches

    df = frame(spark, 1000).mapInArrow(broken, "id long, grp int, name string")
    opts = {**ev, "doris.sink.label.prefix": "doomed"}
    with pytest.raises(Exception, match="injected permanent failure"):
        df.write.format("shaledb").options(**opts).mode("append").save()
    assert rows_in(db_conn) == (0, 0)
    with db_conn.cursor() as cur:  # partition 0's precommitted load was aborted by the driver
        cur.execute("SHOW LOAD WHERE LABEL LIKE 'doomed_%'")
        states = [r[2] for r in cur.fetchall()]
    assert states and set(states) == {"CANCELLED"}


def test_schema_mismatch_names_the_column_before_loading(spark, ev, db_conn) -> None:
    bad = frame(spark, 10).withColumn("nope", F.lit(1))
    with pytest.raises(Exception, match="column `nope` of the DataFrame does not exist"):
        bad.write.format("shaledb").options(**ev).mode("append").save()
    wrong = frame(spark, 10).withColumn("grp", F.array(F.lit(1)))
    with pytest.raises(Exception, match="column `grp`: Spark type array<int> cannot be loaded"):
        wrong.write.format("shaledb").options(**ev).mode("append").save()
    with db_conn.cursor() as cur:
        cur.execute("SHOW STREAM LOAD")
        assert cur.fetchall() == ()  # no load was even started


def test_read_pushes_filters_tablets_and_fields(spark, server, ev, db, db_conn) -> None:
    frame(spark, 1000).write.format("shaledb").options(**ev).mode("append").save()
    with db_conn.cursor() as cur:
        cur.execute("SHOW TABLETS FROM ev")
        tablets = [r[0] for r in cur.fetchall()]
    opts = {"doris.table.identifier": ev["table"], "doris.fenodes": ev["fenodes"],
            "doris.user": "root", "doris.password": "", "doris.read.field": "id,name",
            "doris.filter.query": "grp = 3", "doris.request.tablet.size": "3"}
    df = spark.read.format("doris").options(**opts).load()
    assert [(f.name, f.dataType) for f in df.schema.fields] == [("id", T.LongType()),
                                                                 ("name", T.StringType())]
    assert df.rdd.getNumPartitions() == 2  # 4 tablets, 3 per partition
    got = df.where((F.col("id") >= 500) & F.col("name").startswith("n5")).collect()
    want = sorted(i for i in range(500, 1000) if i % 7 == 3 and str(i).startswith("5"))
    assert sorted(r.id for r in got) == want
    assert all(r.name == f"n{r.id}" for r in got)
    # both partitions' lines: the audit writer may have written only one so far
    lines = wait_for_audit_lines(server.data_dir, f"FROM `{db}`.`ev` TABLET(", at_least=2)
    pushed = [x for x in lines if " [query] " in x and "`id` >= 500" in x
              and "`name` LIKE 'n5%'" in x and "(grp = 3)" in x]
    assert len(pushed) == 2  # one query per input partition, each with the pushed WHERE
    assert {x.split("TABLET(")[1].split(")")[0] for x in pushed} == {
        ", ".join(map(str, sorted(tablets)[:3])), str(sorted(tablets)[3])}


def test_overwrite_of_named_partitions(spark, db, db_conn, spark_options) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE pt (id BIGINT, grp INT, name VARCHAR(16)) DUPLICATE KEY(id) "
                    "PARTITION BY RANGE(id) (PARTITION p1 VALUES LESS THAN (100), "
                    "PARTITION p2 VALUES LESS THAN (1000)) DISTRIBUTED BY HASH(id) BUCKETS 2 "
                    "PROPERTIES('replication_num'='1')")
    opts = {**spark_options, "table": f"{db}.pt"}
    frame(spark, 200).write.format("shaledb").options(**opts).mode("append").save()
    only_p2 = {**opts, "doris.sink.properties.partitions": "p2"}
    frame(spark, 50, start=500).write.format("shaledb").options(**only_p2) \
        .mode("overwrite").save()

    def contents() -> list[int]:
        with db_conn.cursor() as cur:
            cur.execute("SELECT id FROM pt ORDER BY id")
            return [r[0] for r in cur.fetchall()]

    assert contents() == list(range(100)) + list(range(500, 550))  # p1 untouched
    # a row of p1 in an overwrite of p2 fails the job: nothing changes, no staging table left
    with pytest.raises(Exception, match="stream load"):
        frame(spark, 10, start=95).write.format("shaledb").options(**only_p2) \
            .mode("overwrite").save()
    assert contents() == list(range(100)) + list(range(500, 550))
    with db_conn.cursor() as cur:
        cur.execute("SHOW TABLES")
        assert [r[0] for r in cur.fetchall()] == ["pt"]
