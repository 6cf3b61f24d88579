"""Binder: name resolution, result labels and types, MySQL alias rules, Doris error wording."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlglot

from server.variables import default_query_options
from sql.binder.expressions import AggregateCall, And, Cast, ColumnRef, Comparison, Literal
from sql.binder.select import BoundSelect, TableSource, ValuesSource, bind_select
from sql.errors import ShaleError
from storage.catalog.meta import (
    AggType,
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
from storage.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    LARGEINT,
    SMALLINT,
    STRING,
    TINYINT,
    TypeKind,
    date_to_days,
    datetime,
    decimal,
    varchar,
)


class Catalog:
    """Minimal CatalogView: db `db` with table `t`, an AGGREGATE table `agg`."""

    def __init__(self) -> None:
        cols = (ColumnMeta("a", INT, is_key=True), ColumnMeta("b", BIGINT),
                ColumnMeta("s", varchar(20)), ColumnMeta("d", DATE),
                ColumnMeta("ts", datetime(0)), ColumnMeta("m", decimal(10, 2)),
                ColumnMeta("x", DOUBLE))
        self.t = TableMeta(1, 1, "t", KeysType.DUP_KEYS, cols,
                           PartitionInfo(PartitionType.UNPARTITIONED),
                           DistributionInfo(DistributionType.HASH, ("a",), 1), 10)
        agg_cols = (ColumnMeta("k", INT, is_key=True, nullable=False),
                    ColumnMeta("v", BIGINT, agg_type=AggType.SUM, comment="total"))
        self.agg = TableMeta(2, 1, "agg", KeysType.AGG_KEYS, agg_cols,
                             PartitionInfo(PartitionType.UNPARTITIONED),
                             DistributionInfo(DistributionType.HASH, ("k",), 1), 20)

    def get_database(self, name: str) -> DatabaseMeta | None:
        return DatabaseMeta(1, "db") if name == "db" else None

    def list_databases(self) -> list[DatabaseMeta]:
        return [DatabaseMeta(1, "db")]

    def get_table(self, db: str, name: str) -> TableMeta | None:
        return {"t": self.t, "agg": self.agg}.get(name) if db == "db" else None

    def list_tables(self, db: str) -> list[TableMeta]:
        return [self.t, self.agg] if db == "db" else []

    def partitions(self, table_id: int, temporary: bool = False) -> list[PartitionMeta]:
        if temporary:  # no temporary partitions here
            return []
        return [PartitionMeta(100 + table_id, table_id, "p", 1)]

    def materialized_indexes(self, table_id: int) -> list[MaterializedIndexMeta]:
        return []

    def rowsets(self, tablet_id: int, max_version: int | None = None) -> list:
        return []

    def tablets(self, table_id: int, partition_id: int | None = None,
                index_id: int | None = None) -> list[TabletMeta]:
        return []


class Session:
    def __init__(self, database: str | None = "db") -> None:
        self.database = database
        self.connection_id = 42
        self.user = "root"
        self.current_user = "'root'@'%'"
        self.options = default_query_options()

    def system_variables(self, name: str) -> object:
        known = {"version_comment": "Doris version doris-2.1.7", "version": "5.7.99",
                 "autocommit": True, "max_allowed_packet": 16777216}
        if name.lower() not in known:
            raise ShaleError(f"Unknown system variable '{name}'", 1193)
        return known[name.lower()]


NOW = dt.datetime(2024, 5, 6, 7, 8, 9)


def bind(sql: str, db: str | None = "db") -> BoundSelect:
    return bind_select(sqlglot.parse_one(sql, read="doris"), Catalog(), Session(db), NOW, sql=sql)


def error(sql: str, db: str | None = "db") -> ShaleError:
    with pytest.raises(ShaleError) as exc:
        bind(sql, db)
    return exc.value


def proj(b: BoundSelect) -> list:  # type: ignore[type-arg]
    return [e for _, e in b.projections[: b.visible]]


# ---- labels and types ----------------------------------------------------------------------
def test_labels_are_the_select_text_as_written() -> None:
    b = bind("SELECT a  +  1, IFNULL(s, 'x'), A, t.b, m AS money, DATABASE() FROM t")
    assert b.names == ("a  +  1", "IFNULL(s, 'x')", "A", "b", "money", "DATABASE()")
    assert bind("SELECT /*+ hint */ count(*), Sum(a) FROM t").names == ("count(*)", "Sum(a)")


def test_labels_fall_back_to_generated_sql_without_text() -> None:
    ast = sqlglot.parse_one("SELECT a + 1, IFNULL(s, 'x') FROM t", read="doris")
    b = bind_select(ast, Catalog(), Session(), NOW)
    assert b.names == ("a + 1", "coalesce(s, 'x')")


def test_star_expands_in_table_order() -> None:
    b = bind("SELECT *, t.* FROM t")
    assert b.names == ("a", "b", "s", "d", "ts", "m", "x") * 2


def test_literal_types_follow_doris() -> None:
    b = bind("SELECT 1, 300, 100000, 5000000000, 1.50, 1e3, 'abc', NULL, TRUE, -128")
    assert [e.type for e in proj(b)][:7] == [TINYINT, SMALLINT, INT, BIGINT, decimal(3, 2),
                                              DOUBLE, varchar(3)]
    assert proj(b)[7].type.kind is TypeKind.NULL
    assert proj(b)[8] == Literal(1, BOOLEAN)
    assert proj(b)[9] == Literal(-128, TINYINT)


def test_arithmetic_result_types() -> None:
    b = bind("SELECT a + a, a / a, a DIV 2, a % 3, m + m, m * m, m / m, x + m, a + m FROM t")
    types = [e.type for e in proj(b)]
    # Doris 2.1: INT + INT -> BIGINT (one step wider), INT DIV TINYINT -> INT (the wider operand)
    assert types == [BIGINT, DOUBLE, INT, INT, decimal(11, 2), decimal(20, 4),
                     decimal(16, 6), DOUBLE, decimal(13, 2)]


def test_integer_arithmetic_promotes_one_step() -> None:
    """Nereids' promotion(): TINYINT -> SMALLINT -> INT -> BIGINT; BIGINT and LARGEINT stay."""
    b = bind("SELECT CAST(1 AS TINYINT) + CAST(1 AS TINYINT), CAST(1 AS SMALLINT) * 2, "
             "a - a, CAST(1 AS BIGINT) + a, 170141183460469231731687303715884105727 * a, abs(CAST(1 AS BIGINT)), "
             "abs(CAST(1 AS TINYINT)), CAST(1 AS BIGINT) % a FROM t")
    assert [e.type for e in proj(b)] == [SMALLINT, INT, BIGINT, BIGINT, LARGEINT, LARGEINT,
                                         SMALLINT, BIGINT]


