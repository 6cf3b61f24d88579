"""Window function binding: sqlglot `Window` -> `WindowCall`, and extraction of window calls
into named columns computed by the plan's LogicalWindow node.

Supported: ROW_NUMBER, RANK, DENSE_RANK, NTILE(n), PERCENT_RANK, CUME_DIST,
LAG/LEAD(x[, n[, default]]), FIRST_VALUE, LAST_VALUE and SUM/AVG/MIN/MAX/COUNT OVER
(PARTITION BY .. ORDER BY .. [ROWS|RANGE BETWEEN .. AND ..]). Default frame: the whole
partition without ORDER BY, RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW with it (peers
included). RANGE frames take only UNBOUNDED / CURRENT ROW bounds (as Doris).
Upstream: Doris Nereids `WindowExpression`, `WindowFrame`, `CheckAndStandardizeWindowFunction`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from sqlglot import exp

from sql.binder.expressions import (
    AggregateCall,
    ColumnRef,
    Expr,
    Literal,
    WindowCall,
    WindowFrame,
    contains_window,
)
from sql.errors import DorisError
from sql.functions import aggregate_function
from sql.functions.coercion import common_type, is_null_type
from storage.types import BIGINT, DOUBLE, DataType

if TYPE_CHECKING:  # bind_expressions imports this module to bind OVER (..)
    from sql.binder.bind_expressions import ExpressionBinder

RANKING: dict[type[exp.Expr], str] = {
    exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
    exp.Ntile: "ntile", exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist"}
_VALUE: dict[type[exp.Expr], str] = {
    exp.Lag: "lag", exp.Lead: "lead", exp.FirstValue: "first_value", exp.LastValue: "last_value"}
_AGGS: dict[type[exp.Expr], str] = {
    exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max", exp.Count: "count"}
_ANON = {"row_number", "rank", "dense_rank", "ntile", "percent_rank", "cume_dist", "lag",
         "lead", "first_value", "last_value", "sum", "avg", "min", "max", "count"}
# any other registry aggregate (COLLECT_LIST, PERCENTILE, BOOL_OR, MAX_BY, GROUP_CONCAT, ..):
# bound as in a GROUP BY, computed per frame by executor/window_aggregates.py
AGGREGATE = "<aggregate>"
WHOLE = WindowFrame("rows", ("unbounded_preceding", 0), ("unbounded_following", 0))
RUNNING = WindowFrame("range", ("unbounded_preceding", 0), ("current_row", 0))


def _fn_name(fn: exp.Expression) -> str:
    for table in (RANKING, _VALUE, _AGGS):
        if type(fn) in table:
            return table[type(fn)]
    if isinstance(fn, exp.Anonymous) and fn.name.lower() in _ANON:
        return fn.name.lower()
    if isinstance(fn, (exp.AggFunc, exp.Anonymous)) and _registry_aggregate(fn) is not None:
        return AGGREGATE
    raise DorisError(f"Unsupported window function: {fn.sql(dialect='mysql')}")


def _registry_aggregate(fn: exp.Expr) -> str | None:
    from sql.binder.bind_functions import AGG_NAMES

    if isinstance(fn, exp.Anonymous):
        name = fn.name.lower()
    elif isinstance(fn, exp.Func):
        name = AGG_NAMES.get(type(fn), fn.sql_name().lower())
    else:
        return None
    return name if aggregate_function(name) is not None else None


def _fn_args(fn: exp.Expression) -> list[exp.Expression]:
    if isinstance(fn, exp.Anonymous):
        return list(fn.expressions)
    if isinstance(fn, (exp.Lag, exp.Lead)):
        return [a for a in (fn.this, fn.args.get("offset"), fn.args.get("default"))
                if a is not None]
    if isinstance(fn, (exp.RowNumber, exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist)):
        return list(fn.expressions) if fn.expressions else []
    out = [fn.this] if isinstance(fn.this, exp.Expression) else []
    return out + list(fn.expressions)


def _bound(node: exp.Expression | str | None, side: str | None) -> tuple[str, int]:
    text = node.upper() if isinstance(node, str) else (
        node.name.upper() if isinstance(node, exp.Var) else None)
    side = (side or "").lower()
    if text == "UNBOUNDED":
        return ("unbounded_preceding" if side == "preceding" else "unbounded_following", 0)
    if text == "CURRENT ROW":
        return ("current_row", 0)
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            n = int(node.this)
        except ValueError:
            n = -1
        if n < 0:
            raise DorisError("BoundOffset of window frame must be a non-negative integer")
        return (side, n)
    raise DorisError("BoundOffset of window frame must be a non-negative integer literal")


_RANK = ("unbounded_preceding", "preceding", "current_row", "following", "unbounded_following")


def _frame(spec: exp.WindowSpec) -> WindowFrame:
    kind = (spec.args.get("kind") or "rows").lower()
    start = _bound(spec.args.get("start"), spec.args.get("start_side"))
    end_node = spec.args.get("end")
    end = _bound(end_node, spec.args.get("end_side")) if end_node is not None else (
        "current_row", 0)
    if start[0] == "unbounded_following" or end[0] == "unbounded_preceding" or (
            _RANK.index(start[0]) > _RANK.index(end[0])):
        raise DorisError(f"WindowFrame with illegal bounds: {spec.sql(dialect='mysql')}")
    if kind == "range" and (start[0] in ("preceding", "following")
                            or end[0] in ("preceding", "following")):
        raise DorisError("WindowFrame with RANGE must use both UNBOUNDED boundary or one "
                         "UNBOUNDED boundary and one CURRENT")
    return WindowFrame(kind, start, end)


def _const_int(e: Expr, what: str) -> int:
    if not isinstance(e, Literal) or not isinstance(e.value, int) or e.value < 0:
        raise DorisError(f"The {what} must be a non-negative constant integer")
    return int(e.value)


def bind_window(node: exp.Window, binder: ExpressionBinder) -> WindowCall:
    """Bind one `fn(...) OVER (...)` with the ExpressionBinder `binder` of its clause."""
    fn = node.this
    if isinstance(fn, exp.IgnoreNulls | exp.RespectNulls):
        raise DorisError("IGNORE NULLS / RESPECT NULLS in window functions is not supported yet")
    if node.args.get("alias") is not None:
        raise DorisError("named windows (WINDOW clause) are not supported yet")
    if getattr(binder, "_in_aggregate", False):
        raise DorisError("aggregate function cannot contain window function parameters")
    name = _fn_name(fn)
    call = _bind_call(node, fn, name, binder)
    if any(contains_window(e) for e in call.children()):
        raise DorisError("window function cannot contain window function parameters")
    return call


def _bind_call(node: exp.Window, fn: exp.Expression, name: str,
               binder: ExpressionBinder) -> WindowCall:
    from sql.binder.bind_expressions import coerce

    arg_nodes = _fn_args(fn)
    partition = tuple(binder.bind(p) for p in node.args.get("partition_by") or [])
    order_node = node.args.get("order")
    order = tuple((binder.bind(o.this), bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
                  for o in (order_node.expressions if order_node is not None else []))
    spec = node.args.get("spec")
    frame: WindowFrame | None = None
    t: DataType
    if name in ("row_number", "rank", "dense_rank", "ntile", "percent_rank", "cume_dist"):
        want = 1 if name == "ntile" else 0
        if len(arg_nodes) != want:
            raise DorisError(f"{name.upper()} requires {want} argument(s)")
        args: tuple[Expr, ...] = ()
        if name == "ntile":
            buckets = _const_int(binder.bind(arg_nodes[0]), "parameter of NTILE")
            if buckets == 0:
                raise DorisError("The bucket number of NTILE must be a positive integer")
            args = (Literal(buckets, BIGINT),)
        # frames do not apply; without ORDER BY every row of the partition is a peer (MySQL)
        t = DOUBLE if name in ("percent_rank", "cume_dist") else BIGINT
        return WindowCall(name, args, partition, order, None, t)
    if name in ("lag", "lead"):
        if not 1 <= len(arg_nodes) <= 3:
            raise DorisError(f"{name.upper()} requires 1 to 3 arguments")
        value = binder.bind(arg_nodes[0])
        offset = _const_int(binder.bind(arg_nodes[1]), f"offset of {name.upper()}") \
            if len(arg_nodes) > 1 else 1
        default = binder.bind(arg_nodes[2]) if len(arg_nodes) > 2 else Literal(None, value.type)
        if not isinstance(default, Literal):
            raise DorisError(f"The default parameter of {name.upper()} must be a constant")
        t = value.type if is_null_type(default.type) else common_type([value.type, default.type])
        if is_null_type(t):
            t = BIGINT
        return WindowCall(name, (coerce(value, t), Literal(offset, BIGINT), coerce(default, t)),
                          partition, order, None, t)
    if spec is not None and spec.args.get("kind"):
        frame = _frame(spec)
    else:
        frame = RUNNING if order else WHOLE
    if name == AGGREGATE:
        return _aggregate_call(fn, binder, partition, order, frame)
    if name in ("first_value", "last_value"):
        if len(arg_nodes) != 1:
            raise DorisError(f"{name.upper()} requires 1 argument")
        value = binder.bind(arg_nodes[0])
        if is_null_type(value.type):
            value = coerce(value, BIGINT)
        return WindowCall(name, (value,), partition, order, frame, value.type)
    agg = aggregate_function(name)
    assert agg is not None
    if len(arg_nodes) == 1 and isinstance(arg_nodes[0], exp.Distinct):
        raise DorisError(f"DISTINCT in window function {name.upper()} is not supported yet")
    if name == "count" and (not arg_nodes or isinstance(arg_nodes[0], exp.Star)):
        return WindowCall("count", (), partition, order, frame, BIGINT)
    if len(arg_nodes) != 1:
        raise DorisError(f"{name.upper()} requires 1 argument")
    value = binder.bind(arg_nodes[0])
    targets = agg.arg_types([value.type])
    value = coerce(value, targets[0])
    if name in ("min", "max") and is_null_type(value.type):
        value = coerce(value, BIGINT)
    return WindowCall(name, (value,), partition, order, frame,
                      agg.return_type([value.type]))


def _aggregate_call(fn: exp.Expression, binder: ExpressionBinder,
                    partition: tuple[Expr, ...],
                    order: tuple[tuple[Expr, bool, bool], ...],
                    frame: WindowFrame) -> WindowCall:
    """A registry aggregate OVER (..): its arguments bound exactly as in GROUP BY (constants
    after the value, several columns packed into one STRUCT)."""
    # aggregates inside the arguments (COLLECT_LIST(SUM(x)) OVER () of a GROUP BY query) are
    # bound first, outside the window's aggregate, and read back through placeholder columns
    fn = fn.copy()
    inner: dict[str, Expr] = {}
    for node in list(fn.find_all(exp.AggFunc, exp.Anonymous)):
        if node is fn or _registry_aggregate(node) is None or any(
                isinstance(p, exp.AggFunc) for p in _ancestors(node, fn)):
            continue
        name = f"__window_arg{len(inner)}"
        inner[name] = binder.bind(cast(exp.Expression, node))
        node.replace(exp.column(name))
    resolve = binder._resolve

    def placeholder(col: exp.Column) -> Expr:
        found = inner.get(col.name) if not col.table else None
        return found if found is not None else resolve(col)

    allowed = binder.allow_aggregates
    binder.allow_aggregates, binder._resolve = True, placeholder
    try:
        agg = binder.bind(fn)
    finally:
        binder.allow_aggregates, binder._resolve = allowed, resolve
    if not isinstance(agg, AggregateCall) or not agg.args:
        raise DorisError(f"Unsupported window function: {fn.sql(dialect='mysql')}")
    if agg.distinct:
        raise DorisError(f"DISTINCT in window function {agg.name.upper()} is not supported yet")
    return WindowCall(agg.name, agg.args, partition, order, frame, agg.type)


def _ancestors(node: exp.Expr, top: exp.Expr) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    parent = node.parent
    while parent is not None and parent is not top:
        out.append(parent)
        parent = parent.parent
    return out


def extract_windows(exprs: list[Expr], start: int = 0
                    ) -> tuple[list[Expr], list[tuple[str, WindowCall]]]:
    """Replace every WindowCall in `exprs` by a ColumnRef to `__w<i>` (equal calls share one)."""
    found: list[tuple[str, WindowCall]] = []

    def fn(x: Expr) -> Expr | None:
        if isinstance(x, WindowCall):
            for name, w in found:
                if w == x:
                    return ColumnRef(name, w.type)
            name = f"__w{start + len(found)}"
            found.append((name, x))
            return ColumnRef(name, x.type)
        return None

    return [e.transform(fn) for e in exprs], found
