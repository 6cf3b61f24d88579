"""CREATE TABLE analysis: a parsed statement becomes a validated table definition.

Input is the plain view of a CREATE TABLE (`sql.ddl.specs.describe_create_table`);
output is a `TableDefinition` holding the `TableMeta`-to-be, its materialized indexes and its
partition specs, checked with Doris' rules and error wording (Nereids `CreateTableInfo`,
`ColumnDefinition`, `DistributionDescriptor`, `PartitionTableInfo`): keys form an ordered prefix
of the columns, key columns take no aggregation type, every AGGREGATE value column has one,
distribution columns are keys on AGGREGATE/UNIQUE tables, types and defaults are valid.
Ids, tablets and colocation are assigned by the catalog service (storage/catalog/new_table.py),
asked by `ddl_ops.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sql.ddl import properties as P
from sql.ddl.partitions import PartitionSpec
from sql.ddl.specs import (
    ColumnClause,
    CreateTableSpec,
    DistributionClause,
    IndexClause,
    PartitionClause,
    PartitionDefClause,
    RollupClause,
)
from sql.errors import DorisError
from storage.catalog.meta import (
    AggType,
    ColumnMeta,
    DistributionInfo,
    DistributionType,
    IndexDef,
    KeysType,
    PartitionInfo,
    PartitionType,
)
from storage.types import (
    MAX_CHAR_LENGTH,
    MAX_DECIMAL_PRECISION,
    MAX_VARCHAR_LENGTH,
    DataType,
    TypeError_,
    TypeKind,
    parse_type,
)

DEFAULT_AUTO_BUCKETS = 10
SHORTKEY_MAX_COLUMNS = 3
SHORTKEY_MAX_BYTES = 36

_KEYS_TYPES = {"DUPLICATE": KeysType.DUP_KEYS, "AGGREGATE": KeysType.AGG_KEYS,
               "UNIQUE": KeysType.UNIQUE_KEYS}


@dataclass(frozen=True, slots=True)
class RollupSpec:
    name: str
    columns: tuple[str, ...]
    duplicate_key: tuple[str, ...] | None
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class TableDefinition:
    db: str | None
    name: str
    if_not_exists: bool
    keys_type: KeysType
    columns: tuple[ColumnMeta, ...]
    key_columns: tuple[str, ...]
    partition_info: PartitionInfo
    partitions: tuple[PartitionSpec, ...]
    distribution: DistributionInfo
    rollups: tuple[RollupSpec, ...]
    indexes: tuple[IndexDef, ...]
    properties: tuple[tuple[str, str], ...]
    comment: str


def index_size(t: DataType) -> int:
    """Bytes a key column takes in the short-key prefix (Doris `Type.getIndexSize`)."""
    if t.kind is TypeKind.CHAR:
        return t.length
    if t.kind is TypeKind.VARCHAR:
        return 20
    return t.fixed_width or 8


def short_key_count(columns: Sequence[ColumnMeta]) -> int:
    """How many leading key columns form the short-key prefix (<= 3 columns, <= 36 bytes)."""
    count, size = 0, 0
    for c in columns:
        if not c.is_key or count >= SHORTKEY_MAX_COLUMNS:
            break
        size += index_size(c.type)
        if size > SHORTKEY_MAX_BYTES:
            if count == 0 and c.type.is_string:
                count = 1
            break
        count += 1
        if c.type.kind is TypeKind.VARCHAR:
            break
    return max(count, 1)


def analyze_type(type_sql: str, column: str) -> DataType:
    try:
        t = parse_type(type_sql)
    except ValueError:
        raise DorisError(f"Unsupported data type: {type_sql} of column {column}") from None
    if t.kind is TypeKind.VARCHAR and not 1 <= t.length <= MAX_VARCHAR_LENGTH:
        raise DorisError(
            f"Varchar size must between 1 and {MAX_VARCHAR_LENGTH}. Size was set to: {t.length}.")
    if t.kind is TypeKind.CHAR and not 1 <= t.length <= MAX_CHAR_LENGTH:
        raise DorisError(
            f"Char size must between 1 and {MAX_CHAR_LENGTH}. Size was set to: {t.length}.")
    if t.kind is TypeKind.DECIMAL:
        if not 1 <= t.precision <= MAX_DECIMAL_PRECISION:
            raise DorisError(
                f"Precision of decimal must between 1 and {MAX_DECIMAL_PRECISION}. "
                f"Precision was set to: {t.precision}."
            )
        if not 0 <= t.scale <= t.precision:
            raise DorisError(
                f"Scale of decimal must between 0 and {t.precision}. Scale was set to: {t.scale}."
            )
    if t.kind is TypeKind.DATETIME and not 0 <= t.scale <= 6:
        raise DorisError(
            f"Scale of Datetime/Time must between 0 and 6. Scale was set to: {t.scale}.")
    for child in t.children:
        if child.kind in (TypeKind.HLL, TypeKind.BITMAP):
            raise DorisError(f"{t.kind.value} unsupported sub-type: {child.sql().upper()}")
        analyze_type(child.sql(), column)
    if t.kind is TypeKind.MAP and t.children[0].is_nested:
        raise DorisError(f"MAP unsupported sub-type: {t.children[0].sql().upper()}")
    if t.kind is TypeKind.STRUCT:
        names = [n.lower() for n in t.field_names]
        if len(set(names)) != len(names):
            dup = next(n for n in t.field_names if names.count(n.lower()) > 1)
            raise DorisError(f"Duplicate field name {dup} in struct {t.desc_sql()}")
    return t


def _agg_compatible(agg: AggType, t: DataType) -> bool:
    if agg is AggType.SUM:
        return t.is_numeric and t.kind is not TypeKind.BOOLEAN
    if agg in (AggType.MAX, AggType.MIN):
        return t.kind not in (TypeKind.HLL, TypeKind.BITMAP)
    if agg is AggType.HLL_UNION:
        return t.kind is TypeKind.HLL
    if agg is AggType.BITMAP_UNION:
        return t.kind is TypeKind.BITMAP
    if agg in (AggType.REPLACE, AggType.REPLACE_IF_NOT_NULL):
        return True
    if t.is_nested:  # only REPLACE-style aggregation keeps a whole nested value
        return False
    return agg is AggType.GENERIC


def _default_keys(cols: Sequence[ColumnClause]) -> tuple[KeysType, list[str]]:
    """Keys Doris picks when the statement gives none (CreateTableInfo.validate)."""
    if any(c.agg_type for c in cols):
        keys = []
        for c in cols:
            if c.agg_type:
                break
            keys.append(c.name)
        return KeysType.AGG_KEYS, keys
    keys, size = [], 0
    for c in cols:
        t = analyze_type(c.type_sql, c.name)
        size += index_size(t)
        if len(keys) >= SHORTKEY_MAX_COLUMNS or size > SHORTKEY_MAX_BYTES:
            if not keys and t.is_string:
                keys.append(c.name)
            break
        if t.is_float or t.is_nested or t.kind in (TypeKind.STRING, TypeKind.HLL,
                                                   TypeKind.BITMAP):
            break
        keys.append(c.name)
        if t.kind is TypeKind.VARCHAR:
            break
    return KeysType.DUP_KEYS, keys


def _analyze_columns(cols: Sequence[ColumnClause], keys_type: KeysType, keys: Sequence[str]
                     ) -> list[ColumnMeta]:
    seen: set[str] = set()
    for c in cols:
        if c.name.lower() in seen:
            raise DorisError(f"Duplicate column name '{c.name}'")
        seen.add(c.name.lower())
    if not keys and keys_type is not KeysType.DUP_KEYS:
        raise DorisError("The number of key columns is 0.")
    if not keys:
        raise DorisError(
            "The olap table first column could not be float, double, string or array, struct, "
            "map, please use decimal or varchar instead."
        )
    if len(keys) > len(cols):
        raise DorisError("The number of key columns should be less than the number of columns.")
    for i, key in enumerate(keys):
        name = cols[i].name
        if key.lower() != name.lower():
            if all(c.name.lower() != key.lower() for c in cols):
                raise DorisError(f"Key column[{key}] doesn't exist.")
            raise DorisError(
                "Key columns should be a ordered prefix of the schema. "
                f"KeyColumns[{i}] (starts from zero) is {key}, but corresponding column is "
                f"{name} in the previous columns declaration."
            )
        if cols[i].agg_type:
            raise DorisError(f"Key column can not set aggregation type: {name}")
    out: list[ColumnMeta] = []
    for i, c in enumerate(cols):
        is_key = i < len(keys)
        t = analyze_type(c.type_sql, c.name)
        agg = AggType(c.agg_type.upper()) if c.agg_type else None
        if not is_key:
            if keys_type is KeysType.AGG_KEYS and agg is None:
                raise DorisError(
                    f"AGG_KEYS table should specify aggregate type for non-key column[{c.name}]")
            if keys_type is not KeysType.AGG_KEYS and agg is not None:
                raise DorisError(
                    f"{keys_type.value} table should not specify aggregate type for non-key "
                    f"column[{c.name}]"
                )
        if is_key:
            if t.is_float:
                raise DorisError("Float or double can not used as a key, use decimal instead.")
            if t.kind is TypeKind.STRING:
                raise DorisError(f"String Type should not be used in key column[{c.name}].")
            if t.kind in (TypeKind.HLL, TypeKind.BITMAP):
                raise DorisError(f"Key column can not set complex type:{c.name}")
            if t.is_nested:  # Doris ColumnDefinition.validate
                raise DorisError(f"{t.kind.value.capitalize()} can only be used in the non-key "
                                 "column of the duplicate table at present.")
        if agg is not None and t.is_nested and not _agg_compatible(agg, t):
            raise DorisError(f"{t.kind.value} column can't support aggregation {agg.value}")
        if agg is not None and not _agg_compatible(agg, t):
            raise DorisError(
                f"Aggregate type {agg.value} is not compatible with primitive type {t.sql()}")
        if t.kind in (TypeKind.HLL, TypeKind.BITMAP) and keys_type is KeysType.AGG_KEYS:
            wanted = AggType.HLL_UNION if t.kind is TypeKind.HLL else AggType.BITMAP_UNION
            if agg is not wanted:
                raise DorisError(f"Aggregate type {agg.value if agg else 'NONE'} is not compatible "
                                 f"with primitive type {t.sql()}")
        nullable = True if c.nullable is None else bool(c.nullable)
        default = c.default
        if c.has_default:
            if default is None:
                if not nullable:
                    raise DorisError(
                        f"Can not set null default value to non nullable column: {c.name}")
            elif default.upper() == "CURRENT_TIMESTAMP":
                if t.kind is not TypeKind.DATETIME:
                    raise DorisError(
                        f"Column {c.name} of type {t.sql()} can not use CURRENT_TIMESTAMP as "
                        "default value"
                    )
                default = "CURRENT_TIMESTAMP"
            else:
                try:
                    t.to_physical(default)
                except TypeError_ as e:
                    raise DorisError(f"Invalid default value for '{c.name}': {e}") from None
        out.append(ColumnMeta(
            name=c.name, type=t, nullable=nullable, is_key=is_key,
            agg_type=agg if keys_type is KeysType.AGG_KEYS and not is_key else None,
            has_default=bool(c.has_default), default=default, comment=c.comment or "",
        ))
    return out


def _analyze_distribution(ast: DistributionClause | None, columns: Sequence[ColumnMeta],
                          keys_type: KeysType) -> DistributionInfo:
    by_name = {c.name.lower(): c for c in columns}
    if ast is None:
        if keys_type is KeysType.UNIQUE_KEYS:
            raise DorisError("Create unique keys table should not contain random distribution desc")
        return DistributionInfo(DistributionType.RANDOM, (), DEFAULT_AUTO_BUCKETS,
                                auto_buckets=True)
    auto = bool(ast.auto) or ast.buckets is None
    buckets = DEFAULT_AUTO_BUCKETS if auto or ast.buckets is None else ast.buckets
    is_hash = ast.type.upper() == "HASH"
    if buckets <= 0:
        raise DorisError(
            "Number of hash distribution should be greater than zero." if is_hash
            else "Number of random distribution should be greater than zero."
        )
    if not is_hash:
        if keys_type is KeysType.UNIQUE_KEYS:
            raise DorisError("Create unique keys table should not contain random distribution desc")
        if keys_type is KeysType.AGG_KEYS and any(
            c.agg_type in (AggType.REPLACE, AggType.REPLACE_IF_NOT_NULL) for c in columns
        ):
            raise DorisError(
                "Create aggregate keys table with value columns of which aggregate type is "
                "REPLACE or REPLACE_IF_NOT_NULL should not contain random distribution desc"
            )
        return DistributionInfo(DistributionType.RANDOM, (), buckets, auto_buckets=auto)
    cols = list(ast.columns)
    if len({c.lower() for c in cols}) != len(cols):
        raise DorisError("Duplicate key in distribution desc is not allowed")
    names = []
    for c in cols:
        col = by_name.get(c.lower())
        if col is None:
            raise DorisError(f"Distribution column({c}) doesn't exist")
        if not col.is_key and keys_type in (KeysType.UNIQUE_KEYS, KeysType.AGG_KEYS):
            raise DorisError(f"Distribution column[{col.name}] is not key column")
        if col.type.is_float:
            raise DorisError(
                f"Floating point type column can not be distribution column: {col.name}")
        if col.type.is_nested:  # Doris HashDistributionDesc.analyze
            raise DorisError(f"{col.type.kind.value.capitalize()} Type should not be used in "
                             f"distribution column[{col.name}].")
        names.append(col.name)
    return DistributionInfo(DistributionType.HASH, tuple(names), buckets, auto_buckets=auto)


def partition_spec(p: PartitionDefClause) -> PartitionSpec:
    """The dialect's partition view -> PartitionSpec (MAXVALUE / NULL bounds become None)."""
    kind = p.kind.upper()
    name = p.name  # None only for a STEP definition (FROM .. TO .. INTERVAL)
    if name is None or kind not in ("LESS_THAN", "FIXED", "IN"):
        raise DorisError(
            f"Partition definition {kind} (FROM .. TO .. INTERVAL) is not supported yet")
    if kind == "LESS_THAN":
        values = p.less_than
        if p.maxvalue or values is None or any(v is None or str(v).upper() == "MAXVALUE"
                                               for v in values):
            return PartitionSpec(name, "LESS_THAN", less_than=None)
        return PartitionSpec(name, "LESS_THAN", less_than=tuple(str(v) for v in values))
    if kind == "FIXED":
        if any(v is None for v in p.lower):
            raise DorisError(f"Invalid lower bound of partition [{name}]: MAXVALUE")
        upper = ("MAXVALUE",) if any(v is None or str(v).upper() == "MAXVALUE" for v in p.upper) \
            else tuple(map(str, p.upper))
        return PartitionSpec(name, "FIXED", lower=tuple(map(str, p.lower)), upper=upper)
    # IN; NULL: the partition of NULL values (AUTO LIST's `pX`)
    return PartitionSpec(name, "IN", values=tuple(
        tuple(None if x is None else str(x) for x in v) for v in p.values))


