"""Rule push_down_join_predicates: split join conditions, push filters into join inputs.

Top-down over the plan:
- Filter(Join): each conjunct that reads only one side moves below the join when that side is
  not null-supplied (left side of LEFT / semi / anti / mark joins, right side of RIGHT joins,
  both sides of INNER / CROSS); for INNER / CROSS the remaining conjuncts join the condition (a
  CROSS join with a condition becomes INNER). Other conjuncts stay above.
- Join condition: single-side conjuncts are pushed to the side that is filtered by the ON
  clause (the null-supplying side of an outer join, the build side of a semi join; both sides
  of an INNER join); `l = r` conjuncts between the sides become hash keys; the rest is the
  residual evaluated on candidate pairs. FULL joins push nothing.
- An OR joined into an INNER / CROSS condition whose every branch constrains one side alone
  also yields that side's weaker OR as a filter pushed below (the original stays):
  `(p.b = 1 AND l.q < 5) OR (p.b = 2 AND l.q > 9)` filters l with `l.q < 5 OR l.q > 9`.
- Before that, a disjunction whose every branch shares conjuncts is factored:
  `(a AND b) OR (a AND c)` -> `a AND (b OR c)` (Kleene logic keeps this exact), so a join key
  repeated in each OR branch (TPC-H Q19) becomes a hash key instead of a cross-join residual.
- Filter(Project) where the referenced outputs are plain column renames: the filter moves
  below the project (so filters reach the scans under the renaming projects of a join tree).
Upstream: Doris Nereids `PushDownFilterThroughJoin`, `FindHashConditionForJoin`,
`ExtractCommonFactorRule`.
"""

from __future__ import annotations

from dataclasses import replace

from planner.logical import (
    LogicalFilter,
    LogicalGenerate,
    LogicalJoin,
    LogicalPlan,
    LogicalProject,
)
from sql.binder.expressions import (
    ColumnRef,
    Comparison,
    Expr,
    Or,
    column_names,
    conjuncts,
    make_and,
)

_LEFT_PRESERVED = ("inner", "cross", "left", "left_semi", "left_anti", "mark")
_RIGHT_PRESERVED = ("inner", "cross", "right", "right_semi", "right_anti")
# which side the ON clause may filter before the join
_ON_PUSH_LEFT = ("inner", "cross", "right", "right_semi", "right_anti")
_ON_PUSH_RIGHT = ("inner", "cross", "left", "left_semi", "left_anti", "mark")


def push_down_join_predicates(plan: LogicalPlan, ctx: object) -> LogicalPlan:
    return _visit(plan)


def _filter(plan: LogicalPlan, parts: list[Expr]) -> LogicalPlan:
    pred = make_and(parts)
    return plan if pred is None else LogicalFilter(plan, pred)


def _disjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Or):
        return [d for a in expr.args for d in _disjuncts(a)]
    return [expr]


def _factor_or(parts: list[Expr]) -> list[Expr]:
    """Pull the conjuncts common to every branch of an OR conjunct out of it."""
    out: list[Expr] = []
    for p in parts:
        branches = [conjuncts(b) for b in _disjuncts(p)] if isinstance(p, Or) else []
        common = [c for c in branches[0] if all(c in b for b in branches[1:])] if branches else []
        if not common:
            out.append(p)
            continue
        out.extend(common)
        rest = [[c for c in b if c not in common] for b in branches]
        if all(rest):  # a branch reduced to nothing makes the remaining OR true
            out.append(Or(tuple(make_and(r) for r in rest)))  # type: ignore[misc]
    return out


def _visit(plan: LogicalPlan) -> LogicalPlan:
    if isinstance(plan, LogicalFilter):
        child = plan.child
        parts = conjuncts(plan.predicate)
        if any(isinstance(p, Or) for p in parts):
            parts = _factor_or(parts)
            factored = make_and(parts)
            assert factored is not None  # a filter's predicate has at least one conjunct
            plan = LogicalFilter(child, factored)
        if isinstance(child, LogicalFilter):
            merged = make_and(conjuncts(child.predicate) + parts)
            assert merged is not None
            return _visit(LogicalFilter(child.child, merged))
        if isinstance(child, LogicalJoin):
            join, above = _push_into_join(child, parts)
            return _filter(_visit(join), above)
        if isinstance(child, LogicalProject):
            renames = {n: e for n, e in child.exprs if isinstance(e, ColumnRef)}
            down = [p for p in parts if column_names(p) <= renames.keys()]
            if down:
                keep = [p for p in parts if p not in down]
                moved = [p.transform(lambda x: renames.get(x.name)
                                     if isinstance(x, ColumnRef) else None) for p in down]
                inner = _visit(_filter(child.child, moved))
                return _filter(LogicalProject(inner, child.exprs), keep)
        if isinstance(child, LogicalGenerate):  # LATERAL VIEW: filters on its input go below
            down = [p for p in parts if column_names(p) <= set(child.child.names)]
            if down:
                keep = [p for p in parts if p not in down]
                inner = _visit(_filter(child.child, down))
                return _filter(LogicalGenerate(inner, child.function, child.args,
                                               child.gen_names, child.gen_types), keep)
        return LogicalFilter(_visit(child), plan.predicate)
    if isinstance(plan, LogicalJoin):
        return _split(plan)
    children = tuple(_visit(c) for c in plan.children)
    return plan.with_children(*children) if children else plan


