"""Subqueries in expressions -> joins (decorrelation).

- A WHERE conjunct `x IN (SELECT ..)` / `EXISTS (..)` becomes a LEFT SEMI join, `NOT EXISTS` a
  LEFT ANTI join. Anywhere else (NOT IN, inside OR, in the select list) the subquery becomes a
  mark join whose BOOLEAN output column replaces it, which gives MySQL's null-aware semantics
  (`x NOT IN (.. NULL ..)` is NULL, so no row passes; `NULL IN (non-empty)` is NULL).
- A scalar subquery becomes a LEFT join with an AssertOneRow guard (no rows -> NULL).
- Correlated subqueries: conjuncts of the subquery's WHERE that reference the outer query move
  into the join condition (equalities become hash keys). A correlated scalar subquery must be
  an aggregate without GROUP BY correlated by equalities; it is grouped by the inner sides of
  those equalities and LEFT joined, with the "count bug" fixed (COUNT over no rows is 0).
Other shapes raise "... is not supported yet".
Upstream: Doris Nereids `SubqueryToApply` + `UnCorrelatedApplyToJoin` / `InApplyToJoin` /
`ExistsApplyToJoin` / `ScalarApplyToJoin`; DuckDB mark joins and `FlattenDependentJoins`.
"""

from __future__ import annotations

from dataclasses import replace

from planner.logical import (
    LogicalAggregate,
    LogicalAssertOneRow,
    LogicalFilter,
    LogicalJoin,
    LogicalLimit,
    LogicalPlan,
    LogicalProject,
)
from sql.binder.bind_expressions import coerce, not_supported
from sql.binder.expressions import (
    AggregateCall,
    Case,
    ColumnRef,
    Comparison,
    Expr,
    IsNull,
    Literal,
    Not,
    OuterRef,
    SubqueryExpr,
    column_names,
    conjuncts,
    make_and,
)
from sql.binder.select import BoundSelect, CatalogView
from storage.types import BIGINT, BOOLEAN


def _has_outer(e: Expr | None) -> bool:
    return e is not None and any(isinstance(x, OuterRef) for x in e.walk())


def _unouter(e: Expr) -> Expr:
    return e.transform(lambda x: ColumnRef(x.name, x.type) if isinstance(x, OuterRef) else None)


def plan_where(plan: LogicalPlan, where: Expr, catalog: CatalogView) -> LogicalPlan:
    """Filter `plan` by `where`, turning subquery conjuncts into semi / anti / mark joins."""
    rest: list[Expr] = []
    for c in conjuncts(where):
        neg = isinstance(c, Not) and isinstance(c.arg, SubqueryExpr) and c.arg.kind == "exists"
        s = c.arg if neg else c  # type: ignore[attr-defined]
        if isinstance(s, SubqueryExpr) and s.kind in ("in", "exists") and not _has_subquery(
                s.arg):
            plan = _semi_join(plan, s, "left_anti" if neg else "left_semi", catalog)
        else:
            rest.append(c)
    pred = make_and(rest)
    if pred is None:
        return plan
    if _has_subquery(pred):
        plan, (pred,) = attach_subqueries(plan, [pred], catalog)
        # the mark columns stay in the output; the select list's Project drops them
        return LogicalFilter(plan, pred)
    return LogicalFilter(plan, pred)


def _has_subquery(e: Expr | None) -> bool:
    return e is not None and any(isinstance(x, SubqueryExpr) for x in e.walk())


def attach_subqueries(plan: LogicalPlan, exprs: list[Expr], catalog: CatalogView
                      ) -> tuple[LogicalPlan, list[Expr]]:
    """Join every subquery in `exprs` onto `plan`; returns the plan and the rewritten exprs.
    The plan's output gains the mark / scalar columns the rewritten expressions read."""
    out: list[Expr] = []
    for e in exprs:
        found: list[SubqueryExpr] = []

        def collect(x: Expr) -> Expr | None:
            if isinstance(x, SubqueryExpr):
                found.append(x)
                return x
            return None

        e.transform(collect)
        repl: dict[int, Expr] = {}
        for s in found:
            if s.sid in repl:
                continue
            if _has_subquery(s.arg):
                raise not_supported("nested subquery in IN operand")
            plan, repl[s.sid] = _attach_one(plan, s, catalog)
        out.append(e.transform(lambda x: repl[x.sid] if isinstance(x, SubqueryExpr) else None))
    return plan, out


