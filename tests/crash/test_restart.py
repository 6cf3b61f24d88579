"""Restart keeps everything committed: a clean stop (SIGTERM) and a crash (kill -9 right after an
INSERT or a DDL returned OK) both come back with the same databases, tables, SHOW CREATE TABLE
text, partitions (names, ranges, visible versions) and rows. Each test runs its own server on its
own data directory."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from support.server import ServerProcess

DB = "crash_db"
OTHER_DB = "crash_db_other"

SCHEMA = [
    f"CREATE DATABASE {DB}",
    f"CREATE DATABASE {OTHER_DB}",
    f"""CREATE TABLE {DB}.plain (
          k INT NOT NULL,
          name VARCHAR(20),
          amount DECIMAL(12, 2),
          ts DATETIME(3),
          big LARGEINT
        ) DUPLICATE KEY(k)
        DISTRIBUTED BY HASH(k) BUCKETS 3""",
    f"""CREATE TABLE {DB}.events (
          dt DATE NOT NULL,
          id INT NOT NULL,
          v BIGINT
        ) DUPLICATE KEY(dt, id)
        PARTITION BY RANGE(dt) (
          PARTITION p202401 VALUES LESS THAN ("2024-02-01"),
          PARTITION p202402 VALUES LESS THAN ("2024-03-01"),
          PARTITION p202403 VALUES [("2024-03-01"), ("2024-04-01"))
        )
        DISTRIBUTED BY HASH(id) BUCKETS 2""",
    f"""CREATE TABLE {DB}.by_city (
          city VARCHAR(20) NOT NULL,
          n INT
        ) DUPLICATE KEY(city)
        PARTITION BY LIST(city) (
          PARTITION p_a VALUES IN ("a", "b"),
          PARTITION p_c VALUES IN ("c")
        )
        DISTRIBUTED BY HASH(city) BUCKETS 1""",
    f"""CREATE TABLE {DB}.agg (
          k1 INT NOT NULL,
          v_sum BIGINT SUM DEFAULT "0",
          v_rep VARCHAR(10) REPLACE
        ) AGGREGATE KEY(k1)
        DISTRIBUTED BY HASH(k1) BUCKETS 2
        ROLLUP (r1 (k1, v_sum))""",
    f"""CREATE TABLE {DB}.uniq (
          id BIGINT NOT NULL,
          city VARCHAR(20)
        ) UNIQUE KEY(id)
        DISTRIBUTED BY HASH(id) BUCKETS 2
        PROPERTIES ("enable_unique_key_merge_on_write" = "true")""",
    f"""CREATE TABLE {DB}.dropped (
          k INT
        ) DUPLICATE KEY(k)
        DISTRIBUTED BY HASH(k) BUCKETS 1""",
    f"""CREATE TABLE {OTHER_DB}.o1 (
          x INT
        ) DUPLICATE KEY(x)
        DISTRIBUTED BY RANDOM BUCKETS 2""",
]

LOADS = [
    f"""INSERT INTO {DB}.plain VALUES
          (1, 'one', 1.25, '2024-01-01 00:00:00.123', 170141183460469231731687303715884105727),
          (2, NULL, NULL, NULL, NULL),
          (3, 'three', -3.50, '2024-03-03 03:03:03.333', -5)""",
    f"INSERT INTO {DB}.plain (k, name) VALUES (4, 'four')",
    f"""INSERT INTO {DB}.events VALUES
          ('2024-01-05', 1, 10), ('2024-01-31', 2, 20), ('2024-02-01', 3, 30)""",
    f"INSERT INTO {DB}.events VALUES ('2024-03-31', 4, 40)",
    f"INSERT INTO {DB}.by_city VALUES ('a', 1), ('c', 3)",
    f"INSERT INTO {OTHER_DB}.o1 VALUES (7), (8), (9)",
    f"DROP TABLE {DB}.dropped",
    f'ALTER TABLE {DB}.events ADD PARTITION p202404 VALUES LESS THAN ("2024-05-01")',
    f"INSERT INTO {DB}.events VALUES ('2024-04-15', 5, 50)",
    f"ALTER TABLE {DB}.events DROP PARTITION p202402",
    f'ALTER TABLE {DB}.plain SET ("disable_auto_compaction" = "true")',
]

DUP_TABLES = {  # rows are compared for DUPLICATE tables; every table's metadata is compared
    f"{DB}.plain": "k",
    f"{DB}.events": "dt, id",
    f"{DB}.by_city": "city",
    f"{OTHER_DB}.o1": "x",
}


def _rows(conn, sql: str) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]


def _run(conn, statements: list[str]) -> None:
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


def snapshot(srv: ServerProcess) -> dict[str, object]:
    """Everything a user can see about the two databases."""
    snap: dict[str, object] = {}
    with srv.connect() as conn:
        snap["databases"] = sorted(_rows(conn, "SHOW DATABASES LIKE 'crash_db%'"))
        for db in (DB, OTHER_DB):
            tables = sorted(r[0] for r in _rows(conn, f"SHOW TABLES FROM {db}"))
            snap[f"tables:{db}"] = tables
            for t in tables:
                full = f"{db}.{t}"
                snap[f"create:{full}"] = _rows(conn, f"SHOW CREATE TABLE {full}")
                snap[f"desc:{full}"] = _rows(conn, f"DESC {full}")
                snap[f"descall:{full}"] = _rows(conn, f"DESC {full} ALL")
                with conn.cursor() as cur:
                    cur.execute(f"SHOW PARTITIONS FROM {full}")
                    names = [d[0] for d in cur.description]
                    keep = [
                        names.index(c)
                        for c in ("PartitionName", "VisibleVersion", "Range", "Buckets")
                    ]
                    snap[f"partitions:{full}"] = sorted(
                        tuple(str(r[i]) for i in keep) for r in cur.fetchall()
                    )
        for full, order in DUP_TABLES.items():
            snap[f"rows:{full}"] = _rows(conn, f"SELECT * FROM {full} ORDER BY {order}")
    return snap


def _assert_same(before: dict[str, object], after: dict[str, object]) -> None:
    assert sorted(after) == sorted(before)
    for key in before:
        assert after[key] == before[key], (
            f"{key} changed across restart:\n{before[key]}\n---\n{after[key]}"
        )


def _expected_rows_sanity(
    snap: dict[str, object], plain_ids: tuple[int, ...] = (1, 2, 3, 4)
) -> None:
    """The snapshot itself holds what the statements wrote (so an empty server cannot pass)."""
    assert snap[f"tables:{DB}"] == ["agg", "by_city", "events", "plain", "uniq"]
    assert snap[f"tables:{OTHER_DB}"] == ["o1"]
    assert [r[0] for r in snap[f"rows:{DB}.plain"]] == list(plain_ids)
    assert [r[1] for r in snap[f"rows:{DB}.events"]] == [1, 2, 4, 5]
    assert [r[0] for r in snap[f"rows:{OTHER_DB}.o1"]] == [7, 8, 9]
    parts = snap[f"partitions:{DB}.events"]
    assert [p[0] for p in parts] == ["p202401", "p202403", "p202404"]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_sigterm_restart_keeps_everything(data_dir: Path) -> None:
    srv = ServerProcess(data_dir)
    srv.start()
    try:
        with srv.connect() as conn:
            _run(conn, SCHEMA + LOADS)
        before = snapshot(srv)
        _expected_rows_sanity(before)
    finally:
        code = srv.stop()
    assert code == 0, f"server did not exit cleanly on SIGTERM (exit {code})\n{srv.output_tail()}"

    srv = ServerProcess(data_dir)
    srv.start()
    try:
        _assert_same(before, snapshot(srv))
        # the restarted server keeps working and its new commits survive another restart
        with srv.connect() as conn:
            _run(conn, [f"INSERT INTO {DB}.plain (k) VALUES (5)"])
        again = snapshot(srv)
        assert [r[0] for r in again[f"rows:{DB}.plain"]] == [1, 2, 3, 4, 5]
    finally:
        assert srv.stop() == 0

    srv = ServerProcess(data_dir)
    srv.start()
    try:
        _assert_same(again, snapshot(srv))
    finally:
        srv.stop()


def test_kill_9_right_after_insert_keeps_committed_rows(data_dir: Path) -> None:
    srv = ServerProcess(data_dir)
    srv.start()
    try:
        with srv.connect() as conn:
            _run(conn, SCHEMA + LOADS)
            _run(conn, [f"INSERT INTO {DB}.plain (k, name) VALUES (6, 'six'), (7, 'seven')"])
            before = snapshot(srv)
            _expected_rows_sanity(before, plain_ids=(1, 2, 3, 4, 6, 7))
            _run(
                conn,
                [f"INSERT INTO {DB}.events VALUES ('2024-01-20', 9, 90), ('2024-03-02', 8, 80)"],
            )
            # the OK packet has arrived, so the load is committed: crash at once
            srv.kill()
    finally:
        if srv.running:
            srv.kill()
    assert srv.proc is not None and srv.proc.returncode == -9

    expected = dict(before)
    expected[f"rows:{DB}.events"] = sorted(
        list(before[f"rows:{DB}.events"])
        + [(dt.date(2024, 1, 20), 9, 90), (dt.date(2024, 3, 2), 8, 80)],
        key=lambda r: (r[0], r[1]),
    )
    # both partitions the last load wrote into show one more visible version
    expected[f"partitions:{DB}.events"] = sorted(
        (name, str(int(version) + 1) if name in ("p202401", "p202403") else version, rng, buckets)
        for name, version, rng, buckets in before[f"partitions:{DB}.events"]
    )

    srv = ServerProcess(data_dir)
    srv.start()
    try:
        after = snapshot(srv)
        _assert_same(expected, after)
        assert [r[0] for r in after[f"rows:{DB}.plain"]] == [1, 2, 3, 4, 6, 7]
    finally:
        srv.stop()


def test_kill_9_right_after_ddl_keeps_it(data_dir: Path) -> None:
    srv = ServerProcess(data_dir)
    srv.start()
    try:
        with srv.connect() as conn:
            _run(
                conn,
                [
                    "CREATE DATABASE crash_ddl",
                    "CREATE TABLE crash_ddl.t1 (k INT, v VARCHAR(3)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 2",
                    "CREATE TABLE crash_ddl.t2 (k INT) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1",
                    "INSERT INTO crash_ddl.t1 VALUES (1, 'a')",
                    "DROP TABLE crash_ddl.t2",
                    "CREATE TABLE crash_ddl.t3 (d DATE NOT NULL) DUPLICATE KEY(d) "
                    'PARTITION BY RANGE(d) (PARTITION p1 VALUES LESS THAN ("2024-01-01")) '
                    "DISTRIBUTED BY HASH(d) BUCKETS 1",
                ],
            )
            create_t3 = _rows(conn, "SHOW CREATE TABLE crash_ddl.t3")
        srv.kill()
    finally:
        if srv.running:
            srv.kill()

    srv = ServerProcess(data_dir)
    srv.start()
    try:
        with srv.connect() as conn:
            assert sorted(r[0] for r in _rows(conn, "SHOW TABLES FROM crash_ddl")) == ["t1", "t3"]
            assert _rows(conn, "SELECT k, v FROM crash_ddl.t1") == [(1, "a")]
            assert _rows(conn, "SHOW CREATE TABLE crash_ddl.t3") == create_t3
            # the crashed server's state accepts new work
            _run(conn, ["INSERT INTO crash_ddl.t3 VALUES ('2023-06-01')"])
            assert [str(r[0]) for r in _rows(conn, "SELECT d FROM crash_ddl.t3")] == ["2023-06-01"]
    finally:
        srv.stop()
