"""Rule reorder_joins: choose the order of a cluster of INNER / CROSS joins from statistics.

The builder plans joins in FROM order, so `FROM lineorder, dates, customer, supplier, part
WHERE ...` (the Star Schema Benchmark's implicit joins) would join dates with customer before
either meets lineorder: a cross product. This rule flattens each maximal tree of inner and
cross joins without a hint into its inputs ("leaves") and its conjuncts (hash keys and
residuals as `push_down_join_predicates` split them), then rebuilds a left-deep tree greedily:
start from the leaf with the most estimated rows (the fact table), and repeatedly join the
connected leaf that gives the smallest estimated result; a leaf joins without a condition only
when no remaining leaf shares one. Within each join the smaller side becomes the build (right)
side. Every conjunct is attached to the lowest join that sees all its columns and split again
into hash keys / residual; a Project on top restores the cluster's original column order.

Joins with a hint (`JOIN [shuffle]` ...) and outer / semi / anti / mark joins are kept where
they are (their inputs are still reordered inside). Estimates come from planner/statistics.py.
Upstream: Doris Nereids join reorder (`JoinReorderContext`, DPhyp; here a greedy heuristic in
the style of DuckDB's fallback "greedy operator ordering").
"""

from __future__ import annotations

from planner.logical import LogicalJoin, LogicalPlan, LogicalProject
from planner.rules.push_down_join_predicates import split_join
from planner.statistics import base_rows, equi_join_rows, estimate_rows
from sql.binder.expressions import ColumnRef, Comparison, Expr, column_names, conjuncts, make_and

_REORDERABLE = ("inner", "cross")


def reorder_joins(plan: LogicalPlan, ctx: object) -> LogicalPlan:
    if _is_cluster_join(plan):
        return _reorder_cluster(plan)  # type: ignore[arg-type]
    children = tuple(reorder_joins(c, ctx) for c in plan.children)
    return plan.with_children(*children) if children else plan


def _is_cluster_join(plan: LogicalPlan) -> bool:
    return isinstance(plan, LogicalJoin) and plan.kind in _REORDERABLE and not plan.hint


def _flatten(plan: LogicalPlan, leaves: list[LogicalPlan], conds: list[Expr]) -> None:
    if _is_cluster_join(plan):
        assert isinstance(plan, LogicalJoin)
        _flatten(plan.left, leaves, conds)
        _flatten(plan.right, leaves, conds)
        conds.extend(Comparison("=", lk, rk) for lk, rk in zip(plan.left_keys, plan.right_keys))
        conds.extend(conjuncts(plan.residual))
        conds.extend(conjuncts(plan.condition))
        return
    leaves.append(reorder_joins(plan, None))


class _Leaf:
    __slots__ = ("base", "names", "plan", "rows")

    def __init__(self, plan: LogicalPlan) -> None:
        self.plan = plan
        self.names = frozenset(plan.names)
        self.rows = estimate_rows(plan)
        self.base = base_rows(plan)


def _reorder_cluster(root: LogicalJoin) -> LogicalPlan:
    plans: list[LogicalPlan] = []
    conds: list[Expr] = []
    _flatten(root, plans, conds)
    if len(plans) < 2:  # pragma: no cover - a join always has two inputs
        return root
    leaves = [_Leaf(p) for p in plans]
    cond_cols = [frozenset(column_names(c)) for c in conds]
    equi = [_equi_sides(c) for c in conds]

    # Start with the biggest input: it is the probe side all the way up.
    first = max(range(len(leaves)), key=lambda i: (leaves[i].rows, -i))
    current = leaves[first]
    tree: LogicalPlan = current.plan
    names = set(current.names)
    rows = current.rows
    base = current.base  # base rows of the side the next keys most likely come from
    remaining = [i for i in range(len(leaves)) if i != first]
    used = [False] * len(conds)
    while remaining:
        best: tuple[float, float, int] | None = None
        for i in remaining:
            leaf = leaves[i]
            connected = any(
                sides is not None and ((sides[0] <= names and sides[1] <= leaf.names)
                                       or (sides[1] <= names and sides[0] <= leaf.names))
                for sides in equi)
            if not connected:
                continue
            out = equi_join_rows(rows, base, leaf.rows, leaf.base)
            cand = (out, leaf.rows, i)
            if best is None or cand < best:
                best = cand
        if best is None:  # nothing shares a key: cross join the smallest input
            i = min(remaining, key=lambda j: (leaves[j].rows, j))
            out = rows * leaves[i].rows
        else:
            out, _, i = best
        leaf = leaves[i]
        remaining.remove(i)
        names |= leaf.names
        here = [k for k, cols in enumerate(cond_cols) if not used[k] and cols <= names]
        for k in here:
            used[k] = True
        cond = make_and([conds[k] for k in here])
        base = max(base, leaf.base)
        if leaf.rows > rows:  # build on the smaller side
            join = LogicalJoin(leaf.plan, tree, "inner" if cond is not None else "cross", cond)
        else:
            join = LogicalJoin(tree, leaf.plan, "inner" if cond is not None else "cross", cond)
        tree = split_join(join)
        rows = out
    leftover = [conds[k] for k in range(len(conds)) if not used[k]]
    if leftover:  # conjuncts reading no column of any input (constants): keep them at the top
        assert isinstance(tree, LogicalJoin)
        tree = split_join(LogicalJoin(tree.left, tree.right, tree.kind,
                                      make_and(conjuncts(_condition_of(tree)) + leftover)))
    if tree.names == root.names:
        return tree
    return LogicalProject(tree, tuple((n, ColumnRef(n, t)) for n, t in zip(root.names,
                                                                            root.types)))


def _condition_of(join: LogicalJoin) -> Expr | None:
    parts: list[Expr] = [Comparison("=", lk, rk)
                         for lk, rk in zip(join.left_keys, join.right_keys)]
    parts += conjuncts(join.residual) + conjuncts(join.condition)
    return make_and(parts)


def _equi_sides(cond: Expr) -> tuple[frozenset[str], frozenset[str]] | None:
    if isinstance(cond, Comparison) and cond.op == "=":
        a, b = frozenset(column_names(cond.left)), frozenset(column_names(cond.right))
        if a and b:
            return a, b
    return None
