"""INSERT INTO ... VALUES / SELECT: evaluate rows, check them against the table, load them.

Rows are converted to the table's column types with Doris' strict-mode rules (a value that does
not fit fails the whole statement), columns missing from the column list take their DEFAULT or
NULL, and the complete rows go through one `LoadTxn`, so the statement is all-or-nothing.
Returns what the OK packet reports: row count, label, transaction id. With Doris'
`group_commit` on, VALUES rows join the table's group commit (storage/group_commit.py) and the
caller awaits a `PendingInsert`. The INSERT VALUES fast path builds its Batch in
executor/insert_fast.py and loads it with `insert_batch`.
Upstream: Doris `InsertIntoTableCommand`, `OlapTableSink`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from sqlglot import expressions as exp

from sql.errors import DorisError, ErrorCode, unknown_database
from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta, DatabaseMeta, PartitionType, TableMeta
from storage.engine import StorageEngine
from storage.group_commit import GroupCommitOptions, LoadResult, committer_for
from storage.txn import LoadTxn
from storage.types import BLOB_KINDS, DataType, TypeError_, TypeKind

INSERT_BATCH_ROWS = 65536


@dataclass(frozen=True, slots=True)
class InsertOutcome:
    rows: int
    label: str
    txn_id: int


@dataclass(frozen=True, slots=True)
class PendingInsert:
    """Rows handed to a group commit: `future` resolves to a `LoadResult` (rows, label,
    txn_id) once the shared load is published, or raises this statement's error."""

    future: Future[LoadResult]


def target_columns(table: TableMeta, names: Sequence[str] | None) -> list[ColumnMeta]:
    if not names:
        return list(table.columns)
    out = []
    seen: set[str] = set()
    for n in names:
        if not table.has_column(n):
            raise DorisError(f"Unknown column '{n}' in '{table.name}'", ErrorCode.BAD_FIELD_ERROR)
        if n.lower() in seen:
            raise DorisError(f"Column '{n}' specified twice", ErrorCode.UNKNOWN_ERROR)
        seen.add(n.lower())
        out.append(table.column(n))
    return out


def convert_value(col: ColumnMeta, value: object, source: DataType | None, row: int) -> object:
    """A Python/physical value of `source` type -> physical value of the column's type."""
    if value is None:
        if not col.nullable:
            raise DorisError(
                f"Insert has filtered data in strict mode. Reason: null value for not null column, "
                f"column={col.name}, row={row}"
            )
        return None
    if source is not None:
        check_object_type(col, source)
    py = source.to_python(value) if source is not None else value
    try:
        return col.type.to_physical(py)
    except TypeError_ as e:
        raise DorisError(
            f"Insert has filtered data in strict mode. Reason: column `{col.name}` "
            f"({col.type.sql()}), row {row}: {e}"
        ) from None


_OBJECT_SOURCES = {
    TypeKind.BITMAP: "to_bitmap, bitmap_hash, bitmap_from_string, bitmap_empty or bitmap_union",
    TypeKind.HLL: "hll_hash, hll_empty or hll_union",
}


def check_object_type(col: ColumnMeta, source: DataType) -> None:
    """BITMAP/HLL cells only come from values of the same type (Doris never casts into or out
    of them): a plain number for a BITMAP column is an error, not a silently stored blob."""
    kind = col.type.kind
    if kind in BLOB_KINDS and source.kind is not kind:
        raise DorisError(
            f"Column's type is {kind.value}, the value must be a {kind.value} column or the "
            f"result of {_OBJECT_SOURCES[kind]}, column={col.name}, value type="
            f"{source.sql().upper()}"
        )
    if source.kind in BLOB_KINDS and source.kind is not kind:
        raise DorisError(
            f"can not cast from origin type {source.sql().upper()} to target type="
            f"{col.type.sql().upper()}, column={col.name}"
        )


def default_value(col: ColumnMeta, now: _dt.datetime) -> object:
    if col.has_default and col.default is not None:
        if col.default == "CURRENT_TIMESTAMP":
            return col.type.to_physical(now)
        return col.type.to_physical(col.default)
    if col.nullable:
        return None
    raise DorisError(f"Column has no default value, column={col.name}")


class RowBuilder:
    """Accumulates converted rows into full-schema Batches."""

    def __init__(self, table: TableMeta, targets: Sequence[ColumnMeta]) -> None:
        self.table = table
        self.targets = list(targets)
        positions = {c.name.lower(): i for i, c in enumerate(self.targets)}
        self._position = [positions.get(c.name.lower()) for c in table.columns]
        now = _dt.datetime.now()
        self._defaults = [
            default_value(c, now) if p is None else None for c, p in zip(table.columns, self._position)
        ]
        self._rows: list[list[object]] = []

    def add(self, values: Sequence[object]) -> None:
        self._rows.append([
            self._defaults[i] if p is None else values[p] for i, p in enumerate(self._position)
        ])

    def __len__(self) -> int:
        return len(self._rows)

    def flush(self) -> Batch:
        cols = []
        for i, c in enumerate(self.table.columns):
            cols.append(Column.from_physical(c.type, [r[i] for r in self._rows]))
        self._rows = []
        return Batch(self.table.column_names, tuple(cols))


def _check_loadable(engine: StorageEngine, db_name: str, table: TableMeta) -> DatabaseMeta:
    db = engine.catalog.get_database(db_name)
    if db is None:
        raise unknown_database(db_name)
    if table.partition_info.type is not PartitionType.UNPARTITIONED and not engine.catalog.partitions(table.table_id):
        raise DorisError(
            "data cannot be inserted into table with empty partition. Use `SHOW PARTITIONS FROM "
            f"{table.name}` to see the currently partitions of this table. "
        )
    return db


