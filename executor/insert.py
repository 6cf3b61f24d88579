"""INSERT INTO ... VALUES / SELECT: evaluate rows, check them against the table, load them.

Rows are converted to the table's column types, columns missing from the column list take their
DEFAULT or NULL, and the complete rows go through one `LoadTxn`, so the statement is
all-or-nothing. Bad rows follow Doris' session variables (`Tolerance`): with
`enable_insert_strict` (the default) a value that does not convert, a NULL for a NOT NULL
column, a string too long or a row no partition takes fails the statement, naming the first bad
rows; with it off a value that does not convert becomes NULL and the other bad rows are
filtered, and the statement succeeds while filtered/total <= `insert_max_filter_ratio`.
Returns what the OK packet reports: row count, filtered rows, label, transaction id. With Doris'
`group_commit` on, VALUES rows join the table's group commit (storage/group_commit.py) and the
caller awaits a `PendingInsert`. The INSERT VALUES fast path builds its Batch in
executor/insert_fast.py and loads it with `insert_batch`.
Upstream: Doris `InsertIntoTableCommand`, `OlapTableSink`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
from sqlglot import expressions as exp

from sql.errors import DorisError, ErrorCode, unknown_database
from storage import clock
from storage.auto_partition import auto_placeable
from storage.batch import Batch, Column
from storage.catalog.meta import (
    ColumnMeta,
    DatabaseMeta,
    PartitionType,
    TableMeta,
    TemporaryPartitionNames,
)
from storage.engine import StorageEngine
from storage.group_commit import GroupCommitOptions, LoadResult
from storage.partition import PartitionRouter
from storage.txn import LoadTxn
from storage.types import BLOB_KINDS, DataType, TypeError_, TypeKind

INSERT_BATCH_ROWS = 65536
# Strict mode stops after this many bad rows: enough to name them, without reading the rest.
STRICT_ERRORS_SHOWN = 5
ERROR_LOG_ROWS = 10_000


@dataclass(frozen=True, slots=True)
class InsertOutcome:
    rows: int
    label: str
    txn_id: int
    filtered: int = 0


class RowRejected(Exception):
    """One row that cannot be loaded (Doris filters it), with the reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Tolerance:
    """Doris' `enable_insert_strict` and `insert_max_filter_ratio` for one INSERT, with the
    counts they are judged on (Doris `AbstractInsertExecutor.checkStrictModeAndFilterRatio`)."""

    strict: bool = True
    max_filter_ratio: float = 1.0
    total: int = 0
    filtered: int = 0
    # the reasons of the filtered rows (the error log keeps up to ERROR_LOG_ROWS of them)
    reasons: list[str] = field(default_factory=list)
    # writes the reasons to an error log and returns its URL (Doris' tracking_url); the
    # server sets it (server/session.py), None: the error names the first rows only
    error_log: Callable[[list[str]], str] | None = None

    def reject(self, reason: str) -> None:
        self.filtered += 1
        if len(self.reasons) < ERROR_LOG_ROWS:
            self.reasons.append(reason)
        if self.strict and self.filtered >= STRICT_ERRORS_SHOWN:
            self.check()  # enough to report: the statement fails either way

    def _details(self) -> str:
        url = self.error_log(self.reasons) if self.error_log is not None else ""
        first = "; ".join(self.reasons[:STRICT_ERRORS_SHOWN])
        return (f", tracking_url={url}" if url else "") + f". first_error_msg: {first}"

    def check(self) -> None:
        """Raise Doris' error when the filtered rows fail the statement."""
        if not self.filtered:
            return
        if self.strict:
            raise DorisError(f"Insert has filtered data in strict mode{self._details()}")
        if self.filtered > self.max_filter_ratio * self.total:
            raise DorisError(
                f"Insert has too many filtered data {self.filtered}/{self.total} "
                f"insert_max_filter_ratio is {self.max_filter_ratio:f}{self._details()}")


