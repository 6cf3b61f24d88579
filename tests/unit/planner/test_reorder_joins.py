"""reorder_joins: star-schema FROM lists join the fact table first, never by cross products."""

from __future__ import annotations

from test_optimizer import Session  # the same fake session

from planner.builder import build_logical
from planner.logical import LogicalJoin, LogicalPlan, LogicalProject, LogicalScan, walk
from planner.optimizer import OptimizerContext, optimize
from planner.statistics import equi_join_rows, estimate_rows
from sql.binder.select import bind_select
from sql.parser.dialect import parse_one
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
    RowsetMeta,
    TableMeta,
    TabletMeta,
)
from storage.types import INT

ROWS = {"fact": 1_000_000, "d1": 100, "d2": 1000, "d3": 50, "lonely": 10}
COLUMNS = {"fact": ("f1", "f2", "f3", "v"), "d1": ("k1", "a1"), "d2": ("k2", "a2"),
           "d3": ("k3", "a3"), "lonely": ("z",)}


class StarCatalog:
    def __init__(self) -> None:
        self.tables = {}
        for i, (name, cols) in enumerate(COLUMNS.items(), start=1):
            metas = tuple(ColumnMeta(c, INT, is_key=(j == 0)) for j, c in enumerate(cols))
            self.tables[name] = TableMeta(
                i, 1, name, KeysType.DUP_KEYS, metas, PartitionInfo(PartitionType.UNPARTITIONED),
                DistributionInfo(DistributionType.HASH, (cols[0],), 1), 100 + i)
        self.by_id = {t.table_id: t for t in self.tables.values()}

    def get_database(self, name: str) -> DatabaseMeta | None:
        return DatabaseMeta(1, "db") if name == "db" else None

    def list_databases(self) -> list[DatabaseMeta]:
        return [DatabaseMeta(1, "db")]

    def get_table(self, db: str, name: str) -> TableMeta | None:
        return self.tables.get(name) if db == "db" else None

    def list_tables(self, db: str) -> list[TableMeta]:
        return list(self.tables.values())

    def partitions(self, table_id: int, temporary: bool = False) -> list[PartitionMeta]:
        if temporary:  # no temporary partitions here
            return []
        return [PartitionMeta(1000 + table_id, table_id, self.by_id[table_id].name, 1,
                              visible_version=2)]

    def materialized_indexes(self, table_id: int) -> list[MaterializedIndexMeta]:
        t = self.by_id[table_id]
        return [MaterializedIndexMeta(t.base_index_id, t.name, t.column_names, t.keys_type, True)]

    def tablets(self, table_id: int, partition_id: int | None = None,
                index_id: int | None = None) -> list[TabletMeta]:
        return [TabletMeta(5000 + table_id, table_id, 1000 + table_id, 100 + table_id, 0, 1)]

    def rowsets(self, tablet_id: int, max_version: int | None = None) -> list[RowsetMeta]:
        t = self.by_id[tablet_id - 5000]
        return [RowsetMeta(f"r{tablet_id}", tablet_id, 2, 2, ROWS[t.name], 0, ())]


def plan(sql: str, disabled: frozenset[str] = frozenset()) -> LogicalPlan:
    cat = StarCatalog()
    bound = bind_select(parse_one(sql), cat, Session(), sql=sql)
    return optimize(build_logical(bound, cat), OptimizerContext(disabled))


def joins(p: LogicalPlan) -> list[LogicalJoin]:
    return [n for n in walk(p) if isinstance(n, LogicalJoin)]


def table_of(p: LogicalPlan) -> str:
    while not isinstance(p, LogicalScan):
        assert isinstance(p, LogicalProject) or len(p.children) == 1, p
        p = p.children[0]
    return p.table


STAR = ("SELECT sum(v) FROM d1, d2, d3, fact "
        "WHERE f1 = k1 AND f2 = k2 AND f3 = k3 AND a1 = 7")


def test_star_join_probes_the_fact_table_and_builds_every_dimension() -> None:
    p = plan(STAR)
    js = joins(p)
    assert len(js) == 3
    assert all(j.kind == "inner" and len(j.left_keys) == 1 for j in js)
    # left-deep: the deepest join probes the fact table, every build side is one dimension
    deepest = js[-1]
    assert table_of(deepest.left) == "fact"
    assert sorted(table_of(j.right) for j in js) == ["d1", "d2", "d3"]
    # the filtered dimension (d1: 100 rows x 0.1) cuts the most, so it is joined first
    assert table_of(deepest.right) == "d1"


