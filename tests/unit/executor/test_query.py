"""Entry points: plan_select / execute / evaluate_constant, cancellation, storage hints."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
import sqlglot
from engine_fakes import MemoryEngine, run, session

from executor.query import evaluate_constant, execute

from planner.query import plan_select
from storage.errors import QueryCancelled, ShaleError
from storage.reader import ColumnPredicate
from storage.types import (
    BIGINT, BOOLEAN, DATE, INT, SMALLINT, TINYINT, TypeKind, date_to_days, datetime, decimal,
    varchar,
)


@pytest.fixture
def engine() -> MemoryEngine:
    e = MemoryEngine()
    rows = [(i, f"n{i % 4}", 18000 + i) for i in range(50)]
    e.create_table("db", "t", [("a", INT), ("s", varchar(8)), ("d", DATE)], rows)
    return e


def parse(sql: str):  # type: ignore[no-untyped-def]
    return sqlglot.parse_one(sql, read="doris")


def test_select_without_from(engine: MemoryEngine) -> None:
    names, rows = run(engine, "SELECT 1, 1+1, 'a', NULL, @@version_comment, DATABASE(), "
                              "CONNECTION_ID(), SLEEP(0)")
    assert names == ["1", "1+1", "'a'", "NULL", "@@version_comment", "DATABASE()",
                     "CONNECTION_ID()", "SLEEP(0)"]
    assert rows == [(1, 2, "a", None, "Doris version doris-2.1.7 (ShaleDB)", "db", 7, 0)]


def test_result_types_and_names(engine: MemoryEngine) -> None:
    ctx = session()
    prepared = plan_select(parse("SELECT a, s AS name, count(*) FROM t GROUP BY a, s"), engine, ctx)
    result = execute(prepared, engine, ctx)
    assert result.names == ["a", "name", "count(*)"]
    assert result.types == [INT, varchar(8), BIGINT]
    batches = list(result.batches)
    assert sum(b.num_rows for b in batches) == 50
    assert batches[0].names == ("a", "name", "count(*)")


def test_plan_takes_sql_text_from_ast_meta(engine: MemoryEngine) -> None:
    sql = "SELECT  a+1  FROM t"
    ast = parse(sql)
    ast.meta["sql"] = sql
    assert plan_select(ast, engine, session()).names == ("a+1",)


def test_simple_predicates_reach_storage(engine: MemoryEngine) -> None:
    run(engine, "SELECT a FROM t WHERE a >= 10 AND s = 'n1' AND a + 1 > 3")
    opts = engine.read_log[-1]
    assert opts.columns == ("a", "s")
    assert set(opts.predicates) == {ColumnPredicate("a", ">=", (10,)),
                                    ColumnPredicate("s", "=", ("n1",))}


def test_scan_applies_filters_even_if_storage_ignores_predicates(engine: MemoryEngine) -> None:
    _, rows = run(engine, "SELECT a FROM t WHERE a BETWEEN 10 AND 12 ORDER BY a")
    assert rows == [(10,), (11,), (12,)]


def test_set_operations(engine: MemoryEngine) -> None:
    names, rows = run(engine, "SELECT 1 AS x UNION SELECT 2 UNION SELECT 1 ORDER BY x")
    assert names == ["x"] and rows == [(1,), (2,)]


def test_recursive_cte_is_not_supported_yet(engine: MemoryEngine) -> None:
    with pytest.raises(ShaleError) as exc:
        run(engine, "WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r")
    assert exc.value.code == 1105 and "is not supported yet" in exc.value.message


def test_cancel_between_batches(engine: MemoryEngine) -> None:
    cancel = threading.Event()
    ctx = session(cancel=cancel)
    result = execute(plan_select(parse("SELECT a FROM t"), engine, ctx), engine, ctx)
    it = iter(result.batches)
    next(it)
    cancel.set()
    with pytest.raises(QueryCancelled) as exc:
        list(it)
    assert exc.value.code == 1317


def test_kill_query_interrupts_sleep(engine: MemoryEngine) -> None:
    cancel = threading.Event()
    ctx = session(cancel=cancel)
    result = execute(plan_select(parse("SELECT SLEEP(60)"), engine, ctx), engine, ctx)
    threading.Timer(0.05, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(QueryCancelled):
        list(result.batches)
    assert time.monotonic() - start < 5


def test_unknown_variable_is_1193(engine: MemoryEngine) -> None:
    with pytest.raises(ShaleError) as exc:
        run(engine, "SELECT @@no_such_var")
    assert exc.value.code == 1193


# ---- evaluate_constant ---------------------------------------------------------------------
@pytest.mark.parametrize("sql,value,dtype", [
    ("1", 1, TINYINT),
    ("-1", -1, TINYINT),
    ("1+2", 3, SMALLINT),  # Doris: TINYINT + TINYINT -> SMALLINT
    ("'a'", "a", varchar(1)),
    ("1.25", 125, decimal(3, 2)),
    ("CAST('2020-01-02' AS DATE)", date_to_days(dt.date(2020, 1, 2)), DATE),
    ("concat('a', 'b')", "ab", varchar(2)),
    ("TRUE", 1, BOOLEAN),
    ("year('2021-03-04')", 2021, None),
    ("date_add('2020-01-31', INTERVAL 1 MONTH)", None, None),
])
def test_evaluate_constant(sql: str, value: object, dtype: object) -> None:
    got, t = evaluate_constant(parse(f"SELECT {sql}").expressions[0], session())
    if value is not None:
        assert got == value
    if dtype is not None:
        assert t == dtype
    if sql.startswith("date_add"):
        assert t.kind is TypeKind.DATETIME
        seconds = (dt.datetime(2020, 2, 29) - dt.datetime(1970, 1, 1)).total_seconds()
        assert got == int(seconds) * 10**6


def test_evaluate_constant_null_takes_the_target_type() -> None:
    assert evaluate_constant(parse("SELECT NULL").expressions[0], session(), INT) == (None, INT)


def test_evaluate_constant_now_is_a_datetime() -> None:
    value, t = evaluate_constant(parse("SELECT now()").expressions[0], session())
    assert t == datetime(0)
    now = dt.datetime.now()
    got = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)  # type: ignore[arg-type]
    assert abs((now - got).total_seconds()) < 5


def test_evaluate_constant_rejects_columns() -> None:
    with pytest.raises(ShaleError) as exc:
        evaluate_constant(parse("SELECT a + 1").expressions[0], session())
    assert "Unknown column 'a'" in exc.value.message


def test_extract_date_parts(engine: MemoryEngine) -> None:
    _, rows = run(engine, "SELECT EXTRACT(YEAR FROM d), EXTRACT(MONTH FROM d), EXTRACT(DAY FROM d)"
                          " FROM t WHERE a = 0")
    day = dt.date(1970, 1, 1) + dt.timedelta(days=18000)
    assert rows == [(day.year, day.month, day.day)]
    with pytest.raises(ShaleError, match="is not supported yet"):
        run(engine, "SELECT EXTRACT(MICROSECOND FROM d) FROM t")


def test_or_factoring_keeps_three_valued_semantics(engine: MemoryEngine) -> None:
    # (a AND b) OR (a AND c) -> a AND (b OR c); rows where the OR is NULL stay filtered out.
    _, rows = run(engine, "SELECT a FROM t WHERE (a < 5 AND s = 'n1') OR (a < 5 AND s = 'n2')")
    assert sorted(r[0] for r in rows) == [1, 2]
