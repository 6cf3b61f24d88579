"""Dynamic partitions survive kill -9 (issue 15): the partitions the scheduler created, and its
per-table state (LastUpdateTime, State) that SHOW DYNAMIC PARTITION TABLES prints; a crash in
the middle of a run leaves the partitions created so far, whole, and the next run adds the rest.
Each test runs its own server on its own data directory; "today" is pinned with the clock
override (not persisted: after the restart the real clock runs until it is pinned again)."""

from __future__ import annotations

import threading
from pathlib import Path

import pymysql
from support.server import ServerProcess

PINNED = "2020-06-06 10:00:00"
DAYS = ["p20200606", "p20200607", "p20200608", "p20200609"]
TABLE = """CREATE TABLE d.{name} (k1 DATE, v INT) DUPLICATE KEY(k1) PARTITION BY RANGE(k1) ()
DISTRIBUTED BY HASH(k1) BUCKETS 2 PROPERTIES ("replication_num" = "1",
"dynamic_partition.time_unit" = "DAY", "dynamic_partition.end" = "3",
"dynamic_partition.prefix" = "p", "dynamic_partition.enable" = "{enable}")"""


def _pin(cur, when: str) -> None:  # type: ignore[no-untyped-def]
    cur.execute(f'ADMIN SET FRONTEND CONFIG ("current_time_override" = "{when}")')


def _names(cur, table: str) -> list[str]:  # type: ignore[no-untyped-def]
    cur.execute(f"SHOW PARTITIONS FROM d.{table}")
    return sorted(r[1] for r in cur.fetchall())


def _row(cur, table: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    cur.execute("SHOW DYNAMIC PARTITION TABLES FROM d")
    cols = [c[0] for c in cur.description]
    return next(dict(zip(cols, r)) for r in cur.fetchall() if r[0] == table)


def test_partitions_and_scheduler_state_survive_kill_9(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ServerProcess(data) as srv, srv.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE d")
        _pin(cur, PINNED)
        cur.execute(TABLE.format(name="days", enable="true"))
        cur.execute(TABLE.format(name="blocked", enable="false"))
        # a manual partition over every date the scheduler could want: each creation fails,
        # at the pinned "today" and at the real one after the restart
        cur.execute('ALTER TABLE d.blocked ADD PARTITION manual VALUES [("2000-01-01"), '
                    '("2100-01-01"))')
        cur.execute('ALTER TABLE d.blocked SET ("dynamic_partition.enable" = "true")')
        before = _row(cur, "blocked")
        assert (before["State"], before["LastUpdateTime"]) == ("ERROR", PINNED)
        assert _names(cur, "days") == DAYS
        srv.kill()
    with ServerProcess(data) as srv, srv.connect() as conn, conn.cursor() as cur:
        # the scheduler thread runs once at start (real clock): its failure is logged
        srv.wait_for_stderr("dynamic add partition failed", timeout=60)
        assert set(DAYS) <= set(_names(cur, "days"))  # the real "today" may add its own
        after = _row(cur, "blocked")
        # LastUpdateTime is only ever set by the ALTER: it came back from the stored state
        assert (after["State"], after["LastUpdateTime"]) == ("ERROR", PINNED)
        assert "is intersected with range" in after["LastCreatePartitionMsg"]
        assert after["LastSchedulerTime"] > "2020-06-06 10:00:00"  # the startup run's
        assert _names(cur, "blocked") == ["manual"]


def test_kill_in_the_middle_of_a_run_keeps_whole_partitions(tmp_path: Path) -> None:
    data = tmp_path / "data"
    point = "dynamic_partition_between_adds"
    crashing = ServerProcess(data, env={"SHALEDB_FAULT_POINT": point}).start()
    try:
        with crashing.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE d")
            _pin(cur, PINNED)
        # CREATE runs the scheduler for the table and stops after its first partition
        hold = crashing.connect()

        def create() -> None:
            try:
                hold.cursor().execute(TABLE.format(name="days", enable="true"))
            except pymysql.err.OperationalError:
                pass  # the server is killed while the statement waits at the fault point

        runner = threading.Thread(target=create, daemon=True)
        runner.start()
        crashing.wait_for_stderr(f"FAULT POINT {point} reached", timeout=120)
    finally:
        crashing.kill()
    with ServerProcess(data) as srv, srv.connect() as conn, conn.cursor() as cur:
        assert "p20200606" in _names(cur, "days")
        assert not set(DAYS[1:]) & set(_names(cur, "days"))  # nothing after the crash point
        _pin(cur, PINNED)  # the next run adds the rest, once each
        try:
            names = _names(cur, "days")
            assert set(DAYS) <= set(names) and len(names) == len(set(names))
            cur.execute("INSERT INTO d.days VALUES ('2020-06-06', 1), ('2020-06-07', 2), "
                        "('2020-06-08', 3), ('2020-06-09', 4)")
            cur.execute("SELECT count(*), sum(v) FROM d.days")
            assert cur.fetchall() == ((4, 10),)
        finally:
            _pin(cur, "")