@dataclass(frozen=True, slots=True)
class PendingInsert:
    """Rows handed to a group commit: `future` resolves to a `LoadResult` (rows, label,
    txn_id) once the shared load is published, or raises this statement's error."""

    future: Future[LoadResult]
    filtered: int = 0  # rows this statement's tolerance filtered before joining


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


def convert_value(col: ColumnMeta, value: object, source: DataType | None, row: int,
                  strict: bool = True) -> object:
    """A Python/physical value of `source` type -> physical value of the column's type. A value
    that does not convert raises RowRejected in strict mode and is NULL otherwise (Doris' cast);
    a NULL for a NOT NULL column and a string longer than the column are always rejected."""
    if value is None:
        if not col.nullable:
            raise RowRejected(
                f"Reason: null value for not null column, column={col.name}, row={row}")
        return None
    if source is not None:
        check_object_type(col, source)
    py = source.to_python(value) if source is not None else value
    try:
        return col.type.to_physical(py)
    except TypeError_ as e:
        if strict or "too long" in str(e) or not col.nullable:
            raise RowRejected(
                f"Reason: column `{col.name}` ({col.type.sql()}), row {row}: {e}") from None
        return None


_OBJECT_SOURCES = {
    TypeKind.BITMAP: "to_bitmap, bitmap_hash, bitmap_from_string, bitmap_empty or bitmap_union",
    TypeKind.HLL: "hll_hash, hll_empty or hll_union",
}