def _analyze_partitioning(ast: PartitionClause | None, columns: Sequence[ColumnMeta],
                          keys_type: KeysType) -> tuple[PartitionInfo, tuple[PartitionSpec, ...]]:
    if ast is None:
        return PartitionInfo(PartitionType.UNPARTITIONED), ()
    by_name = {c.name.lower(): c for c in columns}
    ptype = PartitionType(ast.type.upper())
    if getattr(ast, "auto", False):
        check_auto_partition(ast, by_name)
    names = []
    for c in ast.columns:
        col = by_name.get(c.lower())
        if col is None:
            raise DorisError(f"partition key {c} is not exists")
        if keys_type is not KeysType.DUP_KEYS and not col.is_key:
            raise DorisError("The partition column could not be aggregated column")
        if col.type.is_float:
            raise DorisError("Floating point type column can not be partition column")
        if col.type.is_nested or col.type.kind in (TypeKind.STRING, TypeKind.HLL,
                                                   TypeKind.BITMAP):
            raise DorisError(
                f"Column[{col.name}] type[{col.type.sql()}] cannot be a range partition key.")
        if ptype is PartitionType.RANGE and col.type.is_string:
            raise DorisError(
                f"Column[{col.name}] type[{col.type.sql()}] cannot be a range partition key.")
        names.append(col.name)
    if len({n.lower() for n in names}) != len(names):
        raise DorisError("Duplicated partition column " + ", ".join(names))
    specs = tuple(partition_spec(p) for p in ast.partitions)
    seen: set[str] = set()
    for s in specs:
        if s.name.lower() in seen:
            raise DorisError(f"Duplicated named partition: {s.name}")
        seen.add(s.name.lower())
    if getattr(ast, "auto", False):
        unit = ast.trunc_unit if ptype is PartitionType.RANGE else None
        return PartitionInfo(ptype, tuple(names), auto=True, auto_unit=unit), specs
    return PartitionInfo(ptype, tuple(names)), specs


