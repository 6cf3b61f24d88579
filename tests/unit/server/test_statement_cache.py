"""The statement-path caches: parse trees by text (server/statement_cache.py), the statements
answered on the event loop (`runs_inline`) and the statement shapes point lookups are keyed on
(server/point_query.py)."""

from __future__ import annotations

import pytest
from sqlglot import expressions as exp

from server.point_query import _grammar, literal_value, statement_shape
from server.statement_cache import ParseCache, is_constant_select, runs_inline
from sql.parser.dialect import parse
from storage.types import BIGINT, INT, varchar


def test_parse_cache_returns_private_copies_of_one_parse() -> None:
    calls: list[str] = []

    def counting(sql: str) -> list[exp.Expression]:
        calls.append(sql)
        return parse(sql)

    cache = ParseCache(entries=2)
    first = cache.parse("SELECT 1", counting)
    first[0].set("expressions", [exp.Literal.number(2)])  # a caller changes its tree
    second = cache.parse("SELECT 1", counting)
    assert calls == ["SELECT 1"]
    assert second[0].sql() == "SELECT 1" and second[0].meta.get("sql") == "SELECT 1"
    cache.parse("SELECT 2", counting)
    cache.parse("SELECT 3", counting)  # evicts SELECT 1 (least recently used)
    cache.parse("SELECT 1", counting)
    assert calls == ["SELECT 1", "SELECT 2", "SELECT 3", "SELECT 1"]


def test_parse_errors_are_not_cached() -> None:
    cache = ParseCache()
    for _ in range(2):
        with pytest.raises(Exception):  # noqa: B017 - the parser's own syntax error
            cache.parse("SELEC 1", parse)
    assert cache.hits == 0


@pytest.mark.parametrize(("sql", "inline"), [
    ("SELECT 1", True),
    ("SELECT @@max_allowed_packet, @@session.tx_isolation AS x", True),
    ("SELECT -1, 'a', NULL, TRUE", True),
    ("SELECT DATABASE()", True),
    ("SET NAMES utf8mb4", True),
    ("SET sql_mode = '', autocommit = 1", True),
    ("SET GLOBAL query_timeout = 10", False),  # persisted: a worker thread
    ("SET @@global.query_timeout = 10", False),
    ("SET a = (SELECT 1)", False),
    ("SELECT SLEEP(1)", False),  # could run for long
    ("SELECT 1 + 1", False),
    ("SELECT 1 FROM dual", False),
    ("SELECT 1 FROM t", False),
    ("SELECT (SELECT 1)", False),
])
def test_runs_inline(sql: str, inline: bool) -> None:
    assert runs_inline(parse(sql)[0]) is inline


def test_statement_shape_takes_literals_out() -> None:
    a = statement_shape("SELECT k, v FROM t WHERE k = 5 AND s = 'it''s'")
    b = statement_shape("select k, v  from t where k = -7 and s = ''")
    assert a is not None and b is not None
    assert a.literals == ("5", "'it''s'") and a.kinds == ("int", "str")
    assert b.literals == ("-7", "''")
    assert a.key != b.key  # keywords keep their spelling: labels come from the text
    assert statement_shape("SELECT k, v FROM t WHERE k = 6 AND s = 'x'").key == a.key


@pytest.mark.parametrize("sql", [
    "SELECT k FROM t WHERE k = 1 -- comment",
    "SELECT k FROM t WHERE s = 'a\\'b'",  # backslash escapes: the normal parser decides
    "SELECT k FROM t WHERE k = ?",
    "SELECT k FROM t WHERE k = \"x\"",
    "INSERT INTO t VALUES (1)",
    "SELECT k FROM t WHERE k = 1.5e3",
])
def test_texts_without_a_shape(sql: str) -> None:
    shape = statement_shape(sql)
    assert shape is None or _grammar(shape.key) is None


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT k, v FROM t WHERE k = 1", (None, "t", ("k",))),
    ("SELECT * FROM d.t WHERE `K` = 1 AND s = 'a';", ("d", "t", ("k", "s"))),
    ("SELECT k FROM `my t` WHERE k = 'x'", (None, "my t", ("k",))),
    ("SELECT k FROM t WHERE k = 1 AND k = 2", None),  # the planner folds it
    ("SELECT k FROM t WHERE k = 1 OR s = 'a'", None),
    ("SELECT k FROM t WHERE k > 1", None),
    ("SELECT k FROM t WHERE 1 = k", None),
    ("SELECT k FROM t, u WHERE k = 1", None),
    ("SELECT k FROM t WHERE k = 1 LIMIT 1", None),
    ("SELECT k, 1 FROM t WHERE k = 1", None),
    ("SELECT FROM t WHERE k = 1", None),
])
def test_point_lookup_grammar(sql: str, expected: tuple[object, ...] | None) -> None:
    shape = statement_shape(sql)
    g = None if shape is None else _grammar(shape.key)
    assert (None if g is None else (g.db, g.table, g.where_columns)) == expected


def test_literal_values_as_the_binder_converts_them() -> None:
    assert literal_value("-2147483648", "int", INT) == (True, -2147483648)
    assert literal_value("2147483648", "int", INT) == (False, None)  # out of range: normal path
    assert literal_value("2147483648", "int", BIGINT) == (True, 2147483648)
    assert literal_value("'it''s 日本'", "str", varchar(10)) == (True, "it's 日本")
    assert literal_value("'5'", "str", INT) == (False, None)  # the binder's cast decides
    assert literal_value("5", "int", varchar(10)) == (False, None)


@pytest.mark.parametrize(("sql", "constant"), [
    ("SELECT 1", True), ("SELECT -1.5 AS x, 'a', NULL, TRUE", True),
    ("SELECT @@version", False), ("SELECT DATABASE()", False), ("SELECT 1 FROM dual", False),
    ("SET a = 1", False),
])
def test_constant_selects(sql: str, constant: bool) -> None:
    assert is_constant_select(parse(sql)[0]) is constant
