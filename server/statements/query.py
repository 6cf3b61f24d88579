"""Queries: SELECT (and every other query form), EXPLAIN, SELECT .. INTO OUTFILE and
DESC FUNCTION. `run_query` is the one place a statement is planned and executed
(executor/query.py); its batches run under the query timeout (query_timeout.py) and, with
enable_profile, are tracked for SHOW QUERY PROFILE."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import expressions as exp

from executor.outfile import (
    RESULT_COLUMNS,
    RESULT_TYPES,
    outfile_options,
    outfile_sink_lines,
    write_outfile,
)
from executor.query import execute, new_query_id
from planner.explain import COLUMN_NAME as EXPLAIN_COLUMN
from planner.explain import explain_lines, shape_lines
from planner.query import plan_select
from planner.scan_info import plan_scan_lines
from server.export_jobs import property_map
from server.profiles import operator_counters
from server.statements.common import not_supported
from server.statements.outcomes import RowsOutcome, TextOutcome
from server.statements.query_timeout import with_timeout
from sql.binder.table_functions import table_function_call
from sql.parser.dialect import DescFunction, DorisExplain, DorisOutfile
from storage.batch import Batch, Column

if TYPE_CHECKING:
    from planner.query import PlannedQuery
    from server.statements.runner import StatementRunner
    from sql.options import SessionContext


def plan_query(runner: StatementRunner, stmt: exp.Expression,
               ctx: SessionContext | None = None) -> PlannedQuery:
    """The plan a query runs (and EXPLAIN shows), under the session's query options.
    The one place statements reach the planner (planner/query.py plan_select); a COM_QUERY
    text planned before under the same database, user, options and catalog generation gets
    its kept plan (server/plan_cache.py)."""
    ctx = ctx or runner.context()
    # read before planning: a plan made while a commit lands is kept under the older
    # generation, which no later lookup asks for
    generation = getattr(runner.engine.catalog, "generation", None)

    def make(tree: exp.Expression) -> PlannedQuery:
        return plan_select(tree, runner.visible_catalog(), ctx, sql=tree.meta.get("sql"))

    return runner.services.plan_cache.plan(stmt, ctx, generation, make)


def run_query(runner: StatementRunner, stmt: exp.Expression) -> RowsOutcome:
    ctx = runner.context()
    planned = plan_query(runner, stmt, ctx)
    result = execute(planned, runner.engine, ctx)
    runner.scan_stats = result.profile
    batches = with_timeout(result.batches, ctx.cancel, ctx.options.query_timeout,
                           runner.deadlines)
    if ctx.options.enable_profile:
        batches = runner.profiles.track(
            batches, result.profile, stmt.meta.get("sql", ""), runner.user, runner.database,
            lambda: plan_scan_lines(planned.plan) + operator_counters(
                planned.dplan, result.coordinator))
    return RowsOutcome(list(result.names), list(result.types), batches)


def explain(runner: StatementRunner, query: exp.Expression, style: object) -> TextOutcome:
    """EXPLAIN [VERBOSE | SHAPE PLAN | ...] <query>: the distributed plan in Doris' text."""
    if isinstance(query, DorisOutfile):  # the query's plan, with Doris' file sink
        lines = [str(row[0]) for row in explain(runner, query.this, style).rows]
        return TextOutcome([EXPLAIN_COLUMN], [(line,) for line in outfile_sink_lines(
            lines, query.args["path"].name)])
    if not isinstance(query, exp.Query):
        raise not_supported(f"EXPLAIN of {type(query).__name__.upper()}")
    dplan = plan_query(runner, query).dplan
    text = str(style.name if isinstance(style, exp.Expression) else style or "").upper()
    lines = shape_lines(dplan) if text == "SHAPE PLAN" else \
        explain_lines(dplan, verbose=text == "VERBOSE")
    return TextOutcome([EXPLAIN_COLUMN], [(line,) for line in lines])


def explain_statement(runner: StatementRunner, stmt: DorisExplain) -> TextOutcome:
    return explain(runner, stmt.this, stmt.args.get("style"))


def describe_query(runner: StatementRunner, stmt: exp.Describe) -> TextOutcome:
    """DESC <query>: its plan, like EXPLAIN."""
    return explain(runner, stmt.this, None)


def outfile(runner: StatementRunner, stmt: DorisOutfile) -> RowsOutcome:
    """SELECT .. INTO OUTFILE: run the query into files under the export dir
    (executor/outfile.py); one result row, Doris' FileNumber / TotalRows / FileSize / URL."""
    opts = outfile_options(runner.file_dirs, stmt.args["path"].name,
                           stmt.args.get("format") or "csv",
                           property_map(stmt.expressions))
    result = run_query(runner, stmt.this)
    written = write_outfile(result.batches, result.names, result.types, opts, new_query_id())
    row = Batch(RESULT_COLUMNS, tuple(Column.from_physical(t, [v]) for t, v in zip(
        RESULT_TYPES, written.row())))
    return RowsOutcome(list(RESULT_COLUMNS), list(RESULT_TYPES), iter([row]))


def describe_function(runner: StatementRunner, stmt: DescFunction) -> TextOutcome:
    """DESC FUNCTION local(..): the columns the table function gives (Doris' DESC rows)."""
    call = table_function_call(stmt.this)
    if call is None:
        raise not_supported("DESC FUNCTION of a non table function")
    resolver = runner.context().table_functions
    assert resolver is not None  # the runner's context always carries one
    source = resolver.resolve(call[0], call[1], call[0])
    rows: list[tuple[object, ...]] = [(n, t.desc_sql(), "Yes", "false", "NULL", "")
                                      for n, t in zip(source.names, source.types)]
    return TextOutcome(["Field", "Type", "Null", "Key", "Default", "Extra"], rows)
