"""INSERT INTO ... VALUES / SELECT: evaluate rows, check them against the table, load them.

Rows are converted to the table's column types with Doris' strict-mode rules (a value that does
not fit fails the whole statement), columns missing from the column list take their DEFAULT or
NULL, and the complete rows go through one `LoadTxn`, so the statement is all-or-nothing.
Returns what the OK packet reports: row count, label, transaction id.
Upstream: Doris `InsertIntoTableCommand`, `OlapTableSink`.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal
from functools import lru_cache
from operator import itemgetter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
from sqlglot import expressions as exp

from sql.errors import DorisError, ErrorCode, unknown_database
from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta, DatabaseMeta, PartitionType, TableMeta
from sql.insert_values_scanner import unquote
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
    for row in rows:
        builder.add(row)
        if len(builder) >= INSERT_BATCH_ROWS:
            txn.add_batch(builder.flush())
    if len(builder):
        txn.add_batch(builder.flush())
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


# ---- INSERT ... VALUES fast path ------------------------------------------------------------
# Literal tokens from sql/insert_values_scanner.py, converted a column at a time with numpy.
# Every conversion accepts only the token shapes whose result is known to equal the general
# path's (sqlglot literal -> evaluate_constant -> convert_value); anything else returns None
# and the statement goes through the general path, which also produces every error.
_DATE_TOKEN = r"['\"]\d{4}-\d{2}-\d{2}['\"]"
_DATETIME_TOKEN = r"['\"]\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?['\"]"
_INT_TOKEN = r"-?\d+"
_DECIMAL_TOKEN = r"-?(?:\d+(?:\.\d*)?|\.\d+)"
_BOOL_TOKENS = {"true": 1, "false": 0, "1": 1, "0": 0}


@lru_cache(maxsize=None)
def _list_pattern(token: str) -> re.Pattern[str]:
    return re.compile(rf"(?:{token}\n)*{token}")


def _all_match(token: str, values: list[str]) -> bool:
    """Every value matches `token`: one regex over the newline-joined values (C speed; no
    value of these shapes contains a newline)."""
    return not values or _list_pattern(token).fullmatch("\n".join(values)) is not None


class _Fallback(Exception):
    """This column's tokens need the general path."""


def _tokens_and_validity(col: ColumnMeta, tokens: Sequence[str]) -> tuple[list[str], np.ndarray | None]:
    # no "NULL" anywhere in the column's text: no NULL token (one C-speed pass)
    if "NULL" not in "\n".join(tokens).upper():
        return list(tokens), None
    nulls = [t for t in tokens if len(t) == 4 and t[0] in "Nn"]
    if not nulls:
        return list(tokens), None
    if not col.nullable:
        raise _Fallback  # the general path reports the NOT NULL violation
    valid = np.fromiter((not (len(t) == 4 and t[0] in "Nn") for t in tokens), dtype=np.bool_,
                        count=len(tokens))
    return list(tokens), valid


def _numbers(tokens: list[str], valid: np.ndarray | None, fill: str) -> np.ndarray:
    if valid is not None:
        tokens = [t if v else fill for t, v in zip(tokens, valid.tolist())]
    return np.array(tokens)


def _strip_number_quotes(tokens: Sequence[str]) -> list[str]:
    """Numbers sent as strings ('12.5', as drivers format Decimal or str parameters): the
    general path parses the string with the column type's rules, which for the plain shapes
    the checks below accept is what the unquoted literal gives."""
    out = []
    for x in tokens:
        if x[0] in "'\"":
            inner = x[1:-1]
            if "\\" in inner or "'" in inner or '"' in inner or inner.upper() == "NULL":
                raise _Fallback  # escapes, or the text 'NULL' (a string, not a NULL)
            out.append(inner)
        else:
            out.append(x)
    return out