# date_trunc units an AUTO RANGE partition accepts (Doris PartitionExprUtil.getRangeEnd)
AUTO_RANGE_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")
_AUTO_LIST_KINDS = {TypeKind.BOOLEAN, TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT,
                    TypeKind.BIGINT, TypeKind.LARGEINT, TypeKind.DATE, TypeKind.DATETIME,
                    TypeKind.CHAR, TypeKind.VARCHAR}


def check_auto_partition(ast: PartitionClause, by_name: dict[str, ColumnMeta]) -> None:
    """Doris PartitionDesc's AUTO PARTITION checks: RANGE takes exactly date_trunc(col, unit)
    over one NOT NULL DATE/DATETIME column; LIST takes plain columns only."""
    funcs = tuple(ast.func) or (None,) * len(ast.columns)
    if ast.type.upper() == "LIST":
        for col, func in zip(ast.columns, funcs):
            if func is not None:
                raise DorisError(
                    f"auto create partition only support slotRef in list partitions. {col}")
        for col_name in ast.columns:
            list_col = by_name.get(col_name.lower())
            if list_col is not None and list_col.type.is_float:
                raise DorisError("Floating point type column can not be partition column")
            if list_col is not None and list_col.type.kind not in _AUTO_LIST_KINDS:
                raise DorisError(f"Column[{list_col.name}] type[{list_col.type.sql()}] cannot "
                                 "be a auto list partition key.")
        return
    if len(ast.columns) != 1:
        raise DorisError("auto create partition only support one slotRef in function expr. "
                         + ", ".join(ast.columns))
    func = funcs[0]
    if func is None:
        raise DorisError("auto create partition only support date_trunc function of RANGE "
                         "partition. " + ast.columns[0])
    if func != "date_trunc":
        raise DorisError("auto create partition only support function call expr is "
                         f"date_trunc/date_floor/date_ceil. {ast.columns[0]}")
    if ast.trunc_unit is None:  # date_trunc with other than two arguments (a plain call)
        _check_date_trunc_arity(ast.columns[0])
    range_col = by_name.get(ast.columns[0].lower())
    if range_col is None:
        raise DorisError(f"partition key {ast.columns[0]} is not exists")
    if range_col.type.kind not in (TypeKind.DATE, TypeKind.DATETIME):
        raise DorisError("partition expr date_trunc is illegal!")
    if ast.trunc_unit not in AUTO_RANGE_UNITS:  # Doris' date_trunc analysis (FunctionCallExpr)
        raise DorisError("date_trunc function second param only support argument is "
                         "year|quarter|month|week|day|hour|minute|second")
    if range_col.type.kind is TypeKind.DATE and ast.trunc_unit in ("hour", "minute", "second"):
        raise DorisError("partition expr date_trunc is illegal!")
    if range_col.nullable:
        raise DorisError("AUTO RANGE PARTITION doesn't support NULL column")


