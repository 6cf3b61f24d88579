"""The INSERT VALUES literal scanner on its own: what it takes, what it leaves to the general
path, and MySQL's string escapes (checked against the SQL dialect's own string parsing)."""

from __future__ import annotations

import pytest

from executor.insert_values_scanner import scan_insert, unquote
from sql.parser.dialect import parse


def test_header_variants() -> None:
    s = scan_insert("insert into `my db`.`t``x` (`a b`, c) values (1, 'x')", None)
    assert s is not None
    assert (s.db, s.table, s.columns, s.num_rows) == ("my db", "t`x", ["a b", "c"], 1)
    s = scan_insert("  INSERT INTO t VALUES(-1.5e-3,NULL,TRUE),( .5 , \"q\" , false ) ;\n", 3)
    assert s is not None and s.values == [("-1.5e-3", ".5"), ("NULL", '"q"'), ("TRUE", "false")]


@pytest.mark.parametrize("sql", [
    "INSERT INTO t VALUES (1, 2), (3, abs(4))",
    "INSERT INTO t VALUES (1, 2),",
    "INSERT INTO t VALUES (1, 2) (3, 4)",
    "INSERT INTO t VALUES (1, 2), (3)",
    "INSERT INTO t VALUES (1, 2) ON DUPLICATE KEY UPDATE a = 1",
    "INSERT INTO t SELECT 1, 2",
    "INSERT INTO t PARTITION (p1) VALUES (1, 2)",
    "INSERT INTO t WITH LABEL l VALUES (1, 2)",
    "INSERT INTO t VALUES (1, DEFAULT)",
    "INSERT INTO t VALUES (+1, 2)",
    "INSERT INTO t VALUES (0x1F, 2)",
    "INSERT INTO t VALUES (1, 2) /* c */",
    "/* c */ INSERT INTO t VALUES (1, 2)",
    "INSERT INTO t VALUES (1, 'unterminated)",
    "INSERT INTO t VALUES (1, 2); SELECT 1",
    "INSERT INTO t VALUES (1abc, 2)",
])
def test_leaves_everything_else_to_the_general_path(sql: str) -> None:
    assert scan_insert(sql, 2) is None


@pytest.mark.parametrize("literal", [
    "'plain'", "''", "'it''s'", "'it\\'s'", '"dq""x"', "'a\\\\b'", "'nl\\n tab\\t cr\\r'",
    "'\\0 \\b \\Z'", "'\\% \\_'", "'\\q'", "'ünï ✓ 日本'", "'a\"b'", '"a\'b"', "'a\\'\\'b'",
    "'multi\nline'",
])
def test_unquote_matches_the_dialect(literal: str) -> None:
    expected = parse(f"SELECT {literal}")[0].expressions[0].this
    assert unquote(literal) == expected
    s = scan_insert(f"INSERT INTO t VALUES ({literal})", 1)
    assert s is not None and s.values == [(literal,)]
