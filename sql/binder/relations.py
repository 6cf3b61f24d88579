"""Bound query types (`BoundSelect`, `BoundSetOp`, FROM relations) and name scopes.

`BoundSelect` / `TableSource` / `ValuesSource` describe one bound SELECT (see sql.binder.select).

A FROM clause with joins, derived tables or CTE references binds to a tree of relations:
`BoundTable` (a catalog table), `BoundValuesRel` (information_schema rows), `BoundDerived`
(a bound subquery with an alias) and `BoundJoin`. Every column of such a tree gets a unique
internal name (`<column>#<n>`), so a self join or a subquery reading the same table never
clashes; the planner renames the scan / subquery outputs to those names. A `Scope` maps the
user's `[db.][table.]column` spelling to the internal names, reports ambiguity with MySQL's
wording, expands `*` / `t.*`, and falls back to the enclosing query's scope for correlated
references (`OuterRef`). Set operations bind to `BoundSetOp`.
Upstream: Doris Nereids `BindRelation` / `Scope`, MySQL name resolution rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from sql.binder.expressions import AggregateCall, ColumnRef, Expr, OuterRef
from sql.binder.table_functions import FileSource
from sql.errors import DorisError
from storage.catalog.meta import (
    TableMeta,
)
from storage.catalog.view import CatalogView  # noqa: F401 - re-exported for the binder's callers
from storage.types import BOOLEAN, DataType


@dataclass(frozen=True, slots=True)
class TableSource:
    db: str
    table: TableMeta
    alias: str
    # `FROM t PARTITION (p1, p2)`: read only these partitions (names as in the catalog);
    # a TemporaryPartitionNames for `FROM t TEMPORARY PARTITION (tp1, ..)`
    partitions: tuple[str, ...] = ()
    # `FROM t TABLET (id, ..)`: read only these tablets (ids checked against the table)
    tablets: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ValuesSource:
    """Rows known at bind time: information_schema tables, or one dummy row without FROM."""

    alias: str
    names: tuple[str, ...]
    types: tuple[DataType, ...]
    rows: tuple[tuple[object, ...], ...]


NO_FROM = ValuesSource("", ("__dummy",), (BOOLEAN,), ((1,),))


@dataclass(frozen=True, slots=True)
class SortKey:
    """One ORDER BY item: the binder's output and the planner's sort key (LogicalSort, TopN)."""

    expr: Expr
    desc: bool = False
    nulls_first: bool = True  # MySQL/Doris: NULLs first for ASC, last for DESC


@dataclass(frozen=True, slots=True)
class RepeatSpec:
    """GROUP BY grouping sets run as Doris' Repeat (sql/binder/grouping_sets.py builds it,
    planner/repeat.py plans it): every input row repeated once per set, `key_exprs` computed
    into `key_names` and NULL in the copies of the sets that leave them out, plus constant
    BIGINT columns per set: `id_name` (the set's position, so duplicate sets stay apart) and
    the GROUPING() / GROUPING_ID() calls (`virtual_names`, `virtual_values[j][set]`)."""

    key_names: tuple[str, ...]
    key_exprs: tuple[Expr, ...]
    sets: tuple[tuple[int, ...], ...]  # per set, the indexes of the keys it keeps
    id_name: str
    virtual_names: tuple[str, ...]
    virtual_values: tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class BoundSelect:
    source: TableSource | ValuesSource | FileSource | BoundRelation
    where: Expr | None
    is_aggregate: bool
    group_by: tuple[tuple[str, Expr], ...]
    aggregates: tuple[tuple[str, AggregateCall], ...]
    having: Expr | None
    projections: tuple[tuple[str, Expr], ...]  # visible ones first, then hidden sort keys
    visible: int
    names: tuple[str, ...]  # client-facing labels of the visible projections
    distinct: bool
    order_by: tuple[SortKey, ...]  # over projection names
    limit: int | None
    offset: int
    # window calls computed after GROUP BY / HAVING, referenced by name from projections
    windows: tuple[tuple[str, Expr], ...] = ()
    # GROUPING SETS / ROLLUP / CUBE: the Repeat below the aggregate (`group_by` then reads its
    # nulled key columns and its set id / GROUPING columns)
    repeat: RepeatSpec | None = None

    @property
    def types(self) -> tuple[DataType, ...]:
        return tuple(e.type for _, e in self.projections[: self.visible])




@dataclass(frozen=True, slots=True)
class RelColumn:
    name: str  # as the user spells it
    internal: str  # unique within the whole statement
    type: DataType


@dataclass(frozen=True, slots=True)
class BoundTable:
    source: TableSource
    columns: tuple[RelColumn, ...]  # in table column order


@dataclass(frozen=True, slots=True)
class BoundValuesRel:
    source: ValuesSource
    columns: tuple[RelColumn, ...]


@dataclass(frozen=True, slots=True)
class BoundFileRel:
    """A file table function (`local(..)`) in a FROM clause with joins or subqueries."""

    source: FileSource
    columns: tuple[RelColumn, ...]


@dataclass(frozen=True, slots=True)
class BoundDerived:
    query: BoundQuery
    alias: str
    columns: tuple[RelColumn, ...]  # one per visible output of `query`


@dataclass(frozen=True, slots=True)
class BoundJoin:
    left: BoundRelation
    right: BoundRelation
    kind: str  # planner.logical.JOIN_KINDS
    condition: Expr | None
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class BoundLateral:
    """`input LATERAL VIEW function(args) alias AS columns`: every row of `input` repeated once
    per row the table function generates for it (sql/functions/generators.py)."""

    input: BoundRelation
    function: str  # lower-case, with its `_outer` suffix when it has one
    args: tuple[Expr, ...]
    columns: tuple[RelColumn, ...]  # the generated columns


BoundRelation: TypeAlias = (BoundTable | BoundValuesRel | BoundFileRel | BoundDerived | BoundJoin
                            | BoundLateral)


@dataclass(frozen=True, slots=True)
class BoundSetOp:
    """`left op right`, op in union / intersect / except; outputs named `_c<i>`."""

    op: str
    distinct: bool
    left: BoundQuery
    right: BoundQuery
    names: tuple[str, ...]
    out_types: tuple[DataType, ...]
    order_by: tuple[SortKey, ...] = ()
    limit: int | None = None
    offset: int = 0

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.out_types


BoundQuery: TypeAlias = BoundSelect | BoundSetOp


def ambiguous(name: str) -> DorisError:
    return DorisError(f"Column '{name}' in field list is ambiguous")


@dataclass
class _Entry:
    alias: str  # lower-case qualifier
    table: str  # lower-case table name ("" for derived tables)
    db: str  # lower-case db ("" when not a catalog table)
    columns: tuple[RelColumn, ...]
    visible: bool = True  # False for the right side of a semi/anti join after its ON


@dataclass
class Scope:
    """Relations visible to one SELECT, plus the enclosing query's scope (correlation)."""

    parent: Scope | None = None
    entries: list[_Entry] = field(default_factory=list)
    correlated: list[OuterRef] = field(default_factory=list)
    # JOIN ... USING: the dropped side's columns answer only qualified names, and the kept
    # side's USING columns come first in `*`
    unqualified_hidden: set[str] = field(default_factory=set)
    using_first: list[RelColumn] = field(default_factory=list)

    def add(self, alias: str, table: str, db: str, columns: tuple[RelColumn, ...]) -> None:
        low = alias.lower()
        if any(e.alias == low for e in self.entries):
            raise DorisError(f"Not unique table/alias: '{alias}'")
        self.entries.append(_Entry(low, table.lower(), db.lower(), columns))

    def hide(self, columns: tuple[RelColumn, ...]) -> None:
        ids = {c.internal for c in columns}
        for e in self.entries:
            if any(c.internal in ids for c in e.columns):
                e.visible = False

    def _matches(self, e: _Entry, db: str, table: str) -> bool:
        if not e.visible:
            return False
        if db:
            return e.db == db.lower() and e.table == table.lower()
        return not table or table.lower() == e.alias

    def lookup(self, db: str, table: str, name: str) -> RelColumn | None:
        low = name.lower()
        hits = [c for e in self.entries if self._matches(e, db, table)
                for c in e.columns if c.name.lower() == low
                and (table or c.internal not in self.unqualified_hidden)]
        if len(hits) > 1:
            raise ambiguous(name)
        return hits[0] if hits else None

    def has_column(self, name: str) -> bool:
        low = name.lower()
        return any(c.name.lower() == low for e in self.entries if e.visible for c in e.columns
                   if c.internal not in self.unqualified_hidden)

    def resolve(self, db: str, table: str, name: str) -> Expr | None:
        hit = self.lookup(db, table, name)
        if hit is not None:
            return ColumnRef(hit.internal, hit.type)
        scope = self.parent
        while scope is not None:
            hit = scope.lookup(db, table, name)
            if hit is not None:
                ref = OuterRef(hit.internal, hit.type)
                self.correlated.append(ref)
                return ref
            scope = scope.parent
        return None

    def star(self, table: str | None) -> list[RelColumn]:
        if table:
            es = [e for e in self.entries if self._matches(e, "", table)]
            if not es:
                raise DorisError(f"Unknown table '{table}'")
            return [c for e in es for c in e.columns]
        es = [e for e in self.entries if e.visible]
        first = [c for c in self.using_first if any(c in e.columns for e in es)]
        skip = {c.internal for c in first} | self.unqualified_hidden
        return first + [c for e in es for c in e.columns if c.internal not in skip]
