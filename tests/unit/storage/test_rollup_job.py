"""storage/rollup_job.py in-process: an ADD ROLLUP job waits in WAITING_TXN for the loads that
began before it (storage.txn.RunningTxns), then back-fills their versions; loads that began
after it write the shadow index themselves. The finished rollup equals the base index (compared
through the planner with the rollup rule on and off), with no row lost or counted twice."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "planner"))
from inprocess import InProcess

from storage.batch import Batch, Column
from storage.txn import LoadTxn
from storage.types import BIGINT, INT

OFF = frozenset({"choose_rollup"})


def _batch(k1: list[int], k2: list[int], s: list[int]) -> Batch:
    return Batch.of([
        ("k1", Column.from_physical(INT, k1)),
        ("k2", Column.from_physical(INT, k2)),
        ("s", Column.from_physical(BIGINT, s)),
    ])


def _state(p: InProcess, job_id: int) -> str:
    job = p.engine.catalog.alter_job(job_id)
    assert job is not None
    return job.state


def _poll_state(p: InProcess, job_id: int, want: str) -> None:
    deadline = time.monotonic() + 60
    while _state(p, job_id) != want:
        assert time.monotonic() < deadline, f"job {job_id} stuck in {_state(p, job_id)}"
        time.sleep(0.02)


def test_job_waits_for_loads_begun_before_it(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        p.run("CREATE DATABASE d; USE d")
        p.run("""CREATE TABLE t (k1 INT, k2 INT, s BIGINT SUM) AGGREGATE KEY(k1, k2)
                 DISTRIBUTED BY HASH(k1) BUCKETS 2""")
        p.run("INSERT INTO t VALUES " + ", ".join(f"({i % 7}, {i % 3}, {i})" for i in range(60)))
        cat = p.engine.catalog
        db = cat.get_database("d")
        old = LoadTxn(p.engine, db, cat.get_table("d", "t"))  # begun before the job: base only
        old.add_batch(_batch([i % 5 for i in range(40)], [i % 4 for i in range(40)],
                             [1000 + i for i in range(40)]))
        p.run("ALTER TABLE t ADD ROLLUP r(k2, s)")
        (job,) = cat.alter_jobs()
        assert job.transaction_id > old.txn_id
        assert p.engine.txns.before(job.table_id, job.transaction_id) == [old.txn_id]
        _poll_state(p, job.job_id, "WAITING_TXN")
        # a load begun after the job writes the shadow index itself and does not hold the job
        p.run("INSERT INTO t VALUES (8, 8, 7), (1, 2, 3)")
        shadow = [t.tablet_id for t in cat.tablets(job.table_id, index_id=job.rollup_index_id)]
        assert any(cat.rowsets(t) for t in shadow)
        assert _state(p, job.job_id) == "WAITING_TXN"  # still: the old load is open
        old.commit()
        p.engine.rollup_jobs.wait(job.job_id, 60)
        assert _state(p, job.job_id) == "FINISHED"
        sql = "SELECT k2, sum(s) FROM t GROUP BY k2"
        (scan,) = p.scans(sql)
        assert scan.index_name == "r"
        assert sorted(p.query(sql)) == sorted(p.query(sql, OFF))
        assert sum(v for _, v in p.query(sql)) == sum(range(60)) + sum(1000 + i for i in range(40)) + 10
    finally:
        p.close()


def test_aborted_and_abandoned_loads_release_the_job(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        p.run("CREATE DATABASE d; USE d")
        p.run("""CREATE TABLE t (k1 INT, k2 INT, s BIGINT SUM) AGGREGATE KEY(k1, k2)
                 DISTRIBUTED BY HASH(k1) BUCKETS 2""")
        p.run("INSERT INTO t VALUES (1, 1, 1), (2, 2, 2)")
        cat = p.engine.catalog
        db = cat.get_database("d")
        aborted = LoadTxn(p.engine, db, cat.get_table("d", "t"))
        aborted.add_batch(_batch([5], [5], [5]))
        abandoned = LoadTxn(p.engine, db, cat.get_table("d", "t"))
        abandoned.add_batch(_batch([6], [6], [6]))
        p.run("ALTER TABLE t ADD ROLLUP r(k1, s)")
        (job,) = cat.alter_jobs()
        _poll_state(p, job.job_id, "WAITING_TXN")
        aborted.abort()
        assert _state(p, job.job_id) == "WAITING_TXN"
        del abandoned  # dropped without commit or abort (an error in the statement)
        p.engine.rollup_jobs.wait(job.job_id, 60)
        assert _state(p, job.job_id) == "FINISHED"
        sql = "SELECT k1, sum(s) FROM t GROUP BY k1"
        assert p.scans(sql)[0].index_name == "r"
        assert sorted(p.query(sql)) == [(1, 1), (2, 2)]
    finally:
        p.close()


def test_cancel_while_waiting_txn(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        p.run("CREATE DATABASE d; USE d")
        p.run("""CREATE TABLE t (k1 INT, k2 INT, s BIGINT SUM) AGGREGATE KEY(k1, k2)
                 DISTRIBUTED BY HASH(k1) BUCKETS 2""")
        cat = p.engine.catalog
        old = LoadTxn(p.engine, cat.get_database("d"), cat.get_table("d", "t"))
        old.add_batch(_batch([1, 2], [1, 2], [10, 20]))
        p.run("ALTER TABLE t ADD ROLLUP r(k1, s)")
        (job,) = cat.alter_jobs()
        _poll_state(p, job.job_id, "WAITING_TXN")
        p.run("CANCEL ALTER TABLE ROLLUP FROM t")
        assert _state(p, job.job_id) == "CANCELLED"
        assert [ix.name for ix in cat.materialized_indexes(job.table_id)] == ["t"]
        old.commit()  # the load still publishes, to the base index
        assert sorted(p.query("SELECT k1, sum(s) FROM t GROUP BY k1")) == [(1, 10), (2, 20)]
    finally:
        p.close()


def test_a_load_that_fails_in_add_batch_releases_the_job(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        p.run("CREATE DATABASE d; USE d")
        p.run("""CREATE TABLE t (k1 INT, k2 INT, s BIGINT SUM) AGGREGATE KEY(k1, k2)
                 PARTITION BY RANGE(k1) (PARTITION p VALUES LESS THAN ("10"))
                 DISTRIBUTED BY HASH(k1) BUCKETS 2""")
        cat = p.engine.catalog
        failing = LoadTxn(p.engine, cat.get_database("d"), cat.get_table("d", "t"))
        p.run("ALTER TABLE t ADD ROLLUP r(k1, s)")
        (job,) = cat.alter_jobs()
        _poll_state(p, job.job_id, "WAITING_TXN")
        try:
            failing.add_batch(_batch([50], [1], [1]))  # no partition holds k1 = 50
        except Exception as e:  # noqa: BLE001 - the load's own error
            assert "no partition for this tuple" in str(e)
        else:
            raise AssertionError("the row should have been rejected")
        assert p.engine.txns.before(job.table_id, job.transaction_id) == []
        p.engine.rollup_jobs.wait(job.job_id, 60)
        assert _state(p, job.job_id) == "FINISHED"
        del failing
    finally:
        p.close()
