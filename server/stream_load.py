"""Stream Load: `PUT /api/{db}/{table}/_stream_load` (Doris' StreamLoadAction), CSV bodies.

This module owns the HTTP side of a Stream Load and the conversion of its body into table rows:

- validation before the upload: an `Expect: 100-continue` request is answered from
  `expect_handler` only once the credentials (server/privileges/http_auth.py), the table,
  LOAD_PRIV on it, the headers and the label were checked, so a wrong password, an unknown
  table or a used label fail before curl sends the body;
- the body is parsed by pyarrow.csv's streaming reader (`open_csv`) over a file-like bridge
  that reads the aiohttp request stream from the worker thread a block at a time, so the body is
  never held in memory whole;
- each parsed block is converted column at a time to the table's types (Arrow casts, with a
  per-value fallback through `DataType.to_physical` that names the bad rows), filtered rows are
  counted, and the rest goes into ONE `LoadTxn` (storage/txn.py): the load is visible all at
  once at commit, or not at all (aborted when `max_filter_ratio` is exceeded or on any error);
- the response is Doris' JSON (TxnId, Label, Status, Message, row counts, LoadBytes and the
  phase timings); a label already used is `Label Already Exists` with `ExistingJobStatus`.

Headers handled: label, column_separator, line_delimiter (\\n or \\r\\n), columns (a list of
table column names in file order), format (csv, csv_with_names), max_filter_ratio,
strict_mode. Upstream: Doris `StreamLoadAction` (BE http/action/stream_load.cpp),
`StreamLoadContext::to_json`, `CsvReader`.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from aiohttp import web

from executor.insert import begin, default_value
from server.privileges.http_auth import ACCESS_KEY, authenticate, require
from server.privileges.model import LOAD
from sql.errors import DorisError
from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta, TableMeta
from storage.txn import LabelAlreadyUsed
from storage.types import BLOB_KINDS, DataType, TypeError_, TypeKind

if TYPE_CHECKING:
    from server.app import ShaleServer

log = logging.getLogger(__name__)
READ_BLOCK = 1 << 20  # bytes pyarrow reads per block (its default block_size)
FORMATS = ("csv", "csv_with_names")


class LoadFailed(Exception):
    """A Stream Load refused or failed: `message` is Doris' text (with its status tag)."""

    def __init__(self, message: str, status: str = "Fail", existing: str | None = None,
                 http_status: int = 200) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.existing = existing
        self.http_status = http_status


@dataclass
class LoadRequest:
    """A validated Stream Load request: what the headers asked for, against which table."""

    db: str
    table: TableMeta
    label: str
    targets: list[ColumnMeta]  # the file's columns, in file order
    separator: str
    skip_rows: int
    max_filter_ratio: float
    strict: bool


@dataclass
class LoadStats:
    """Counters and phase timings that end up in the JSON response."""

    total_rows: int = 0
    loaded_rows: int = 0
    filtered_rows: int = 0
    skipped_rows: int = 0  # rows the CSV reader dropped for a wrong column count
    load_bytes: int = 0
    txn_id: int = -1
    begin_txn_ms: int = 0
    read_data_ms: int = 0
    write_data_ms: int = 0
    commit_ms: int = 0
    first_errors: list[str] = field(default_factory=list)

    def filtered(self, reason: str) -> None:
        self.filtered_rows += 1
        if len(self.first_errors) < 10:
            self.first_errors.append(reason)


def _separator(raw: str) -> str:
    """Doris' column_separator: one character, or its `\\xNN` hex form (e.g. `\\x01`)."""
    text = raw
    if raw.lower().startswith("\\x") and len(raw) == 4:
        try:
            text = chr(int(raw.lower().removeprefix("\\x"), 16))
        except ValueError:
            pass
    elif raw == "\\t":
        text = "\t"
    if len(text.encode()) != 1 or text in "\r\n\"":
        raise LoadFailed(f"[INVALID_ARGUMENT]column_separator [{raw}] is not supported yet: "
                         "use a single-byte separator")
    return text


