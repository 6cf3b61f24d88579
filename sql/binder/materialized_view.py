"""CREATE MATERIALIZED VIEW (synchronous, single table): binding the SELECT into the view's index.

`CREATE MATERIALIZED VIEW mv AS SELECT k1, expr, SUM(v), MIN(v), MAX(v), COUNT(v) FROM t
[GROUP BY k1, expr] [ORDER BY k1, expr]` becomes a materialized index of `t` with its own
columns (Doris `CreateMaterializedViewStmt` + `MaterializedViewHandler`):
- each plain select item is a key column `mv_<expr>` (backquotes dropped from the name), its
  `define_expr` the bound expression's SQL text (`k1` in backquotes, `(`d` DIV 10000)`);
- each aggregate is a value column `mva_<AGG>__<define expr>` aggregated by SUM / MIN / MAX; SUM
  of TINYINT / SMALLINT / INT is widened to BIGINT (`CAST(`v` AS BIGINT)`), of FLOAT to DOUBLE;
  COUNT(x) is SUM of `CASE WHEN x IS NULL THEN 0 ELSE 1 END` (BIGINT);
- with an aggregate the index is AGG_KEYS on the plain items (in select order); without, it is
  DUP_KEYS with Doris' short-key rule (the leading columns up to 3 / 36 bytes / a VARCHAR).
Errors use Doris' wording. The define expressions are kept as text in the catalog; the layers
that evaluate them (planner matching, executor loads) bind them again with `bind_define_expr`.
The statement's syntax checks and its catalog change are sql/ddl/materialized_view.py.
"""

from __future__ import annotations

import datetime as _dt

from sqlglot import exp

from sql.binder.bind_expressions import ExpressionBinder
from sql.binder.expressions import AggregateCall, Case, Cast, ColumnRef, Expr, IsNull, Literal
from sql.binder.grouping_sets import has_grouping_sets
from sql.ddl.create_table import (
    SHORTKEY_MAX_BYTES,
    SHORTKEY_MAX_COLUMNS,
    index_size,
    short_key_count,
)
from sql.ddl.materialized_view import CreateMaterializedView, ViewIndex
from sql.errors import DorisError, ErrorCode
from storage.catalog.meta import AggType, ColumnMeta, KeysType, TableMeta
from storage.catalog.mv import MV_PREFIX, MVA_PREFIX
from storage.types import BIGINT, DOUBLE, TypeKind

# Doris CreateMaterializedViewStmt.invalidFn
_INVALID_FUNCTIONS = ("now", "current_time", "current_date", "utc_timestamp", "uuid", "random",
                      "unix_timestamp", "curdate")
_AGGREGATES = {"sum": AggType.SUM, "min": AggType.MIN, "max": AggType.MAX, "count": AggType.SUM}
_NARROW_INTS = (TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT)


def _binder(table: TableMeta, aggregates: bool) -> ExpressionBinder:
    def resolve(node: exp.Column) -> Expr:
        if not table.has_column(node.name):
            raise DorisError(f"Unknown column '{node.name}' in 'table list'",
                             ErrorCode.BAD_FIELD_ERROR)
        col = table.column(node.name)
        return ColumnRef(col.name, col.type)

    return ExpressionBinder(resolve, None, _dt.datetime(2000, 1, 1), aggregates,
                            "materialized view")


def bind_define_expr(table: TableMeta, text: str) -> Expr:
    """A define expression (catalog text over `table`'s columns) as a bound expression."""
    from sql.parser.dialect import parse_one

    node = parse_one(f"SELECT {text}")
    assert isinstance(node, exp.Select)
    return _binder(table, False).bind(node.expressions[0])


def count_define(arg: Expr) -> Expr:
    """COUNT(x) as the view stores it: SUM of this (Doris CountFieldToSum.slotToCaseWhen)."""
    return Case(((IsNull(arg), Literal(0, BIGINT)),), Literal(1, BIGINT), BIGINT)


def key_name(define: Expr) -> str:
    return MV_PREFIX + define.sql().replace("`", "")