def _check_date_trunc_arity(call_sql: str) -> None:
    """Doris for `date_trunc(a, b, 'unit')`: two columns -> one slotRef only; any other
    argument count has no date_trunc signature -> the expression is illegal."""
    from sqlglot import exp

    from sql.parser.dialect import (
        parse_one,  # here: sql.parser.dialect is heavy and needed only here
    )

    call = parse_one("SELECT " + call_sql).expressions[0]
    args = list(call.expressions) if isinstance(call, exp.Anonymous) else []
    columns = [a.sql() for a in args if isinstance(a, exp.Column)]
    if len(columns) > 1:
        raise DorisError("auto create partition only support one slotRef in function expr. "
                         + ", ".join(columns))
    raise DorisError("partition expr date_trunc is illegal!")


def _analyze_rollups(rollups: Sequence[RollupClause], table: str, columns: Sequence[ColumnMeta],
                     keys_type: KeysType) -> tuple[RollupSpec, ...]:
    by_name = {c.name.lower(): c for c in columns}
    out = []
    seen = {table.lower()}
    for r in rollups:
        if r.name.lower() in seen:
            raise DorisError(
                f"Rollup name [{r.name}] is duplicated with base table or another rollup")
        seen.add(r.name.lower())
        cols = []
        for cname in r.columns:
            col = by_name.get(cname.lower())
            if col is None:
                raise DorisError(f"Column[{cname}] does not exist in base table")
            cols.append(col)
        if len({c.name for c in cols}) != len(cols):
            raise DorisError(f"Duplicate column in rollup [{r.name}]")
        if keys_type is not KeysType.DUP_KEYS:
            if not cols[0].is_key:
                raise DorisError("No key column is found")
            saw_value = False
            for c in cols:
                if c.is_key and saw_value:
                    raise DorisError("Key column must before value column")
                saw_value = saw_value or not c.is_key
            if keys_type is KeysType.UNIQUE_KEYS and any(
                k.name not in {c.name for c in cols} for k in columns if k.is_key
            ):
                raise DorisError("Rollup should contains all unique keys in basetable")
            if any(c.agg_type is AggType.REPLACE for c in cols) and any(
                k.name not in {c.name for c in cols} for k in columns if k.is_key
            ):
                raise DorisError("Rollup should contains all keys if there is a REPLACE value")
        dup = tuple(r.duplicate_key) if r.duplicate_key else None
        if dup is not None:
            if keys_type is not KeysType.DUP_KEYS:
                raise DorisError("Only duplicate table can specify duplicate key in rollup")
            for i, k in enumerate(dup):
                if i >= len(cols) or cols[i].name.lower() != k.lower():
                    raise DorisError(
                        "The order of duplicate keys must be the same as the order of columns")
        props = tuple((str(k), str(v)) for k, v in r.properties)
        out.append(RollupSpec(r.name, tuple(c.name for c in cols), dup, props))
    return tuple(out)


