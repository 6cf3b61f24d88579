"""Several attempts of one Spark partition through the real data source API (the `shaledb`
DataSource's writer, its tasks' `write` run with a stand-in TaskContext naming the partition
and attempt, the driver's `commit` given the winning attempts' messages, as Spark's
speculation or a retry after a precommit produce them): exactly the winners' rows become
visible, and no attempt's transaction stays PRECOMMITTED (SHOW LOAD, SHOW TRANSACTION and
the REST API's get_load_state agree) whichever attempt wins and whenever a loser precommits,
before or after the driver's commit."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyspark
import pytest
from pyspark.sql import types as T

from shaledb_spark.source import ShaleDBDataSource
from shaledb_spark.writer import LoadCommit, ShaleDBWriter

DDL = ("CREATE TABLE ev (id BIGINT, name VARCHAR(20)) DUPLICATE KEY(id) "
       "DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ('replication_num' = '1')")
SCHEMA = T.StructType([T.StructField("id", T.LongType()), T.StructField("name", T.StringType())])


@dataclass
class FakeTaskContext:
    partition: int
    attempt: int

    def partitionId(self) -> int:  # pyspark TaskContext names
        return self.partition

    def attemptNumber(self) -> int:
        return self.attempt


@pytest.fixture
def writer(db, db_conn, spark_options) -> ShaleDBWriter:
    with db_conn.cursor() as cur:
        cur.execute(DDL)
    source = ShaleDBDataSource({**spark_options, "table": f"{db}.ev",
                                "doris.sink.label.prefix": "spec"})
    w = source.writer(SCHEMA, overwrite=False)
    assert isinstance(w, ShaleDBWriter)
    return w


def batches(lo: int, hi: int) -> Iterator[pa.RecordBatch]:
    ids = list(range(lo, hi))
    yield pa.RecordBatch.from_pydict({"id": pa.array(ids, pa.int64()),
                                      "name": pa.array([f"n{i}" for i in ids])})


def attempt(monkeypatch: pytest.MonkeyPatch, w: ShaleDBWriter, partition: int, number: int,
            rows: tuple[int, int]) -> LoadCommit:
    """One task attempt of `partition` writing ids [lo, hi) (every attempt of a partition
    writes the same rows, as Spark's attempts do)."""
    monkeypatch.setattr(pyspark.TaskContext, "get",
                        staticmethod(lambda: FakeTaskContext(partition, number)))
    message = w.write(batches(*rows))
    assert isinstance(message, LoadCommit)
    return message


def loads(db_conn) -> dict[str, str]:
    """label -> SHOW LOAD state of the job's loads."""
    with db_conn.cursor() as cur:
        cur.execute("SHOW LOAD WHERE LABEL LIKE 'spec_%'")
        return {row[1]: row[2] for row in cur.fetchall()}


def txn_status(db_conn, label: str) -> str:
    with db_conn.cursor() as cur:
        cur.execute(f"SHOW TRANSACTION WHERE LABEL = '{label}'")
        [row] = cur.fetchall()
        return row[3]


def rest_state(server, db: str, label: str) -> str:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.http_port}/api/{db}/get_load_state?label={label}",
        headers={"Authorization": "Basic " + base64.b64encode(b"root:").decode()})
    with urllib.request.urlopen(request, timeout=30) as resp:
        return json.loads(resp.read())["data"]


def rows_in(db_conn) -> tuple[int, int]:
    with db_conn.cursor() as cur:
        cur.execute("SELECT count(*), count(DISTINCT id) FROM ev")
        return cur.fetchone()


def check_states(server, db: str, db_conn, winners: list[LoadCommit],
                 losers: list[LoadCommit]) -> None:
    states = loads(db_conn)
    assert "LOADING" not in states.values(), states
    for m in winners:
        assert states[m.label] == "FINISHED"
        assert txn_status(db_conn, m.label) == "VISIBLE"
        assert rest_state(server, db, m.label) == "VISIBLE"
    for m in losers:
        assert states[m.label] == "CANCELLED"
        assert txn_status(db_conn, m.label) == "ABORTED"
        assert rest_state(server, db, m.label) == "ABORTED"


def test_speculative_copy_wins_and_late_loser_aborts_itself(
        monkeypatch, server, db, db_conn, writer) -> None:
    original = attempt(monkeypatch, writer, 0, 0, (0, 500))
    speculative = attempt(monkeypatch, writer, 0, 1, (0, 500))
    other = attempt(monkeypatch, writer, 1, 0, (500, 800))
    assert original.txn_id >= 0 and speculative.txn_id >= 0  # both precommitted
    writer.commit([speculative, other])  # Spark kept the speculative copy's message
    assert rows_in(db_conn) == (800, 800)
    # a speculative copy of partition 1 that precommits after the commit: it finds its
    # committed sibling and aborts its own txn
    late = attempt(monkeypatch, writer, 1, 1, (500, 800))
    assert late.txn_id == -1
    assert rows_in(db_conn) == (800, 800)
    check_states(server, db, db_conn, [speculative, other], [original, late])


def test_original_wins_after_a_speculative_copy_started(
        monkeypatch, server, db, db_conn, writer) -> None:
    # before the fix, attempt 1 aborted attempt 0's txn: a winning attempt 0 then failed the
    # commit (its txn was gone) and the whole job failed
    original = attempt(monkeypatch, writer, 0, 0, (0, 300))
    speculative = attempt(monkeypatch, writer, 0, 1, (0, 300))
    writer.commit([original])
    assert rows_in(db_conn) == (300, 300)
    check_states(server, db, db_conn, [original], [speculative])


def test_failed_job_leaves_no_precommitted_attempt(
        monkeypatch, server, db, db_conn, writer) -> None:
    first = attempt(monkeypatch, writer, 0, 0, (0, 100))
    second = attempt(monkeypatch, writer, 0, 1, (0, 100))
    writer.abort([second])  # the job failed: Spark passes what it has
    assert rows_in(db_conn) == (0, 0)
    check_states(server, db, db_conn, [], [first, second])
