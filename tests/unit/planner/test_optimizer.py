"""Logical plans: builder shape, push_down_filters, prune_columns, rule switches, snapshots."""

from __future__ import annotations

import datetime as dt

import sqlglot

from planner.builder import build_logical
from planner.logical import (
    LogicalAggregate,
    LogicalFilter,
    LogicalLimit,
    LogicalProject,
    LogicalScan,
    LogicalSort,
    LogicalValues,
    walk,
)
from planner.optimizer import RULES, OptimizerContext, optimize
from server.variables import default_query_options
from sql.binder.select import bind_select
from storage.catalog.meta import (
    ColumnMeta,
    DatabaseMeta,
    DistributionInfo,
    DistributionType,
    KeysType,
    MaterializedIndexMeta,
    PartitionInfo,
    PartitionMeta,
    PartitionType,
    TableMeta,
    TabletMeta,
)
from storage.reader import ColumnPredicate
from storage.types import BIGINT, DATE, INT, date_to_days, varchar


class Catalog:
    def __init__(self) -> None:
        cols = (ColumnMeta("a", INT, is_key=True), ColumnMeta("b", BIGINT),
                ColumnMeta("s", varchar(30)), ColumnMeta("d", DATE))
        self.t = TableMeta(1, 1, "t", KeysType.DUP_KEYS, cols,
                           PartitionInfo(PartitionType.RANGE, ("d",)),
                           DistributionInfo(DistributionType.HASH, ("a",), 2), 10)

    def get_database(self, name: str) -> DatabaseMeta | None:
        return DatabaseMeta(1, "db") if name == "db" else None

    def list_databases(self) -> list[DatabaseMeta]:
        return [DatabaseMeta(1, "db")]

    def get_table(self, db: str, name: str) -> TableMeta | None:
        return self.t if (db, name) == ("db", "t") else None

    def list_tables(self, db: str) -> list[TableMeta]:
        return [self.t]

    def partitions(self, table_id: int, temporary: bool = False) -> list[PartitionMeta]:
        if temporary:  # no temporary partitions here
            return []
        return [PartitionMeta(11, 1, "p1", 2, visible_version=3),
                PartitionMeta(12, 1, "p2", 2, visible_version=5)]

    def materialized_indexes(self, table_id: int) -> list[MaterializedIndexMeta]:
        return [MaterializedIndexMeta(10, "t", ("a", "b", "s", "d"), KeysType.DUP_KEYS, True),
                MaterializedIndexMeta(99, "r1", ("a", "b"), KeysType.DUP_KEYS, False)]

    def rowsets(self, tablet_id: int, max_version: int | None = None) -> list:
        return []

    def tablets(self, table_id: int, partition_id: int | None = None,
                index_id: int | None = None) -> list[TabletMeta]:
        out = []
        for pid in (11, 12):
            for idx in (10, 99):
                for b in range(2):
                    out.append(TabletMeta(pid * 1000 + idx * 10 + b, 1, pid, idx, b, 1))
        return [t for t in out if (partition_id is None or t.partition_id == partition_id)
                and (index_id is None or t.index_id == index_id)]


class Session:
    database = "db"
    connection_id = 1
    user = "root"
    current_user = "'root'@'%'"
    options = default_query_options()

    def system_variables(self, name: str) -> object:
        return "x"


def plan(sql: str, optimized: bool = True,  # type: ignore[no-untyped-def]
         disabled: frozenset[str] = frozenset()):
    cat = Catalog()
    bound = bind_select(sqlglot.parse_one(sql, read="doris"), cat, Session(), sql=sql)
    p = build_logical(bound, cat)
    return optimize(p, OptimizerContext(disabled)) if optimized else p


def scan_of(p) -> LogicalScan:  # type: ignore[no-untyped-def]
    return next(n for n in walk(p) if isinstance(n, LogicalScan))


