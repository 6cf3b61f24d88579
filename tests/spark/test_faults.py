"""Faults around the `shaledb` data source, on a server of its own whose precommitted loads
expire after PRECOMMIT_TIMEOUT_S (`stream_load_default_precommit_timeout_second`), so the
server's own abort of a dead driver's loads is observed without a long wait:

- a driver killed mid-overwrite (a separate Spark driver process, SIGKILLed with its JVM and
  Python workers after one task precommitted its load): nothing becomes visible, the server
  aborts the open transaction once it expires, and the next overwrite job drops the staging
  table the dead driver left behind;
- the server killed during a read: the read fails (the retried task cannot connect either)
  instead of returning the rows it had as if they were all; after a restart the same read
  returns every row.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from support.server import ServerProcess

PRECOMMIT_TIMEOUT_S = 30  # long enough for a live job between precommit and commit
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fsrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("spark-faults")
    conf = home / "shaledb.toml"
    conf.write_text(f"[load]\nstream_load_default_precommit_timeout_second = "
                    f"{PRECOMMIT_TIMEOUT_S}\n")
    srv = ServerProcess(home / "data", backends=1, extra_args=("--conf", str(conf)))
    srv.start()
    try:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE faults")
        yield srv
    finally:
        if srv.running:
            srv.stop()


def opts_of(srv: ServerProcess, table: str) -> dict[str, str]:
    return {"fenodes": f"127.0.0.1:{srv.http_port}", "user": "root", "password": "",
            "table": f"faults.{table}"}


def query(srv: ServerProcess, sql: str) -> list[tuple]:
    with srv.connect("faults") as c, c.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def wait_until(check, what: str, timeout: float = 90.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


DRIVER = textwrap.dedent("""
    import os, sys, time
    from pyspark.sql import SparkSession, functions as F
    import shaledb_spark

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    shaledb_spark.register(spark)

    def stall_partition_1(batches):
        from pyspark import TaskContext
        if TaskContext.get().partitionId() == 1:
            for _ in range(600):  # until the test kills this driver (ppid 1: orphaned)
                if os.getppid() == 1:
                    return
                time.sleep(0.2)
        yield from batches

    df = spark.range(0, 1000, numPartitions=2).select(
        F.col("id"), F.lit("new").alias("name")).mapInArrow(stall_partition_1,
                                                           "id long, name string")
    df.write.format("shaledb").options(table="faults.victim", fenodes=sys.argv[1],
                                       user="root", password="",
                                       **{"doris.sink.label.prefix": "killed"}) \\
        .mode("overwrite").save()
""")


def test_driver_killed_mid_overwrite(spark, fsrv: ServerProcess) -> None:
    query(fsrv, "CREATE TABLE victim (id BIGINT, name VARCHAR(8)) DUPLICATE KEY(id) "
                "DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES('replication_num'='1')")
    query(fsrv, "INSERT INTO victim VALUES (1, 'old'), (2, 'old')")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, f"127.0.0.1:{fsrv.http_port}"],
                              env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        # partition 0 precommitted its load into the staging table; partition 1 stalls
        wait_until(lambda: any(r[2] == "LOADING" for r in
                               query(fsrv, "SHOW LOAD WHERE LABEL LIKE 'killed_%'")),
                   "the first task's precommitted load", timeout=240)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
        driver.wait()
    staging = [r[0] for r in query(fsrv, "SHOW TABLES") if r[0] != "victim"]
    assert len(staging) == 1 and staging[0].startswith("__shaledb_spark_stage_")
    assert query(fsrv, "SELECT id, name FROM victim ORDER BY id") == [(1, "old"), (2, "old")]
    # the server aborts the dead driver's open transaction once it expires
    states = wait_until(lambda: {r[2] for r in query(
        fsrv, "SHOW LOAD WHERE LABEL LIKE 'killed_%'")} == {"CANCELLED"}, "the abort")
    assert states
    assert query(fsrv, "SELECT count(*) FROM victim") == [(2,)]
    # the next overwrite job drops the stale staging table (older than its TTL) and succeeds
    time.sleep(1.1)  # the staging table's name has second resolution; TTL 1 s below
    fresh = spark.range(10, 13).select(F.col("id"), F.lit("next").alias("name"))
    fresh.write.format("shaledb").options(**opts_of(fsrv, "victim"), staging_ttl_seconds="1") \
        .mode("overwrite").save()
    assert [r[0] for r in query(fsrv, "SHOW TABLES")] == ["victim"]
    assert query(fsrv, "SELECT id, name FROM victim ORDER BY id") == [
        (10, "next"), (11, "next"), (12, "next")]


def test_server_killed_during_read(spark, fsrv: ServerProcess) -> None:
    query(fsrv, "CREATE TABLE big (id BIGINT, pad VARCHAR(64)) DUPLICATE KEY(id) "
                "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES('replication_num'='1')")
    rows = 400_000
    spark.range(0, rows, numPartitions=2).select(
        F.col("id"), F.lit("x" * 48).alias("pad")) \
        .write.format("shaledb").options(**opts_of(fsrv, "big")).mode("append").save()
    pid = fsrv.proc.pid  # type: ignore[union-attr]

    def kill_server_on_first_batch(batches):
        from pyspark import TaskContext

        for i, b in enumerate(batches):
            if i == 0 and TaskContext.get().attemptNumber() == 0:
                os.kill(pid, signal.SIGKILL)  # the rest of the result never arrives
            yield b

    df = spark.read.format("shaledb").options(**opts_of(fsrv, "big")).load() \
        .mapInArrow(kill_server_on_first_batch, "id long, pad string")
    try:
        with pytest.raises(Exception, match="Lost connection|Connection refused|"
                                            "Can't connect"):
            df.count()  # never a short count
    finally:
        fsrv.kill()
        fsrv.start()
    again = spark.read.format("shaledb").options(**opts_of(fsrv, "big")).load()
    assert again.agg(F.count("*"), F.countDistinct("id")).collect()[0] == (rows, rows)
