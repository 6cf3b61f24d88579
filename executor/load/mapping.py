"""Column mapping shared by every load path: Doris' `columns`, `where` and `partitions`.

`columns: k1, tmp, v1 = tmp * 10, k2 = to_bitmap(tmp)` names the file's columns in file order
(a name that is no table column is a temporary column, usable in expressions only) followed by
assignments that compute table columns. As in Doris (`Load.initColumns`): an assignment wins
over a file column of the same name, file columns that are neither table columns nor used are
ignored, and table columns neither in the file nor computed take their DEFAULT. Expressions are
parsed with our Doris dialect, bound against a synthetic schema of the file's columns (CSV
columns are STRING, as Doris' VARCHAR source slots) and evaluated batch by batch with the
engine's expression compiler (executor/compile.py): there is no second evaluator. A computed
text value goes through the same conversion as a file value (convert.py); strict mode does not
apply to computed columns (Doris' rule), a NULL for a NOT NULL column is always a filtered row.

`where` is a predicate on the mapped row (table columns); rows it drops are NumberUnselectedRows,
not filtered rows. `partitions` (LoadTxn's partition list) filters rows of other partitions
with Doris' `no partition for this tuple` reason (job.py).
Upstream: Doris `Load.initColumns`, `ImportColumnDesc`, `StreamLoadPlanner` (where -> conjuncts).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from executor.compile import compile_column, compile_predicate
from executor.insert import check_object_type, default_value
from executor.load.convert import _line as source_line  # convert's error-line text
from executor.load.convert import _utf8_text, convert_column  # and UTF-8 rule, shared
from executor.load.spec import LoadSpec, LoadStats, StatsRecord
from sql.binder.bind_expressions import ExpressionBinder, coerce
from sql.binder.bind_from import unknown_column
from sql.binder.expressions import ColumnRef, Expr
from sql.errors import DorisError
from sql.functions.coercion import is_null_type
from sql.parser.dialect import SqlSyntaxError, parse_one
from storage import clock
from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta, TableMeta
from storage.errors import analysis_message
from storage.types import BIGINT, BLOB_KINDS, BOOLEAN, DOUBLE, STRING, DataType

# Arrow types of typed formats (parquet, orc, ...) -> the source column type expressions see;
# anything else is read as its text.
_ARROW_SOURCE_TYPES: tuple[tuple[Callable[[pa.DataType], bool], DataType], ...] = (
    (pa.types.is_boolean, BOOLEAN),
    (pa.types.is_integer, BIGINT),
    (pa.types.is_floating, DOUBLE),
)


class MappingError(Exception):
    """A `columns` / `where` / `partitions` value Doris refuses; `message` is Doris' text
    without the status tag (spec.py adds it)."""

    def __init__(self, message: str, tag: str = "ANALYSIS_ERROR") -> None:
        super().__init__(message)
        self.message = message
        self.tag = tag


def analysis_error(detail: str) -> MappingError:
    return MappingError(f"TStatus: {analysis_message(detail)}")


@dataclass(frozen=True)
class Assignment:
    """`column = expression` of the columns header: `column` is the table column computed."""

    column: ColumnMeta
    expression: exp.Expression


def _parse(sql: str, text: str, what: str, clauses: tuple[str, ...]) -> exp.Select:
    """`sql` (a SELECT wrapping the header `text`) parsed; anything but `clauses` in it (a
    GROUP BY, a UNION, a second statement smuggled into the header) is a syntax error."""
    try:
        node = parse_one(sql)
    except SqlSyntaxError as e:
        raise analysis_error(f"Syntax error in {what} [{text}]: {e}") from None
    if not isinstance(node, exp.Select) or any(
            v for k, v in node.args.items() if k not in clauses):
        raise analysis_error(f"Syntax error in {what} [{text}]")
    return node


def parse_columns(text: str, table: TableMeta) -> tuple[list[str], list[Assignment]]:
    """The `columns` header -> (file column names in file order, assignments). Raises
    MappingError with Doris' messages (duplicate column, mapping column not in table)."""
    select = _parse(f"SELECT {text}", text, "columns", ("expressions",))
    file_columns: list[str] = []
    assignments: list[Assignment] = []
    for item in select.expressions:
        if isinstance(item, exp.Column) and not item.table:
            name = item.name
            if any(n.lower() == name.lower() for n in file_columns):
                raise analysis_error(f"Duplicate column: {name}")
            file_columns.append(name)
        elif isinstance(item, exp.EQ) and isinstance(item.this, exp.Column):
            name = item.this.name
            if any(a.column.name.lower() == name.lower() for a in assignments):
                raise analysis_error(f"Duplicate column mapping: {name}")
            if not table.has_column(name):
                raise analysis_error(f"Mapping column is not in table. column: {name}")
            assignments.append(Assignment(table.column(name), item.expression))
        else:
            raise analysis_error(f"Syntax error in columns: [{item.sql()}] is neither a column "
                                 "name nor a `column = expression` mapping")
    return file_columns, assignments


