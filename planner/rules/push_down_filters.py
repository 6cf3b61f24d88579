"""Rule push_down_filters: move WHERE conjuncts into the scan, and hand simple ones to storage.

Filter(Filter(x)) merges; Filter(Scan) becomes Scan(filters += conjuncts). Conjuncts of the form
`column op constant`, `column IN (constants)` and `column IS [NOT] NULL` on an uncast column are
also recorded as `ColumnPredicate`s so storage can prune with zone maps / indexes; storage
evaluates them exactly, so the scan operator does not evaluate them again. An OR conjunct (with
nested AND / OR) whose every leaf is such a test becomes a `Disjunction` (disjunctive normal
form, at most MAX_DISJUNCTION_BRANCHES branches, else it stays a plain filter): storage
evaluates it exactly too, and bitmap indexes answer it (issue 14). DNF keeps SQL's three-valued
result (Kleene logic distributes), and a WHERE conjunct keeps only TRUE rows.
Upstream: Doris Nereids `PushDownFilterThroughProject` / `PushPredicateIntoScan` (simplified).
"""

from __future__ import annotations

from dataclasses import replace

from planner.logical import LogicalFilter, LogicalPlan, LogicalScan
from sql.binder.expressions import (
    SWAPPED_OP,
    And,
    ColumnRef,
    Comparison,
    Expr,
    InList,
    IsNull,
    Literal,
    Not,
    Or,
    conjuncts,
)
from storage.predicates import Disjunction
from storage.reader import ColumnPredicate

MAX_DISJUNCTION_BRANCHES = 64


def storage_predicate(e: Expr) -> ColumnPredicate | None:
    """The storage form of a conjunct, or None if it is not a plain column-vs-constant test."""
    if isinstance(e, Comparison) and e.op != "<=>":
        left, right, op = e.left, e.right, e.op
        if isinstance(left, Literal) and isinstance(right, ColumnRef):
            left, right, op = right, left, SWAPPED_OP[op]
        if (isinstance(left, ColumnRef) and isinstance(right, Literal) and right.value is not None
                and right.type == left.type):
            return ColumnPredicate(left.name, op, (right.value,))
        return None
    if isinstance(e, InList) and isinstance(e.arg, ColumnRef):
        # NOT IN only without NULL constants (then it is never true; not pushed, still right)
        if all(isinstance(v, Literal) and v.value is not None and v.type == e.arg.type
               for v in e.values):
            return ColumnPredicate(e.arg.name, "not_in" if e.negated else "in",
                                   tuple(v.value for v in e.values))  # type: ignore[attr-defined]
        return None
    if isinstance(e, IsNull) and isinstance(e.arg, ColumnRef):
        return ColumnPredicate(e.arg.name, "is_not_null" if e.negated else "is_null")
    if isinstance(e, Not):
        # NOT of a column test: the opposite test. Under three-valued logic both are unknown
        # (so not true) for a NULL value, which is also what storage's opposite test gives.
        inner = storage_predicate(e.arg)
        if inner is not None and inner.op in _OPPOSITE:
            return ColumnPredicate(inner.column, _OPPOSITE[inner.op], inner.values)
    return None


_OPPOSITE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "in": "not_in",
             "not_in": "in", "is_null": "is_not_null", "is_not_null": "is_null"}


def storage_disjunction(e: Expr) -> Disjunction | None:
    """The storage form of an OR conjunct (see the module doc), or None."""
    if not isinstance(e, Or):
        return None
    branches = _dnf(e)
    if branches is None:
        return None
    return Disjunction(tuple(tuple(b) for b in branches))


def _dnf(e: Expr) -> list[list[ColumnPredicate]] | None:
    """`e` as an OR of ANDs of storage predicates, or None (a leaf without a storage form, or
    more than MAX_DISJUNCTION_BRANCHES branches)."""
    if isinstance(e, Or):
        out: list[list[ColumnPredicate]] = []
        for a in e.args:
            sub = _dnf(a)
            if sub is None:
                return None
            out.extend(sub)
            if len(out) > MAX_DISJUNCTION_BRANCHES:
                return None
        return out
    if isinstance(e, And):
        acc: list[list[ColumnPredicate]] = [[]]
        for a in e.args:
            sub = _dnf(a)
            if sub is None or len(acc) * len(sub) > MAX_DISJUNCTION_BRANCHES:
                return None
            acc = [x + y for x in acc for y in sub]
        return acc
    p = storage_predicate(e)
    return None if p is None else [[p]]


def or_to_in(e: Expr) -> Expr:
    """`c = 1 OR c = 2 OR c IN (3, 4)` -> `c IN (1, 2, 3, 4)`: the same three-valued result,
    and a form storage evaluates (and indexes prune with). Upstream: Doris `OrToIn`."""
    if not isinstance(e, Or):
        return e
    column: ColumnRef | None = None
    values: list[Expr] = []
    for d in e.args:
        if isinstance(d, Comparison) and d.op == "=":
            col, lit = (d.left, d.right) if isinstance(d.right, Literal) else (d.right, d.left)
            more = [lit]
        elif isinstance(d, InList) and not d.negated:
            col, more = d.arg, list(d.values)
        else:
            return e
        if not isinstance(col, ColumnRef) or (column is not None and col != column):
            return e
        if not all(isinstance(v, Literal) and v.value is not None and v.type == col.type
                   for v in more):
            return e
        column = col
        values.extend(v for v in more if v not in values)
    assert column is not None
    return InList(column, tuple(values))


def push_down_filters(plan: LogicalPlan, ctx: object) -> LogicalPlan:
    children = tuple(push_down_filters(c, ctx) for c in plan.children)
    if children:
        plan = plan.with_children(*children)
    if not isinstance(plan, LogicalFilter):
        return plan
    child = plan.child
    parts = conjuncts(plan.predicate)
    if isinstance(child, LogicalFilter):
        return LogicalFilter(child.child, _and(conjuncts(child.predicate) + parts))
    if isinstance(child, LogicalScan):
        parts = [or_to_in(p) for p in parts]
        filters = child.filters + tuple(p for p in parts if p not in child.filters)
        preds = tuple(p for p in (storage_predicate(f) for f in filters) if p is not None)
        disjunctions = tuple(d for d in (storage_disjunction(f) for f in filters)
                             if d is not None)
        return replace(child, filters=filters, predicates=preds, disjunctions=disjunctions)
    return plan


def _and(parts: list[Expr]) -> Expr:
    from sql.binder.expressions import make_and

    out = make_and(parts)
    assert out is not None
    return out