def test_aggregate_result_types() -> None:
    b = bind("SELECT count(*), count(s), sum(a), sum(m), sum(x), avg(a), avg(m), min(s), "
             "max(d) FROM t")
    assert list(b.types) == [BIGINT, BIGINT, BIGINT, decimal(38, 2), DOUBLE, DOUBLE,
                             decimal(38, 4), varchar(20), DATE]


def test_session_constants_fold_to_literals() -> None:
    b = bind("SELECT @@version_comment, @@session.autocommit, CONNECTION_ID(), USER(), "
             "CURRENT_USER(), VERSION(), NOW(), CURDATE(), SCHEMA()")
    vals = [e.value for e in proj(b)]
    assert vals[:6] == ["Doris version doris-2.1.7", 1, 42, "root", "'root'@'%'", "5.7.99"]
    assert proj(b)[6].type == datetime(0)
    assert vals[7] == date_to_days(NOW.date())
    assert vals[8] == "db"
    assert bind("SELECT DATABASE()", db=None).projections[0][1] == Literal(None, varchar(64))


def test_unknown_system_variable_propagates() -> None:
    assert error("SELECT @@nope").code == 1193


# ---- coercion ------------------------------------------------------------------------------
def test_date_compared_with_string_literal_converts_the_literal() -> None:
    b = bind("SELECT a FROM t WHERE d >= '2020-01-05'")
    assert b.where == Comparison(">=", ColumnRef("d", DATE),
                                 Literal(date_to_days(dt.date(2020, 1, 5)), DATE))