def _side_implication(p: Expr, names: set[str]) -> list[Expr]:
    """For `(a1 AND b1) OR (a2 AND b2)` where each branch has conjuncts on one side only
    (a1, a2), the weaker `a1 OR a2` that side can filter with before the join; the original
    stays in the join condition. Upstream: Doris `ExtractSingleTableExpressionFromDisjunction`
    (TPC-H Q19)."""
    if not isinstance(p, Or):
        return []
    parts = []
    for branch in _disjuncts(p):
        mine = [c for c in conjuncts(branch) if column_names(c) and column_names(c) <= names]
        if not mine:
            return []
        parts.append(make_and(mine))
    if all(column_names(c) <= names for c in conjuncts(p)):
        return []  # the whole OR is single-sided: it is pushed as is
    return [Or(tuple(parts))]  # type: ignore[arg-type]


def _push_into_join(join: LogicalJoin, parts: list[Expr]) -> tuple[LogicalJoin, list[Expr]]:
    left_names, right_names = set(join.left.names), set(join.right.names)
    to_left: list[Expr] = []
    to_right: list[Expr] = []
    to_cond: list[Expr] = []
    above: list[Expr] = []
    for p in parts:
        refs = column_names(p)
        if refs and refs <= left_names and join.kind in _LEFT_PRESERVED:
            to_left.append(p)
        elif refs and refs <= right_names and join.kind in _RIGHT_PRESERVED:
            to_right.append(p)
        elif join.kind in ("inner", "cross") and refs <= left_names | right_names:
            to_cond.append(p)
        else:
            above.append(p)
    if join.kind in ("inner", "cross"):
        for p in to_cond:
            to_left.extend(_side_implication(p, left_names))
            to_right.extend(_side_implication(p, right_names))
    kind = join.kind
    cond = join.condition
    if to_cond:
        cond = make_and(conjuncts(cond) + to_cond)
        if kind == "cross":
            kind = "inner"
    new = replace(join, left=_filter(join.left, to_left), right=_filter(join.right, to_right),
                  kind=kind, condition=cond)
    return new, above


def split_join(join: LogicalJoin) -> LogicalPlan:
    """Split a join's ON condition into pushed-down filters, hash keys and the residual, for a
    join whose inputs this rule has already seen (reorder_joins' new joins over split
    subtrees): an input is visited again only when a filter is pushed into it. Revisiting made
    reordering an n-way cluster re-split the whole tree built so far at each of its n steps."""
    return _split(join, revisit=False)


def _split(join: LogicalJoin, revisit: bool = True) -> LogicalPlan:
    left_names, right_names = set(join.left.names), set(join.right.names)
    to_left: list[Expr] = []
    to_right: list[Expr] = []
    lkeys, rkeys = list(join.left_keys), list(join.right_keys)
    residual = conjuncts(join.residual)
    kind = join.kind
    for p in conjuncts(join.condition):
        refs = column_names(p)
        if refs and refs <= left_names and kind in _ON_PUSH_LEFT:
            to_left.append(p)
            continue
        if refs and refs <= right_names and kind in _ON_PUSH_RIGHT:
            to_right.append(p)
            continue
        if isinstance(p, Comparison) and p.op == "=" and p.left.type == p.right.type:
            a, b = column_names(p.left), column_names(p.right)
            if a and b and a <= left_names and b <= right_names:
                lkeys.append(p.left)
                rkeys.append(p.right)
                continue
            if a and b and a <= right_names and b <= left_names:
                lkeys.append(p.right)
                rkeys.append(p.left)
                continue
        residual.append(p)
    if kind == "cross" and (lkeys or residual):
        kind = "inner"
    left = _visit(_filter(join.left, to_left)) if revisit or to_left else join.left
    right = _visit(_filter(join.right, to_right)) if revisit or to_right else join.right
    return replace(join, left=left, right=right, kind=kind, condition=None,
                   left_keys=tuple(lkeys), right_keys=tuple(rkeys),
                   residual=make_and(residual))
