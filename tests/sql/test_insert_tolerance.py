"""Tolerant INSERT: Doris' `enable_insert_strict` and `insert_max_filter_ratio` over the wire.

Strict mode (the default) fails a statement with a bad row and names the first bad rows; with it
off a value that does not convert becomes NULL, rows that cannot be stored (NULL in a NOT NULL
column, a string too long, no partition) are filtered, and the statement succeeds while
filtered/total stays within the ratio, reporting the filtered rows as the OK packet's warnings.
"""

from __future__ import annotations

import re
import urllib.request

import pymysql
import pytest

TABLE = (
    "CREATE TABLE {name} (dt DATE NOT NULL, k INT NOT NULL, n TINYINT, s VARCHAR(4)) "
    "DUPLICATE KEY(dt, k) PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
    "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 2"
)
# one good row, then: a TINYINT out of range, a NULL key, a string too long, a row past every
# partition, and a good row
ROWS = ("('2024-01-01', 1, 1, 'a'), ('2024-01-02', 2, 300, 'b'), ('2024-01-03', NULL, 3, 'c'), "
        "('2024-02-04', 4, 4, 'toolong'), ('2025-01-01', 5, 5, 'e'), ('2024-02-06', 6, 6, 'f')")


def _rows(cur, table: str) -> list[tuple[object, ...]]:
    cur.execute(f"SELECT k, n, s FROM {table} ORDER BY k")
    return list(cur.fetchall())


def _ok(conn) -> tuple[int, int, str]:
    r = conn._result
    return r.affected_rows, r.warning_count, r.message.decode(errors="replace")


