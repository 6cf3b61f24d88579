"""Which privilege each parsed statement needs, on every table it touches (Doris' per-statement
`analyze()` checks and Nereids' relation authentication, in one place).

`authorize(access, stmt, current_db)` raises Doris' error before the statement runs:
- queries (SELECT, UNION, subqueries, CTEs, EXPLAIN and DESC of a query): SELECT on every table
  read (a CTE's name is not a table; information_schema is filtered instead, see
  `VisibleCatalog`);
- INSERT: LOAD on the target, SELECT on an INSERT .. SELECT's sources; DELETE, UPDATE,
  TRUNCATE and LOAD DATA: LOAD;
- CREATE / DROP / ALTER of databases (1044) and tables (CREATE: 1227 as Doris; DROP, ALTER:
  1142); SHOW CREATE TABLE / DESC / SHOW COLUMNS, PARTITIONS, TABLETS: any privilege on the table;
- USE: any privilege in the database (1044); SET GLOBAL, ADMIN statements, SHOW BACKENDS, SHOW
  PROC, SHOW TABLET: ADMIN_PRIV (1227).
KILL, SHOW PROCESSLIST and SHOW QUERY PROFILE (own sessions and profiles without ADMIN_PRIV)
are decided where they run (server/session.py, server/statements/)
with `may_manage_sessions`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlglot import expressions as exp

from server.privileges import Access, check, database_denied
from server.privileges.model import (
    ADMIN,
    ADMIN_OR_NODE,
    ALTER,
    CREATE,
    DROP,
    INTERNAL_CATALOG,
    LOAD,
    SELECT,
    SHOW,
)
from sql.parser.dialect import (
    CancelAlter,
    CancelExport,
    DescAll,
    DescFunction,
    DorisExplain,
    DorisExport,
    DorisOutfile,
    LoadDataInfile,
)

_TABLE_SHOWS = {"CREATE TABLE": "SHOW CREATE TABLE", "COLUMNS": "SHOW COLUMNS",
                "INDEX": "SHOW INDEX", "PARTITIONS": "SHOW PARTITIONS", "TABLETS": "SHOW TABLETS"}
_ADMIN_SHOWS = {"TABLET", "PROC"}


def is_superuser(access: Access) -> bool:
    return access.has(ADMIN)


def may_manage_sessions(access: Access) -> bool:
    """KILL of another user's connection and SHOW PROCESSLIST of everyone need ADMIN_PRIV."""
    return access.has(ADMIN)


def authorize(access: Access, stmt: exp.Expression, current_db: str | None) -> None:
    if is_superuser(access):
        return  # ADMIN_PRIV satisfies every predicate below
    if isinstance(stmt, DorisExplain):
        authorize(access, stmt.this, current_db)
    elif isinstance(stmt, exp.Insert):
        target = stmt.this.this if isinstance(stmt.this, exp.Schema) else stmt.this
        if isinstance(target, exp.Table):
            _check_table(access, target, current_db, LOAD)
        if stmt.expression is not None:
            _reads(access, stmt.expression, current_db)
    elif isinstance(stmt, (exp.Delete, exp.Update)):
        target = stmt.this
        if isinstance(target, exp.Table):
            _check_table(access, target, current_db, LOAD)
        for table in query_tables(stmt):  # subqueries in WHERE / SET read other tables
            if table is not target:
                _check_table(access, table, current_db, SELECT)
    elif isinstance(stmt, LoadDataInfile):  # MySQL Load: LOAD_PRIV on the table, as Doris
        _check_table(access, stmt.this, current_db, LOAD)
    elif isinstance(stmt, exp.TruncateTable):
        for t in stmt.expressions:
            if isinstance(t, exp.Table):
                _check_table(access, t, current_db, LOAD)
    elif isinstance(stmt, (exp.Create, exp.Drop)):
        _ddl(access, stmt, current_db)
    elif isinstance(stmt, (exp.Alter, CancelAlter)):
        if isinstance(stmt.this, exp.Table):
            _check_table(access, stmt.this, current_db, ALTER, command="ALTER")
    elif isinstance(stmt, exp.Use):
        if not access.manager.can_see_database(access.identity, stmt.this.name):
            raise database_denied(access, stmt.this.name)
    elif isinstance(stmt, exp.Set):
        if any(_is_global(item) for item in stmt.expressions):
            check(access, ADMIN)
    elif isinstance(stmt, exp.Show):
        _show(access, stmt, current_db)
    elif isinstance(stmt, DescAll):
        _check_table(access, stmt.this, current_db, SHOW, command="DESCRIBE")
    elif isinstance(stmt, exp.Describe):
        if isinstance(stmt.this, exp.Query):
            _reads(access, stmt.this, current_db)
        elif isinstance(stmt.this, exp.Table):
            _check_table(access, stmt.this, current_db, SHOW, command="DESCRIBE")
    elif isinstance(stmt, exp.Query):
        _reads(access, stmt, current_db)
    elif isinstance(stmt, DorisOutfile):  # the query's reads; the files land in export_dir
        _reads(access, stmt.this, current_db)
    elif isinstance(stmt, DorisExport):
        _check_table(access, stmt.this, current_db, SELECT)
    elif isinstance(stmt, DescFunction):
        check(access, ADMIN)  # a table function reads the server's files
    elif isinstance(stmt, CancelExport):
        db = stmt.args["db"].name if stmt.args.get("db") is not None else current_db
        if db and not access.manager.can_see_database(access.identity, db):
            raise database_denied(access, db)
    elif type(stmt).__name__.startswith("Admin"):
        check(access, ADMIN)  # every ADMIN statement (ADMIN SET/SHOW CONFIG, ...) as in Doris


