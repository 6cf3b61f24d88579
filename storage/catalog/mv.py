"""Synchronous materialized views as materialized indexes: their schema seen as a table.

A sync MV (CREATE MATERIALIZED VIEW, Doris `MaterializedIndexMeta` with `defineExpr` columns) is
a materialized index whose columns are not the table's: `mv_<expr>` keys and
`mva_<AGG>__<expr>` values, each defined by an expression over base columns
(`ColumnMeta.define_expr`), merged by the index's own keys and aggregation types. Storage code
that takes `(table, index)` (the memtable's merge rules, the tablet reader's column types)
sees such an index through `index_table`: the table with the MV's columns and keys type, so
reading, writing, merging and compacting an MV tablet need no MV-specific code.
"""

from __future__ import annotations

from dataclasses import replace

from storage.catalog.meta import ColumnMeta, MaterializedIndexMeta, TableMeta

MV_PREFIX = "mv_"  # Doris CreateMaterializedViewStmt.MATERIALIZED_VIEW_NAME_PREFIX
MVA_PREFIX = "mva_"  # MATERIALIZED_VIEW_AGGREGATE_NAME_PREFIX


def index_table(table: TableMeta, index: MaterializedIndexMeta) -> TableMeta:
    """`table` as `index` stores it: for a materialized view, its columns and keys type."""
    if not index.schema or table.columns is index.schema:
        return table
    return replace(table, columns=index.schema, keys_type=index.keys_type)


def column_ref_text(name: str) -> str:
    """The define_expr of a column stored as it is (how the binder prints a column)."""
    return f"`{name}`"


def plain_source(column: ColumnMeta) -> str | None:
    """The base column an MV column stores unchanged (define_expr is a bare column), else None."""
    text = column.define_expr
    if len(text) > 2 and text[0] == "`" and text[-1] == "`" and "`" not in text[1:-1]:
        return text[1:-1]
    return None


def key_for_base_column(index: MaterializedIndexMeta, name: str) -> str | None:
    """The index column that holds base column `name` as a key, for delete conditions: the
    column itself for the base index and rollups; the `mv_` key defined as exactly that column
    for a materialized view (None: the view cannot express a condition on it)."""
    low = name.lower()
    if not index.schema:
        return next((c for c in index.columns if c.lower() == low), None)
    for c in index.schema:
        src = plain_source(c)
        if c.is_key and src is not None and src.lower() == low:
            return c.name
    return None