def value_name(agg: AggType, define: Expr) -> str:
    return f"{MVA_PREFIX}{agg.value}__{define.sql()}"


def _has_function(node: exp.Expression, names: tuple[str, ...]) -> str | None:
    for f in node.find_all(exp.Func):
        name = (f.sql_name() if not isinstance(f, exp.Anonymous) else f.name).lower()
        if name in names:
            return name
    return None


def _value_column(table: TableMeta, call: AggregateCall, text: str) -> ColumnMeta:
    agg = _AGGREGATES.get(call.name)
    if agg is None or call.distinct or len(call.args) != 1:
        raise DorisError(f"The materialized view only support sum, min, max and count(column) "
                         f"aggregate functions, not {text}", ErrorCode.NOT_SUPPORTED_YET)
    arg = call.args[0]
    if isinstance(arg, AggregateCall) or not any(isinstance(x, ColumnRef) for x in arg.walk()):
        raise DorisError(f"The materialized view contain constant expr is disallowed, expr: {text}")
    if table.keys_type is KeysType.AGG_KEYS:
        slots = [x for x in arg.walk() if isinstance(x, ColumnRef)]
        values = [table.column(s.name) for s in slots if not table.column(s.name).is_key]
        if values:
            if not isinstance(arg, ColumnRef):
                raise DorisError("Aggregate function require single slot argument, invalid "
                                 f"argument is: {arg.sql()}")
            have = values[0].agg_type or AggType.NONE
            if call.name == "count" or have is not agg:
                raise DorisError("Aggregate function require same with slot aggregate type, "
                                 f"input: {have.value}, required: {agg.value}")
    if call.name == "count":
        define: Expr = count_define(arg)
        dtype = BIGINT
    elif call.name == "sum" and arg.type.kind in _NARROW_INTS:
        define, dtype = Cast(arg, BIGINT), BIGINT
    elif call.name == "sum" and arg.type.kind is TypeKind.FLOAT:
        define, dtype = Cast(arg, DOUBLE), DOUBLE
    else:
        define, dtype = arg, arg.type
    return ColumnMeta(value_name(agg, define), dtype, nullable=True, is_key=False,
                      agg_type=agg, define_expr=define.sql())


def analyze(stmt: CreateMaterializedView, table: TableMeta) -> ViewIndex:
    """The view's materialized index (name, schema, keys, short key count, keys type)."""
    select = stmt.select
    if not select.expressions:
        raise DorisError("The materialized view must contain at least one column")
    if table.keys_type is KeysType.UNIQUE_KEYS:
        # a load's replaced rows would stay in the view: not maintained here
        raise DorisError("The materialized view on a UNIQUE KEY table is not supported",
                         ErrorCode.NOT_SUPPORTED_YET)
    binder = _binder(table, True)
    columns: list[ColumnMeta] = []
    keys: list[Expr] = []
    aggregated = False
    for item in select.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        text = node.sql(dialect="mysql")
        if isinstance(node, exp.Star) or (isinstance(node, exp.Column)
                                          and isinstance(node.this, exp.Star)):
            raise DorisError("The materialized view not support select star")
        bad = _has_function(node, _INVALID_FUNCTIONS)
        if bad is not None:
            raise DorisError(f"The materialized view contain {bad} is disallowed")
        bound = binder.bind(node)
        if isinstance(bound, AggregateCall):
            aggregated = True
            columns.append(_value_column(table, bound, text))
            continue
        if aggregated:
            raise DorisError("The aggregate column should be after the single column")
        if any(isinstance(x, AggregateCall) for x in bound.walk()):
            raise DorisError("The materialized view only support the single column or function "
                             f"expr. Error column: {text}")
        if not any(isinstance(x, ColumnRef) for x in bound.walk()):
            raise DorisError(f"The materialized view contain constant expr is disallowed, expr: "
                             f"{text}")
        if table.keys_type is KeysType.AGG_KEYS:
            values = sorted(x.name for x in bound.walk()
                            if isinstance(x, ColumnRef) and not table.column(x.name).is_key)
            if values:
                raise DorisError(f"The materialized view of aggregate table must use key columns "
                                 f"as its keys, but {values[0]} is a value column")
        keys.append(bound)
        columns.append(ColumnMeta(key_name(bound), bound.type, nullable=True, is_key=True,
                                  define_expr=bound.sql()))
    if aggregated and not keys:
        raise DorisError("The materialized view must contain at least one key column")
    _check_group_by(select, binder, keys, aggregated)
    _check_order_by(select, binder, keys, aggregated, len(columns))
    seen: set[str] = set()
    for c in columns:
        if c.name.lower() in seen:
            raise DorisError(f"Duplicate column name '{c.name}'")
        seen.add(c.name.lower())
    if aggregated:
        key_cols = tuple(c.name for c in columns if c.is_key)
        keys_type = KeysType.AGG_KEYS
    else:
        key_cols = _duplicate_keys(columns)
        keys_type = KeysType.DUP_KEYS
        columns = [c if c.name in key_cols else _as_value(c) for c in columns]
    return ViewIndex(name=stmt.name, schema=tuple(columns), keys=key_cols, keys_type=keys_type,
                     short_key_column_count=short_key_count(columns))


