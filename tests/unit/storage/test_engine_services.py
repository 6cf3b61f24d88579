"""StorageEngine owns its services (storage/engine.py): each engine has its own running
transactions, group committer, compaction manager, ALTER job runners and page cache; close()
stops them (open group-commit groups are written first, job threads end with the job's state
kept, the compaction threads exit, cached pages are dropped), and a second engine in the same
process shares none of that state."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "planner"))
from inprocess import InProcess

from storage.batch import Batch, Column
from storage.engine import StorageEngine
from storage.errors import DorisError
from storage.group_commit import GroupCommitOptions
from storage.txn import LoadTxn
from storage.types import BIGINT, INT

SERVICES = ("txns", "group_commit", "compaction", "rollup_jobs", "index_jobs", "page_cache")


def _batch(keys: Sequence[int]) -> Batch:
    return Batch.of([("k", Column.from_physical(INT, list(keys))),
                     ("v", Column.from_physical(BIGINT, [10 * k for k in keys]))])


def _open(path: Path) -> InProcess:
    p = InProcess(path)
    p.run("CREATE DATABASE IF NOT EXISTS d; USE d")
    p.run("""CREATE TABLE IF NOT EXISTS t (k INT, v BIGINT) DUPLICATE KEY(k)
             DISTRIBUTED BY HASH(k) BUCKETS 2""")
    return p


def _group_load(engine: StorageEngine):  # type: ignore[no-untyped-def]
    """The group committer's load function: one real LoadTxn over the members' batches."""
    cat = engine.catalog

    def load(batches: Sequence[Batch]) -> tuple[str, int]:
        db = cat.get_database("d")
        table = cat.get_table("d", "t")
        assert db is not None and table is not None
        txn = LoadTxn(engine, db, table, label_prefix="group_commit")
        for b in batches:
            txn.add_batch(b)
        txn.commit()
        return txn.label, txn.txn_id

    return load


def _poll(check, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_close_stops_every_service_and_keeps_job_state(tmp_path: Path) -> None:
    p = _open(tmp_path)
    engine = p.engine
    cat = engine.catalog
    before = set(threading.enumerate())
    # a rollup job held in WAITING_TXN by a load begun before it: its thread is alive
    held = LoadTxn(engine, cat.get_database("d"), cat.get_table("d", "t"))  # type: ignore[arg-type]
    held.add_batch(_batch([1, 2, 3]))
    p.run("ALTER TABLE t ADD ROLLUP r(k)")
    (job,) = cat.alter_jobs()
    _poll(lambda: cat.alter_job(job.job_id).state == "WAITING_TXN", "job never waited")
    engine.compaction.start()  # the producer thread
    # an open group-commit group whose interval would not end during the test
    options = GroupCommitOptions(interval_s=3600, max_bytes=1 << 30)
    table_id = cat.get_table("d", "t").table_id  # type: ignore[union-attr]
    pending = engine.group_commit.submit(table_id, _batch([7, 8]), options, _group_load(engine))
    started = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    names = {t.name.split("-")[0] for t in started}
    assert {"rollup", "compaction"} <= names, names
    assert not pending.done()

    p.close()

    assert [t.name for t in started if t.is_alive()] == []
    # the open group was written while the catalog was still open
    assert pending.result(timeout=0).rows == 2
    # (its load ran on the process-wide rowset-build pool of storage/txn.py: no engine's)
    after_close = set(threading.enumerate())
    with pytest.raises(DorisError, match="shut down"):
        engine.group_commit.submit(table_id, _batch([9]), options, _group_load(engine))
    engine.compaction.start()  # after stop: no producer again
    engine.rollup_jobs.start(job.job_id)  # nor job threads
    assert set(threading.enumerate()) - after_close == set()

    # stopping is not cancelling: the next engine resumes the job (the held load died with
    # the first one) and sees the group-committed rows
    again = InProcess(tmp_path)
    try:
        assert again.engine.catalog.alter_job(job.job_id).state == "WAITING_TXN"  # type: ignore[union-attr]
        again.engine.rollup_jobs.resume()
        again.engine.rollup_jobs.wait(job.job_id, 60)
        assert again.engine.catalog.alter_job(job.job_id).state == "FINISHED"  # type: ignore[union-attr]
        again.run("USE d")
        assert sorted(again.query("SELECT k, v FROM t")) == [(7, 70), (8, 80)]
    finally:
        again.close()


def test_two_engines_share_no_service_state(tmp_path: Path) -> None:
    one, two = _open(tmp_path / "one"), _open(tmp_path / "two")
    try:
        for name in SERVICES:
            assert getattr(one.engine, name) is not getattr(two.engine, name), name
        # both catalogs hand out the same ids: only the owning engine may see the load
        cat1, cat2 = one.engine.catalog, two.engine.catalog
        db1, t1 = cat1.get_database("d"), cat1.get_table("d", "t")
        assert db1 is not None and t1 is not None
        assert (db1.db_id, t1.table_id) == (cat2.get_database("d").db_id,  # type: ignore[union-attr]
                                            cat2.get_table("d", "t").table_id)  # type: ignore[union-attr]
        txn = LoadTxn(one.engine, db1, t1)
        txn.add_batch(_batch([1, 2]))
        assert one.engine.txns.label_holder(db1.db_id, txn.label) == txn.txn_id
        assert two.engine.txns.label_holder(db1.db_id, txn.label) is None
        assert one.engine.txns.buffered_bytes() > 0 == two.engine.txns.buffered_bytes()
        txn.commit()
        # a full group flushes at once, through its own engine's committer only
        full = GroupCommitOptions(interval_s=3600, max_bytes=1)
        result = one.engine.group_commit.submit(t1.table_id, _batch([5]), full,
                                                _group_load(one.engine)).result(timeout=60)
        assert result.rows == 1
        assert (one.engine.group_commit.loads, two.engine.group_commit.loads) == (1, 0)
        assert sorted(one.query("SELECT k FROM t")) == [(1,), (2,), (5,)]
        assert two.query("SELECT k FROM t") == []
        assert len(one.engine.page_cache) > 0 == len(two.engine.page_cache)  # one's scan only
        # closing one engine stops its services only: the other still group-commits
        one.close()
        assert len(one.engine.page_cache) == 0  # its pages dropped with it
        result = two.engine.group_commit.submit(t1.table_id, _batch([6]), full,
                                                _group_load(two.engine)).result(timeout=60)
        assert (result.rows, two.engine.group_commit.loads) == (1, 1)
        assert two.query("SELECT k FROM t") == [(6,)]
        assert len(two.engine.page_cache) > 0
    finally:
        one.close()  # idempotent
        two.close()
