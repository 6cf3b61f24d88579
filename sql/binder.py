"""Binder: a parsed SELECT (sqlglot AST) -> `BoundSelect`, names and types resolved.

Owns name resolution against the catalog (`CatalogView`, implemented by storage.catalog.Catalog),
the information_schema virtual tables, `*` expansion, GROUP BY / ORDER BY ordinals and aliases
(MySQL rules: GROUP BY and HAVING look at table columns before select aliases, ORDER BY at
aliases first), the only_full_group_by check, hidden ORDER BY columns, LIMIT/OFFSET, and the
result column labels. Expressions are bound by `sql.bind_expressions`.
A bound aggregate query is split the way the plan will run it: `group_by` and `aggregates` are
over source columns, while `having`, `projections` and sort keys reference the aggregate's
outputs by name (`__g<i>` / `__a<i>`). Upstream: Doris Nereids `BindRelation`,
`BindExpression`, `NormalizeAggregate`, `CheckAnalysis`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sqlglot import exp

from sql.bind_expressions import ExpressionBinder, SessionLike, coerce, not_supported
from sql.errors import (
    DorisError,
    ErrorCode,
    no_database_selected,
    table_not_found,
    unknown_database,
)
from sql.expressions import AggregateCall, ColumnRef, Expr, contains_aggregate
from sql.information_schema import (
    INFORMATION_SCHEMA, is_information_schema, virtual_rows, virtual_table,
)
from sql.naming import generated_name, select_item_texts
from storage.catalog.meta import (
    DatabaseMeta, MaterializedIndexMeta, PartitionMeta, TableMeta, TabletMeta,
)
from storage.types import BOOLEAN, DataType, TypeKind


class CatalogView(Protocol):
    """The read-only catalog surface the SQL layers need (storage.catalog.Catalog has it)."""

    def get_database(self, name: str) -> DatabaseMeta | None: ...
    def list_databases(self) -> list[DatabaseMeta]: ...
    def get_table(self, db: str, name: str) -> TableMeta | None: ...
    def list_tables(self, db: str) -> list[TableMeta]: ...
    def partitions(self, table_id: int) -> list[PartitionMeta]: ...
    def materialized_indexes(self, table_id: int) -> list[MaterializedIndexMeta]: ...
    def tablets(self, table_id: int, partition_id: int | None = None,
                index_id: int | None = None) -> list[TabletMeta]: ...


@dataclass(frozen=True, slots=True)
class TableSource:
    db: str
    table: TableMeta
    alias: str


@dataclass(frozen=True, slots=True)
class ValuesSource:
    """Rows known at bind time: information_schema tables, or one dummy row without FROM."""

    alias: str
    names: tuple[str, ...]
    types: tuple[DataType, ...]
    rows: tuple[tuple[object, ...], ...]


NO_FROM = ValuesSource("", ("__dummy",), (BOOLEAN,), ((1,),))


@dataclass(frozen=True, slots=True)
class SortItem:
    expr: Expr
    desc: bool
    nulls_first: bool


@dataclass(frozen=True, slots=True)
class BoundSelect:
    source: TableSource | ValuesSource
    where: Expr | None
    is_aggregate: bool
    group_by: tuple[tuple[str, Expr], ...]
    aggregates: tuple[tuple[str, AggregateCall], ...]
    having: Expr | None
    projections: tuple[tuple[str, Expr], ...]  # visible ones first, then hidden sort keys
    visible: int
    names: tuple[str, ...]  # client-facing labels of the visible projections
    distinct: bool
    order_by: tuple[SortItem, ...]  # over projection names
    limit: int | None
    offset: int

    @property
    def types(self) -> tuple[DataType, ...]:
        return tuple(e.type for _, e in self.projections[: self.visible])


def unknown_column(name: str) -> DorisError:
    return DorisError(f"Unknown column '{name}' in 'table list'")


def _column_text(col: exp.Column) -> str:
    return ".".join(p.name for p in col.parts)


def check_supported(select: exp.Select) -> None:
    if select.args.get("joins"):
        raise not_supported("JOIN")
    if select.args.get("with_"):
        raise not_supported("WITH clause (common table expression)")
    for key, what in (("laterals", "LATERAL VIEW"), ("pivots", "PIVOT"), ("windows", "WINDOW"),
                      ("qualify", "QUALIFY"), ("into", "SELECT INTO"), ("sample", "TABLESAMPLE")):
        if select.args.get(key):
            raise not_supported(what)
    frm = select.args.get("from_")
    if frm is not None and not isinstance(frm.this, exp.Table):
        raise not_supported("subquery in FROM")
    group = select.args.get("group")
    if group is not None:
        if any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")) or any(
                isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets)) for g in group.expressions):
            raise not_supported("GROUPING SETS / ROLLUP / CUBE")
    for node in select.walk():
        if node is select:
            continue
        if isinstance(node, exp.Window):
            raise not_supported("window function")
        if isinstance(node, (exp.Select, exp.Subquery, exp.Exists, exp.Union)):
            raise not_supported("subquery")


class SelectBinder:
    def __init__(self, catalog: CatalogView, session: SessionLike | None,
                 now: _dt.datetime | None = None) -> None:
        self.catalog = catalog
        self.session = session
        self.now = now or _dt.datetime.now().replace(microsecond=0)

    # ---- FROM ------------------------------------------------------------------------------
    def _source(self, select: exp.Select) -> TableSource | ValuesSource:
        frm = select.args.get("from_")
        if frm is None:
            return NO_FROM
        t: exp.Table = frm.this
        name, db = t.name, t.text("db") or None
        alias = t.alias_or_name
        if db is None and name.lower() == "dual":
            return NO_FROM
        if db is None:
            db = self.session.database if self.session is not None else None
            if db is None:
                raise no_database_selected()
        if is_information_schema(db):
            vt = virtual_table(name)
            if vt is None:
                raise table_not_found(INFORMATION_SCHEMA, name)
            rows = tuple(virtual_rows(name, self.catalog))
            return ValuesSource(alias, tuple(c for c, _ in vt.columns),
                                tuple(t for _, t in vt.columns), rows)
        if self.catalog.get_database(db) is None:
            raise unknown_database(db)
        meta = self.catalog.get_table(db, name)
        if meta is None:
            raise table_not_found(db, name)
        return TableSource(db, meta, alias)

    # ---- main ------------------------------------------------------------------------------
    def bind(self, select: exp.Select, sql: str | None = None) -> BoundSelect:
        check_supported(select)
        if not select.expressions:
            raise DorisError("Syntax error: the SELECT list is empty", ErrorCode.PARSE_ERROR)
        src = self._source(select)
        self._src = src
        if isinstance(src, TableSource):
            cols = [(c.name, c.type) for c in src.table.columns]
            self._qualifiers = {src.alias.lower(), src.table.name.lower()}
            self._db = src.db.lower()
        else:
            cols = [] if src is NO_FROM else list(zip(src.names, src.types))
            self._qualifiers = {src.alias.lower()} if src.alias else set()
            self._db = INFORMATION_SCHEMA
        self._columns = cols
        self._by_name = {n.lower(): (n, t) for n, t in cols}
        self._aliases: dict[str, Expr] = {}

        # SELECT list
        items = select.expressions
        texts = select_item_texts(sql or select.meta.get("sql"), len(items))
        proj: list[Expr] = []
        names: list[str] = []
        sel_binder = self._binder(self._resolve_source, True, "SELECT")
        for i, item in enumerate(items):
            node = item.this if isinstance(item, exp.Alias) else item
            star_table = None
            if isinstance(node, exp.Star) or (
                    isinstance(node, exp.Column) and isinstance(node.this, exp.Star)):
                star_table = node.table if isinstance(node, exp.Column) else ""
                proj.extend(self._expand_star(star_table))
                names.extend(n for n, _ in self._columns_for_star())
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

        projections = [(f"_c{i}", e) for i, e in enumerate(proj)]
        sort_items: list[SortItem] = []
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
            sort_items.append(SortItem(ref, desc, nulls_first))

        limit, offset = _limit_offset(select)
        return BoundSelect(
            source=src, where=where, is_aggregate=is_agg, group_by=group_named,
            aggregates=tuple(agg_names), having=having, projections=tuple(projections),
            visible=len(names), names=tuple(names), distinct=distinct,
            order_by=tuple(sort_items), limit=limit, offset=offset,
        )

    # ---- helpers ---------------------------------------------------------------------------
    def _binder(self, resolve: Callable[[exp.Column], Expr], allow_agg: bool,
                clause: str) -> ExpressionBinder:
        return ExpressionBinder(resolve, self.session, self.now, allow_agg, clause)

    def _columns_for_star(self) -> list[tuple[str, DataType]]:
        return list(self._columns)

    def _expand_star(self, table: str | None) -> list[Expr]:
        if self._src is NO_FROM:
            raise DorisError("SELECT * with no tables specified is not valid")
        if table and table.lower() not in self._qualifiers:
            raise DorisError(f"Unknown table '{table}'")
        return [ColumnRef(n, t) for n, t in self._columns]

    def _resolve_source(self, col: exp.Column) -> Expr:
        db = col.text("db")
        table = col.table
        if db and db.lower() != self._db:
            raise unknown_column(_column_text(col))
        if table and table.lower() not in self._qualifiers:
            raise unknown_column(_column_text(col))
        hit = self._by_name.get(col.name.lower())
        if hit is None:
            raise unknown_column(_column_text(col))
        return ColumnRef(hit[0], hit[1])

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
            elif (isinstance(g, exp.Column) and not g.table and g.name.lower() not in self._by_name
                  and g.name.lower() in self._aliases):
                e = self._aliases[g.name.lower()]
                if contains_aggregate(e):
                    raise DorisError(f"GROUP BY expression must not contain aggregate functions: "
                                     f"{g.name}")
            else:
                e = gb.bind(g)
            if e not in out:
                out.append(e)
        return out

    def _order_by(self, select: exp.Select, proj: list[Expr], names: list[str]
                  ) -> list[tuple[Expr | int, bool, bool]]:
        order = select.args.get("order")
        if order is None:
            return []
        ob = self._binder(self._resolve_order, True, "ORDER BY")
        out: list[tuple[Expr | int, bool, bool]] = []
        for o in order.expressions:
            node = o.this
            desc = bool(o.args.get("desc"))
            nulls_first = bool(o.args.get("nulls_first"))
            if isinstance(node, exp.Literal) and not node.is_string:
                out.append((_ordinal(node, len(names), "order clause"), desc, nulls_first))
                continue
            if isinstance(node, exp.Column) and not node.table:
                low = node.name.lower()
                idx = next((i for i, n in enumerate(names) if n.lower() == low), None)
                if idx is not None:
                    out.append((idx, desc, nulls_first))
                    continue
            out.append((ob.bind(node), desc, nulls_first))
        return out


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


def coerce_bool(e: Expr) -> Expr:
    if e.type.kind in (TypeKind.BOOLEAN, TypeKind.NULL):
        return e
    return coerce(e, BOOLEAN)


def _ordinal(node: exp.Literal, count: int, clause: str) -> int:
    try:
        k = int(node.this)
    except ValueError:
        raise DorisError(f"Unknown column '{node.this}' in '{clause}'") from None
    if not 1 <= k <= count:
        raise DorisError(f"Unknown column '{k}' in '{clause}'")
    return k - 1


def _int_clause(node: exp.Expression | None, what: str) -> int | None:
    if node is None:
        return None
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            v = int(node.this)
        except ValueError:
            v = -1
        if v >= 0:
            return v
    raise DorisError(f"{what} must be a non-negative integer constant")


def _limit_offset(select: exp.Select) -> tuple[int | None, int]:
    limit = None
    offset = 0
    lim = select.args.get("limit")
    if lim is not None:
        limit = _int_clause(lim.expression, "LIMIT")
        if lim.args.get("offset") is not None:
            offset = _int_clause(lim.args["offset"], "OFFSET") or 0
    off = select.args.get("offset")
    if off is not None:
        offset = _int_clause(off.expression, "OFFSET") or 0
    return limit, offset


def bind_select(select: exp.Select, catalog: CatalogView, session: SessionLike | None,
                now: _dt.datetime | None = None, sql: str | None = None) -> BoundSelect:
    """Bind one SELECT statement; raises ShaleError (1105 wording) on analysis errors."""
    return SelectBinder(catalog, session, now).bind(select, sql)
