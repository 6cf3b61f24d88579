"""storage/rollup_job.py in-process: a load that captured the table's indexes BEFORE an ADD
ROLLUP job started and publishes after it converts its own rowsets for the new index, so the
finished rollup equals the base index (compared through the planner with the rollup rule on
and off)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "planner"))
from inprocess import InProcess

from storage.batch import Batch, Column
from storage.rollup_job import RollupJobs
from storage.txn import LoadTxn
from storage.types import BIGINT, INT

OFF = frozenset({"choose_rollup"})


def test_load_started_before_the_job_lands_in_the_rollup(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        p.run("CREATE DATABASE d; USE d")
        p.run("""CREATE TABLE t (k1 INT, k2 INT, s BIGINT SUM) AGGREGATE KEY(k1, k2)
                 DISTRIBUTED BY HASH(k1) BUCKETS 2""")
        p.run("INSERT INTO t VALUES " + ", ".join(f"({i % 7}, {i % 3}, {i})" for i in range(60)))
        cat = p.engine.catalog
        table = cat.get_table("d", "t")
        txn = LoadTxn(p.engine, cat.get_database("d"), table)  # captures [base] only
        n = 40
        txn.add_batch(
            Batch.of(
                [
                    ("k1", Column.from_physical(INT, [i % 5 for i in range(n)])),
                    ("k2", Column.from_physical(INT, [i % 4 for i in range(n)])),
                    ("s", Column.from_physical(BIGINT, [1000 + i for i in range(n)])),
                ]
            )
        )
        jobs = RollupJobs.of(p.engine)
        # the job may finish before or after the racing load publishes: both must be correct
        p.run("ALTER TABLE t ADD ROLLUP r(k2, s)")
        txn.commit()
        for job in cat.alter_jobs():
            jobs.wait(job.job_id, 60)
        assert [j.state for j in cat.alter_jobs()] == ["FINISHED"]
        sql = "SELECT k2, sum(s) FROM t GROUP BY k2"
        (scan,) = p.scans(sql)
        assert scan.index_name == "r"
        assert sorted(p.query(sql)) == sorted(p.query(sql, OFF))
        # and with the job paused until after the racing load: convert on commit
        txn2 = LoadTxn(p.engine, cat.get_database("d"), cat.get_table("d", "t"))
        txn2.add_batch(
            Batch.of(
                [
                    ("k1", Column.from_physical(INT, [9])),
                    ("k2", Column.from_physical(INT, [9])),
                    ("s", Column.from_physical(BIGINT, [5])),
                ]
            )
        )
        p.run("ALTER TABLE t ADD ROLLUP r2(k1, s)")
        txn2.commit()
        for job in cat.alter_jobs():
            jobs.wait(job.job_id, 60)
        sql = "SELECT k1, sum(s) FROM t GROUP BY k1"
        assert p.scans(sql)[0].index_name == "r2"
        assert sorted(p.query(sql)) == sorted(p.query(sql, OFF))
        assert (9, 5) in p.query(sql)
    finally:
        p.close()
