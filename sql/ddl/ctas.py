"""CREATE TABLE .. AS SELECT and CREATE TABLE .. LIKE: the table definition they imply.

CTAS: the columns come from the query's output, typed as Doris 2.1 (Nereids
`CreateTableCommand`) types them:
- a NULL-typed output becomes TINYINT;
- a STRING first column becomes VARCHAR(65533) (it is a key candidate, and STRING cannot be a
  key);
- a string that is a plain column of a table keeps that column's type (VARCHAR(10) stays
  VARCHAR(10), STRING stays STRING); a string computed by an expression (CHAR, VARCHAR or
  STRING) becomes VARCHAR(65533);
- a plain table column keeps its nullability, an expression is nullable.
The rest (keys, partitions, distribution, properties) comes from the statement. Without KEY
clause the table is DUPLICATE KEY on Doris' default key prefix; without DISTRIBUTED BY it is
`DISTRIBUTED BY HASH(<first column>) BUCKETS 10`, as Doris' CTAS does.

LIKE: a copy of the source table's definition (columns, keys, partitions and their bounds,
distribution, properties, indexes; rollups only WITH ROLLUP), without data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlglot import expressions as exp

from sql.ddl import specs as V
from sql.ddl.create_table import RollupSpec, TableDefinition
from sql.ddl.partitions import PartitionSpec
from sql.errors import DorisError
from storage.catalog.meta import ColumnMeta, PartitionType, TableMeta
from storage.catalog.view import CatalogView
from storage.types import MAX_VARCHAR_LENGTH, DataType, TypeKind

CTAS_DEFAULT_BUCKETS = 10


def _plain_columns(select: exp.Expression, catalog: CatalogView, db: str | None
                   ) -> list[ColumnMeta | None] | None:
    """For each output column of a simple SELECT over tables, the table column it is (None for
    an expression); None when the query shape gives no reliable answer (unions, subqueries)."""
    if not isinstance(select, exp.Select):
        return None
    tables: list[tuple[str, TableMeta]] = []
    for node in [select.args.get("from_") or select.args.get("from")] + list(
            select.args.get("joins") or []):
        source = node.this if node is not None else None
        if not isinstance(source, exp.Table) or not source.name:
            return None
        t = catalog.get_table(source.text("db") or db or "", source.name)
        if t is None:
            return None
        tables.append(((source.alias_or_name).lower(), t))
    out: list[ColumnMeta | None] = []
    for item in select.expressions:
        if isinstance(item, exp.Star):
            for _, t in tables:
                out.extend(t.columns)
            continue
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            qual = node.table.lower()
            out.extend(c for alias, t in tables if alias == qual for c in t.columns)
            continue
        found: ColumnMeta | None = None
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier):
            qual = node.table.lower()
            hits = [t.column(node.name) for alias, t in tables
                    if (not qual or alias == qual) and t.has_column(node.name)]
            found = hits[0] if len(hits) == 1 else None
        out.append(found)
    return out


def ctas_type(t: DataType, position: int, source: ColumnMeta | None) -> DataType:
    """Doris 2.1 `CreateTableCommand.run`: NULL -> TINYINT; a STRING first column and every
    string computed by an expression -> VARCHAR(65533); a table column keeps its type."""
    if t.kind is TypeKind.NULL:
        return DataType(TypeKind.TINYINT)
    if t.is_string and ((position == 0 and t.kind is TypeKind.STRING) or source is None):
        return DataType(TypeKind.VARCHAR, length=MAX_VARCHAR_LENGTH)
    return t


def ctas_columns(create: exp.Create, names: Sequence[str], types: Sequence[DataType],
                 catalog: CatalogView, db: str | None) -> tuple[V.ColumnClause, ...]:
    """The column definitions of a CTAS from its query's output names and types."""
    schema = create.this
    given = [e.name for e in schema.expressions] if isinstance(schema, exp.Schema) else []
    if given and len(given) != len(names):
        raise DorisError("ctas column size is not equal to the query's")
    query = create.expression
    while isinstance(query, exp.Subquery):
        query = query.this
    plain = _plain_columns(query, catalog, db)
    if plain is not None and len(plain) != len(names):
        plain = None
    out = []
    for i, (name, t) in enumerate(zip(given or names, types)):
        source = plain[i] if plain is not None else None
        ct = ctas_type(t, i, source)
        out.append(V.ColumnClause(
            name=name, type_sql=ct.sql() if ct.kind is not TypeKind.STRING else "string",
            nullable=source.nullable if source is not None else True,
        ))
    return tuple(out)


