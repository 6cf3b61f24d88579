"""Two-phase aggregation across an exchange: `update serialize` in the instances that hold
the input, `merge finalize` in the instances that receive it.

`PartialAggregate` folds its instance's input into the kernel-backed hash-aggregate state
(executor/grouped_state.py) and sends that state through the exchange as one Batch
(`GroupedState.to_batch`: the group keys under their output names, then each aggregate's
state columns): to the single merging instance when there are no group keys, else split by a
hash of the key columns like any hash exchange, so every group is finalized in exactly one
place. `MergeAggregate` merges the state batches it receives (`GroupedState.merge_batch`) and
finalizes. Only Batches cross, so the exchange could cross a process boundary. The planner only
splits aggregates whose state is a kernel state (planner/aggregate_phase.py); any other
aggregate is planned in one phase above an exchange of its input rows.
Upstream: Doris `AggregationNode` update/merge phases with a serialized intermediate tuple.
"""

from __future__ import annotations

from collections.abc import Iterator

from executor.hash_aggregate import HashAggregate
from executor.operator import Operator
from planner.aggregate_phase import AggregateExprs
from storage.batch import Batch


class PartialAggregate(HashAggregate):
    """`VAGGREGATE (update serialize)`: emits its instance's state as one Batch (none when
    it saw no group)."""

    def __init__(self, plan: AggregateExprs, child: Operator) -> None:
        super().__init__(plan, child)
        if self._grouped is None:
            raise AssertionError("planned in two phases without a kernel state")

    def produce(self) -> Iterator[Batch]:
        for batch in self.child_batches():
            if batch.num_rows:
                self.sink(batch)
        assert self._grouped is not None
        self.flush_fused()
        state = self._grouped.to_batch()
        if state is not None:
            yield state


class MergeAggregate(HashAggregate):
    """`VAGGREGATE (merge finalize)`: merges the received state Batches and finalizes."""

    def __init__(self, plan: AggregateExprs, child: Operator) -> None:
        super().__init__(plan, child)
        if self._grouped is None:
            raise AssertionError("planned in two phases without a kernel state")

    def produce(self) -> Iterator[Batch]:
        assert self._grouped is not None
        for state in self.child_batches():
            self._grouped.merge_batch(state)
        yield from self.finalize()