# ---- one subquery ------------------------------------------------------------------------
def _inner_parts(s: SubqueryExpr) -> tuple[BoundSelect | None, list[Expr], list[Expr]]:
    """(bound select, local WHERE conjuncts, correlated conjuncts); correlated refs outside
    WHERE are rejected."""
    q = s.query
    if not isinstance(q, BoundSelect):
        return None, [], []
    corr = [c for c in conjuncts(q.where) if _has_outer(c)]
    local = [c for c in conjuncts(q.where) if not _has_outer(c)]
    # EXISTS ignores its select list (and ORDER BY), so correlated refs there do not matter
    proj = [] if s.kind == "exists" else [e for _, e in q.projections]
    others = proj + [e for _, e in q.group_by] + [
        a for _, a in q.aggregates] + ([q.having] if q.having is not None else [])
    if any(_has_outer(e) for e in others):
        raise not_supported("correlated reference outside the subquery's WHERE clause")
    if corr and any(_has_subquery(c) for c in corr):
        raise not_supported("correlated nested subquery")
    return q, local, corr


def _build(q: object, catalog: CatalogView) -> LogicalPlan:
    from planner.builder import build_logical

    return build_logical(q, catalog)  # type: ignore[arg-type]


def _correlated_source(q: BoundSelect, local: list[Expr], catalog: CatalogView,
                       exists: bool = False) -> LogicalPlan:
    """The subquery's FROM + local WHERE, for correlated IN / EXISTS (no aggregation)."""
    limit_ok = q.limit is None or (exists and q.limit > 0 and not q.offset)
    if q.is_aggregate or not limit_ok or q.offset:
        raise not_supported("correlated IN / EXISTS subquery with aggregation or LIMIT")
    from planner.builder import build_source

    return build_source(replace(q, where=make_and(local)), catalog)


def _in_exists_side(s: SubqueryExpr, catalog: CatalogView, semi: bool
                    ) -> tuple[LogicalPlan, list[Expr]]:
    """The right side of an IN / EXISTS join and its correlation conditions.

    Correlated: the subquery's FROM + local WHERE, exposing its columns (and the IN value as
    `__v<sid>`), joined on the correlation conditions. Uncorrelated: the whole subquery; an
    EXISTS needs one row at most, except for a plain semi join which stops at the first match.
    """
    q, local, corr = _inner_parts(s)
    if corr:
        assert q is not None
        src = _correlated_source(q, local, catalog, s.kind == "exists")
        exprs: list[tuple[str, Expr]] = [(n, ColumnRef(n, t)) for n, t in
                                         zip(src.names, src.types)]
        if s.kind == "in":
            exprs.append((f"__v{s.sid}", coerce(q.projections[0][1], s.value_type)))
        return LogicalProject(src, tuple(exprs)), [_unouter(c) for c in corr]
    sub = _build(s.query, catalog)
    if s.kind == "in":
        value = coerce(ColumnRef(sub.names[0], sub.types[0]), s.value_type)
        return LogicalProject(sub, ((f"__v{s.sid}", value),)), []
    return (LogicalLimit(sub, 1) if semi else sub), []


def _semi_join(plan: LogicalPlan, s: SubqueryExpr, kind: str,
               catalog: CatalogView) -> LogicalPlan:
    right, cond = _in_exists_side(s, catalog, semi=kind == "left_semi")
    if s.kind == "in":
        assert s.arg is not None
        cond.append(Comparison("=", s.arg, ColumnRef(f"__v{s.sid}", s.value_type)))
    _check_refs(cond, plan, right)
    return LogicalJoin(plan, right, kind, make_and(cond))