def _convert_column(col: ColumnMeta, tokens: Sequence[str]) -> Column:
    t = col.type
    k = t.kind
    if t.is_numeric:
        text = "".join(tokens)
        if "'" in text or '"' in text:
            tokens = _strip_number_quotes(tokens)
    toks, valid = _tokens_and_validity(col, tokens)
    live = toks if valid is None else [x for x, v in zip(toks, valid.tolist()) if v]
    if k in (TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT, TypeKind.BIGINT):
        if not _all_match(_INT_TOKEN, live):
            raise _Fallback
        try:
            big = _numbers(toks, valid, "0").astype(np.int64)
        except (ValueError, OverflowError):
            raise _Fallback from None
        lo, hi = t.int_range()
        if len(big) and (int(big.min()) < lo or int(big.max()) > hi):
            raise _Fallback  # the general path names the value out of range
        return Column(t, big.astype(t.numpy_dtype), valid)
    if k is TypeKind.LARGEINT:
        if not _all_match(_INT_TOKEN, live):
            raise _Fallback
        lo, hi = t.int_range()
        vals = [int(x) if v else 0 for x, v in zip(toks, _valid_list(valid, len(toks)))]
        if any(not lo <= x <= hi for x in vals):
            raise _Fallback
        data = np.empty(len(vals), dtype=object)
        data[:] = vals
        return Column(t, data, valid)
    if k in (TypeKind.FLOAT, TypeKind.DOUBLE):
        if any(x[0] in "'\"tTfF" for x in live):
            raise _Fallback
        try:
            arr = _numbers(toks, valid, "0").astype(np.float64)
        except ValueError:
            raise _Fallback from None
        return Column(t, arr.astype(t.numpy_dtype), valid)
    if k is TypeKind.DECIMAL:
        if not _all_match(_DECIMAL_TOKEN, live):
            raise _Fallback
        fast = _decimal_unscaled(toks, valid, t)
        if fast is not None:
            return Column(t, fast, valid)
        try:
            vals = [t.to_physical(Decimal(x)) if v else 0
                    for x, v in zip(toks, _valid_list(valid, len(toks)))]
        except TypeError_:
            raise _Fallback from None
        if t.numpy_dtype == np.dtype(object):
            data = np.empty(len(vals), dtype=object)
            data[:] = vals
        else:
            data = np.array(vals, dtype=np.int64)
        return Column(t, data, valid)
    if k is TypeKind.BOOLEAN:
        try:
            vals = [_BOOL_TOKENS[x.lower()] if v else 0 for x, v in zip(toks, _valid_list(valid, len(toks)))]
        except KeyError:
            raise _Fallback from None
        return Column(t, np.array(vals, dtype=np.uint8), valid)
    if k is TypeKind.DATE:
        if not _all_match(_DATE_TOKEN, live) or "0000-" in "".join(map(_YEAR, live)):
            raise _Fallback
        texts = _inner(toks, valid, "1970-01-01")
        try:
            days = np.array(texts, dtype="datetime64[D]").astype(np.int64)
        except ValueError:
            raise _Fallback from None
        return Column(t, days.astype(np.int32), valid)
    if k is TypeKind.DATETIME:
        if not _all_match(_DATETIME_TOKEN, live) or "0000-" in "".join(map(_YEAR, live)):
            raise _Fallback
        texts = "\n".join(_inner(toks, valid, "1970-01-01T00:00:00")).replace(" ", "T").split("\n")
        try:
            micros = np.array(texts, dtype="datetime64[us]").astype(np.int64)
        except ValueError:
            raise _Fallback from None
        if t.scale < 6:
            unit = 10 ** (6 - t.scale)
            micros = (micros // unit) * unit  # Doris truncates to the declared precision
        return Column(t, micros, valid)
    if t.is_string:
        if "".join(map(_FIRST, live)).replace("'", "").replace('"', ""):
            raise _Fallback  # a token that is not a quoted string
        if valid is None and "\\" not in (text := "\n".join(toks)) and "''" not in text and '""' not in text:
            vals: list[str | None] = list(map(_QUOTED_BODY, toks))  # no escapes anywhere
        else:
            vals = [unquote(x) if v else None for x, v in zip(toks, _valid_list(valid, len(toks)))]
        if k is not TypeKind.STRING:
            limit = t.length
            if any(s is not None and len(s) * 4 > limit and len(s.encode("utf-8")) > limit for s in vals):
                raise _Fallback  # too long: the general path's strict-mode error
        if valid is None:
            encoded = [v.encode("utf-8") for v in vals]  # type: ignore[union-attr]
            offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
            return Column(t, np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), None, offsets)
        return Column.from_physical(t, vals)
    raise _Fallback  # HLL, BITMAP


_FIRST = itemgetter(0)
_YEAR = itemgetter(slice(1, 6))
_QUOTED_BODY = itemgetter(slice(1, -1))


def _inner(toks: list[str], valid: np.ndarray | None, fill: str) -> list[str]:
    """The text inside each quoted token (`fill` for NULLs)."""
    if valid is None:
        return list(map(_QUOTED_BODY, toks))
    return [x[1:-1] if v else fill for x, v in zip(toks, valid.tolist())]


def _decimal_unscaled(toks: list[str], valid: np.ndarray | None, t: DataType) -> np.ndarray | None:
    """DECIMAL(p <= 18, s) tokens with at most s fraction digits, as int64 unscaled values by
    digit-string arithmetic (exact: no rounding happens); None otherwise."""
    if t.precision > 18:
        return None
    scale = t.scale
    if valid is None and scale > 0 and _all_match(rf"-?\d+\.\d{{{scale}}}", toks):
        # every value written with exactly `scale` decimals (the usual formatting): the
        # unscaled integer is the text without its point
        texts = "\n".join(toks).replace(".", "").split("\n")
    else:
        texts = _unscaled_texts(toks, valid, scale)
        if texts is None:
            return None
    try:
        data = np.array(texts).astype(np.int64)
    except (ValueError, OverflowError):
        return None
    bound = 10 ** t.precision - 1
    if len(data) and (int(data.min()) < -bound or int(data.max()) > bound):
        raise _Fallback  # out of range: the general path's error
    return data


def _unscaled_texts(toks: list[str], valid: np.ndarray | None, scale: int) -> list[str] | None:
    texts = []
    for x, v in zip(toks, _valid_list(valid, len(toks))):
        if not v:
            texts.append("0")
            continue
        ip, _, fp = x.partition(".")
        if len(fp) > scale:
            return None  # needs rounding: Decimal path
        texts.append((ip if ip not in ("", "-") else ip + "0") + fp.ljust(scale, "0"))
    return texts


def _valid_list(valid: np.ndarray | None, n: int) -> list[bool]:
    return [True] * n if valid is None else valid.tolist()


def scanned_batch(table: TableMeta, column_names: Sequence[str] | None,
                  values: Sequence[Sequence[str]], num_rows: int) -> Batch | None:
    """The full-schema Batch of a scanned INSERT VALUES, or None when it needs the general path."""
    try:
        targets = target_columns(table, column_names)
    except DorisError:
        return None
    if len(targets) != len(values):
        return None
    by_name = {c.name.lower(): (c, v) for c, v in zip(targets, values)}
    now = _dt.datetime.now()
    cols = []
    try:
        for c in table.columns:
            hit = by_name.get(c.name.lower())
            if hit is None:
                cols.append(Column.constant(c.type, default_value(c, now), num_rows))
            else:
                cols.append(_convert_column(c, hit[1]))
    except (_Fallback, DorisError):
        return None
    return Batch(table.column_names, tuple(cols))


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
