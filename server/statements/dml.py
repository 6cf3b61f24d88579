"""Data in and out: INSERT (VALUES, SELECT, OVERWRITE, the parser-free VALUES fast path),
DELETE, LOAD DATA LOCAL INFILE, EXPORT and CANCEL EXPORT. Every INSERT is recorded for SHOW
LOAD (executor/load/records.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sqlglot import expressions as exp

from executor.ctas import insert_overwrite
from executor.insert import check_insert_partitions, insert_batch, insert_batches, insert_values
from executor.insert_fast import fast_batch
from executor.insert_values_scanner import scan_header
from executor.load.records import record_insert
from executor.query import evaluate_constant, execute
from server import local_infile
from server.export_jobs import ExportJobs
from server.privileges import check
from server.privileges.model import LOAD
from server.statements.common import table_parts
from server.statements.outcomes import (
    OkOutcome,
    Outcome,
    PendingOutcome,
    load_ok,
    load_outcome,
)
from server.statements.query import plan_query
from server.statements.show_where import eval_where
from server.statements.tables import TableUse, resolve_table
from sql.binder.delete import analyze_delete
from sql.errors import DorisError, ShaleError, no_database_selected
from sql.parser.dialect import CancelExport, DorisExport, LoadDataInfile
from sql.parser.dialect_nodes import TEMPORARY_PARTITION_META
from storage.catalog.meta import TemporaryPartitionNames
from storage.catalog.service import require_database
from storage.delete import publish_delete

if TYPE_CHECKING:
    from server.statements.runner import StatementRunner


def insert(runner: StatementRunner, stmt: exp.Insert) -> OkOutcome | PendingOutcome:
    target = stmt.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        target = target.this
    engine = runner.engine
    table = resolve_table(engine, target, runner.database, TableUse.QUERY)
    db = table_parts(target)[0] or runner.database or ""
    partitions: list[str] | TemporaryPartitionNames | None = None
    part = target.args.get("partition") if isinstance(target, exp.Table) else None
    auto_detect = part is not None and any(isinstance(e, exp.Star) for e in part.expressions)
    if part is not None and not auto_detect:
        partitions = [e.name for e in part.expressions]
        if part.meta.get(TEMPORARY_PARTITION_META):
            partitions = TemporaryPartitionNames(partitions)
    label_node = stmt.args.get("label")
    label = label_node.name if label_node is not None else None
    source = stmt.expression
    ctx = runner.context()
    tolerance = runner.tolerance()
    if stmt.args.get("overwrite"):
        return load_outcome(insert_overwrite(
            engine, db, table, columns, source, partitions, auto_detect, label,
            runner.visible_catalog(), ctx,
            lambda e, target_type: evaluate_constant(e, ctx, target_type), tolerance))
    if auto_detect:
        raise DorisError("PARTITION (*) is only supported by INSERT OVERWRITE")
    if partitions:
        check_insert_partitions(engine, table, partitions)
    if isinstance(source, exp.Values):
        rows = [list(t.expressions) if isinstance(t, exp.Tuple) else [t]
                for t in source.expressions]
        outcome = insert_values(
            engine, db, table, columns, rows,
            lambda e, target_type: evaluate_constant(e, ctx, target_type),
            label=label, partitions=partitions, group_commit=runner.group_commit(table),
            tolerance=tolerance,
        )
    else:
        prepared = plan_query(runner, source, ctx)
        result = execute(prepared, engine, ctx)
        outcome = insert_batches(engine, db, table, columns, result.batches, label,
                                 partitions, tolerance)
    return load_outcome(outcome)


def recorded_insert(runner: StatementRunner, stmt: exp.Insert) -> OkOutcome | PendingOutcome:
    """`insert`, recorded for SHOW LOAD (executor/load/records.py): FINISHED with its
    label, txn and rows, or CANCELLED with its error. Group-commit INSERTs (a shared
    load) are not listed one by one."""
    target = stmt.this.this if isinstance(stmt.this, exp.Schema) else stmt.this
    db = (target.text("db") if isinstance(target, exp.Table) else "") or runner.database or ""
    label_node = stmt.args.get("label")
    started = time.time()
    engine = runner.engine
    try:
        outcome = insert(runner, stmt)
    except ShaleError as e:
        if db and engine.catalog.get_table(db, target.name) is not None:
            record_insert(engine, db, target.name,
                          label_node.name if label_node is not None else None, -1, 0,
                          e.message, runner.user, started)
        raise
    if isinstance(outcome, OkOutcome) and outcome.load is not None:
        record_insert(engine, db, target.name, outcome.load.label, outcome.load.txn_id,
                      outcome.affected_rows, None, runner.user, started)
    return outcome


def try_fast_insert(runner: StatementRunner, sql: str) -> OkOutcome | PendingOutcome | None:
    """INSERT INTO t [(cols)] VALUES of plain literals, scanned without the SQL parser
    (executor/insert_values_scanner.py, executor/insert.py); None when the statement needs the
    general path (which then also reports every error)."""
    header = scan_header(sql)
    if header is None:
        return None
    db_name, table_name, columns, start = header
    db = db_name or runner.database
    if not db:
        return None
    table = runner.engine.catalog.get_table(db, table_name)
    if table is None:
        return None
    if runner.access is not None:  # the fast path skips run(): same check as INSERT's
        check(runner.access, LOAD, db, table.name)
    batch = fast_batch(table, columns, sql, start)
    if batch is None:
        return None
    return load_outcome(insert_batch(runner.engine, db, table, batch,
                                       runner.group_commit(table), runner.tolerance()))


def delete(runner: StatementRunner, stmt: exp.Delete) -> OkOutcome:
    engine = runner.engine
    resolve_table(engine, stmt.this, runner.database, TableUse.QUERY)
    database = require_database(engine, table_parts(stmt.this)[0] or runner.database)
    plan = analyze_delete(stmt, engine.catalog, database.name, runner.options())
    txn = publish_delete(engine, database, plan.table, plan.partitions, plan.conditions,
                         plan.text)
    return load_ok(0, txn.label, txn.txn_id)


def load_data_local(runner: StatementRunner, stmt: LoadDataInfile) -> Outcome:
    """MySQL Load: LOAD DATA LOCAL INFILE (server/local_infile.py)."""
    if stmt.args.get("local"):  # (without LOCAL, local_infile says why first)
        resolve_table(runner.engine, stmt.this, runner.database, TableUse.QUERY)
    return local_infile.prepare(runner.engine, stmt, runner.database)


def export(runner: StatementRunner, stmt: DorisExport) -> OkOutcome:
    """EXPORT TABLE: an asynchronous job (server/export_jobs.py); SHOW EXPORT follows it."""
    db = (stmt.this.text("db") or runner.database or "")
    if not db:
        raise no_database_selected()
    ExportJobs.of(runner.engine).submit(runner, db, stmt)
    return OkOutcome()


def cancel_export(runner: StatementRunner, stmt: CancelExport) -> OkOutcome:
    db = stmt.args["db"].name if stmt.args.get("db") is not None else runner.database
    if not db:
        raise no_database_selected()
    where = stmt.args.get("where")
    if where is None:
        raise DorisError("CANCEL EXPORT needs WHERE LABEL = \"label\" (or LABEL LIKE, "
                         "STATE = ..)")
    ExportJobs.of(runner.engine).cancel(db, lambda row: eval_where(where.this, row))
    return OkOutcome()
