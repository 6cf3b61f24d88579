"""Sort operator: full ORDER BY over all input (a pipeline breaker).

Each sort key is turned into an order-preserving int64 key (executor/keys.py) honouring ASC/DESC
and NULLS FIRST/LAST (MySQL/Doris default: NULLs first for ASC, last for DESC), then one stable
`np.lexsort` orders the concatenated input. Upstream: DuckDB `PhysicalOrder`, Doris `SortNode`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from executor.compile import compile_column
from executor.keys import lexsort_indices, sort_key
from executor.memory import BufferedInput
from executor.operator import ExecContext, Operator, SinkOperator, chunks
from sql.binder.expressions import Expr
from storage.batch import Batch


class SortSpec(Protocol):
    """One ORDER BY key as the operator needs it (the planner's SortKey has this shape)."""

    @property
    def expr(self) -> Expr: ...
    @property
    def desc(self) -> bool: ...
    @property
    def nulls_first(self) -> bool: ...


class Sort(BufferedInput, SinkOperator):
    memory_node = "Sort"

    def __init__(self, keys: Sequence[SortSpec], child: Operator) -> None:
        super().__init__(child)
        self.keys = tuple(keys)
        self._init_buffer()

    def open(self, ctx: ExecContext) -> None:
        super().open(ctx)
        self._key_fns = [compile_column(k.expr, ctx.cancel) for k in self.keys]

    def sorted_rows(self, batches: list[Batch]) -> Batch:
        """`batches` concatenated and ordered by the sort keys (stable: ties keep input
        order)."""
        data = Batch.concat(batches)
        keys = [sort_key(fn(data), k.desc, k.nulls_first)
                for fn, k in zip(self._key_fns, self.keys)]
        return data.take(lexsort_indices(keys))

    def finalize(self) -> Iterator[Batch]:
        batches = self.take_buffered()
        if not batches:
            return
        yield from chunks(self.sorted_rows(batches), self.ctx.batch_size)

