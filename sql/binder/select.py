"""Binder: a parsed SELECT (sqlglot AST) -> `BoundSelect`, names and types resolved.

Owns name resolution against the catalog (`CatalogView`, implemented by storage.catalog.Catalog),
the information_schema virtual tables, `*` expansion, GROUP BY / ORDER BY ordinals and aliases
(MySQL rules: GROUP BY and HAVING look at table columns before select aliases, ORDER BY at
aliases first), the only_full_group_by check, hidden ORDER BY columns, LIMIT/OFFSET, and the
result column labels. Expressions are bound by `sql.binder.bind_expressions`.
A bound aggregate query is split the way the plan will run it: `group_by` and `aggregates` are
over source columns, while `having`, `projections` and sort keys reference the aggregate's
outputs by name (`__g<i>` / `__a<i>`). Upstream: Doris Nereids `BindRelation`,
`BindExpression`, `NormalizeAggregate`, `CheckAnalysis`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable

from sqlglot import exp

from sql.binder import grouping_sets
from sql.binder.bind_expressions import ExpressionBinder, SessionLike, not_supported
from sql.binder.bind_from import (  # noqa: F401 - re-exported for callers of the binder
    FromBinder,
    _column_text,
    _int_clause,
    _limit_offset,
    _ordinal,
    coerce_bool,
    query_names,
    unknown_column,
)
from sql.binder.bind_window import extract_windows
from sql.binder.expressions import (
    AggregateCall,
    ColumnRef,
    Expr,
    WindowCall,
    contains_aggregate,
    contains_window,
)
from sql.binder.naming import generated_name, select_item_texts
from sql.binder.nested_nodes import check_comparable
from sql.binder.relations import (  # noqa: F401 - re-exported: the bound query types live there
    NO_FROM,
    BoundQuery,
    BoundSelect,
    CatalogView,
    RelColumn,
    Scope,
    SortKey,
    TableSource,
    ValuesSource,
)
from sql.errors import DorisError, ErrorCode
from storage import clock


def check_supported(select: exp.Select) -> None:
    for key, what in (("pivots", "PIVOT"), ("windows", "WINDOW"),
                      ("qualify", "QUALIFY"), ("into", "SELECT INTO"), ("sample", "TABLESAMPLE")):
        if select.args.get(key):
            raise not_supported(what)
    for j in select.args.get("joins") or []:
        if (j.method or "").upper() == "NATURAL":
            raise not_supported("NATURAL JOIN")


class SelectBinder(FromBinder):
    def __init__(self, catalog: CatalogView, session: SessionLike | None,
                 now: _dt.datetime | None = None, parent: Scope | None = None,
                 counter: list[int] | None = None,
                 ctes: dict[str, tuple[BoundQuery, tuple[str, ...]]] | None = None) -> None:
        self.catalog = catalog
        self.session = session
        self.now = now or clock.now().replace(microsecond=0)
        self.parent = parent
        self.counter = counter if counter is not None else [0]
        self.ctes = dict(ctes or {})
        self._repeat_columns: tuple[RelColumn, ...] = ()  # set while binding a grouping-sets query

    def _child(self, parent: Scope | None) -> SelectBinder:
        return SelectBinder(self.catalog, self.session, self.now, parent, self.counter, self.ctes)

    def _fresh(self) -> int:
        self.counter[0] += 1
        return self.counter[0]

    # ---- main ------------------------------------------------------------------------------
    def bind(self, select: exp.Select, sql: str | None = None) -> BoundSelect:
        if grouping_sets.has_grouping_sets(select) and not self._repeat_columns:
            # one aggregate over a Repeat (sql/binder/grouping_sets.py)
            text = sql if sql is not None or self.parent is not None else select.meta.get("sql")
            prepared = grouping_sets.prepare(select)
            self._repeat_columns = prepared.scope_columns()
            try:
                plain = self.bind(prepared.select, text)
            finally:
                self._repeat_columns = ()
            attached = grouping_sets.attach(plain, prepared)
            if attached is not None:
                return attached
            return self.bind(grouping_sets.expand(select, text))
        check_supported(select)
        if not select.expressions:
            raise DorisError("Syntax error: the SELECT list is empty", ErrorCode.PARSE_ERROR)
        if select.args.get("with_"):
            self._bind_ctes(select.args["with_"])
            sql = None  # the first SELECT of the text is inside a CTE: labels from the AST
        src = self._from(select)
        if self._repeat_columns:  # GROUPING SETS: the Repeat's set id and GROUPING() columns
            self.scope.add(grouping_sets.REPEAT_ALIAS, grouping_sets.REPEAT_ALIAS, "",
                           self._repeat_columns)
            self._repeat_columns = ()
        self._src = src
        self._aliases: dict[str, Expr] = {}

        # SELECT list
        items = select.expressions
        texts = select_item_texts(sql if sql is not None or self.parent is not None
                                  else select.meta.get("sql"), len(items))
        proj: list[Expr] = []
        names: list[str] = []
        sel_binder = self._binder(self._resolve_source, True, "SELECT")
        sel_binder.allow_windows = True
        for i, item in enumerate(items):
            node = item.this if isinstance(item, exp.Alias) else item
            star_table = None
            if isinstance(node, exp.Star) or (
                    isinstance(node, exp.Column) and isinstance(node.this, exp.Star)):
                star_table = node.table if isinstance(node, exp.Column) else ""
                cols = self._expand_star(star_table)
                proj.extend(ColumnRef(c.internal, c.type) for c in cols)
                names.extend(c.name for c in cols)
                continue
            bound = sel_binder.bind(node)
            if isinstance(item, exp.Alias):
                label = item.alias
                self._aliases.setdefault(label.lower(), bound)
            elif isinstance(node, exp.Column):
                label = node.name
            elif texts is not None:
                label = texts[i]
            else:
                label = generated_name(node)
            proj.append(bound)
            names.append(label)

        where = None
        if select.args.get("where") is not None:
            wb = self._binder(self._resolve_source, False, "WHERE")
            where = coerce_bool(wb.bind(select.args["where"].this))

        group_exprs = self._group_by(select, proj, names)
        having = None
        if select.args.get("having") is not None:
            hb = self._binder(self._resolve_having, True, "HAVING")
            having = coerce_bool(hb.bind(select.args["having"].this))

        for clause, exprs in (("GROUP BY", group_exprs), ("HAVING", [having] if having else [])):
            if any(contains_window(e) for e in exprs):  # through a select alias
                raise DorisError(f"window function is not allowed in {clause} clause")
        order_raw = self._order_by(select, proj, names)
        is_agg = bool(group_exprs) or having is not None or any(
            contains_aggregate(e) for e in proj) or any(
            not isinstance(e, int) and contains_aggregate(e) for e, _, _ in order_raw)

        agg_names: list[tuple[str, AggregateCall]] = []
        group_named = tuple((f"__g{i}", g) for i, g in enumerate(group_exprs))
        if is_agg:
            lift = _Lifter(group_named, agg_names)
            proj = [lift(e, label) for e, label in zip(proj, names)]
            having = lift(having, None) if having is not None else None
            order_raw = [(e if isinstance(e, int) else lift(e, None), d, nf)
                         for e, d, nf in order_raw]

        proj, order_raw, windows = _extract_windows(proj, order_raw)
        projections = [(f"_c{i}", e) for i, e in enumerate(proj)]
        sort_items: list[SortKey] = []
        distinct = select.args.get("distinct") is not None
        for e, desc, nulls_first in order_raw:
            if isinstance(e, int):
                ref = ColumnRef(projections[e][0], projections[e][1].type)
            else:
                match = next((n for n, pe in projections if pe == e), None)
                if match is None:
                    if distinct:
                        raise DorisError("ORDER BY expression must appear in the SELECT list "
                                         "when SELECT DISTINCT is used")
                    match = f"_o{len(projections)}"
                    projections.append((match, e))
                ref = ColumnRef(match, e.type)
            sort_items.append(SortKey(ref, desc, nulls_first))

        limit, offset = _limit_offset(select)
        return BoundSelect(
            source=src, where=where, is_aggregate=is_agg, group_by=group_named,
            aggregates=tuple(agg_names), having=having, projections=tuple(projections),
            visible=len(names), names=tuple(names), distinct=distinct,
            order_by=tuple(sort_items), limit=limit, offset=offset, windows=tuple(windows),
        )

    # ---- helpers ---------------------------------------------------------------------------
    def _binder(self, resolve: Callable[[exp.Column], Expr], allow_agg: bool,
                clause: str) -> ExpressionBinder:
        eb = ExpressionBinder(resolve, self.session, self.now, allow_agg, clause)
        eb.subquery_binder = self._subquery
        return eb

    def _expand_star(self, table: str | None) -> list[RelColumn]:
        if self._src is NO_FROM:
            raise DorisError("SELECT * with no tables specified is not valid")
        return self.scope.star(table)

    def _resolve_source(self, col: exp.Column) -> Expr:
        hit = self.scope.resolve(col.text("db"), col.table, col.name)
        if hit is None:
            raise unknown_column(_column_text(col))
        return hit

    def _resolve_having(self, col: exp.Column) -> Expr:
        """HAVING: table columns first, then select aliases (MySQL)."""
        try:
            return self._resolve_source(col)
        except DorisError:
            if not col.table and col.name.lower() in self._aliases:
                return self._aliases[col.name.lower()]
            raise

    def _resolve_order(self, col: exp.Column) -> Expr:
        """ORDER BY: select aliases first, then table columns (MySQL)."""
        if not col.table and col.name.lower() in self._aliases:
            return self._aliases[col.name.lower()]
        return self._resolve_source(col)

    def _group_by(self, select: exp.Select, proj: list[Expr], names: list[str]) -> list[Expr]:
        group = select.args.get("group")
        if group is None:
            return []
        gb = self._binder(self._resolve_source, False, "GROUP BY")
        out: list[Expr] = []
        for g in group.expressions:
            e: Expr
            if isinstance(g, exp.Literal) and not g.is_string:
                k = _ordinal(g, len(names), "group statement")
                e = proj[k]
                if contains_aggregate(e):
                    raise DorisError(f"GROUP BY expression must not contain aggregate functions: "
                                     f"{names[k]}")
            elif (isinstance(g, exp.Column) and not g.table and not self.scope.has_column(g.name)
                  and g.name.lower() in self._aliases):
                e = self._aliases[g.name.lower()]
                if contains_aggregate(e):
                    raise DorisError(f"GROUP BY expression must not contain aggregate functions: "
                                     f"{g.name}")
            else:
                e = gb.bind(g)
            check_comparable(e.type)
            if e not in out:
                out.append(e)
        return out

    def _order_by(self, select: exp.Select, proj: list[Expr], names: list[str]
                  ) -> list[tuple[Expr | int, bool, bool]]:
        order = select.args.get("order")
        if order is None:
            return []
        ob = self._binder(self._resolve_order, True, "ORDER BY")
        ob.allow_windows = True
        out: list[tuple[Expr | int, bool, bool]] = []
        for o in order.expressions:
            node = o.this
            desc = bool(o.args.get("desc"))
            nulls_first = bool(o.args.get("nulls_first"))
            if isinstance(node, exp.Literal) and not node.is_string:
                k = _ordinal(node, len(names), "order clause")
                check_comparable(proj[k].type)
                out.append((k, desc, nulls_first))
                continue
            if isinstance(node, exp.Column) and not node.table:
                low = node.name.lower()
                idx = next((i for i, n in enumerate(names) if n.lower() == low), None)
                if idx is not None:
                    check_comparable(proj[idx].type)
                    out.append((idx, desc, nulls_first))
                    continue
            bound = ob.bind(node)
            check_comparable(bound.type)
            out.append((bound, desc, nulls_first))
        return out


def _extract_windows(proj: list[Expr], order_raw: list[tuple[Expr | int, bool, bool]]
                     ) -> tuple[list[Expr], list[tuple[Expr | int, bool, bool]],
                                list[tuple[str, WindowCall]]]:
    """Window calls of the select list and ORDER BY become `__w<i>` columns
    (sql/binder/bind_window.py)."""
    order_exprs = [e for e, _, _ in order_raw if not isinstance(e, int)]
    if not any(contains_window(e) for e in [*proj, *order_exprs]):
        return proj, order_raw, []
    new, windows = extract_windows([*proj, *order_exprs])
    it = iter(new[len(proj):])
    order = [(e if isinstance(e, int) else next(it), d, nf) for e, d, nf in order_raw]
    return new[:len(proj)], order, windows


class _Lifter:
    """Rewrites an expression over source columns into one over the aggregate's outputs."""

    def __init__(self, groups: tuple[tuple[str, Expr], ...],
                 aggs: list[tuple[str, AggregateCall]]) -> None:
        self.groups = groups
        self.aggs = aggs

    def __call__(self, e: Expr, label: str | None = None) -> Expr:
        def fn(x: Expr) -> Expr | None:
            for name, g in self.groups:
                if x == g:
                    return ColumnRef(name, g.type)
            if isinstance(x, AggregateCall):
                for name, a in self.aggs:
                    if a == x:
                        return ColumnRef(name, a.type)
                name = f"__a{len(self.aggs)}"
                self.aggs.append((name, x))
                return ColumnRef(name, x.type)
            if isinstance(x, ColumnRef):
                raise DorisError(f"'{x.name}' must appear in the GROUP BY clause or be used in an "
                                 f"aggregate function")
            return None

        return e.transform(fn)


def bind_select(select: exp.Select, catalog: CatalogView, session: SessionLike | None,
                now: _dt.datetime | None = None, sql: str | None = None) -> BoundSelect:
    """Bind one SELECT statement; raises ShaleError (1105 wording) on analysis errors."""
    return SelectBinder(catalog, session, now).bind(select, sql)


def bind_query(node: exp.Expression, catalog: CatalogView, session: SessionLike | None,
               now: _dt.datetime | None = None, sql: str | None = None) -> BoundQuery:
    """Bind a SELECT or a set operation (UNION / INTERSECT / EXCEPT)."""
    return SelectBinder(catalog, session, now).bind_query(node, sql)
