"""REPLACE PARTITION .. WITH TEMPORARY PARTITION against a query planned before it (in-process,
real engine and statement runner): the query still reads the replaced partition's rows, a
query planned after reads the new ones, and the old tablets' files go once no reader is left."""

from __future__ import annotations

from pathlib import Path

from executor.query import execute
from planner.query import plan_select
from sql.parser.dialect import parse_one
from tests.unit.planner.inprocess import InProcess


def test_query_planned_before_replace_reads_old_rows(tmp_path: Path) -> None:
    ip = InProcess(tmp_path / "data", backends=1)
    try:
        ip.run("CREATE DATABASE d")
        ip.db = "d"
        ip.run("""CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k)
            PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN ("10"))
            DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("replication_num" = "1")""")
        ip.run("INSERT INTO t VALUES (1, 1), (2, 2)")
        ip.run("ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES LESS THAN ('10')")
        ip.run("INSERT INTO t TEMPORARY PARTITION (tp1) VALUES (3, 30)")
        old_tablets = ip.engine.catalog.tablets(ip.engine.catalog.get_table("d", "t").table_id)
        old_dir = ip.engine.backend_root(old_tablets[0].backend_id) / "data" / str(
            next(t for t in old_tablets if ip.engine.catalog.partition_by_id(
                t.partition_id).name == "p1").tablet_id)
        ctx = ip.runner.context()
        planned = plan_select(parse_one("SELECT k, v FROM t"), ip.engine.catalog, ctx)
        reader = ip.engine.read_epochs.enter()  # a query reading while REPLACE commits
        ip.run("ALTER TABLE t REPLACE PARTITION (p1) WITH TEMPORARY PARTITION (tp1)")
        rows = sorted(r for b in execute(planned, ip.engine, ctx).batches for r in b.rows())
        assert rows == [(1, 1), (2, 2)]
        assert sorted(ip.query("SELECT k, v FROM t")) == [(3, 30)]
        assert ip.engine.retired_tablets.sweep(0) == [] and old_dir.exists()
        ip.engine.read_epochs.exit(reader)
        assert ip.engine.retired_tablets.sweep(0) == [old_dir]
        assert not old_dir.exists() and len(ip.engine.retired_tablets) == 0
    finally:
        ip.close()
