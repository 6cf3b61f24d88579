"""Limit operator: LIMIT n OFFSET m over a stream; stops pulling its child once satisfied.
Upstream: DuckDB `PhysicalStreamingLimit`, Doris `VExchangeNode` limit."""

from __future__ import annotations

from collections.abc import Iterator

from executor.operator import Operator
from storage.batch import Batch


class Limit(Operator):
    def __init__(self, limit: int | None, offset: int, child: Operator) -> None:
        super().__init__(child)
        self.limit = limit  # None: OFFSET only
        self.offset = offset

    def produce(self) -> Iterator[Batch]:
        skip = self.offset
        remaining = self.limit
        if remaining == 0:
            return
        source = self.child_batches()
        try:
            for batch in source:
                n = batch.num_rows
                if skip >= n:
                    skip -= n
                    continue
                if skip:
                    batch = batch.slice(skip, n)
                    skip = 0
                    n = batch.num_rows
                if remaining is not None and n >= remaining:
                    yield batch.slice(0, remaining)
                    return
                if remaining is not None:
                    remaining -= n
                yield batch
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()  # stop upstream generators (scans) early
