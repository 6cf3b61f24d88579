"""Multi-statement COM_QUERY (CLIENT_MULTI_STATEMENTS) through PyMySQL, mysqlclient and the
mariadb CLI: one result per statement, SERVER_MORE_RESULTS_EXISTS on all but the last, the
first error ends the command, and `;` inside literals and comments does not split. Each
statement's result is compared with what the same statement returns on its own."""

from __future__ import annotations

import shutil
import subprocess

import MySQLdb
import pymysql
import pytest
from MySQLdb.constants import CLIENT as MYSQLDB_CLIENT
from pymysql.constants import CLIENT

MARIADB = shutil.which("mariadb") or "/usr/bin/mariadb"
# enum_mysql_set_option (mysql_com.h); mysqlclient does not export them
MULTI_STATEMENTS_ON, MULTI_STATEMENTS_OFF = 0, 1

# Statements whose text holds `;` in every quoting and comment form the tokenizer knows.
TRICKY = [
    "SELECT 'a;b' AS s1, \"c;d\" AS s2",
    "SELECT 'it''s; fine' AS s3, 'back\\';slash' AS s4",
    "SELECT 1 AS one /* block; comment */",
    "SELECT 2 AS two -- line; comment\n",
    "SELECT 3 AS `semi;colon`",
    "SELECT 4 AS four # hash; comment\n",
]


def _results(cur) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    """(column names, rows, rowcount, MORE_RESULTS flag) of each result of the last execute."""
    out = []
    while True:
        names = tuple(d[0] for d in cur.description) if cur.description else ()
        # SERVER_MORE_RESULTS_EXISTS in the result's final OK/EOF packet, as PyMySQL read it
        more = bool(cur.connection._result.has_next)
        out.append((names, tuple(cur.fetchall()), cur.rowcount, more))
        if not cur.nextset():
            return out


def _alone(server, db: str, stmt: str) -> tuple[object, ...]:  # type: ignore[no-untyped-def]
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(stmt)
        names = tuple(d[0] for d in cur.description) if cur.description else ()
        return names, tuple(cur.fetchall()), cur.rowcount


def test_every_statement_returns_its_result(server, db) -> None:  # type: ignore[no-untyped-def]
    setup = [
        "CREATE TABLE t (k INT NOT NULL, v VARCHAR(10)) DUPLICATE KEY(k) "
        "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES('replication_num'='1')",
        "INSERT INTO t VALUES (1, 'x;y'), (2, 'z')",
        "INSERT INTO t VALUES (3, NULL)",
    ]
    reads = ["SELECT k, v FROM t ORDER BY k", "SELECT count(*) AS n FROM t", "SHOW TABLES",
             *TRICKY]
    with server.connect(db, client_flag=CLIENT.MULTI_STATEMENTS) as c, c.cursor() as cur:
        cur.execute(";\n".join(setup + reads) + ";")
        got = _results(cur)
        assert len(got) == len(setup) + len(reads)
        assert [g[3] for g in got] == [True] * (len(got) - 1) + [False]
        assert [g[:3] for g in got[:len(setup)]] == [((), (), 0), ((), (), 2), ((), (), 1)]
        assert [g[:3] for g in got[len(setup):]] == [_alone(server, db, s) for s in reads]
        cur.execute("SELECT 42")  # the connection is in step after the multi-result
        assert cur.fetchall() == ((42,),)


