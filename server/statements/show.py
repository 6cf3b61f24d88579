"""SHOW and DESC: each SHOW kind's handler behind `SHOW_HANDLERS` (the kind text the parser
sets -> handler). Rows of catalog objects are built by sql/show/statements.py; the rows of the
server's own state (variables, warnings, processlist, profiles, backends) are built here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import expressions as exp

from server import frontend_config
from server.dynamic_partitions import SHOW_COLUMNS as DYNAMIC_PARTITION_COLUMNS
from server.dynamic_partitions import show_rows as dynamic_partition_rows
from server.export_jobs import ExportJobs, order_and_limit
from server.frontend_config import FrontendConfig
from server.load_status import show_load_statement
from server.privileges.enforce import may_manage_sessions
from server.statements import processlist
from server.statements.common import like_filter, not_supported
from server.statements.outcomes import TextOutcome
from server.statements.query import describe_query
from server.statements.show_where import eval_where, filter_rows
from server.statements.tables import TableUse, resolve_table
from server.variables import display
from sql.errors import DorisError, no_database_selected, unknown_database
from sql.parser.dialect import AdminShowConfig, DescAll
from sql.show import statements as sql_show
from storage.catalog.meta import TableMeta

if TYPE_CHECKING:
    from server.statements.runner import StatementRunner

ShowHandler = Callable[["StatementRunner", exp.Show], TextOutcome]


def show(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    kind = stmt.name.upper()
    handler = SHOW_HANDLERS.get(kind)
    if handler is None:
        raise not_supported(f"SHOW {kind}")
    return handler(runner, stmt)


# ---- the pieces a SHOW names --------------------------------------------------------------
def _db(runner: StatementRunner, stmt: exp.Show) -> str | None:
    """The database a SHOW names (FROM / IN db), else the current one."""
    db_node = stmt.args.get("db")
    return db_node.name if db_node is not None else runner.database


def _existing_db(runner: StatementRunner, stmt: exp.Show) -> str:
    db = _db(runner, stmt)
    if not db:
        raise no_database_selected()
    if runner.visible_catalog().get_database(db) is None:
        raise unknown_database(db)
    return db


def _target(runner: StatementRunner, stmt: exp.Show) -> TableMeta:
    target = stmt.args.get("target")
    if target is None:
        raise DorisError("Table name is required")
    return resolve_table(runner.engine, target, _db(runner, stmt), TableUse.QUERY)


def _text(r: sql_show.ShowResult) -> TextOutcome:
    return TextOutcome(r.names, r.rows)


def _ordered(names: list[str], rows: list[tuple[object, ...]], stmt: exp.Show) -> TextOutcome:
    """SHOW ... ORDER BY / LIMIT (the job SHOWs Doris' regression tests poll)."""
    return TextOutcome(names, order_and_limit(names, rows, stmt.meta.get("order"),
                                              stmt.meta.get("limit")))


# ---- catalog objects ----------------------------------------------------------------------
def _databases(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    return _text(sql_show.show_databases(runner.visible_catalog(), stmt.text("like") or None))


def _tables(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    cat = runner.visible_catalog()
    db = _db(runner, stmt)
    if not db:
        raise no_database_selected()
    if db.lower() != sql_show.INFORMATION_SCHEMA and cat.get_database(db) is None:
        raise unknown_database(db)
    return _text(sql_show.show_tables(cat, db, bool(stmt.args.get("full")),
                                      stmt.text("like") or None))


def _create_table(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    return _text(sql_show.show_create_table(runner.visible_catalog(), _target(runner, stmt)))


def _columns(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    r = sql_show.show_columns(_target(runner, stmt), bool(stmt.args.get("full")))
    return TextOutcome(r.names, like_filter(r.rows, stmt.text("like") or None))


def _index(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    table = _target(runner, stmt)
    database = runner.engine.catalog.database_by_id(table.db_id)
    return _text(sql_show.show_index(table, database.name if database is not None else ""))


def _partitions(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    return _text(sql_show.show_partitions(runner.visible_catalog(), _target(runner, stmt),
                                          temporary=stmt.name.upper() == "TEMPORARY PARTITIONS"))


def _tablets(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    return _text(sql_show.show_tablets(runner.visible_catalog(), _target(runner, stmt),
                                       stmt.meta.get("partitions")))


def _tablet(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    target = stmt.args.get("target")
    assert target is not None  # the parser always sets the id
    return _text(sql_show.show_tablet(runner.visible_catalog(), int(target.name)))


def _dynamic_partition_tables(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    db = _existing_db(runner, stmt)
    rows: list[tuple[object, ...]] = list(dynamic_partition_rows(
        runner.engine, runner.visible_catalog().list_tables(db)))
    return TextOutcome(DYNAMIC_PARTITION_COLUMNS, rows)


def _proc(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    target = stmt.args.get("target")
    path = target.name if target is not None else "/"
    parts = [p for p in path.strip().split("/") if p]
    if parts and parts[0] == "colocation_group":
        if len(parts) == 1:
            return _text(sql_show.show_colocation_groups(runner.engine.catalog))
        if len(parts) == 2:
            return _text(sql_show.show_colocation_group(runner.engine.catalog, parts[1]))
    raise not_supported(f"SHOW PROC '{path}'")


# ---- jobs ---------------------------------------------------------------------------------
def _delete(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    db = _db(runner, stmt)
    if not db:
        raise no_database_selected()
    return _text(sql_show.show_delete(runner.visible_catalog(), db))


def _loads(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    """SHOW LOAD / STREAM LOAD / TRANSACTION (server/load_status.py)."""
    db = _existing_db(runner, stmt)
    cat = runner.visible_catalog()
    visible = (None if cat is runner.engine.catalog
               else lambda d, t: cat.get_table(d, t) is not None)
    names, rows = show_load_statement(runner.engine, stmt.name.upper(), db, stmt, visible)
    return TextOutcome(names, rows)


def _alter_rollup(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    r = sql_show.show_alter_rollup(runner.visible_catalog(), _existing_db(runner, stmt))
    return _ordered(r.names, filter_rows(r.names, r.rows, stmt.args.get("where")), stmt)


def _alter_column(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    r = sql_show.show_alter_column(runner.visible_catalog(), _existing_db(runner, stmt))
    return _ordered(r.names, filter_rows(r.names, r.rows, stmt.args.get("where")), stmt)


def _export(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    db = _db(runner, stmt)
    if not db:
        raise no_database_selected()
    where = stmt.args.get("where")
    names, rows = ExportJobs.of(runner.engine).show(
        db, None if where is None else lambda row: eval_where(where.this, row))
    return _ordered(names, rows, stmt)


# ---- session and server state -------------------------------------------------------------
def _variables(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    scope = runner.global_vars if stmt.args.get("global_") else runner.variables
    rows: list[tuple[object, ...]] = []
    for name in sorted(scope.schema):
        value = scope.get_variable(name)
        default = scope.get_schema(name)[1]
        rows.append((name, display(value), display(default), "0" if value == default else "1"))
    rows = like_filter(rows, stmt.text("like") or None)
    where = stmt.args.get("where")
    if where is not None:
        rows = [r for r in rows
                if eval_where(where.this, {"variable_name": r[0], "value": r[1]})]
    return TextOutcome(["Variable_name", "Value", "Default_Value", "Changed"], rows)


def _warnings(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    errors_only = stmt.name.upper() == "ERRORS"
    rows = [w for w in runner.last_warnings if not errors_only or w[0] == "Error"]
    return TextOutcome(["Level", "Code", "Message"], list(rows))


def _status(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    """The connection's own rows (Ssl_cipher, Ssl_version)."""
    return TextOutcome(["Variable_name", "Value"],
                       like_filter(runner.status_rows(), stmt.text("like") or None))


def _engines(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    return TextOutcome(
        ["Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"],
        [("Olap engine", "DEFAULT", "Default storage engine of palo", "NO", "NO", "NO")],
    )


def _charset(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    return TextOutcome(["Charset", "Description", "Default collation", "Maxlen"],
                       [("utf8mb4", "UTF-8 Unicode", "utf8mb4_0900_bin", 4)])


def _collation(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    return TextOutcome(["Collation", "Charset", "Id", "Default", "Compiled", "Sortlen"],
                       [("utf8mb4_0900_bin", "utf8mb4", 309, "Yes", "Yes", 1)])


def _query_profile(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    target = stmt.args.get("target")
    path = target.name if target is not None else "/"
    own_only = runner.access is not None and not may_manage_sessions(runner.access)
    names, rows = runner.profiles.show(path, runner.user if own_only else None)
    return TextOutcome(names, rows)


def _processlist(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    return TextOutcome(processlist.COLUMNS, processlist.visible_rows(
        runner.processlist(), runner.access, runner.user))


_BACKEND_COLUMNS = [
    "BackendId", "Host", "HeartbeatPort", "BePort", "HttpPort", "BrpcPort",
    "ArrowFlightSqlPort", "LastStartTime", "LastHeartbeat", "Alive", "SystemDecommissioned",
    "TabletNum", "DataUsedCapacity", "TrashUsedCapacity", "AvailCapacity", "TotalCapacity",
    "UsedPct", "MaxDiskUsedPct", "RemoteUsedCapacity", "Tag", "ErrMsg", "Version", "Status",
    "HeartbeatFailureCounter", "NodeRole"]


def _backends(runner: StatementRunner, stmt: exp.Show) -> TextOutcome:
    cat = runner.engine.catalog
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    counts: dict[int, int] = {}
    for t in cat.all_tablets():
        counts[t.backend_id] = counts.get(t.backend_id, 0) + 1
    rows: list[tuple[object, ...]] = [
        (str(b.backend_id), b.host, str(b.heartbeat_port), str(b.be_port), str(b.http_port),
         "8060", "-1", now, now, "true" if b.alive else "false", "false",
         str(counts.get(b.backend_id, 0)), "0.000 ", "0.000 ", "", "", "", "", "0.000 ",
         '{"location" : "default"}', "", "shaledb-0.1.0", "{}", "0", "mix")
        for b in cat.backends()
    ]
    return TextOutcome(_BACKEND_COLUMNS, rows)


SHOW_HANDLERS: dict[str, ShowHandler] = {
    "DATABASES": _databases,
    "TABLES": _tables,
    "CREATE TABLE": _create_table,
    "COLUMNS": _columns,
    "INDEX": _index,
    "PARTITIONS": _partitions,
    "TEMPORARY PARTITIONS": _partitions,
    "TABLETS": _tablets,
    "TABLET": _tablet,
    "DYNAMIC PARTITION TABLES": _dynamic_partition_tables,
    "PROC": _proc,
    "DELETE": _delete,
    "LOAD": _loads,
    "STREAM LOAD": _loads,
    "TRANSACTION": _loads,
    "ALTER TABLE ROLLUP": _alter_rollup,
    "ALTER TABLE MATERIALIZED VIEW": _alter_rollup,  # the same jobs (Doris)
    "ALTER TABLE COLUMN": _alter_column,
    "EXPORT": _export,
    "VARIABLES": _variables,
    "WARNINGS": _warnings,
    "ERRORS": _warnings,
    "STATUS": _status,
    "ENGINES": _engines,
    "CHARACTER SET": _charset,
    "COLLATION": _collation,
    "QUERY PROFILE": _query_profile,
    "PROCESSLIST": _processlist,
    "BACKENDS": _backends,
}


# ---- DESC ---------------------------------------------------------------------------------
def describe(runner: StatementRunner, stmt: exp.Describe) -> TextOutcome:
    """DESC <table> (a query's DESC is its plan: query.describe_query)."""
    if isinstance(stmt.this, exp.Query):
        return describe_query(runner, stmt)
    table = resolve_table(runner.engine, stmt.this, runner.database, TableUse.QUERY)
    return _text(sql_show.describe(table))


def describe_all(runner: StatementRunner, stmt: DescAll) -> TextOutcome:
    """DESC t ALL: a missing table is the same error as DESC t's."""
    table = resolve_table(runner.engine, stmt.this, runner.database, TableUse.QUERY)
    return _text(sql_show.describe_all(runner.engine.catalog, table))


def show_frontend_config(runner: StatementRunner, stmt: AdminShowConfig) -> TextOutcome:
    """ADMIN SHOW FRONTEND CONFIG [LIKE '...']."""
    like = stmt.args.get("like")
    rows = FrontendConfig.of(runner.engine).rows(like.name if like is not None else None)
    return TextOutcome(frontend_config.COLUMNS, rows)
