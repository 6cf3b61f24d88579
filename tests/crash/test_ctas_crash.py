"""kill -9 while a CTAS or an INSERT OVERWRITE waits to publish: after restart the CTAS table
does not exist and the overwritten table holds its old rows, with no files of the crashed
statement left (the fault point holds the load after its files are fsynced, before the catalog
transaction)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from support.server import ServerProcess

DDL = ("CREATE TABLE t (k INT NOT NULL, v VARCHAR(20)) DUPLICATE KEY(k) "
       "DISTRIBUTED BY HASH(k) BUCKETS 4")
STATEMENTS = {
    "ctas": "CREATE TABLE t2 DISTRIBUTED BY HASH(k) BUCKETS 3 AS SELECT k, v FROM t",
    "overwrite": "INSERT OVERWRITE TABLE t SELECT k + 1000, v FROM t",
}


def segment_files(data_dir: Path) -> set[str]:
    return {str(p.relative_to(data_dir)) for p in data_dir.glob("be/*/data/*/*") if p.is_file()}


def state(srv: ServerProcess) -> tuple:
    with srv.connect("crashdb") as conn, conn.cursor() as cur:
        cur.execute("SHOW TABLES")
        tables = sorted(r[0] for r in cur.fetchall())
        cur.execute("SELECT count(*), sum(k) FROM t")
        return tables, cur.fetchone()


@pytest.mark.parametrize("kind", sorted(STATEMENTS))
def test_kill_9_before_publish_leaves_nothing(tmp_path: Path, kind: str) -> None:
    data = tmp_path / "data"
    with ServerProcess(data) as srv:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE crashdb")
            cur.execute("USE crashdb")
            cur.execute(DDL)
            values = ", ".join(f"({i}, 'v{i}')" for i in range(300))
            cur.execute(f"INSERT INTO t VALUES {values}")
        before = state(srv)
    files_before = segment_files(data)
    assert before == (["t"], (300, sum(range(300))))

    crashing = ServerProcess(data, env={"SHALEDB_FAULT_POINT": "load_before_publish"}).start()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with crashing.connect("crashdb") as c, c.cursor() as cur:
                cur.execute(STATEMENTS[kind])
        except BaseException as e:  # noqa: BLE001 - the connection dies with the server
            errors.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    crashing.wait_for_stderr("FAULT POINT load_before_publish reached", timeout=120)
    assert segment_files(data) - files_before, "the statement wrote its files before the crash"
    crashing.kill()
    worker.join(timeout=30)
    assert errors, "the client saw the statement fail"

    with ServerProcess(data) as srv:
        assert state(srv) == before
        assert segment_files(data) == files_before  # the crashed statement's files are gone
        with srv.connect("crashdb") as conn, conn.cursor() as cur:  # and it runs again
            cur.execute(STATEMENTS[kind])
            cur.execute("SELECT count(*) FROM t2" if kind == "ctas" else
                        "SELECT min(k) FROM t")
            assert cur.fetchone()[0] == (300 if kind == "ctas" else 1000)
