"""A statement naming a table that does not exist, over the wire: every statement family
resolves its table through one helper (server/statements/tables.py), and the error follows
the Doris path that reports it: Nereids' `Table [t] does not exist in database [db].` (1146,
so drivers see "no such table") for queries, DML and metadata reads; 1051 `Unknown table 't'`
for DDL (Doris' getTableOrDdlException); 1109 `Unknown table 't' in db` for DROP TABLE."""

from __future__ import annotations

import pymysql
import pytest
from support.names import unique_db_name

QUERY_STATEMENTS = [
    "SELECT * FROM nope",
    "SELECT k FROM nope WHERE k = 1",
    "INSERT INTO nope VALUES (1)",
    "INSERT INTO nope (k) VALUES (1)",  # the fast path hands over to the general one
    "INSERT INTO nope SELECT 1",
    "DELETE FROM nope WHERE k = 1",
    "DESC nope",
    "DESC nope ALL",
    "SHOW CREATE TABLE nope",
    "SHOW COLUMNS FROM nope",
    "SHOW INDEX FROM nope",
    "SHOW PARTITIONS FROM nope",
    "SHOW TABLETS FROM nope",
    "EXPLAIN SELECT * FROM nope",
    "LOAD DATA LOCAL INFILE 'rows.csv' INTO TABLE nope",  # before the file is asked for
]

DDL_STATEMENTS = [
    "ALTER TABLE nope ADD PARTITION p1 VALUES LESS THAN ('10')",
    "ALTER TABLE nope SET ('replication_num' = '1')",
    "CREATE INDEX i ON nope (k) USING BITMAP",
    "DROP INDEX i ON nope",
    "CANCEL ALTER TABLE ROLLUP FROM nope",
    "ADMIN COMPACT TABLE nope WHERE type = 'BASE'",
    "TRUNCATE TABLE nope",
    "CREATE TABLE copy_of_nope LIKE nope",
]


@pytest.fixture(scope="module")
def missing_db(server):
    """A database with one table `t` (so only `nope` is missing) and a connection using it."""
    name = unique_db_name("table_not_found")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
        cur.execute(f"CREATE TABLE `{name}`.t (k INT) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
    conn = server.connect(name)
    try:
        yield name, conn
    finally:
        conn.close()
        with server.connect() as c, c.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


def _error(conn, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.err.MySQLError) as ei, conn.cursor() as cur:
        cur.execute(sql)
    return ei.value.args[0], ei.value.args[1]


@pytest.mark.parametrize("sql", QUERY_STATEMENTS)
def test_query_and_dml_say_table_does_not_exist(missing_db, sql: str) -> None:
    db, conn = missing_db
    assert _error(conn, sql) == (
        1146, f"errCode = 2, detailMessage = Table [nope] does not exist in database [{db}].")


@pytest.mark.parametrize("sql", DDL_STATEMENTS)
def test_ddl_says_unknown_table(missing_db, sql: str) -> None:
    _, conn = missing_db
    assert _error(conn, sql) == (1051, "errCode = 2, detailMessage = Unknown table 'nope'")


def test_drop_table_says_unknown_table_in_db(missing_db) -> None:
    db, conn = missing_db
    assert _error(conn, "DROP TABLE nope") == (
        1109, f"errCode = 2, detailMessage = Unknown table 'nope' in {db}")
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS nope")  # IF EXISTS: no error


@pytest.mark.parametrize("sql", ["SELECT * FROM {db}_x.nope", "INSERT INTO {db}_x.nope VALUES (1)",
                                 "DELETE FROM {db}_x.nope WHERE k = 1", "DESC {db}_x.nope",
                                 "ALTER TABLE {db}_x.nope SET ('replication_num' = '1')"])
def test_missing_database_is_1049_for_every_statement(missing_db, sql: str) -> None:
    db, conn = missing_db
    code, message = _error(conn, sql.format(db=db))
    assert (code, message) == (1049, f"errCode = 2, detailMessage = Unknown database '{db}_x'")


def test_the_existing_table_still_resolves(missing_db) -> None:
    """The same statements on `t` succeed: the errors above are about `nope` only."""
    _, conn = missing_db
    with conn.cursor() as cur:
        cur.execute("INSERT INTO t VALUES (1)")
        cur.execute("DELETE FROM t WHERE k = 1")
        cur.execute("SELECT count(*) FROM t")
        assert cur.fetchone() == (0,)
        cur.execute("DESC t ALL")
        assert cur.fetchall()
