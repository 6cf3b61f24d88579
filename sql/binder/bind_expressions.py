"""Expression binding: sqlglot expression AST -> typed IR (`sql.binder.expressions`).

Resolves column names through a caller-supplied resolver, types literals as Doris does (smallest
integer type, DECIMAL(p,s) for `1.50`, DOUBLE for `1e3`), inserts the casts the type rules in
`sql.functions.coercion` ask for (folding casts of literals right away), rewrites BETWEEN, simple
CASE, IF, IS [NOT] TRUE, and folds session constants (DATABASE(), USER(), @@vars, NOW(), ...)
into literals. Unsupported constructs raise the 1105 "... is not supported yet" error.
Upstream: Doris Nereids `ExpressionAnalyzer` + `TypeCoercion` rules.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from decimal import InvalidOperation
from typing import Protocol

from sqlglot import exp

from sql.binder.bind_functions import AGG_NAMES, translate
from sql.binder.bind_lambdas import bind_lambda_call
from sql.binder.expressions import (
    AggregateCall,
    And,
    Arithmetic,
    Call,
    Case,
    Cast,
    Comparison,
    Expr,
    InList,
    IsNull,
    Like,
    Literal,
    Negate,
    Not,
    Or,
)
from sql.binder.literals import (
    SESSION_FUNCTIONS,
    number_literal,
    session_constant,
    strftime_to_mysql,
    value_literal,
)
from sql.binder.nested_nodes import check_comparable, nested_call_type
from sql.errors import DorisError, ErrorCode
from sql.functions import AggregateFunction, aggregate_function, check_arity, scalar_function
from sql.functions.coercion import (
    arithmetic_type,
    common_type,
    comparison_type,
    from_sqlglot_type,
    is_null_type,
    literal_string_type,
)
from sql.functions.datetimes import str_to_date_type
from sql.functions.overflow import overflow_error
from sql.functions.scalar import round_result_type
from sql.functions.temporal import date_add_result_type
from sql.functions.vector import as_int
from sql.options import QueryOptions, SystemVariableLookup
from storage import nested as nested_cells
from storage.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    NULL,
    STRING,
    TINYINT,
    DataType,
    TypeError_,
    TypeKind,
    array_of,
    date_to_days,
    datetime,
    datetime_to_micros,
    parse_datetime,
)


class SessionLike(Protocol):
    """What binding needs from the session (sql.options.SessionContext satisfies it)."""

    @property
    def database(self) -> str | None: ...
    @property
    def connection_id(self) -> int: ...
    @property
    def user(self) -> str: ...
    @property
    def current_user(self) -> str: ...
    @property
    def options(self) -> QueryOptions: ...
    @property
    def system_variables(self) -> SystemVariableLookup | None: ...


def _aggregate_constant(e: Expr) -> Expr:
    """A constant argument of an aggregate as a Literal its `bind` can read: a DECIMAL literal's
    value is unscaled, so numbers go over as DOUBLE (PERCENTILE's p), and an ARRAY of number
    literals (PERCENTILE_ARRAY's ps) as one ARRAY<DOUBLE> literal in its canonical cell form."""
    if e.type.is_decimal:
        return coerce(e, DOUBLE)
    if isinstance(e, Call) and e.name == "array" and all(isinstance(a, Literal) for a in e.args):
        items = [coerce(a, DOUBLE) if a.type.is_numeric else a for a in e.args]
        values = [getattr(a, "value", None) for a in items]
        return Literal(nested_cells.dump(values), array_of(DOUBLE))
    return e


def _constant(bound: list[Expr], pos: int) -> object:
    """The value of a constant argument (the function's `literal_args`, checked by the caller)."""
    arg = bound[pos]
    if not isinstance(arg, Literal):
        raise DorisError(f"argument {pos + 1} must be a constant")
    return arg.value


def not_supported(what: str) -> DorisError:
    return DorisError(f"{what} is not supported yet")


def coerce(e: Expr, t: DataType) -> Expr:
    """`e` converted to type `t`: literals are converted now, other expressions get a Cast."""
    if e.type == t or is_null_type(t):
        return e
    if isinstance(e, Literal):
        lit = convert_literal(e, t)
        if lit is not None:
            return lit
    return Cast(e, t)


def convert_literal(e: Literal, t: DataType) -> Literal | None:
    if e.value is None:
        return Literal(None, t)
    if t.is_string:
        return Literal(str(e.type.format_value(e.value)), t)
    try:
        py = e.type.to_python(e.value)
        if e.type.is_string and (t.is_numeric or t.is_temporal):
            py = str(py).strip()
        return Literal(t.to_physical(py), t)
    except (TypeError_, ValueError, InvalidOperation, OverflowError):
        return None  # left to a runtime Cast (which yields NULL, as Doris' non-strict cast)


_ARITH: dict[type[exp.Expr], str] = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.IntDiv: "DIV"}
_CMP: dict[type[exp.Expr], str] = {
    exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=",
    exp.NullSafeEQ: "<=>"}
# sqlglot node class -> (registry name, argument names in call order)
_FUNCS: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.Abs: ("abs", ("this",)), exp.Round: ("round", ("this", "decimals")),
    exp.Trunc: ("truncate", ("this", "decimals")), exp.Floor: ("floor", ("this",)),
    exp.Ceil: ("ceil", ("this",)), exp.Upper: ("upper", ("this",)),
    exp.Lower: ("lower", ("this",)), exp.Substring: ("substr", ("this", "start", "length")),
    exp.Left: ("left", ("this", "expression")), exp.Right: ("right", ("this", "expression")),
    exp.Reverse: ("reverse", ("this",)), exp.Repeat: ("repeat", ("this", "times")),
    exp.Replace: ("replace", ("this", "expression", "replacement")),
    exp.StartsWith: ("starts_with", ("this", "expression")),
    exp.EndsWith: ("ends_with", ("this", "expression")),
    exp.Sqrt: ("sqrt", ("this",)), exp.Exp: ("exp", ("this",)), exp.Ln: ("ln", ("this",)),
    exp.Pow: ("pow", ("this", "expression")), exp.Sign: ("sign", ("this",)), exp.Pi: ("pi", ()),
    exp.Year: ("year", ("this",)), exp.Month: ("month", ("this",)), exp.Day: ("day", ("this",)),
    exp.DayOfMonth: ("day", ("this",)), exp.Quarter: ("quarter", ("this",)),
    exp.DayOfYear: ("dayofyear", ("this",)), exp.DayOfWeek: ("dayofweek", ("this",)),
    exp.Hour: ("hour", ("this",)), exp.Minute: ("minute", ("this",)),
    exp.Second: ("second", ("this",)), exp.TsOrDsToDate: ("to_date", ("this",)),
    exp.DateDiff: ("datediff", ("this", "expression")),
    exp.Nullif: ("nullif", ("this", "expression")),
    exp.BitmapCount: ("bitmap_count", ("this",)),
}
_EXTRACT_UNITS = {"year", "quarter", "month", "day", "hour", "minute", "second"}
# bare names bound as session functions when no column has them (server/plan_cache.py never
# keeps a plan of a text naming one)
SESSION_COLUMNS = {"current_date", "current_timestamp", "current_user", "localtime",
                   "localtimestamp", "current_time"}


