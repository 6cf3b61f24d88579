"""Automatic rollup choice (planner/rules/choose_rollup.py): seed 004's examples, Doris'
PREAGGREGATION OFF reasons, prefix-index preference, and property tests proving that the
chosen index returns the same rows as the base index (rule switched off) and as DuckDB."""

from __future__ import annotations

import decimal
import random
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inprocess import InProcess
from support.duck import insert_rows

OFF = frozenset({"choose_rollup"})

SEED_ROWS = [
    (10000, "2017-10-01", "2017-10-01 08:00:05", "北京", 20, 0, "2017-10-01 06:00:00", 20, 10, 10),
    (10000, "2017-10-01", "2017-10-01 09:00:05", "北京", 20, 0, "2017-10-01 07:00:00", 15, 2, 2),
    (10001, "2017-10-01", "2017-10-01 18:12:10", "北京", 30, 1, "2017-10-01 17:05:45", 2, 22, 22),
    (10002, "2017-10-02", "2017-10-02 13:10:00", "上海", 20, 1, "2017-10-02 12:59:12", 200, 5, 5),
    (10003, "2017-10-02", "2017-10-02 13:15:00", "广州", 32, 0, "2017-10-02 11:20:00", 30, 11, 11),
    (10004, "2017-10-01", "2017-10-01 12:12:48", "深圳", 35, 0, "2017-10-01 10:00:15", 100, 3, 3),
    (10004, "2017-10-03", "2017-10-03 12:38:20", "深圳", 35, 0, "2017-10-03 10:20:22", 11, 6, 6),
]


def _norm(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    def v(x: object) -> object:
        if isinstance(x, (float, decimal.Decimal)):
            return round(float(x), 4)
        return x

    return sorted((tuple(v(x) for x in r) for r in rows), key=repr)


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    p = InProcess(Path(tmp_path_factory.mktemp("seed004")))
    p.run("CREATE DATABASE d; USE d")
    p.run("""CREATE TABLE t (user_id LARGEINT, date DATE, timestamp DATETIME, city VARCHAR(20),
        age SMALLINT, sex TINYINT, last_visit_date DATETIME REPLACE, cost BIGINT SUM,
        max_dwell_time INT MAX, min_dwell_time INT MIN)
        AGGREGATE KEY(user_id, date, timestamp, city, age, sex)
        DISTRIBUTED BY HASH(user_id) BUCKETS 3
        ROLLUP (r_user_cost(user_id, cost),
                r_city_age(city, age, cost, max_dwell_time, min_dwell_time))""")
    p.run(
        "INSERT INTO t VALUES "
        + ", ".join(
            "(" + ", ".join(repr(x) if isinstance(x, str) else str(x) for x in r) + ")"
            for r in SEED_ROWS
        )
    )
    yield p
    p.close()


def _index(p: InProcess, sql: str) -> tuple[str, bool, str]:
    (scan,) = p.scans(sql)
    return scan.index_name, scan.preaggregation, scan.preagg_reason


def _same(p: InProcess, sql: str) -> list[tuple[object, ...]]:
    got = _norm(p.query(sql))
    assert got == _norm(p.query(sql, OFF)), sql
    return got


def test_seed_004_user_cost_rollup(seed: InProcess) -> None:
    sql = "SELECT user_id, sum(cost) FROM t GROUP BY user_id"
    assert _index(seed, sql) == ("r_user_cost", True, "")
    assert _same(seed, sql) == [(10000, 35), (10001, 2), (10002, 200), (10003, 30), (10004, 111)]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT city, age, sum(cost), max(max_dwell_time), min(min_dwell_time) FROM t GROUP BY city, age",
        "SELECT city, sum(cost), max(max_dwell_time), min(min_dwell_time) FROM t GROUP BY city",
        "SELECT city, age, sum(cost), min(min_dwell_time) FROM t GROUP BY city, age",
    ],
)
def test_seed_004_city_age_rollup(seed: InProcess, sql: str) -> None:
    assert _index(seed, sql) == ("r_city_age", True, "")
    rows = _same(seed, sql)
    # the seed's stored rollup rows: (北京,20,35,10,2) (北京,30,2,22,22) (上海,20,200,5,5)
    # (广州,32,30,11,11) (深圳,35,111,6,3)
    if sql.startswith("SELECT city, age, sum(cost), max"):
        assert ("北京", 20, 35, 10, 2) in rows and ("深圳", 35, 111, 6, 3) in rows


