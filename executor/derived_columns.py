"""The evaluator of materialized-view define expressions that storage calls on load.

Storage keeps each sync MV column's defining expression as SQL text (`ColumnMeta.define_expr`)
and cannot evaluate it (storage/derived_columns.py). This module binds the text against the
table once (sql/ddl/materialized_view.py `bind_define_expr`), compiles it like any query
expression (executor/compile.py) and caches the compiled function per table schema and text.
`install(engine)` is called where an engine is opened for serving (server/app.py, bench tools)
before any load or MV build job runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from executor.compile import compile_column
from sql.binder.expressions import Cast
from sql.binder.materialized_view import bind_define_expr
from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta, TableMeta
from storage.derived_columns import DERIVED_COLUMNS
from storage.engine import StorageEngine
from storage.types import DataType

_Key = tuple[int, tuple[ColumnMeta, ...], str, DataType]


class CompiledDerivedColumns:
    """storage.derived_columns.DerivedColumnEvaluator over compiled bound expressions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._compiled: dict[_Key, Callable[[Batch], Column]] = {}

    def _function(self, table: TableMeta, text: str, dtype: DataType
                  ) -> Callable[[Batch], Column]:
        key = (table.table_id, table.columns, text, dtype)
        with self._lock:
            fn = self._compiled.get(key)
        if fn is None:
            expr = bind_define_expr(table, text)
            if expr.type != dtype:  # the column's declared type is what segments store
                expr = Cast(expr, dtype)
            fn = compile_column(expr)
            with self._lock:
                self._compiled[key] = fn
        return fn

    def evaluate(self, table: TableMeta, exprs: Sequence[str], types: Sequence[object],
                 batch: Batch) -> list[Column]:
        out = []
        for text, dtype in zip(exprs, types, strict=True):
            assert isinstance(dtype, DataType)
            out.append(self._function(table, text, dtype)(batch))
        return out


def install(engine: StorageEngine) -> None:
    """Let `engine` compute materialized-view columns on load and when building a view."""
    DERIVED_COLUMNS(engine).install(CompiledDerivedColumns())
