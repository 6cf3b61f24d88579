"""The session statements drivers and tools send on connect or per transaction, on a live
server: SET lists mixing variables and expressions, session_track_* (MySQL 8 drivers),
SET [SESSION] TRANSACTION ..., and what reading the variables back gives."""

from __future__ import annotations

import mysql.connector
import pytest


def _one(conn, sql: str):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchone()


def test_set_list_with_expression(conn) -> None:
    with conn.cursor() as cur:
        cur.execute("SET autocommit=1, sql_mode = concat(@@sql_mode, ',STRICT_TRANS_TABLES')")
    assert _one(conn, "SELECT @@autocommit, @@sql_mode") == (1, "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES")


@pytest.mark.parametrize("value", ["'*'", "''", "'autocommit,time_zone'"])
def test_session_track_system_variables(conn, value: str) -> None:
    with conn.cursor() as cur:
        cur.execute(f"SET session_track_system_variables = {value}")
        cur.execute("SET SESSION session_track_schema = ON, session_track_state_change = OFF, "
                    "session_track_transaction_info = 'OFF'")
    assert _one(conn, "SELECT @@session_track_system_variables")[0] == value.strip("'")


@pytest.mark.parametrize(("stmt", "var", "value"), [
    ("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "transaction_isolation", "READ-COMMITTED"),
    ("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "transaction_isolation", "SERIALIZABLE"),
    ("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", "tx_isolation", "REPEATABLE-READ"),
    ("SET SESSION TRANSACTION READ ONLY", "transaction_read_only", 1),
    ("SET SESSION TRANSACTION READ WRITE", "transaction_read_only", 0),
])
def test_set_transaction(conn, stmt: str, var: str, value) -> None:
    with conn.cursor() as cur:
        cur.execute(stmt)
    assert _one(conn, f"SELECT @@{var}")[0] == value


def test_unknown_variable_is_1193(conn) -> None:
    import pymysql  # noqa: PLC0415

    with pytest.raises(pymysql.err.OperationalError) as ei, conn.cursor() as cur:
        cur.execute("SET no_such_variable_xyz = 1")
    assert ei.value.args[0] == 1193


@pytest.mark.parametrize("pure", [True, False], ids=["pure", "cext"])
def test_mysql_connector_session(server, make_db, pure: bool) -> None:
    """mysql-connector-python end to end: connect (its SET NAMES / autocommit statements),
    database switch (COM_INIT_DB), DDL, executemany INSERT, SELECT, error codes."""
    db = make_db("mcp")
    conn = mysql.connector.connect(host="127.0.0.1", port=server.port, user="root",
                                   use_pure=pure, ssl_disabled=True, autocommit=True)
    try:
        conn.database = db
        cur = conn.cursor()
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        cur.execute("CREATE TABLE t (k INT, v VARCHAR(20)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.executemany("INSERT INTO t VALUES (%s, %s)", [(1, "it's"), (2, None), (3, "ß")])
        assert cur.rowcount == 3
        cur.execute("SELECT k, v FROM t ORDER BY k")
        assert cur.fetchall() == [(1, "it's"), (2, None), (3, "ß")]
        cur.execute("SELECT DATABASE()")
        assert cur.fetchall() == [(db,)]
        with pytest.raises(mysql.connector.Error) as ei:
            cur.execute("SELECT * FROM nope")
        assert ei.value.errno == 1146 and ei.value.sqlstate == "42S02" and "does not exist" in ei.value.msg
        with pytest.raises(mysql.connector.Error) as ei:
            conn.database = "sqlt_no_such_db_xyz"
        assert ei.value.errno == 1049
    finally:
        conn.close()


def test_information_schema_statistics_and_friends(db_conn, db) -> None:
    """Tools query these; as in Doris they exist and are empty (no secondary indexes, views or
    constraints a MySQL tool could use)."""
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE s (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME "
                    f"FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '{db}'")
        assert cur.fetchall() == ()
        assert [d[0] for d in cur.description] == ["TABLE_SCHEMA", "TABLE_NAME", "NON_UNIQUE",
                                                   "INDEX_NAME", "SEQ_IN_INDEX", "COLUMN_NAME"]
        for table in ("VIEWS", "KEY_COLUMN_USAGE"):
            cur.execute(f"SELECT count(*) FROM information_schema.{table}")
            assert cur.fetchone() == (0,)
        cur.execute("SHOW TABLES FROM information_schema")
        assert [r[0] for r in cur.fetchall()] == [
            "COLUMNS", "COLUMN_PRIVILEGES", "KEY_COLUMN_USAGE", "REFERENTIAL_CONSTRAINTS",
            "ROUTINES", "SCHEMATA", "STATISTICS", "TABLES", "TABLE_PRIVILEGES", "VIEWS"]


def test_describe_missing_table_is_1146(db_conn, db) -> None:
    import pymysql  # noqa: PLC0415

    # One message for a missing table, whatever names it: SELECT's (Doris' Nereids binder text).
    with pytest.raises(pymysql.err.ProgrammingError) as ei, db_conn.cursor() as cur:
        cur.execute("SELECT * FROM nope")
    select_error = ei.value.args
    assert select_error == (
        1146, f"errCode = 2, detailMessage = Table [nope] does not exist in database [{db}].")
    for stmt in ("DESCRIBE nope", "DESC nope", "SHOW CREATE TABLE nope", "SHOW COLUMNS FROM nope",
                 "SHOW FULL COLUMNS FROM nope", "SHOW INDEX FROM nope", "SHOW PARTITIONS FROM nope",
                 f"DESC `{db}`.nope"):
        with pytest.raises(pymysql.err.ProgrammingError) as ei, db_conn.cursor() as cur:
            cur.execute(stmt)
        assert ei.value.args == select_error, stmt