def _as_value(c: ColumnMeta) -> ColumnMeta:
    return ColumnMeta(c.name, c.type, nullable=c.nullable, is_key=False, agg_type=AggType.NONE,
                      define_expr=c.define_expr)


def _check_group_by(select: exp.Select, binder: ExpressionBinder, keys: list[Expr],
                    aggregated: bool) -> None:
    group = select.args.get("group")
    if has_grouping_sets(select):
        raise DorisError("The grouping sets clause is not supported in materialized view: "
                         "use a plain GROUP BY")
    groups = [binder.bind(g) for g in group.expressions] if group is not None else []
    key_sql = [k.sql() for k in keys]
    if aggregated or groups:
        for k in keys:
            if k.sql() not in {g.sql() for g in groups}:
                raise DorisError(f"The select expr {k.sql()} not in grouping or aggregate columns")
    for g in groups:
        if g.sql() not in key_sql:
            raise DorisError(f"The grouping expr {g.sql()} not in select list.")


def _check_order_by(select: exp.Select, binder: ExpressionBinder, keys: list[Expr],
                    aggregated: bool, n_columns: int) -> None:
    order = select.args.get("order")
    if order is None:
        return
    items = [binder.bind(o.this) for o in order.expressions]
    if len(items) > n_columns:
        raise DorisError("The number of columns in order clause must be less than the number of "
                         "columns in select clause")
    if aggregated and len(items) != len(keys):
        raise DorisError("The key of columns in mv must be all of group by columns")
    for i, item in enumerate(items):
        if i >= len(keys) or keys[i].sql() != item.sql():
            shown = keys[i].sql() if i < len(keys) else "?"
            raise DorisError("The order of columns in order by clause must be same as the order "
                             f"of columns in select list, {shown} vs {item.sql()}")


def _duplicate_keys(columns: list[ColumnMeta]) -> tuple[str, ...]:
    """Doris' DUP_KEYS MV keys (supplyOrderColumn): the leading columns within the short-key
    limits (3 columns, 36 bytes, ending at a VARCHAR); a FLOAT / DOUBLE first column is
    refused."""
    keys: list[str] = []
    size = 0
    for c in columns:
        size += index_size(c.type)
        if len(keys) >= SHORTKEY_MAX_COLUMNS or size > SHORTKEY_MAX_BYTES:
            if not keys and c.type.is_string:
                keys.append(c.name)
            break
        if c.type.kind in (TypeKind.FLOAT, TypeKind.DOUBLE):
            break
        keys.append(c.name)
        if c.type.kind is TypeKind.VARCHAR:
            break
    if not keys:
        raise DorisError("The first column could not be float or double type, use decimal instead")
    return tuple(keys)

