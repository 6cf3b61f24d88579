"""Logical plan nodes: frozen, slotted dataclasses holding plain data (ids, names, bound IR).

Each node knows its output schema (`names`, `types`) and rebuilds itself with new children via
`with_children`, so rewrite rules return new trees and plans can be printed, compared, hashed.
Column identity is by name: a node's output names are unique (scan columns keep the table's
names; aggregates and projections use generated names), and `ColumnRef`s in the node's
expressions refer to its child's output names.
Upstream: Doris Nereids `LogicalOlapScan`, `LogicalFilter`, `LogicalProject`,
`LogicalAggregate`, `LogicalSort`, `LogicalLimit`, `LogicalOneRowRelation`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.scan_ranges import ScanRange, ScanSelection
from sql.binder.expressions import AggregateCall, Expr
from sql.binder.relations import SortKey  # re-exported: one sort key class for binder and planner
from storage.predicates import Disjunction
from storage.reader import ColumnPredicate
from storage.types import DataType


@dataclass(frozen=True, slots=True)
class LogicalPlan:
    @property
    def children(self) -> tuple[LogicalPlan, ...]:
        return ()

    def with_children(self, *children: LogicalPlan) -> LogicalPlan:
        if children:
            raise ValueError(f"{type(self).__name__} has no children")
        return self

    @property
    def names(self) -> tuple[str, ...]:
        raise NotImplementedError

    @property
    def types(self) -> tuple[DataType, ...]:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__

    def explain(self, indent: int = 0) -> list[str]:
        lines = ["  " * indent + self.describe()]
        for c in self.children:
            lines.extend(c.explain(indent + 1))
        return lines


@dataclass(frozen=True, slots=True)
class _Unary(LogicalPlan):
    child: LogicalPlan

    @property
    def children(self) -> tuple[LogicalPlan, ...]:
        return (self.child,)

    def with_children(self, *children: LogicalPlan) -> LogicalPlan:
        (child,) = children
        return replace(self, child=child)

    @property
    def names(self) -> tuple[str, ...]:
        return self.child.names

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.child.types


@dataclass(frozen=True, slots=True)
class LogicalScan(LogicalPlan):
    """Scan of one OLAP table's materialized index `index_id`: reads `columns`, applies
    `filters` (conjuncts).

    `predicates` are the column-vs-constant conjuncts handed to storage, `disjunctions` the OR
    conjuncts made of such tests; storage evaluates both exactly, so the scan operator
    evaluates only the other filters. The builder scans the base index;
    the rule choose_rollup may switch `index_id`/`ranges` to a rollup and records
    `index_name`, `preaggregation` and Doris' PREAGGREGATION OFF reason; prune_scans fills
    `selection`.
    """

    db: str
    table: str
    table_id: int
    index_id: int
    columns: tuple[str, ...]
    column_types: tuple[DataType, ...]
    ranges: tuple[ScanRange, ...]
    partitions: tuple[tuple[int, int], ...] = ()  # (partition_id, visible_version)
    filters: tuple[Expr, ...] = ()
    predicates: tuple[ColumnPredicate, ...] = ()
    row_count: int = 0  # rows in the captured rowsets (before deletes and merging): statistics
    selection: ScanSelection | None = None
    index_name: str = ""
    preaggregation: bool = True
    preagg_reason: str = ""
    # OR conjuncts storage evaluates exactly (push_down_filters; issue 14), like `predicates`
    disjunctions: tuple[Disjunction, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.columns

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.column_types

    def describe(self) -> str:
        table = f"{self.db}.{self.table}" + (f"({self.index_name})" if self.index_name else "")
        parts = [f"LogicalScan({table}", f"columns=[{', '.join(self.columns)}]",
                 f"tablets={len(self.ranges)}"]
        if self.selection is not None:
            parts.append(f"partitions={len(self.selection.partition_ids)}/"
                         f"{self.selection.total_partitions}")
        if self.filters:
            parts.append("filters=[" + ", ".join(f.sql() for f in self.filters) + "]")
        if self.predicates:
            parts.append("predicates=[" + ", ".join(
                f"{p.column} {p.op} {list(p.values)}" for p in self.predicates) + "]")
        return ", ".join(parts) + ")"


@dataclass(frozen=True, slots=True)
class LogicalValues(LogicalPlan):
    """Constant rows (physical values): SELECT without FROM, information_schema tables."""

    value_names: tuple[str, ...]
    value_types: tuple[DataType, ...]
    rows: tuple[tuple[object, ...], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return self.value_names

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.value_types

    def describe(self) -> str:
        return f"LogicalValues(columns=[{', '.join(self.value_names)}], rows={len(self.rows)})"


@dataclass(frozen=True, slots=True)
class LogicalFileScan(LogicalPlan):
    """Scan of the files of a table function (`local(..)`, sql/binder/table_functions.py): reads
    `paths` in `format` with `options`, outputs `columns` (a subset of the file's columns,
    after column pruning). Upstream: Doris `LogicalTVFRelation` / `FileScanNode`."""

    function: str
    paths: tuple[str, ...]
    format: str
    options: tuple[tuple[str, str], ...]
    file_columns: tuple[str, ...]  # every column the file gives, in file order
    file_types: tuple[DataType, ...]
    columns: tuple[str, ...]
    column_types: tuple[DataType, ...]
    row_count: int = 0  # the resolver's estimate (statistics, join order, broadcast choice)

    @property
    def names(self) -> tuple[str, ...]:
        return self.columns

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.column_types

    def describe(self) -> str:
        return (f"LogicalFileScan({self.function}, format={self.format}, "
                f"files={len(self.paths)}, columns=[{', '.join(self.columns)}])")


@dataclass(frozen=True, slots=True)
class LogicalFilter(_Unary):
    predicate: Expr

    def describe(self) -> str:
        return f"LogicalFilter({self.predicate.sql()})"


@dataclass(frozen=True, slots=True)
class LogicalProject(_Unary):
    exprs: tuple[tuple[str, Expr], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.exprs)

    @property
    def types(self) -> tuple[DataType, ...]:
        return tuple(e.type for _, e in self.exprs)

    def describe(self) -> str:
        return "LogicalProject(" + ", ".join(f"{e.sql()} AS {n}" for n, e in self.exprs) + ")"


@dataclass(frozen=True, slots=True)
class LogicalAggregate(_Unary):
    """GROUP BY `group_by` computing `aggregates`; outputs group keys then aggregates.
    No group keys = one global group (one row even for empty input)."""

    group_by: tuple[tuple[str, Expr], ...]
    aggregates: tuple[tuple[str, AggregateCall], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.group_by) + tuple(n for n, _ in self.aggregates)

    @property
    def types(self) -> tuple[DataType, ...]:
        return tuple(e.type for _, e in self.group_by) + tuple(a.type for _, a in self.aggregates)

    def describe(self) -> str:
        g = ", ".join(f"{e.sql()} AS {n}" for n, e in self.group_by)
        a = ", ".join(f"{e.sql()} AS {n}" for n, e in self.aggregates)
        return f"LogicalAggregate(group=[{g}], aggregates=[{a}])"


@dataclass(frozen=True, slots=True)
class LogicalSort(_Unary):
    keys: tuple[SortKey, ...]

    def describe(self) -> str:
        parts = [f"{k.expr.sql()} {'DESC' if k.desc else 'ASC'} NULLS "
                 f"{'FIRST' if k.nulls_first else 'LAST'}" for k in self.keys]
        return f"LogicalSort({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class LogicalLimit(_Unary):
    limit: int | None
    offset: int = 0

    def describe(self) -> str:
        return f"LogicalLimit(limit={self.limit}, offset={self.offset})"


def walk(plan: LogicalPlan):  # type: ignore[no-untyped-def]
    yield plan
    for c in plan.children:
        yield from walk(c)


JOIN_KINDS = ("inner", "cross", "left", "right", "full", "left_semi", "left_anti",
              "right_semi", "right_anti", "mark")


@dataclass(frozen=True, slots=True)
class LogicalJoin(LogicalPlan):
    """Join of `left` (probe side) and `right` (build side).

    `condition` is the ON condition as bound; the rule push_down_join_predicates splits it into
    equi `left_keys`/`right_keys` (hash join), per-side filters (pushed below) and `residual`.
    The executor honours all three, so the plan is correct with the rule switched off too.
    Outputs: left + right columns; semi/anti joins only their side's; a `mark` join outputs the
    left columns plus the BOOLEAN column `mark_name`: TRUE when some right row satisfies the
    keys and the residual, NULL when none does but the null-aware `mark_keys` (x IN (SELECT y))
    compare as NULL with some candidate, FALSE otherwise (MySQL IN / EXISTS semantics).
    """

    left: LogicalPlan
    right: LogicalPlan
    kind: str
    condition: Expr | None = None
    left_keys: tuple[Expr, ...] = ()
    right_keys: tuple[Expr, ...] = ()
    residual: Expr | None = None
    mark_name: str | None = None
    mark_keys: tuple[Expr, Expr] | None = None
    hint: str | None = None

    @property
    def children(self) -> tuple[LogicalPlan, ...]:
        return (self.left, self.right)

    def with_children(self, *children: LogicalPlan) -> LogicalPlan:
        left, right = children
        return replace(self, left=left, right=right)

    @property
    def names(self) -> tuple[str, ...]:
        if self.kind in ("left_semi", "left_anti"):
            return self.left.names
        if self.kind in ("right_semi", "right_anti"):
            return self.right.names
        if self.kind == "mark":
            return self.left.names + (self.mark_name or "__mark",)
        return self.left.names + self.right.names

    @property
    def types(self) -> tuple[DataType, ...]:
        from storage.types import BOOLEAN

        if self.kind in ("left_semi", "left_anti"):
            return self.left.types
        if self.kind in ("right_semi", "right_anti"):
            return self.right.types
        if self.kind == "mark":
            return self.left.types + (BOOLEAN,)
        return self.left.types + self.right.types

    def describe(self) -> str:
        parts = [f"LogicalJoin({self.kind}"]
        if self.left_keys:
            parts.append("keys=[" + ", ".join(f"{a.sql()} = {b.sql()}" for a, b in
                                              zip(self.left_keys, self.right_keys)) + "]")
        if self.condition is not None:
            parts.append(f"condition={self.condition.sql()}")
        if self.residual is not None:
            parts.append(f"residual={self.residual.sql()}")
        if self.mark_keys is not None:
            parts.append(f"mark={self.mark_keys[0].sql()} IN {self.mark_keys[1].sql()}")
        if self.hint:
            parts.append(f"hint={self.hint}")
        return ", ".join(parts) + ")"


@dataclass(frozen=True, slots=True)
class LogicalSetOp(LogicalPlan):
    """UNION ALL / INTERSECT / EXCEPT of children with equal output names and types.
    UNION (distinct) is planned as an Aggregate over UNION ALL; INTERSECT and EXCEPT are
    distinct (NULLs compare equal), as in MySQL/Doris."""

    op: str  # "union_all" | "intersect" | "except"
    inputs: tuple[LogicalPlan, ...]

    @property
    def children(self) -> tuple[LogicalPlan, ...]:
        return self.inputs

    def with_children(self, *children: LogicalPlan) -> LogicalPlan:
        return replace(self, inputs=tuple(children))

    @property
    def names(self) -> tuple[str, ...]:
        return self.inputs[0].names

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.inputs[0].types

    def describe(self) -> str:
        return f"LogicalSetOp({self.op})"


@dataclass(frozen=True, slots=True)
class LogicalAssertOneRow(_Unary):
    """Scalar subquery guard: passes at most one row, errors on a second one."""

    def describe(self) -> str:
        return "LogicalAssertOneRow"


@dataclass(frozen=True, slots=True)
class LogicalWindow(_Unary):
    """Computes window functions over its child; outputs the child's columns followed by one
    column per `(name, WindowCall)` in `windows`. Upstream: Doris Nereids `LogicalWindow`."""

    windows: tuple[tuple[str, Expr], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return self.child.names + tuple(n for n, _ in self.windows)

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.child.types + tuple(w.type for _, w in self.windows)

    def describe(self) -> str:
        return "LogicalWindow(" + ", ".join(f"{w.sql()} AS {n}" for n, w in self.windows) + ")"


@dataclass(frozen=True, slots=True)
class LogicalGenerate(_Unary):
    """LATERAL VIEW: each child row repeated once per row `function(args)` generates for it
    (none for the plain functions when it generates nothing, one all-NULL row for `_outer`);
    outputs the child's columns followed by `gen_names`. Upstream: Doris Nereids
    `LogicalGenerate`."""

    function: str
    args: tuple[Expr, ...]
    gen_names: tuple[str, ...]
    gen_types: tuple[DataType, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return self.child.names + self.gen_names

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.child.types + self.gen_types

    def call_sql(self) -> str:
        return f"{self.function}(" + ", ".join(a.sql() for a in self.args) + ")"

    def describe(self) -> str:
        return (f"LogicalGenerate({self.call_sql()} AS "
                + ", ".join(self.gen_names) + ")")
