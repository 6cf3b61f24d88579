"""Early flushes (storage/txn.py EARLY_FLUSH_ROWS): a DUPLICATE tablet's memtable is flushed on
the flush pool once it holds enough rows, while the load goes on, so the commit builds only the
last rows. The load reads back exactly what one flush at the commit gives (compared with an
engine whose early flushes are off), its rowsets are OVERLAPPING with one run per flush, an
AGGREGATE / UNIQUE load is never cut, and a load that aborts or fails at the commit leaves no
file of its early flushes behind. Real segment files and catalog, nothing mocked but the
threshold (tiny here so a few rows make runs)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.seeds import property_seeds
from test_memtable_flush import (
    create,
    data_rowsets,
    maybe,
    new_engine,
    read,
    segment_files,
    to_batch,
)

from storage import txn as txn_mod
from storage.catalog.meta import TableMeta
from storage.engine import StorageEngine
from storage.errors import DorisError
from storage.txn import LoadTxn

SEEDS = property_seeds(tuple(range(6)))
DUP = """CREATE TABLE t (k1 INT, k2 VARCHAR(8), v1 INT) DUPLICATE KEY(k1, k2)
DISTRIBUTED BY HASH(k2) BUCKETS 2"""
AGG = """CREATE TABLE t (k1 INT, k2 VARCHAR(8), v1 INT SUM) AGGREGATE KEY(k1, k2)
DISTRIBUTED BY HASH(k2) BUCKETS 2"""


def row(rng: random.Random) -> tuple:
    return (maybe(rng, rng.randint(-3, 3)), maybe(rng, rng.choice(["", "a", "b", "é", "ü"])),
            maybe(rng, rng.randint(-5, 5)))


def batches(rng: random.Random) -> list[list[tuple]]:
    return [[row(rng) for _ in range(rng.randint(1, 12))] for _ in range(rng.randint(4, 12))]


def load_waiting(engine: StorageEngine, table: TableMeta, rows: list[list[tuple]]) -> None:
    """`load`, waiting for the early flushes after each batch (else a batch arriving while
    its tablet's flush is still queued joins that flush: runs would depend on timing)."""
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    for b in rows:
        txn.add_batch(to_batch(table, b))
        txn._wait_flushes()
    txn.commit()


@pytest.mark.parametrize("threshold", [1, 5])
@pytest.mark.parametrize("seed", SEEDS)
def test_early_flushed_loads_read_the_same_as_one_flush(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, threshold: int) -> None:
    rng = random.Random(seed)
    loads = [batches(rng) for _ in range(2)]
    want_rows = []
    for ddl, name in ((DUP, "dup"), (AGG, "agg")):
        got: dict[str, list] = {}
        for way, rows in (("early", threshold), ("off", 0)):
            monkeypatch.setattr(txn_mod, "EARLY_FLUSH_ROWS", rows)
            engine = new_engine(tmp_path / f"{name}-{way}")
            table = create(engine, ddl)
            for b in loads:
                load_waiting(engine, table, b)
            got[way] = read(engine, table)
            overlapping = [r for r in data_rowsets(engine, table) if r.segments_overlap]
            if way == "early" and name == "dup":
                # at threshold 1 every batch a tablet gets after its first flushes: some rowset
                # of these plans has several runs (so far for every seed)
                assert overlapping or threshold > 1
                assert all(r.compaction_score == r.num_segments for r in overlapping)
            else:  # off, or a merging model: one run per rowset
                assert not overlapping
            engine.close()
        assert got["early"] == got["off"]
        want_rows.append(got["off"])
    assert want_rows[0], "the plan loads rows"


def test_an_aborted_load_deletes_its_early_flushed_segments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(txn_mod, "EARLY_FLUSH_ROWS", 4)
    engine = new_engine(tmp_path)
    table = create(engine, DUP)
    load_waiting(engine, table, [[(1, "a", 1)] * 10])
    committed, files = read(engine, table), segment_files(tmp_path)
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    for i in range(6):
        txn.add_batch(to_batch(table, [(i, "a", i), (i, "b", i)] * 3))
    txn._wait_flushes()
    assert segment_files(tmp_path) - files  # written before the commit
    assert read(engine, table) == committed  # and invisible
    txn.abort()
    assert segment_files(tmp_path) == files
    assert read(engine, table) == committed
    assert engine.txns.buffered_bytes() == 0
    engine.close()


def test_a_failed_commit_deletes_its_early_flushed_segments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(txn_mod, "EARLY_FLUSH_ROWS", 4)
    engine = new_engine(tmp_path)
    table = create(engine, DUP)
    db = engine.catalog.get_database("db")
    first = LoadTxn(engine, db, table, label="same")
    second = LoadTxn(engine, db, table, label="same")
    for txn in (first, second):
        for i in range(6):
            txn.add_batch(to_batch(table, [(i, "a", i), (i, "b", i)] * 3))
    first.commit()
    second._wait_flushes()
    assert any(w.num_flushes for w in second._writers.values())  # flushed before its commit
    with pytest.raises(DorisError, match="has already been used"):
        second.commit()
    published = {f for r in data_rowsets(engine, table) for f in r.files}
    assert {str(p.relative_to(p.parents[2])) for p in segment_files(tmp_path)} == published
    assert len(read(engine, table)) == 36
    engine.close()


def test_a_load_with_few_rows_per_tablet_stays_one_run(tmp_path: Path) -> None:
    engine = new_engine(tmp_path)  # the real threshold
    table = create(engine, DUP)
    load_waiting(engine, table, [[(i, s, i) for i in range(100)] for s in ("a", "b", "c")])
    assert data_rowsets(engine, table)
    assert not any(r.segments_overlap for r in data_rowsets(engine, table))
    engine.close()