@pytest.mark.parametrize(
    "sql, reason",
    [
        ("SELECT count(*) FROM t", "can't turn preAgg on for aggregate function count(*)"),
        ("SELECT city FROM t", "No aggregate on scan."),
        (
            "SELECT user_id, max(cost) FROM t GROUP BY user_id",
            "max(cost) is not match agg mode SUM or has distinct param",
        ),
        (
            "SELECT user_id, sum(cost) FROM t WHERE cost > 3 GROUP BY user_id",
            "Predicate (cost > 3) contains value column cost",
        ),
        (
            "SELECT cost, count(DISTINCT user_id) FROM t GROUP BY cost",
            "Grouping expression cost contains value column cost",
        ),
        ("SELECT user_id, avg(cost) FROM t GROUP BY user_id", "avg(cost) is not supported."),
        ("SELECT sum(user_id) FROM t", "sum(user_id) is not distinct."),
    ],
)
def test_preaggregation_off_reasons_use_base_index(seed: InProcess, sql: str, reason: str) -> None:
    assert _index(seed, sql) == ("t", False, reason)
    _same(seed, sql)


def test_key_aggregates_keep_preaggregation_on(seed: InProcess) -> None:
    sql = "SELECT city, max(age), count(DISTINCT age) FROM t GROUP BY city"
    assert _index(seed, sql) == ("r_city_age", True, "")
    _same(seed, sql)


def test_duplicate_rollup_reorders_prefix(tmp_path: Path) -> None:
    p = InProcess(tmp_path)
    try:
        p.run("CREATE DATABASE d; USE d")
        p.run("""CREATE TABLE t (user_id BIGINT, age INT, message VARCHAR(100),
            max_dwell_time DATETIME, min_dwell_time DATETIME) DUPLICATE KEY(user_id, age)
            DISTRIBUTED BY HASH(user_id) BUCKETS 2
            ROLLUP (r_age(age, user_id, message, max_dwell_time, min_dwell_time))""")
        p.run(
            "INSERT INTO t VALUES "
            + ", ".join(
                f"({i}, {i % 7 + 18}, 'm{'error' if i % 3 else 'ok'}{i}', '2024-01-01 00:00:00', "
                f"'2024-01-01 00:00:00')"
                for i in range(60)
            )
        )
        sql = "SELECT * FROM t WHERE age = 20 AND message LIKE '%error%'"
        assert _index(p, sql) == ("r_age", True, "")
        _same(p, sql)
        # a predicate on the base prefix keeps the base index; equal prefix: base wins the tie
        assert _index(p, "SELECT * FROM t WHERE user_id = 3")[0] == "t"
        assert _index(p, "SELECT * FROM t")[0] == "t"
    finally:
        p.close()


# ---- property tests: random data, random queries --------------------------------------------
KEYS = ["k1", "k2", "k3"]