def begin(engine: StorageEngine, db_name: str, table: TableMeta, label: str | None,
          partitions: Sequence[str] | None) -> LoadTxn:
    db = _check_loadable(engine, db_name, table)
    return LoadTxn(engine, db, table, label=label, partitions=partitions)


def _load(
    engine: StorageEngine, db_name: str, table: TableMeta, targets: Sequence[ColumnMeta],
    rows: Iterator[list[object]], label: str | None, partitions: Sequence[str] | None,
    group_commit: GroupCommitOptions | None = None,
) -> InsertOutcome | PendingInsert:
    """Feed converted rows (target-column order) through one LoadTxn and publish it (or hand
    them to the table's group commit)."""
    if group_commit is not None and label is None and not partitions:
        builder = RowBuilder(table, targets)
        batches = []
        for row in rows:
            builder.add(row)
            if len(builder) >= INSERT_BATCH_ROWS:
                batches.append(builder.flush())
        if len(builder):
            batches.append(builder.flush())
        return _group_load(engine, db_name, table, batches, group_commit)
    txn = begin(engine, db_name, table, label, partitions)
    builder = RowBuilder(table, targets)
    try:
        for row in rows:
            builder.add(row)
            if len(builder) >= INSERT_BATCH_ROWS:
                txn.add_batch(builder.flush())
        if len(builder):
            txn.add_batch(builder.flush())
    except BaseException:
        # A bad value or a failed SELECT: the segments the load flushed so far go now.
        txn.abort()
        raise
    meta = txn.commit()
    return InsertOutcome(txn.num_rows, txn.label, meta.txn_id)


def _is_default(expr: exp.Expression) -> bool:
    return (isinstance(expr, exp.Var) and expr.name.upper() == "DEFAULT") or isinstance(
        expr, exp.DefaultColumnConstraint
    )


def insert_values(
    engine: StorageEngine, db_name: str, table: TableMeta, column_names: Sequence[str] | None,
    rows: Sequence[Sequence[exp.Expression]],
    evaluate: Callable[[exp.Expression, DataType], tuple[object, DataType]],
    label: str | None = None, partitions: Sequence[str] | None = None,
    group_commit: GroupCommitOptions | None = None,
) -> InsertOutcome | PendingInsert:
    """`evaluate(expr, target_type)` returns (physical value, its type) of a constant expression.
    With `group_commit` (and no label / PARTITION clause) the rows join the table's group."""
    targets = target_columns(table, column_names)
    now = _dt.datetime.now()

    def converted() -> Iterator[list[object]]:
        for r, row in enumerate(rows, start=1):
            if len(row) != len(targets):
                raise DorisError("Column count doesn't match value count", ErrorCode.UNKNOWN_ERROR)
            values = []
            for col, expr in zip(targets, row):
                if _is_default(expr):
                    values.append(default_value(col, now))
                    continue
                value, vtype = evaluate(expr, col.type)
                source = None if vtype.kind is TypeKind.NULL else vtype
                values.append(convert_value(col, value, source, r))
            yield values

    return _load(engine, db_name, table, targets, converted(), label, partitions, group_commit)


def insert_batches(
    engine: StorageEngine, db_name: str, table: TableMeta, column_names: Sequence[str] | None,
    batches: Iterator[Batch], label: str | None = None, partitions: Sequence[str] | None = None,
) -> InsertOutcome:
    """INSERT ... SELECT: `batches` are the query's result in target-column order."""
    targets = target_columns(table, column_names)

    def converted() -> Iterator[list[object]]:
        row_no = 0
        for batch in batches:
            if len(batch.columns) != len(targets):
                raise DorisError("Column count doesn't match value count", ErrorCode.UNKNOWN_ERROR)
            cols = [c.to_pylist() for c in batch.columns]
            types = [c.type for c in batch.columns]
            for i in range(batch.num_rows):
                row_no += 1
                yield [convert_value(t, cols[j][i], types[j], row_no) for j, t in enumerate(targets)]

    return _load(engine, db_name, table, targets, converted(), label, partitions)


def insert_batch(engine: StorageEngine, db_name: str, table: TableMeta, batch: Batch,
                 group_commit: GroupCommitOptions | None = None) -> InsertOutcome | PendingInsert:
    """Load one ready Batch (the fast path's) in its own transaction or a group commit."""
    if group_commit is not None:
        return _group_load(engine, db_name, table, [batch], group_commit)
    txn = begin(engine, db_name, table, None, None)
    txn.add_batch(batch)
    meta = txn.commit()
    return InsertOutcome(txn.num_rows, txn.label, meta.txn_id)


def _group_load(engine: StorageEngine, db_name: str, table: TableMeta, batches: Sequence[Batch],
                options: GroupCommitOptions) -> PendingInsert:
    """Join the table's group commit (storage/group_commit.py); the caller awaits the publish."""
    # checked before joining: an error here is this statement's alone
    db = _check_loadable(engine, db_name, table)
    batch = Batch.concat(list(batches)) if len(batches) > 1 else batches[0]

    def load(members: Sequence[Batch]) -> tuple[str, int]:
        txn = LoadTxn(engine, db, table, label_prefix="group_commit")
        for b in members:
            txn.add_batch(b)
        return txn.label, txn.commit().txn_id

    return PendingInsert(committer_for(engine).submit(table.table_id, batch, options, load))
