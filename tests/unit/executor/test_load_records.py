"""Load records (executor/load/records.py): kept to the bound in memory and in the catalog's
`load_records` table, read back after a reopen with the latest state of each job; the JSON
lines file of earlier versions is imported once and renamed."""

from __future__ import annotations

import json
from pathlib import Path

from executor.load.records import CANCELLED, FINISHED, LOADING, LoadRecordMeta, LoadRecords
from storage.catalog.repository import CatalogRepository


def rec(label: str, state: str = FINISHED) -> LoadRecordMeta:
    return LoadRecordMeta(label=label, db="d", table="t", load_type="STREAM_LOAD", state=state,
                      status="Success", txn_id=1, loaded_rows=3, load_bytes=30)


def test_records_survive_a_reopen_with_their_latest_state(tmp_path: Path) -> None:
    db = tmp_path / "fe" / "catalog.db"
    repo = CatalogRepository(db)
    records = LoadRecords(10, repo)
    records.add(rec("a"))
    records.add(rec("b", LOADING))
    records.update_state("d", "b", CANCELLED, "timeout")
    assert records.counters.txn_success == 1 and records.counters.txn_failed == 1
    repo.close()
    again = LoadRecords(10, CatalogRepository(db))
    assert [(r.label, r.state, r.message) for r in again.list()] == [
        ("a", FINISHED, ""), ("b", CANCELLED, "timeout")]
    assert again.add(rec("c")).job_id == 3  # ids continue
    assert again.counters.txn_success == 1  # counters are since this start


def test_bound_in_memory_and_in_the_catalog(tmp_path: Path) -> None:
    repo = CatalogRepository(tmp_path / "catalog.db")
    records = LoadRecords(3, repo)
    for i in range(10):
        records.add(rec(f"l{i}"))
    assert [r.label for r in records.list()] == ["l7", "l8", "l9"]
    assert [r.label for r in repo.load_records()] == ["l7", "l8", "l9"]  # trimmed as it goes
    assert [r.label for r in LoadRecords(3, repo).list()] == ["l7", "l8", "l9"]


def test_legacy_jsonl_is_imported_once(tmp_path: Path) -> None:
    legacy = tmp_path / "fe" / "load_records.jsonl"
    legacy.parent.mkdir()
    lines = [json.dumps({"label": f"j{i}", "db": "d", "table": "t", "load_type": "INSERT",
                         "state": FINISHED, "status": "Success", "job_id": i, "loaded_rows": i})
             for i in range(1, 6)]
    lines.append(json.dumps({"label": "j5", "db": "d", "table": "t", "load_type": "INSERT",
                             "state": CANCELLED, "status": "Fail", "job_id": 5}))  # latest wins
    legacy.write_text("\n".join(lines) + '\n{"label": "cut by a cra')  # a crash mid-line
    repo = CatalogRepository(tmp_path / "fe" / "catalog.db")
    records = LoadRecords(3, repo, legacy)
    assert [(r.label, r.state, r.loaded_rows) for r in records.list()] == [
        ("j3", FINISHED, 3), ("j4", FINISHED, 4), ("j5", CANCELLED, 0)]
    assert not legacy.exists() and legacy.with_name("load_records.jsonl.imported").exists()
    assert records.add(rec("new")).job_id == 6
    # a second open reads the catalog alone (the renamed file is not imported again)
    again = LoadRecords(3, repo, legacy)
    assert [r.label for r in again.list()] == ["j4", "j5", "new"]