def _analyze_indexes(indexes: Sequence[IndexClause], columns: Sequence[ColumnMeta],
                     keys_type: KeysType) -> tuple[IndexDef, ...]:
    by_name = {c.name.lower(): c for c in columns}
    out = []
    for idx in indexes:
        itype = check_index_definition(idx)
        for cname in idx.columns:
            col = by_name.get(cname.lower())
            if col is None:
                raise DorisError(f"Column does not exist in table. invalid column: {cname}")
            check_index_column(itype, idx.name, col, keys_type)
        resolved = tuple(by_name[c.lower()].name for c in idx.columns)
        out.append(IndexDef(idx.name, resolved, itype, idx.comment or ""))
    if len({i.name.lower() for i in out}) != len(out):
        raise DorisError("index name must be unique.")
    if len({(i.index_type, tuple(c.lower() for c in i.columns)) for i in out}) != len(out):
        raise DorisError("same index columns have multiple same type index is not allowed.")
    return tuple(out)


def check_index_column(itype: str, name: str, col: ColumnMeta, keys_type: KeysType) -> None:
    """Doris `IndexDef.checkColumn`: the column's type first, then the AGG_KEYS value rule."""
    if col.type.is_float or col.type.is_nested or col.type.kind in (TypeKind.HLL,
                                                                    TypeKind.BITMAP):
        raise DorisError(
            f"{col.type.kind.value} is not supported in {itype} index. invalid column: {col.name}")
    if keys_type is KeysType.AGG_KEYS and not col.is_key:
        raise DorisError(
            f"{itype} index only used in columns of DUP_KEYS/UNIQUE_KEYS table or key columns "
            f"of AGG_KEYS table. invalid column: {col.name}"
        )