def test_builder_shape_follows_sql_evaluation_order() -> None:
    p = plan("SELECT s, count(*) FROM t WHERE a > 1 GROUP BY s HAVING count(*) > 2 "
             "ORDER BY max(b) LIMIT 3", optimized=False)
    kinds = [type(n).__name__ for n in walk(p)]
    assert kinds == ["LogicalProject", "LogicalLimit", "LogicalSort", "LogicalProject",
                     "LogicalFilter", "LogicalAggregate", "LogicalFilter", "LogicalScan"]


def test_scan_captures_base_index_tablets_at_visible_versions() -> None:
    s = scan_of(plan("SELECT a FROM t"))
    assert s.index_id == 10
    assert s.partitions == ((11, 3), (12, 5))
    assert {(r.tablet.partition_id, r.version) for r in s.ranges} == {(11, 3), (12, 5)}
    assert all(r.tablet.index_id == 10 for r in s.ranges) and len(s.ranges) == 4


def test_push_down_filters_moves_conjuncts_and_storage_predicates() -> None:
    p = plan("SELECT a FROM t WHERE a > 1 AND s IN ('x', 'y') AND d IS NULL AND a + b > 3 "
             "AND d <= '2020-02-03'")
    assert not any(isinstance(n, LogicalFilter) for n in walk(p))
    s = scan_of(p)
    assert len(s.filters) == 5
    assert set(s.predicates) == {
        ColumnPredicate("a", ">", (1,)),
        ColumnPredicate("s", "in", ("x", "y")),
        ColumnPredicate("d", "is_null"),
        ColumnPredicate("d", "<=", (date_to_days(dt.date(2020, 2, 3)),)),
    }


def test_literal_on_the_left_is_swapped_for_storage() -> None:
    s = scan_of(plan("SELECT a FROM t WHERE 5 <= a"))
    assert s.predicates == (ColumnPredicate("a", ">=", (5,)),)


def test_filters_above_aggregates_stay_put() -> None:
    p = plan("SELECT s FROM t GROUP BY s HAVING count(*) > 1")
    assert any(isinstance(n, LogicalFilter) and isinstance(n.child, LogicalAggregate)
               for n in walk(p))


def test_prune_columns_reads_only_needed_columns() -> None:
    assert scan_of(plan("SELECT s FROM t WHERE a > 1")).columns == ("a", "s")
    assert scan_of(plan("SELECT sum(b) FROM t GROUP BY s")).columns == ("b", "s")
    assert scan_of(plan("SELECT s FROM t ORDER BY d")).columns == ("s", "d")
    # nothing needed: read the narrowest fixed-width column to count rows
    assert scan_of(plan("SELECT count(*) FROM t")).columns == ("a",)


def test_rules_can_be_switched_off_by_name() -> None:
    assert [r.__name__ for r in RULES] == ["fold_constants", "anti_join_not_in",
                                           "push_down_join_predicates",
                                           "reorder_joins",
                                           "push_down_filters", "commute_semi_joins",
                                           "prune_columns", "prune_scans", "choose_rollup"]
    p = plan("SELECT s FROM t WHERE a > 1", disabled=frozenset({"push_down_filters"}))
    assert any(isinstance(n, LogicalFilter) for n in walk(p))
    assert scan_of(p).filters == ()
    p = plan("SELECT s FROM t", disabled=frozenset({"prune_columns"}))
    assert scan_of(p).columns == ("a", "b", "s", "d")


def test_select_without_from_is_one_row_values() -> None:
    p = plan("SELECT 1 + 1")
    assert isinstance(p, LogicalProject) and isinstance(p.child, LogicalValues)
    assert p.child.rows == ((1,),)


def test_plans_are_hashable_and_comparable() -> None:
    a = plan("SELECT s, count(*) FROM t WHERE a > 1 GROUP BY s ORDER BY 2 LIMIT 1")
    b = plan("SELECT s, count(*) FROM t WHERE a > 1 GROUP BY s ORDER BY 2 LIMIT 1")
    assert a == b and hash(a) == hash(b)
    assert any(isinstance(n, LogicalSort) for n in walk(a))
    assert any(isinstance(n, LogicalLimit) for n in walk(a))
    assert "LogicalScan(db.t" in "\n".join(a.explain())


