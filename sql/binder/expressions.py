"""Bound expression IR: typed, resolved expressions produced by the binder.

Every node is a frozen, slotted dataclass with a `type` (a storage `DataType`), so plans that
hold them can be printed, compared and hashed, and rewrites return new nodes. Column references
name a column of the operator's input batch (names are unique per plan node: scan columns keep
the table's column names, aggregate outputs get generated names). Literals hold PHYSICAL values
(storage/types.py layouts: DATE = days, DATETIME = micros, DECIMAL = unscaled int, strings = str).
BETWEEN is rewritten to AND of two comparisons by the binder; simple CASE to searched CASE.
Upstream concept: Doris Nereids `Expression` tree after analysis, DuckDB `BoundExpression`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

from storage.types import BOOLEAN, DataType

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """A bound expression class's field names: `dataclasses.fields` builds them anew on each
    call, and binding and planning walk every expression tree several times per statement.
    (A plain dict, not functools.cache: filling it twice from two threads is harmless.)"""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


@dataclass(frozen=True, slots=True)
class Expr:
    """Base of all bound expressions. Subclasses declare `type` and their operands."""

    if TYPE_CHECKING:
        # Every subclass declares `type` as a dataclass field; here it is only a read-only
        # attribute for the type checker (a field on the base would come first in every
        # subclass's constructor).
        @property
        def type(self) -> DataType: ...

    @property
    def dtype(self) -> DataType:
        return self.type

    def children(self) -> tuple[Expr, ...]:
        out: list[Expr] = []
        for name in _field_names(type(self)):
            v = getattr(self, name)
            if isinstance(v, Expr):
                out.append(v)
            elif isinstance(v, tuple):
                for item in v:
                    if isinstance(item, Expr):
                        out.append(item)
                    elif isinstance(item, tuple):
                        out.extend(x for x in item if isinstance(x, Expr))
        return tuple(out)

    def transform(self, fn: Callable[[Expr], Expr | None]) -> Expr:
        """Top-down rewrite: `fn` returns a replacement (not descended into) or None to recurse."""
        repl = fn(self)
        if repl is not None:
            return repl
        changes: dict[str, object] = {}
        for name in _field_names(type(self)):
            v = getattr(self, name)
            nv = _transform_value(v, fn)
            if nv is not v:
                changes[name] = nv
        return replace(self, **changes) if changes else self

    def walk(self) -> Iterator[Expr]:
        yield self
        for c in self.children():
            yield from c.walk()

    def sql(self) -> str:
        return repr(self)


def _transform_value(v: object, fn: Callable[[Expr], Expr | None]) -> object:
    if isinstance(v, Expr):
        return v.transform(fn)
    if isinstance(v, tuple):
        items = tuple(_transform_value(x, fn) for x in v)
        return v if all(a is b for a, b in zip(items, v)) else items
    return v


@dataclass(frozen=True, slots=True)
class ColumnRef(Expr):
    name: str
    type: DataType

    def sql(self) -> str:
        return f"`{self.name}`"


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    value: object  # physical value, None = NULL
    type: DataType

    def sql(self) -> str:
        if self.value is None:
            return "NULL"
        text = self.type.format_value(self.value)
        if self.type.is_string or self.type.is_temporal:
            return "'" + str(text).replace("'", "''") + "'"
        return str(text)


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """A scalar function from the registry (`sql.functions.SCALAR`), by lower-case name."""

    name: str
    args: tuple[Expr, ...]
    type: DataType

    def sql(self) -> str:
        return f"{self.name}({', '.join(a.sql() for a in self.args)})"


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    arg: Expr
    type: DataType

    def sql(self) -> str:
        return f"CAST({self.arg.sql()} AS {self.type.sql()})"


@dataclass(frozen=True, slots=True)
class Case(Expr):
    """Searched CASE: the first `when` that is TRUE picks its `then`; else `default` (NULL)."""

    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None
    type: DataType

    def sql(self) -> str:
        parts = " ".join(f"WHEN {w.sql()} THEN {t.sql()}" for w, t in self.whens)
        tail = f" ELSE {self.default.sql()}" if self.default is not None else ""
        return f"CASE {parts}{tail} END"


@dataclass(frozen=True, slots=True)
class InList(Expr):
    arg: Expr
    values: tuple[Expr, ...]
    negated: bool = False
    type: DataType = BOOLEAN

    def sql(self) -> str:
        op = "NOT IN" if self.negated else "IN"
        return f"{self.arg.sql()} {op} ({', '.join(v.sql() for v in self.values)})"


@dataclass(frozen=True, slots=True)
class IsNull(Expr):
    arg: Expr
    negated: bool = False
    type: DataType = BOOLEAN

    def sql(self) -> str:
        return f"{self.arg.sql()} IS {'NOT ' if self.negated else ''}NULL"


@dataclass(frozen=True, slots=True)
class Like(Expr):
    arg: Expr
    pattern: Expr
    negated: bool = False
    escape: str = "\\"
    type: DataType = BOOLEAN

    def sql(self) -> str:
        return f"{self.arg.sql()} {'NOT ' if self.negated else ''}LIKE {self.pattern.sql()}"


@dataclass(frozen=True, slots=True)
class And(Expr):
    args: tuple[Expr, ...]
    type: DataType = BOOLEAN

    def sql(self) -> str:
        return "(" + " AND ".join(a.sql() for a in self.args) + ")"


@dataclass(frozen=True, slots=True)
class Or(Expr):
    args: tuple[Expr, ...]
    type: DataType = BOOLEAN

    def sql(self) -> str:
        return "(" + " OR ".join(a.sql() for a in self.args) + ")"


@dataclass(frozen=True, slots=True)
class Not(Expr):
    arg: Expr
    type: DataType = BOOLEAN

    def sql(self) -> str:
        return f"NOT {self.arg.sql()}"


COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
# op with operands swapped: a < b  <=>  b > a
SWAPPED_OP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=", "<=>": "<=>"}


@dataclass(frozen=True, slots=True)
class Comparison(Expr):
    """`op` in COMPARISON_OPS; `<=>` is MySQL's null-safe equality (never NULL)."""

    op: str
    left: Expr
    right: Expr
    type: DataType = BOOLEAN

    def sql(self) -> str:
        return f"({self.left.sql()} {self.op} {self.right.sql()})"


