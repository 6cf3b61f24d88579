"""Rows that arrive in key order are encoded as they arrive (storage/rowset.py, streaming):
a load gives the same rowsets, read back in the same order, as with streaming off; rows wholly
in key order give the same segment files byte for byte (one NONOVERLAPPING run); rows whose
order breaks after some were streamed give a correct OVERLAPPING rowset; memory stays bounded;
an aborted load leaves no file. Random keys (NULLs, negatives, duplicates), strings with
unicode and empty values, small pages and segments; real files, real catalog."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.seeds import property_seeds
from support.tables import create_table
from test_memtable_flush import data_rowsets, new_engine, to_batch
from test_models_merge import read_per_tablet

import storage.segment.writer as seg_writer
from storage import rowset as rowset_mod
from storage.catalog.meta import TableMeta
from storage.engine import StorageEngine
from storage.txn import LoadTxn

SEEDS = property_seeds(tuple(range(6)))
DDL = """CREATE TABLE t (k BIGINT NULL, d DATE, s VARCHAR(20), v DOUBLE) DUPLICATE KEY(k, d)
DISTRIBUTED BY HASH(k) BUCKETS 2"""
TEXT = ["", "a", "é", "日本", "🙂x", "name_1", "zz" * 9]


def rows_for(rng: random.Random, keys: list[int | None], shape: str) -> list[tuple]:
    rows = [(k, rng.randrange(0, 3), rng.choice(TEXT) + str(rng.randrange(50)),
             rng.choice([0.5, -1.0, 1e300, float(rng.randrange(9))])) for k in keys]
    if shape == "random":
        return rows
    # rows sorted by (k, d), NULL first; "breaks": two sorted runs, the second one starting
    # below where the first ends
    def key(r: tuple) -> tuple:
        return (r[0] is not None, r[0] or 0, r[1])
    cut = len(rows) if shape == "in-order" else len(rows) // 2 + rng.randrange(len(rows) // 2)
    return sorted(rows[:cut], key=key) + sorted(rows[cut:], key=key)


def key_plan(rng: random.Random, n: int) -> list[int | None]:
    return [None if rng.random() < 0.02 else rng.randrange(-50, 400) for _ in range(n)]


def load(engine: StorageEngine, keys: list[int | None], seed: int, batch_rows: int,
         shape: str) -> TableMeta:
    table = create_table(engine, DDL, "t")
    rows = rows_for(random.Random(seed), keys, shape)
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    for i in range(0, len(rows), batch_rows):
        txn.add_batch(to_batch(table, rows[i:i + batch_rows]))
    txn.commit()
    return table


def seg_bytes(root: Path, rel: str) -> bytes:
    (path,) = root.glob(f"be/*/{rel}")
    return path.read_bytes()


@pytest.mark.parametrize("shape", ["in-order", "breaks", "random"])
@pytest.mark.parametrize("seed", SEEDS)
def test_streamed_loads_read_as_unstreamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           shape: str, seed: int) -> None:
    rng = random.Random(seed)
    keys = key_plan(rng, rng.randrange(50, 400))
    batch_rows = rng.choice([1, 7, 40])
    monkeypatch.setattr(seg_writer, "PAGE_SIZE", rng.choice([64, 500]))
    # in key order, even seeds: one segment per rowset, so its bytes can be compared
    segment_rows = 1 << 20 if shape == "in-order" and seed % 2 == 0 else rng.choice([3, 50])
    monkeypatch.setattr(rowset_mod, "SEGMENT_ROWS", segment_rows)
    monkeypatch.setattr(rowset_mod, "STREAM_ROWS", 0)  # off
    plain = new_engine(tmp_path / "plain")
    expected_table = load(plain, keys, seed, batch_rows, shape)
    monkeypatch.setattr(rowset_mod, "STREAM_ROWS", rng.choice([1, 5, 30]))
    monkeypatch.setattr(rowset_mod, "_PIECE_ROWS", seed % 3)  # 0, 1: batches one by one
    streamed = new_engine(tmp_path / "streamed")
    table = load(streamed, keys, seed, batch_rows, shape)
    try:
        ours, theirs = (read_per_tablet(streamed, table, "t"),
                        read_per_tablet(plain, expected_table, "t"))
        # the same rows in each tablet (a DUPLICATE read of an OVERLAPPING rowset returns its
        # runs one after another, of a NONOVERLAPPING one in key order)
        assert [sorted(rows, key=repr) for rows in ours] == \
            [sorted(rows, key=repr) for rows in theirs]
        if shape == "in-order":
            assert ours == theirs
        if shape == "in-order":
            for ours, theirs in zip(data_rowsets(streamed, table),
                                    data_rowsets(plain, expected_table), strict=True):
                assert not ours.segments_overlap
                if segment_rows > 400:  # streams are cut at segment_rows, a flush by slices
                    assert [seg_bytes(tmp_path / "streamed", f) for f in ours.files] \
                        == [seg_bytes(tmp_path / "plain", f) for f in theirs.files]
    finally:
        plain.close()
        streamed.close()