@pytest.fixture(scope="module")
def agg(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[InProcess, duckdb.DuckDBPyConnection]]:
    p = InProcess(Path(tmp_path_factory.mktemp("aggprop")))
    p.run("CREATE DATABASE d; USE d")
    p.run("""CREATE TABLE a (k1 INT, k2 INT, k3 VARCHAR(4), s BIGINT SUM, mx INT MAX, mn INT MIN)
        AGGREGATE KEY(k1, k2, k3) DISTRIBUTED BY HASH(k1) BUCKETS 3
        ROLLUP (r1(k1, s, mx, mn), r21(k2, k1, s), r3(k3, mn), r_all(k2, k1, k3, s, mx))""")
    p.run("""CREATE TABLE u (k1 INT, k2 INT, k3 VARCHAR(4), s BIGINT, mx INT, mn INT)
        DUPLICATE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 3
        ROLLUP (d2(k2, k3, s), d3(k3, k1, mx, mn))""")
    rnd = random.Random(11)
    duck = duckdb.connect()
    duck.execute("CREATE TABLE raw (k1 INT, k2 INT, k3 VARCHAR, s BIGINT, mx INT, mn INT)")
    for _ in range(4):  # several loads: storage merges them on read
        rows = [
            (
                rnd.randrange(6),
                rnd.randrange(5),
                rnd.choice(["x", "y", "z"]),
                rnd.randrange(-20, 100),
                rnd.randrange(100),
                rnd.randrange(100),
            )
            for _ in range(80)
        ]
        values = ", ".join(f"({a}, {b}, '{c}', {d}, {e}, {f})" for a, b, c, d, e, f in rows)
        p.run(f"INSERT INTO a VALUES {values}")
        p.run(f"INSERT INTO u VALUES {values}")
        insert_rows(duck, "raw", rows)
    duck.execute(
        "CREATE TABLE a AS SELECT k1, k2, k3, sum(s) AS s, max(mx) AS mx, min(mn) AS mn "
        "FROM raw GROUP BY k1, k2, k3"
    )
    duck.execute("CREATE TABLE u AS SELECT * FROM raw")
    yield p, duck
    p.close()


_aggs = [
    "sum(s)",
    "max(mx)",
    "min(mn)",
    "count(*)",
    "max(k1)",
    "min(k2)",
    "count(DISTINCT k1)",
    "sum(mx)",
    "count(s)",
    "max(s)",
]
_filters = [
    "k1 = 2",
    "k1 IN (1, 3)",
    "k2 > 1",
    "k3 = 'y'",
    "s > 10",
    "mn < 50",
    "k1 < 4 AND k2 >= 1",
    "k2 = 2 OR k3 = 'x'",
]


@st.composite
def _query(draw: st.DrawFn, table: str) -> str:
    group = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=2))
    aggs = draw(
        st.lists(st.sampled_from(_aggs), unique=True, min_size=0 if group else 1, max_size=3)
    )
    where = draw(st.lists(st.sampled_from(_filters), unique=True, max_size=2))
    select = ", ".join(group + aggs) or "k1"
    sql = f"SELECT {select} FROM {table}"
    if where:
        sql += " WHERE " + " AND ".join(f"({w})" for w in where)
    if group:
        sql += " GROUP BY " + ", ".join(group)
    elif not aggs:
        pass
    return sql


def _check_property(p: InProcess, duck: duckdb.DuckDBPyConnection, sql: str) -> str:
    got = _norm(p.query(sql))
    assert got == _norm(p.query(sql, OFF)), sql
    assert got == _norm(duck.execute(sql).fetchall()), sql
    return p.scans(sql)[0].index_name


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(sql=_query("a"))
def test_aggregate_table_rollups_equal_base_and_duckdb(agg, sql: str) -> None:
    p, duck = agg
    _check_property(p, duck, sql)


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(sql=_query("u"))
def test_duplicate_table_rollups_equal_base_and_duckdb(agg, sql: str) -> None:
    p, duck = agg
    _check_property(p, duck, sql)


def test_property_queries_do_hit_rollups(agg) -> None:
    """The property tests above are only meaningful if rollups get chosen: check some do."""
    p, duck = agg
    assert _check_property(p, duck, "SELECT k1, sum(s) FROM a GROUP BY k1") == "r1"
    assert _check_property(p, duck, "SELECT k2, sum(s) FROM a WHERE k2 = 1 GROUP BY k2") == "r21"
    assert _check_property(p, duck, "SELECT k3, min(mn) FROM a GROUP BY k3") == "r3"
    assert _check_property(p, duck, "SELECT k2, k1, k3, s FROM a") == "r_all"
    assert _check_property(p, duck, "SELECT k2, k3, s FROM u WHERE k2 = 3") == "d2"
    assert _check_property(p, duck, "SELECT k3, max(mx) FROM u WHERE k3 = 'x' GROUP BY k3") == "d3"


# ---- aggregates not directly above the scan: through filters and joins (Doris SetPreAggStatus)
def _scan_of(p: InProcess, sql: str, table: str) -> tuple[str, bool, str]:
    scans = [s for s in p.scans(sql) if s.table == table]
    assert len(scans) == 1, sql
    s = scans[0]
    return s.index_name, s.preaggregation, s.preagg_reason


