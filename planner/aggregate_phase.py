"""Aggregate phases: whether an aggregate runs once where all its rows meet, or in two phases
(`update serialize` where its input is, `merge finalize` after an exchange), decided by the
planner and printed by EXPLAIN; the executor runs exactly the phase it is given.

Two phases need a partial state the exchange can carry (as a Batch) and the merge can combine:
the kernel-backed `GroupedState` of executor/grouped_state.py, which exists only for keys of
fixed-width or string types and COUNT / SUM / MIN / MAX / AVG (not DISTINCT) over fixed-width
numeric arguments (and SUM / AVG over wide DECIMAL); `kernel_state_supported` states that
contract here, where the plan is made. Any other aggregate is planned in one phase above an
exchange of its input rows (hashed on its group keys, or gathered without keys), so EXPLAIN
shows what runs. Upstream: Doris `AggregateInfo` phases, Nereids `SplitAggregateRule`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from planner.logical import LogicalAggregate
from sql.binder.expressions import AggregateCall, Expr
from storage.types import DataType

KERNEL_AGGREGATES = frozenset({"count", "sum", "min", "max", "avg"})


class AggPhase(Enum):
    """One aggregate node's phase, in Doris' EXPLAIN words."""

    ONE_PHASE = "update finalize"
    UPDATE_SERIALIZE = "update serialize"
    MERGE_FINALIZE = "merge finalize"


@dataclass(frozen=True, slots=True)
class AggregateExprs:
    """What an aggregate computes, as the operators need it: `group_by` (output name, key
    expression) and `aggregates` (output name, call); outputs keys then aggregates."""

    group_by: tuple[tuple[str, Expr], ...]
    aggregates: tuple[tuple[str, AggregateCall], ...]

    @classmethod
    def of(cls, plan: LogicalAggregate) -> AggregateExprs:
        return cls(plan.group_by, plan.aggregates)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.group_by) + tuple(n for n, _ in self.aggregates)


def numpy_kind(t: DataType) -> str:
    try:
        return t.numpy_dtype.kind
    except (KeyError, AttributeError, TypeError):
        return "?"


def kernel_state_supported(plan: AggregateExprs) -> bool:
    """Whether the kernel-backed grouped state can run this aggregate (else the numpy path
    does, whose keyed state cannot be split across merging instances)."""
    for _, e in plan.group_by:
        if not (e.dtype.is_varlen or numpy_kind(e.dtype) in "iubf"):
            return False
    for _, a in plan.aggregates:
        if a.distinct or a.name not in KERNEL_AGGREGATES:
            return False
        if a.name == "count":
            continue
        if len(a.args) != 1:
            return False
        t = a.args[0].dtype
        if t.is_object and t.is_decimal and a.name in ("sum", "avg"):
            continue  # wide DECIMAL sums: exact int64 while bounded, Python ints beyond
        if t.is_object or t.is_varlen:
            return False
        if numpy_kind(t) not in ("iuf" if a.name in ("min", "max") else "iubf"):
            return False
    return True


def splits_in_two_phases(plan: LogicalAggregate) -> bool:
    """Whether a partial state of `plan` can cross an exchange and be merged."""
    return kernel_state_supported(AggregateExprs.of(plan))
