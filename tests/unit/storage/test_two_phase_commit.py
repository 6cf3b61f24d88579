"""Two-phase load transactions (storage/txn.py): precommit writes and persists without
publishing; the commit publishes through the same path as a direct commit, also after the
engine reopens; abort and the precommit timeout delete the files and free the label."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_catalog_and_loads import SQL, batch, make_table, read_all

from storage import types as T
from storage.catalog import service as catalog_service
from storage.catalog.meta import TxnStatus
from storage.engine import StorageEngine
from storage.two_phase import (
    TxnStateError,
    abort_expired,
    abort_precommitted,
    commit_precommitted,
)
from storage.txn import LabelAlreadyUsed, LoadTxn


def segment_files(data: Path) -> set[Path]:
    return {p for p in data.glob("be/*/data/*/*") if p.is_file()}


def fresh(tmp_path: Path) -> StorageEngine:
    engine = StorageEngine(tmp_path, backends=2)
    catalog_service.create_database(engine, "db", False)
    make_table(engine, SQL)
    return engine


def precommit(engine: StorageEngine, label: str = "l2pc"):
    table = engine.catalog.get_table("db", "t")
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table, label=label)
    txn.add_batch(batch([1, 2, 3], ["2023-05-01", "2024-05-01", "2024-06-01"]))
    return txn.precommit()


def test_precommitted_txn_survives_reopen_and_commits(tmp_path: Path) -> None:
    engine = fresh(tmp_path)
    meta = precommit(engine)
    assert meta.status is TxnStatus.PRECOMMITTED and meta.num_rows == 3
    assert read_all(engine, "db", "t") == []
    with pytest.raises(LabelAlreadyUsed):  # the label is held while precommitted
        LoadTxn(engine, engine.catalog.get_database("db"), engine.catalog.get_table("db", "t"),
                label="l2pc")
    files = segment_files(tmp_path)
    engine.close()

    engine = StorageEngine(tmp_path, backends=2)  # the start-up GC keeps the pending files
    assert segment_files(tmp_path) == files
    reopened = engine.catalog.txn_by_id(meta.txn_id)
    assert reopened.status is TxnStatus.PRECOMMITTED and len(reopened.pending) == len(meta.pending)
    done = commit_precommitted(engine, reopened)
    assert done.status is TxnStatus.VISIBLE and not done.pending
    assert [r[0] for r in read_all(engine, "db", "t")] == [1, 2, 3]
    with pytest.raises(TxnStateError, match="already visible"):
        commit_precommitted(engine, done)
    engine.close()


def test_abort_deletes_files_and_frees_the_label(tmp_path: Path) -> None:
    engine = fresh(tmp_path)
    before = segment_files(tmp_path)
    meta = precommit(engine)
    assert segment_files(tmp_path) - before
    aborted = abort_precommitted(engine, meta)
    assert aborted.status is TxnStatus.ABORTED
    assert segment_files(tmp_path) == before
    with pytest.raises(TxnStateError, match="could not abort"):
        abort_precommitted(engine, meta)
    again = precommit(engine)  # the label is free again
    commit_precommitted(engine, again)
    assert read_all(engine, "db", "t")[0] == (1, T.DATE.to_physical("2023-05-01"))
    engine.close()


def test_precommit_timeout_aborts(tmp_path: Path) -> None:
    engine = fresh(tmp_path)
    meta = precommit(engine)
    assert abort_expired(engine, 3600, now=meta.precommit_time + 10) == []
    expired = abort_expired(engine, 3600, now=meta.precommit_time + 3600)
    assert [t.txn_id for t in expired] == [meta.txn_id]
    assert engine.catalog.txn_by_id(meta.txn_id).reason == "timeout by txn manager"
    assert read_all(engine, "db", "t") == []
    engine.close()


def test_add_rollup_waits_for_a_precommitted_load(tmp_path: Path) -> None:
    """A two-phase load begun before ADD ROLLUP wrote no shadow index: the job waits in
    WAITING_TXN until it is committed, so the rollup holds its rows too."""
    from test_rollup_job import OFF, InProcess, _batch, _poll_state, _state


    p = InProcess(tmp_path)
    try:
        p.run("CREATE DATABASE d; USE d")
        p.run("""CREATE TABLE t (k1 INT, k2 INT, s BIGINT SUM) AGGREGATE KEY(k1, k2)
                 DISTRIBUTED BY HASH(k1) BUCKETS 2""")
        p.run("INSERT INTO t VALUES (1, 1, 1), (2, 2, 2)")
        cat = p.engine.catalog
        txn = LoadTxn(p.engine, cat.get_database("d"), cat.get_table("d", "t"))
        txn.add_batch(_batch([5, 6], [5, 6], [50, 60]))
        meta = txn.precommit()
        p.run("ALTER TABLE t ADD ROLLUP r(k1, s)")
        (job,) = cat.alter_jobs()
        _poll_state(p, job.job_id, "WAITING_TXN")
        commit_precommitted(p.engine, cat.txn_by_id(meta.txn_id))
        p.engine.rollup_jobs.wait(job.job_id, 60)
        assert _state(p, job.job_id) == "FINISHED"
        sql = "SELECT k1, sum(s) FROM t GROUP BY k1"
        assert p.scans(sql)[0].index_name == "r"
        assert sorted(p.query(sql)) == sorted(p.query(sql, OFF)) == [(1, 1), (2, 2), (5, 50),
                                                                     (6, 60)]
    finally:
        p.close()
