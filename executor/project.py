"""Project operator: evaluates the select-list expressions into a new batch.
Column references pass through without copying. Upstream: DuckDB `PhysicalProjection`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from executor.compile import compile_column
from executor.operator import ExecContext, Operator
from sql.binder.expressions import Expr
from storage.batch import Batch


class Project(Operator):
    def __init__(self, exprs: Sequence[tuple[str, Expr]], child: Operator) -> None:
        super().__init__(child)
        self.exprs = tuple(exprs)  # (output name, expression)

    def open(self, ctx: ExecContext) -> None:
        super().open(ctx)
        self._names = tuple(n for n, _ in self.exprs)
        self._fns = [compile_column(e, ctx.cancel) for _, e in self.exprs]

    def produce(self) -> Iterator[Batch]:
        for batch in self.child_batches():
            yield Batch(self._names, tuple(fn(batch) for fn in self._fns))
