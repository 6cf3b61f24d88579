"""CREATE / DROP MATERIALIZED VIEW (synchronous views): statement handlers.

Analysis and the catalog change are sql/ddl/materialized_view.py; the view is built over the
existing data by the engine's rollup jobs (storage/rollup_job.py), as ALTER TABLE ADD ROLLUP,
and listed by SHOW ALTER TABLE MATERIALIZED VIEW (the same jobs as SHOW ALTER TABLE ROLLUP, as
in Doris). Upstream: Doris `MaterializedViewHandler`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import expressions as exp

from server.statements.outcomes import OkOutcome
from server.statements.tables import TableUse, resolve_named, resolve_table
from sql.binder.materialized_view import analyze
from sql.ddl import materialized_view as mv
from sql.errors import DorisError

if TYPE_CHECKING:
    from server.statements.runner import StatementRunner


def is_materialized_view(stmt: exp.Create | exp.Drop) -> bool:
    if (stmt.args.get("kind") or "").upper() != "VIEW":
        return False
    if isinstance(stmt, exp.Drop):
        return bool(stmt.args.get("materialized"))
    props = stmt.args.get("properties")
    return props is not None and any(isinstance(p, exp.MaterializedProperty)
                                     for p in props.expressions)


def create(runner: StatementRunner, stmt: exp.Create) -> OkOutcome:
    spec = mv.describe_create(stmt)
    engine = runner.engine
    table = resolve_named(engine, spec.db or runner.database, spec.table, TableUse.DDL)
    job_id = mv.create(engine, spec, table, analyze)
    if job_id is not None:
        engine.rollup_jobs.start(job_id)
    return OkOutcome()


def drop(runner: StatementRunner, stmt: exp.Drop) -> OkOutcome:
    engine = runner.engine
    name = (stmt.args.get("tables") or [stmt.this])[0].name
    on = stmt.args.get("cluster")
    if on is None:
        raise DorisError("DROP MATERIALIZED VIEW needs ON <table> for a synchronous view")
    table = resolve_table(engine, on.this, runner.database, TableUse.DDL)
    for job_id in mv.drop(engine, name, table, bool(stmt.args.get("exists"))):
        engine.rollup_jobs.cancel(job_id, "materialized view is dropped")
    return OkOutcome()