def _ratio(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise LoadFailed(f"[INVALID_ARGUMENT]Invalid max_filter_ratio: {raw}, it should be "
                         "between 0 and 1")
    return value


def validate(server: ShaleServer, request: web.Request) -> LoadRequest:
    """Everything that can be checked before the body arrives. Raises an aiohttp HTTP error
    (401/403, from http_auth) or LoadFailed."""
    if ACCESS_KEY not in request:
        request[ACCESS_KEY] = authenticate(server.privileges, request)
    db_name, tbl_name = request.match_info["db"], request.match_info["table"]
    require(request, LOAD, db_name, tbl_name)
    catalog = server.engine.catalog
    if catalog.get_database(db_name) is None:
        raise LoadFailed(f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = unknown "
                         f"database, database={db_name}", http_status=404)
    table = catalog.get_table(db_name, tbl_name)
    if table is None:
        raise LoadFailed(f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = table not "
                         f"found, tableName={tbl_name}", http_status=404)
    h = request.headers
    fmt = h.get("format", "csv").strip().lower()
    if fmt not in FORMATS:
        raise LoadFailed(f"[INVALID_ARGUMENT]format [{fmt}] is not supported yet "
                         f"(supported: {', '.join(FORMATS)})")
    line_delimiter = h.get("line_delimiter", "\\n")
    if line_delimiter not in ("\\n", "\n", "\\r\\n", "\r\n"):
        raise LoadFailed(f"[INVALID_ARGUMENT]line_delimiter [{line_delimiter}] is not "
                         "supported yet: use \\n or \\r\\n")
    separator = _separator(h.get("column_separator", "\t"))
    targets: list[ColumnMeta] = list(table.columns)
    if "columns" in h:
        names = [n.strip().strip("`") for n in h["columns"].split(",")]
        targets = []
        for n in names:
            if "=" in n or not n:
                raise LoadFailed(f"[INVALID_ARGUMENT]column expression [{n}] in columns is "
                                 "not supported yet")
            if not table.has_column(n):
                raise LoadFailed(f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = "
                                 f"Unknown column '{n}' in '{table.name}'")
            if any(c.name.lower() == n.lower() for c in targets):
                raise LoadFailed(f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = "
                                 f"Duplicate column: {n}")
            targets.append(table.column(n))
    for c in targets:
        if c.type.kind in BLOB_KINDS:
            raise LoadFailed(f"[INVALID_ARGUMENT]column {c.name} of type {c.type.sql()} needs "
                             "a columns expression (to_bitmap, hll_hash), not supported yet")
    chosen = {c.name.lower() for c in targets}
    now = _dt.datetime.now()
    for c in table.columns:
        if c.name.lower() not in chosen:
            try:
                default_value(c, now)
            except DorisError:
                raise LoadFailed(f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = "
                                 f"Column has no default value. column: {c.name}") from None
    label = h.get("label", "").strip() or f"stream_load_{uuid.uuid4().hex}"
    db = catalog.get_database(db_name)
    prev = catalog.txn_by_label(db.db_id, label)
    if prev is not None:
        raise _label_exists(label, prev.txn_id)
    strict = h.get("strict_mode", "false").strip().lower() == "true"
    return LoadRequest(db_name, table, label, targets, separator,
                       1 if fmt == "csv_with_names" else 0,
                       _ratio(h.get("max_filter_ratio", "0")), strict)


def _label_exists(label: str, txn_id: int) -> LoadFailed:
    return LoadFailed(f"[LABEL_ALREADY_EXISTS]Label [{label}] has already been used, relate to "
                      f"txn [{txn_id}]", status="Label Already Exists", existing="FINISHED")


def _label_used(label: str, e: LabelAlreadyUsed) -> LoadFailed:
    """LabelAlreadyUsed names the txn holding the label: `... relate to txn [<id>]`."""
    return _label_exists(label, int(e.detail.rsplit("[", 1)[1].rstrip("]")))


class BodyReader:
    """A blocking, file-like view of the request body for pyarrow (called from a worker
    thread): each read waits on the event loop for at most `n` bytes of the stream."""

    def __init__(self, request: web.Request, loop: asyncio.AbstractEventLoop) -> None:
        self._content = request.content
        self._loop = loop
        self.nbytes = 0
        self.wait_s = 0.0
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = READ_BLOCK
        start = time.perf_counter()
        out = bytearray()
        while len(out) < n:
            chunk = asyncio.run_coroutine_threadsafe(self._content.read(n - len(out)),
                                                     self._loop).result()
            if not chunk:
                break
            out += chunk
        self.wait_s += time.perf_counter() - start
        self.nbytes += len(out)
        return bytes(out)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


_ARROW_CASTS = {
    TypeKind.TINYINT: pa.int64(), TypeKind.SMALLINT: pa.int64(), TypeKind.INT: pa.int64(),
    TypeKind.BIGINT: pa.int64(), TypeKind.FLOAT: pa.float32(), TypeKind.DOUBLE: pa.float64(),
    TypeKind.DATE: pa.date32(), TypeKind.DATETIME: pa.timestamp("us"),
}


def _vector_convert(t: DataType, text: pa.Array) -> Column | None:
    """The whole column converted with Arrow casts, or None when some value needs the
    per-value path (a bad value, rounding, out of range, or a type cast here does not cover)."""
    k = t.kind
    try:
        if t.is_string:
            if k is not TypeKind.STRING and len(text) and \
                    (pc.max(pc.binary_length(text)).as_py() or 0) > t.length:
                return None
            return Column.from_arrow(t, text)
        if k in _ARROW_CASTS:
            arr = pc.cast(text, _ARROW_CASTS[k])
            if t.is_integer:
                lo, hi = t.int_range()
                mm = pc.min_max(arr)
                if mm["min"].as_py() is not None and (mm["min"].as_py() < lo or mm["max"].as_py() > hi):
                    return None
                arr = arr.cast(pa.from_numpy_dtype(t.numpy_dtype))
            if k is TypeKind.DATETIME:
                arr = arr.cast(pa.int64())
                if t.scale < 6:
                    unit = 10 ** (6 - t.scale)
                    arr = pc.multiply(pc.divide(arr, unit), unit)  # truncates (int division)
            if k is TypeKind.DATE:
                arr = arr.cast(pa.int32())
            return Column.from_arrow(t, arr)
        if k is TypeKind.DECIMAL and t.precision <= 18:
            arr = pc.cast(text, pa.decimal128(t.precision, t.scale))
            words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[2 * arr.offset::2][:len(arr)]
            valid = None
            if arr.null_count:
                valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
            return Column(t, np.where(valid, words, 0) if valid is not None else words.copy(), valid)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError):
        return None
    return None