def test_without_the_rule_the_from_order_makes_a_cross_product() -> None:
    p = plan(STAR, disabled=frozenset({"reorder_joins"}))
    assert any(j.kind in ("cross",) or not j.left_keys for j in joins(p))


def test_output_columns_keep_their_order() -> None:
    p = plan("SELECT * FROM d1, fact WHERE f1 = k1")
    unopt = plan("SELECT * FROM d1, fact WHERE f1 = k1", disabled=frozenset({"reorder_joins"}))
    assert p.names == unopt.names and p.types == unopt.types


def test_unconnected_input_is_cross_joined_last() -> None:
    p = plan("SELECT count(*) FROM lonely, d2, fact WHERE f2 = k2")
    js = joins(p)
    assert js[0].kind == "cross" and not js[0].left_keys
    assert table_of(js[0].right) == "lonely" and js[0].left is js[1]
    assert js[1].kind == "inner" and table_of(js[1].left) == "fact"


def test_hinted_joins_keep_their_place() -> None:
    p = plan("SELECT count(*) FROM d1 JOIN [shuffle] fact ON f1 = k1")
    (j,) = joins(p)
    assert j.hint and table_of(j.left) == "d1"


def test_estimates_follow_foreign_keys() -> None:
    # 1M fact rows meeting 10 of 100 dimension rows keep a tenth of the facts
    assert equi_join_rows(1e6, 1e6, 10, 100) == 1e5
    assert equi_join_rows(10, 100, 1e6, 1e6) == 1e5
    p = plan("SELECT v FROM fact WHERE v = 3")
    assert estimate_rows(p) == 1e5


def test_disable_join_reorder_session_variable() -> None:
    import threading

    from planner.query import plan_select
    from server.variables import GlobalVariables, SessionVariables, query_options
    from sql.options import SessionContext

    def ctx(disable: bool) -> SessionContext:
        variables = SessionVariables(GlobalVariables())
        variables.set("disable_join_reorder", disable)
        return SessionContext("db", 1, "root", "'root'@'%'", query_options(variables),
                              threading.Event())

    on = plan_select(parse_one(STAR), StarCatalog(), ctx(False), sql=STAR).plan
    off = plan_select(parse_one(STAR), StarCatalog(), ctx(True), sql=STAR).plan
    assert table_of(joins(on)[-1].left) == "fact"
    assert any(not j.left_keys for j in joins(off))  # FROM order: d1 x d2 first


def test_a_bound_statement_is_planned_under_the_options_alone() -> None:
    """planner/query.py's plan_bound: the same bound statement, two QueryOptions, two plans."""
    import threading

    from planner.query import plan_bound
    from server.variables import GlobalVariables, SessionVariables, query_options
    from sql.binder.select import bind_query
    from sql.options import SessionContext

    variables = SessionVariables(GlobalVariables())
    session = SessionContext("db", 1, "root", "'root'@'%'", query_options(variables),
                             threading.Event())
    bound = bind_query(parse_one(STAR), StarCatalog(), session, sql=STAR)
    variables.set("disable_join_reorder", "true")
    variables.set("disable_nereids_rules", "OLAP_SCAN_PARTITION_PRUNE")
    off = plan_bound(bound, StarCatalog(), query_options(variables))
    on = plan_bound(bound, StarCatalog(), session.options)
    assert table_of(joins(on.plan)[-1].left) == "fact"
    assert any(not j.left_keys for j in joins(off.plan))
    assert off.disabled_rules == {"reorder_joins", "prune_scans"}
    assert on.disabled_rules == frozenset()


def test_reordering_does_not_resplit_the_joins_built_so_far(monkeypatch) -> None:
    """Each new join of the cluster is split over inputs already split: the tree built so far
    is not visited again (that made an n-way cluster cost n re-splits of the whole tree)."""
    import planner.rules.push_down_join_predicates as pjp

    cat = StarCatalog()
    bound = bind_select(parse_one(STAR), cat, Session(), sql=STAR)
    pushed = pjp.push_down_join_predicates(build_logical(bound, cat), None)
    visits: list[object] = []
    real = pjp._visit
    monkeypatch.setattr(pjp, "_visit", lambda p: visits.append(p) or real(p))
    from planner.rules.reorder_joins import reorder_joins

    out = reorder_joins(pushed, None)
    assert len(joins(out)) == 3
    assert not any(isinstance(v, LogicalJoin) for v in visits)
