"""Rule fold_constants: constant subexpressions of every expression in the plan become literals.

Every function call, CAST, arithmetic and negation whose arguments are (after folding) literals
is replaced, bottom-up, by the literal it evaluates to, computed by the same implementations the
executor runs (`sql.functions`, over one-row `Vec`s), so a folded query returns exactly what the
unfolded one did. TPC-H writes `date '1995-01-01' + interval '3' month` in its filters:
unfolded, that is a DATE_ADD over a column of constants in every batch (40% of Q15's time) and
the comparison around it is no column-vs-constant test. The rule runs first, so the rules after
it see `l_shipdate < '1995-04-01'`: push_down_filters makes it a storage predicate (zone maps,
page skipping), prune_scans prunes partitions with it, the executor compares with a scalar.
Not folded: volatile functions (RAND, SLEEP, UUID ...), and any expression whose evaluation
raises (it keeps raising at run time, only when rows reach it, as before).
Upstream: Doris Nereids `FoldConstantRuleOnFE`, DuckDB `ConstantFoldingRule`.
"""

from __future__ import annotations

from dataclasses import fields, replace

from planner.logical import LogicalPlan
from sql.binder.expressions import Arithmetic, Call, Cast, ColumnRef, Expr, Literal, Negate
from sql.binder.relations import SortKey
from sql.functions import EvalEnv, scalar_function
from sql.functions.cast import cast_vec
from sql.functions.operators import arithmetic, negate
from sql.functions.temporal import in_date_range
from sql.functions.vector import Vec, and_valid, constant, widen
from storage.types import TypeKind

# the node fields that hold expressions (every other field: names, types, scan ranges, rows ..)
_EXPRESSION_FIELDS = frozenset({
    "predicate", "exprs", "condition", "left_keys", "right_keys", "residual", "mark_keys",
    "group_by", "aggregates", "keys", "windows", "filters"})
_fields_of: dict[type, tuple[str, ...]] = {}


def _expression_fields(cls: type) -> tuple[str, ...]:
    names = _fields_of.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(cls) if f.name in _EXPRESSION_FIELDS)
        _fields_of[cls] = names
    return names


def fold_constants(plan: LogicalPlan, ctx: object) -> LogicalPlan:
    old = plan.children
    children = tuple(fold_constants(c, ctx) for c in old)
    if any(a is not b for a, b in zip(children, old)):
        plan = plan.with_children(*children)
    changes: dict[str, object] = {}
    for name in _expression_fields(type(plan)):
        v = getattr(plan, name)
        nv = _fold_value(v)
        if nv is not v:
            changes[name] = nv
    return replace(plan, **changes) if changes else plan


def _fold_value(v: object) -> object:
    """Expressions anywhere in a node's field (alone, in tuples, in named pairs, sort keys)."""
    if isinstance(v, Expr):
        return fold_expression(v)  # the same object when nothing folds
    if isinstance(v, SortKey):
        e = fold_expression(v.expr)
        return v if e is v.expr else replace(v, expr=e)
    if isinstance(v, tuple):
        items = tuple(_fold_value(x) for x in v)
        return v if all(a is b for a, b in zip(items, v)) else items
    return v


# Functions whose value is not a function of their arguments (Doris' non-deterministic set);
# RAND's seeded sequence also spans a batch (`row_independent=False`).
_VOLATILE = frozenset({"rand", "random", "sleep", "uuid", "uuid_numeric", "random_bytes"})


_FOLDABLE = (Call, Cast, Arithmetic, Negate)


def fold_expression(expr: Expr) -> Expr:
    """`expr` with every constant call / CAST / arithmetic subtree replaced by its Literal
    (`expr` itself when nothing folds: planning cost stays one cheap walk per expression)."""
    return _fold(expr) if _has_constant_node(expr) else expr


def _has_constant_node(e: Expr) -> bool:
    """Some foldable node of `e` has only literal operands (folding starts there)."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, (Literal, ColumnRef)):
            continue
        kids = x.children()
        if isinstance(x, _FOLDABLE) and kids and all(isinstance(k, Literal) for k in kids):
            return True
        stack.extend(kids)
    return False


def _fold(e: Expr) -> Expr:
    folded = e.transform(lambda x: None if x is e else fold_expression(x))
    if not isinstance(e, _FOLDABLE):
        # other nodes: folded inside only (their own value may depend on rows or short-circuit)
        return folded
    args = folded.children()
    if not args or not all(isinstance(a, Literal) for a in args):
        return folded
    if isinstance(folded, Call) and not _deterministic(folded.name):
        return folded
    try:
        value = _evaluate(folded)
    except Exception:  # noqa: BLE001 - an error stays a run-time error of the unfolded form
        return folded
    return Literal(value, folded.type)


def _deterministic(name: str) -> bool:
    try:
        fn = scalar_function(name)
    except Exception:  # noqa: BLE001 - unknown here: leave it to the executor
        return False
    return fn.row_independent and name.lower() not in _VOLATILE


def _literal_vec(lit: Literal) -> Vec:
    return constant(lit.type, lit.value, 1)


def _evaluate(e: Expr) -> object:
    """The physical value of a one-row evaluation of `e` (all operands literals), None = NULL;
    mirrors executor/compile.py node by node."""
    res: Vec
    if isinstance(e, Cast):
        assert isinstance(e.arg, Literal)
        res = cast_vec(_literal_vec(e.arg), e.type)
    elif isinstance(e, Arithmetic):
        assert isinstance(e.left, Literal) and isinstance(e.right, Literal)
        res = widen(arithmetic(e.op, _literal_vec(e.left), _literal_vec(e.right), e.type))
    elif isinstance(e, Negate):
        assert isinstance(e.arg, Literal)
        res = widen(negate(_literal_vec(e.arg), e.type))
    else:
        assert isinstance(e, Call)
        fn = scalar_function(e.name)
        vals = [_literal_vec(a) for a in e.args]  # type: ignore[arg-type]
        out = fn.impl(vals, EvalEnv(1))
        valid = out.validity
        if fn.propagate_nulls:
            valid = and_valid(valid, *(v.validity for v in vals))
        if e.type.kind in (TypeKind.DATE, TypeKind.DATETIME):
            # a date outside 0000..9999 is NULL (the executor's `_date_range_null`)
            valid = and_valid(valid, in_date_range(e.type, out.data))
        res = Vec(e.type, out.data, valid)
    if len(res.data) != 1:
        raise ValueError("constant evaluation gave no single value")
    if res.validity is not None and not bool(res.validity[0]):
        return None
    value = res.data[0]
    return value.item() if hasattr(value, "item") else value