@pytest.fixture(scope="module")
def dims(agg) -> tuple[InProcess, duckdb.DuckDBPyConnection]:
    """The `agg` tables plus a dimension table `dm` (keys 0..7, so some keys of `a` miss and
    some have several matches) and an AGGREGATE dimension `ad`."""
    p, duck = agg
    rows = [(i % 8, f"n{i % 3}", i * 3 % 11) for i in range(12)]
    p.run("""CREATE TABLE dm (id INT, name VARCHAR(4), w INT) DUPLICATE KEY(id)
        DISTRIBUTED BY HASH(id) BUCKETS 2""")
    p.run("INSERT INTO dm VALUES " + ", ".join(f"({a}, '{b}', {c})" for a, b, c in rows))
    duck.execute("CREATE TABLE dm (id INT, name VARCHAR, w INT)")
    insert_rows(duck, "dm", rows)
    return p, duck


@pytest.mark.parametrize(
    "sql, index",
    [
        # Aggregate -> Project -> Filter -> Project -> Scan (a filter on a derived column)
        ("SELECT x, sum(s) FROM (SELECT k2 + 1 AS x, s FROM a) t WHERE x > 2 GROUP BY x", "r21"),
        ("SELECT x, max(mx) FROM (SELECT k1 * 2 AS x, mx FROM a WHERE k1 < 5) t "
         "WHERE x <> 4 GROUP BY x", "r1"),
        # Aggregate above a join: the AGGREGATE side feeds join keys and matching aggregates
        ("SELECT dm.name, sum(a.s) FROM a JOIN dm ON a.k2 = dm.id GROUP BY dm.name", "r21"),
        ("SELECT dm.name, sum(a.s), max(a.mx), min(a.mn) FROM a JOIN dm ON a.k1 = dm.id "
         "WHERE dm.w > 2 GROUP BY dm.name", "r1"),
        ("SELECT a.k1, max(dm.w), count(DISTINCT dm.name) FROM a JOIN dm ON a.k1 = dm.id "
         "GROUP BY a.k1", "r1"),
        ("SELECT dm.name, min(a.mn) FROM a LEFT JOIN dm ON a.k3 = dm.name GROUP BY dm.name", "r3"),
        ("SELECT dm.name, sum(a.s) FROM dm JOIN a ON dm.id = a.k2 AND a.k2 > 1 "
         "GROUP BY dm.name", "r21"),
    ],
)
def test_rollup_through_filters_and_joins(dims, sql: str, index: str) -> None:
    p, duck = dims
    assert _scan_of(p, sql, "a") == (index, True, "")
    _check_property(p, duck, sql)


@pytest.mark.parametrize(
    "sql, reason",
    [
        ("SELECT dm.name, count(*) FROM a JOIN dm ON a.k1 = dm.id GROUP BY dm.name",
         "can't turn preAgg on because aggregate function count(*) in other table"),
        ("SELECT dm.name, sum(dm.w), sum(a.s) FROM a JOIN dm ON a.k1 = dm.id GROUP BY dm.name",
         "can't turn preAgg on because aggregate function sum(w#2) in other table"),
        ("SELECT dm.name, sum(a.s) FROM a JOIN dm ON a.mx = dm.id GROUP BY dm.name",
         "Join conjuncts [(mx = id#2)] contains non-key column [mx]"),
        ("SELECT dm.name, sum(a.s) FROM a JOIN dm ON a.k1 = dm.id WHERE a.mn > 3 "
         "GROUP BY dm.name", "Predicate (mn > 3) contains value column mn"),
        ("SELECT a.mx, count(DISTINCT dm.id) FROM a JOIN dm ON a.k1 = dm.id GROUP BY a.mx",
         "Grouping expression mx contains value column mx"),
        ("SELECT x, sum(s) FROM (SELECT k2 AS x, s FROM a) t WHERE s > 1 GROUP BY x",
         "Predicate (s > 1) contains value column s"),
        ("SELECT k1, sum(s) FROM (SELECT k1, s FROM a ORDER BY k1 LIMIT 50) t GROUP BY k1",
         "No aggregate on scan."),
    ],
)
def test_preaggregation_off_through_joins_keeps_base(dims, sql: str, reason: str) -> None:
    p, duck = dims
    name, on, why = _scan_of(p, sql, "a")
    # without an aggregate only indexes holding every base key serve (r_all: same rows)
    assert (name, on) == ("r_all" if "LIMIT" in sql else "a", False), sql
    # the slot names (`w#2`) are the planner's, so compare the reason up to them
    assert why.split("#")[0] == reason.split("#")[0] and why.startswith(reason.split("[")[0])
    if "LIMIT" not in sql:
        _check_property(p, duck, sql)