def test_first_error_ends_the_command(server, db) -> None:  # type: ignore[no-untyped-def]
    with server.connect(db, client_flag=CLIENT.MULTI_STATEMENTS) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                    "PROPERTIES('replication_num'='1')")
        cur.execute("INSERT INTO t VALUES (1); SELECT k FROM t; SELECT * FROM nosuch; "
                    "INSERT INTO t VALUES (2)")
        assert cur.rowcount == 1 and cur.description is None  # the INSERT's OK
        assert cur.nextset()
        assert cur.fetchall() == ((1,),)  # the SELECT ran after the INSERT
        with pytest.raises(pymysql.err.ProgrammingError) as ei:
            cur.nextset()  # the error packet
        with pytest.raises(pymysql.err.ProgrammingError) as alone:
            _alone(server, db, "SELECT * FROM nosuch")
        assert ei.value.args == alone.value.args
        cur.execute("SELECT k FROM t ORDER BY k")
        assert cur.fetchall() == ((1,),)  # nothing after the error ran
        # A syntax error in a later statement: the earlier ones still ran and returned.
        cur.execute("SELECT 7; SELEC 8")
        assert cur.fetchall() == ((7,),)
        with pytest.raises(pymysql.err.ProgrammingError) as ei:
            cur.nextset()
        assert ei.value.args[0] == 1064
        cur.execute("SELECT 9")
        assert cur.fetchall() == ((9,),)


def test_without_the_flag_only_the_last_result_comes_back(server) -> None:  # type: ignore[no-untyped-def]
    """Doris' behaviour for clients without CLIENT_MULTI_STATEMENTS (PyMySQL's default): every
    statement runs, the last one's result is sent."""
    with server.connect() as c, c.cursor() as cur:
        assert not c.client_flag & CLIENT.MULTI_STATEMENTS
        cur.execute("SELECT 1; SELECT 'a;b', 2")
        assert cur.fetchall() == (("a;b", 2),)
        assert not cur.nextset()
        cur.execute("SELECT 3")
        assert cur.fetchall() == ((3,),)


def test_mysqlclient_nextset_and_set_server_option(server, db) -> None:  # type: ignore[no-untyped-def]
    conn = MySQLdb.connect(host="127.0.0.1", port=server.port, user="root", db=db,
                           client_flag=MYSQLDB_CLIENT.MULTI_STATEMENTS)
    try:
        cur = conn.cursor()
        cur.execute("SELECT 1 AS a; SELECT 'x;y' AS b; SELECT 2 + 3 AS c")
        got = [cur.fetchall()]
        while cur.nextset():
            got.append(cur.fetchall())
        assert got == [((1,),), (("x;y",),), ((5,),)]
        # COM_SET_OPTION MULTI_STATEMENTS_OFF: back to one (the last) result per COM_QUERY
        conn.set_server_option(MULTI_STATEMENTS_OFF)
        cur.execute("SELECT 1 AS a; SELECT 2 AS b")
        assert cur.fetchall() == ((2,),) and not cur.nextset()
        conn.set_server_option(MULTI_STATEMENTS_ON)
        cur.execute("SELECT 1 AS a; SELECT 2 AS b")
        assert cur.fetchall() == ((1,),) and cur.nextset() and cur.fetchall() == ((2,),)
    finally:
        conn.close()


def test_mariadb_cli_prints_every_result(server) -> None:  # type: ignore[no-untyped-def]
    """With a custom DELIMITER the CLI sends `a; b; c` as one COM_QUERY and prints each result;
    an error stops the rest (exit status 1, the error line on stderr)."""
    script = ("DELIMITER //\nSELECT 1 AS a; SELECT 'x;y' AS b /* ; */; SELECT 3 AS c//\n"
              "SELECT 4 AS d; SELECT * FROM information_schema.nosuch; SELECT 5 AS e//\n")
    proc = subprocess.run(
        [MARIADB, "-h127.0.0.1", f"-P{server.port}", "--protocol=TCP", "-uroot", "--skip-ssl",
         "--batch", "--skip-print-query-on-error"],
        input=script, capture_output=True, text=True, timeout=120)
    assert proc.stdout == "a\n1\nb\nx;y\nc\n3\nd\n4\n", proc.stderr
    with pytest.raises(pymysql.MySQLError) as alone:
        _alone(server, "information_schema", "SELECT * FROM information_schema.nosuch")
    code, message = alone.value.args
    assert proc.returncode == 1
    assert proc.stderr == f"ERROR {code} (42S02) at line 3: {message}\n"
