"""Stream Load over HTTP: `PUT /api/{db}/{table}/_stream_load` (Doris' StreamLoadAction).

This module owns the HTTP side; parsing and loading are executor/load/'s:

- validation before the upload: an `Expect: 100-continue` request is answered from
  `expect_handler` only once the credentials (server/privileges/http_auth.py), the table,
  LOAD_PRIV on it, the headers and the label were checked (executor/load/spec.py), so a wrong
  password, an unknown table or a used label fail before curl sends the body;
- the body is read by the worker thread through `BodyReader`, a blocking file-like bridge to
  the aiohttp request stream, a block at a time (never held whole in memory);
- the response is Doris' JSON (TxnId, Label, Status, Message, row counts, LoadBytes and the
  phase timings); a label already used is `Label Already Exists` with `ExistingJobStatus`.

Upstream: Doris `StreamLoadAction` (BE http/action/stream_load.cpp), `StreamLoadContext::to_json`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING

from aiohttp import web

from executor.load.job import run_load
from executor.load.sources import READ_BLOCK
from executor.load.spec import LoadFailed, LoadSpec, LoadStats, spec_from_properties
from server.privileges.http_auth import ACCESS_KEY, authenticate, require
from server.privileges.model import LOAD

if TYPE_CHECKING:
    from server.app import ShaleServer

log = logging.getLogger(__name__)


def validate(server: ShaleServer, request: web.Request) -> LoadSpec:
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
    return spec_from_properties(catalog, db_name, table, request.headers)


class BodyReader:
    """A blocking, file-like view of the request body for pyarrow (called from a worker
    thread): each read waits on the event loop for at most `n` bytes of the stream."""

    def __init__(self, request: web.Request, loop: asyncio.AbstractEventLoop) -> None:
        self._content = request.content
        self._loop = loop
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = READ_BLOCK
        out = bytearray()
        while len(out) < n:
            chunk = asyncio.run_coroutine_threadsafe(self._content.read(n - len(out)),
                                                     self._loop).result()
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


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
        "NumberFilteredRows": s.filtered_rows, "NumberUnselectedRows": s.unselected_rows,
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
    body = response_body(label, e.status, e.message, e.stats,
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
            stats = await asyncio.to_thread(run_load, server.engine, req, body)
        except LoadFailed as e:
            return _failed_response(request, e, started, req.label if req else None)
        elapsed = int((time.perf_counter() - started) * 1000)
        log.info("stream load into %s.%s finished: label=%s txn=%d rows=%d filtered=%d "
                 "bytes=%d", req.db, req.table.name, req.label, stats.txn_id,
                 stats.loaded_rows, stats.filtered_rows, stats.load_bytes)
        return web.json_response(response_body(req.label, "Success", "OK", stats, elapsed),
                                 dumps=_dumps)

    app.router.add_put("/api/{db}/{table}/_stream_load", stream_load, expect_handler=expect)