def parse_where(text: str) -> exp.Expression:
    select = _parse(f"SELECT 1 FROM t WHERE {text}", text, "where",
                    ("expressions", "from_", "where"))
    return select.args["where"].this


def parse_partitions(text: str, table: TableMeta, existing: Sequence[str]) -> tuple[str, ...]:
    """`partitions: p1, p2` -> the names, each checked against the table's partitions."""
    names = [n.strip().strip("`") for n in text.split(",") if n.strip()]
    if not names:
        raise MappingError("partitions is empty", "INVALID_ARGUMENT")
    known = {p.lower() for p in existing}
    for n in names:
        if n.lower() not in known:
            raise analysis_error(f"Unknown partition '{n}' in table '{table.name}'")
    return tuple(names)


_OFFSET = re.compile(r"^([+-])(\d{1,2}):(\d{2})$")


def load_now(timezone: str | None) -> _dt.datetime:
    """The load's `now()`: the wall clock in the load's `timezone` property (IANA name, UTC,
    GMT, CST = Asia/Shanghai as in Doris, or +hh:mm), else the server's."""
    if timezone is None or not timezone.strip() or timezone.strip().upper() == "SYSTEM":
        return clock.now().replace(microsecond=0)
    text = timezone.strip()
    zone: _dt.tzinfo
    m = _OFFSET.match(text)
    if text.upper() in ("UTC", "GMT"):
        zone = _dt.UTC
    elif m and int(m.group(2)) <= 14 and int(m.group(3)) < 60:
        sign = -1 if m.group(1) == "-" else 1
        zone = _dt.timezone(sign * _dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    else:
        try:
            zone = ZoneInfo("Asia/Shanghai" if text.upper() == "CST" else text)
        except (ZoneInfoNotFoundError, ValueError):
            raise MappingError(f"Unknown or incorrect time zone: '{timezone}'",
                               "INVALID_ARGUMENT") from None
    return clock.now_in(zone).replace(microsecond=0)


def _binder(resolve: Callable[[exp.Column], Expr], clause: str,
            now: _dt.datetime) -> ExpressionBinder:
    return ExpressionBinder(resolve, None, now, False, clause)


def _bind(node: exp.Expression, binder: ExpressionBinder) -> Expr:
    try:
        return binder.bind(node)
    except DorisError as e:
        raise analysis_error(e.detail) from None


@dataclass(frozen=True)
class _Computed:
    """A compiled assignment: `run(source batch)` -> Column; `as_text` when the value is text
    that goes through convert_column (Doris' string -> column type conversion)."""

    column: ColumnMeta
    run: Callable[[Batch], Column]
    as_text: bool


class ColumnMapping:
    """The file's columns -> the table's, for one load. Built (and checked) before any data
    arrives; the expressions are compiled once per file schema on the first batch."""

    def __init__(self, table: TableMeta, file_columns: Sequence[str],
                 assignments: Sequence[Assignment], where: exp.Expression | None,
                 now: _dt.datetime | None = None) -> None:
        self.table = table
        self.now = now or load_now(None)  # what now() / current_date() give (load_now)
        self.file_columns = list(file_columns)
        self.assignments = list(assignments)
        computed = {a.column.name.lower() for a in self.assignments}
        # file columns loaded as they are: table columns not computed by an assignment
        self.direct: dict[int, ColumnMeta] = {
            j: table.column(n) for j, n in enumerate(self.file_columns)
            if table.has_column(n) and n.lower() not in computed
        }
        self.where_ast = where
        self._compiled: dict[tuple[DataType, ...], list[_Computed]] = {}
        self._where: Callable[[Batch], np.ndarray] | None = None
        # check every name and type now (CSV sources are text)
        self._compile([STRING] * len(self.file_columns))
        if where is not None:
            self._where = self._compile_where(where)

    @property
    def targets(self) -> list[ColumnMeta]:
        """The file's columns as ColumnMeta (what sources.py reads): table columns keep their
        definition, temporary columns are nullable STRING."""
        return [self.table.column(n) if self.table.has_column(n) else ColumnMeta(n, STRING)
                for n in self.file_columns]

    def loaded_columns(self) -> set[str]:
        """Lower-case names of the table columns the load gives a value (the rest: DEFAULT)."""
        return ({c.name.lower() for c in self.direct.values()}
                | {a.column.name.lower() for a in self.assignments})

    # ---- compiling --------------------------------------------------------------------------
    def _source_name(self, j: int) -> str:
        return f"__file_{j}"

    def _compile(self, types: Sequence[DataType]) -> list[_Computed]:
        by_name = {n.lower(): j for j, n in enumerate(self.file_columns)}

        def resolve(col: exp.Column) -> Expr:
            j = by_name.get(col.name.lower())
            if j is None or col.table:
                raise unknown_column(".".join(p.name for p in col.parts))
            return ColumnRef(self._source_name(j), types[j])

        out = []
        for a in self.assignments:
            bound = _bind(a.expression, _binder(resolve, "columns", self.now))
            target = a.column.type
            if target.kind in BLOB_KINDS or bound.dtype.kind in BLOB_KINDS:
                try:
                    check_object_type(a.column, bound.dtype)
                except DorisError as e:
                    raise analysis_error(e.detail) from None
            # text (a string column, or a text result) converts as a file value would
            as_text = (target.is_string and target.kind not in BLOB_KINDS) or \
                bound.dtype.is_string or is_null_type(bound.dtype)
            typed = coerce(bound, STRING if as_text else target)
            out.append(_Computed(a.column, compile_column(typed), as_text))
        return out

    def _compile_where(self, where: exp.Expression) -> Callable[[Batch], np.ndarray]:
        table = self.table

        def resolve(col: exp.Column) -> Expr:
            if col.table or not table.has_column(col.name):
                raise unknown_column(".".join(p.name for p in col.parts))
            c = table.column(col.name)
            return ColumnRef(c.name, c.type)

        bound = _bind(where, _binder(resolve, "WHERE", self.now))
        return compile_predicate(bound)

    def _for_types(self, types: tuple[DataType, ...]) -> list[_Computed]:
        computed = self._compiled.get(types)
        if computed is None:
            computed = self._compile(types)
            self._compiled[types] = computed
        return computed

    # ---- loading ----------------------------------------------------------------------------
    def to_batch(self, rb: pa.RecordBatch, strict: bool, bad: np.ndarray,
                 reasons: dict[int, str], now: _dt.datetime,
                 timezone: str = "UTC") -> tuple[Batch, int, np.ndarray | None]:
        """A parsed block -> (the full-schema Batch of its good, selected rows, the number of
        rows `where` dropped, the rows' positions in `rb` or None when it has them all). Bad
        rows are set in `bad` with their reason. The block's columns
        are matched to the file columns by name, case-insensitively (sources name CSV columns
        after them; parquet / ORC / JSON fields carry their own names); a file column the block
        lacks is NULL to expressions and, loaded as it is, takes its DEFAULT."""
        n = rb.num_rows
        in_file = {name.lower(): j for j, name in enumerate(rb.schema.names)}
        arrays: list[pa.Array | None] = [
            rb.column(in_file[c.lower()]) if c.lower() in in_file else None
            for c in self.file_columns]
        values: dict[str, Column] = {}
        for j, col in self.direct.items():
            arr = arrays[j]
            if arr is not None:
                values[col.name.lower()] = convert_column(col, arr, strict, bad, reasons,
                                                          timezone)
        if self.assignments:
            source, types = self._source_batch(arrays, n, bad, reasons)
            for c in self._for_types(types):
                result = c.run(source)
                if c.as_text:
                    # strict mode does not apply to computed columns (Doris)
                    values[c.column.name.lower()] = convert_column(
                        c.column, result.to_arrow(), False, bad, reasons)
                    continue
                if not c.column.nullable and result.validity is not None:
                    for i in np.flatnonzero(~result.validity & ~bad).tolist():
                        bad[i] = True
                        reasons[i] = f"null value for not null column, column={c.column.name}"
                values[c.column.name.lower()] = result
        cols: list[Column] = []
        for meta in self.table.columns:
            data = values.get(meta.name.lower())
            if data is None:
                try:
                    data = Column.constant(meta.type, default_value(meta, now), n)
                except DorisError:  # a NOT NULL column the block does not carry (convert.py)
                    data = Column.constant(meta.type, None, n)
                    for i in np.flatnonzero(~bad).tolist():
                        bad[i] = True
                        reasons[i] = (f"The column `{meta.name}` is not nullable, but it's "
                                      "not found in the file.")
            cols.append(data)
        batch = Batch(self.table.column_names, tuple(cols))
        rows = None
        if bad.any():
            batch = batch.filter(~bad)
            rows = np.flatnonzero(~bad)
        unselected = 0
        if self._where is not None and batch.num_rows:
            keep = self._where(batch)
            unselected = int(batch.num_rows - np.count_nonzero(keep))
            if unselected:
                batch = batch.filter(keep)
                rows = (np.arange(n) if rows is None else rows)[keep]
        return batch, unselected, rows

    def _source_batch(self, arrays: Sequence[pa.Array | None], n: int, bad: np.ndarray,
                      reasons: dict[int, str]) -> tuple[Batch, tuple[DataType, ...]]:
        """The file columns as the expressions see them (text, BIGINT, DOUBLE or BOOLEAN), and
        their types; text that is not UTF-8 makes its row bad (convert.py's rule)."""
        cols = []
        for j, arr in enumerate(arrays):
            if arr is None:
                cols.append(Column.constant(STRING, None, n))
                continue
            if pa.types.is_dictionary(arr.type):
                arr = arr.dictionary_decode()
            t = _source_type(arr.type)
            if t is STRING:
                arr = _utf8_text(arr, bad, reasons, ColumnMeta(self.file_columns[j], STRING))
                arr = pc.cast(arr, pa.large_string())
            cols.append(Column.from_arrow(t, arr))
        types = tuple(c.type for c in cols)
        if not cols:  # the expression compiler needs one column to know the row count
            return Batch(("__rows",), (Column.constant(BOOLEAN, 1, n),)), types
        names = tuple(self._source_name(j) for j in range(len(cols)))
        return Batch(names, tuple(cols)), types


def _source_type(t: pa.DataType) -> DataType:
    for test, dtype in _ARROW_SOURCE_TYPES:
        if test(t):
            return dtype
    return STRING


def build_mapping(table: TableMeta, columns: str | None, where: str | None,
                  timezone: str | None = None) -> ColumnMapping:
    """The mapping of a load's `columns` and `where` properties (either may be absent: no
    `columns` means the file holds every table column in table order)."""
    file_columns: list[str] = []
    assignments: list[Assignment] = []
    if columns is not None and columns.strip():
        file_columns, assignments = parse_columns(columns, table)
    if not file_columns:  # Doris: without file column names the file holds the table's columns
        file_columns = [c.name for c in table.columns]
    return ColumnMapping(table, file_columns, assignments,
                         parse_where(where) if where is not None and where.strip() else None,
                         load_now(timezone))


def map_batch(req: LoadSpec, rb: pa.RecordBatch, stats: LoadStats | StatsRecord,
              now: _dt.datetime) -> Batch:
    """convert.to_batch for a load with a `columns` / `where` mapping: the full-schema Batch
    of the block's good, selected rows; bad rows counted as filtered, dropped ones unselected."""
    return mapped_rows(req, rb, stats, now)[0]


def mapped_rows(req: LoadSpec, rb: pa.RecordBatch, stats: LoadStats | StatsRecord,
                now: _dt.datetime) -> tuple[Batch, np.ndarray | None]:
    """`map_batch`, and the positions in `rb` of the batch's rows (None: every row)."""
    assert req.mapping is not None
    bad = np.zeros(rb.num_rows, dtype=np.bool_)
    reasons: dict[int, str] = {}
    batch, unselected, rows = req.mapping.to_batch(rb, req.strict, bad, reasons, now,
                                                   req.format.timezone)
    for i in sorted(reasons):
        line = source_line(rb, i, req.separator)
        stats.filtered(f"Reason: {reasons[i]}. src line: [{line}]", i)
    stats.unselected_rows += unselected
    return batch, rows