def test_date_compared_with_datetime_literal_compares_as_datetime() -> None:
    b = bind("SELECT a FROM t WHERE d = '2020-01-05 10:00:00'")
    assert isinstance(b.where, Comparison)
    assert isinstance(b.where.left, Cast) and b.where.left.type.kind is TypeKind.DATETIME


def test_integer_literal_adopts_the_column_type() -> None:
    b = bind("SELECT a FROM t WHERE a = 5 AND b > '7'")
    assert b.where == And((Comparison("=", ColumnRef("a", INT), Literal(5, INT)),
                           Comparison(">", ColumnRef("b", BIGINT), Literal(7, BIGINT))))


def test_between_becomes_and_of_comparisons() -> None:
    b = bind("SELECT a FROM t WHERE a BETWEEN 1 AND 3")
    assert b.where == And((Comparison(">=", ColumnRef("a", INT), Literal(1, INT)),
                           Comparison("<=", ColumnRef("a", INT), Literal(3, INT))))


def test_case_branches_get_a_common_type() -> None:
    b = bind("SELECT CASE WHEN a > 1 THEN a ELSE m END, IF(a > 1, 'x', NULL) FROM t")
    assert [e.type for e in proj(b)] == [decimal(12, 2), varchar(1)]


# ---- GROUP BY / HAVING / ORDER BY ----------------------------------------------------------
def test_group_by_ordinal_alias_and_expression() -> None:
    b = bind("SELECT a % 3 AS r, count(*) FROM t GROUP BY r")
    assert b.is_aggregate and len(b.group_by) == 1
    assert proj(b)[0] == ColumnRef("__g0", BIGINT) or proj(b)[0].name == "__g0"
    assert bind("SELECT a % 3, count(*) FROM t GROUP BY 1").group_by == b.group_by
    assert bind("SELECT a % 3, count(*) FROM t GROUP BY a % 3").group_by == b.group_by


def test_group_by_prefers_table_columns_over_aliases() -> None:
    err = error("SELECT s AS a, count(*) FROM t GROUP BY a")
    assert "'s' must appear in the GROUP BY clause or be used in an aggregate" in err.message


def test_non_grouped_column_is_rejected() -> None:
    err = error("SELECT a, b FROM t GROUP BY a")
    assert err.code == 1105
    assert err.message == ("errCode = 2, detailMessage = 'b' must appear in the GROUP BY clause "
                           "or be used in an aggregate function")
    assert "must appear in the GROUP BY" in error("SELECT a, count(*) FROM t").message


def test_having_and_order_by_may_add_aggregates() -> None:
    b = bind("SELECT s FROM t GROUP BY s HAVING sum(a) > 1 ORDER BY max(b) DESC")
    assert [a.name for _, a in b.aggregates] == ["sum", "max"]
    assert b.visible == 1 and len(b.projections) == 2  # hidden sort key
    assert b.order_by[0].desc and not b.order_by[0].nulls_first


def test_order_by_alias_ordinal_and_matching_expression() -> None:
    b = bind("SELECT a AS z, b + 1 FROM t ORDER BY z, 2 DESC, b + 1")
    names = [s.expr.name for s in b.order_by]  # type: ignore[attr-defined]
    assert names == ["_c0", "_c1", "_c1"]
    assert b.order_by[0].nulls_first and not b.order_by[1].nulls_first


def test_order_by_alias_wins_over_column() -> None:
    b = bind("SELECT a AS b, b AS a FROM t ORDER BY a")
    assert b.order_by[0].expr.name == "_c1"  # type: ignore[attr-defined]


def test_distinct_and_limit_offset() -> None:
    b = bind("SELECT DISTINCT s FROM t LIMIT 5, 10")
    assert b.distinct and (b.limit, b.offset) == (10, 5)
    b = bind("SELECT s FROM t LIMIT 10 OFFSET 3")
    assert (b.limit, b.offset) == (10, 3)


def test_count_distinct() -> None:
    b = bind("SELECT count(DISTINCT s) FROM t")
    assert b.aggregates[0][1] == AggregateCall("count", (ColumnRef("s", varchar(20)),), True,
                                               BIGINT)