class ExpressionBinder:
    """Binds expressions of one clause. `resolve` maps a column AST to a bound expression."""

    def __init__(self, resolve: Callable[[exp.Column], Expr], session: SessionLike | None,
                 now: _dt.datetime, allow_aggregates: bool, clause: str) -> None:
        self._resolve = resolve
        self._session = session
        self._now = now
        self.allow_aggregates = allow_aggregates
        self._clause = clause
        self._in_aggregate = False
        self.allow_windows = False  # SELECT list and ORDER BY only (set by the SELECT binder)
        # set by the SELECT binder: binds IN (subquery) / EXISTS / scalar subqueries
        self.subquery_binder: Callable[[exp.Expression, ExpressionBinder], Expr] | None = None

    # ---- dispatch --------------------------------------------------------------------------
    def bind(self, node: exp.Expression) -> Expr:
        if isinstance(node, (exp.Paren, exp.Alias)):
            return self.bind(node.this)
        if isinstance(node, exp.Column):
            return self._column(node)
        if isinstance(node, exp.Literal):
            return self.literal(node)
        if isinstance(node, exp.Null):
            return Literal(None, NULL)
        if isinstance(node, exp.Boolean):
            return Literal(1 if node.this else 0, BOOLEAN)
        if isinstance(node, exp.Neg):
            return self._negate(node)
        if type(node) in _ARITH:
            return self._arith(node)
        if type(node) in _CMP:
            left, right = self.bind(node.this), self.bind(node.expression)
            return self.comparison(_CMP[type(node)], left, right)
        if isinstance(node, (exp.And, exp.Or)):
            operands = tuple(self._boolean(self.bind(x)) for x in (node.this, node.expression))
            return And(operands) if isinstance(node, exp.And) else Or(operands)
        if isinstance(node, exp.Xor):
            a, b = self._boolean(self.bind(node.this)), self._boolean(self.bind(node.expression))
            return Comparison("!=", a, b)
        if isinstance(node, exp.Not):
            return Not(self._boolean(self.bind(node.this)))
        if isinstance(node, exp.In):
            return self._in(node)
        if isinstance(node, exp.Is):
            return self._is(node)
        if isinstance(node, exp.Between):
            a = self.bind(node.this)
            lo = self.comparison(">=", a, self.bind(node.args["low"]))
            hi = self.comparison("<=", a, self.bind(node.args["high"]))
            return And((lo, hi))
        if isinstance(node, (exp.Like, exp.ILike, exp.Escape)):
            return self._like(node)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self._cast(node)
        if isinstance(node, exp.Case):
            return self._case(node)
        if isinstance(node, exp.If):
            cond = self._boolean(self.bind(node.this))
            false = node.args.get("false")
            return self._make_case([(cond, self.bind(node.args["true"]))],
                                   self.bind(false) if false is not None else None)
        if isinstance(node, exp.Coalesce):
            return self.call("coalesce", [node.this, *node.expressions])
        if isinstance(node, (exp.Concat, exp.ConcatWs)):
            return self.call("concat_ws" if isinstance(node, exp.ConcatWs) else "concat",
                             list(node.expressions))
        if isinstance(node, (exp.Greatest, exp.Least)):
            return self.call(node.sql_name().lower(), [node.this, *node.expressions])
        if isinstance(node, exp.Length):
            return self.call("length" if node.args.get("binary") else "char_length", [node.this])
        if isinstance(node, exp.Log):
            return self._log(node)
        if isinstance(node, exp.Anonymous) and any(
                isinstance(a, exp.Lambda) for a in node.expressions):  # array_map(x -> .., a)
            return bind_lambda_call(self, node.name, list(node.expressions))
        translated = translate(node)  # sql/binder/bind_functions.py
        if isinstance(translated, tuple):
            return self.call(*translated)
        if translated is not None:
            return self.bind(translated)
        if isinstance(node, exp.StrPosition):
            args = [node.this, node.args["substr"]]
            return self.call("instr", args)
        if isinstance(node, exp.Pad):
            return self.call("lpad" if node.args.get("is_left") else "rpad",
                             [node.this, node.expression, node.args.get("fill_pattern")])
        if isinstance(node, exp.TimeToStr):
            inner = node.this
            if isinstance(inner, exp.TsOrDsToTimestamp):
                inner = inner.this
            fmt = node.args["format"]
            if isinstance(fmt, exp.Literal) and fmt.is_string:
                # sqlglot stores the format in strftime form; DATE_FORMAT speaks MySQL's
                fmt = exp.Literal.string(strftime_to_mysql(fmt.this))
            return self.call("date_format", [inner, fmt])
        if isinstance(node, (exp.DateAdd, exp.DateSub)):
            return self._date_add(node.this, node.expression, node.args.get("unit"),
                                  isinstance(node, exp.DateSub))
        if isinstance(node, exp.AggFunc) or (
                isinstance(node, exp.Anonymous) and aggregate_function(node.name) is not None):
            return self._aggregate(node)
        if isinstance(node, exp.Extract):
            # EXTRACT(unit FROM x) is the unit's extraction function: year(x), month(x), ...
            unit = node.this.name.lower() if isinstance(node.this, (exp.Var, exp.Column)) else ""
            if unit not in _EXTRACT_UNITS:
                raise not_supported(f"expression '{node.sql(dialect='mysql')}'")
            return self.call(unit, [node.expression])
        if type(node) in _FUNCS:
            name, argnames = _FUNCS[type(node)]
            if type(node) in (exp.Year, exp.Month, exp.Day, exp.DayOfMonth, exp.DayOfWeek,
                              exp.DayOfYear, exp.Week) and isinstance(node.this, exp.TsOrDsToDate):
                return self.call(name, [node.this.this])
            args = [node.args.get(a) for a in argnames]
            while args and args[-1] is None:
                args.pop()
            return self.call(name, args)
        if isinstance(node, exp.Window):
            if not self.allow_windows:
                raise DorisError(f"window function is not allowed in {self._clause} clause: "
                                 f"{node.sql(dialect='mysql')}")
            from sql.binder.bind_window import bind_window

            return bind_window(node, self)
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists, exp.SetOperation)):
            if self.subquery_binder is None:
                raise not_supported("subquery")
            return self.subquery_binder(node, self)
        if isinstance(node, exp.SessionParameter):
            return self._variable(node)
        constant = self._session_constant(node)
        if constant is not None:
            return constant
        if isinstance(node, exp.Anonymous):
            return self.call(node.name.lower(), list(node.expressions))
        if isinstance(node, exp.Star):
            raise DorisError("'*' is only allowed in the select list and in COUNT(*)")
        if isinstance(node, exp.Func):
            raise DorisError(f"Can not found function '{node.sql_name().upper()}'")
        raise not_supported(f"expression '{node.sql(dialect='mysql')}'")

    # ---- leaves ----------------------------------------------------------------------------
    def _column(self, node: exp.Column) -> Expr:
        if isinstance(node.this, exp.Star):
            raise DorisError("'*' is only allowed in the select list and in COUNT(*)")
        try:
            return self._resolve(node)
        except DorisError:
            if not node.table and node.name.lower() in SESSION_COLUMNS:
                const = self._session_constant(exp.Anonymous(this=node.name))
                if const is not None:
                    return const
            raise

    def literal(self, node: exp.Literal) -> Literal:
        text = node.this
        if node.is_string:
            return Literal(text, literal_string_type(text))
        return number_literal(text)

    def _negate(self, node: exp.Neg) -> Expr:
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return number_literal("-" + inner.this)
        a = self.bind(inner)
        if not a.type.is_numeric or a.type.kind is TypeKind.BOOLEAN:
            a = coerce(a, BIGINT if a.type.kind is TypeKind.BOOLEAN else DOUBLE)
        if isinstance(a, Literal) and isinstance(a.value, int | float):  # fold a constant
            lo, hi = a.type.int_range() if a.type.is_integer else (None, None)
            if lo is not None and hi is not None and not lo <= -a.value <= hi:
                raise overflow_error("neg", a.value, None, a.type)  # -MIN: never wrap
            return Literal(-a.value, a.type)
        return Negate(a, a.type)

    def _boolean(self, e: Expr) -> Expr:
        if e.type.kind in (TypeKind.BOOLEAN, TypeKind.NULL):
            return e
        return coerce(e, BOOLEAN)

    # ---- operators -------------------------------------------------------------------------
    def _arith(self, node: exp.Expression) -> Expr:
        op = _ARITH[type(node)]
        right = node.expression
        if isinstance(right, exp.Interval) and op in ("+", "-"):
            return self._date_add(node.this, right.this, right.args.get("unit"), op == "-")
        if isinstance(node.this, exp.Interval) and op == "+":
            return self._date_add(right, node.this.this, node.this.args.get("unit"), False)
        return self.arithmetic(op, self.bind(node.this), self.bind(right))

    def arithmetic(self, op: str, a: Expr, b: Expr) -> Expr:
        lt, rt, res = arithmetic_type(op, a.type, b.type)
        return Arithmetic(op, coerce(a, lt), coerce(b, rt), res)

    def comparison(self, op: str, a: Expr, b: Expr) -> Expr:
        check_comparable(a.type, b.type)
        a, b = self._literal_side(a, b), self._literal_side(b, a)
        if a.type.kind is TypeKind.DATE and b.type.kind is TypeKind.DATETIME:
            a = coerce(a, b.type)
        elif b.type.kind is TypeKind.DATE and a.type.kind is TypeKind.DATETIME:
            b = coerce(b, a.type)
        t = comparison_type(a.type, b.type)
        return Comparison(op, coerce(a, t), coerce(b, t))

    def _literal_side(self, lit: Expr, other: Expr) -> Expr:
        """Convert a string literal compared with a string/DATE/DATETIME/integer to that type."""
        if not (isinstance(lit, Literal) and lit.type.is_string and lit.value is not None):
            return lit
        if other.type.is_string and other.type.kind is not TypeKind.NULL:
            # keep the column's own type so the comparison needs no cast (and can be pushed
            # down to storage as a ColumnPredicate)
            return Literal(lit.value, other.type)
        text = str(lit.value).strip()
        if other.type.is_temporal:
            try:
                dt = parse_datetime(text)
            except TypeError_:
                return lit
            if other.type.kind is TypeKind.DATE:
                if dt.time() == _dt.time(0):
                    return Literal(date_to_days(dt.date()), DATE)
                return Literal(datetime_to_micros(dt), datetime(6))
            scale = max(other.type.scale, 6 if dt.microsecond else 0)
            return Literal(datetime_to_micros(dt), datetime(scale))
        if other.type.is_integer:
            try:
                v = int(text)
            except ValueError:
                return lit
            lo, hi = other.type.int_range()
            if lo <= v <= hi:
                return Literal(v, other.type)
        return lit

    def _in(self, node: exp.In) -> Expr:
        if node.args.get("query") is not None and self.subquery_binder is not None:
            return self.subquery_binder(node, self)
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise not_supported("IN subquery")
        a = self.bind(node.this)
        values = [self._literal_side(self.bind(v), a) for v in node.expressions]
        t = a.type
        for v in values:
            t = comparison_type(t, v.type) if not is_null_type(v.type) else t
        if a.type.kind is TypeKind.DATE and any(v.type.kind is TypeKind.DATETIME for v in values):
            t = datetime(6)
        return InList(coerce(a, t), tuple(coerce(v, t) for v in values), False)

    def _is(self, node: exp.Is) -> Expr:
        a = self.bind(node.this)
        target = node.expression
        if isinstance(target, exp.Null):
            return IsNull(a, False)
        if isinstance(target, exp.Boolean):
            b = self._boolean(a)
            truth = b if target.this else Not(b)
            return self.call_bound("coalesce", [truth, Literal(0, BOOLEAN)])
        raise not_supported(f"IS {target.sql()}")

    def _like(self, node: exp.Expression) -> Expr:
        escape = "\\"
        if isinstance(node, exp.Escape):
            esc = self.bind(node.expression)
            if not (isinstance(esc, Literal) and isinstance(esc.value, str)
                    and len(esc.value) == 1):
                raise DorisError("ESCAPE must be a single character")
            escape = esc.value
            node = node.this
        negated = bool(node.args.get("negate"))
        a = self._string(self.bind(node.this))
        p = self._string(self.bind(node.expression))
        if isinstance(node, exp.ILike):
            a = self.call_bound("lower", [a])
            p = self.call_bound("lower", [p])
        return Like(a, p, negated, escape)

    def _string(self, e: Expr) -> Expr:
        from storage.types import STRING

        return e if e.type.is_string else coerce(e, STRING)

    def _cast(self, node: exp.Expression) -> Expr:
        target = from_sqlglot_type(node.args["to"])
        return coerce(self.bind(node.this), target)

    def _case(self, node: exp.Case) -> Expr:
        operand = node.this
        whens: list[tuple[Expr, Expr]] = []
        op_bound = self.bind(operand) if operand is not None else None
        for w in node.args.get("ifs") or []:
            cond_ast = w.this
            if op_bound is not None:
                cond = self.comparison("=", op_bound, self.bind(cond_ast))
            else:
                cond = self._boolean(self.bind(cond_ast))
            whens.append((cond, self.bind(w.args["true"])))
        default = node.args.get("default")
        return self._make_case(whens, self.bind(default) if default is not None else None)

    def _make_case(self, whens: list[tuple[Expr, Expr]], default: Expr | None) -> Expr:
        t = common_type([th.type for _, th in whens] + ([default.type] if default else []))
        return Case(tuple((c, coerce(th, t)) for c, th in whens),
                    coerce(default, t) if default is not None else None, t)

    def _log(self, node: exp.Log) -> Expr:
        if node.expression is None:
            return self.call("ln", [node.this])
        base = node.this
        if isinstance(base, exp.Literal) and base.this in ("10", "2"):
            return self.call("log10" if base.this == "10" else "log2", [node.expression])
        num = self.call("ln", [node.expression])
        den = self.call("ln", [base])
        return self.arithmetic("/", num, den)

    def _date_add(self, date: exp.Expression, amount: exp.Expression,
                  unit: exp.Expression | None, negate: bool) -> Expr:
        unit_name = (unit.name if unit is not None else "DAY").upper()
        n = self.bind(amount)
        if negate:
            n = self.arithmetic("-", Literal(0, BIGINT), coerce(n, BIGINT))
        args = [self.bind(date), n, Literal(unit_name, literal_string_type(unit_name))]
        return self.call_bound("date_add", args)

    # ---- functions -------------------------------------------------------------------------
    def call(self, name: str, arg_nodes: list[exp.Expression | None]) -> Expr:
        if any(isinstance(a, exp.Lambda) for a in arg_nodes):  # array_filter(x -> .., arr)
            return bind_lambda_call(self, name, arg_nodes)
        fn = scalar_function(name)
        check_arity(fn, arg_nodes)
        args = [self.bind(a) if a is not None else Literal(None, NULL) for a in arg_nodes]
        return self.call_bound(name, args)

    def call_bound(self, name: str, args: list[Expr]) -> Expr:
        fn = scalar_function(name)
        check_arity(fn, args)
        targets, ret = fn.signature([a.type for a in args])
        bound = [coerce(a, t) if t is not None else a for a, t in zip(args, targets)]
        for pos in fn.literal_args:
            if pos < len(bound) and not isinstance(bound[pos], Literal):
                raise DorisError(f"argument {pos + 1} of {name} must be a constant")
        if fn.name == "date_add":
            ret = date_add_result_type(ret, str(_constant(bound, 2)))
        if fn.name == "str_to_date":
            ret = str_to_date_type(_constant(bound, 1))
        if fn.name in ("named_struct", "struct_element"):  # field names are constants
            ret = nested_call_type(fn.name, bound)
        if fn.name in ("round", "truncate"):  # round(x) rounds to 0 digits: scale 0 too
            digits = _constant(bound, 1) if len(bound) > 1 else 0
            ret = round_result_type(ret, as_int(digits) if digits is not None else 0)
        return Call(fn.name, tuple(bound), ret)

    def _aggregate(self, node: exp.Func) -> Expr:
        name = node.name.lower() if isinstance(node, exp.Anonymous) else AGG_NAMES.get(
            type(node), node.sql_name().lower())
        fn = aggregate_function(name)
        if fn is None:
            raise not_supported(f"aggregate function {name.upper()}")
        if not self.allow_aggregates:
            raise DorisError(f"aggregate function is not allowed in {self._clause} clause: "
                             f"{node.sql(dialect='mysql')}")
        if self._in_aggregate:
            raise DorisError("aggregate function cannot contain aggregate parameters")
        arg_nodes = list(node.expressions) if isinstance(node, exp.Anonymous) else (
            [node.this] if node.this is not None else [])
        if not isinstance(node, exp.Anonymous) and node.args.get("expression") is not None:
            arg_nodes.append(node.args["expression"])  # MAX_BY(x, y), CORR(x, y), ...
        distinct = False
        if len(arg_nodes) == 1 and isinstance(arg_nodes[0], exp.Distinct):
            distinct = True
            arg_nodes = list(arg_nodes[0].expressions)
        if name == "count" and (not arg_nodes or isinstance(arg_nodes[0], exp.Star)):
            return AggregateCall("count", (), False, BIGINT)
        if isinstance(node, exp.GroupConcat):
            return self._group_concat(node)
        if name == "count" and distinct and len(arg_nodes) > 1:
            # COUNT(DISTINCT a, b): count distinct tuples, skipping rows with any NULL
            self._in_aggregate = True
            try:
                parts = [self.bind(a) for a in arg_nodes]
            finally:
                self._in_aggregate = False
            return AggregateCall("count", (self.call_bound("__tuple_key", parts),), True, BIGINT)
        if fn.columns != 1 or (fn.bind is not None and len(arg_nodes) > 1):
            return self._multi_arg_aggregate(name, fn, arg_nodes, distinct)
        if len(arg_nodes) != 1:
            raise not_supported(f"{name.upper()} with {len(arg_nodes)} arguments")
        self._in_aggregate = True
        try:
            args = [self.bind(a) for a in arg_nodes]
        finally:
            self._in_aggregate = False
        targets = fn.arg_types([a.type for a in args])
        args = [coerce(a, t) for a, t in zip(args, targets)]
        if name in ("min", "max") and args[0].type.kind is TypeKind.NULL:
            args = [coerce(args[0], BIGINT)]
        if name in ("min", "max", "count"):
            distinct = distinct and name == "count"
        return AggregateCall(name, tuple(args), distinct, fn.return_type([a.type for a in args]))

    def _multi_arg_aggregate(self, name: str, fn: AggregateFunction,
                             arg_nodes: list[exp.Expression], distinct: bool) -> Expr:
        """An aggregate of several columns and/or constants (MAX_BY(x, y), PERCENTILE(x, p)):
        the columns packed into one STRUCT argument when more than one (see
        `AggregateFunction.columns`), the constants after it for `AggregateFunction.bind`."""
        ncols = len(arg_nodes) if fn.columns < 0 else fn.columns
        if len(arg_nodes) < max(ncols, 1) or (len(arg_nodes) > ncols and fn.bind is None):
            raise DorisError(f"Can not found function '{name.upper()}' which has "
                             f"{len(arg_nodes)} arity.")
        self._in_aggregate = True
        try:
            bound = [self.bind(a) for a in arg_nodes]
        finally:
            self._in_aggregate = False
        cols = bound[:ncols]
        consts = [_aggregate_constant(c) for c in bound[ncols:]]
        for c in consts:
            if not isinstance(c, Literal):
                raise DorisError(f"the constant arguments of {name} must be constants")
        targets = fn.arg_types([a.type for a in cols])
        cols = [coerce(a, t) for a, t in zip(cols, targets)]
        ret = fn.return_type([a.type for a in cols])
        arg = self.call_bound("struct", cols) if len(cols) > 1 else cols[0]
        return AggregateCall(name, (arg, *consts), distinct, ret)

    def _group_concat(self, node: exp.GroupConcat) -> Expr:
        """GROUP_CONCAT([DISTINCT] x [, sep] [ORDER BY x [ASC|DESC]]) -> group_concat(x, sep,
        direction); the constants reach the aggregate through `AggregateFunction.bind`."""
        value, sep = node.this, node.args.get("separator")
        order: exp.Order | None = None
        for part in (value, sep):
            if isinstance(part, exp.Order):
                order = part
        if isinstance(value, exp.Order):
            value = value.this
        if isinstance(sep, exp.Order):
            sep = sep.this
        distinct = isinstance(value, exp.Distinct)
        if distinct:
            items = list(value.expressions)
            value = items[0]
            if len(items) > 1:
                sep = items[1]
        self._in_aggregate = True
        try:
            arg = self.bind(value)
            if arg.type.kind is TypeKind.NULL:
                arg = coerce(arg, STRING)
            sep_e = self.bind(sep) if sep is not None else Literal(None, NULL)
            direction, packed = 0, 0
            if order is not None:
                keys = order.expressions
                descs = {bool(k.args.get("desc")) for k in keys}
                if len(descs) != 1:
                    raise not_supported("GROUP_CONCAT ORDER BY with mixed directions")
                direction = -1 if descs.pop() else 1
                bound_keys = [self.bind(k.this) for k in keys]
                if bound_keys != [arg]:  # sort keys packed with the value, see strings.py
                    if distinct:
                        raise not_supported("GROUP_CONCAT(DISTINCT ... ORDER BY other columns)")
                    arg = self.call_bound("__order_pack", [arg, *bound_keys])
                    packed = len(bound_keys)
        finally:
            self._in_aggregate = False
        if not isinstance(sep_e, Literal):
            raise DorisError("the separator of group_concat must be a constant")
        sep_lit = coerce(sep_e, STRING) if sep_e.value is not None else sep_e
        return AggregateCall("group_concat", (arg, sep_lit, Literal(direction, TINYINT),
                                              Literal(packed, TINYINT)), distinct, STRING)

    # ---- session constants -----------------------------------------------------------------
    def _variable(self, node: exp.SessionParameter) -> Expr:
        name = node.this.name
        lookup = self._session.system_variables if self._session is not None else None
        if lookup is None:
            raise DorisError(f"Unknown system variable '{name}'", ErrorCode.UNKNOWN_SYSTEM_VARIABLE)
        kind = (node.text("kind") or "").lower()
        # @@global.x asks the global scope: the lookup gets "global.x"; otherwise the bare name
        key = f"global.{name}" if kind == "global" else name
        return value_literal(lookup(key))

    def _session_constant(self, node: exp.Expression) -> Expr | None:
        if isinstance(node, exp.Anonymous):
            key, args = node.name.lower(), list(node.expressions)
        else:
            key = SESSION_FUNCTIONS.get(type(node), "")
            args = [node.this] if isinstance(node.this, exp.Expression) else []
        precision = None
        if args:
            p = self.bind(args[0])
            precision = p.value if isinstance(p, Literal) else None
        return session_constant(key, len(args), precision, self._session, self._now)
