"""Load records (executor/load/records.py): kept to the bound, read back after a restart with
the latest state of each job, the file rewritten when it grows past twice the bound."""

from __future__ import annotations

from pathlib import Path

from executor.load.records import CANCELLED, FINISHED, LOADING, LoadRecord, LoadRecords


def rec(label: str, state: str = FINISHED) -> LoadRecord:
    return LoadRecord(label=label, db="d", table="t", load_type="STREAM_LOAD", state=state,
                      status="Success", txn_id=1, loaded_rows=3, load_bytes=30)


def test_records_survive_a_reopen_with_their_latest_state(tmp_path: Path) -> None:
    path = tmp_path / "fe" / "load_records.jsonl"
    records = LoadRecords(10, path)
    records.add(rec("a"))
    records.add(rec("b", LOADING))
    records.update_state("d", "b", CANCELLED, "timeout")
    assert records.counters.txn_success == 1 and records.counters.txn_failed == 1
    with path.open("a") as f:
        f.write('{"label": "cut by a cra')  # a crash mid-line is skipped
    again = LoadRecords(10, path)
    assert [(r.label, r.state, r.message) for r in again.list()] == [
        ("a", FINISHED, ""), ("b", CANCELLED, "timeout")]
    assert again.add(rec("c")).job_id == 3  # ids continue
    assert again.counters.txn_success == 1  # counters are since this start


def test_bound_and_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    records = LoadRecords(3, path)
    for i in range(10):
        records.add(rec(f"l{i}"))
    assert [r.label for r in records.list()] == ["l7", "l8", "l9"]
    assert sum(1 for _ in path.open()) <= 6
    assert [r.label for r in LoadRecords(3, path).list()] == ["l7", "l8", "l9"]