# ---- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("sql,code,detail", [
    ("SELECT nope FROM t", 1105, "Unknown column 'nope' in 'table list'"),
    ("SELECT u.a FROM t", 1105, "Unknown column 'u.a' in 'table list'"),
    ("SELECT a FROM missing", 1146, "Table [missing] does not exist in database [db]."),
    ("SELECT a FROM nodb.t", 1049, "Unknown database 'nodb'"),
    ("SELECT a FROM t JOIN t u ON t.a = u.a", 1105, "Column 'a' in field list is ambiguous"),
    ("SELECT a FROM t WHERE a IN (SELECT 1, 2)", 1105, "Operand should contain 1 column(s)"),
    ("SELECT a FROM t NATURAL JOIN t u", 1105, "NATURAL JOIN is not supported yet"),
    ("SELECT a FROM t JOIN t u USING (nope)", 1105, "Unknown column 'nope' in 'from clause'"),
    ("SELECT a FROM t JOIN t ON 1 = 1", 1105, "Not unique table/alias: 't'"),
    ("SELECT a FROM t WHERE sum(a) OVER () > 1", 1105, "window function is not allowed in WHERE"),
    ("SELECT a FROM t WHERE sum(a) > 1", 1105, "aggregate function is not allowed in WHERE"),
    ("SELECT a FROM t ORDER BY 5", 1105, "Unknown column '5' in 'order clause'"),
])
def test_analysis_errors(sql: str, code: int, detail: str) -> None:
    err = error(sql)
    assert err.code == code
    assert err.message.startswith("errCode = 2, detailMessage = " + detail)


def test_no_database_selected() -> None:
    err = error("SELECT a FROM t", db=None)
    assert err.code == 1046 and "No database selected" in err.message
    assert isinstance(bind("SELECT a FROM db.t", db=None).source, TableSource)


# ---- information_schema --------------------------------------------------------------------
def test_information_schema_tables_are_values() -> None:
    b = bind("SELECT SCHEMA_NAME FROM information_schema.schemata")
    assert isinstance(b.source, ValuesSource)
    assert [r[1] for r in b.source.rows] == ["db", "information_schema"]


def test_information_schema_columns_describe_keys_and_types() -> None:
    b = bind("SELECT * FROM information_schema.columns")
    src = b.source
    assert isinstance(src, ValuesSource)
    rows = {(r[2], r[3]): dict(zip(src.names, r)) for r in src.rows}
    a = rows[("t", "a")]
    assert (a["TABLE_CATALOG"], a["COLUMN_KEY"], a["DATA_TYPE"], a["NUMERIC_PRECISION"]) == (
        "internal", "DUP", "int", 10)
    m = rows[("t", "m")]
    assert (m["COLUMN_TYPE"], m["NUMERIC_PRECISION"], m["NUMERIC_SCALE"]) == (
        "decimal(10,2)", 10, 2)
    v = rows[("agg", "v")]
    assert (v["COLUMN_KEY"], v["EXTRA"], v["COLUMN_COMMENT"]) == ("", "SUM", "total")
    assert rows[("agg", "k")]["IS_NULLABLE"] == "NO"
    assert ("SCHEMATA", "SCHEMA_NAME") in rows  # information_schema describes itself


def test_information_schema_tables_lists_engine_and_type() -> None:
    b = bind("SELECT * FROM information_schema.tables")
    src = b.source
    assert isinstance(src, ValuesSource)
    rows = {r[2]: dict(zip(src.names, r)) for r in src.rows}
    assert (rows["t"]["TABLE_TYPE"], rows["t"]["ENGINE"], rows["t"]["TABLE_SCHEMA"]) == (
        "BASE TABLE", "Doris", "db")
    assert rows["COLUMNS"]["TABLE_TYPE"] == "SYSTEM VIEW"
    assert len(src.names) == 21


def test_string_function_argument_coercion() -> None:
    b = bind("SELECT concat(a, s), length(a), upper(d) FROM t")
    assert all(isinstance(e.args[0], Cast)  # type: ignore[attr-defined]
               and e.args[0].type == STRING for e in proj(b))
