"""AssertOneRow operator: the guard under a scalar subquery (at most one row may pass).
Upstream: Doris `AssertNumRowsNode` ("Expected EQ 1 to be returned by expression ...")."""

from __future__ import annotations

from collections.abc import Iterator

from executor.operator import Operator
from sql.errors import DorisError
from storage.batch import Batch


class AssertOneRow(Operator):
    def __init__(self, child: Operator) -> None:
        super().__init__(child)

    def produce(self) -> Iterator[Batch]:
        seen = 0
        for b in self.child_batches():
            seen += b.num_rows
            if seen > 1:
                raise DorisError("Expected EQ 1 to be returned by expression: "
                                 "the scalar subquery returned more than 1 row")
            if b.num_rows:
                yield b
