"""ALTER TABLE .. SET ("colocate_with") relocates tablets between embedded backends; a load
that wrote a tablet on its old backend before the move and publishes after it still lands
(LoadTxn copies the rowset's files to the tablet's new backend)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "planner"))
from inprocess import InProcess

from storage.batch import Batch, Column
from storage.txn import LoadTxn
from storage.types import INT


def test_load_racing_a_colocate_move_keeps_its_rows(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        p.run("CREATE DATABASE d; USE d")
        p.run(
            "CREATE TABLE g (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 6 "
            'PROPERTIES ("colocate_with" = "grp")'
        )
        # a one-tablet table first, so t's round-robin placement starts on another backend
        p.run("CREATE TABLE filler (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        p.run("CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 6")
        p.run("INSERT INTO t VALUES " + ", ".join(f"({i}, {i})" for i in range(100)))
        cat = p.engine.catalog
        before = {t.bucket_seq: t.backend_id for t in cat.tablets(cat.get_table("d", "t").table_id)}
        txn = LoadTxn(p.engine, cat.get_database("d"), cat.get_table("d", "t"))
        txn.add_batch(
            Batch.of(
                [
                    ("k", Column.from_physical(INT, list(range(100, 160)))),
                    ("v", Column.from_physical(INT, list(range(100, 160)))),
                ]
            )
        )
        p.run('ALTER TABLE t SET ("colocate_with" = "grp")')
        group = cat.colocate_group(cat.get_table("d", "t").colocate_group_id)
        after = {t.bucket_seq: t.backend_id for t in cat.tablets(cat.get_table("d", "t").table_id)}
        assert after == {i: bes[0] for i, bes in enumerate(group.backends_per_bucket)}
        assert after != before  # the test only means something if tablets did move
        txn.commit()
        assert p.query("SELECT count(*), sum(v) FROM t") == [(160, sum(range(160)))]
    finally:
        p.close()
