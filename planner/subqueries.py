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
- A scalar subquery compared in a WHERE conjunct that is NULL whenever the subquery is (a
  comparison through arithmetic / casts) joins INNER instead of LEFT, when its value over no
  rows is NULL too (no COUNT): reorderable with the other inner joins, and its build side's
  keys reach the aggregate's scan as a runtime filter (TPC-H Q17, Q20; uncorrelated: a
  nested-loop inner join, Q22). MIN / MAX over exactly a relation the outer query inner-joins
  becomes a window over that relation (Q15: the view's aggregate is computed once).
Other shapes raise "... is not supported yet".
Upstream: Doris Nereids `SubqueryToApply` + `UnCorrelatedApplyToJoin` / `InApplyToJoin` /
`ExistsApplyToJoin` / `ScalarApplyToJoin` + `EliminateOuterJoin`,
`AggScalarSubQueryToWindowFunction`; DuckDB mark joins and `FlattenDependentJoins`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from planner.logical import (
    LogicalAggregate,
    LogicalAssertOneRow,
    LogicalFilter,
    LogicalJoin,
    LogicalLimit,
    LogicalPlan,
    LogicalProject,
    LogicalWindow,
)
from sql.binder.bind_expressions import coerce, not_supported
from sql.binder.bind_window import WHOLE as WHOLE_PARTITION
from sql.binder.expressions import (
    AggregateCall,
    Arithmetic,
    Case,
    Cast,
    ColumnRef,
    Comparison,
    Expr,
    IsNull,
    Literal,
    Negate,
    Not,
    OuterRef,
    SubqueryExpr,
    WindowCall,
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
    """Filter `plan` by `where`, turning subquery conjuncts into semi / anti / mark joins and
    null-rejected scalar subqueries into inner joins.

    Order (all conjuncts are ANDed, so any order gives the same rows): uncorrelated scalar
    comparisons first (a one-row nested-loop filter that shrinks the probe side early, Doris'
    Q22 shape), then IN / EXISTS semi / anti joins, then correlated scalar aggregates (their
    join with a grouped aggregate sees the rows the semi joins kept, Doris' Q20 shape)."""
    rest: list[Expr] = []
    late: list[tuple[Expr, SubqueryExpr]] = []
    for c in conjuncts(where):
        scalar = _null_rejected_scalar(c)
        if scalar is not None and not _inner_parts(scalar)[2]:
            plan = _filter_on_scalar(plan, c, scalar, catalog)
        elif scalar is not None:
            late.append((c, scalar))
        else:
            rest.append(c)
    early, rest = rest, []
    for c in early:
        neg = isinstance(c, Not) and isinstance(c.arg, SubqueryExpr) and c.arg.kind == "exists"
        s = c.arg if neg else c  # type: ignore[attr-defined]
        if isinstance(s, SubqueryExpr) and s.kind in ("in", "exists") and not _has_subquery(
                s.arg):
            plan = _semi_join(plan, s, "left_anti" if neg else "left_semi", catalog)
        else:
            rest.append(c)
    for c, scalar in late:
        plan = _filter_on_scalar(plan, c, scalar, catalog)
    pred = make_and(rest)
    if pred is None:
        return plan
    if _has_subquery(pred):
        plan, (pred,) = attach_subqueries(plan, [pred], catalog)
        # the mark columns stay in the output; the select list's Project drops them
        return LogicalFilter(plan, pred)
    return LogicalFilter(plan, pred)


# ---- scalar subqueries under a null-rejecting WHERE conjunct -> INNER joins ----------------
# Aggregates whose value over no rows is NULL (COUNT's is 0: the "count bug" needs an outer join).
_NULL_ON_EMPTY = frozenset({"sum", "avg", "min", "max", "any_value", "stddev", "stddev_pop",
                            "stddev_samp", "variance", "var_pop", "var_samp"})


def _strict_in(e: Expr, sid: int) -> bool:
    """True when `e` is NULL whenever subquery `sid`'s value is (null-propagating path)."""
    if isinstance(e, SubqueryExpr):
        return e.sid == sid
    if isinstance(e, Comparison):
        return e.op != "<=>" and (_strict_in(e.left, sid) or _strict_in(e.right, sid))
    if isinstance(e, Arithmetic):
        return _strict_in(e.left, sid) or _strict_in(e.right, sid)
    if isinstance(e, (Cast, Negate)):
        return _strict_in(e.arg, sid)
    return False


def _null_rejected_scalar(c: Expr) -> SubqueryExpr | None:
    """The scalar subquery of WHERE conjunct `c` when `c` is a comparison that is NULL (so
    rejects the row) whenever the subquery's value is NULL: then a scalar subquery that finds
    no row (LEFT join's NULL) and one that is not joined at all (INNER join) keep the same rows,
    as in Doris' EliminateOuterJoin after ScalarApplyToJoin."""
    if not isinstance(c, Comparison) or c.op == "<=>":
        return None
    found = [x for x in c.walk() if isinstance(x, SubqueryExpr)]
    if len(found) != 1 or found[0].kind != "scalar" or not isinstance(found[0].query,
                                                                        BoundSelect):
        return None
    return found[0] if _strict_in(c, found[0].sid) else None


def _filter_on_scalar(plan: LogicalPlan, c: Expr, s: SubqueryExpr,
                      catalog: CatalogView) -> LogicalPlan:
    """`plan` filtered by conjunct `c` whose scalar subquery `s` is joined with an INNER join
    where that is exact (see _null_rejected_scalar), else with the usual LEFT join."""
    q, local, corr = _inner_parts(s)
    joined: tuple[LogicalPlan, Expr] | None
    if not corr:
        sub = _build(s.query, catalog)
        shared = _aggregate_over_outer_relation(plan, sub, q, s.sid)
        if shared is not None:
            new_plan, ref = shared
            return LogicalFilter(new_plan, c.transform(
                lambda x: ref if isinstance(x, SubqueryExpr) and x.sid == s.sid else None))
        right = LogicalAssertOneRow(LogicalProject(
            sub, ((f"__s{s.sid}", ColumnRef(sub.names[0], sub.types[0])),)))
        # a CROSS join: the filter above becomes its condition (push_down_join_predicates)
        joined = LogicalJoin(plan, right, "cross"), ColumnRef(f"__s{s.sid}", s.type)
    else:
        assert q is not None
        joined = _correlated_scalar(plan, s, q, local, corr, catalog, inner=True)
    new_plan, ref = joined
    return LogicalFilter(new_plan, c.transform(
        lambda x: ref if isinstance(x, SubqueryExpr) and x.sid == s.sid else None))


def _has_subquery(e: Expr | None) -> bool:
    return e is not None and any(isinstance(x, SubqueryExpr) for x in e.walk())


def attach_subqueries(plan: LogicalPlan, exprs: list[Expr], catalog: CatalogView
                      ) -> tuple[LogicalPlan, list[Expr]]:
    """Join every subquery in `exprs` onto `plan`; returns the plan and the rewritten exprs.
    The plan's output gains the mark / scalar columns the rewritten expressions read."""
    out: list[Expr] = []
    for e in exprs:
        found = [x for x in e.walk() if isinstance(x, SubqueryExpr)]
        repl: dict[int, Expr] = {}
        for s in found:
            if s.sid in repl:
                continue
            if _has_subquery(s.arg):
                raise not_supported("nested subquery in IN operand")
            plan, repl[s.sid] = _attach_one(plan, s, catalog)
        out.append(e.transform(_replace_subqueries(repl)))
    return plan, out


def _replace_subqueries(repl: dict[int, Expr]) -> Callable[[Expr], Expr | None]:
    return lambda x: repl[x.sid] if isinstance(x, SubqueryExpr) else None


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
        one_row: LogicalPlan = LogicalAssertOneRow(LogicalProject(
            sub, ((f"__s{s.sid}", ColumnRef(sub.names[0], sub.types[0])),)))
        return LogicalJoin(plan, one_row, "left"), ColumnRef(f"__s{s.sid}", s.type)
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
                       corr: list[Expr], catalog: CatalogView, inner: bool = False
                       ) -> tuple[LogicalPlan, Expr]:
    """Doris' ScalarApplyToJoin: GROUP BY the inner sides of the correlation equalities, join
    on them. `inner`: the caller's conjunct rejects NULL, so when the select item is NULL over
    an empty group too (no COUNT) the join is INNER (EliminateOuterJoin): reorderable, and its
    build side's keys become a runtime filter through the aggregate into its scan."""
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
    cond: list[Expr] = [Comparison("=", o, ColumnRef(n, k.type))
                        for o, (n, k) in zip(outer_keys, keys)]
    _check_refs(cond, plan, right)
    if inner and _null_over_empty(value, q):
        return LogicalJoin(plan, right, "inner", make_and(cond)), ColumnRef(name, s.type)
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


def _null_over_empty(value: Expr, q: BoundSelect) -> bool:
    """True when select item `value` is NULL for an empty group: it propagates NULL from an
    aggregate that is NULL over no rows (SUM / AVG / MIN / MAX ..., never COUNT)."""
    aggs = dict(q.aggregates)

    def strict(e: Expr) -> bool:
        if isinstance(e, ColumnRef):
            a = aggs.get(e.name)
            return isinstance(a, AggregateCall) and a.name in _NULL_ON_EMPTY
        if isinstance(e, Arithmetic):
            return strict(e.left) or strict(e.right)
        if isinstance(e, (Cast, Negate)):
            return strict(e.arg)
        return False

    return strict(value)


# ---- an uncorrelated MIN / MAX over a relation the outer query also joins -> a window ----
_WINDOWABLE = ("min", "max")


def _aggregate_over_outer_relation(plan: LogicalPlan, sub: LogicalPlan, q: BoundSelect | None,
                                   sid: int) -> tuple[LogicalPlan, Expr] | None:
    """TPC-H Q15: `FROM supplier, revenue0 WHERE total_revenue = (SELECT max(total_revenue)
    FROM revenue0)`. When the subquery is MIN / MAX over exactly a relation (same plan) that the
    outer query inner-joins, the aggregate is computed as a window over that relation's one
    plan (`max(..) OVER ()`, every row of it a peer) instead of by planning the relation a
    second time: the view's aggregate runs once. Exact: the outer rows all come from that
    relation, so when it is empty there is nothing to compare (the subquery's NULL), and
    otherwise the window sees the same rows the subquery would.
    Returns the outer plan with the window column added and the expression replacing the
    subquery, or None when the shape does not match.
    Upstream: Doris Nereids `AggScalarSubQueryToWindowFunction` (here the uncorrelated case;
    Doris also shares the CTE between its two consumers)."""
    if q is None or q.where is not None or q.group_by or q.having is not None or q.distinct \
            or q.order_by or q.limit is not None or q.offset or q.windows:
        return None
    if not (isinstance(sub, LogicalProject) and len(sub.exprs) == 1
            and isinstance(sub.child, LogicalAggregate) and not sub.child.group_by
            and isinstance(sub.child.child, LogicalProject)):
        return None
    agg, renames = sub.child, sub.child.child
    source = dict(renames.exprs)
    windows: list[tuple[str, WindowCall]] = []
    by_agg: dict[str, ColumnRef] = {}
    for i, (name, call) in enumerate(agg.aggregates):
        if call.name not in _WINDOWABLE or call.distinct or len(call.args) != 1:
            return None
        arg = call.args[0]
        if not isinstance(arg, ColumnRef) or not isinstance(source.get(arg.name), ColumnRef):
            return None
        inner = source[arg.name]
        assert isinstance(inner, ColumnRef)
        wname = f"__w{sid}_{i}"
        windows.append((wname, WindowCall(call.name, (ColumnRef(inner.name, inner.type),), (),
                                          (), WHOLE_PARTITION, call.type)))
        by_agg[name] = ColumnRef(wname, call.type)
    value = sub.exprs[0][1]
    if not column_names(value) <= set(by_agg):
        return None
    done: list[bool] = []

    def rewrite(node: LogicalPlan) -> LogicalPlan:
        if done:
            return node
        if isinstance(node, LogicalProject) and node.child == renames.child:
            done.append(True)
            window = LogicalWindow(node.child, tuple(windows))
            return LogicalProject(window, node.exprs + tuple(
                (n, ColumnRef(n, w.type)) for n, w in windows))
        if isinstance(node, LogicalJoin) and node.kind in ("inner", "cross"):
            return node.with_children(*(rewrite(c) for c in node.children))
        if isinstance(node, (LogicalProject, LogicalFilter)):
            return node.with_children(rewrite(node.child))
        return node

    new_plan = rewrite(plan)
    if not done:
        return None
    return new_plan, value.transform(lambda x: by_agg.get(x.name) if isinstance(
        x, ColumnRef) else None)
