"""FROM-clause, subquery, CTE and set-operation binding (a mixin of `sql.binder.SelectBinder`).

Binds joins (ON conditions against the relations joined so far; semi / anti joins hide the
filtered side afterwards), derived tables and CTE references (fresh internal names per
reference), `IN (subquery)` / `EXISTS` / scalar subqueries (a child binder whose scope's parent
is this query's scope, so outer columns bind as `OuterRef`), and UNION / INTERSECT / EXCEPT
with column type unification. Also the small helpers shared with the SELECT binder.
Upstream: Doris Nereids `BindRelation`, `BindExpression` (subqueries), `BindSetOperation`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from sql.binder.bind_expressions import ExpressionBinder, SessionLike, coerce, not_supported
from sql.binder.expressions import ColumnRef, Expr, SubqueryExpr
from sql.binder.partitions_tvf import FUNCTION as PARTITIONS_TVF
from sql.binder.partitions_tvf import partitions_source
from sql.binder.relations import (
    NO_FROM,
    BoundDerived,
    BoundFileRel,
    BoundJoin,
    BoundLateral,
    BoundQuery,
    BoundRelation,
    BoundSelect,
    BoundSetOp,
    BoundTable,
    BoundValuesRel,
    CatalogView,
    RelColumn,
    Scope,
    SortKey,
    TableSource,
    ValuesSource,
)
from sql.binder.table_functions import FileSource, table_function_call
from sql.errors import DorisError, no_database_selected, table_not_found, unknown_database
from sql.functions import generators
from sql.functions.coercion import common_type, comparison_type
from sql.parser.dialect_nodes import TABLETS_META, TEMPORARY_PARTITION_META
from sql.show.information_schema import (
    INFORMATION_SCHEMA,
    is_information_schema,
    virtual_rows,
    virtual_table,
)
from storage.catalog.meta import TableMeta, TemporaryPartitionNames
from storage.types import BOOLEAN, DataType, TypeKind


def unknown_column(name: str) -> DorisError:
    return DorisError(f"Unknown column '{name}' in 'table list'")


def _column_text(col: exp.Column) -> str:
    return ".".join(p.name for p in col.parts)


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


def _limit_offset(select: exp.Query) -> tuple[int | None, int]:
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


def query_names(q: BoundQuery) -> tuple[str, ...]:
    return q.names


def _single_column(q: BoundQuery) -> DataType:
    if len(q.types) != 1:
        raise DorisError("Operand should contain 1 column(s)")
    return q.types[0]


def _columns_of(rel: BoundRelation) -> tuple[RelColumn, ...]:
    if isinstance(rel, BoundJoin):
        return _columns_of(rel.left) + _columns_of(rel.right)
    if isinstance(rel, BoundLateral):
        return _columns_of(rel.input) + rel.columns
    return rel.columns


class FromBinder:
    """FROM / subquery / set-operation half of SelectBinder (see the module docstring).
    Relies on SelectBinder's `catalog`, `session`, `scope`, `parent`, `ctes`, `_child`,
    `_fresh`, `_binder`, `_resolve_source` and `bind`, declared here for the type checker."""

    catalog: CatalogView
    session: SessionLike | None
    parent: Scope | None
    ctes: dict[str, tuple[BoundQuery, tuple[str, ...]]]
    scope: Scope

    if TYPE_CHECKING:
        def _child(self, parent: Scope | None) -> FromBinder: ...
        def _fresh(self) -> int: ...
        def _binder(self, resolve: Callable[[exp.Column], Expr], allow_agg: bool,
                    clause: str) -> ExpressionBinder: ...
        def _resolve_source(self, col: exp.Column) -> Expr: ...
        def bind(self, select: exp.Select, sql: str | None = None) -> BoundSelect: ...

    # ---- FROM ------------------------------------------------------------------------------
    def _table_function(self, t: exp.Table) -> FileSource | ValuesSource | None:
        """`FROM local(..)`: the session's resolver finds the files and their columns;
        `FROM partitions(..)`: SHOW PARTITIONS' rows (sql/binder/partitions_tvf.py)."""
        call = table_function_call(t)
        if call is None:
            return None
        function, props = call
        if function == PARTITIONS_TVF:
            return partitions_source(self.catalog, props, t.alias or function)
        resolver = getattr(self.session, "table_functions", None)
        if resolver is None:
            raise not_supported(f"table function {function}")
        return resolver.resolve(function, props, t.alias or function)

    def _table(self, t: exp.Table) -> TableSource | ValuesSource | FileSource:
        tvf = self._table_function(t)
        if tvf is not None:
            return tvf
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
        return TableSource(db, meta, alias, self._partitions(t, meta), self._tablets(t, meta))

    def _tablets(self, t: exp.Table, meta: TableMeta) -> tuple[int, ...]:
        """`t TABLET (id, ..)` (sql/parser/dialect.py TABLETS_META): the ids, each a tablet of
        this table (any partition, any index), else an error naming the first unknown one."""
        ids: tuple[int, ...] = t.meta.get(TABLETS_META, ())
        if ids:
            known = {tb.tablet_id for tb in self.catalog.tablets(meta.table_id)}
            for tablet_id in ids:
                if tablet_id not in known:
                    raise DorisError(f"Tablet {tablet_id} does not exist in table {meta.name}")
        return ids

    def _partitions(self, t: exp.Table, meta: TableMeta) -> tuple[str, ...]:
        """`t PARTITION (p1, ..)` / `PARTITIONS (..)`: the named partitions, checked."""
        node = t.args.get("partition")
        if not isinstance(node, exp.Partition):
            return ()
        temporary = bool(node.meta.get(TEMPORARY_PARTITION_META))
        names = {p.name.lower(): p.name
                 for p in self.catalog.partitions(meta.table_id, temporary=temporary)}
        chosen = []
        for e in node.expressions:
            if e.name.lower() not in names:
                # Doris names the table as the query wrote it (with its qualifier, if any)
                written = ".".join(x for x in (t.text("catalog"), t.text("db"), t.name) if x)
                raise DorisError(f"Partition: {e.name} is not exists on table {written}")
            chosen.append(names[e.name.lower()])
        return TemporaryPartitionNames(chosen) if temporary else tuple(chosen)

    def _relation(self, node: exp.Expression) -> BoundRelation:
        """One FROM item -> relation with fresh internal names, registered in the scope."""
        if isinstance(node, exp.Table) and not node.text("db") and node.name.lower() in self.ctes:
            query, labels = self.ctes[node.name.lower()]
            return self._derived(query, labels, node.alias_or_name, node)
        if isinstance(node, exp.Table):
            src = self._table(node)
            n = self._fresh()
            if isinstance(src, TableSource):
                cols = tuple(RelColumn(c.name, f"{c.name}#{n}", c.type) for c in src.table.columns)
                self.scope.add(src.alias, src.table.name, src.db, cols)
                return BoundTable(src, cols)
            if isinstance(src, FileSource):
                cols = tuple(RelColumn(c, f"{c}#{n}", t) for c, t in zip(src.names, src.types))
                self.scope.add(src.alias, src.alias, "", cols)
                return BoundFileRel(src, cols)
            cols = tuple(RelColumn(c, f"{c}#{n}", t) for c, t in zip(src.names, src.types))
            if src is not NO_FROM:
                self.scope.add(src.alias, src.alias, INFORMATION_SCHEMA, cols)
            return BoundValuesRel(src, cols)
        if isinstance(node, exp.Subquery):
            alias = node.alias
            if not alias:
                raise DorisError("Every derived table must have its own alias")
            query = self._child(None).bind_query(node.this)
            return self._derived(query, query_names(query), alias, node)
        raise not_supported(f"FROM item {type(node).__name__}")

    def _derived(self, query: BoundQuery, labels: tuple[str, ...], alias: str,
                 node: exp.Expression) -> BoundDerived:
        ta = node.args.get("alias")
        names = list(labels)
        if isinstance(ta, exp.TableAlias) and ta.columns:
            given = [c.name for c in ta.columns]
            if len(given) != len(names):
                raise DorisError(f"derived table {alias} has {len(names)} columns but "
                                 f"{len(given)} column aliases")
            names = given
        seen: set[str] = set()
        for c in names:
            if c.lower() in seen:
                raise DorisError(f"Duplicate column name '{c}'")
            seen.add(c.lower())
        n = self._fresh()
        cols = tuple(RelColumn(c, f"{c}#{n}", t) for c, t in zip(names, query.types))
        self.scope.add(alias, alias, "", cols)
        return BoundDerived(query, alias, cols)

    def _from(self, select: exp.Select) -> TableSource | ValuesSource | FileSource | BoundRelation:
        self.scope = Scope(parent=self.parent)
        frm = select.args.get("from_")
        joins = select.args.get("joins") or []
        laterals = select.args.get("laterals") or []
        if frm is None:
            if laterals:
                raise DorisError("LATERAL VIEW needs a FROM clause")
            return NO_FROM
        first = frm.this
        simple = (self.parent is None and not joins and not laterals
                  and isinstance(first, exp.Table)
                  and not (not first.text("db") and first.name.lower() in self.ctes))
        if simple:
            # a plain single-table query keeps the table's own column names (no renaming)
            src = self._table(first)
            if isinstance(src, TableSource):
                cols = tuple(RelColumn(c.name, c.name, c.type) for c in src.table.columns)
                self.scope.add(src.alias, src.table.name, src.db, cols)
            elif isinstance(src, FileSource):
                cols = tuple(RelColumn(c, c, t) for c, t in zip(src.names, src.types))
                self.scope.add(src.alias, src.alias, "", cols)
            elif src is not NO_FROM:
                cols = tuple(RelColumn(c, c, t) for c, t in zip(src.names, src.types))
                self.scope.add(src.alias, src.alias, INFORMATION_SCHEMA, cols)
            return src
        # A LATERAL VIEW belongs to the relation before it (Doris' grammar), but sqlglot keeps
        # the views apart from the joins: each is applied as soon as its arguments bind, so
        # `t LATERAL VIEW explode(t.a) v AS x JOIN u ON u.k = x` works.
        pending = list(laterals)
        rel = self._laterals(self._relation(first), pending, last=not joins)
        for i, j in enumerate(joins):
            rel = self._laterals(self._join(rel, j), pending, last=i == len(joins) - 1)
        return rel

    def _laterals(self, rel: BoundRelation, pending: list[exp.Lateral],
                  last: bool) -> BoundRelation:
        while pending:
            try:
                rel = self._lateral(rel, pending[0])
            except DorisError:
                if last:
                    raise
                break  # it reads a relation joined later
            pending.pop(0)
        return rel

    def _lateral(self, rel: BoundRelation, lateral: exp.Lateral) -> BoundLateral:
        """`LATERAL VIEW fn(args) alias AS c1[, c2]` over the relation built so far."""
        call = lateral.this
        if not lateral.args.get("view") or not isinstance(call, exp.Func):
            raise not_supported("LATERAL (other than LATERAL VIEW <table function>)")
        if isinstance(call, exp.Anonymous):
            name, arg_nodes = call.name, list(call.expressions)
        else:
            name = {exp.Explode: "explode", exp.ExplodeOuter: "explode_outer",
                    exp.Posexplode: "posexplode", exp.PosexplodeOuter: "posexplode_outer",
                    }.get(type(call), call.sql_name().lower())
            arg_nodes = [call.this, *call.expressions]
        if lateral.args.get("outer") and not name.lower().endswith("_outer"):
            name += "_outer"  # Hive's LATERAL VIEW OUTER
        binder = self._binder(self._resolve_source, False, "LATERAL VIEW")
        args = tuple(binder.bind(a) for a in arg_nodes)
        types = generators.output_types(name, [a.type for a in args])
        alias = lateral.args.get("alias")
        table = alias.name if isinstance(alias, exp.TableAlias) else ""
        names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        if len(names) != len(types):
            raise DorisError(f"table function {name.lower()} generates {len(types)} column(s), "
                             f"but LATERAL VIEW {table} names {len(names)}: write "
                             f"`LATERAL VIEW {name.lower()}(..) {table or 'tmp'} AS "
                             + ", ".join(f"c{i + 1}" for i in range(len(types))) + "`")
        n = self._fresh()
        cols = tuple(RelColumn(c, f"{c}#{n}", t) for c, t in zip(names, types))
        self.scope.add(table or f"__lateral{n}", table, "", cols)
        return BoundLateral(rel, name.lower(), args, cols)

    def _join(self, left: BoundRelation, j: exp.Join) -> BoundRelation:
        right = self._relation(j.this)
        side = (j.side or "").upper()
        kind = (j.kind or "").upper()
        on = j.args.get("on")
        using = j.args.get("using") or []
        if kind in ("SEMI", "ANTI"):
            jk = f"{'right' if side == 'RIGHT' else 'left'}_{kind.lower()}"
        elif side == "LEFT":
            jk = "left"
        elif side == "RIGHT":
            jk = "right"
        elif side == "FULL":
            jk = "full"
        elif on is None and not using:
            jk = "cross"
        else:
            jk = "inner"
        if on is None and not using and jk not in ("cross", "inner"):
            raise DorisError(f"{jk.replace('_', ' ').upper()} JOIN requires an ON condition")
        cond = None
        if on is not None:
            cond = coerce_bool(self._binder(self._resolve_source, False, "ON").bind(on))
        elif using:
            cond = self._using(left, right, jk, [u.name for u in using])
        if jk in ("left_semi", "left_anti"):
            self.scope.hide(_columns_of(right))
        elif jk in ("right_semi", "right_anti"):
            self.scope.hide(_columns_of(left))
        hint = j.args.get("hint")
        return BoundJoin(left, right, jk, cond, hint.name.upper() if hint is not None else None)

    def _using(self, left: BoundRelation, right: BoundRelation, kind: str,
               names: list[str]) -> Expr:
        """JOIN ... USING (c, ..): `left.c = right.c` for each column; the kept side's column
        answers the unqualified name and comes first in `*` (MySQL), the other one is reachable
        only qualified."""
        if kind not in ("inner", "left", "right"):
            raise not_supported(f"{kind.replace('_', ' ').upper()} JOIN ... USING")
        eb = self._binder(self._resolve_source, False, "ON")
        parts: list[Expr] = []
        lcols, rcols = _columns_of(left), _columns_of(right)
        for name in names:
            lc = self._using_column(lcols, name)
            rc = self._using_column(rcols, name)
            keep, drop = (rc, lc) if kind == "right" else (lc, rc)
            self.scope.unqualified_hidden.add(drop.internal)
            if keep not in self.scope.using_first:
                self.scope.using_first.append(keep)
            parts.append(eb.comparison("=", ColumnRef(lc.internal, lc.type),
                                       ColumnRef(rc.internal, rc.type)))
        from sql.binder.expressions import make_and

        cond = make_and(parts)
        assert cond is not None
        return cond

    def _using_column(self, cols: tuple[RelColumn, ...], name: str) -> RelColumn:
        hits = [c for c in cols if c.name.lower() == name.lower()
                and c.internal not in self.scope.unqualified_hidden]
        if not hits:
            raise DorisError(f"Unknown column '{name}' in 'from clause'")
        if len(hits) > 1:
            raise DorisError(f"Column '{name}' in from clause is ambiguous")
        return hits[0]

    # ---- subqueries ------------------------------------------------------------------------
    def _subquery(self, node: exp.Expression, eb: ExpressionBinder) -> Expr:
        sid = self._fresh()
        if isinstance(node, exp.Exists):
            q = self._child(self.scope).bind_query(node.this)
            return SubqueryExpr("exists", sid, None, False, BOOLEAN, BOOLEAN, q)
        if isinstance(node, exp.In):
            arg = eb.bind(node.this)
            q = self._child(self.scope).bind_query(node.args["query"])
            qt = _single_column(q)
            t = comparison_type(arg.type, qt)
            return SubqueryExpr("in", sid, coerce(arg, t), False, t, BOOLEAN, q)
        q = self._child(self.scope).bind_query(node)
        qt = _single_column(q)
        return SubqueryExpr("scalar", sid, None, False, qt, qt, q)

    # ---- queries ---------------------------------------------------------------------------
    def bind_query(self, node: exp.Expression, sql: str | None = None) -> BoundQuery:
        while isinstance(node, exp.Subquery) and not node.alias:
            node = node.this
        if isinstance(node, exp.SetOperation):
            return self._set_op(node, sql)
        if not isinstance(node, exp.Select):
            raise not_supported(f"query {type(node).__name__}")
        return self._child(self.parent).bind(node, sql)

    def _set_op(self, node: exp.SetOperation, sql: str | None) -> BoundSetOp:
        if node.args.get("with_"):
            self._bind_ctes(node.args["with_"])
        left = self.bind_query(node.this, sql)
        right = self.bind_query(node.expression)
        lt, rt = left.types, right.types
        if len(lt) != len(rt):
            raise DorisError("Operands have unequal number of columns")
        types = tuple(common_type([a, b]) for a, b in zip(lt, rt))
        names = query_names(left)
        op = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}[type(node)]
        distinct = node.args.get("distinct") is not False
        if op != "union" and not distinct:
            raise not_supported(f"{op.upper()} ALL")
        order: list[SortKey] = []
        if node.args.get("order") is not None:
            for o in node.args["order"].expressions:
                order.append(self._set_order_item(o, names, types))
        limit, offset = _limit_offset(node)
        return BoundSetOp(op, distinct, left, right, names, types, tuple(order), limit, offset)

    def _set_order_item(self, o: exp.Ordered, names: tuple[str, ...],
                        types: tuple[DataType, ...]) -> SortKey:
        node = o.this
        if isinstance(node, exp.Literal) and not node.is_string:
            k = _ordinal(node, len(names), "order clause")
        elif isinstance(node, exp.Column):
            low = node.name.lower()
            k = next((i for i, n in enumerate(names) if n.lower() == low), -1)
            if k < 0:
                raise unknown_column(_column_text(node))
        else:
            raise not_supported("ORDER BY expression over a set operation")
        return SortKey(ColumnRef(f"_c{k}", types[k]), bool(o.args.get("desc")),
                        bool(o.args.get("nulls_first")))

    def _bind_ctes(self, with_: exp.With) -> None:
        if with_.args.get("recursive"):
            raise not_supported("WITH RECURSIVE")
        for cte in with_.expressions:
            q = self._child(None).bind_query(cte.this)
            labels = query_names(q)
            ta = cte.args.get("alias")
            if isinstance(ta, exp.TableAlias) and ta.columns:
                labels = tuple(c.name for c in ta.columns)
                if len(labels) != len(q.types):
                    raise DorisError(f"CTE {cte.alias} has {len(q.types)} columns but "
                                     f"{len(labels)} column aliases")
            self.ctes[cte.alias.lower()] = (q, labels)

