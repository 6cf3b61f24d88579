"""Several PRECOMMITTED txns committed together (storage/two_phase.py
`commit_precommitted_many`, behind `_stream_load_2pc` with `txn_id: 1,2,3`): one catalog
transaction, one new version per partition, all rows visible at once; a txn in the wrong state
fails the whole commit with nothing published."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_catalog_and_loads import read_all
from test_two_phase_commit import fresh, precommit

from storage.catalog.meta import TxnStatus
from storage.two_phase import TxnStateError, abort_precommitted, commit_precommitted_many


def versions(engine) -> dict[str, int]:
    table = engine.catalog.get_table("db", "t")
    return {p.name: p.visible_version for p in engine.catalog.partitions(table.table_id)}


def test_many_txns_become_one_version(tmp_path: Path) -> None:
    engine = fresh(tmp_path)
    before = versions(engine)
    txns = [precommit(engine, f"part-{i}") for i in range(3)]
    assert read_all(engine, "db", "t") == []
    done = commit_precommitted_many(engine, txns)
    assert [t.status for t in done] == [TxnStatus.VISIBLE] * 3
    assert all(engine.catalog.txn_by_id(t.txn_id).status is TxnStatus.VISIBLE for t in txns)
    # each touched partition moved by exactly one version, holding all three txns' rows
    after = versions(engine)
    assert sorted(after[n] - before[n] for n in before) == [1, 1]  # two partitions
    assert sorted(r[0] for r in read_all(engine, "db", "t")) == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    engine.close()


def test_one_bad_txn_fails_all_with_nothing_visible(tmp_path: Path) -> None:
    engine = fresh(tmp_path)
    before = versions(engine)
    txns = [precommit(engine, f"part-{i}") for i in range(3)]
    abort_precommitted(engine, txns[1])
    with pytest.raises(TxnStateError, match=f"transaction \\[{txns[1].txn_id}\\] is already"):
        commit_precommitted_many(engine, txns)
    assert versions(engine) == before and read_all(engine, "db", "t") == []
    assert engine.catalog.txn_by_id(txns[0].txn_id).status is TxnStatus.PRECOMMITTED
    engine.close()