def check_index_definition(idx: IndexClause) -> str:
    """The index type of an index definition (`IndexClause`), after the checks that need no
    table: Doris `IndexDef.analyze`, and what ShaleDB serves (BITMAP, and INVERTED without
    parser properties, both by the bitmap index)."""
    itype = (idx.index_type or "BITMAP").upper()
    if itype not in ("BITMAP", "INVERTED"):
        raise DorisError(f"{itype} index is not supported; supported: USING BITMAP, and "
                         "USING INVERTED without PROPERTIES (both served by the bitmap index)")
    if len(idx.columns) != 1:
        raise DorisError(f"{itype} index can only apply to a single column.")
    if len(idx.name) > 64:
        raise DorisError("index name too long, the index name length at most is 64.")
    props = getattr(idx, "properties", ()) or ()
    if props:
        raise DorisError(
            f"INVERTED index properties are not supported: {', '.join(k for k, _ in props)}; "
            "supported: USING INVERTED without PROPERTIES (exact-match lookups, served by the "
            "bitmap index)")
    return itype


def analyze_create_table(ast: CreateTableSpec, backends: int) -> TableDefinition:
    """Validate a CREATE TABLE (dialect view) and return its definition."""
    engine = (ast.engine or "OLAP").upper()
    if engine != "OLAP":
        raise DorisError(f"Do not support table with engine name = {ast.engine}")
    if not ast.columns:
        raise DorisError("Table must have at least 1 column")
    keys = list(ast.key_columns or [])
    if ast.keys_type:
        keys_type = _KEYS_TYPES[ast.keys_type.upper()]
        if not keys:
            raise DorisError("The number of key columns is 0.")
    else:
        keys_type, keys = _default_keys(ast.columns)
    columns = _analyze_columns(ast.columns, keys_type, keys)
    props = dict(ast.properties or [])
    P.validate_known(props)
    if "enable_unique_key_merge_on_write" in props and keys_type is not KeysType.UNIQUE_KEYS:
        raise DorisError("enable_unique_key_merge_on_write property only support unique key table")
    partition_info, partitions = _analyze_partitioning(ast.partition, columns, keys_type)
    distribution = _analyze_distribution(ast.distribution, columns, keys_type)
    P.replication_num(props, backends)
    P.validate_bloom_filter(props, columns, keys_type)
    P.validate_dynamic_partition(props, partition_info, columns, distribution.buckets,
                                 bool(props.get("colocate_with", "").strip()))
    rollups = _analyze_rollups(ast.rollups or [], ast.name, columns, keys_type)
    indexes = _analyze_indexes(ast.indexes or [], columns, keys_type)
    return TableDefinition(
        db=ast.db, name=ast.name, if_not_exists=bool(ast.if_not_exists), keys_type=keys_type,
        columns=tuple(columns), key_columns=tuple(c.name for c in columns if c.is_key),
        partition_info=partition_info, partitions=partitions, distribution=distribution,
        rollups=rollups, indexes=indexes,
        properties=tuple((str(k), str(v)) for k, v in props.items()),
        comment=ast.comment or "",
    )


def rollup_key_columns(columns: Sequence[ColumnMeta], spec: RollupSpec, keys_type: KeysType
                       ) -> list[ColumnMeta]:
    """Columns of a rollup with `is_key` set as the rollup sees them."""
    by_name = {c.name: c for c in columns}
    cols = [by_name[n] for n in spec.columns]
    if keys_type is not KeysType.DUP_KEYS:
        return cols
    if spec.duplicate_key:
        nkeys = len(spec.duplicate_key)
    else:
        nkeys = 0
        size = 0
        for c in cols:
            if nkeys >= SHORTKEY_MAX_COLUMNS or c.type.is_float or c.type.kind is TypeKind.STRING:
                break
            size += index_size(c.type)
            if size > SHORTKEY_MAX_BYTES:
                break
            nkeys += 1
            if c.type.kind is TypeKind.VARCHAR:
                break
        nkeys = max(nkeys, 1)
    return [replace(c, is_key=i < nkeys) for i, c in enumerate(cols)]