_join_aggs_a = ["sum(a.s)", "max(a.mx)", "min(a.mn)", "max(a.k1)", "count(DISTINCT a.k2)",
                "sum(a.mx)", "count(*)", "count(a.s)"]
_join_aggs_dm = ["max(dm.w)", "min(dm.name)", "count(DISTINCT dm.w)", "sum(dm.w)"]
_join_on = ["a.k1 = dm.id", "a.k2 = dm.id", "a.k1 = dm.id AND a.k2 < dm.w", "a.mn = dm.id"]
_join_where = ["a.k3 = 'x'", "dm.w > 3", "a.s > 10", "a.k1 + dm.w > 4"]


@st.composite
def _join_query(draw: st.DrawFn) -> str:
    group = draw(st.lists(st.sampled_from(["a.k1", "a.k3", "dm.name", "a.k2"]), unique=True,
                          max_size=2))
    aggs = draw(st.lists(st.sampled_from(_join_aggs_a + _join_aggs_dm), unique=True,
                         min_size=1, max_size=3))
    kind = draw(st.sampled_from(["JOIN", "LEFT JOIN", "RIGHT JOIN"]))
    on = draw(st.sampled_from(_join_on))
    where = draw(st.lists(st.sampled_from(_join_where), unique=True, max_size=2))
    sql = f"SELECT {', '.join(group + aggs)} FROM a {kind} dm ON {on}"
    if where:
        sql += " WHERE " + " AND ".join(f"({w})" for w in where)
    if group:
        sql += " GROUP BY " + ", ".join(group)
    return sql


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(sql=_join_query())
def test_join_rollup_choice_equals_base_and_duckdb(dims, sql: str) -> None:
    p, duck = dims
    _check_property(p, duck, sql)


def test_join_property_queries_do_hit_rollups(dims) -> None:
    """The join property test above only means something if rollups are chosen under joins."""
    p, duck = dims
    sql = "SELECT dm.name, sum(a.s), max(dm.w) FROM a JOIN dm ON a.k2 = dm.id GROUP BY dm.name"
    _check_property(p, duck, sql)
    assert _scan_of(p, sql, "a")[0] == "r21"
    sql = "SELECT a.k3, min(a.mn) FROM a RIGHT JOIN dm ON a.k3 = dm.name GROUP BY a.k3"
    _check_property(p, duck, sql)
    assert _scan_of(p, sql, "a")[0] == "r3"


def test_doris_2_1_stops_at_joins_when_asked(dims) -> None:
    """`SET disable_nereids_rules = 'PREAGG_THROUGH_JOIN'`: a scan under a join sees no
    aggregate (Doris 2.1), so only indexes with every base key serve; results are the same."""
    p, duck = dims
    sql = "SELECT dm.name, sum(a.s) FROM a JOIN dm ON a.k2 = dm.id GROUP BY dm.name"
    switch = frozenset({"preagg_through_join"})
    scans = [s for s in p.scans(sql, switch) if s.table == "a"]
    assert [(s.index_name, s.preaggregation, s.preagg_reason) for s in scans] == [
        ("r_all", False, "No aggregate on scan.")
    ]
    assert _norm(p.query(sql, switch)) == _norm(p.query(sql)) == _norm(duck.execute(sql).fetchall())
    # filters and projections are still looked through
    sql = "SELECT x, sum(s) FROM (SELECT k2 + 1 AS x, s FROM a) t WHERE x > 2 GROUP BY x"
    assert _scan_of(p, sql, "a") == ("r21", True, "")
    assert [s.index_name for s in p.scans(sql, switch)] == ["r21"]
