"""DDL: CREATE / DROP DATABASE, TABLE and INDEX, CREATE TABLE AS SELECT / LIKE, TRUNCATE,
ALTER TABLE (each action in turn) and CANCEL ALTER. The catalog changes themselves are
sql/ddl/ddl_ops.py's; this module maps statements to them and starts the jobs they create
(rollup and index jobs, dynamic partition runs)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlglot import expressions as exp

from executor.ctas import create_table_as_select, create_table_like
from executor.load.records import record_insert
from server.dynamic_partitions import DynamicPartitionScheduler, check_first_run
from server.frontend_config import FrontendConfig
from server.privileges import check
from server.privileges.model import SELECT
from server.statements import materialized_view
from server.statements.common import not_supported, table_parts
from server.statements.outcomes import OkOutcome, load_ok
from server.statements.tables import TableUse, resolve_named, resolve_table
from sql.ddl import ddl_ops
from sql.ddl import specs as V
from sql.ddl.create_table import analyze_create_table, partition_spec
from sql.ddl.ctas import like_rollups, like_source
from sql.ddl.properties import MAX_DYNAMIC_PARTITION_NUM
from sql.ddl.temp_partitions import (
    add_temporary_partition,
    drop_temporary_partition,
    refuse_with_temporary_partitions,
    replace_partitions,
)
from sql.errors import no_database_selected
from sql.parser.dialect import CancelAlter
from storage.catalog import service as catalog_service

if TYPE_CHECKING:
    from server.statements.runner import StatementRunner
    from storage.engine import StorageEngine


@contextmanager
def dynamic_partition_limit(engine: StorageEngine) -> Iterator[None]:
    """dynamic_partition.* validation uses the FE config max_dynamic_partition_num."""
    limit = FrontendConfig.of(engine).get_int("max_dynamic_partition_num")
    token = MAX_DYNAMIC_PARTITION_NUM.set(limit)
    try:
        yield
    finally:
        MAX_DYNAMIC_PARTITION_NUM.reset(token)


def _start_index_job(engine: StorageEngine, job_id: int | None) -> None:
    if job_id is not None:
        engine.index_jobs.start(job_id)


def create(runner: StatementRunner, stmt: exp.Create) -> OkOutcome:
    with dynamic_partition_limit(runner.engine):
        return _create(runner, stmt)


def _create(runner: StatementRunner, stmt: exp.Create) -> OkOutcome:
    engine = runner.engine
    kind = (stmt.args.get("kind") or "").upper()
    if materialized_view.is_materialized_view(stmt):
        return materialized_view.create(runner, stmt)
    if kind == "DATABASE":
        catalog_service.create_database(engine, stmt.this.name, bool(stmt.args.get("exists")))
        return OkOutcome()
    if kind == "TABLE":
        if stmt.expression is not None:
            return _create_table_as_select(runner, stmt)
        source = like_source(stmt)
        if source is not None:
            src = resolve_table(engine, source, runner.database, TableUse.DDL)
            if runner.access is not None:  # Doris: SELECT on the table copied
                check(runner.access, SELECT, table_parts(source)[0] or runner.database, src.name)
            create_table_like(engine, stmt, src, runner.database, like_rollups(stmt))
            return OkOutcome()
        view = V.describe_create_table(stmt)
        defn = analyze_create_table(view, len(engine.catalog.backends()))
        dynamic = any(k.startswith("dynamic_partition.") for k, _ in defn.properties)
        ddl_ops.create_table(engine, runner.database, defn, check=(
            (lambda s: check_first_run(engine, s.table, s.partitions)) if dynamic
            else None))
        if dynamic:
            # Doris runs the scheduler once for a new dynamic table
            table = engine.catalog.get_table(defn.db or runner.database or "", defn.name)
            if table is not None:
                return runner.warn(DynamicPartitionScheduler.of(engine).run([table.table_id]))
        return OkOutcome()
    if kind == "INDEX":  # CREATE INDEX i ON t (c) USING BITMAP: ALTER TABLE t ADD INDEX
        ast = V.describe_create_index(stmt)
        table = resolve_named(engine, ast.db or runner.database, ast.table, TableUse.DDL)
        _start_index_job(engine, ddl_ops.alter_indexes(
            engine, table, add=[ast.index], if_not_exists=ast.if_not_exists))
        return OkOutcome()
    raise not_supported(f"CREATE {kind}")


def _create_table_as_select(runner: StatementRunner, stmt: exp.Create) -> OkOutcome:
    target = stmt.this.this if isinstance(stmt.this, exp.Schema) else stmt.this
    if not runner.database and not V.table_name(target)[0]:
        raise no_database_selected()
    db = target.text("db") or runner.database or ""
    started = time.time()
    outcome = create_table_as_select(runner.engine, runner.visible_catalog(), stmt,
                                     runner.context(), runner.tolerance())
    if outcome is None:  # IF NOT EXISTS and the table exists: nothing loaded
        return OkOutcome()
    # SHOW LOAD lists the CTAS's insert, as Doris' (a failed CTAS leaves no table to list)
    record_insert(runner.engine, db, target.name, outcome.label, outcome.txn_id, outcome.rows,
                  None, runner.user, started)
    return load_ok(outcome.rows, outcome.label, outcome.txn_id, outcome.filtered)


def drop(runner: StatementRunner, stmt: exp.Drop) -> OkOutcome:
    engine = runner.engine
    kind = (stmt.args.get("kind") or "").upper()
    exists = bool(stmt.args.get("exists"))
    if materialized_view.is_materialized_view(stmt):
        return materialized_view.drop(runner, stmt)
    if kind == "DATABASE":
        target = (stmt.args.get("tables") or [stmt.this])[0]
        name = target.name
        catalog_service.drop_database(engine, name, exists)
        if runner.database == name:
            runner.set_db(None)
        return OkOutcome()
    if kind == "TABLE":
        for t in stmt.args.get("tables") or [stmt.this]:
            db, name = table_parts(t)
            if not exists:  # the error Doris gives (ddl_ops checks again under its lock)
                resolve_named(engine, db or runner.database, name, TableUse.DROP)
            catalog_service.drop_table(engine, db or runner.database, name, exists)
        return OkOutcome()
    if kind == "INDEX":  # DROP INDEX i ON t: ALTER TABLE t DROP INDEX i
        ast = V.describe_drop_index(stmt)
        table = resolve_named(engine, ast.db or runner.database, ast.table or "",
                              TableUse.DDL)
        _start_index_job(engine, ddl_ops.alter_indexes(
            engine, table, drop=[(ast.name, ast.if_exists)]))
        return OkOutcome()
    raise not_supported(f"DROP {kind}")


def truncate(runner: StatementRunner, stmt: exp.TruncateTable) -> OkOutcome:
    for t in stmt.expressions:
        db, name = table_parts(t)
        part = t.args.get("partition") if isinstance(t, exp.Table) else None
        names = [e.name for e in part.expressions] if part is not None else []
        resolve_named(runner.engine, db or runner.database, name, TableUse.DDL)
        catalog_service.truncate_table(runner.engine, db or runner.database, name, names)
    return OkOutcome()


def alter(runner: StatementRunner, stmt: exp.Alter) -> OkOutcome:
    with dynamic_partition_limit(runner.engine):
        return _alter(runner, stmt)


def _alter(runner: StatementRunner, stmt: exp.Alter) -> OkOutcome:
    engine = runner.engine
    table = resolve_table(engine, stmt.this, runner.database, TableUse.DDL)
    actions = V.describe_alter(stmt)
    index_actions = [a for a in actions if isinstance(a, (V.AddIndexAction, V.DropIndexAction))]
    warnings: list[str] = []  # failures of the dynamic partition runs ALTER triggered
    if index_actions or any(
        isinstance(a, V.AddRollupAction)
        or (isinstance(a, V.SetPropertiesAction)
            and any(k.startswith("bloom_filter_") for k, _ in a.properties))
        for a in actions):  # the schema changes Doris refuses while they exist
        refuse_with_temporary_partitions(engine, table)
    for action in actions:
        # re-read: an earlier action may have changed it
        table = resolve_table(engine, stmt.this, runner.database, TableUse.DDL)
        if action is (index_actions[0] if index_actions else None):
            # every ADD / DROP INDEX of the statement is one schema change job, as in Doris
            _start_index_job(engine, ddl_ops.alter_indexes(
                engine, table,
                add=[a.index for a in index_actions if isinstance(a, V.AddIndexAction)],
                drop=[(a.name, a.if_exists) for a in index_actions
                      if isinstance(a, V.DropIndexAction)]))
            continue
        if isinstance(action, V.AddPartitionAction) and action.temporary:
            dist = action.distribution
            add_temporary_partition(
                engine, table, partition_spec(action.partition),
                None if dist is None or dist.auto or dist.buckets is None else int(dist.buckets))
        elif isinstance(action, V.DropPartitionAction) and action.temporary:
            drop_temporary_partition(engine, table, action.name, action.if_exists)
        elif isinstance(action, V.ReplacePartitionAction):
            replace_partitions(engine, table, action.partitions, action.temporary,
                               dict(action.properties))
        elif isinstance(action, V.AddPartitionAction):
            dist = action.distribution
            existing = {p.name.lower() for p in engine.catalog.partitions(table.table_id)}
            if action.partition.if_not_exists and (action.partition.name or "").lower() in existing:
                continue
            ddl_ops.add_partition(
                engine, table, partition_spec(action.partition),
                list(dist.columns) if dist is not None and dist.type.upper() == "HASH" else None,
                None if dist is None or dist.auto or dist.buckets is None else int(dist.buckets),
            )
        elif isinstance(action, V.DropPartitionAction):
            catalog_service.drop_partition(engine, table, action.name, action.if_exists)
        elif isinstance(action, V.SetPropertiesAction):
            props = dict(action.properties)
            bloom: dict[str, str] = {
                k: props.pop(k) for k in ("bloom_filter_columns", "bloom_filter_fpp") if k in props
            }
            if props:
                ddl_ops.set_properties(engine, table, props)
            if bloom:  # rebuilds the segments: an index job (storage/index_job.py)
                _start_index_job(engine, ddl_ops.set_bloom_filter(
                    engine, resolve_table(engine, stmt.this, runner.database, TableUse.DDL), bloom))
            if any(k.startswith("dynamic_partition.") for k in props):
                scheduler = DynamicPartitionScheduler.of(engine)
                scheduler.note_properties_changed(table.table_id)
                warnings += scheduler.run([table.table_id])
        elif isinstance(action, V.AddRollupAction):
            jobs = engine.rollup_jobs
            for job_id in ddl_ops.add_rollups(engine, table, action.rollups):
                jobs.start(job_id)
        elif isinstance(action, V.DropRollupAction):
            for job_id in catalog_service.drop_rollups(engine, table, action.names):
                engine.rollup_jobs.cancel(job_id, "rollup index is dropped")
        elif isinstance(action, (V.AddIndexAction, V.DropIndexAction)):
            continue  # done with the first one above
        else:
            raise not_supported(f"ALTER TABLE action {type(action).__name__}")
    return runner.warn(warnings)


def cancel_alter(runner: StatementRunner, stmt: CancelAlter) -> OkOutcome:
    engine = runner.engine
    kind = stmt.args.get("kind")
    if kind == "MATERIALIZED VIEW":  # the same jobs as ROLLUP (Doris)
        kind = "ROLLUP"
    if kind not in ("ROLLUP", "COLUMN"):
        raise not_supported(f"CANCEL ALTER TABLE {kind}")
    target = stmt.this
    if isinstance(target, exp.Table) and isinstance(target.this, exp.Anonymous):
        target = exp.Table(this=exp.to_identifier(target.this.name), db=target.args.get("db"))
    table = resolve_table(engine, target, runner.database, TableUse.DDL)
    if kind == "COLUMN":  # ADD / DROP INDEX, bloom filter SET (storage/index_job.py)
        for job_id in catalog_service.running_schema_change_jobs(engine, table):
            engine.index_jobs.cancel(job_id, "user cancelled")
        return OkOutcome()
    jobs = engine.rollup_jobs
    for job_id in catalog_service.running_rollup_jobs(engine, table):
        jobs.cancel(job_id, "user cancelled")
    return OkOutcome()
