"""The catalog repository's job history tables (storage/catalog/repository.py): load records
and export jobs round-trip through SQLite, survive a reopen and are trimmed by job id in the
same transaction as a put; an older catalog file gains the tables on open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from storage.catalog.meta import ExportJobMeta, LoadRecordMeta
from storage.catalog.repository import CatalogRepository


def test_load_records_round_trip_and_trim(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    repo = CatalogRepository(path)
    first = LoadRecordMeta("l1", "d", "t", "STREAM_LOAD", "LOADING", "Success", job_id=1, txn_id=7,
                           loaded_rows=3, error_url="http://x/e", start_time=1.5)
    repo.put_load_records([first, LoadRecordMeta("l2", "d", "t", "INSERT", "FINISHED",
                                                 "Success", job_id=2)])
    repo.put_load_records([LoadRecordMeta("l1", "d", "t", "STREAM_LOAD", "CANCELLED",
                                          "Success", message="aborted", job_id=1)])  # replaces job 1
    repo.close()
    repo = CatalogRepository(path)
    stored = repo.load_records()
    assert [(r.job_id, r.state, r.message) for r in stored] == [
        (1, "CANCELLED", "aborted"), (2, "FINISHED", "")]
    repo.put_load_records([LoadRecordMeta("l3", "d", "t", "INSERT", "FINISHED", "Success", job_id=3)],
                          keep_from=2)
    assert [r.job_id for r in repo.load_records()] == [2, 3]


def test_export_jobs_round_trip_and_trim(tmp_path: Path) -> None:
    repo = CatalogRepository(tmp_path / "catalog.db")
    row = ("100", "lab", "FINISHED", "100%", "{}", "file:///x/", "t0", "t1", "t2", "7200",
           "NULL", "[]")
    repo.put_export_jobs([ExportJobMeta(100, "d", "lab", "FINISHED", row),
                          ExportJobMeta(101, "d", "lab2", "PENDING", row)])
    assert repo.export_jobs() == [ExportJobMeta(100, "d", "lab", "FINISHED", row),
                                  ExportJobMeta(101, "d", "lab2", "PENDING", row)]
    repo.put_export_jobs([ExportJobMeta(102, "d", "lab3", "PENDING", row)], keep_from=101)
    assert [j.job_id for j in repo.export_jobs()] == [101, 102]


def test_an_older_catalog_file_gains_the_tables(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    with sqlite3.connect(path) as conn:  # the schema before job history had tables
        conn.execute("CREATE TABLE objects (kind TEXT NOT NULL, id TEXT NOT NULL, "
                     "parent INTEGER, body TEXT NOT NULL, PRIMARY KEY (kind, id))")
    conn.close()
    repo = CatalogRepository(path)
    assert repo.load_records() == [] and repo.export_jobs() == []
    repo.put_load_records([LoadRecordMeta("l", "d", "t", "INSERT", "FINISHED", "Success", job_id=1)])
    assert [r.label for r in repo.load_records()] == ["l"]
