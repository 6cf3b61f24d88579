"""Set operation operator: UNION ALL, INTERSECT and EXCEPT (the last two distinct).

UNION ALL streams its inputs one after the other (UNION DISTINCT is an aggregate above it).
INTERSECT / EXCEPT drain both inputs, factorise the rows of both together into dense row codes
(executor/keys.py, where NULL equals NULL as set operations require) and keep the first
occurrence of each left row whose code does / does not occur on the right.
Upstream: Doris `UnionNode`, `IntersectNode`, `ExceptNode` (VSetOperationNode).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from executor.keys import group_codes
from executor.operator import Operator, chunks
from storage.batch import Batch, Column
from storage.types import DataType


class SetOperation(Operator):
    def __init__(self, op: str, names: tuple[str, ...], types: tuple[DataType, ...],
                 *inputs: Operator) -> None:
        super().__init__(*inputs)
        self.op, self.names, self.types = op, names, types  # op: union_all/intersect/except

    def _drain(self, op: Operator) -> Batch:
        parts = [b.rename(self.names) for b in op.batches() if b.num_rows]
        return Batch.concat(parts) if parts else Batch.empty(self.names, self.types)

    def produce(self) -> Iterator[Batch]:
        names = self.names
        if self.op == "union_all":
            for op in self.children:
                for b in op.batches():
                    if b.num_rows:
                        yield b.rename(names)
            return
        left, right = (self._drain(op) for op in self.children)
        nl, nr = left.num_rows, right.num_rows
        if nl == 0:
            return
        cols = [Column.concat([a, b]) if nr else a
                for a, b in zip(left.columns, right.columns)]
        codes, _, _ = group_codes(cols, nl + nr)
        lcodes, rcodes = codes[:nl], codes[nl:]
        _, first = np.unique(lcodes, return_index=True)
        keep = np.isin(lcodes[first], rcodes)
        if self.op == "except":
            keep = ~keep
        rows = np.sort(first[keep])
        if len(rows):
            yield from chunks(left.take(rows), self.ctx.batch_size)