def ctas_view(create: exp.Create, names: Sequence[str], types: Sequence[DataType],
              catalog: CatalogView, db: str | None) -> V.CreateTableSpec:
    """The CREATE TABLE (dialect view) a CTAS stands for: its clauses plus derived columns."""
    schema = create.this
    bare = create.copy()
    if isinstance(schema, exp.Schema):
        bare.set("this", schema.this)  # the column-name list is not a column definition
    bare.set("expression", None)
    view = V.describe_create_table(bare)
    columns = ctas_columns(create, names, types, catalog, db)
    if not columns:
        raise DorisError("Table must have at least 1 column")
    if view.distribution is None:
        view = replace(view, distribution=V.DistributionClause(
            "HASH", (columns[0].name,), CTAS_DEFAULT_BUCKETS))
    return replace(view, columns=columns)


# ---- LIKE ----------------------------------------------------------------------------------
def like_source(create: exp.Create) -> exp.Table | None:
    """The source table of CREATE TABLE .. LIKE src, or None for another CREATE TABLE."""
    props = create.args.get("properties")
    for p in props.expressions if props is not None else ():
        if isinstance(p, exp.LikeProperty) and isinstance(p.this, exp.Table):
            return p.this
    return None


def like_rollups(create: exp.Create) -> list[str] | None:
    """The rollups of `LIKE src WITH ROLLUP [(r1, ..)]`: None without the clause, [] for every
    rollup, else the names given."""
    props = create.args.get("properties")
    for p in props.expressions if props is not None else ():
        if isinstance(p, exp.LikeProperty):
            for opt in p.expressions:
                if isinstance(opt, exp.Property) and opt.name.upper() == "WITH ROLLUP":
                    return [e.name for e in opt.args["value"].expressions]
    return None


def like_definition(create: exp.Create, source: TableMeta, catalog: CatalogView,
                    rollups: Sequence[str] | None) -> TableDefinition:
    """The definition of `CREATE TABLE t LIKE source [WITH ROLLUP [(r1, ..)]]`: `rollups` None
    copies none, an empty list every rollup, else the named ones (an unknown name is Doris'
    error)."""
    target = create.this.this if isinstance(create.this, exp.Schema) else create.this
    db, name = V.table_name(target)
    specs: list[RollupSpec] = []
    if rollups is not None:
        # sync materialized views are not copied (their columns are not the table's)
        existing = [i for i in catalog.materialized_indexes(source.table_id)
                    if not i.is_base and i.state == "NORMAL" and not i.is_materialized_view]
        wanted = {r.lower() for r in rollups}
        for r in rollups:
            if not any(i.name.lower() == r.lower() for i in existing):
                raise DorisError(f"Rollup index[{r}] not exists in Table[{source.name}]")
        for i in existing:
            if not wanted or i.name.lower() in wanted:
                dup = tuple(i.keys) if source.keys_type.value == "DUP_KEYS" else None
                specs.append(RollupSpec(i.name, tuple(i.columns), dup))
    partitions: list[PartitionSpec] = []
    if source.partition_info.type is not PartitionType.UNPARTITIONED:
        for p in catalog.partitions(source.table_id):
            if source.partition_info.type is PartitionType.RANGE:
                upper = ("MAXVALUE",) if p.upper is None else tuple(p.upper)
                lower = tuple(p.lower) if p.lower is not None else ()
                partitions.append(PartitionSpec(p.name, "FIXED", lower=lower, upper=upper))
            else:
                partitions.append(PartitionSpec(p.name, "IN", values=tuple(p.list_values)))
    return TableDefinition(
        db=db, name=name, if_not_exists=bool(create.args.get("exists")),
        keys_type=source.keys_type, columns=source.columns,
        key_columns=tuple(c.name for c in source.columns if c.is_key),
        partition_info=source.partition_info, partitions=tuple(partitions),
        distribution=source.distribution, rollups=tuple(specs), indexes=source.indexes,
        properties=source.properties, comment=source.comment,
    )

