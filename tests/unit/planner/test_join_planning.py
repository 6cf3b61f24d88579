"""Join planning: ON / WHERE splitting into hash keys, pushed scan filters and residuals;
subqueries planned as semi / anti / mark / outer joins."""

from __future__ import annotations

import sys
from pathlib import Path

from planner.logical import LogicalFilter, LogicalJoin, LogicalPlan, LogicalScan, walk

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "executor"))
from engine_fakes import MemoryEngine, session  # noqa: E402

from storage.types import INT, varchar  # noqa: E402


def _engine() -> MemoryEngine:
    e = MemoryEngine()
    e.create_table("db", "t", [("a", INT), ("s", varchar(5))], [])
    e.create_table("db", "u", [("a", INT), ("c", INT)], [])
    return e


def plan(sql: str) -> LogicalPlan:
    from planner.query import plan_select
    from sql.parser.dialect import parse_one

    return plan_select(parse_one(sql), _engine(), session()).plan


def joins(p: LogicalPlan) -> list[LogicalJoin]:
    return [n for n in walk(p) if isinstance(n, LogicalJoin)]


def scans(p: LogicalPlan) -> dict[str, LogicalScan]:
    return {n.table: n for n in walk(p) if isinstance(n, LogicalScan)}


def test_inner_join_keys_and_scan_filters() -> None:
    p = plan("SELECT t.s FROM t JOIN u ON t.a = u.a AND u.c > 1 WHERE t.s = 'x' AND t.a < u.c")
    (j,) = joins(p)
    assert j.kind == "inner" and len(j.left_keys) == 1 and j.residual is not None
    assert "<" in j.residual.sql()
    sc = scans(p)
    assert [f.sql() for f in sc["t"].filters] == ["(`s` = 'x')"]
    assert [f.sql() for f in sc["u"].filters] == ["(`c` > 1)"]
    assert not any(isinstance(n, LogicalFilter) for n in walk(p))


def test_comma_join_with_where_equality_becomes_hash_join() -> None:
    (j,) = joins(plan("SELECT 1 FROM t, u WHERE t.a = u.a"))
    assert j.kind == "inner" and j.left_keys and j.residual is None


def test_left_join_keeps_null_supplying_where_above_and_pushes_on_filter_right() -> None:
    p = plan("SELECT 1 FROM t LEFT JOIN u ON t.a = u.a AND u.c > 1 AND t.s = 'k' "
             "WHERE u.c IS NULL AND t.a > 0")
    (j,) = joins(p)
    assert j.kind == "left"
    assert j.residual is not None and "'k'" in j.residual.sql()  # left-only ON stays residual
    sc = scans(p)
    assert [f.sql() for f in sc["u"].filters] == ["(`c` > 1)"]
    assert [f.sql() for f in sc["t"].filters] == ["(`a` > 0)"]
    assert any(isinstance(n, LogicalFilter) and "IS NULL" in n.predicate.sql() for n in walk(p))


def test_subqueries_become_semi_anti_and_mark_joins() -> None:
    kinds = [j.kind for j in joins(plan(
        "SELECT a FROM t WHERE a IN (SELECT a FROM u) AND NOT EXISTS "
        "(SELECT 1 FROM u WHERE u.c = t.a) AND a NOT IN (SELECT c FROM u)"))]
    assert sorted(kinds) == ["left_anti", "left_semi", "mark"]


def test_correlated_exists_uses_hash_keys() -> None:
    (j,) = joins(plan("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)"))
    assert j.kind == "left_semi" and len(j.left_keys) == 1 and j.residual is None


def test_scalar_subquery_is_guarded_left_join() -> None:
    p = plan("SELECT a, (SELECT max(c) FROM u) FROM t")
    (j,) = joins(p)
    assert j.kind == "left" and "LogicalAssertOneRow" in "\n".join(p.explain())


def test_join_hint_is_kept() -> None:
    (j,) = joins(plan("SELECT 1 FROM t JOIN [broadcast] u ON t.a = u.a"))
    assert j.hint == "BROADCAST"


def test_or_common_factor_becomes_hash_key() -> None:
    # TPC-H Q19 shape: the join key repeated in every OR branch is factored out, so the cross
    # join becomes a hash join instead of evaluating the OR on every pair.
    (j,) = joins(plan("SELECT t.s FROM t, u WHERE (t.a = u.a AND t.s = 'x' AND u.c = 1) "
                      "OR (t.a = u.a AND t.s = 'y' AND u.c = 2)"))
    assert j.kind == "inner" and len(j.left_keys) == 1
    assert "OR" in j.residual.sql()


def test_or_branch_reduced_to_common_factor_drops_the_or() -> None:
    # (a) OR (a AND b) == a
    (j,) = joins(plan("SELECT t.s FROM t, u WHERE t.a = u.a OR (t.a = u.a AND u.c = 2)"))
    assert len(j.left_keys) == 1 and j.residual is None
