"""Stream Load over HTTP: `PUT /api/{db}/{table}/_stream_load` (Doris' StreamLoadAction).

This module owns the HTTP side; parsing and loading are executor/load/'s:

- validation before the upload: an `Expect: 100-continue` request is answered from
  `expect_handler` only once the credentials (server/privileges/http_auth.py), the table,
  LOAD_PRIV on it, the headers and the label were checked (executor/load/spec.py), so a wrong
  password, an unknown table or a used label fail before curl sends the body;
- the body is read by the worker thread through `BodyReader`, a blocking file-like bridge to
  the aiohttp request stream that the event loop fills up to 16 MB ahead, so the client keeps
  sending while the load converts (never held whole in memory);
- the response is Doris' JSON (TxnId, Label, Status, Message, row counts, LoadBytes and the
  phase timings); a label already used is `Label Already Exists` with `ExistingJobStatus`
  (RUNNING while the label's load runs or waits for its two-phase commit, FINISHED once it is
  visible);
- the transaction headers (`two_phase_commit`, `timeout`, `exec_mem_limit`, `group_commit`,
  `timezone`: executor/load/txn_options.py); a two-phase load answers `TwoPhaseCommit: "true"`
  and waits PRECOMMITTED for `_stream_load_2pc` (server/load_status.py);
- filtered rows go to an error log whose `ErrorURL` the response carries
  (executor/load/error_log.py, served by server/load_status.py); every load is recorded for
  SHOW LOAD / SHOW STREAM LOAD / get_load_state / `/metrics` (executor/load/records.py).

Upstream: Doris `StreamLoadAction` (BE http/action/stream_load.cpp), `StreamLoadContext::to_json`.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import threading
import time
from typing import TYPE_CHECKING, BinaryIO, cast

from aiohttp import web

from executor.load import error_log
from executor.load.chunks import READ_BLOCK, ForwardStream
from executor.load.group_load import run_group_commit_load
from executor.load.job import run_load
from executor.load.records import (
    CANCELLED,
    FINISHED,
    LOADING,
    STREAM_LOAD,
    LoadRecordMeta,
    load_records,
    record_load,
)
from executor.load.spec import LoadFailed, LoadSpec, LoadStats, spec_from_properties
from executor.load.txn_options import TxnOptions, timeout_failure, txn_options
from server.privileges.http_auth import ACCESS_KEY, authenticate, require
from server.privileges.model import LOAD
from storage.catalog.meta import TxnStatus
from storage.errors import load_analysis_message

if TYPE_CHECKING:
    from server.services import HttpServices

log = logging.getLogger(__name__)


def validate(server: HttpServices, request: web.Request) -> LoadSpec:
    """Everything that can be checked before the body arrives. Raises an aiohttp HTTP error
    (401/403, from http_auth) or LoadFailed."""
    if ACCESS_KEY not in request:
        request[ACCESS_KEY] = authenticate(server.privileges, request)
    db_name, tbl_name = request.match_info["db"], request.match_info["table"]
    require(request, LOAD, db_name, tbl_name)
    catalog = server.engine.catalog
    if catalog.get_database(db_name) is None:
        raise LoadFailed(load_analysis_message(f"unknown database, database={db_name}"),
                         http_status=404)
    table = catalog.get_table(db_name, tbl_name)
    if table is None:
        raise LoadFailed(load_analysis_message(f"table not found, tableName={tbl_name}"),
                         http_status=404)
    conf = server.engine.compaction_config
    options = txn_options(request.headers, conf.stream_load_default_timeout_second)
    try:
        spec = spec_from_properties(catalog, db_name, table, request.headers)
    except LoadFailed as e:
        if e.status == "Label Already Exists":
            e.existing = existing_job_status(server, db_name, request.headers.get("label", ""))
        raise
    db = catalog.get_database(db_name)
    assert db is not None  # checked above
    running = server.engine.txns.label_holder(db.db_id, spec.label)
    if running is not None:
        raise LoadFailed(f"[LABEL_ALREADY_EXISTS]Label [{spec.label}] has already been used, "
                         f"relate to txn [{running}]", status="Label Already Exists",
                         existing="RUNNING")
    request[_OPTIONS_KEY] = options
    return spec


def existing_job_status(server: HttpServices, db_name: str, label: str) -> str:
    """Doris' ExistingJobStatus of a used label: FINISHED once visible, else RUNNING."""
    db = server.engine.catalog.get_database(db_name)
    txn = server.engine.catalog.txn_by_label(db.db_id, label.strip()) if db else None
    if txn is None or txn.status is TxnStatus.VISIBLE:
        return "FINISHED"
    return "RUNNING"


# How far the event loop reads a body ahead of the load thread. The load thread works on
# 64K-row batches (a few MB) at a time; with only aiohttp's 64 KiB stream buffer between them
# the client (a Spark task, curl) stalled on TCP back-pressure whenever the load thread was
# busy, so sending and loading took turns instead of overlapping (docs/performance.md).
PREFETCH_BYTES = 16 << 20


