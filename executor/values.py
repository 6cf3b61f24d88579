"""Values operator: emits constant rows (SELECT without FROM, information_schema tables).
Upstream: Doris `UnionNode` of constant rows / Nereids `OneRowRelation`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from executor.operator import Operator, chunks
from storage.batch import Batch, Column
from storage.types import DataType


class Values(Operator):
    def __init__(self, names: Sequence[str], types: Sequence[DataType],
                 rows: Sequence[Sequence[object]]) -> None:
        super().__init__()
        self.names, self.types, self.rows = tuple(names), tuple(types), rows

    def produce(self) -> Iterator[Batch]:
        if not self.rows:
            return
        cols = tuple(Column.from_physical(t, [r[i] for r in self.rows])
                     for i, t in enumerate(self.types))
        yield from chunks(Batch(self.names, cols), self.ctx.batch_size)
