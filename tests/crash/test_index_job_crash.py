"""kill -9 during an index-building job (ALTER TABLE ADD INDEX on a table with data,
storage/index_job.py): held at a fault point either with a rewritten rowset's files written but
not swapped in (`index_job_before_swap`) or with one rowset swapped in and the rest still to do
(`index_job_running`). While held, the table answers correctly; after the restart the job
resumes and finishes, the index is declared, the results are unchanged, and no file of the
interrupted rewrite is left behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.server import ServerProcess

from storage.segment.reader import SegmentReader

DDL = ("CREATE TABLE t (k INT NOT NULL, city VARCHAR(20), v BIGINT) DUPLICATE KEY(k) "
       "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES (\"disable_auto_compaction\" = \"true\")")


def segment_files(data_dir: Path) -> set[str]:
    return {str(p.relative_to(data_dir)) for p in data_dir.glob("be/*/data/*/*") if p.is_file()}


def table_rows(srv: ServerProcess) -> list[tuple]:
    with srv.connect("crashdb") as conn, conn.cursor() as cur:
        cur.execute("SELECT k, city, v FROM t ORDER BY k")
        return [(int(k), c, int(v)) for k, c, v in cur.fetchall()]


def last_job(cur) -> dict:
    cur.execute("SHOW ALTER TABLE COLUMN")
    names = [d[0] for d in cur.description]
    return dict(zip(names, cur.fetchall()[-1]))


@pytest.mark.parametrize("point", ["index_job_before_swap", "index_job_running"])
def test_kill_9_during_index_job(tmp_path: Path, point: str) -> None:
    data = tmp_path / "data"
    expected = []
    with ServerProcess(data, backends=1) as srv:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE crashdb")
            cur.execute("USE crashdb")
            cur.execute(DDL)
            for load in range(3):
                rows = [(load * 100 + i, f"city{i % 5}", i * load) for i in range(60)]
                expected += rows
                cur.execute("INSERT INTO t VALUES " +
                            ", ".join(f"({k}, '{c}', {v})" for k, c, v in rows))
        assert table_rows(srv) == sorted(expected)
    files_before = segment_files(data)

    crashing = ServerProcess(data, backends=1, env={"SHALEDB_FAULT_POINT": point}).start()
    try:
        with crashing.connect("crashdb") as conn, conn.cursor() as cur:
            cur.execute("ALTER TABLE t ADD INDEX idx_city (city) USING BITMAP")
        crashing.wait_for_stderr(f"FAULT POINT {point} reached", timeout=120)
        written = segment_files(data) - files_before
        assert written, "the job wrote rewritten segments before the crash"
        assert table_rows(crashing) == sorted(expected)  # queryable mid-job, same rows
        with crashing.connect("crashdb") as conn, conn.cursor() as cur:
            assert last_job(cur)["State"] == "RUNNING"
    finally:
        crashing.kill()

    with ServerProcess(data, backends=1) as srv:
        with srv.connect("crashdb") as conn, conn.cursor() as cur:
            deadline = time.monotonic() + 60
            while (job := last_job(cur))["State"] not in ("FINISHED", "CANCELLED"):
                assert time.monotonic() < deadline, job
                time.sleep(0.05)
            assert job["State"] == "FINISHED", job
            cur.execute("SHOW INDEX FROM t")
            assert [r[2] for r in cur.fetchall()] == ["idx_city"]
        assert table_rows(srv) == sorted(expected)
        after = segment_files(data)
        for rel in after - files_before:  # the rewritten segments carry the bitmap index
            with SegmentReader(data / rel, {}) as reader:
                assert {c.name for c in reader.footer.columns if c.bitmap_index} == {"city"}
    if point == "index_job_before_swap":
        # the unswapped rewrite was collected at start-up; the job wrote its own again
        assert not written & after
    # Every rowset was rewritten: the replaced files are stale (kept for readers in flight)
    # and a start-up's garbage collection finds no rowset referencing them.
    with ServerProcess(data, backends=1) as srv:
        assert table_rows(srv) == sorted(expected)
        assert not files_before & segment_files(data)