def _convert(col: ColumnMeta, text: pa.Array, strict: bool,
             bad: np.ndarray, reasons: dict[int, str]) -> Column:
    """One file column -> the table column's type. Rows whose value does not convert are set in
    `bad` (strict mode) or become NULL (Doris' default); a NULL for a NOT NULL column is bad."""
    t = col.type
    column = _vector_convert(t, text)
    if column is None:
        values: list[object] = []
        for i, v in enumerate(text.to_pylist()):
            if v is None:
                values.append(None)
                continue
            try:
                values.append(t.to_physical(v))
            except (TypeError_, ValueError, ArithmeticError) as e:
                values.append(None)
                if (strict or t.is_string or not col.nullable) and not bad[i]:
                    bad[i] = True
                    reasons[i] = f"column `{col.name}` ({t.sql()}): {e}; value: {v}"
        column = Column.from_physical(t, values)
    if not col.nullable and column.validity is not None:
        for i in np.flatnonzero(~column.validity & ~bad).tolist():
            bad[i] = True
            reasons[i] = f"null value for not null column, column={col.name}"
    return column


def _to_batch(req: LoadRequest, rb: pa.RecordBatch, stats: LoadStats, now: _dt.datetime) -> Batch:
    """A parsed block -> the full-schema Batch of its good rows; bad rows counted as filtered."""
    n = rb.num_rows
    bad = np.zeros(n, dtype=np.bool_)
    reasons: dict[int, str] = {}
    converted = {c.name.lower(): _convert(c, rb.column(j), req.strict, bad, reasons)
                 for j, c in enumerate(req.targets)}
    for i in sorted(reasons):
        stats.filtered(f"Reason: {reasons[i]}. src line: [{_line(rb, i, req.separator)}]")
    cols = []
    for c in req.table.columns:
        col = converted.get(c.name.lower())
        cols.append(col if col is not None else Column.constant(c.type, default_value(c, now), n))
    batch = Batch(req.table.column_names, tuple(cols))
    return batch.filter(~bad) if bad.any() else batch


