"""CREATE / DROP MATERIALIZED VIEW (synchronous views): syntax checks and the catalog change.

The SELECT is bound into the view's index by sql/binder/materialized_view.py (`analyze`, passed
in by the statement handler: DDL analysis sits below the binder); this module checks the
statement's shape in Doris' wording and adds the view as a SHADOW materialized index with a
PENDING job that builds it over the existing rows (storage/rollup_job.py), as ALTER TABLE ADD
ROLLUP does. Upstream: Doris `CreateMaterializedViewStmt`, `MaterializedViewHandler`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from sql.errors import DorisError, ErrorCode
from storage.catalog.alter_table import NewRollup, add_rollup_indexes
from storage.catalog.meta import ColumnMeta, KeysType, TableMeta
from storage.catalog.new_table import NewIndex
from storage.catalog.service import alter_state, drop_rollups, rollup_job_running

if TYPE_CHECKING:
    from storage.engine import StorageEngine

DEFAULT_TIMEOUT_S = 86400  # Doris' alter job timeout


@dataclass(frozen=True, slots=True)
class ViewIndex:
    """The bound view: its columns (`mv_` keys first, then `mva_` values), keys, keys type."""

    name: str
    schema: tuple[ColumnMeta, ...]
    keys: tuple[str, ...]
    keys_type: KeysType
    short_key_column_count: int


@dataclass(frozen=True, slots=True)
class CreateMaterializedView:
    """The statement as parsed: view name, base table (db may be ""), IF NOT EXISTS, SELECT."""

    name: str
    db: str
    table: str
    if_not_exists: bool
    select: exp.Select


def describe_create(stmt: exp.Create) -> CreateMaterializedView:
    """Syntax-level checks of CREATE MATERIALIZED VIEW (Doris' messages)."""
    select = stmt.expression
    if not isinstance(select, exp.Select):
        raise DorisError("The materialized view only support one table in from clause.")
    from_ = select.args.get("from_") or select.args.get("from")
    joins = select.args.get("joins")
    if from_ is None or joins or not isinstance(from_.this, exp.Table):
        raise DorisError("The materialized view only support one table in from clause.")
    table = from_.this
    if table.alias:
        raise DorisError("The materialized view not support table with alias.")
    if select.args.get("having") is not None:
        raise DorisError("The having clause is not supported in add materialized view clause, "
                         f"expr:{select.args['having'].this.sql()}")
    if select.args.get("limit") is not None:
        raise DorisError("The limit clause is not supported in add materialized view clause, "
                         f"expr: limit {select.args['limit'].expression.sql()}")
    if select.args.get("where") is not None:
        # Doris 2.1 filters the view's rows; not supported here (the rewrite would have to prove
        # the query's predicate implies it)
        raise DorisError("The where clause is not supported in add materialized view clause, "
                         f"expr:{select.args['where'].this.sql()}", ErrorCode.NOT_SUPPORTED_YET)
    return CreateMaterializedView(
        name=stmt.this.name, db=table.text("db"), table=table.name,
        if_not_exists=bool(stmt.args.get("exists")), select=select)




def create(engine: StorageEngine, stmt: CreateMaterializedView, table: TableMeta,
           analyze: Callable[[CreateMaterializedView, TableMeta], ViewIndex]) -> int | None:
    """Validate and add the view as a SHADOW index with a PENDING job (the caller starts it).
    None: IF NOT EXISTS and it exists. Doris `processCreateMaterializedView`."""
    cat = engine.catalog
    with cat.lock:  # the checks hold until the commit
        table = cat.table_by_id(table.table_id) or table
        names = {ix.name.lower() for ix in cat.materialized_indexes(table.table_id)}
        if stmt.name.lower() in names or stmt.name.lower() == table.name.lower():
            if stmt.if_not_exists:
                return None
            raise DorisError(f"Materialized view[{stmt.name}] already exists")
        if rollup_job_running(cat, table):
            raise DorisError(f"Table[{table.name}]'s state({alter_state(cat, table)}) is not "
                             "NORMAL. Do not allow doing materialized view")
        view = analyze(stmt, table)
        index = NewIndex(name=view.name, columns=tuple(c.name for c in view.schema),
                         keys=view.keys, short_key_column_count=view.short_key_column_count,
                         schema=view.schema, keys_type=view.keys_type)
        return add_rollup_indexes(engine, table, [NewRollup(index, DEFAULT_TIMEOUT_S)])[0]


def drop(engine: StorageEngine, name: str, table: TableMeta, if_exists: bool) -> list[int]:
    """DROP MATERIALIZED VIEW [IF EXISTS] mv ON t: the jobs still building it, to cancel."""
    indexes = {ix.name.lower(): ix for ix in engine.catalog.materialized_indexes(table.table_id)}
    ix = indexes.get(name.lower())
    if ix is None or ix.is_base:
        if if_exists and ix is None:
            return []
        raise DorisError(f"Materialized view [{name}] does not exist in table [{table.name}]")
    return drop_rollups(engine, table, [ix.name])