ARITHMETIC_OPS = ("+", "-", "*", "/", "%", "DIV")


@dataclass(frozen=True, slots=True)
class Arithmetic(Expr):
    """Binary arithmetic; operands are already cast to the types the op computes in."""

    op: str
    left: Expr
    right: Expr
    type: DataType

    def sql(self) -> str:
        return f"({self.left.sql()} {self.op} {self.right.sql()})"


@dataclass(frozen=True, slots=True)
class Negate(Expr):
    arg: Expr
    type: DataType

    def sql(self) -> str:
        return f"(-{self.arg.sql()})"


@dataclass(frozen=True, slots=True)
class AggregateCall(Expr):
    """An aggregate (`sql.functions.AGGREGATES`); `args` empty for count(*)."""

    name: str
    args: tuple[Expr, ...]
    distinct: bool
    type: DataType

    def sql(self) -> str:
        inner = ", ".join(a.sql() for a in self.args) if self.args else "*"
        return f"{self.name}({'DISTINCT ' if self.distinct else ''}{inner})"


@dataclass(frozen=True, slots=True)
class OuterRef(Expr):
    """A correlated reference from a subquery to a column of an enclosing query."""

    name: str
    type: DataType

    def sql(self) -> str:
        return f"outer(`{self.name}`)"


@dataclass(frozen=True, slots=True)
class SubqueryExpr(Expr):
    """`arg IN (query)` / `EXISTS (query)` / `(query)` as a scalar; planned as a join.

    `query` is the bound subquery (sql.binder.relations.BoundQuery); it is excluded from equality
    and hashing, which use the binder-assigned `sid`. `value_type` is the type the subquery's column
    is compared in (IN) or returns (scalar).
    """

    kind: str  # "in" | "exists" | "scalar"
    sid: int
    arg: Expr | None
    negated: bool
    value_type: DataType
    type: DataType
    query: object = field(default=None, compare=False, hash=False)

    def sql(self) -> str:
        if self.kind == "in":
            arg = self.arg.sql() if self.arg is not None else ""
            return f"{arg} {'NOT ' if self.negated else ''}IN (subquery#{self.sid})"
        if self.kind == "exists":
            return f"{'NOT ' if self.negated else ''}EXISTS (subquery#{self.sid})"
        return f"(subquery#{self.sid})"


def conjuncts(expr: Expr | None) -> list[Expr]:
    """Flatten nested ANDs into a list of conjuncts (empty for None)."""
    if expr is None:
        return []
    if isinstance(expr, And):
        out: list[Expr] = []
        for a in expr.args:
            out.extend(conjuncts(a))
        return out
    return [expr]


def make_and(parts: list[Expr]) -> Expr | None:
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def column_names(expr: Expr) -> set[str]:
    """Names of every column the expression reads."""
    return {e.name for e in expr.walk() if isinstance(e, ColumnRef)}


def contains_aggregate(expr: Expr) -> bool:
    return any(isinstance(e, AggregateCall) for e in expr.walk())


@dataclass(frozen=True, slots=True)
class WindowFrame:
    """`kind` "rows" | "range"; bounds are ("unbounded_preceding" | "preceding" | "current_row"
    | "following" | "unbounded_following", offset) with offset only for (pre|fol)ceding."""

    kind: str
    start: tuple[str, int]
    end: tuple[str, int]

    def sql(self) -> str:
        def bound(b: tuple[str, int]) -> str:
            name = b[0].upper().replace("_", " ")
            return f"{b[1]} {name}" if b[0] in ("preceding", "following") else name

        return f"{self.kind.upper()} BETWEEN {bound(self.start)} AND {bound(self.end)}"


@dataclass(frozen=True, slots=True)
class WindowCall(Expr):
    """`name(args) OVER (PARTITION BY partition_by ORDER BY order_by frame)`; planned as a
    LogicalWindow column (sql/binder/bind_window.py). `order_by` items are
    (expr, desc, nulls_first); `frame` is the effective frame (defaults filled in) or None for
    ranking functions."""

    name: str
    args: tuple[Expr, ...]
    partition_by: tuple[Expr, ...]
    order_by: tuple[tuple[Expr, bool, bool], ...]
    frame: WindowFrame | None
    type: DataType

    def sql(self) -> str:
        parts = []
        if self.partition_by:
            parts.append("PARTITION BY " + ", ".join(p.sql() for p in self.partition_by))
        if self.order_by:
            parts.append("ORDER BY " + ", ".join(
                f"{e.sql()}{' DESC' if d else ''}" for e, d, _ in self.order_by))
        if self.frame is not None:
            parts.append(self.frame.sql())
        inner = ", ".join(a.sql() for a in self.args)
        return f"{self.name}({inner}) OVER ({' '.join(parts)})"


def contains_window(expr: Expr) -> bool:
    return any(isinstance(e, WindowCall) for e in expr.walk())
