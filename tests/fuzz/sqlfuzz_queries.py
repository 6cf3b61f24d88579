"""The SQL fuzzer's query grammar: hypothesis strategies for whole SELECT statements over the
test schema (sqlfuzz_schema.py), each rendered for Doris and for DuckDB.

Shapes: filters and projections with expressions, DISTINCT, joins (inner, left, right, full
outer, extra non-equi ON conditions, three-way), semi and anti joins through IN / NOT IN /
EXISTS / NOT EXISTS subqueries (correlated or not), scalar subqueries (in WHERE and, correlated,
in the select list), derived tables (one level, possibly aggregated or limited), GROUP BY with
aggregates and HAVING, window functions, UNION [ALL] / INTERSECT / EXCEPT, and ORDER BY
(output positions, Doris' NULL order) with LIMIT / OFFSET.

A query records which output positions its ORDER BY sorts on, so the comparison can check the
order (sqlfuzz_compare.py). A LIMIT comes only with an ORDER BY, and the generator prefers an
ORDER BY over every output column there, so the rows a LIMIT keeps are defined.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hypothesis import strategies as st
from sqlfuzz_expressions import NUMERIC, Draws, Expr, ExprGen, Scope, binary, same
from sqlfuzz_schema import COLUMNS, TABLE_NAMES

COLUMN_REF = re.compile(r"\b[aq]\d+\.")
JOIN_KINDS = ("JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN")
SET_OPS = ("UNION ALL", "UNION", "INTERSECT", "EXCEPT")


@dataclass
class Query:
    doris: str
    duck: str
    types: list[str]
    order: list[tuple[int, bool]] = field(default_factory=list)  # (output position, desc)
    limited: bool = False


@dataclass
class Source:
    doris: str
    duck: str
    scope: list[tuple[str, str]]


class QueryGen:
    def __init__(self, draw) -> None:  # type: ignore[no-untyped-def]
        self.d = Draws(draw)
        self.e = ExprGen(self.d)
        self.aliases = 0

    def alias(self, prefix: str) -> str:
        self.aliases += 1
        return f"{prefix}{self.aliases}"

    # ---- FROM --------------------------------------------------------------------------------
    def table(self) -> Source:
        name, a = self.d.pick(TABLE_NAMES), self.alias("a")
        return Source(f"{name} {a}", f"{name} {a}",
                      [(f"{a}.{c}", tag) for c, (_, _, tag) in COLUMNS.items()])

    def derived(self) -> Source:
        inner = self.select(nested=True)
        q = self.alias("q")
        return Source(f"({inner.doris}) {q}", f"({inner.duck}) {q}",
                      [(f"{q}.c{i}", t) for i, t in enumerate(inner.types)])

    def join(self, left: Source, depth: int) -> Source:
        right = self.derived() if depth > 0 and self.d.chance(15) else self.table()
        kind = self.d.pick(JOIN_KINDS + ("CROSS JOIN", "LEFT SEMI JOIN", "LEFT ANTI JOIN",
                                         "RIGHT SEMI JOIN", "RIGHT ANTI JOIN"))
        if kind == "CROSS JOIN":
            return Source(f"{left.doris} CROSS JOIN {right.doris}",
                          f"{left.duck} CROSS JOIN {right.duck}", left.scope + right.scope)
        conds: list[Expr] = []
        for _ in range(2 if self.d.chance(20) else 1):
            # equal types, or types of one family (INT = DECIMAL, DATE = DATETIME: Doris
            # compares them in the common type)
            lt, rt = self.d.pick((("int", "int"), ("str", "str"), ("date", "date"),
                                  ("dec", "dec"), ("ts", "ts"), ("int", "dec"),
                                  ("dec", "dbl"), ("date", "ts")))
            lc = [c for c, ct in left.scope if ct == lt]
            rc = [c for c, ct in right.scope if ct == rt]
            if lc and rc:
                a, b = same(self.d.pick(lc), lt), same(self.d.pick(rc), rt)
                if self.d.chance(15):  # a computed key
                    a = self.e.expr(left.scope, lt, 1)
                if self.d.chance(10):  # null-safe: NULL keys match each other
                    conds.append(binary(a, b, "{a} <=> {b}", "{a} IS NOT DISTINCT FROM {b}",
                                        "bool"))
                else:
                    conds.append(binary(a, b, "{a} = {b}", None, "bool"))
        if not conds or self.d.chance(20):  # a non-equi condition over both sides
            conds.append(self.e.comparison(left.scope + right.scope, 0))
        if self.d.chance(8):  # no equi key left: OR of conditions (a nested loop join)
            other = self.e.comparison(left.scope + right.scope, 0)
            conds = [Expr(f"({conds[0].doris} OR {other.doris})",
                          f"({conds[0].duck} OR {other.duck})", "bool")] + conds[1:]
        on = Expr(" AND ".join(c.doris for c in conds), " AND ".join(c.duck for c in conds),
                  "bool")
        if "SEMI" in kind or "ANTI" in kind:
            # Doris' explicit semi / anti joins keep one side's columns; DuckDB spells only
            # the left-hand forms, so a RIGHT one is rendered with the sides swapped
            keep, drop = (left, right) if kind.startswith("LEFT") else (right, left)
            duck_kind = kind.split(" ", 1)[1]
            return Source(f"{left.doris} {kind} {right.doris} ON {on.doris}",
                          f"{keep.duck} {duck_kind} {drop.duck} ON {on.duck}", keep.scope)
        return Source(f"{left.doris} {kind} {right.doris} ON {on.doris}",
                      f"{left.duck} {kind} {right.duck} ON {on.duck}",
                      left.scope + right.scope)

    def source(self, nested: bool) -> Source:
        src = self.derived() if not nested and self.d.chance(15) else self.table()
        joins = 0 if nested and not self.d.chance(30) else self.d.int(0, 2)
        for _ in range(joins):
            src = self.join(src, 0 if nested else 1)
        return src

    # ---- WHERE -------------------------------------------------------------------------------
    def subquery_predicate(self, scope: Scope) -> Expr:
        inner = self.table()
        inner_filter = self.e.expr(inner.scope, "bool", 1) if self.d.chance(40) else None
        r = self.d.int(0, 3)
        if r <= 1:  # [NOT] IN (SELECT ..): semi / null-aware anti join
            t = self.d.pick(("int", "str", "date"))
            outer = self.e.expr(scope, t, 1)
            col = self.e.column(inner.scope, t)
            assert col is not None
            if self.d.chance(30):  # correlated: IN over the rows matching the outer row
                ct = self.d.pick(("int", "str", "date"))
                oc, ic = self.e.column(scope, ct), self.e.column(inner.scope, ct)
                if oc is not None and ic is not None:
                    corr = same(f"{ic.doris} = {oc.doris}", "bool")
                    inner_filter = corr if inner_filter is None else Expr(
                        f"{inner_filter.doris} AND {corr.doris}",
                        f"{inner_filter.duck} AND {corr.duck}", "bool")
            where = " WHERE {}" if inner_filter else ""
            neg = "NOT " if self.d.chance(40) else ""
            return Expr(
                f"{outer.doris} {neg}IN (SELECT {col.doris} FROM {inner.doris}"
                + (where.format(inner_filter.doris) if inner_filter else "") + ")",
                f"{outer.duck} {neg}IN (SELECT {col.duck} FROM {inner.duck}"
                + (where.format(inner_filter.duck) if inner_filter else "") + ")", "bool")
        if r == 2:  # [NOT] EXISTS, correlated on one or two columns
            conds = []
            for _ in range(self.d.int(1, 2)):
                t = self.d.pick(("int", "str", "date"))
                oc, ic = self.e.column(scope, t), self.e.column(inner.scope, t)
                if oc is not None and ic is not None:
                    conds.append(same(f"{ic.doris} = {oc.doris}", "bool"))
            if inner_filter is not None:
                conds.append(inner_filter)
            if not conds:
                conds.append(same("1 = 1", "bool"))
            neg = "NOT " if self.d.chance(40) else ""
            return Expr(
                f"{neg}EXISTS (SELECT 1 FROM {inner.doris} WHERE "
                + " AND ".join(c.doris for c in conds) + ")",
                f"{neg}EXISTS (SELECT 1 FROM {inner.duck} WHERE "
                + " AND ".join(c.duck for c in conds) + ")", "bool")
        # a scalar subquery (one aggregate row) compared with an outer expression
        agg = self.e.aggregate(inner.scope)
        fam = NUMERIC if agg.type in NUMERIC else (agg.type,)
        outer = self.e.expr(scope, self.d.pick(fam), 1)
        op = self.d.pick(("=", "<", ">", "<>", "<=", ">="))
        where = " WHERE {}" if inner_filter else ""
        return Expr(
            f"{outer.doris} {op} (SELECT {agg.doris} FROM {inner.doris}"
            + (where.format(inner_filter.doris) if inner_filter else "") + ")",
            f"{outer.duck} {op} (SELECT {agg.duck} FROM {inner.duck}"
            + (where.format(inner_filter.duck) if inner_filter else "") + ")", "bool")

    def where(self, scope: Scope, nested: bool) -> Expr | None:
        if not self.d.chance(70):
            return None
        pred = self.e.expr(scope, "bool", 2)
        if not nested and self.d.chance(30):
            sub = self.subquery_predicate(scope)
            if self.d.chance(15):  # under OR: a mark join filtered above
                return Expr(f"({sub.doris} OR {pred.doris})", f"({sub.duck} OR {pred.duck})",
                            "bool")
            return Expr(f"{sub.doris} AND {pred.doris}", f"{sub.duck} AND {pred.duck}", "bool")
        return pred

    def correlated_scalar(self, scope: Scope) -> Expr | None:
        """(SELECT agg(..) FROM t WHERE t.c = outer.c) in the select list."""
        inner = self.table()
        t = self.d.pick(("int", "str", "date"))
        oc, ic = self.e.column(scope, t), self.e.column(inner.scope, t)
        if oc is None or ic is None:
            return None
        agg = self.e.aggregate(inner.scope)
        return Expr(f"(SELECT {agg.doris} FROM {inner.doris} WHERE {ic.doris} = {oc.doris})",
                    f"(SELECT {agg.duck} FROM {inner.duck} WHERE {ic.duck} = {oc.duck})",
                    agg.type)

    # ---- SELECT ------------------------------------------------------------------------------
    def select(self, nested: bool = False) -> Query:
        shape = self.d.int(0, 9)
        if shape <= 3:
            return self.plain(nested)
        if shape <= 6:
            return self.grouped(nested)
        if shape <= 7 and not nested:
            return self.windowed()
        if not nested:
            return self.set_operation()
        return self.plain(nested)

    def _finish(self, q: Query, nested: bool) -> Query:
        """ORDER BY output positions (Doris' NULL order) and LIMIT / OFFSET."""
        n = len(q.types)
        want_limit = self.d.chance(15 if nested else 30)
        if not want_limit and (nested or not self.d.chance(30)):
            return q
        # every column: the kept rows are defined (always in a subquery, whose rows the outer
        # query reads whole; at the top the comparison checks only the keys otherwise)
        if want_limit and (nested or not self.d.chance(15)):
            positions = list(range(n))
            self._shuffle(positions)
        else:
            positions = sorted({self.d.int(0, n - 1) for _ in range(self.d.int(1, n))})
        order = [(p, self.d.chance(40)) for p in positions]
        nulls_first = [not desc for _, desc in order]  # Doris' default
        spelled = [""] * len(order)
        for i in range(len(order)):
            if self.d.chance(15):  # spelled out, sometimes against the default
                nulls_first[i] = self.d.chance(50)
                spelled[i] = " NULLS FIRST" if nulls_first[i] else " NULLS LAST"
        doris_keys = ", ".join(f"{p + 1}{' DESC' if desc else ''}{spelled[i]}"
                               for i, (p, desc) in enumerate(order))
        duck_keys = ", ".join(f"{p + 1} {'DESC' if desc else 'ASC'} "
                              f"{'NULLS FIRST' if nulls_first[i] else 'NULLS LAST'}"
                              for i, (p, desc) in enumerate(order))
        tail = ""
        if want_limit:
            tail = f" LIMIT {self.d.int(0, 12)}"
            if self.d.chance(25):
                tail += f" OFFSET {self.d.int(1, 5)}"
        return Query(f"{q.doris} ORDER BY {doris_keys}{tail}",
                     f"{q.duck} ORDER BY {duck_keys}{tail}", q.types, order, want_limit)

    def _shuffle(self, items: list) -> None:
        for i in range(len(items) - 1, 0, -1):
            j = self.d.int(0, i)
            items[i], items[j] = items[j], items[i]

    @staticmethod
    def _render(kw: str, exprs: list[Expr], rest_doris: str, rest_duck: str) -> tuple[str, str]:
        cols_doris = ", ".join(f"{e.doris} AS c{i}" for i, e in enumerate(exprs))
        cols_duck = ", ".join(f"{e.duck} AS c{i}" for i, e in enumerate(exprs))
        return f"SELECT {kw}{cols_doris} {rest_doris}", f"SELECT {kw}{cols_duck} {rest_duck}"

    def _from_where(self, src: Source, where: Expr | None) -> tuple[str, str]:
        if where is None:
            return f"FROM {src.doris}", f"FROM {src.duck}"
        return f"FROM {src.doris} WHERE {where.doris}", f"FROM {src.duck} WHERE {where.duck}"

    def plain(self, nested: bool, types: list[str] | None = None, finish: bool = True) -> Query:
        src = self.source(nested)
        if types is None:
            exprs = [self.e.any_scalar(src.scope, 2) for _ in range(self.d.int(1, 4))]
            if not nested and self.d.chance(8):
                inner = self.table()
                agg = self.e.aggregate(inner.scope)
                exprs.append(Expr(f"(SELECT {agg.doris} FROM {inner.doris})",
                                  f"(SELECT {agg.duck} FROM {inner.duck})", agg.type))
            if not nested and self.d.chance(8):  # IN / EXISTS as a value: a mark join
                sub = self.subquery_predicate(src.scope)
                if self.d.chance(50):
                    sub = Expr(f"CASE WHEN {sub.doris} THEN 'y' ELSE 'n' END",
                               f"CASE WHEN {sub.duck} THEN 'y' ELSE 'n' END", "str")
                else:
                    sub = Expr(f"({sub.doris})", f"({sub.duck})", "bool")
                exprs.append(sub)
            if not nested and self.d.chance(15):
                corr = self.correlated_scalar(src.scope)
                if corr is not None:
                    exprs.append(corr)
        else:  # a set operation's later branch: the first branch's column types (a
            # numeric column may be another numeric type: the result type is their common one)
            exprs = [self.e.expr(src.scope, self.d.pick(NUMERIC) if t in NUMERIC and
                                 self.d.chance(25) else t, 1) for t in types]
        distinct = "DISTINCT " if self.d.chance(20) else ""
        doris, duck = self._render(distinct, exprs, *self._from_where(
            src, self.where(src.scope, nested)))
        q = Query(doris, duck, [e.type for e in exprs])
        return self._finish(q, nested) if finish and types is None else q

    def grouped(self, nested: bool) -> Query:
        src = self.source(nested)
        groups = [self.e.expr(src.scope, self.d.pick(("int", "str", "date", "dec", "ts")),
                              self.d.int(0, 1)) for _ in range(self.d.int(0, 2))]
        # a bare integer literal in GROUP BY is a position; constants group nothing anyway
        groups = [g for g in groups if COLUMN_REF.search(g.doris)]
        aggs = [self.e.aggregate_expr(src.scope) for _ in range(self.d.int(1, 3))]
        fw_doris, fw_duck = self._from_where(src, self.where(src.scope, nested))
        if groups and self.d.chance(20):  # by output position
            fw_doris += " GROUP BY " + ", ".join(str(i + 1) for i in range(len(groups)))
            fw_duck += " GROUP BY " + ", ".join(str(i + 1) for i in range(len(groups)))
        elif groups:
            fw_doris += " GROUP BY " + ", ".join(g.doris for g in groups)
            fw_duck += " GROUP BY " + ", ".join(g.duck for g in groups)
        if self.d.chance(30):
            having = self.e.aggregate(src.scope)
            fam = NUMERIC if having.type in NUMERIC else (having.type,)
            other = self.e.leaf([], self.d.pick(fam))
            if having.type in NUMERIC and self.d.chance(20):  # an uncorrelated scalar subquery
                inner = self.table()
                agg = self.e.aggregate(inner.scope)
                if agg.type in NUMERIC:
                    other = Expr(f"(SELECT {agg.doris} FROM {inner.doris})",
                                 f"(SELECT {agg.duck} FROM {inner.duck})", agg.type)
            op = self.d.pick((">", "<", "=", ">=", "<>"))
            fw_doris += f" HAVING {having.doris} {op} {other.doris}"
            fw_duck += f" HAVING {having.duck} {op} {other.duck}"
        outputs = groups + aggs
        if not nested and self.d.chance(25):
            # window functions over the grouped rows: their scope is the GROUP BY keys and the
            # aggregates, where both engines spell them the same
            over = [(e.doris, e.type) for e in outputs if e.doris == e.duck]
            if over:
                keys_in_scope = all(g.doris == g.duck for g in groups)
                outputs = outputs + [self.e.window(over, total_ok=keys_in_scope)]
        doris, duck = self._render("", outputs, fw_doris, fw_duck)
        return self._finish(Query(doris, duck, [e.type for e in outputs]), nested)

    def windowed(self) -> Query:
        src = self.source(True)
        exprs = [self.e.any_scalar(src.scope, 1) for _ in range(self.d.int(0, 2))]
        exprs += [self.e.window(src.scope) for _ in range(self.d.int(1, 2))]
        doris, duck = self._render("", exprs, *self._from_where(
            src, self.where(src.scope, True)))
        return self._finish(Query(doris, duck, [e.type for e in exprs]), False)

    def with_cte(self) -> Query:
        """WITH w AS (..) SELECT .. FROM w [JOIN w / a table]: the CTE read once or twice."""
        inner = self.select(nested=True)
        cte_scope = [(f"w.c{i}", t) for i, t in enumerate(inner.types)]
        src = Source("w", "w", cte_scope)
        if self.d.chance(40):
            other = self.table()
            t = self.d.pick(("int", "str", "date"))
            lc, rc = self.e.column(cte_scope, t), self.e.column(other.scope, t)
            if lc is not None and rc is not None:
                kind = self.d.pick(JOIN_KINDS)
                src = Source(f"w {kind} {other.doris} ON {lc.doris} = {rc.doris}",
                             f"w {kind} {other.duck} ON {lc.duck} = {rc.duck}",
                             cte_scope + other.scope)
        exprs = [self.e.any_scalar(src.scope, 1) for _ in range(self.d.int(1, 3))]
        where = self.e.expr(src.scope, "bool", 1) if self.d.chance(50) else None
        doris, duck = self._render("", exprs, *self._from_where(src, where))
        q = self._finish(Query(doris, duck, [e.type for e in exprs]), False)
        return Query(f"WITH w AS ({inner.doris}) {q.doris}", f"WITH w AS ({inner.duck}) {q.duck}",
                     q.types, q.order, q.limited)

    def set_operation(self) -> Query:
        first = self.plain(True, finish=False)
        doris, duck = first.doris, first.duck
        for i in range(self.d.int(1, 2)):
            op = self.d.pick(SET_OPS + ("MINUS",))  # MINUS: Doris' EXCEPT
            duck_op = "EXCEPT" if op == "MINUS" else op
            other = self.plain(True, first.types)
            if i == 1 and self.d.chance(40):  # (a op b) op c
                doris, duck = f"({doris})", f"({duck})"
            doris += f" {op} {other.doris}"
            duck += f" {duck_op} {other.duck}"
        return self._finish(Query(doris, duck, first.types), False)


@st.composite
def queries(draw) -> Query:  # type: ignore[no-untyped-def]
    """One random SELECT statement (both renderings), sometimes reading a CTE."""
    gen = QueryGen(draw)
    if gen.d.chance(10):
        return gen.with_cte()
    return gen.select()