def test_strict_mode_fails_naming_the_first_bad_rows(server, db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(TABLE.format(name="t"))
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute(f"INSERT INTO t VALUES {ROWS}")
    code, message = e.value.args
    assert code == 1105
    m = re.match(r"errCode = 2, detailMessage = Insert has filtered data in strict mode, "
                 r"tracking_url=(http://\S+/api/_load_error_log\?file=error_log_\w+)\. "
                 r"first_error_msg: ", message)
    assert m, message
    # the tracking URL serves the filtered rows with their reasons, one per line
    with urllib.request.urlopen(m[1], timeout=30) as response:
        log = response.read().decode().splitlines()
    assert len(log) == 4 and all(line.startswith("Reason: ") for line in log)
    assert "Number out of range[300]" in log[0] and "no partition for this tuple" in log[3]
    # every bad row is named, in order, with its reason
    assert message.index("Number out of range[300]") < message.index("null value for not null "
                                                                     "column, column=k, row=3")
    assert "too long" in message and "no partition for this tuple" in message
    assert _rows(cur, "t") == []
    # the same through INSERT .. SELECT
    cur.execute("CREATE TABLE src (k INT, n INT, s VARCHAR(20)) DISTRIBUTED BY HASH(k) BUCKETS 1")
    cur.execute("INSERT INTO src VALUES (1, 1, 'a'), (2, 1000, 'b')")
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("INSERT INTO t SELECT '2024-01-01', k, n, s FROM src")
    assert "Insert has filtered data in strict mode" in e.value.args[1]
    assert "Number out of range[1000]" in e.value.args[1]
    assert _rows(cur, "t") == []


def test_non_strict_filters_bad_rows_and_nulls_bad_values(server, db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(TABLE.format(name="t"))
    cur.execute("SET enable_insert_strict = false")
    cur.execute(f"INSERT INTO t VALUES {ROWS}")
    affected, warnings, info = _ok(db_conn)
    # filtered: NULL key, too long, no partition (3 of 6); 300 -> NULL is loaded
    assert (affected, warnings) == (3, 3)
    assert "'status':'VISIBLE'" in info
    assert _rows(cur, "t") == [(1, 1, "a"), (2, None, "b"), (6, 6, "f")]
    # INSERT .. SELECT the same way
    cur.execute("CREATE TABLE src (k INT, n VARCHAR(10), s VARCHAR(20)) "
                "DISTRIBUTED BY HASH(k) BUCKETS 1")
    cur.execute("INSERT INTO src VALUES (10, 'x1', 'ok'), (11, '7', 'waytoolong'), (12, '8', 'ok')")
    cur.execute("INSERT INTO t SELECT '2024-01-09', k, n, s FROM src")
    assert _ok(db_conn)[:2] == (2, 1)
    assert _rows(cur, "t")[3:] == [(10, None, "ok"), (12, 8, "ok")]
    # a plain-literal INSERT (the fast path) filters a row no partition takes too
    cur.execute("INSERT INTO t VALUES ('2024-01-10', 20, 1, 'a'), ('2030-01-01', 21, 1, 'b')")
    assert _ok(db_conn)[:2] == (1, 1)
    cur.execute("SELECT count(*) FROM t WHERE k >= 20")
    assert cur.fetchone()[0] == 1


def test_filter_ratio_bounds_the_filtered_rows(server, db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(TABLE.format(name="t"))
    cur.execute("SET enable_insert_strict = false")
    cur.execute("SET insert_max_filter_ratio = 0.4")
    with pytest.raises(pymysql.err.OperationalError) as e:  # 3 of 6 filtered > 0.4
        cur.execute(f"INSERT INTO t VALUES {ROWS}")
    assert re.match(r"errCode = 2, detailMessage = Insert has too many filtered data 3/6 "
                    r"insert_max_filter_ratio is 0\.400000, tracking_url=http://\S+\. "
                    r"first_error_msg: ", e.value.args[1]), e.value.args[1]
    assert _rows(cur, "t") == []
    cur.execute("SET insert_max_filter_ratio = 0.5")  # 3 of 6 = 0.5: allowed
    cur.execute(f"INSERT INTO t VALUES {ROWS}")
    assert _ok(db_conn)[:2] == (3, 3)
    cur.execute("SHOW VARIABLES LIKE 'insert_max_filter_ratio'")
    assert cur.fetchone()[1] == "0.5"


def test_strict_is_the_default_and_per_session(server, db) -> None:
    with server.connect(db) as a, server.connect(db) as b:
        ca, cb = a.cursor(), b.cursor()
        ca.execute(TABLE.format(name="t"))
        ca.execute("SHOW VARIABLES LIKE 'enable_insert_strict'")
        assert ca.fetchone()[1] == "true"
        ca.execute("SET enable_insert_strict = false")
        ca.execute("INSERT INTO t VALUES ('2024-01-01', 1, 1000, 'a')")  # -> NULL
        with pytest.raises(pymysql.err.OperationalError):
            cb.execute("INSERT INTO t VALUES ('2024-01-01', 2, 1000, 'a')")
        assert _rows(cb, "t") == [(1, None, "a")]


def test_group_commit_filters_before_joining(server, db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(TABLE.format(name="t"))
    cur.execute("SET group_commit = 'sync_mode'")
    with pytest.raises(pymysql.err.OperationalError) as e:  # strict: this statement fails alone
        cur.execute("INSERT INTO t VALUES ('2024-01-01', 1, 1, 'a'), ('2030-01-01', 2, 2, 'b')")
    assert "Insert has filtered data in strict mode" in e.value.args[1]
    cur.execute("SET enable_insert_strict = false")
    cur.execute("INSERT INTO t VALUES ('2024-01-01', 1, 1, 'a'), ('2030-01-01', 2, 2, 'b')")
    affected, warnings, info = _ok(db_conn)
    assert (affected, warnings) == (1, 1) and "'label':'group_commit_" in info
    cur.execute("INSERT INTO t VALUES ('2030-01-01', 3, 3, 'c')")  # every row filtered
    assert _ok(db_conn)[:2] == (0, 1)
    assert _rows(cur, "t") == [(1, 1, "a")]
