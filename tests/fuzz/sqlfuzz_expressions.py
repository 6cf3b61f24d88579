"""The SQL fuzzer's typed expression grammar, rendered twice: as Doris SQL for ShaleDB and as
DuckDB SQL with the same meaning under Doris' rules.

Every node is an `Expr` holding both texts and a type tag (int, dec, dbl, str, date, ts, bool).
Where Doris and DuckDB spell or define a construct differently, the DuckDB text encodes Doris'
rule, with the reason next to it:

- `x / 0` and `x % 0` are NULL in Doris; DuckDB 2 returns inf or raises, so its divisor is
  wrapped in NULLIF(.., 0).
- `concat(a, b)` is NULL when an argument is NULL in Doris; DuckDB's concat skips NULLs, its
  `||` does not.
- `char_length` counts characters in both; Doris' `length` counts bytes (not generated).
- `a <=> b` (null-safe equal) is DuckDB's IS NOT DISTINCT FROM.
- date_add on a DATE stays a DATE in Doris; DuckDB's DATE + INTERVAL is a TIMESTAMP.
- `datediff(a, b)` is a - b in days in Doris; DuckDB's takes a unit and the other order.
- ORDER BY (also inside OVER) sorts NULL first ascending and last descending in Doris; DuckDB's
  default is NULLS LAST, so its text spells Doris' choice out.

Kept out on purpose: comparisons between strings and numbers (Doris and DuckDB coerce
differently), integer overflow and out-of-range dates (owned by another part of issue 12:
multiplication is only by literals up to 5, date arithmetic only moves a few days), LIKE
patterns with a backslash (MySQL's default escape, DuckDB has none) and floating-point literals
that are not binary fractions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

NUMERIC = ("int", "dec", "dbl")
SCALAR_TYPES = ("int", "dec", "dbl", "str", "date", "ts")


@dataclass(frozen=True)
class Expr:
    doris: str
    duck: str
    type: str

    def map(self, doris: str, duck: str | None = None, type_: str | None = None) -> Expr:
        """A new node whose texts wrap this one's: `{}` in the templates is this node."""
        return Expr(doris.replace("{}", self.doris),
                    (duck if duck is not None else doris).replace("{}", self.duck),
                    type_ or self.type)


def same(text: str, type_: str) -> Expr:
    return Expr(text, text, type_)


def binary(a: Expr, b: Expr, doris: str, duck: str | None, type_: str) -> Expr:
    """`doris`/`duck` templates with {a} and {b}."""
    return Expr(doris.format(a=a.doris, b=b.doris),
                (duck or doris).format(a=a.duck, b=b.duck), type_)


def order_key(e: Expr, desc: bool) -> Expr:
    """One ORDER BY key with Doris' default NULL placement made explicit for DuckDB."""
    return Expr(f"{e.doris}{' DESC' if desc else ''}",
                f"{e.duck} {'DESC NULLS LAST' if desc else 'ASC NULLS FIRST'}", e.type)


# Scope: the columns a clause may reference, as (qualified SQL, type tag).
Scope = Sequence[tuple[str, str]]


class Draws:
    """hypothesis draws with shrink-friendly helpers: `chance` shrinks to False, `pick` to the
    first (simplest) element."""

    def __init__(self, draw: Callable) -> None:
        self.draw = draw

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) >= 100 - percent

    def pick(self, seq: Sequence):  # type: ignore[no-untyped-def]
        return self.draw(st.sampled_from(list(seq)))

    def int(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))


INT_LITERALS = ("1", "0", "2", "-1", "5", "7", "100")
DEC_LITERALS = ("1.50", "0.25", "-3.10", "2.00", "12345.67")
DBL_LITERALS = ("1.5", "0", "-2.25", "3.125", "1e10")
STR_LITERALS = ("a", "b", "B", "ab", "", "zz", "x y", "\u00e9t\u00e9", "A%", "a_b", "c")
DATE_LITERALS = ("2024-01-03", "2024-01-01", "2024-01-06", "2023-06-01")
TS_LITERALS = ("2024-01-03 07:30:00", "2024-01-01 00:00:00", "2024-01-05 23:59:59")
LIKE_PATTERNS = ("a%", "%b%", "_", "__", "___", "%", "a\\_b", "A%%", "%\u00e9%")