class BodyReader(ForwardStream):
    """A blocking, file-like view of the request body for pyarrow (called from a worker
    thread), filled ahead by a task on the event loop (`start`, on the loop): the task reads
    the body into a buffer of up to PREFETCH_BYTES while the load thread converts what it
    has; `read(n)` waits (at most the load's remaining timeout) for `n` bytes or the end.
    An error reading the body (a cut upload) is raised by the `read` that reaches it."""

    def __init__(self, request: web.Request, loop: asyncio.AbstractEventLoop,
                 options: TxnOptions | None = None) -> None:
        self._content = request.content
        self._loop = loop
        self._options = options
        self._cond = threading.Condition()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._head = 0  # bytes of _chunks[0] already read
        self._buffered = 0
        self._eof = False
        self._error: BaseException | None = None
        self._paused = False  # the pump waits for room (set under _cond)
        self._room: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start reading ahead (on the event loop's thread)."""
        self._room = asyncio.Event()
        self._room.set()
        self._task = asyncio.ensure_future(self._pump())

    def stop(self) -> None:
        """Stop reading ahead (on the event loop's thread, once the load is over)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _pump(self) -> None:
        assert self._room is not None
        try:
            while True:
                await self._room.wait()
                chunk = await self._content.readany()
                with self._cond:
                    if chunk:
                        self._chunks.append(chunk)
                        self._buffered += len(chunk)
                        if self._buffered >= PREFETCH_BYTES:
                            self._paused = True
                            self._room.clear()
                    else:
                        self._eof = True
                    self._cond.notify_all()
                if not chunk:
                    return
        except asyncio.CancelledError:
            with self._cond:
                self._error = ConnectionResetError("the load stopped reading its body")
                self._cond.notify_all()
            raise
        # any failure reading the body (a cut upload, a bad chunk) is the load's to report:
        # the load thread would otherwise wait for bytes until its timeout
        except Exception as e:  # noqa: BLE001
            with self._cond:
                self._error = e
                self._cond.notify_all()

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = READ_BLOCK
        parts: list[bytes | memoryview] = []
        want = n
        with self._cond:
            while want > 0:
                while not self._chunks and not self._eof and self._error is None:
                    # a body that stalls past the load's timeout fails the load
                    timeout = self._options.remaining() if self._options else None
                    if not self._cond.wait(timeout) and not self._chunks:
                        assert self._options is not None
                        raise timeout_failure(self._options)
                if not self._chunks:
                    if self._error is not None and not self._eof:
                        raise self._error
                    break  # the end of the body
                # the head chunk is consumed in place (`_head` bytes of it are read): slicing
                # off its rest would copy it once per read, on top of the join below
                chunk, head = self._chunks[0], self._head
                if len(chunk) - head > want:
                    parts.append(memoryview(chunk)[head:head + want])
                    self._head += want
                    taken = want
                else:
                    self._chunks.popleft()
                    self._head = 0
                    parts.append(memoryview(chunk)[head:] if head else chunk)
                    taken = len(chunk) - head
                want -= taken
                self._buffered -= taken
            if self._paused and self._buffered < PREFETCH_BYTES // 2:
                self._paused = False
                assert self._room is not None
                self._loop.call_soon_threadsafe(self._room.set)
        if len(parts) == 1 and isinstance(parts[0], bytes):
            return parts[0]  # a whole received chunk: no copy
        return b"".join(parts)  # one copy, also of a part of a chunk


def response_body(label: str, status: str, message: str, stats: LoadStats | None,
                  elapsed_ms: int, existing: str | None = None, two_phase: bool = False,
                  error_url: str = "", comment: str = "") -> dict[str, object]:
    """Doris' Stream Load result (StreamLoadContext::to_json), keys in its order."""
    s = stats or LoadStats()
    out: dict[str, object] = {"TxnId": s.txn_id, "Label": label, "Comment": comment,
                              "TwoPhaseCommit": "true" if two_phase else "false",
                              "Status": status}
    if existing is not None:
        out["ExistingJobStatus"] = existing
    out.update({
        "Message": message,
        "NumberTotalRows": s.total_rows,
        "NumberLoadedRows": s.loaded_rows if status == "Success" else 0,
        "NumberFilteredRows": s.filtered_rows, "NumberUnselectedRows": s.unselected_rows,
        "LoadBytes": s.load_bytes, "LoadTimeMs": elapsed_ms,
        "BeginTxnTimeMs": s.begin_txn_ms, "StreamLoadPutTimeMs": 0,
        "ReadDataTimeMs": s.read_data_ms, "WriteDataTimeMs": s.write_data_ms,
        "CommitAndPublishTimeMs": s.commit_ms,
    })
    if s.first_errors:
        out["FirstErrorMsg"] = s.first_errors[0]
    if error_url:
        out["ErrorURL"] = error_url
    return out


_REQUEST_KEY = "shaledb.stream_load"
_OPTIONS_KEY = "shaledb.stream_load.options"


def _error_url(server: HttpServices, request: web.Request, label: str,
               stats: LoadStats | None) -> str:
    """Write the filtered rows' error log; its URL on our HTTP port (or "" if none)."""
    if stats is None or not stats.error_rows:
        return ""
    name = error_log.write_error_log(server.engine.data_dir, label, stats.txn_id,
                                     stats.error_rows)
    return f"http://{request.host}/api/_load_error_log?file={name}"


def _record(server: HttpServices, request: web.Request, label: str, state: str, status: str,
            message: str, stats: LoadStats | None, error_url: str, started_wall: float,
            options: TxnOptions | None) -> None:
    s = stats or LoadStats()
    access = request.get(ACCESS_KEY)
    record_load(server.engine, LoadRecordMeta(
        label=label, db=request.match_info["db"], table=request.match_info["table"],
        load_type=STREAM_LOAD, state=state, status=status, message=message, txn_id=s.txn_id,
        total_rows=s.total_rows, loaded_rows=s.loaded_rows if state != CANCELLED else 0,
        filtered_rows=s.filtered_rows, unselected_rows=s.unselected_rows,
        load_bytes=s.load_bytes, error_url=error_url,
        user=access.identity.name if access is not None else "",
        client_ip=request.remote or "", comment=request.headers.get("comment", ""),
        timeout_s=options.timeout_s if options else 0, start_time=started_wall,
        max_filter_ratio=_header_ratio(request),
    ))


def _header_ratio(request: web.Request) -> float:
    """The load's max_filter_ratio for SHOW LOAD (validated already when the load ran)."""
    try:
        return float(request.headers.get("max_filter_ratio", "0"))
    except ValueError:
        return 0.0


def _failed_response(server: HttpServices, request: web.Request, e: LoadFailed, started: float,
                     label: str | None = None, started_wall: float | None = None
                     ) -> web.Response:
    label = label or request.headers.get("label", "").strip()
    log.warning("stream load into %s.%s failed: label=%s status=%s: %s",
                request.match_info["db"], request.match_info["table"], label, e.status,
                e.message)
    error_url = _error_url(server, request, label, e.stats)
    options = request.get(_OPTIONS_KEY)
    if e.status != "Label Already Exists":
        _record(server, request, label, CANCELLED, e.status, e.message, e.stats, error_url,
                started_wall or time.time(), options)
    else:  # a refused retry starts no job of its own (Doris): counted, not listed
        load_records(server.engine).count_refused_stream_load()
    body = response_body(label, e.status, e.message, e.stats,
                         int((time.perf_counter() - started) * 1000), e.existing,
                         two_phase=bool(options and options.two_phase), error_url=error_url)
    return web.json_response(body, status=e.http_status, dumps=_dumps)


def _dumps(obj: object) -> str:
    return json.dumps(obj, indent=4)


def add_routes(app: web.Application, server: HttpServices) -> None:
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
            resp = _failed_response(server, request, e, started)
            resp.force_close()  # the body never comes: do not wait for it
            return resp
        except web.HTTPException as e:
            e.force_close()
            raise
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0
        return None

    async def stream_load(request: web.Request) -> web.StreamResponse:
        started, started_wall = time.perf_counter(), time.time()
        req = None
        try:
            req = request.get(_REQUEST_KEY) or validate(server, request)
            options: TxnOptions = request[_OPTIONS_KEY]
            # run_load declares typing.BinaryIO; BodyReader has the read surface pyarrow uses
            # (executor/load/chunks.py ForwardStream), which is all the loaders call
            reader = BodyReader(request, asyncio.get_running_loop(), options)
            body = cast(BinaryIO, reader)
            reader.start()
            try:
                if options.group_commit != "off_mode":
                    stats, group_label = await asyncio.to_thread(
                        run_group_commit_load, server.engine, req, body, options)
                    req.label = group_label or req.label
                else:
                    stats = await asyncio.to_thread(run_load, server.engine, req, body, options)
            finally:
                reader.stop()
        except LoadFailed as e:
            return _failed_response(server, request, e, started, req.label if req else None,
                                    started_wall)
        elapsed = int((time.perf_counter() - started) * 1000)
        log.info("stream load into %s.%s %s: label=%s txn=%d rows=%d filtered=%d "
                 "bytes=%d", req.db, req.table.name,
                 "precommitted" if options.two_phase else "finished", req.label, stats.txn_id,
                 stats.loaded_rows, stats.filtered_rows, stats.load_bytes)
        error_url = _error_url(server, request, req.label, stats)
        _record(server, request, req.label, LOADING if options.two_phase else FINISHED,
                "Success", "OK", stats, error_url, started_wall, options)
        out = response_body(req.label, "Success", "OK", stats, elapsed,
                            two_phase=options.two_phase, error_url=error_url,
                            comment=request.headers.get("comment", ""))
        if options.group_commit != "off_mode":
            out = {"TxnId": out.pop("TxnId"), "Label": out.pop("Label"), "GroupCommit": True,
                   **out}  # Doris' group commit answer names the shared label and txn
        return web.json_response(out, dumps=_dumps)

    app.router.add_put("/api/{db}/{table}/_stream_load", stream_load, expect_handler=expect)
