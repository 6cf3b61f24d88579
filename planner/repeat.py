"""GROUPING SETS / ROLLUP / CUBE in the plan: Doris' Repeat below one aggregation.

Owns the logical nodes (their physical ones: planner/physical_repeat.py) and how the builder
places them (`plan_grouping_sets`, from the binder's `RepeatSpec`,
sql/binder/grouping_sets.py):

    Filter(HAVING)
      LogicalEmptyGroupingSets   -- only when a set is empty `()`; see below
        LogicalAggregate(group by the repeat's keys, set id, GROUPING columns)
          LogicalRepeat          -- every row once per set, keys outside the set NULL
            LogicalProject       -- the input's columns plus the key expressions `__rk<i>`
              <FROM + WHERE>

The input is read once; the Repeat multiplies its rows by the number of sets
(executor/repeat.py). An empty set `()` is a grand total, which SQL returns even for empty
input (one row: NULL keys, count 0, other aggregates NULL), while an aggregation with keys
returns no row there; `LogicalEmptyGroupingSets` adds that row when its child returned none
(it runs after a gather, so "none" means none in any instance).
Upstream: Doris Nereids `LogicalRepeat` / `PhysicalRepeat`, legacy `RepeatNode`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.logical import LogicalAggregate, LogicalPlan, LogicalProject, _Unary
from sql.binder.expressions import AggregateCall, ColumnRef, Expr
from sql.binder.relations import RepeatSpec
from storage.types import BIGINT, DataType


@dataclass(frozen=True, slots=True)
class LogicalRepeat(_Unary):
    """Each child row once per grouping set: `key_names` (child columns) NULL in the copies of
    the sets that leave them out, then constant BIGINT columns `id_name` (the set's position)
    and `virtual_names` (GROUPING() / GROUPING_ID() values, `virtual_values[j][set]`)."""

    key_names: tuple[str, ...]
    sets: tuple[tuple[int, ...], ...]
    id_name: str
    virtual_names: tuple[str, ...]
    virtual_values: tuple[tuple[int, ...], ...]

    @property
    def added_names(self) -> tuple[str, ...]:
        return (self.id_name, *self.virtual_names)

    @property
    def names(self) -> tuple[str, ...]:
        return self.child.names + self.added_names

    @property
    def types(self) -> tuple[DataType, ...]:
        return self.child.types + (BIGINT,) * len(self.added_names)

    def describe(self) -> str:
        return f"LogicalRepeat({', '.join(self.key_names)} sets={list(map(list, self.sets))})"


@dataclass(frozen=True, slots=True)
class LogicalEmptyGroupingSets(_Unary):
    """Its child's rows; when the child (an aggregate over a Repeat) returns none, one row
    per empty grouping set: `key_rows` for the group keys, each aggregate over no rows."""

    key_rows: tuple[tuple[object, ...], ...]
    aggregates: tuple[tuple[str, AggregateCall], ...]

    def describe(self) -> str:
        return f"LogicalEmptyGroupingSets(rows={len(self.key_rows)})"


# aggregates whose partial results merge by an aggregate of the same family: the input is
# first aggregated by every key, so the Repeat copies groups instead of rows
_MERGED_BY = {"sum": "sum", "count": "sum", "min": "min", "max": "max"}


def plan_grouping_sets(source: LogicalPlan, spec: RepeatSpec,
                       group_by: tuple[tuple[str, Expr], ...],
                       aggregates: tuple[tuple[str, AggregateCall], ...]) -> LogicalAggregate:
    """The aggregation of a grouping-sets query over its Repeat over `source`.

    When every aggregate is a plain sum / count / min / max, a pre-aggregation by all the
    keys runs below the Repeat (`sum(v)` -> `sum(sum(v))`, `count(v)` -> `sum(count(v))`),
    so the Repeat and the aggregation above it see one row per finest group instead of one
    per input row; the results are the same (a count's merged sum over no rows cannot occur:
    every group has a partial row, and empty input gets its grand totals from
    `LogicalEmptyGroupingSets` with the original calls)."""
    if not all(a.name in _MERGED_BY and not a.distinct for _, a in aggregates):
        return LogicalAggregate(plan_repeat(source, spec), group_by, aggregates)
    partial_names = tuple(f"__p{j}" for j in range(len(aggregates)))
    partial = LogicalAggregate(source, tuple(zip(spec.key_names, spec.key_exprs)),
                               tuple((p, a) for p, (_, a) in zip(partial_names, aggregates)))
    repeat = LogicalRepeat(partial, spec.key_names, spec.sets, spec.id_name,
                           spec.virtual_names, spec.virtual_values)
    merged = tuple((n, AggregateCall(_MERGED_BY[a.name], (ColumnRef(p, a.type),), False, a.type))
                   for p, (n, a) in zip(partial_names, aggregates))
    return LogicalAggregate(repeat, group_by, merged)


def plan_repeat(source: LogicalPlan, spec: RepeatSpec) -> LogicalRepeat:
    """The Repeat over `source`, with the key expressions computed below it."""
    exprs: tuple[tuple[str, Expr], ...] = tuple(
        (n, ColumnRef(n, t)) for n, t in zip(source.names, source.types))
    exprs += tuple(zip(spec.key_names, spec.key_exprs))
    return LogicalRepeat(LogicalProject(source, exprs), spec.key_names, spec.sets,
                         spec.id_name, spec.virtual_names, spec.virtual_values)


def empty_set_rows(spec: RepeatSpec, aggregate_keys: int) -> tuple[tuple[object, ...], ...]:
    """The group-key values of the grand-total rows (one per empty set): NULL keys, the set
    id, the GROUPING columns; `aggregate_keys` is the aggregate's key count."""
    rows = []
    for i, kept in enumerate(spec.sets):
        if kept:
            continue
        row: tuple[object, ...] = (None,) * len(spec.key_names) + (i,) + tuple(
            v[i] for v in spec.virtual_values)
        assert len(row) == aggregate_keys
        rows.append(row)
    return tuple(rows)


def repeat_payload(plan: LogicalPlan) -> dict[str, object]:
    assert isinstance(plan, LogicalRepeat)
    return {"key_names": plan.key_names, "sets": plan.sets, "id_name": plan.id_name,
            "virtual_names": plan.virtual_names, "virtual_values": plan.virtual_values}


def empty_sets_payload(plan: LogicalPlan) -> dict[str, object]:
    assert isinstance(plan, LogicalEmptyGroupingSets)
    n = len(plan.key_rows[0]) if plan.key_rows else 0
    return {"key_names": plan.names[:n], "key_types": plan.types[:n],
            "key_rows": plan.key_rows, "aggregates": plan.aggregates}


def key_exprs(plan: LogicalRepeat) -> tuple[Expr, ...]:
    """What the Repeat's key columns compute (from the projection below it)."""
    below = plan.child
    exprs = dict(below.exprs) if isinstance(below, LogicalProject) else {}
    return tuple(exprs.get(n, ColumnRef(n, BIGINT)) for n in plan.key_names)
