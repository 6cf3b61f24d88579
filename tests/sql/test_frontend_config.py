"""ADMIN SET / SHOW FRONTEND CONFIG and the injectable clock (issue 15 point 3), over the MySQL
protocol: Doris' ConfigBase messages, and `current_time_override` pinning NOW(), CURDATE(),
UNIX_TIMESTAMP() and column defaults until it is set back to ""."""

from __future__ import annotations

import datetime as dt

import pymysql
import pytest

PINNED = "2024-03-15 10:20:30"


def _rows(cur, sql: str):  # type: ignore[no-untyped-def]
    cur.execute(sql)
    return cur.fetchall()


@pytest.fixture
def pinned(db_conn):  # type: ignore[no-untyped-def]
    cur = db_conn.cursor()
    cur.execute(f'ADMIN SET FRONTEND CONFIG ("current_time_override" = "{PINNED}")')
    try:
        yield cur
    finally:
        cur.execute('ADMIN SET FRONTEND CONFIG ("current_time_override" = "")')


def test_show_frontend_config_lists_doris_columns_sorted(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("ADMIN SHOW FRONTEND CONFIG")
    assert [d[0] for d in cur.description] == [
        "Key", "Value", "Type", "IsMutable", "MasterOnly", "Comment"]
    rows = cur.fetchall()
    keys = [r[0] for r in rows]
    assert keys == sorted(keys)
    by_key = {r[0]: r for r in rows}
    assert by_key["dynamic_partition_enable"][1:5] == ("true", "boolean", "true", "true")
    assert by_key["dynamic_partition_check_interval_seconds"][1:3] == ("600", "long")
    assert by_key["query_port"][3] == "false"  # the server's own settings: read-only
    assert by_key["current_time_override"][1] == ""
    like = _rows(cur, "ADMIN SHOW FRONTEND CONFIG LIKE 'dynamic_partition%'")
    assert sorted(r[0] for r in like) == [
        "dynamic_partition_check_interval_seconds", "dynamic_partition_enable"]
    assert _rows(cur, "SHOW FRONTEND CONFIG LIKE 'dynamic_partition_enable'") == (like[1],)


def test_set_frontend_config_changes_and_checks_values(db_conn) -> None:
    cur = db_conn.cursor()
    try:
        cur.execute('ADMIN SET FRONTEND CONFIG ("dynamic_partition_check_interval_seconds" = "5")')
        cur.execute('ADMIN SET ALL FRONTENDS CONFIG ("dynamic_partition_enable" = "FALSE")')
        got = dict((r[0], r[1]) for r in _rows(cur, "ADMIN SHOW FRONTEND CONFIG LIKE 'dyn%'"))
        assert got == {"dynamic_partition_check_interval_seconds": "5",
                       "dynamic_partition_enable": "false"}
    finally:
        cur.execute('ADMIN SET FRONTEND CONFIG ("dynamic_partition_check_interval_seconds" = '
                    '"600")')
        cur.execute('ADMIN SET FRONTEND CONFIG ("dynamic_partition_enable" = "true")')
    cases = [
        ('("no_such_config" = "1")', "Config 'no_such_config' does not exist"),
        ('("query_port" = "1")', "Config 'query_port' is not mutable"),
        ('("dynamic_partition_enable" = "yes")',
         "Failed to set config 'dynamic_partition_enable'. err: type mismatch"),
        ('("dynamic_partition_check_interval_seconds" = "ten")',
         "Failed to set config 'dynamic_partition_check_interval_seconds'. err: "
         'For input string: "ten"'),
        ('("current_time_override" = "March 15")',
         "Failed to set config 'current_time_override'. err: 'March 15' is not a datetime"),
        ('("dynamic_partition_enable" = "true", "max_dynamic_partition_num" = "9")',
         "config parameter size is not equal to 1"),
    ]
    for clause, message in cases:
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute(f"ADMIN SET FRONTEND CONFIG {clause}")
        assert info.value.args[0] == 1105
        assert message in info.value.args[1], info.value.args
    # nothing changed by the failed statements
    assert _rows(cur, "ADMIN SHOW FRONTEND CONFIG LIKE 'dynamic_partition_enable'")[0][1] == "true"


def test_clock_override_pins_now_and_defaults(pinned, db_conn) -> None:
    cur = pinned
    assert _rows(cur, "ADMIN SHOW FRONTEND CONFIG LIKE 'current_time_override'")[0][1] == PINNED
    now, today, stamp, current = _rows(
        cur, "SELECT NOW(), CURDATE(), UNIX_TIMESTAMP(), CURRENT_TIMESTAMP()")[0]
    assert now == current == dt.datetime(2024, 3, 15, 10, 20, 30)
    assert today == dt.date(2024, 3, 15)
    assert stamp == int(dt.datetime(2024, 3, 15, 10, 20, 30).timestamp())
    # a pinned clock stands still: the same instant in the next statement
    assert _rows(cur, "SELECT NOW()")[0][0] == now
    # column defaults of a load (INSERT with the column omitted) use the same clock
    cur.execute("CREATE TABLE ev (k INT, at DATETIME DEFAULT CURRENT_TIMESTAMP) "
                "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                "PROPERTIES ('replication_num' = '1')")
    cur.execute("INSERT INTO ev (k) VALUES (1), (2)")
    cur.execute("INSERT INTO ev (k) SELECT 3")
    assert _rows(cur, "SELECT k, at FROM ev ORDER BY k") == (
        (1, now), (2, now), (3, now))


def test_clearing_the_override_returns_to_the_real_clock(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(f'ADMIN SET FRONTEND CONFIG ("current_time_override" = "{PINNED}")')
    cur.execute('ADMIN SET FRONTEND CONFIG ("current_time_override" = "")')
    assert _rows(cur, "ADMIN SHOW FRONTEND CONFIG LIKE 'current_time_override'")[0][1] == ""
    (now,) = _rows(cur, "SELECT NOW()")[0]
    assert abs((now - dt.datetime.now()).total_seconds()) < 60


def test_admin_config_needs_admin(server, db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("CREATE USER 'fe_reader'@'%' IDENTIFIED BY 'pw'")
    try:
        with server.connect(user="fe_reader", password="pw") as c, c.cursor() as other:
            for sql in ("ADMIN SHOW FRONTEND CONFIG",
                        'ADMIN SET FRONTEND CONFIG ("current_time_override" = "2020-01-01")'):
                with pytest.raises(pymysql.err.OperationalError) as info:
                    other.execute(sql)
                assert info.value.args[0] == 1227, info.value.args
    finally:
        cur.execute("DROP USER 'fe_reader'@'%'")
    assert _rows(cur, "ADMIN SHOW FRONTEND CONFIG LIKE 'current_time_override'")[0][1] == ""