def _is_global(item: exp.Expression) -> bool:
    if (item.text("kind") or "").upper() == "GLOBAL":
        return True
    assignment = item.this
    left = getattr(assignment, "left", None)
    return isinstance(left, exp.SessionParameter) and (left.text("kind") or "").upper() == "GLOBAL"


def _reads(access: Access, query: exp.Expr, current_db: str | None) -> None:
    """SELECT on every base table the query reads (subqueries, CTE bodies, unions included)."""
    if any(isinstance(t.this, exp.Func) for t in query.find_all(exp.Table)):
        check(access, ADMIN)  # local(..) reads the server's files: ADMIN only
    for table in query_tables(query):
        _check_table(access, table, current_db, SELECT)


def query_tables(query: exp.Expr) -> Iterable[exp.Table]:
    """The base tables a statement reads: every table reference except `dual` and names that
    a WITH clause around the reference defines (a CTE elsewhere in the statement does not hide
    a real table of the same name)."""
    for table in query.find_all(exp.Table):
        if not table.name:
            continue
        if not table.text("db") and (table.name.lower() == "dual" or _is_cte_reference(table)):
            continue
        yield table


def _is_cte_reference(table: exp.Table) -> bool:
    name = table.name.lower()
    node: exp.Expr | None = table
    while node is not None:
        with_ = node.args.get("with_") or node.args.get("with")  # sqlglot's key varies
        if isinstance(with_, exp.With) and any(
            cte.alias_or_name.lower() == name for cte in with_.expressions
        ):
            return True
        node = node.parent
    return False


def _parts(table: exp.Expression, current_db: str | None) -> tuple[str, str | None, str]:
    if isinstance(table, exp.Schema):
        table = table.this
    if isinstance(table, exp.Table):
        return (table.text("catalog") or INTERNAL_CATALOG, table.text("db") or current_db,
                table.name)
    return INTERNAL_CATALOG, current_db, table.name


def _check_table(access: Access, table: exp.Expression, current_db: str | None, predicate: Any,
                 command: str | None = None, specific: bool = False) -> None:
    ctl, db, name = _parts(table, current_db)
    if db is None:
        return  # "No database selected" is the statement's own error, reported when it runs
    if db.lower() == "information_schema":
        return  # its rows are filtered to what the user may see (VisibleCatalog)
    check(access, predicate, db, name, ctl=ctl, command=command, specific=specific)


def _ddl(access: Access, stmt: exp.Expression, current_db: str | None) -> None:
    kind = (stmt.args.get("kind") or "").upper()
    predicate = CREATE if isinstance(stmt, exp.Create) else DROP
    if kind in ("DATABASE", "SCHEMA"):
        target = (stmt.args.get("tables") or [stmt.this])[0]
        check(access, predicate, target.name)
    elif kind == "TABLE":
        targets = [stmt.this] if isinstance(stmt, exp.Create) else (
            stmt.args.get("tables") or [stmt.this])
        for t in targets:
            # Doris' CreateTableStmt reports 1227; DropTableStmt 1142
            _check_table(access, t, current_db, predicate, specific=isinstance(stmt, exp.Create))
        if isinstance(stmt, exp.Create) and isinstance(stmt.expression, exp.Query):
            _reads(access, stmt.expression, current_db)
    elif kind == "INDEX":  # CREATE / DROP INDEX .. ON t are ALTER TABLE t: ALTER_PRIV, as Doris
        if isinstance(stmt, exp.Create):
            table = stmt.this.args.get("table") if isinstance(stmt.this, exp.Index) else None
        else:
            on = stmt.args.get("cluster")
            table = on.this if isinstance(on, exp.OnProperty) else None
        if not isinstance(table, exp.Table):
            check(access, ADMIN)
            return
        _check_table(access, table, current_db, ALTER, command="ALTER")
    else:
        check(access, ADMIN)


def _show(access: Access, stmt: exp.Show, current_db: str | None) -> None:
    kind = stmt.name.upper()
    target = stmt.args.get("target")
    db_node = stmt.args.get("db")
    db = db_node.name if db_node is not None else current_db
    if kind in _TABLE_SHOWS and target is not None:
        _check_table(access, target, db, SHOW, command=_TABLE_SHOWS[kind])
    elif kind in _ADMIN_SHOWS:
        check(access, ADMIN)
    elif kind == "BACKENDS":
        check(access, ADMIN_OR_NODE)
    elif kind in ("TABLES", "DELETE", "ALTER TABLE ROLLUP", "ALTER TABLE COLUMN", "EXPORT") \
            and db and (
        not access.manager.can_see_database(access.identity, db)
    ):
        raise database_denied(access, db)


class VisibleCatalog:
    """The catalog as a user sees it in SHOW DATABASES / SHOW TABLES and information_schema:
    only databases and tables they hold some privilege on (Doris filters the same way)."""

    def __init__(self, catalog: Any, access: Access) -> None:
        self._catalog = catalog
        self._access = access

    def list_databases(self) -> list[Any]:
        m, ident = self._access.manager, self._access.identity
        return [d for d in self._catalog.list_databases() if m.can_see_database(ident, d.name)]

    def list_tables(self, db: str) -> list[Any]:
        m, ident = self._access.manager, self._access.identity
        return [t for t in self._catalog.list_tables(db) if m.can_see_table(ident, db, t.name)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)
