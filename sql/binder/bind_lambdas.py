"""Binding of higher-order ARRAY functions: `f(x -> body, arr)` / `f((x, y) -> body, a, b)`.

Each lambda becomes `array_map(LambdaExpr, a1, .., aN, o1, .., oM)`: the arrays, then every
outer expression the body references (columns of the query, or an enclosing lambda's
variables). The body is bound once against a synthetic batch whose columns are the lambda
variables (typed from the array element types) and the outer expressions, under names private
to this lambda, so the planner never sees the body's references: they are not children of the
plan's expressions, the outer expressions are ordinary arguments (pruned, renamed and pushed
like any other). `executor/lambdas.py` evaluates the body once per batch over the flattened
elements with the outer values repeated per element.

The other lambda functions are rewritten as Doris' Nereids rewrites them, onto `array_map` and
their array forms in `sql/functions/lambdas.py` (array_filter(l, a) = array_filter(a,
array_map(l, a)), array_first(l, a) = element_at(array_filter(..), 1), ...).
Errors keep Doris' wording: "lambda <l> arguments' size is not equal parameters' size",
"lambda argument must be array but is <expr>". Upstream: Nereids `Lambda.makeArguments`,
`ExpressionAnalyzer.bindHighOrderFunction`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from sql.binder.expressions import Call, ColumnRef, Expr, Literal
from sql.errors import DorisError
from sql.functions.lambdas import LAMBDA_FUNCTIONS
from storage.types import BIGINT, NULL, DataType, TypeKind, array_of

if TYPE_CHECKING:
    from sql.binder.bind_expressions import ExpressionBinder

@dataclass(frozen=True, slots=True)
class LambdaBody:
    """The bound body and the batch column names it reads: one per lambda variable, then one
    per outer argument. Not an `Expr`, so tree walks of the plan do not enter the body."""

    expr: Expr
    variables: tuple[str, ...]
    outer: tuple[str, ...]
    text: str  # the lambda as written, for EXPLAIN and errors


@dataclass(frozen=True, slots=True)
class LambdaExpr(Expr):
    """The first argument of `array_map`: the lambda, typed by its body."""

    body: LambdaBody
    type: DataType

    def sql(self) -> str:
        return self.body.text


def _lambda_text(node: exp.Lambda) -> str:
    names = [p.name for p in node.expressions]
    params = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
    return f"{params} -> {node.this.sql(dialect='mysql')}"


def bind_lambda_call(binder: ExpressionBinder, name: str,
                     arg_nodes: list[exp.Expression | None]) -> Expr:
    """`name(lambda, arrays..)` bound (Doris' rewrite onto array_map and the array forms)."""
    name = name.lower()
    if name not in LAMBDA_FUNCTIONS or not isinstance(arg_nodes[0], exp.Lambda):
        raise DorisError(f"Can not found function '{name.upper()}'")
    if any(isinstance(a, exp.Lambda) for a in arg_nodes[1:]):
        raise DorisError(f"lambda must be the first argument of {name}")
    lam = arg_nodes[0]
    arrays = [binder.bind(a) if a is not None else Literal(None, NULL) for a in arg_nodes[1:]]
    mapped = bind_array_map(binder, lam, arrays)
    first = arrays[0]
    if name == "array_map":
        return mapped
    if name in ("array_filter", "array_sortby"):
        return binder.call_bound(name, [first, mapped])
    if name in ("array_first", "array_last"):
        kept = binder.call_bound("array_filter", [first, mapped])
        return binder.call_bound("element_at", [
            kept, Literal(1 if name == "array_first" else -1, BIGINT)])
    return binder.call_bound(name, [mapped])


def bind_array_map(binder: ExpressionBinder, lam: exp.Lambda, arrays: list[Expr]) -> Expr:
    params = [p.name for p in lam.expressions]
    text = _lambda_text(lam)
    if len(params) != len(arrays):
        raise DorisError(f"lambda {text} arguments' size is not equal parameters' size")
    for a in arrays:
        if a.type.kind not in (TypeKind.ARRAY, TypeKind.NULL):
            raise DorisError(f"lambda argument must be array but is {a.sql()}")
    if len({p.lower() for p in params}) != len(params):
        raise DorisError(f"lambda {text} has duplicate argument names")
    # each body runs over a batch of its own (its variables, then its outer arguments), so the
    # names only need to be unique within one lambda; fixed names keep equal lambdas equal
    # (a GROUP BY expression and the same SELECT expression bind to one Call)
    variables = {p.lower(): ColumnRef(f"__lambda_arg{i}", _element_type(a.type))
                 for i, (p, a) in enumerate(zip(params, arrays))}
    outer_exprs: list[Expr] = []
    outer_refs: list[ColumnRef] = []
    body = _body_binder(binder, variables, outer_exprs, outer_refs).bind(lam.this)
    lambda_body = LambdaBody(body, tuple(v.name for v in variables.values()),
                             tuple(r.name for r in outer_refs), text)
    args: tuple[Expr, ...] = (LambdaExpr(lambda_body, body.type), *arrays, *outer_exprs)
    return Call("array_map", args, array_of(body.type))


def _element_type(t: DataType) -> DataType:
    return t.children[0] if t.kind is TypeKind.ARRAY else NULL


def _body_binder(parent: ExpressionBinder, variables: dict[str, ColumnRef],
                 outer_exprs: list[Expr], outer_refs: list[ColumnRef]) -> ExpressionBinder:
    """A binder for one lambda body: lambda variables resolve to their batch columns; any other
    name resolves in the enclosing binder and becomes an outer argument (appended to
    `outer_exprs`, read through the column of the same position in `outer_refs`)."""
    from sql.binder.bind_expressions import ExpressionBinder

    class LambdaBodyBinder(ExpressionBinder):
        def __init__(self) -> None:
            super().__init__(self._outer_column, parent._session, parent._now, False,
                             parent._clause)

        def bind(self, node: exp.Expression) -> Expr:
            if isinstance(node, exp.Identifier):
                return self.variable(node.name)
            return super().bind(node)

        def variable(self, name: str) -> Expr:
            ref = variables.get(name.lower())
            if ref is not None:
                return ref
            # an enclosing lambda's variable (sqlglot leaves them as identifiers)
            enclosing = getattr(parent, "variable", None)
            if enclosing is None:
                raise DorisError(f"Unknown column '{name}' in 'table list'")
            return self._outer(enclosing(name))

        def _outer_column(self, node: exp.Column) -> Expr:
            if not node.table and node.name.lower() in variables:
                return variables[node.name.lower()]
            return self._outer(parent._column(node))

        def _outer(self, e: Expr) -> Expr:
            for expr, ref in zip(outer_exprs, outer_refs):
                if expr == e:
                    return ref
            ref = ColumnRef(f"__lambda_outer{len(outer_refs)}", e.type)
            outer_exprs.append(e)
            outer_refs.append(ref)
            return ref

    return LambdaBodyBinder()
