"""Job history in the catalog across restarts (executor/load/records.py, server/export_jobs.py):
a data dir of an earlier version, with `fe/load_records.jsonl` and `fe/export_jobs.json`, has
them imported once into the catalog (the files renamed to *.imported); SHOW LOAD and SHOW
EXPORT print the same rows after the import, after new loads and after another restart."""

from __future__ import annotations

import json
from pathlib import Path

from support.server import ServerProcess


def _show(srv: ServerProcess, sql: str) -> list[dict[str, object]]:
    with srv.connect("d") as conn, conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]


def _legacy_files(fe: Path) -> None:
    records = [{"label": "old_ok", "db": "d", "table": "t", "load_type": "STREAM_LOAD",
                "state": "FINISHED", "status": "Success", "job_id": 1, "loaded_rows": 5,
                "total_rows": 5},
               {"label": "old_2pc", "db": "d", "table": "t", "load_type": "STREAM_LOAD",
                "state": "LOADING", "status": "Success", "job_id": 2},
               {"label": "old_2pc", "db": "d", "table": "t", "load_type": "STREAM_LOAD",
                "state": "CANCELLED", "status": "Success", "job_id": 2, "message": "aborted"}]
    (fe / "load_records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    row = ["1700000000001", "old_export", "FINISHED", "100%", "{}", "file:///x/",
           "2023-11-14 22:13:20", "2023-11-14 22:13:20", "2023-11-14 22:13:21", "7200", "NULL",
           "[]"]
    running = ["1700000000002", "old_running", "EXPORTING", "0%", "{}", "file:///y/",
               "2023-11-14 22:13:20", "2023-11-14 22:13:20", "NULL", "7200", "NULL", "NULL"]
    (fe / "export_jobs.json").write_text(json.dumps([{"db": "d", "row": row},
                                                     {"db": "d", "row": running}]))


def test_legacy_job_files_are_imported_once_and_survive_restarts(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", backends=1) as srv:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE d")
            cur.execute("CREATE TABLE d.t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) "
                        "BUCKETS 1 PROPERTIES ('replication_num' = '1')")
        srv.stop()
        fe = srv.data_dir / "fe"
        _legacy_files(fe)
        srv.start()

        loads = _show(srv, "SHOW LOAD")
        assert [(r["JobId"], r["Label"], r["State"]) for r in loads] == [
            ("1", "old_ok", "FINISHED"), ("2", "old_2pc", "CANCELLED")]
        exports = _show(srv, "SHOW EXPORT")
        assert [(r["Label"], r["State"]) for r in exports] == [
            ("old_export", "FINISHED"), ("old_running", "CANCELLED")]
        assert exports[0]["FinishTime"] == "2023-11-14 22:13:21"
        # the legacy files are kept, renamed (other fe/ files, e.g. the dynamic partition
        # scheduler's state, are not this test's business)
        legacy = ("export_jobs", "load_records")
        assert sorted(p.name for p in fe.iterdir() if p.name.startswith(legacy)) == [
            "export_jobs.json.imported", "load_records.jsonl.imported"]

        with srv.connect("d") as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO t WITH LABEL new_insert VALUES (1), (2)")
        srv.stop()
        srv.start()  # the catalog alone now: nothing imported twice, the new job kept
        loads = _show(srv, "SHOW LOAD")
        assert [(r["JobId"], r["Label"], r["State"]) for r in loads] == [
            ("1", "old_ok", "FINISHED"), ("2", "old_2pc", "CANCELLED"),
            ("3", "new_insert", "FINISHED")]
        assert [r["Label"] for r in _show(srv, "SHOW EXPORT")] == ["old_export", "old_running"]
