"""DDL statements as plain data: what a statement says, without sqlglot node details.

``sql.parser.dialect`` parses Doris SQL into typed sqlglot trees; this module flattens the DDL
ones into small frozen dataclasses (``CreateTableSpec`` and its ``*Clause`` parts,
``CreateIndexSpec``, ``DropIndexSpec``, the ALTER ``*Action`` classes) so the DDL analysis
(``sql.ddl.create_table``) never walks sqlglot nodes itself. Every
name and literal comes back as plain text exactly as written (unquoted, case preserved), with
Doris 2.1's defaults filled in for column types only. Nothing here validates semantics: a view of
``CREATE TABLE`` with a key column that does not exist is still a view.

Sequences are tuples. Partition bounds and list values are the literal text ("2020-01-01", "10",
"-5"); ``None`` stands for MAXVALUE inside a range bound and for NULL inside a LIST value row.

Entry points: ``describe_create_table``, ``describe_alter``, ``describe_create_index``,
``describe_drop_index``, ``table_name``, ``type_sql``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sql.errors import DorisError
from sql.parser.dialect import (
    AddPartition,
    AddRollup,
    AggTypeColumnConstraint,
    AlterSetProperties,
    DorisIndexParameters,
    DorisRollupIndex,
    DropPartition,
    DropRollup,
    KeyColumnConstraint,
    ListPartitionDef,
    PartitionByList,
    PartitionByRange,
    RangePartitionDef,
    ReplacePartition,
    ShaleDoris,
    StepPartitionDef,
)
from sql.parser.mysql_ddl import doris_type_sql

__all__ = [
    "AddIndexAction",
    "AddPartitionAction",
    "AddRollupAction",
    "AlterAction",
    "ColumnClause",
    "CreateIndexSpec",
    "CreateTableSpec",
    "DistributionClause",
    "DropIndexAction",
    "DropIndexSpec",
    "DropPartitionAction",
    "DropRollupAction",
    "IndexClause",
    "PartitionClause",
    "PartitionDefClause",
    "ReplacePartitionAction",
    "RollupClause",
    "SetPropertiesAction",
    "UnsupportedAlterAction",
    "describe_alter",
    "describe_create_index",
    "describe_create_table",
    "describe_drop_index",
    "table_name",
    "type_sql",
]

Properties = tuple[tuple[str, str], ...]

# Doris 2.1 (Nereids) defaults for types written without parameters: DECIMAL is DECIMALV3(38, 9)
# (DataType.convertPrimitiveFromStrings with enable_decimal_conversion=true), CHAR is CHAR(1) and
# VARCHAR is VARCHAR(65533) (ColumnDefinition.updateCharacterTypeLength).
DEFAULT_DECIMAL = (38, 9)
DEFAULT_CHAR_LENGTH = 1
DEFAULT_VARCHAR_LENGTH = 65533

_SIMPLE_TYPES: dict[exp.DType, str] = {
    exp.DType.BOOLEAN: "BOOLEAN",
    exp.DType.TINYINT: "TINYINT",
    exp.DType.SMALLINT: "SMALLINT",
    exp.DType.INT: "INT",
    exp.DType.BIGINT: "BIGINT",
    exp.DType.INT128: "LARGEINT",
    exp.DType.FLOAT: "FLOAT",
    exp.DType.DOUBLE: "DOUBLE",
    exp.DType.DATE: "DATE",
    exp.DType.TEXT: "STRING",
    exp.DType.JSON: "JSON",
}
_DATETIME_TYPES = {exp.DType.DATETIME, exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ}


# --------------------------------------------------------------------------------------------
# Views
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnClause:
    """One column definition.

    nullable is None when neither NULL nor NOT NULL was written. default is the literal text
    without quotes, "CURRENT_TIMESTAMP", or None for ``DEFAULT NULL`` (check has_default).
    is_key is the ``KEY`` marker of ALTER TABLE ADD COLUMN.
    """

    name: str
    type_sql: str
    agg_type: str | None = None
    nullable: bool | None = None
    has_default: bool = False
    default: str | None = None
    comment: str = ""
    is_key: bool = False
    auto_increment: bool = False


@dataclass(frozen=True, slots=True)
class IndexClause:
    name: str
    columns: tuple[str, ...]
    index_type: str | None  # "BITMAP", "INVERTED", "NGRAM_BF", ...; None when not given
    comment: str = ""
    properties: Properties = ()  # PROPERTIES ("parser" = "..", ..) of the definition


@dataclass(frozen=True, slots=True)
class PartitionDefClause:
    """One partition of a PARTITION BY clause or of ALTER TABLE ADD PARTITION.

    kind: "LESS_THAN" (less_than set; maxvalue=True when every bound is MAXVALUE, a bare
    ``LESS THAN MAXVALUE`` giving less_than=(None,)), "FIXED" (``VALUES [lower, upper)``), "IN"
    (values: one tuple per row; () for a LIST partition without VALUES IN) or "STEP" (``FROM
    lower TO upper INTERVAL interval [unit]``, name None: Doris expands it into partitions).
    """

    name: str | None
    kind: str
    less_than: tuple[str | None, ...] | None = None
    maxvalue: bool = False
    lower: tuple[str | None, ...] = ()
    upper: tuple[str | None, ...] = ()
    values: tuple[tuple[str | None, ...], ...] = ()
    if_not_exists: bool = False
    properties: Properties = ()
    interval: int | None = None
    unit: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionClause:
    type: str  # "RANGE" | "LIST"
    columns: tuple[str, ...]  # column names; SQL text for AUTO PARTITION expressions
    partitions: tuple[PartitionDefClause, ...]
    auto: bool = False
    # a date_trunc(col, 'unit') partition expression: columns holds col, trunc_unit the unit
    # (lower case); other function calls stay SQL text in columns, with their name in func
    # (func: the function name per column, None for a plain column; () when none is a call)
    trunc_unit: str | None = None
    func: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class DistributionClause:
    """buckets is None for BUCKETS AUTO (auto=True) and when BUCKETS was omitted (auto=False)."""

    type: str  # "HASH" | "RANDOM"
    columns: tuple[str, ...]
    buckets: int | None
    auto: bool = False


@dataclass(frozen=True, slots=True)
class RollupClause:
    name: str
    columns: tuple[str, ...]
    duplicate_key: tuple[str, ...] | None = None
    properties: Properties = ()
    from_index: str | None = None


@dataclass(frozen=True, slots=True)
class CreateTableSpec:
    db: str | None
    name: str
    if_not_exists: bool
    columns: tuple[ColumnClause, ...]
    indexes: tuple[IndexClause, ...] = ()
    keys_type: str | None = None  # "DUPLICATE" | "AGGREGATE" | "UNIQUE"
    key_columns: tuple[str, ...] = ()
    comment: str = ""
    partition: PartitionClause | None = None
    distribution: DistributionClause | None = None
    rollups: tuple[RollupClause, ...] = ()
    properties: Properties = ()  # PROPERTIES ("k" = "v", ...) in source order
    engine: str | None = None


@dataclass(frozen=True, slots=True)
class AddPartitionAction:
    partition: PartitionDefClause
    distribution: DistributionClause | None = None
    temporary: bool = False  # ADD TEMPORARY PARTITION


@dataclass(frozen=True, slots=True)
class DropPartitionAction:
    name: str
    if_exists: bool = False
    force: bool = False
    temporary: bool = False  # DROP TEMPORARY PARTITION


@dataclass(frozen=True, slots=True)
class ReplacePartitionAction:
    """REPLACE PARTITION (p, ..) WITH TEMPORARY PARTITION (tp, ..) [PROPERTIES (..)]"""

    partitions: tuple[str, ...]
    temporary: tuple[str, ...]
    properties: Properties = ()


@dataclass(frozen=True, slots=True)
class SetPropertiesAction:
    properties: Properties


@dataclass(frozen=True, slots=True)
class AddRollupAction:
    rollups: tuple[RollupClause, ...]


@dataclass(frozen=True, slots=True)
class DropRollupAction:
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AddIndexAction:
    index: IndexClause


@dataclass(frozen=True, slots=True)
class DropIndexAction:
    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class UnsupportedAlterAction:
    """An ALTER action this view does not model (ADD COLUMN, RENAME, ...)."""

    kind: str  # sqlglot node class name, e.g. "ColumnDef", "AlterRename"
    sql: str


AlterAction = (
    AddPartitionAction
    | DropPartitionAction
    | ReplacePartitionAction
    | SetPropertiesAction
    | AddRollupAction
    | DropRollupAction
    | AddIndexAction
    | DropIndexAction
    | UnsupportedAlterAction
)


@dataclass(frozen=True, slots=True)
class CreateIndexSpec:
    db: str | None
    table: str
    index: IndexClause
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropIndexSpec:
    db: str | None
    table: str | None
    name: str
    if_exists: bool = False


# --------------------------------------------------------------------------------------------
# Leaf helpers
# --------------------------------------------------------------------------------------------


def table_name(table: exp.Table) -> tuple[str | None, str]:
    """``db.t`` -> ("db", "t"); ``t`` -> (None, "t")."""
    return (table.db or None), table.name


def _name(node: exp.Expr | None) -> str:
    if node is None:
        return ""
    if isinstance(node, (exp.Identifier, exp.Column, exp.Var, exp.Literal, exp.Table)):
        return node.name
    return node.sql(dialect=ShaleDoris)


def _names(nodes: list[exp.Expr] | None) -> tuple[str, ...]:
    return tuple(_name(node) for node in nodes or [])


def _value_text(node: exp.Expr | None) -> str | None:
    """Literal text of a value: strings unquoted, NULL and MAXVALUE as None."""
    if node is None or isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Var) and node.name.upper() == "MAXVALUE":
        return None
    if isinstance(node, exp.Literal):
        return node.this
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return f"-{node.this.this}"
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.CurrentTimestamp):
        return "CURRENT_TIMESTAMP"
    if isinstance(node, (exp.Var, exp.Column, exp.Identifier)):
        return node.name
    return node.sql(dialect=ShaleDoris)


def _values(nodes: list[exp.Expr] | None) -> tuple[str | None, ...]:
    return tuple(_value_text(node) for node in nodes or [])


def _properties(nodes: list[exp.Expr] | None) -> Properties:
    pairs = []
    for node in nodes or []:
        if isinstance(node, exp.Property) and type(node) is exp.Property:
            key = node.this
            key_text = key.sql(dialect=ShaleDoris) if isinstance(key, exp.Dot) else _name(key)
            pairs.append((key_text, _value_text(node.args.get("value")) or ""))
    return tuple(pairs)


def _int_params(dtype: exp.DataType) -> list[int]:
    params = []
    for param in dtype.expressions:
        value = param.this if isinstance(param, exp.DataTypeParam) else param
        params.append(int(_name(value)))
    return params


def type_sql(dtype: exp.DataType) -> str:
    """Normalised Doris spelling of a column type, with Doris 2.1 defaults filled in.

    INT, BIGINT, LARGEINT, DECIMAL(27,9), DATETIME, DATETIME(3), VARCHAR(20), CHAR(1), STRING,
    DATE, BOOLEAN, HLL, BITMAP, QUANTILE_STATE, ... DATETIME(0) is written DATETIME.
    """
    kind = dtype.this
    mysql = doris_type_sql(dtype)  # MySQL-only spellings (LONGTEXT, FLOAT(53), BIT(1), ...)
    if mysql is not None:
        return mysql
    if kind == exp.DType.USERDEFINED:
        return str(dtype.args.get("kind") or "").upper()
    if kind in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[kind]
    if kind in (exp.DType.ARRAY, exp.DType.MAP, exp.DType.STRUCT):
        return _nested_type_sql(dtype)
    params = _int_params(dtype)
    if kind == exp.DType.DECIMAL:
        precision, scale = [*params, 0][:2] if params else DEFAULT_DECIMAL
        return f"DECIMAL({precision},{scale})"
    if kind in _DATETIME_TYPES:
        scale = params[0] if params else 0
        return f"DATETIME({scale})" if scale else "DATETIME"
    if kind == exp.DType.CHAR:
        return f"CHAR({params[0] if params else DEFAULT_CHAR_LENGTH})"
    if kind == exp.DType.VARCHAR:
        return f"VARCHAR({params[0] if params else DEFAULT_VARCHAR_LENGTH})"
    return dtype.sql(dialect=ShaleDoris).upper()


def _nested_type_sql(dtype: exp.DataType) -> str:
    """ARRAY<T>, MAP<K,V>, STRUCT<name:T,...> with every element type normalised."""
    parts = []
    for child in dtype.expressions:
        if isinstance(child, exp.ColumnDef):  # a STRUCT field: name and type
            kind = child.args.get("kind")
            if not isinstance(kind, exp.DataType):
                raise DorisError(f"Unsupported data type: {dtype.sql()}")
            parts.append(f"{child.name}:{type_sql(kind)}")
        elif isinstance(child, exp.DataType):
            parts.append(type_sql(child))
        else:
            raise DorisError(f"Unsupported data type: {dtype.sql()}")
    return f"{dtype.this.value}<{','.join(parts)}>"


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def _column(coldef: exp.ColumnDef) -> ColumnClause:
    agg_type: str | None = None
    nullable: bool | None = None
    has_default = False
    default: str | None = None
    comment = ""
    is_key = False
    auto_increment = False
    for constraint in coldef.constraints:
        kind = constraint.args.get("kind")
        if isinstance(kind, AggTypeColumnConstraint):
            agg_type = kind.this.name.upper()
        elif isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.DefaultColumnConstraint):
            has_default = True
            default = _value_text(kind.this)
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = _name(kind.this)
        elif isinstance(kind, KeyColumnConstraint):
            is_key = True
        elif isinstance(kind, exp.AutoIncrementColumnConstraint):
            auto_increment = True
    dtype = coldef.args.get("kind")
    return ColumnClause(
        name=coldef.name,
        type_sql=type_sql(dtype) if isinstance(dtype, exp.DataType) else "",
        agg_type=agg_type,
        nullable=nullable,
        has_default=has_default,
        default=default,
        comment=comment,
        is_key=is_key,
        auto_increment=auto_increment,
    )


def _index_from_constraint(node: exp.IndexColumnConstraint) -> IndexClause:
    index_type = node.args.get("index_type") or None
    comment = ""
    properties: Properties = ()
    for option in node.args.get("options") or []:
        if option.args.get("properties"):
            properties = _properties(option.args["properties"])
        if option.args.get("using") and not index_type:
            index_type = option.args["using"]
        if option.args.get("comment"):
            comment = _name(option.args["comment"])
    columns = tuple(
        _name(col.this if isinstance(col, exp.Ordered) else col) for col in node.expressions
    )
    return IndexClause(
        name=_name(node.this),
        columns=columns,
        index_type=str(index_type).upper() if index_type else None,
        comment=comment,
        properties=properties,
    )


def _index_from_params(name: exp.Expr, params: exp.Expr | None) -> IndexClause:
    if not isinstance(params, exp.IndexParameters):
        return IndexClause(name=_name(name), columns=(), index_type=None)
    using = params.args.get("using")
    columns = params.args.get("columns") or []
    comment = params.args.get("comment") if isinstance(params, DorisIndexParameters) else None
    return IndexClause(
        name=_name(name),
        columns=tuple(_name(c.this if isinstance(c, exp.Ordered) else c) for c in columns),
        index_type=_name(using).upper() if using else None,
        comment=_name(comment),
        properties=_properties(params.args.get("properties")),
    )


def _partition_def(node: exp.Expr) -> PartitionDefClause:
    if isinstance(node, StepPartitionDef):
        unit = node.args.get("unit")
        return PartitionDefClause(
            name=None,
            kind="STEP",
            lower=_values(node.args.get("start")),
            upper=_values(node.args.get("end")),
            interval=int(_name(node.args.get("interval"))),
            unit=_name(unit).upper() if unit else None,
        )
    name = _name(node.this)
    if_not_exists = bool(node.args.get("exists"))
    props = _properties(node.args.get("properties"))
    if isinstance(node, RangePartitionDef):
        if node.args.get("maxvalue"):
            return PartitionDefClause(
                name, "LESS_THAN", (None,), True, if_not_exists=if_not_exists, properties=props
            )
        if node.args.get("lower"):
            return PartitionDefClause(
                name,
                "FIXED",
                lower=_values(node.args.get("lower")),
                upper=_values(node.args.get("upper")),
                if_not_exists=if_not_exists,
                properties=props,
            )
        less_than = _values(node.args.get("less_than"))
        maxvalue = all(v is None for v in less_than)
        return PartitionDefClause(
            name, "LESS_THAN", less_than, maxvalue, if_not_exists=if_not_exists, properties=props
        )
    if isinstance(node, ListPartitionDef):
        rows = tuple(_values(row.expressions) for row in node.args.get("values") or [])
        return PartitionDefClause(
            name, "IN", values=rows, if_not_exists=if_not_exists, properties=props
        )
    raise TypeError(f"not a partition definition: {node.sql(dialect=ShaleDoris)}")


def _partition(node: PartitionByRange | PartitionByList) -> PartitionClause:
    columns = list(_names(node.expressions))
    funcs: list[str | None] = []
    unit = None
    for i, expr in enumerate(node.expressions or []):
        if isinstance(expr, (exp.TimestampTrunc, exp.DateTrunc)) and isinstance(
                expr.this, (exp.Column, exp.Identifier)) and expr.args.get("unit") is not None:
            columns[i] = _name(expr.this)
            unit = _name(expr.args["unit"]).lower()
            funcs.append("date_trunc")
        elif isinstance(expr, exp.Func):
            funcs.append((expr.sql_name() if not isinstance(expr, exp.Anonymous)
                          else expr.name).lower())
        else:
            funcs.append(None)
    return PartitionClause(
        type="RANGE" if isinstance(node, PartitionByRange) else "LIST",
        columns=tuple(columns),
        partitions=tuple(_partition_def(p) for p in node.args.get("partitions") or []),
        auto=bool(node.args.get("auto")),
        trunc_unit=unit,
        func=tuple(funcs) if any(funcs) else (),
    )


def _distribution(node: exp.DistributedByProperty) -> DistributionClause:
    buckets = node.args.get("buckets")
    auto = isinstance(buckets, exp.Var) and buckets.name.upper() == "AUTO"
    return DistributionClause(
        type=str(node.args.get("kind") or "HASH").upper(),
        columns=_names(node.expressions),
        buckets=int(_name(buckets)) if buckets is not None and not auto else None,
        auto=auto,
    )


def _rollup(node: exp.RollupIndex) -> RollupClause:
    duplicate_key = node.args.get("duplicate_key") if isinstance(node, DorisRollupIndex) else None
    properties = node.args.get("properties")
    from_index = node.args.get("from_index")
    return RollupClause(
        name=_name(node.this),
        columns=_names(node.expressions),
        duplicate_key=_names(duplicate_key) if duplicate_key else None,
        properties=_properties(properties.expressions if properties else None),
        from_index=_name(from_index) if from_index else None,
    )


# --------------------------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------------------------


def describe_create_table(create: exp.Create) -> CreateTableSpec:
    """Flatten a parsed ``CREATE TABLE``. CTAS and ``CREATE TABLE .. LIKE`` give no columns."""
    if not isinstance(create, exp.Create) or create.kind != "TABLE":
        raise TypeError("describe_create_table expects a CREATE TABLE statement")
    schema = create.this
    table = schema.this if isinstance(schema, exp.Schema) else schema
    if not isinstance(table, exp.Table):
        raise TypeError("CREATE TABLE without a table name")
    db, name = table_name(table)

    columns: list[ColumnClause] = []
    indexes: list[IndexClause] = []
    if isinstance(schema, exp.Schema):
        for item in schema.expressions:
            if isinstance(item, exp.ColumnDef):
                columns.append(_column(item))
            elif isinstance(item, exp.IndexColumnConstraint):
                indexes.append(_index_from_constraint(item))

    keys_type: str | None = None
    key_columns: tuple[str, ...] = ()
    comment = ""
    engine: str | None = None
    partition: PartitionClause | None = None
    distribution: DistributionClause | None = None
    rollups: tuple[RollupClause, ...] = ()
    props = create.args.get("properties")
    prop_nodes = props.expressions if props else []
    for prop in prop_nodes:
        if isinstance(prop, exp.DuplicateKeyProperty):
            keys_type, key_columns = "DUPLICATE", _names(prop.expressions)
        elif isinstance(prop, exp.AggregateKeyProperty):
            keys_type, key_columns = "AGGREGATE", _names(prop.expressions)
        elif isinstance(prop, exp.UniqueKeyProperty):
            keys_type, key_columns = "UNIQUE", _names(prop.expressions)
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = _name(prop.this)
        elif isinstance(prop, exp.EngineProperty):
            engine = _name(prop.this)
        elif isinstance(prop, (PartitionByRange, PartitionByList)):
            partition = _partition(prop)
        elif isinstance(prop, exp.DistributedByProperty):
            distribution = _distribution(prop)
        elif isinstance(prop, exp.RollupProperty):
            rollups = tuple(_rollup(r) for r in prop.expressions)

    return CreateTableSpec(
        db=db,
        name=name,
        if_not_exists=bool(create.args.get("exists")),
        columns=tuple(columns),
        indexes=tuple(indexes),
        keys_type=keys_type,
        key_columns=key_columns,
        comment=comment,
        partition=partition,
        distribution=distribution,
        rollups=rollups,
        properties=_properties(prop_nodes),
        engine=engine,
    )


def _alter_actions(action: exp.Expr) -> list[AlterAction]:
    if isinstance(action, AddPartition):
        dist = action.args.get("distribution")
        return [
            AddPartitionAction(
                partition=_partition_def(action.this),
                distribution=_distribution(dist) if dist else None,
                temporary=bool(action.args.get("temporary")),
            )
        ]
    if isinstance(action, ReplacePartition):
        return [
            ReplacePartitionAction(
                partitions=tuple(_name(n) for n in action.args["partitions"]),
                temporary=tuple(_name(n) for n in action.args["temporary"]),
                properties=_properties(action.args.get("properties") or []),
            )
        ]
    if isinstance(action, DropPartition):
        return [
            DropPartitionAction(
                name=_name(action.this),
                if_exists=bool(action.args.get("exists")),
                force=bool(action.args.get("force")),
                temporary=bool(action.args.get("temporary")),
            )
        ]
    if isinstance(action, AlterSetProperties):
        return [SetPropertiesAction(properties=_properties(action.expressions))]
    if isinstance(action, AddRollup):
        return [AddRollupAction(rollups=tuple(_rollup(r) for r in action.expressions))]
    if isinstance(action, DropRollup):
        return [DropRollupAction(names=_names(action.expressions))]
    if isinstance(action, exp.AddConstraint) and all(
        isinstance(c, exp.IndexColumnConstraint) for c in action.expressions
    ):
        return [AddIndexAction(index=_index_from_constraint(c)) for c in action.expressions]
    if isinstance(action, exp.Drop) and action.args.get("kind") == "INDEX":
        return [
            DropIndexAction(name=_name(t), if_exists=bool(action.args.get("exists")))
            for t in action.args.get("tables") or []
        ]
    return [UnsupportedAlterAction(kind=type(action).__name__, sql=action.sql(dialect=ShaleDoris))]


def describe_alter(alter: exp.Alter) -> tuple[AlterAction, ...]:
    """The actions of ``ALTER TABLE t <action>[, <action> ...]`` in order."""
    if not isinstance(alter, exp.Alter):
        raise TypeError("describe_alter expects an ALTER statement")
    actions: list[AlterAction] = []
    for action in alter.actions:
        actions.extend(_alter_actions(action))
    return tuple(actions)


def describe_create_index(create: exp.Create) -> CreateIndexSpec:
    """``CREATE INDEX [IF NOT EXISTS] i ON [db.]t (cols) [USING BITMAP] [COMMENT '..']``."""
    index = create.this
    if not isinstance(create, exp.Create) or not isinstance(index, exp.Index):
        raise TypeError("describe_create_index expects a CREATE INDEX statement")
    table = index.args.get("table")
    db, name = table_name(table) if isinstance(table, exp.Table) else (None, "")
    return CreateIndexSpec(
        db=db,
        table=name,
        index=_index_from_params(index.this, index.args.get("params")),
        if_not_exists=bool(create.args.get("exists")),
    )


def describe_drop_index(drop: exp.Drop) -> DropIndexSpec:
    """``DROP INDEX [IF EXISTS] i ON [db.]t``."""
    if not isinstance(drop, exp.Drop) or drop.args.get("kind") != "INDEX":
        raise TypeError("describe_drop_index expects a DROP INDEX statement")
    tables = drop.args.get("tables") or []
    on = drop.args.get("cluster")
    target = on.this if isinstance(on, exp.OnProperty) else None
    db, table = table_name(target) if isinstance(target, exp.Table) else (None, None)
    return DropIndexSpec(
        db=db,
        table=table,
        name=_name(tables[0]) if tables else "",
        if_exists=bool(drop.args.get("exists")),
    )