def literal(d: Draws, t: str) -> Expr:
    if t == "int":
        return same(d.pick(INT_LITERALS), t)
    if t == "dec":
        return same(d.pick(DEC_LITERALS), t)
    if t == "dbl":
        return same(f"CAST({d.pick(DBL_LITERALS)} AS DOUBLE)", t)
    if t == "str":
        return same("'" + d.pick(STR_LITERALS) + "'", t)
    if t == "date":
        return same(f"CAST('{d.pick(DATE_LITERALS)}' AS DATE)", t)
    if t == "ts":
        v = d.pick(TS_LITERALS)
        return Expr(f"CAST('{v}' AS DATETIME)", f"CAST('{v}' AS TIMESTAMP)", t)
    if t == "bool":
        return same(d.pick(("TRUE", "FALSE")), t)
    raise ValueError(t)


class ExprGen:
    """Random typed expressions over a scope."""

    def __init__(self, d: Draws) -> None:
        self.d = d

    def column(self, scope: Scope, t: str) -> Expr | None:
        cols = [c for c, ct in scope if ct == t]
        return same(self.d.pick(cols), t) if cols else None

    def leaf(self, scope: Scope, t: str) -> Expr:
        if t == "bool":  # no BOOLEAN columns: a comparison of leaves, rarely TRUE / FALSE
            return literal(self.d, t) if self.d.chance(5) else self.comparison(scope, 0)
        col = self.column(scope, t)
        if col is not None and not self.d.chance(20):
            return col
        return literal(self.d, t)

    def expr(self, scope: Scope, t: str, depth: int = 2) -> Expr:
        if depth <= 0 or not self.d.chance(40):
            return self.leaf(scope, t)
        return getattr(self, f"_{t}")(scope, depth - 1)

    def numeric(self, scope: Scope, depth: int) -> Expr:
        return self.expr(scope, self.d.pick(NUMERIC), depth)

    def any_scalar(self, scope: Scope, depth: int = 1) -> Expr:
        return self.expr(scope, self.d.pick(SCALAR_TYPES), depth)

    # ---- per type ----------------------------------------------------------------------------
    def _common(self, scope: Scope, t: str, depth: int) -> Expr | None:
        """CASE / coalesce, shared by every type."""
        r = self.d.int(0, 5)
        if r == 1:
            cond = self.expr(scope, "bool", depth)
            a, b = self.expr(scope, t, depth), self.expr(scope, t, depth)
            if self.d.chance(30):  # no ELSE: NULL
                return Expr(f"CASE WHEN {cond.doris} THEN {a.doris} END",
                            f"CASE WHEN {cond.duck} THEN {a.duck} END", t)
            return Expr(f"CASE WHEN {cond.doris} THEN {a.doris} ELSE {b.doris} END",
                        f"CASE WHEN {cond.duck} THEN {a.duck} ELSE {b.duck} END", t)
        if r == 2:
            a, b = self.expr(scope, t, depth), self.expr(scope, t, depth)
            form = self.d.int(0, 5)
            if form == 1:
                return binary(a, b, "ifnull({a}, {b})", None, t)
            if form == 2:
                return binary(a, b, "nullif({a}, {b})", None, t)
            if form == 3:
                c = self.expr(scope, "bool", depth)
                return Expr(f"if({c.doris}, {a.doris}, {b.doris})",
                            f"if({c.duck}, {a.duck}, {b.duck})", t)
            if form == 4 and t != "bool":  # Doris (as MySQL): NULL if any argument is NULL
                fn = self.d.pick(("greatest", "least"))
                return binary(a, b, f"{fn}({{a}}, {{b}})",
                              f"CASE WHEN {{a}} IS NULL OR {{b}} IS NULL THEN NULL "
                              f"ELSE {fn}({{a}}, {{b}}) END", t)
            if form == 5:  # simple CASE
                x = self.expr(scope, t, depth)
                w1, w2 = literal(self.d, t), literal(self.d, t)
                return Expr(f"CASE {x.doris} WHEN {w1.doris} THEN {a.doris} WHEN {w2.doris} "
                            f"THEN {b.doris} END",
                            f"CASE {x.duck} WHEN {w1.duck} THEN {a.duck} WHEN {w2.duck} "
                            f"THEN {b.duck} END", t)
            return binary(a, b, "coalesce({a}, {b})", None, t)
        return None

    def _int(self, scope: Scope, depth: int) -> Expr:
        common = self._common(scope, "int", depth)
        if common is not None:
            return common
        e = lambda: self.expr(scope, "int", depth)
        r = self.d.int(0, 13)
        if r == 10:  # Doris' DIV truncates towards zero; DuckDB's // floors
            return binary(e(), e(), "({a} DIV {b})",
                          "CAST(trunc({a} / NULLIF({b}, 0)) AS BIGINT)", "int")
        if r == 11:
            fn, duck = self.d.pick((("dayofweek", "(dayofweek({}) + 1)"),
                                    ("weekday", "(isodow({}) - 1)"), ("quarter", None),
                                    ("dayofyear", None)))
            return self.expr(scope, "date", depth).map(f"{fn}({{}})",
                                                       duck, "int")
        if r == 12:
            fn = self.d.pick(("hour", "minute", "second"))
            return self.expr(scope, "ts", depth).map(f"{fn}({{}})", None, "int")
        if r == 13:
            pick = self.d.int(0, 2)
            if pick == 0:  # Doris counts whole units elapsed (date_sub in DuckDB), not boundaries
                unit = self.d.pick(("HOUR", "DAY", "MINUTE"))
                return binary(self.expr(scope, "ts", depth), self.expr(scope, "ts", depth),
                              f"timestampdiff({unit}, {{a}}, {{b}})",
                              f"date_sub('{unit.lower()}', {{a}}, {{b}})", "int")
            if pick == 1:
                return binary(self.expr(scope, "str", depth), self.expr(scope, "str", depth),
                              "instr({a}, {b})", None, "int")
            return self.expr(scope, self.d.pick(NUMERIC), depth).map("sign({})", None, "int")
        if r == 0:
            return binary(e(), e(), "({a} + {b})", None, "int")
        if r == 1:
            return binary(e(), e(), "({a} - {b})", None, "int")
        if r == 2:
            return e().map(f"({{}} * {self.d.int(-3, 5)})")
        if r == 3:
            return e().map("abs({})")
        if r == 4:
            return self.expr(scope, "str", depth).map("char_length({})", "length({})", "int")
        if r == 5:
            fn = self.d.pick(("year", "month", "dayofmonth"))
            return self.expr(scope, "date", depth).map(f"{fn}({{}})", None, "int")
        if r == 6:
            return binary(e(), e(), "({a} % {b})", "({a} % NULLIF({b}, 0))", "int")
        if r == 7:
            return binary(self.expr(scope, "date", depth), self.expr(scope, "date", depth),
                          "datediff({a}, {b})", "datediff('day', {b}, {a})", "int")
        if r == 8:
            return e().map("(-{})")
        return self.expr(scope, "bool", depth).map(
            "CASE WHEN {} THEN 1 ELSE 0 END", None, "int")

    def _dec(self, scope: Scope, depth: int) -> Expr:
        common = self._common(scope, "dec", depth)
        if common is not None:
            return common
        e = lambda: self.expr(scope, "dec", depth)
        r = self.d.int(0, 5)
        if r == 5:
            n = self.d.int(-1, 2)
            fn, duck = self.d.pick((("round", "round"), ("truncate", "trunc")))
            if fn == "round" and n == -1:  # no digits: 0
                return e().map("round({})")
            return e().map(f"{fn}({{}}, {n})", f"{duck}({{}}, {n})")
        if r == 0:
            return binary(e(), self.expr(scope, self.d.pick(("dec", "int")), depth),
                          "({a} + {b})", None, "dec")
        if r == 1:
            return binary(e(), e(), "({a} - {b})", None, "dec")
        if r == 2:
            return e().map(f"({{}} * {self.d.int(-3, 5)})")
        if r == 3:
            return e().map("abs({})")
        return self.expr(scope, "int", depth).map("CAST({} AS DECIMAL(18, 2))")

    def _dbl(self, scope: Scope, depth: int) -> Expr:
        common = self._common(scope, "dbl", depth)
        if common is not None:
            return common
        r = self.d.int(0, 5)
        if r == 5:
            fn = self.d.pick(("floor", "ceil", "round"))
            return self.expr(scope, "dbl", depth).map(f"{fn}({{}})")
        if r == 0:
            return binary(self.expr(scope, "dbl", depth), self.numeric(scope, depth),
                          "({a} + {b})", None, "dbl")
        if r == 1:  # Doris: x / 0 is NULL (DuckDB: inf)
            num = self.expr(scope, self.d.pick(("int", "dbl")), depth)
            den = self.expr(scope, self.d.pick(("int", "dbl")), depth)
            return binary(num, den, "({a} / {b})", "({a} / NULLIF({b}, 0))", "dbl")
        if r == 2:
            return self.expr(scope, "dbl", depth).map(f"({{}} * {self.d.int(-3, 5)})")
        if r == 3:
            return self.expr(scope, "dbl", depth).map("abs({})")
        return self.expr(scope, "int", depth).map("CAST({} AS DOUBLE)", None, "dbl")

    def _str(self, scope: Scope, depth: int) -> Expr:
        common = self._common(scope, "str", depth)
        if common is not None:
            return common
        e = lambda: self.expr(scope, "str", depth)
        r = self.d.int(0, 9)
        if r == 6:
            n = self.d.int(0, 3)
            return e().map(self.d.pick((f"left({{}}, {n})", f"right({{}}, {n})")))
        if r == 7:
            n = self.d.int(1, 4)
            return e().map(self.d.pick((f"lpad({{}}, {n}, '*')", f"rpad({{}}, {n}, '-')")))
        if r == 8:
            return e().map("reverse({})")
        if r == 9:  # concat_ws skips NULL arguments in both
            return binary(e(), e(), "concat_ws('-', {a}, {b})", None, "str")
        if r == 0:
            return e().map(self.d.pick(("upper({})", "lower({})")))
        if r == 1:  # Doris concat is NULL on a NULL argument; DuckDB's concat skips NULLs
            return binary(e(), e(), "concat({a}, {b})", "({a} || {b})", "str")
        if r == 2:
            return e().map(f"substr({{}}, {self.d.int(1, 3)}, {self.d.int(1, 3)})")
        if r == 3:
            return e().map("replace({}, 'a', 'x')")
        if r == 4:
            return e().map("trim({})")
        return self.expr(scope, "int", depth).map("CAST({} AS VARCHAR)", None, "str")

    def _date(self, scope: Scope, depth: int) -> Expr:
        common = self._common(scope, "date", depth)
        if common is not None:
            return common
        r = self.d.int(0, 3)
        if r == 3:
            return self.expr(scope, "date", depth).map("last_day({})")
        if r == 0:  # a DATE stays a DATE in Doris
            n = self.d.int(-3, 3)
            return self.expr(scope, "date", depth).map(
                f"date_add({{}}, INTERVAL {n} DAY)", f"CAST({{}} + INTERVAL ({n}) DAY AS DATE)")
        if r == 1:
            return self.expr(scope, "ts", depth).map("CAST({} AS DATE)", None, "date")
        return self.expr(scope, "date", depth)

    def _ts(self, scope: Scope, depth: int) -> Expr:
        common = self._common(scope, "ts", depth)
        if common is not None:
            return common
        if self.d.chance(30):
            unit = self.d.pick(("day", "hour", "month"))
            return self.expr(scope, "ts", depth).map(f"date_trunc({{}}, '{unit}')",
                                                     f"date_trunc('{unit}', {{}})")
        n = self.d.int(-30, 30)
        return self.expr(scope, "ts", depth).map(
            f"date_add({{}}, INTERVAL {n} HOUR)", f"({{}} + INTERVAL ({n}) HOUR)")

    def _bool(self, scope: Scope, depth: int) -> Expr:
        r = self.d.int(0, 7)
        if r <= 2:
            return self.comparison(scope, depth)
        if r == 3:
            x = self.any_scalar(scope, depth)
            return x.map(self.d.pick(("{} IS NULL", "{} IS NOT NULL")), None, "bool")
        if r == 4:
            t = self.d.pick(("int", "dec", "dbl", "str", "date"))
            x = self.expr(scope, t, depth)
            items = [literal(self.d, t) for _ in range(self.d.int(1, 3))]
            if self.d.chance(15):
                items.append(same("NULL", t))
            neg = "NOT " if self.d.chance(30) else ""
            return Expr(f"{x.doris} {neg}IN ({', '.join(i.doris for i in items)})",
                        f"{x.duck} {neg}IN ({', '.join(i.duck for i in items)})", "bool")
        if r == 5:
            t = self.d.pick(("int", "dec", "dbl", "date", "str"))
            x, lo, hi = (self.expr(scope, t, depth) for _ in range(3))
            return Expr(f"({x.doris} BETWEEN {lo.doris} AND {hi.doris})",
                        f"({x.duck} BETWEEN {lo.duck} AND {hi.duck})", "bool")
        if r == 6:
            neg = "NOT " if self.d.chance(30) else ""
            pat = self.d.pick(LIKE_PATTERNS)
            if "\\" in pat:  # MySQL's default escape is a backslash; DuckDB has none
                return self.expr(scope, "str", depth).map(
                    f"{{}} {neg}LIKE '{pat.replace(chr(92), chr(92) * 2)}'",
                    f"{{}} {neg}LIKE '{pat}' ESCAPE '\\'", "bool")
            return self.expr(scope, "str", depth).map(f"{{}} {neg}LIKE '{pat}'", None, "bool")
        a, b = self.expr(scope, "bool", depth), self.expr(scope, "bool", depth)
        op = self.d.pick(("AND", "OR", "NOT"))
        if op == "NOT":
            return a.map("(NOT {})")
        return binary(a, b, f"({{a}} {op} {{b}})", None, "bool")

    def comparison(self, scope: Scope, depth: int) -> Expr:
        family = self.d.pick(("num", "str", "date", "ts"))
        if family == "num":
            a, b = self.numeric(scope, depth), self.numeric(scope, depth)
        elif family in ("date", "ts") and self.d.chance(25):
            # a bare string literal compared with a DATE / DATETIME is cast to its type
            a = self.expr(scope, family, depth)
            b = same("'" + self.d.pick(DATE_LITERALS if family == "date" else TS_LITERALS)
                     + "'", family)
        else:
            a, b = self.expr(scope, family, depth), self.expr(scope, family, depth)
        op = self.d.pick(("=", "<", ">", "<>", "<=", ">=", "<=>"))
        if op == "<=>":
            return binary(a, b, "({a} <=> {b})", "({a} IS NOT DISTINCT FROM {b})", "bool")
        return binary(a, b, f"({{a}} {op} {{b}})", None, "bool")

    # ---- aggregates and windows ------------------------------------------------------------
    def aggregate(self, scope: Scope) -> Expr:
        """An aggregate call over depth-1 arguments; its type tag is its result's family."""
        fn = self.d.pick(("count(*)", "sum", "min", "max", "count", "avg", "count_distinct",
                          "sum_distinct", "stddev", "group_concat"))
        if fn == "count(*)":
            return same("count(*)", "int")
        if fn in ("sum", "avg", "sum_distinct"):
            x = self.numeric(scope, 1)
            if fn == "sum_distinct":
                fn = self.d.pick(("sum", "avg"))
                return x.map(f"{fn}(DISTINCT {{}})", None, "dbl" if fn == "avg" else x.type)
            return x.map(f"{fn}({{}})", None, "dbl" if fn == "avg" else x.type)
        if fn == "stddev":  # Doris' stddev / variance are the population ones
            x = self.expr(scope, self.d.pick(("int", "dbl")), 1)
            doris, duck = self.d.pick((("stddev", "stddev_pop"), ("variance", "var_pop"),
                                       ("stddev_samp", None), ("var_samp", None)))
            return x.map(f"{doris}({{}})", f"{duck or doris}({{}})", "dbl")
        if fn == "group_concat":  # sorted, so the text is defined; ", " is Doris' separator
            x = self.expr(scope, "str", 1)
            return x.map("group_concat(DISTINCT {} ORDER BY {})",
                         "string_agg(DISTINCT {}, ', ' ORDER BY {})", "str")
        x = self.any_scalar(scope, 1)
        if fn == "count":
            return x.map("count({})", None, "int")
        if fn == "count_distinct":
            if self.d.chance(25):  # Doris counts distinct tuples without a NULL member
                y = self.any_scalar(scope, 0)
                return Expr(f"count(DISTINCT {x.doris}, {y.doris})",
                            f"count(DISTINCT ({x.duck}, {y.duck})) FILTER (WHERE {x.duck} IS "
                            f"NOT NULL AND {y.duck} IS NOT NULL)", "int")
            return x.map("count(DISTINCT {})", None, "int")
        return x.map(f"{fn}({{}})")

    def aggregate_expr(self, scope: Scope) -> Expr:
        a = self.aggregate(scope)
        if a.type in NUMERIC and self.d.chance(20):
            b = self.aggregate(scope)
            if b.type in NUMERIC:
                return binary(a, b, "({a} + {b})", None, "dbl" if "dbl" in (a.type, b.type)
                              else "dec" if "dec" in (a.type, b.type) else "int")
        return a

    def window(self, scope: Scope, total_ok: bool = True) -> Expr:
        """A window function. Over a partial order only functions whose value is the same
        whatever order tied rows come in: rank, dense_rank, percent_rank, cume_dist and
        aggregates with the default frame (RANGE: peers share a value). Over a total order
        (the ORDER BY ends with every column in scope, so only identical rows tie, and
        swapping those changes nothing) also row_number, ntile, lag / lead, first_value /
        last_value and ROWS frames. `total_ok` False: the scope's columns do not tell every
        row apart (a GROUP BY key left out of it), so no total order is possible."""
        parts = [self.leaf(scope, self.d.pick(("int", "str", "date")))
                 for _ in range(self.d.int(0, 2))]
        keys = [order_key(self.leaf(scope, self.d.pick(SCALAR_TYPES)), self.d.chance(40))
                for _ in range(self.d.int(0, 2))]
        total = total_ok and self.d.chance(40)
        if total:
            keys += [order_key(same(c, t), self.d.chance(30)) for c, t in scope]
        frame = ""
        r = self.d.int(0, 7)
        if r == 0 or (r == 1 and not total):
            fn = self.d.pick(("rank", "dense_rank", "percent_rank", "cume_dist"))
            keys = keys or [order_key(self.leaf(scope, "int"), False)]
            call = same(f"{fn}()", "int" if fn in ("rank", "dense_rank") else "dbl")
        elif r == 1:
            fn = self.d.pick(("row_number()", "ntile(3)", "lag", "lead", "first_value",
                              "last_value"))
            if fn in ("lag", "lead"):
                x = self.any_scalar(scope, 0)
                default = literal(self.d, x.type)
                n = self.d.int(1, 2)
                call = Expr(f"{fn}({x.doris}, {n}, {default.doris})",
                            f"{fn}({x.duck}, {n}, {default.duck})", x.type)
            elif fn in ("first_value", "last_value"):
                call = self.any_scalar(scope, 0).map(f"{fn}({{}})")
            else:
                call = same(fn, "int")
        else:
            call = self.aggregate(scope)
            # ShaleDB's windows take sum / avg / min / max / count (bind_window.py); DISTINCT,
            # group_concat, stddev and variance over a window are not supported (reported)
            if any(w in call.doris for w in ("DISTINCT", "group_concat", "std", "var")):
                call = same("count(*)", "int")
            if total and self.d.chance(50):
                lo = self.d.pick(("UNBOUNDED PRECEDING", "1 PRECEDING", "CURRENT ROW"))
                hi = self.d.pick(("CURRENT ROW", "1 FOLLOWING", "UNBOUNDED FOLLOWING"))
                frame = f" ROWS BETWEEN {lo} AND {hi}"

        def over(side: str) -> str:
            clauses = []
            if parts:
                clauses.append("PARTITION BY " + ", ".join(getattr(p, side) for p in parts))
            if keys:
                clauses.append("ORDER BY " + ", ".join(getattr(k, side) for k in keys) + frame)
            return f"{getattr(call, side)} OVER ({' '.join(clauses)})"

        if not keys and call.doris.split("(")[0] in ("row_number", "ntile", "lag", "lead",
                                                     "first_value", "last_value"):
            raise AssertionError("an order-dependent window function without ORDER BY")
        return Expr(over("doris"), over("duck"), call.type)