def _line(rb: pa.RecordBatch, i: int, sep: str) -> str:
    return sep.join("\\N" if v is None else str(v) for v in (c[i].as_py() for c in rb.columns))


def run_load(server: ShaleServer, req: LoadRequest, body: BodyReader) -> LoadStats:
    """Parse the body and load it in one transaction (runs on a worker thread)."""
    stats = LoadStats()
    t0 = time.perf_counter()
    engine = server.engine
    try:
        txn = begin(engine, req.db, req.table, req.label, None)
    except LabelAlreadyUsed as e:
        raise _label_used(req.label, e) from None
    except DorisError as e:
        raise LoadFailed(f"[ANALYSIS_ERROR]TStatus: {e.message}") from None
    stats.txn_id = txn.txn_id
    stats.begin_txn_ms = int((time.perf_counter() - t0) * 1000)
    ncols = len(req.targets)
    sep = req.separator

    def invalid_row(row: pacsv.InvalidRow) -> str:
        text = (row.text or "").rstrip("\r\n")
        fewer = row.actual_columns < row.expected_columns
        stats.skipped_rows += 1
        stats.filtered(
            f"Reason: actual column number in csv file is {'less' if fewer else 'more'} than "
            f"schema column number.actual number: {row.actual_columns}, column separator: "
            f"[{sep}], line delimiter: [\\n], schema column number: {ncols}; . src line "
            f"[{text}];")
        return "skip"

    names = [f"c{i}" for i in range(ncols)]
    read_opts = pacsv.ReadOptions(column_names=names, skip_rows=req.skip_rows,
                                  block_size=READ_BLOCK, use_threads=False)
    parse_opts = pacsv.ParseOptions(delimiter=sep, quote_char=False, escape_char=False,
                                    newlines_in_values=False, ignore_empty_lines=True,
                                    invalid_row_handler=invalid_row)
    conv_opts = pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                     null_values=["\\N"], strings_can_be_null=True)
    now = _dt.datetime.now()
    write_s = 0.0
    try:
        try:
            reader = pacsv.open_csv(body, read_options=read_opts, parse_options=parse_opts,
                                    convert_options=conv_opts)
        except pa.ArrowInvalid as e:
            if "Empty CSV file" not in str(e):
                raise
            reader = None
        while reader is not None:
            try:
                rb = reader.read_next_batch()
            except StopIteration:
                break
            w0 = time.perf_counter()
            batch = _to_batch(req, rb, stats, now)
            stats.total_rows += rb.num_rows
            if not batch.num_rows:
                continue
            part_idx, buckets = txn.route(batch)
            placed = part_idx >= 0
            if not placed.all():  # Doris filters a row no partition takes
                for i in np.flatnonzero(~placed).tolist():
                    values = ", ".join(f"{c}={batch.column(c).value_at(i)!r}"
                                       for c in req.table.partition_info.columns)
                    stats.filtered(f"Reason: no partition for this tuple. tuple=({values})")
                batch, part_idx, buckets = batch.filter(placed), part_idx[placed], buckets[placed]
            txn.add_batch(batch, (part_idx, buckets))
            stats.loaded_rows += batch.num_rows
            write_s += time.perf_counter() - w0
        stats.total_rows += stats.skipped_rows
        stats.load_bytes = body.nbytes
        stats.read_data_ms = int(body.wait_s * 1000)
        stats.write_data_ms = int(write_s * 1000)
        if stats.total_rows == 0:
            raise LoadFailed("[INTERNAL_ERROR]No valid data to load, please check your data "
                             "and the load parameters")
        if stats.filtered_rows > req.max_filter_ratio * stats.total_rows:
            raise LoadFailed("[DATA_QUALITY_ERROR]too many filtered rows")
        c0 = time.perf_counter()
        txn.commit()
        stats.commit_ms = int((time.perf_counter() - c0) * 1000)
        return stats
    except BaseException as e:
        txn.abort()
        if isinstance(e, LoadFailed):
            e.stats = stats  # type: ignore[attr-defined]
            raise
        if isinstance(e, pa.ArrowInvalid):
            failed = LoadFailed(f"[DATA_QUALITY_ERROR]{e}")
        elif isinstance(e, LabelAlreadyUsed):  # a concurrent load took the label first
            failed = _label_used(req.label, e)
        elif isinstance(e, Exception):  # a DorisError of the load, a broken upload, ...
            failed = LoadFailed(f"[INTERNAL_ERROR]{getattr(e, 'message', None) or e}")
        else:
            raise
        failed.stats = stats  # type: ignore[attr-defined]
        raise failed from None



