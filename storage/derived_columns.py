"""Rows of a load (or of a base rowset) cut into the columns one materialized index stores.

The base index and rollups store table columns, so their rows are a column selection. A
synchronous materialized view stores derived columns (`mv_..` / `mva_..`), each defined by an
expression over base columns (`ColumnMeta.define_expr`, kept as SQL text in the catalog).
Storage cannot evaluate SQL (the layers are storage <- sql <- planner <- executor): a column
that stores a base column unchanged is taken as it is here; every other define expression is
computed by the `DerivedColumnEvaluator` the executor installs on the engine at start-up
(`DERIVED_COLUMNS(engine).install(..)`; executor/derived_columns.py), which binds the text
against the table once and compiles it as any query expression. Every writer of an index goes
through `project_to_index` (loads in storage/txn.py, the MV build in storage/rollup_job.py), so
a load writes the same rows to the base index and to each view in the same version.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from storage.batch import Batch, Column
from storage.catalog.meta import MaterializedIndexMeta, TableMeta
from storage.catalog.mv import plain_source
from storage.errors import DorisError
from storage.per_engine import PerEngine

if TYPE_CHECKING:
    from storage.engine import StorageEngine


class DerivedColumnEvaluator(Protocol):
    """Computes define expressions (SQL text over `table`'s columns) on a batch of base rows;
    the result columns have the types the MV columns declare (`types`)."""

    def evaluate(self, table: TableMeta, exprs: Sequence[str], types: Sequence[object],
                 batch: Batch) -> list[Column]: ...


class DerivedColumns:
    """The engine's evaluator slot (one per StorageEngine)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._evaluator: DerivedColumnEvaluator | None = None

    def install(self, evaluator: DerivedColumnEvaluator) -> None:
        with self._lock:
            self._evaluator = evaluator

    @property
    def evaluator(self) -> DerivedColumnEvaluator | None:
        return self._evaluator


DERIVED_COLUMNS: PerEngine[DerivedColumns] = PerEngine(lambda _engine: DerivedColumns())


def project_to_index(engine: StorageEngine, table: TableMeta, index: MaterializedIndexMeta,
                     batch: Batch) -> Batch:
    """`batch` (base columns) as the rows `index` stores, before its own merge."""
    if not index.schema:
        return batch.select(index.columns)
    out: dict[str, Column] = {}
    pending = []
    by_lower = {n.lower(): n for n in batch.names}
    for col in index.schema:
        src = plain_source(col)
        name = by_lower.get(src.lower()) if src is not None else None
        if name is not None and batch.column(name).type == col.type:
            out[col.name] = batch.column(name)
        else:
            pending.append(col)
    if pending:
        evaluator = DERIVED_COLUMNS(engine).evaluator
        if evaluator is None:
            raise DorisError(
                f"Materialized view [{index.name}] needs an expression evaluator, and none is "
                "installed on this storage engine")
        values = evaluator.evaluate(table, [c.define_expr for c in pending],
                                    [c.type for c in pending], batch)
        for col, value in zip(pending, values, strict=True):
            out[col.name] = value
    return Batch(tuple(index.columns), tuple(out[n] for n in index.columns))
