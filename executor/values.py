"""Values operator: emits constant rows (SELECT without FROM, information_schema tables).
Upstream: Doris `UnionNode` of constant rows / Nereids `OneRowRelation`."""

from __future__ import annotations

from collections.abc import Iterator

from executor.operator import Operator, chunks
from planner.logical import LogicalValues
from storage.batch import Batch, Column


class Values(Operator):
    def __init__(self, plan: LogicalValues) -> None:
        super().__init__()
        self.plan = plan

    def produce(self) -> Iterator[Batch]:
        p = self.plan
        if not p.rows:
            return
        cols = tuple(Column.from_physical(t, [r[i] for r in p.rows])
                     for i, t in enumerate(p.value_types))
        yield from chunks(Batch(p.value_names, cols), self.ctx.batch_size)
