"""Two-phase aggregation across an exchange: `update serialize` in the instances that hold
the input, `merge finalize` in the instances that receive it.

`PartialAggregate` folds its instance's input into a hash-aggregate state and sends that state
(a `PartialState`) through the exchange: to the single merging instance when there are no
group keys, else split by a hash of the group keys, one share per merging instance, so every
group is finalized in exactly one place. `MergeAggregate` combines the states it receives and
finalizes. The planner only splits aggregates whose partial state can be merged
(planner/aggregate_phase.py); any other keyed aggregate is planned in one phase above a
hash exchange of its input rows, so both operators here always carry states.
Upstream: Doris `AggregationNode` update/merge phases with a serialized intermediate tuple.
"""

from __future__ import annotations

from collections.abc import Iterator

from executor.exchange import hash_instances
from executor.grouped_state import GroupedState
from executor.hash_aggregate import HashAggregate
from executor.operator import Operator
from planner.logical import LogicalAggregate
from storage.batch import Batch


class PartialState:
    """One instance's partial aggregate, as it crosses the exchange; `num_rows` is its
    group count and `nbytes` its size, for the exchange counters."""

    def __init__(self, agg: HashAggregate | None = None,
                 grouped: GroupedState | None = None) -> None:
        self.agg = agg
        self.grouped = grouped if grouped is not None else (
            agg._grouped if agg is not None else None)

    @property
    def num_rows(self) -> int:
        if self.grouped is not None:
            return self.grouped.groups
        return self.agg._partial_rows if self.agg is not None else 0

    @property
    def nbytes(self) -> int:
        if self.grouped is not None:
            return self.grouped.nbytes()
        return self.agg._partial_bytes if self.agg is not None else 0

    def split(self, n: int) -> list[PartialState | None]:
        """The groups routed to each of `n` merging instances (None: no group for it)."""
        g = self.grouped
        assert g is not None and g.plan.group_by, "only keyed kernel states are split"
        groups = g.groups
        if groups == 0:
            return [None] * n
        target = hash_instances(g.key_columns(), groups, n)
        out: list[PartialState | None] = []
        for i in range(n):
            idx = (target == i).nonzero()[0]
            out.append(PartialState(grouped=g.subset(idx)) if len(idx) else None)
        return out


class PartialAggregate(HashAggregate):
    """`VAGGREGATE (update serialize)`: emits its instance's state as one PartialState."""

    def __init__(self, plan: LogicalAggregate, child: Operator) -> None:
        super().__init__(plan, child)
        if plan.group_by and self._grouped is None:
            raise AssertionError("planned in two phases without a mergeable state")

    def produce(self) -> Iterator[Batch]:
        for batch in self.child_batches():
            if batch.num_rows:
                self.sink(batch)
        yield PartialState(self)  # type: ignore[misc]


class MergeAggregate(HashAggregate):
    """`VAGGREGATE (merge finalize)`: combines the received states and finalizes."""

    def produce(self) -> Iterator[Batch]:
        for item in self.child_batches():
            assert isinstance(item, PartialState), "an update-serialize phase sends states"
            if item.grouped is not None:
                assert self._grouped is not None
                self._grouped.combine(item.grouped)
            elif item.agg is not None:
                self.combine(item.agg)
        yield from self.finalize()