def _check_refs(cond: list[Expr], left: LogicalPlan, right: LogicalPlan) -> None:
    names = set(left.names) | set(right.names)
    for c in cond:
        if not column_names(c) <= names:
            raise not_supported("correlated subquery reading a column that is not available "
                                "there (an outer query two levels up, or an ungrouped column)")


def _attach_one(plan: LogicalPlan, s: SubqueryExpr, catalog: CatalogView
                ) -> tuple[LogicalPlan, Expr]:
    q, local, corr = _inner_parts(s)
    if s.kind == "scalar":
        if corr:
            assert q is not None
            return _correlated_scalar(plan, s, q, local, corr, catalog)
        sub = _build(s.query, catalog)
        right = LogicalAssertOneRow(LogicalProject(
            sub, ((f"__s{s.sid}", ColumnRef(sub.names[0], sub.types[0])),)))
        return LogicalJoin(plan, right, "left"), ColumnRef(f"__s{s.sid}", s.type)
    mark = f"__m{s.sid}"
    right, cond = _in_exists_side(s, catalog, semi=True)
    mark_keys = None
    if s.kind == "in":
        assert s.arg is not None
        mark_keys = (s.arg, ColumnRef(f"__v{s.sid}", s.value_type))
    _check_refs(cond + list(mark_keys or ()), plan, right)
    join = LogicalJoin(plan, right, "mark", make_and(cond), mark_name=mark, mark_keys=mark_keys)
    return join, ColumnRef(mark, BOOLEAN)


def _correlated_scalar(plan: LogicalPlan, s: SubqueryExpr, q: BoundSelect, local: list[Expr],
                       corr: list[Expr], catalog: CatalogView) -> tuple[LogicalPlan, Expr]:
    if not q.is_aggregate or q.group_by or q.having is not None or q.distinct:
        raise not_supported("correlated scalar subquery without a single aggregate")
    inner_keys: list[Expr] = []
    outer_keys: list[Expr] = []
    for c in corr:
        if not (isinstance(c, Comparison) and c.op == "="):
            raise not_supported("non-equality correlation in a scalar subquery")
        a, b = c.left, c.right
        if _has_outer(a) and not _has_outer(b):
            a, b = b, a
        if _has_outer(a) or column_names(b):
            raise not_supported("correlation predicate mixing inner and outer columns")
        inner_keys.append(a)
        outer_keys.append(_unouter(b))
    from planner.builder import build_source

    base = build_source(replace(q, where=make_and(local)), catalog)
    keys = tuple((f"__k{s.sid}_{i}", k) for i, k in enumerate(inner_keys))
    agg = LogicalAggregate(base, keys, q.aggregates)
    value = q.projections[0][1]
    name = f"__s{s.sid}"
    probe = f"__p{s.sid}"
    right = LogicalProject(agg, ((name, value), (probe, Literal(1, BOOLEAN))) + tuple(
        (n, ColumnRef(n, k.type)) for n, k in keys))
    cond = [Comparison("=", o, ColumnRef(n, k.type)) for o, (n, k) in zip(outer_keys, keys)]
    _check_refs(cond, plan, right)
    join = LogicalJoin(plan, right, "left", make_and(cond))
    # "count bug": with no matching inner rows the aggregate sees an empty group, where COUNT
    # is 0 (not NULL); evaluate the select item over empty aggregates for unmatched rows.
    counts = {n for n, a in q.aggregates if isinstance(a, AggregateCall) and a.name == "count"}
    if not counts:
        return join, ColumnRef(name, s.type)
    def on_empty(x: Expr) -> Expr | None:
        if not isinstance(x, ColumnRef):
            return None
        return Literal(0, BIGINT) if x.name in counts else Literal(None, x.type)

    empty = value.transform(on_empty)
    fixed = Case(((IsNull(ColumnRef(probe, BOOLEAN)), coerce(empty, s.type)),),
                 ColumnRef(name, s.type), s.type)
    return join, fixed
