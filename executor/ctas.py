"""CREATE TABLE .. AS SELECT, CREATE TABLE .. LIKE and INSERT OVERWRITE: the statements that
load rows and change metadata as one step.

- CTAS plans the query first (its output names and types give the columns, sql/ddl/ctas.py),
  builds the table's catalog objects without publishing them (`ddl_ops.stage_table`), then runs
  the query into a `TableCreatingLoad`, which publishes the table with its rows in one catalog
  transaction: a failing query or a rejected row leaves no table, and no reader ever sees the
  table empty.
- LIKE copies the source's definition (sql/ddl/ctas.py) and creates it like CREATE TABLE.
- INSERT OVERWRITE loads into an `OverwriteLoad`, which swaps the new rows for the old contents
  of the target partitions at publish (storage/staged_load.py): readers see the old or the new
  rows, never a mix; a failure leaves the old rows.
All three convert and filter rows like INSERT (executor/insert.py, `Tolerance`).
Upstream: Doris `CreateTableCommand`, `CreateTableLikeCommand`, `InsertOverwriteTableCommand`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import expressions as exp

from executor.insert import (
    InsertOutcome,
    Tolerance,
    _check_loadable,
    insert_batches,
    insert_values,
)
from executor.query import execute
from planner.query import plan_select
from sql.binder.select import CatalogView
from sql.ddl import ddl_ops
from sql.ddl.create_table import analyze_create_table
from sql.ddl.ctas import ctas_view, like_definition
from sql.errors import DorisError
from sql.options import SessionContext
from storage.catalog import service as catalog_service
from storage.catalog.meta import TableMeta
from storage.engine import StorageEngine
from storage.staged_load import OverwriteLoad, TableCreatingLoad, TableExists
from storage.types import DataType

Evaluate = Callable[[exp.Expression, DataType], tuple[object, DataType]]


def create_table_as_select(engine: StorageEngine, catalog: CatalogView, stmt: exp.Create,
                           ctx: SessionContext, tolerance: Tolerance) -> InsertOutcome | None:
    """Run a CTAS; None when the table exists and IF NOT EXISTS was given (nothing loaded)."""
    prepared = plan_select(stmt.expression, catalog, ctx)
    view = ctas_view(stmt, prepared.names, prepared.types, catalog, ctx.database)
    defn = analyze_create_table(view, len(engine.catalog.backends()))
    staged = ddl_ops.stage_table(engine, ctx.database, defn)
    if staged is None:
        return None
    db = catalog_service.require_database(engine, defn.db or ctx.database)
    table = staged.table
    result = execute(prepared, engine, ctx)
    try:
        return insert_batches(engine, db.name, table, None, result.batches,
                              tolerance=tolerance,
                              txn_factory=lambda: TableCreatingLoad(engine, db, staged))
    except TableExists:
        if defn.if_not_exists:  # created by someone else meanwhile: theirs stays, ours goes
            return None
        raise
    except DorisError as e:  # the load failed: Doris' CTAS wording (the table is not there)
        raise DorisError(f"Failed to execute CTAS Reason: {e.detail}", e.code) from None


def create_table_like(engine: StorageEngine, stmt: exp.Create, source: TableMeta,
                      current_db: str | None, rollups: Sequence[str] | None) -> None:
    defn = like_definition(stmt, source, engine.catalog, rollups)
    ddl_ops.create_table(engine, current_db, defn)


def insert_overwrite(
    engine: StorageEngine, db_name: str, table: TableMeta, columns: Sequence[str] | None,
    source: exp.Expression, partitions: Sequence[str] | None, auto_detect: bool,
    label: str | None, catalog: CatalogView, ctx: SessionContext, evaluate: Evaluate,
    tolerance: Tolerance,
) -> InsertOutcome:
    """INSERT OVERWRITE TABLE t [PARTITION (p, ..) | PARTITION (*)] [(cols)] SELECT | VALUES."""
    db = _check_loadable(engine, db_name, table)
    if catalog_service.rollup_job_running(engine.catalog, table):
        raise DorisError(f"Table[{table.name}]'s state(ROLLUP) is not NORMAL. Do not allow doing "
                         "INSERT OVERWRITE while an ALTER TABLE ADD ROLLUP job runs")

    def txn() -> OverwriteLoad:
        return OverwriteLoad(engine, db, table, partitions, auto_detect, label)

    if isinstance(source, exp.Values):
        rows = [list(t.expressions) if isinstance(t, exp.Tuple) else [t]
                for t in source.expressions]
        outcome = insert_values(engine, db_name, table, columns, rows, evaluate,
                                tolerance=tolerance, txn_factory=txn)
        assert isinstance(outcome, InsertOutcome)
        return outcome
    prepared = plan_select(source, catalog, ctx)
    result = execute(prepared, engine, ctx)
    return insert_batches(engine, db_name, table, columns, result.batches, tolerance=tolerance,
                          txn_factory=txn)
