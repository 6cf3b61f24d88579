"""server/plan_cache.py in-process: which texts may be kept, what the key holds, that the
kept tree is never handed to the planner, and the LRU bookkeeping. The wire behaviour (a kept
text re-run after INSERT / DELETE / DDL / SET / a view) is tests/clients/test_plan_cache_wire.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from sqlglot import expressions as exp

from planner.logical import LogicalValues
from server.plan_cache import META, SHARED, TEXT, PlanCache, cacheable_statement
from sql.parser.dialect import parse


def _stmt(sql: str, mark: str | None = TEXT) -> exp.Expression:
    (stmt,) = parse(sql)
    if mark is not None:
        stmt.meta[META] = mark
    return stmt


@pytest.mark.parametrize("sql", [
    "SELECT g, SUM(v), COUNT(*) FROM t WHERE k BETWEEN 1 AND 5 GROUP BY g ORDER BY g LIMIT 3",
    "SELECT * FROM t JOIN u ON t.k = u.k WHERE t.s LIKE 'a%' AND u.x IN (1, 2)",
    "SELECT k FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k) UNION ALL SELECT 2",
    ("SELECT EXTRACT(YEAR FROM d), CAST(k AS BIGINT) DIV 2 FROM t "
     "WHERE d >= DATE '1998-01-01' - INTERVAL '90' DAY"),
    "WITH c AS (SELECT k FROM t) SELECT CASE WHEN k > 1 THEN 'a' ELSE NULL END FROM c",
])
def test_pure_queries_are_cacheable(sql: str) -> None:
    assert cacheable_statement(_stmt(sql))


@pytest.mark.parametrize("sql", [
    "SELECT NOW(), k FROM t", "SELECT k FROM t WHERE d < CURRENT_DATE", "SELECT RAND() FROM t",
    "SELECT UUID() FROM t", "SELECT @@query_timeout, k FROM t", "SELECT @x FROM t",
    "SELECT DATABASE(), k FROM t", "SELECT CONNECTION_ID() FROM t", "SELECT USER() FROM t",
    "SELECT k FROM t WHERE k = ?", "SELECT * FROM local('file_path' = 'x.csv')",
    "SELECT unix_timestamp() FROM t", "SELECT my_udf(k) FROM t", "INSERT INTO t VALUES (1)",
    "SELECT k FROM t WHERE k = CURRENT_USER()", "SELECT current_timestamp FROM t",
])
def test_session_and_clock_dependent_texts_are_not(sql: str) -> None:
    assert not cacheable_statement(_stmt(sql))


def _planned(leaf: Any = None) -> Any:
    return SimpleNamespace(plan=SimpleNamespace(children=[leaf] if leaf is not None else []))


def _ctx(db: str = "d", user: str = "'root'@'%'", options: object = 1) -> Any:
    return SimpleNamespace(database=db, current_user=user, options=options)


class _Make:
    def __init__(self, leaf: Any = None) -> None:
        self.trees: list[exp.Expression] = []
        self.leaf = leaf

    def __call__(self, tree: exp.Expression) -> Any:
        self.trees.append(tree)
        tree.set("limit", exp.Limit(expression=exp.Literal.number(1)))  # the binder annotates
        return _planned(self.leaf)


SQL = "SELECT k FROM t WHERE k > 1"


def test_key_holds_text_database_user_options_and_generation() -> None:
    cache, make = PlanCache(), _Make()
    first = cache.plan(_stmt(SQL), _ctx(), 7, make)
    assert cache.plan(_stmt(SQL), _ctx(), 7, make) is first
    assert len(make.trees) == 1
    for ctx, generation in [(_ctx(db="e"), 7), (_ctx(user="'u'@'%'"), 7), (_ctx(options=2), 7),
                            (_ctx(), 8)]:
        assert cache.plan(_stmt(SQL), ctx, generation, make) is not first
    assert len(make.trees) == 5
    assert cache.stats()["hits"] == 1


def test_unmarked_statements_and_no_generation_are_planned_every_time() -> None:
    cache, make = PlanCache(), _Make()
    for _ in range(2):
        cache.plan(_stmt(SQL, mark=None), _ctx(), 7, make)  # e.g. a prepared statement's
        cache.plan(_stmt(SQL), _ctx(), None, make)
    assert len(make.trees) == 4 and cache.statement(SQL) is None


def test_kept_tree_is_never_planned() -> None:
    cache, make = PlanCache(), _Make()
    cache.plan(_stmt(SQL), _ctx(), 1, make)
    kept = cache.statement(SQL)
    assert kept is not None and kept.meta[META] == SHARED and kept.sql() == parse(SQL)[0].sql()
    cache.plan(kept, _ctx(), 1, make)  # a hit: nothing planned
    assert len(make.trees) == 1
    cache.plan(kept, _ctx(), 2, make)  # a miss after a commit: a copy is planned
    assert make.trees[-1] is not kept and make.trees[-1].meta[META] == TEXT
    assert kept.sql() == parse(SQL)[0].sql() and cache.statement(SQL) is kept


def test_plans_made_at_plan_time_are_not_kept() -> None:
    cache, make = PlanCache(), _Make(leaf=LogicalValues.__new__(LogicalValues))
    cache.plan(_stmt(SQL), _ctx(), 1, make)
    cache.plan(_stmt(SQL), _ctx(), 1, make)
    assert len(make.trees) == 2 and cache.statement(SQL) is None


def test_eviction_forgets_the_text_with_its_last_plan() -> None:
    cache, make = PlanCache(entries=2), _Make()
    cache.plan(_stmt(SQL), _ctx(), 1, make)
    cache.plan(_stmt(SQL), _ctx(), 2, make)
    other = "SELECT k FROM t WHERE k > 2"
    cache.plan(_stmt(other), _ctx(), 1, make)  # evicts SQL at generation 1
    assert cache.statement(SQL) is not None
    cache.plan(_stmt(other), _ctx(), 2, make)  # evicts SQL at generation 2: its last plan
    assert cache.statement(SQL) is None and cache.statement(other) is not None
    assert cache.stats()["entries"] == 2
