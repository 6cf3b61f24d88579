"""DELETE FROM t [PARTITION p | PARTITIONS (..)] WHERE ...: analysis with Doris' restrictions.

Doris stores a DELETE as a delete predicate on a new version (DORIS_REFERENCE.md b.4), so the
WHERE clause must be a conjunction of `column op constant` conditions with op among
=, !=, <, <=, >, >=, IN, NOT IN, IS [NOT] NULL. AGGREGATE and UNIQUE tables accept key columns
only (a value condition would have to be evaluated after the merge); FLOAT/DOUBLE columns are
never allowed. A partitioned table needs PARTITION, a condition on the partition column from
which the partitions are inferred, or `SET delete_without_partition = true`.
Upstream: Doris `DeleteStmt` / `DeleteHandler` checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import expressions as exp

from sql.errors import DorisError, ErrorCode, table_not_found
from sql.options import QueryOptions
from sql.parser.dialect_nodes import TEMPORARY_PARTITION_META
from storage.catalog.catalog import Catalog
from storage.catalog.meta import (
    DeleteCondition,
    KeysType,
    PartitionMeta,
    PartitionType,
    TableMeta,
)
from storage.catalog.mv import key_for_base_column
from storage.partition import bound_key, key_of
from storage.types import DataType, TypeError_

_BINARY: dict[type[exp.Expr], str] = {
    exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_TEXT_OP = {"=": "EQ", "!=": "NE", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}


@dataclass(frozen=True, slots=True)
class DeletePlan:
    table: TableMeta
    partitions: tuple[PartitionMeta, ...]
    conditions: tuple[DeleteCondition, ...]
    text: str  # SHOW DELETE's DeleteCondition column: `k1 EQ "1" AND k2 IN ("a", "b")`


def _unsupported(node: exp.Expr) -> DorisError:
    return DorisError(
        "Where clause only supports compound predicate, binary predicate, is_null predicate or in "
        f"predicate, joined by AND: {node.sql()}"
    )


def _literal(node: exp.Expr) -> str:
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return "-" + node.this.name
    if isinstance(node, exp.Literal):
        return node.name
    if isinstance(node, exp.Boolean):
        return "1" if node.this else "0"
    raise DorisError(f"Right expr of binary predicate should be value: {node.sql()}")


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def _parse_condition(node: exp.Expr) -> tuple[str, str, list[str]]:
    """(column, op, literal texts) of one conjunct."""
    negate = isinstance(node, exp.Not)
    inner = node.this if negate else node
    if isinstance(inner, exp.Paren):
        inner = inner.this
    if (isinstance(inner, exp.Is) and isinstance(inner.this, exp.Column)
            and isinstance(inner.expression, exp.Null)):
        return inner.this.name, "is_not_null" if negate else "is_null", []
    if (isinstance(inner, exp.In) and isinstance(inner.this, exp.Column)
            and not inner.args.get("query")):
        values = [_literal(e) for e in inner.expressions]
        return inner.this.name, "not_in" if negate else "in", values
    if not negate and isinstance(inner, exp.Binary) and type(inner) in _BINARY:
        op = _BINARY[type(inner)]
        left, right = inner.left, inner.right
        if isinstance(left, exp.Column):
            return left.name, op, [_literal(right)]
        if isinstance(right, exp.Column):
            return right.name, _FLIPPED[op], [_literal(left)]
    raise _unsupported(node)


def _check_column(table: TableMeta, name: str) -> DataType:
    if not table.has_column(name):
        raise DorisError(f"Unknown column '{name}' in '{table.name}'", ErrorCode.BAD_FIELD_ERROR)
    col = table.column(name)
    if col.type.is_float:
        raise DorisError(
            f"Column[{col.name}] is not key column or storage model is not duplicate or column "
            "type is float or double."
        )
    if not col.is_key and table.keys_type is KeysType.AGG_KEYS:
        raise DorisError(
            "delete predicate on value column only supports Unique table with merge-on-write "
            f"enabled and Duplicate table, but Table[{table.name}] is an Aggregate table."
        )
    if not col.is_key and table.keys_type is KeysType.UNIQUE_KEYS:
        raise DorisError(
            f"delete predicate on value column of Unique table[{table.name}] is not supported yet: "
            "use conditions on the key columns"
        )
    return col.type


def _physical(t: DataType, text: str, column: str) -> object:
    try:
        return t.to_physical(text)
    except TypeError_ as e:
        raise DorisError(f"Invalid column value [{text}] for column {column}: {e}") from None


def _quote(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"'


def _may_match(table: TableMeta, part: PartitionMeta, conds: list[DeleteCondition]) -> bool:
    """Can a row of this partition satisfy the conditions on the partition column? (pruning)"""
    info = table.partition_info
    if len(info.columns) != 1:
        return True
    col = info.columns[0].lower()
    types = [table.column(info.columns[0]).type]
    relevant = [c for c in conds if c.column.lower() == col]
    for c in relevant:
        if info.type is PartitionType.LIST:
            values = {v[0] for v in part.list_values}
            phys = {types[0].to_physical(v) for v in values}
            if c.op == "=" and c.values[0] not in phys:
                return False
            if c.op == "in" and not phys.intersection(c.values):
                return False
            continue
        lo, hi = bound_key(types, part.lower), bound_key(types, part.upper)
        key = key_of(c.values[:1]) if c.values else None
        if c.op == "=" and key is not None:
            if (lo is not None and key < lo) or (hi is not None and not key < hi):
                return False
        elif c.op in ("<", "<=") and key is not None and lo is not None:
            if key < lo or (c.op == "<" and key == lo):
                return False
        elif c.op in (">", ">=") and key is not None and hi is not None and not key < hi:
            return False
    return True


def analyze_delete(
    stmt: exp.Delete, catalog: Catalog, db: str, options: QueryOptions,
) -> DeletePlan:
    target = stmt.this
    table = catalog.get_table(db, target.name)
    if table is None:
        raise table_not_found(db, target.name)
    where = stmt.args.get("where")
    if where is None:
        raise DorisError(
            "Where clause is required in DELETE statement, use TRUNCATE TABLE to delete all rows")
    limit = options.max_allowed_in_element_num_of_delete
    conditions: list[DeleteCondition] = []
    texts: list[str] = []
    for node in _conjuncts(where.this):
        name, op, literals = _parse_condition(node)
        ctype = _check_column(table, name)
        column = table.column(name).name
        if op in ("in", "not_in") and len(literals) > limit:
            raise DorisError(f"Element num of in predicate should not be more than {limit}")
        values = tuple(_physical(ctype, v, column) for v in literals)
        conditions.append(DeleteCondition(column, op, values))
        if op in ("is_null", "is_not_null"):
            texts.append(f"{column} {'IS NULL' if op == 'is_null' else 'IS NOT NULL'}")
        elif op in ("in", "not_in"):
            shown = ", ".join(_quote(v) for v in literals)
            texts.append(f"{column} {'IN' if op == 'in' else 'NOT IN'} ({shown})")
        else:
            texts.append(f"{column} {_TEXT_OP[op]} {_quote(literals[0])}")
    for index in catalog.materialized_indexes(table.table_id):
        for cond in conditions:
            # a materialized view must hold the column as a plain key (storage/catalog/mv.py)
            if key_for_base_column(index, cond.column) is None:
                raise DorisError(
                    f"Column [{cond.column}] of the delete condition does not exist in rollup "
                    f"[{index.name}]; a delete must name columns every index has"
                )
    partitions = _choose_partitions(stmt, catalog, table, conditions,
                                    options.delete_without_partition)
    return DeletePlan(table, tuple(partitions), tuple(conditions), " AND ".join(texts))


def _choose_partitions(
    stmt: exp.Delete, catalog: Catalog, table: TableMeta, conditions: list[DeleteCondition],
    delete_without_partition: bool,
) -> list[PartitionMeta]:
    parts = catalog.partitions(table.table_id)
    part_node = stmt.this.args.get("partition")
    if part_node is not None:
        if table.partition_info.type is PartitionType.UNPARTITIONED:
            raise DorisError(
                f"Table[{table.name}] is not a partitioned table, can not specify partition")
        # `TEMPORARY PARTITION (tp, ..)`: Doris' DeleteFromCommand (isTempPart) picks among the
        # table's temporary partitions only
        temporary = bool(part_node.meta.get(TEMPORARY_PARTITION_META))
        by_name = {p.name.lower(): p
                   for p in (catalog.partitions(table.table_id, temporary=True) if temporary
                             else parts)}
        chosen = []
        for e in part_node.expressions:
            p = by_name.get(e.name.lower())
            if p is None:
                raise DorisError(f"Partition [{e.name}] does not exist in table [{table.name}]")
            chosen.append(p)
        return chosen
    if table.partition_info.type is PartitionType.UNPARTITIONED:
        return parts
    on_partition_column = any(
        c.column.lower() in {p.lower() for p in table.partition_info.columns} for c in conditions
    )
    if on_partition_column:
        return [p for p in parts if _may_match(table, p, conditions)]
    if delete_without_partition:
        return parts
    raise DorisError(
        "This is a range or list partitioned table. You should specify partition in delete stmt, "
        "or set delete_without_partition to true"
    )