def check_object_type(col: ColumnMeta, source: DataType) -> None:
    """BITMAP/HLL cells only come from values of the same type (Doris never casts into or out
    of them): a plain number for a BITMAP column is an error, not a silently stored blob."""
    kind = col.type.kind
    if col.type.is_nested or source.is_nested:
        # nested cells come from a value of the same nested kind or from Doris' text form
        by_name = kind is TypeKind.STRUCT and source.kind is TypeKind.MAP  # {'f1': 1, ..}
        if source.kind is not kind and not (col.type.is_nested and source.is_string) \
                and not by_name:
            raise DorisError(
                f"can not cast from origin type {source.sql().upper()} to target type="
                f"{col.type.sql().upper()}, column={col.name}"
            )
        return
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
        now = clock.now()
        self._defaults = [
            default_value(c, now) if p is None else None
            for c, p in zip(table.columns, self._position)
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
    if table.partition_info.type is not PartitionType.UNPARTITIONED \
            and not table.partition_info.auto and not engine.catalog.partitions(table.table_id):
        raise DorisError(
            "data cannot be inserted into table with empty partition. Use `SHOW PARTITIONS FROM "
            f"{table.name}` to see the currently partitions of this table. "
        )
    return db


def check_insert_partitions(engine: StorageEngine, table: TableMeta, names: Sequence[str]) -> None:
    """`INSERT INTO t [TEMPORARY] PARTITION (p1, ..)`: every name is a (temporary) partition of
    t (Doris' BindSink)."""
    temporary = isinstance(names, TemporaryPartitionNames)
    known = {p.name.lower() for p in engine.catalog.partitions(table.table_id, temporary=temporary)}
    for name in names:
        if name.lower() not in known:
            raise DorisError(f"partition {name} is not found in table {table.name}")


def begin(engine: StorageEngine, db_name: str, table: TableMeta, label: str | None,
          partitions: Sequence[str] | None) -> LoadTxn:
    db = _check_loadable(engine, db_name, table)
    return LoadTxn(engine, db, table, label=label, partitions=partitions)


def _reject_unplaced(table: TableMeta, batch: Batch, placed: np.ndarray,
                     tolerance: Tolerance,
                     describe: Callable[[Batch, list[int]], list[str]]) -> None:
    rows = np.flatnonzero(~placed).tolist()
    for i, nearest in zip(rows, describe(batch, rows)):
        values = ", ".join(f"{c}={batch.column(c).value_at(i)!r}"
                           for c in table.partition_info.columns)
        tolerance.reject(f"Reason: no partition for this tuple ({values}) in table "
                         f"[{table.name}]; {nearest}. Use `SHOW PARTITIONS FROM {table.name}` "
                         "to see the partitions of this table.")


def _add_routed(txn: LoadTxn, table: TableMeta, batch: Batch, tolerance: Tolerance) -> int:
    """Route a batch and load the rows some partition takes; the others are rejected rows
    (Doris: `no partition for this tuple`). Returns the rows loaded."""
    part_idx, buckets = txn.route(batch)
    placed = part_idx >= 0
    if not placed.all():
        _reject_unplaced(table, batch, placed, tolerance, txn.describe_unplaced)
        batch, part_idx, buckets = batch.filter(placed), part_idx[placed], buckets[placed]
    txn.add_batch(batch, (part_idx, buckets))
    return batch.num_rows


TxnFactory = Callable[[], LoadTxn]


def _row_batches(table: TableMeta, targets: Sequence[ColumnMeta],
                 rows: Iterator[list[object]]) -> Iterator[Batch]:
    """Converted rows (target-column order) as full-schema Batches of INSERT_BATCH_ROWS."""
    builder = RowBuilder(table, targets)
    for row in rows:
        builder.add(row)
        if len(builder) >= INSERT_BATCH_ROWS:
            yield builder.flush()
    if len(builder):
        yield builder.flush()


def _load(
    engine: StorageEngine, db_name: str, table: TableMeta, targets: Sequence[ColumnMeta],
    rows: Iterator[list[object]], label: str | None, partitions: Sequence[str] | None,
    group_commit: GroupCommitOptions | None = None, tolerance: Tolerance | None = None,
    txn_factory: TxnFactory | None = None,
) -> InsertOutcome | PendingInsert:
    """Feed converted rows (target-column order) through one LoadTxn (`_load_batches`)."""
    return _load_batches(engine, db_name, table, _row_batches(table, targets, rows), label,
                         partitions, group_commit, tolerance, txn_factory)


def _load_batches(
    engine: StorageEngine, db_name: str, table: TableMeta, batches: Iterator[Batch],
    label: str | None, partitions: Sequence[str] | None,
    group_commit: GroupCommitOptions | None = None, tolerance: Tolerance | None = None,
    txn_factory: TxnFactory | None = None,
) -> InsertOutcome | PendingInsert:
    """Load full-schema Batches in one LoadTxn and publish it (or hand them to the table's
    group commit). `tolerance` has counted the rows rejected while converting; rows no
    partition takes are rejected here. `txn_factory` makes the transaction (CTAS and INSERT
    OVERWRITE publish more than rows: storage/staged_load.py)."""
    tolerance = tolerance if tolerance is not None else Tolerance()
    if group_commit is not None and label is None and not partitions and txn_factory is None:
        return _group_load(engine, db_name, table, list(batches), group_commit, tolerance)
    txn = txn_factory() if txn_factory is not None else begin(engine, db_name, table, label,
                                                              partitions)
    loaded = 0
    try:
        for batch in batches:
            loaded += _add_routed(txn, table, batch, tolerance)
        tolerance.check()
    except BaseException:
        # A bad value or a failed SELECT: the segments the load flushed so far go now.
        txn.abort()
        raise
    meta = txn.commit()
    return InsertOutcome(loaded, txn.label, meta.txn_id, tolerance.filtered)


def _passes_through(source: Column, target: ColumnMeta) -> bool:
    """Whether a query column is already a valid column of `target` as it is: the same type
    (or a string into a string column at least as long) and no NULL for a NOT NULL column."""
    s, t = source.type, target.type
    same = s == t or (s.is_string and t.kind in (TypeKind.VARCHAR, TypeKind.STRING))
    if not same or (not target.nullable and source.has_nulls):
        return False
    if t.kind in (TypeKind.CHAR, TypeKind.VARCHAR) and source.offsets is not None and len(source):
        # an expression's declared length is not a promise: check the bytes themselves
        return int(np.diff(source.offsets).max()) <= t.length
    return True


_NATIVE_INTS = frozenset({TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT, TypeKind.BIGINT})


def _cast_whole(source: Column, target: ColumnMeta) -> Column | None:
    """The column converted at once where every value converts exactly (integer into a wider
    or range-checked integer, integer or float into DOUBLE); None: convert value by value
    (which also names the bad values)."""
    s, t = source.type.kind, target.type.kind
    if not target.nullable and source.has_nulls:
        return None
    values = source.data
    if s in _NATIVE_INTS and t in _NATIVE_INTS:
        if len(values):
            lo, hi = target.type.int_range()
            live = values if source.validity is None else np.where(source.validity, values, 0)
            if int(live.min()) < lo or int(live.max()) > hi:
                return None
            values = live
    elif not (t is TypeKind.DOUBLE and (s in _NATIVE_INTS or s is TypeKind.FLOAT)):
        return None
    return Column(target.type, values.astype(target.type.numpy_dtype), source.validity)


def _columnar(table: TableMeta, targets: Sequence[ColumnMeta], batch: Batch,
              now: _dt.datetime) -> Batch | None:
    """The full-schema Batch of a query batch whose every column is valid for its target as
    it is (CTAS always, INSERT SELECT between tables of the same types) or converts exactly in
    one numpy step; None: convert by value."""
    by_name: dict[str, Column] = {}
    for c, t in zip(batch.columns, targets):
        if _passes_through(c, t):
            by_name[t.name.lower()] = Column(t.type, c.data, c.validity, c.offsets)
            continue
        cast = _cast_whole(c, t)
        if cast is None:
            return None
        by_name[t.name.lower()] = cast
    out = []
    for col in table.columns:
        given = by_name.get(col.name.lower())
        if given is None:
            out.append(Column.constant(col.type, default_value(col, now), batch.num_rows))
        else:
            out.append(given)
    return Batch(table.column_names, tuple(out))


def _is_default(expr: exp.Expression) -> bool:
    return (isinstance(expr, exp.Var) and expr.name.upper() == "DEFAULT") or isinstance(
        expr, exp.DefaultColumnConstraint
    )


def insert_values(
    engine: StorageEngine, db_name: str, table: TableMeta, column_names: Sequence[str] | None,
    rows: Sequence[Sequence[exp.Expression]],
    evaluate: Callable[[exp.Expression, DataType], tuple[object, DataType]],
    label: str | None = None, partitions: Sequence[str] | None = None,
    group_commit: GroupCommitOptions | None = None, tolerance: Tolerance | None = None,
    txn_factory: TxnFactory | None = None,
) -> InsertOutcome | PendingInsert:
    """`evaluate(expr, target_type)` returns (physical value, its type) of a constant expression.
    With `group_commit` (and no label / PARTITION clause) the rows join the table's group."""
    targets = target_columns(table, column_names)
    now = clock.now()
    tol = tolerance if tolerance is not None else Tolerance()

    def converted() -> Iterator[list[object]]:
        for r, row in enumerate(rows, start=1):
            if len(row) != len(targets):
                raise DorisError("Column count doesn't match value count", ErrorCode.UNKNOWN_ERROR)
            tol.total += 1
            try:
                values = []
                for col, expr in zip(targets, row):
                    if _is_default(expr):
                        values.append(default_value(col, now))
                        continue
                    value, vtype = evaluate(expr, col.type)
                    source = None if vtype.kind is TypeKind.NULL else vtype
                    values.append(convert_value(col, value, source, r, tol.strict))
            except RowRejected as e:
                tol.reject(e.reason)
                continue
            yield values

    return _load(engine, db_name, table, targets, converted(), label, partitions, group_commit,
                 tol, txn_factory)


def insert_batches(
    engine: StorageEngine, db_name: str, table: TableMeta, column_names: Sequence[str] | None,
    batches: Iterator[Batch], label: str | None = None, partitions: Sequence[str] | None = None,
    tolerance: Tolerance | None = None, txn_factory: TxnFactory | None = None,
) -> InsertOutcome:
    """INSERT ... SELECT: `batches` are the query's result in target-column order."""
    targets = target_columns(table, column_names)
    tol = tolerance if tolerance is not None else Tolerance()

    now = clock.now()

    def converted() -> Iterator[Batch]:
        row_no = 0
        for batch in batches:
            if len(batch.columns) != len(targets):
                raise DorisError("Column count doesn't match value count", ErrorCode.UNKNOWN_ERROR)
            ready = _columnar(table, targets, batch, now)
            if ready is not None:
                row_no += batch.num_rows
                tol.total += batch.num_rows
                yield ready
                continue
            cols = [c.to_pylist() for c in batch.columns]
            types = [c.type for c in batch.columns]
            rows = []
            for i in range(batch.num_rows):
                row_no += 1
                tol.total += 1
                try:
                    rows.append([convert_value(t, cols[j][i], types[j], row_no, tol.strict)
                                 for j, t in enumerate(targets)])
                except RowRejected as e:
                    tol.reject(e.reason)
            yield from _row_batches(table, targets, iter(rows))

    outcome = _load_batches(engine, db_name, table, converted(), label, partitions, None, tol,
                            txn_factory)
    assert isinstance(outcome, InsertOutcome)
    return outcome


def insert_batch(engine: StorageEngine, db_name: str, table: TableMeta, batch: Batch,
                 group_commit: GroupCommitOptions | None = None,
                 tolerance: Tolerance | None = None) -> InsertOutcome | PendingInsert:
    """Load one ready Batch (the fast path's) in its own transaction or a group commit."""
    tol = tolerance if tolerance is not None else Tolerance()
    tol.total += batch.num_rows
    if group_commit is not None:
        return _group_load(engine, db_name, table, [batch], group_commit, tol)
    txn = begin(engine, db_name, table, None, None)
    try:
        loaded = _add_routed(txn, table, batch, tol)
        tol.check()
    except BaseException:
        txn.abort()
        raise
    meta = txn.commit()
    return InsertOutcome(loaded, txn.label, meta.txn_id, tol.filtered)


def _group_load(engine: StorageEngine, db_name: str, table: TableMeta, batches: Sequence[Batch],
                options: GroupCommitOptions, tolerance: Tolerance
                ) -> InsertOutcome | PendingInsert:
    """Join the table's group commit (storage/group_commit.py); the caller awaits the publish.
    Rows no partition takes are this statement's filtered rows, judged before joining (so a
    bad row never sinks the shared load); with none left it is an empty load of its own."""
    # checked before joining: an error here is this statement's alone
    db = _check_loadable(engine, db_name, table)
    router = PartitionRouter(table, engine.catalog.partitions(table.table_id))
    kept = []
    for b in batches:
        part_idx = router.route(b)
        placed = part_idx >= 0
        creatable = auto_placeable(table, b, part_idx)  # AUTO PARTITION: the load adds them
        if creatable is not None:
            placed |= creatable
        if not placed.all():
            _reject_unplaced(table, b, placed, tolerance, router.describe_misses)
            b = b.filter(placed)
        if b.num_rows:
            kept.append(b)
    tolerance.check()
    if not kept:
        txn = LoadTxn(engine, db, table)
        return InsertOutcome(0, txn.label, txn.commit().txn_id, tolerance.filtered)
    batch = Batch.concat(kept) if len(kept) > 1 else kept[0]

    def load(members: Sequence[Batch]) -> tuple[str, int]:
        txn = LoadTxn(engine, db, table, label_prefix="group_commit")
        for b in members:
            txn.add_batch(b)
        return txn.label, txn.commit().txn_id

    return PendingInsert(engine.group_commit.submit(table.table_id, batch, options, load),
                         tolerance.filtered)
