"""Group commit (Doris' `group_commit` session variable): small INSERTs from many concurrent
sessions within `group_commit_interval_ms` share one load and one version, every row lands
exactly once, and a statement whose rows cannot load fails alone."""

from __future__ import annotations

import threading

import pymysql
import pytest

SESSIONS = 8
INSERTS = 5
ROWS = 3


def _version(cur, table: str) -> int:
    cur.execute(f"SHOW PARTITIONS FROM {table}")
    return sum(int(r[2]) for r in cur.fetchall())  # VisibleVersion of each partition


def _concurrent(server, db: str, work) -> list[BaseException]:
    barrier = threading.Barrier(SESSIONS)
    errors: list[BaseException] = []

    def run(s: int) -> None:
        conn = server.connect(db)
        try:
            with conn.cursor() as cur:
                cur.execute("SET group_commit = 'sync_mode'")
                barrier.wait(timeout=60)
                work(cur, s)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
        finally:
            conn.close()

    threads = [threading.Thread(target=run, args=(s,)) for s in range(SESSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return errors


def test_concurrent_small_inserts_share_versions(server, db, db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE gc (s INT, i INT, r INT, v VARCHAR(20)) DUPLICATE KEY(s) "
                    "DISTRIBUTED BY HASH(s) BUCKETS 3 PROPERTIES ('group_commit_interval_ms' = '400')")
        start = _version(cur, "gc")

    def work(cur, s: int) -> None:
        for i in range(INSERTS):
            rows = ", ".join(f"({s}, {i}, {r}, 'row {s}-{i}-{r}')" for r in range(ROWS))
            if i % 2:  # every other statement through the general path (an expression)
                rows = rows.replace(f"({s}, {i}, 0,", f"({s}, {i}, abs(0),")
            cur.execute(f"INSERT INTO gc VALUES {rows}")
            assert cur.rowcount == ROWS
            info = cur._result.message.decode()
            assert "'label':'group_commit_" in info and "'status':'VISIBLE'" in info

    assert _concurrent(server, db, work) == []
    with db_conn.cursor() as cur:
        cur.execute("SELECT s, i, r, v FROM gc ORDER BY s, i, r")
        got = list(cur.fetchall())
        loads = _version(cur, "gc") - start
    expected = [(s, i, r, f"row {s}-{i}-{r}") for s in range(SESSIONS) for i in range(INSERTS)
                for r in range(ROWS)]
    assert got == expected
    # 40 statements; each interval's group takes every session that inserted meanwhile
    assert loads <= SESSIONS * INSERTS // 3, loads


def test_off_mode_is_one_version_per_insert(db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute("SELECT @@group_commit")
        assert cur.fetchone() == ("off_mode",)  # Doris' default
        cur.execute("CREATE TABLE solo (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        start = _version(cur, "solo")
        for i in range(4):
            cur.execute(f"INSERT INTO solo VALUES ({i}), ({i + 10})")
            assert "'label':'insert_" in cur._result.message.decode()
        assert _version(cur, "solo") - start == 4


def test_failing_member_fails_alone(server, db, db_conn) -> None:
    """A row with no partition sinks the shared load; the flush then loads each member alone,
    so only that statement gets the error and every other row is there."""
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE gp (k INT, d DATE) DUPLICATE KEY(k) PARTITION BY RANGE(d) "
                    "(PARTITION p1 VALUES LESS THAN ('2025-01-01')) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                    "PROPERTIES ('group_commit_interval_ms' = '500')")

    def work(cur, s: int) -> None:
        day = "2030-01-01" if s == 3 else "2024-06-01"
        try:
            cur.execute(f"INSERT INTO gp VALUES ({s}, '{day}')")
        except pymysql.MySQLError as e:
            assert s == 3 and "no partition for this tuple" in e.args[1]
        else:
            assert s != 3

    assert _concurrent(server, db, work) == []
    with db_conn.cursor() as cur:
        cur.execute("SELECT k FROM gp ORDER BY k")
        assert [r[0] for r in cur.fetchall()] == [s for s in range(SESSIONS) if s != 3]


def test_group_commit_with_label_loads_alone(db_conn) -> None:
    """As in Doris, an INSERT WITH LABEL does not join a group."""
    with db_conn.cursor() as cur:
        cur.execute("SET group_commit = 'sync_mode'")
        cur.execute("CREATE TABLE gl (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("INSERT INTO gl WITH LABEL my_label_1 VALUES (1)")
        assert "'label':'my_label_1'" in cur._result.message.decode()
        with pytest.raises(pymysql.MySQLError) as ei:
            cur.execute("SET group_commit = 'sometimes'")
        assert ei.value.args[0] == 1231 and "group_commit" in ei.value.args[1]


def test_async_mode_waits_for_the_publish(db_conn) -> None:
    """ShaleDB has no group-commit WAL: async_mode acknowledges only published rows."""
    with db_conn.cursor() as cur:
        cur.execute("SET group_commit = ASYNC_MODE")
        cur.execute("SELECT @@group_commit")
        assert cur.fetchone() == ("async_mode",)
        cur.execute("CREATE TABLE ga (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                    "PROPERTIES ('group_commit_interval_ms' = '100')")
        cur.execute("INSERT INTO ga VALUES (1), (2)")
        assert "'label':'group_commit_" in cur._result.message.decode()
        cur.execute("SELECT count(*) FROM ga")
        assert cur.fetchone() == (2,)


def test_killed_member_does_not_stall_the_group(server, db, db_conn) -> None:
    """KILL QUERY on a session waiting for its group: the others still get their answer."""
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE gk (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                    "PROPERTIES ('group_commit_interval_ms' = '1500')")
    victim = server.connect(db)
    other = server.connect(db)
    results: dict[str, object] = {}

    def insert(name: str, conn, value: int) -> None:
        try:
            with conn.cursor() as c:
                c.execute("SET group_commit = sync_mode")
                c.execute(f"INSERT INTO gk VALUES ({value})")
                results[name] = "ok"
        except pymysql.MySQLError as e:
            results[name] = e.args[0]

    with victim.cursor() as c:
        c.execute("SELECT CONNECTION_ID()")
        victim_id = c.fetchone()[0]
    threads = [threading.Thread(target=insert, args=("victim", victim, 1)),
               threading.Thread(target=insert, args=("other", other, 2))]
    for t in threads:
        t.start()
    # wait until the victim is inside its INSERT, then kill that query
    with db_conn.cursor() as cur:
        for _ in range(200):
            cur.execute("SHOW PROCESSLIST")
            if any(r[0] == str(victim_id) and "INSERT" in (r[10] or "") for r in cur.fetchall()):
                break
            threading.Event().wait(0.01)
        cur.execute(f"KILL QUERY {victim_id}")
    for t in threads:
        t.join(timeout=60)
    assert results["other"] == "ok"
    # killed while waiting ("Query was killed", as any statement killed on the event loop),
    # or answered just before the KILL arrived
    assert results["victim"] in ("ok", 3169)
    with victim.cursor() as c:  # KILL QUERY leaves the connection usable
        c.execute("SELECT 1")
        assert c.fetchone() == (1,)
    with db_conn.cursor() as cur:
        cur.execute("SELECT k FROM gk ORDER BY k")
        assert [r[0] for r in cur.fetchall()] == [1, 2]  # the sealed group loads both
    victim.close()
    other.close()
