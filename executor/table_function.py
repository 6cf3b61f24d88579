"""LATERAL VIEW operator: each input row repeated once per row its table function generates,
the generated values appended as columns (sql/functions/generators.py computes them).
Row-local, so it streams batch by batch. Upstream: Doris `VTableFunctionNode`."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from executor.compile import compile_expr
from executor.operator import ExecContext, Operator
from sql.binder.expressions import Expr
from sql.functions import generators
from storage import nested
from storage.batch import Batch, Column
from storage.types import DataType


def generated_column(t: DataType, values: list[object]) -> Column:
    """A generated column from physical values (nested ones as trees; None = NULL)."""
    if t.is_nested:
        values = [None if v is None else nested.dump(v) for v in values]
    return Column.from_physical(t, values)


class TableFunction(Operator):
    def __init__(self, function: str, args: tuple[Expr, ...], gen_names: tuple[str, ...],
                 gen_types: tuple[DataType, ...], child: Operator) -> None:
        super().__init__(child)
        self.function = function
        self.args = args
        self.gen_names = gen_names
        self.gen_types = gen_types

    def open(self, ctx: ExecContext) -> None:
        super().open(ctx)
        self._args = [compile_expr(a, ctx.cancel) for a in self.args]

    def produce(self) -> Iterator[Batch]:
        for batch in self.child_batches():
            if batch.num_rows == 0:
                continue
            rows = generators.generate(self.function, [f(batch) for f in self._args])
            counts = np.fromiter((len(r) for r in rows), np.int64, count=len(rows))
            if not counts.any():
                continue
            repeated = batch.take(np.repeat(np.arange(batch.num_rows), counts))
            flat = [t for r in rows for t in r]
            generated = [generated_column(t, [v[i] for v in flat])
                         for i, t in enumerate(self.gen_types)]
            yield Batch(repeated.names + self.gen_names, repeated.columns + tuple(generated))
