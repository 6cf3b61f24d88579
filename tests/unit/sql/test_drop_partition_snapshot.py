"""DROP PARTITION, DROP TEMPORARY PARTITION and TRUNCATE against a query planned before them
(in-process, real engine and statement runner, as test_replace_partition_snapshot.py): the query
still reads the rows it planned, a query planned after sees the change, and the dropped tablets'
files go only once no reader is left (storage/retired_tablets.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from executor.query import execute
from planner.query import plan_select
from sql.parser.dialect import parse_one
from tests.unit.planner.inprocess import InProcess


@pytest.fixture
def ip(tmp_path: Path):  # type: ignore[no-untyped-def]
    ip = InProcess(tmp_path / "data", backends=1)
    ip.run("CREATE DATABASE d")
    ip.db = "d"
    ip.run("""CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k)
        PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN ("10"),
                               PARTITION p2 VALUES LESS THAN ("20"))
        DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ("replication_num" = "1")""")
    ip.run("INSERT INTO t VALUES (1, 1), (2, 2), (11, 11), (12, 12)")
    try:
        yield ip
    finally:
        ip.close()


def _dirs(ip: InProcess, partition: str, temporary: bool = False) -> list[Path]:
    cat = ip.engine.catalog
    table = cat.get_table("d", "t")
    part = next(p for p in cat.partitions(table.table_id, temporary=temporary)
                if p.name == partition)
    return [ip.engine.backend_root(t.backend_id) / "data" / str(t.tablet_id)
            for t in cat.tablets(table.table_id, partition_id=part.partition_id)]


def _read_after(ip: InProcess, statement: str, sql: str = "SELECT k, v FROM t") -> list[tuple]:
    """Plan `sql`, run `statement` while that query counts as reading, then execute it."""
    ctx = ip.runner.context()
    planned = plan_select(parse_one(sql), ip.engine.catalog, ctx)
    ip.run(statement)
    return sorted(r for b in execute(planned, ip.engine, ctx).batches for r in b.rows())


@pytest.mark.parametrize("statement, after", [
    ("ALTER TABLE t DROP PARTITION p1", [(11, 11), (12, 12)]),
    ("TRUNCATE TABLE t PARTITION (p1)", [(11, 11), (12, 12)]),
    ("TRUNCATE TABLE t", []),
])
def test_query_planned_before_drop_reads_its_rows(ip, statement, after) -> None:  # type: ignore[no-untyped-def]
    old = [d for d in _dirs(ip, "p1") if d.exists()]  # the buckets holding rows
    assert old
    reader = ip.engine.read_epochs.enter()  # a query running while the DDL commits
    rows = _read_after(ip, statement)
    assert rows == [(1, 1), (2, 2), (11, 11), (12, 12)]
    assert sorted(ip.query("SELECT k, v FROM t")) == after
    assert ip.engine.retired_tablets.sweep(0) == [] and all(d.exists() for d in old)
    ip.engine.read_epochs.exit(reader)
    swept = ip.engine.retired_tablets.sweep(0)
    assert set(old) <= set(swept) and not any(d.exists() for d in old)
    assert len(ip.engine.retired_tablets) == 0


def test_query_of_a_temporary_partition_survives_its_drop(ip) -> None:  # type: ignore[no-untyped-def]
    ip.run("ALTER TABLE t ADD TEMPORARY PARTITION tp VALUES LESS THAN ('10')")
    ip.run("INSERT INTO t TEMPORARY PARTITION (tp) VALUES (5, 50)")
    old = [d for d in _dirs(ip, "tp", temporary=True) if d.exists()]
    assert old
    reader = ip.engine.read_epochs.enter()
    rows = _read_after(ip, "ALTER TABLE t DROP TEMPORARY PARTITION tp",
                       "SELECT k, v FROM t TEMPORARY PARTITION (tp)")
    assert rows == [(5, 50)]
    ip.engine.read_epochs.exit(reader)
    assert set(old) <= set(ip.engine.retired_tablets.sweep(0))