def test_or_of_join_branches_filters_each_side_before_the_join() -> None:
    """TPC-H Q19's shape: every OR branch constrains each side alone, so each scan gets the
    weaker OR of its own conjuncts (as an IN list storage can use); the OR stays above."""
    from planner.logical import LogicalJoin

    p = plan("SELECT x.s FROM t x, t y WHERE (x.a = y.a AND x.b = 1 AND y.s = 'p') "
             "OR (x.a = y.a AND x.b = 2 AND y.s = 'q')")
    scans = [n for n in walk(p) if isinstance(n, LogicalScan)]
    assert len(scans) == 2
    preds = sorted((pr.column, pr.op, tuple(sorted(map(str, pr.values))))
                   for s in scans for pr in s.predicates)
    assert preds == [("b", "in", ("1", "2")), ("s", "in", ("p", "q"))]
    (join,) = [n for n in walk(p) if isinstance(n, LogicalJoin)]
    assert len(join.left_keys) == 1 and join.residual is not None  # the full OR still decides


def test_or_trees_of_storage_predicates_become_disjunctions() -> None:
    from planner.rules.push_down_filters import MAX_DISJUNCTION_BRANCHES
    from storage.predicates import Disjunction

    s = scan_of(plan("SELECT a FROM t WHERE a = 1 OR (b > 2 AND (s = 'x' OR d IS NULL))"))
    a1, b2 = ColumnPredicate("a", "=", (1,)), ColumnPredicate("b", ">", (2,))
    assert s.disjunctions == (Disjunction((
        (a1,), (b2, ColumnPredicate("s", "=", ("x",))), (b2, ColumnPredicate("d", "is_null")))),)
    assert s.predicates == ()  # an OR is not a single-column predicate
    # a leaf storage cannot evaluate keeps the OR a plain filter
    assert scan_of(plan("SELECT a FROM t WHERE a = 1 OR a + b > 3")).disjunctions == ()
    # single-column ORs still become IN (or_to_in), not a disjunction
    s = scan_of(plan("SELECT a FROM t WHERE a = 1 OR a = 2"))
    assert s.predicates == (ColumnPredicate("a", "in", (1, 2)),) and s.disjunctions == ()
    # past the branch cap the OR stays a plain filter
    wide = " AND ".join(f"(a = {i} OR b = {i})" for i in range(7))  # 2**7 DNF branches
    assert 2**7 > MAX_DISJUNCTION_BRANCHES
    # (top-level conjuncts are separate: each small OR is pushed on its own)
    assert len(scan_of(plan(f"SELECT a FROM t WHERE {wide}")).disjunctions) == 7
    s = scan_of(plan(f"SELECT a FROM t WHERE ({wide}) OR s = 'z'"))
    assert len(s.filters) == 1 and s.disjunctions == ()


def test_negated_column_tests_reach_storage_as_their_opposites() -> None:
    """NOT IN, IS NOT NULL and NOT (<comparison>) are storage predicates too, so the bitmap
    index and zone maps can serve them (issue 14); a NOT IN list holding NULL is not pushed."""
    s = scan_of(plan("SELECT a FROM t WHERE a NOT IN (1, 2) AND s IS NOT NULL "
                     "AND NOT (b < 5) AND NOT (d IS NULL)"))
    assert set(s.predicates) == {
        ColumnPredicate("a", "not_in", (1, 2)), ColumnPredicate("s", "is_not_null"),
        ColumnPredicate("b", ">=", (5,)), ColumnPredicate("d", "is_not_null")}
    assert scan_of(plan("SELECT a FROM t WHERE a NOT IN (1, NULL)")).predicates == ()
    s = scan_of(plan("SELECT a FROM t WHERE NOT (a = 1) OR NOT (s IN ('x', 'y'))"))
    assert s.disjunctions[0].branches == (
        (ColumnPredicate("a", "!=", (1,)),), (ColumnPredicate("s", "not_in", ("x", "y")),))
