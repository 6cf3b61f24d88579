"""Filter operator: keeps the rows where the predicate is TRUE (NULL and FALSE are dropped).
Upstream: Doris `VSelectNode` conjuncts, DuckDB `PhysicalFilter`."""

from __future__ import annotations

from collections.abc import Iterator

from executor.compile import compile_predicate
from executor.operator import ExecContext, Operator
from sql.binder.expressions import Expr
from storage.batch import Batch


class Filter(Operator):
    def __init__(self, predicate: Expr, child: Operator) -> None:
        super().__init__(child)
        self.predicate = predicate

    def open(self, ctx: ExecContext) -> None:
        super().open(ctx)
        self._keep = compile_predicate(self.predicate, ctx.cancel)

    def produce(self) -> Iterator[Batch]:
        for batch in self.child_batches():
            mask = self._keep(batch)
            if mask.all():
                yield batch
            elif mask.any():
                yield batch.filter(mask)
