"""TOP-N operator: ORDER BY .. LIMIT n OFFSET m (EXPLAIN's `VTOP-N`), one operator for the
planner's Limit-over-Sort.

It keeps at most about `limit + offset` rows however large its input: whenever the buffered
rows grow past `COMPACT_ROWS` (and several times what it must keep) they are sorted and cut to
the first `limit + offset`. The sort is stable, so ties come out in input order, exactly as a
full sort followed by a limit would give them. In a distributed plan every sending instance
runs a TOP-N of `limit + offset` rows and offset 0, and the receiving fragment runs the
query's TOP-N again over their union (planner/distribute.py).
Upstream: Doris `VSortNode` with limit (TopN), DuckDB `PhysicalTopN`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from executor.operator import Operator, chunks
from executor.sort import Sort, SortSpec
from storage.batch import Batch

COMPACT_ROWS = 1 << 16


class TopN(Sort):
    # Doris runs a TOP-N in its sort node: memory errors name that node
    memory_node = "Sort"

    def __init__(self, keys: Sequence[SortSpec], limit: int, offset: int,
                 child: Operator) -> None:
        super().__init__(keys, child)
        self.limit, self.offset = limit, offset
        self.keep = limit + offset
        self._rows = 0

    def sink(self, batch: Batch) -> None:
        super().sink(batch)
        self._rows += batch.num_rows
        if self._rows > max(COMPACT_ROWS, 4 * self.keep):
            top = self.sorted_rows(self.take_buffered())
            top = top.slice(0, min(self.keep, top.num_rows))
            self._init_buffer()
            self._rows = 0
            super().sink(top)
            self._rows = top.num_rows

    def finalize(self) -> Iterator[Batch]:
        batches = self.take_buffered()
        if not batches or self.limit == 0:
            return
        data = self.sorted_rows(batches)
        start = min(self.offset, data.num_rows)
        yield from chunks(data.slice(start, min(self.keep, data.num_rows)), self.ctx.batch_size)