def response_body(label: str, status: str, message: str, stats: LoadStats | None,
                  elapsed_ms: int, existing: str | None = None) -> dict[str, object]:
    """Doris' Stream Load result (StreamLoadContext::to_json), keys in its order."""
    s = stats or LoadStats()
    out: dict[str, object] = {"TxnId": s.txn_id, "Label": label, "Comment": "",
                              "TwoPhaseCommit": "false", "Status": status}
    if existing is not None:
        out["ExistingJobStatus"] = existing
    out.update({
        "Message": message,
        "NumberTotalRows": s.total_rows, "NumberLoadedRows": s.loaded_rows if status == "Success" else 0,
        "NumberFilteredRows": s.filtered_rows, "NumberUnselectedRows": 0,
        "LoadBytes": s.load_bytes, "LoadTimeMs": elapsed_ms,
        "BeginTxnTimeMs": s.begin_txn_ms, "StreamLoadPutTimeMs": 0,
        "ReadDataTimeMs": s.read_data_ms, "WriteDataTimeMs": s.write_data_ms,
        "CommitAndPublishTimeMs": s.commit_ms,
    })
    if s.first_errors:
        out["FirstErrorMsg"] = s.first_errors[0]
    return out


_REQUEST_KEY = "shaledb.stream_load"


def _failed_response(request: web.Request, e: LoadFailed, started: float,
                     label: str | None = None) -> web.Response:
    label = label or request.headers.get("label", "").strip()
    log.warning("stream load into %s.%s failed: label=%s status=%s: %s",
                request.match_info["db"], request.match_info["table"], label, e.status,
                e.message)
    body = response_body(label, e.status, e.message, getattr(e, "stats", None),
                         int((time.perf_counter() - started) * 1000), e.existing)
    return web.json_response(body, status=e.http_status, dumps=_dumps)


def _dumps(obj: object) -> str:
    return json.dumps(obj, indent=4)


def add_routes(app: web.Application, server: ShaleServer) -> None:
    """Register `PUT /api/{db}/{table}/_stream_load` with its 100-continue validation."""

    async def expect(request: web.Request) -> web.StreamResponse | None:
        """Runs before the middleware and the handler when the client sent `Expect`: answer
        `100 Continue` only for a request that passed validation."""
        started = time.perf_counter()
        if request.headers.get("Expect", "").lower() != "100-continue":
            raise web.HTTPExpectationFailed(text=f"Unknown Expect: {request.headers['Expect']}")
        try:
            request[_REQUEST_KEY] = validate(server, request)
        except LoadFailed as e:
            resp = _failed_response(request, e, started)
            resp.force_close()  # the body never comes: do not wait for it
            return resp
        except web.HTTPException as e:
            e.force_close()
            raise
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0
        return None

    async def stream_load(request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        req = None
        try:
            req = request.get(_REQUEST_KEY) or validate(server, request)
            body = BodyReader(request, asyncio.get_running_loop())
            stats = await asyncio.to_thread(run_load, server, req, body)
        except LoadFailed as e:
            return _failed_response(request, e, started, req.label if req else None)
        elapsed = int((time.perf_counter() - started) * 1000)
        log.info("stream load into %s.%s finished: label=%s txn=%d rows=%d filtered=%d "
                 "bytes=%d", req.db, req.table.name, req.label, stats.txn_id,
                 stats.loaded_rows, stats.filtered_rows, stats.load_bytes)
        return web.json_response(response_body(req.label, "Success", "OK", stats, elapsed),
                                 dumps=_dumps)

    app.router.add_put("/api/{db}/{table}/_stream_load", stream_load, expect_handler=expect)
