"""Catalog persistence, atomic load publish and garbage collection of unpublished files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sql.ddl import ddl_ops
from sql.ddl import specs as V
from sql.ddl.create_table import analyze_create_table
from sql.parser.dialect import parse_one
from storage import types as T
from storage.batch import Batch, Column
from storage.catalog import service as catalog_service
from storage.compaction.config import CompactionConfig
from storage.engine import StorageEngine
from storage.errors import ShaleError
from storage.reader import ReadOptions
from storage.txn import LoadTxn


def make_table(engine: StorageEngine, sql: str) -> None:
    defn = analyze_create_table(V.describe_create_table(parse_one(sql)), len(engine.catalog.backends()))
    ddl_ops.create_table(engine, "db", defn)


def read_all(engine: StorageEngine, db: str, table: str) -> list[tuple]:
    t = engine.catalog.get_table(db, table)
    assert t is not None
    rows: list[tuple] = []
    for p in engine.catalog.partitions(t.table_id):
        for tablet in engine.catalog.tablets(t.table_id, p.partition_id, t.base_index_id):
            for b in engine.read_tablet(tablet, p.visible_version, ReadOptions(t.column_names)):
                rows += b.rows()
    return sorted(rows)


def batch(ks: list[int], dates: list[str]) -> Batch:
    return Batch(("k", "dt"), (Column.from_physical(T.INT, ks),
                               Column.from_physical(T.DATE, [T.DATE.to_physical(d) for d in dates])))


SQL = """CREATE TABLE t (k INT, dt DATE) DUPLICATE KEY(k)
PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-01-01"), PARTITION p2 VALUES LESS THAN ("2025-01-01"))
DISTRIBUTED BY HASH(k) BUCKETS 3"""


def test_publish_is_atomic_and_survives_reopen(tmp_path: Path) -> None:
    engine = StorageEngine(tmp_path, backends=2)
    catalog_service.create_database(engine, "db", False)
    make_table(engine, SQL)
    table = engine.catalog.get_table("db", "t")
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    txn.add_batch(batch([1, 2, 3], ["2023-05-01", "2024-05-01", "2024-06-01"]))
    # Written but not published: invisible.
    assert read_all(engine, "db", "t") == []
    txn.commit()
    expected = [(1, T.DATE.to_physical("2023-05-01")), (2, T.DATE.to_physical("2024-05-01")),
                (3, T.DATE.to_physical("2024-06-01"))]
    assert read_all(engine, "db", "t") == expected
    versions = {p.name: p.visible_version for p in engine.catalog.partitions(table.table_id)}
    assert versions == {"p1": 2, "p2": 2}
    engine.close()
    reopened = StorageEngine(tmp_path, backends=2)
    assert read_all(reopened, "db", "t") == expected
    assert len(reopened.catalog.backends()) == 2


def test_failed_load_leaves_nothing(tmp_path: Path) -> None:
    # A one-byte write buffer flushes every batch: the load has a segment on disk before it fails.
    engine = StorageEngine(tmp_path, backends=1, compaction=CompactionConfig(write_buffer_size=1))
    catalog_service.create_database(engine, "db", False)
    make_table(engine, SQL)
    table = engine.catalog.get_table("db", "t")
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    txn.add_batch(batch([1], ["2023-05-01"]))
    assert list(tmp_path.glob("be/*/data/*/*.seg"))
    with pytest.raises(ShaleError, match="no partition for this tuple"):
        txn.add_batch(batch([9], ["2030-01-01"]))
    # The failed load deleted what it had flushed at once, and published nothing.
    assert list(tmp_path.glob("be/*/data/*/*.seg")) == []
    assert read_all(engine, "db", "t") == []


def test_gc_removes_the_files_of_a_load_that_died_before_publish(tmp_path: Path) -> None:
    engine = StorageEngine(tmp_path, backends=1)
    catalog_service.create_database(engine, "db", False)
    make_table(engine, SQL)
    table = engine.catalog.get_table("db", "t")
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    txn.add_batch(batch([1, 2], ["2023-05-01", "2024-05-01"]))
    for w in txn._writers.values():  # written and fsynced, as a crash before the publish leaves them
        w.build()
    segs = list(tmp_path.glob("be/*/data/*/*.seg"))
    assert segs
    assert read_all(engine, "db", "t") == []  # never visible
    engine.close()
    reopened = StorageEngine(tmp_path, backends=1)
    assert list(tmp_path.glob("be/*/data/*/*.seg")) == []
    assert read_all(reopened, "db", "t") == []


def test_label_is_unique_per_database(tmp_path: Path) -> None:
    engine = StorageEngine(tmp_path, backends=1)
    catalog_service.create_database(engine, "db", False)
    make_table(engine, SQL)
    table = engine.catalog.get_table("db", "t")
    db = engine.catalog.get_database("db")
    txn = LoadTxn(engine, db, table, label="l1")
    txn.add_batch(batch([1], ["2023-05-01"]))
    txn.commit()
    with pytest.raises(ShaleError, match=r"Label \[l1\] has already been used"):
        LoadTxn(engine, db, table, label="l1")
