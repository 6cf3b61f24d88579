"""server/multi_statements.py splits a COM_QUERY exactly where the SQL parser does (its statement
texts are the reference), and its regex filter never hides a second statement; session.py's
`reads_no_table` picks the statements that may run on the session pool."""

from __future__ import annotations

import pytest

from server.multi_statements import may_hold_several, split_statements
from server.session import reads_no_table
from sql.parser.dialect import parse

TEXTS = [
    "SELECT 1",
    "SELECT 1;",
    "SELECT 1; ",
    "SELECT 1; -- trailing; comment",
    "SELECT 1; /* only; a comment */",
    "SELECT 1; SELECT 2",
    "SELECT 'a;b'; SELECT \"c;d\"",
    "SELECT 'it''s;'; SELECT 'back\\';slash'",
    "SELECT 1 /* ; */; SELECT 2 -- x;\n; SELECT 3 # y;\n",
    "SELECT 1 AS `a;b`;; SELECT 2",
    "INSERT INTO t VALUES (1, 'x;y'), (2, ';');",
    "SET autocommit=1, sql_mode = concat(@@sql_mode, ',STRICT_TRANS_TABLES'); SELECT @@sql_mode",
    "CREATE TABLE t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1; INSERT INTO t VALUES (1);\n"
    "SELECT * FROM t",
    "SELECT /*+ SET_VAR(parallel_fragment_exec_instance_num = 2) */ 1; SELECT 2",
]


@pytest.mark.parametrize("text", TEXTS)
def test_split_matches_the_parser(text: str) -> None:
    statements = parse(text)
    pieces = split_statements(text)
    if len(statements) <= 1:
        assert pieces == [text]  # one statement goes through untouched, trailing `;` and all
        assert not may_hold_several(text)
    else:
        assert pieces == [s.meta["sql"] for s in statements]
        assert [parse(p)[0] for p in pieces] == statements


def test_unterminated_string_stays_whole() -> None:
    text = "SELECT 1; SELECT 'open"
    assert split_statements(text) == [text]


@pytest.mark.parametrize("sql, light", [
    ("SELECT @@max_allowed_packet, @@system_time_zone, @@time_zone", True),
    ("SET autocommit=1", True),
    ("SET NAMES utf8mb4", True),
    ("SHOW VARIABLES WHERE Variable_name in ('max_allowed_packet')", True),
    ("SHOW WARNINGS", True),
    ("USE db1", True),
    ("COMMIT", True),
    ("SELECT 1 FROM dual", True),
    ("SELECT DATABASE(), CONNECTION_ID()", True),
    ("SELECT * FROM t", False),
    ("SELECT (SELECT max(k) FROM t)", False),
    ("SELECT 1 FROM db.dual", False),
    ("SHOW TABLES", False),
    ("SHOW CREATE TABLE t", False),
    ("INSERT INTO t VALUES (1)", False),
])
def test_reads_no_table(sql: str, light: bool) -> None:
    assert reads_no_table(parse(sql)[0]) is light
