"""The transaction and status side of loads on the HTTP port, and the SHOW statements for loads.

HTTP (Doris' paths and bodies):
- `PUT /api/{db}[/{table}]/_stream_load_2pc` with `txn_id: N` or `label: L` and
  `txn_operation: commit|abort`: phase two of a two-phase Stream Load (storage/txn.py
  `commit_precommitted` / `abort_precommitted`); `{"status": "Success", "msg": "transaction
  [N] commit successfully."}` (or `label [L] ...`), else `{"status": "<CODE>", "msg": ..}`.
  ShaleDB's extension: `txn_id: 1,2,3` commits several precommitted loads of one table as one
  visible version (all or none; shaledb_spark's driver commits its tasks' loads so), or aborts
  each of them.
- `GET /api/{db}/get_load_state?label=L`: `{"msg": "success", "code": 0, "data": "<state>",
  "count": 0}` with state UNKNOWN / PREPARE / PRECOMMITTED / COMMITTED / VISIBLE / ABORTED.
- `GET /api/_load_error_log?file=..`: a load's error log (its ErrorURL), text/plain.
A background task aborts two-phase loads left PRECOMMITTED past their timeout and deletes
error logs past `load_error_log_reserve_hours`.

SQL: `SHOW LOAD`, `SHOW STREAM LOAD` and `SHOW TRANSACTION` (`show_load_statement`), built from
the load records (executor/load/records.py) and the catalog's txn records, with Doris' columns.
Upstream: Doris BE `StreamLoad2PCAction`, FE `LoadAction`/`GetLoadInfoAction`,
`ShowLoadStmt`, `ShowStreamLoadStmt`, `ShowTransactionStmt`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from executor.load import error_log
from executor.load.records import (
    CANCELLED,
    FINISHED,
    STREAM_LOAD,
    LoadRecordMeta,
    load_records,
    state_of_label,
)
from server.privileges.http_auth import require
from server.privileges.model import LOAD
from storage.catalog.meta import TxnMeta, TxnStatus
from storage.errors import DorisError, analysis_message
from storage.two_phase import (
    abort_expired,
    abort_precommitted,
    commit_precommitted,
    commit_precommitted_many,
    find_txn,
)

if TYPE_CHECKING:
    from server.services import HttpServices

log = logging.getLogger(__name__)

# How often the background task looks for expired precommitted loads and old error logs.
SWEEP_INTERVAL_S = 60.0


def _dumps(obj: object) -> str:
    return json.dumps(obj, indent=4)


def _two_pc_fail(code: str, msg: str) -> web.Response:
    return web.json_response({"status": code, "msg": msg}, dumps=_dumps)


def two_phase_operation(server: HttpServices, db_name: str, txn_id_text: str, label: str,
                        operation: str) -> dict[str, str]:
    """Commit or abort a precommitted load (blocking). Returns Doris' JSON body."""
    if not txn_id_text and not label:
        return {"status": "INTERNAL_ERROR", "msg": "txn_id and label are both empty"}
    if txn_id_text and label:
        return {"status": "INTERNAL_ERROR",
                "msg": "label and txn_id can not be specified at the same time"}
    if operation not in ("commit", "abort"):
        return {"status": "INTERNAL_ERROR",
                "msg": "transaction operation should be 'commit' or 'abort'"}
    if "," in txn_id_text:  # ShaleDB's extension: several txns as one version
        return _two_phase_many(server, db_name, txn_id_text, operation)
    txn_id: int | None = None
    if txn_id_text:
        try:
            txn_id = int(txn_id_text)
        except ValueError:
            return {"status": "INVALID_ARGUMENT", "msg": f"Invalid txn_id: {txn_id_text}"}
    engine = server.engine
    db = engine.catalog.get_database(db_name)
    if db is None:
        return {"status": "ANALYSIS_ERROR",
                "msg": analysis_message(f"unknown database, database={db_name}")}
    try:
        txn = find_txn(engine, db, txn_id, label or None)
        if operation == "commit":
            done = commit_precommitted(engine, txn)
        else:
            done = abort_precommitted(engine, txn, "user abort")
    except DorisError as e:  # TxnNotFound included
        return {"status": "ANALYSIS_ERROR", "msg": e.message}
    load_records(engine).update_state(
        db_name, done.label, FINISHED if operation == "commit" else CANCELLED,
        None if operation == "commit" else f"transaction [{done.txn_id}] aborted: user abort")
    what = f"transaction [{txn_id}]" if txn_id is not None else f"label [{label}]"
    log.info("two-phase load %s %s: txn=%d label=%s", what, operation, done.txn_id, done.label)
    return {"status": "Success", "msg": f"{what} {operation} successfully."}


def _two_phase_many(server: HttpServices, db_name: str, txn_ids_text: str, operation: str
                    ) -> dict[str, str]:
    """`txn_id: 1,2,3` (ShaleDB's extension, used by shaledb_spark's driver): commit all of
    them in one catalog transaction, visible together as one version
    (storage/two_phase.py `commit_precommitted_many`), or abort each of them."""
    try:
        txn_ids = [int(x) for x in txn_ids_text.split(",")]
    except ValueError:
        return {"status": "INVALID_ARGUMENT", "msg": f"Invalid txn_id: {txn_ids_text}"}
    engine = server.engine
    db = engine.catalog.get_database(db_name)
    if db is None:
        return {"status": "ANALYSIS_ERROR",
                "msg": f"errCode = 2, detailMessage = unknown database, database={db_name}"}
    try:
        txns = [find_txn(engine, db, txn_id) for txn_id in txn_ids]
        if operation == "commit":
            done = commit_precommitted_many(engine, txns)
        else:
            done = [abort_precommitted(engine, t, "user abort") for t in txns]
    except DorisError as e:
        return {"status": "ANALYSIS_ERROR", "msg": f"errCode = 2, detailMessage = {e.detail}"}
    for t in done:
        load_records(engine).update_state(
            db_name, t.label, FINISHED if operation == "commit" else CANCELLED,
            None if operation == "commit" else f"transaction [{t.txn_id}] aborted: user abort")
    log.info("two-phase load transactions [%s] %s", txn_ids_text, operation)
    return {"status": "Success", "msg": f"transaction [{txn_ids_text}] {operation} successfully."}


def sweep(server: HttpServices) -> None:
    """Abort precommitted loads past their timeout; delete old error logs (blocking)."""
    conf = server.engine.compaction_config
    for txn in abort_expired(server.engine, conf.stream_load_default_precommit_timeout_second):
        db = server.engine.catalog.database_by_id(txn.db_id)
        log.warning("two-phase load txn=%d label=%s aborted: not committed within its "
                    "timeout", txn.txn_id, txn.label)
        if db is not None:
            load_records(server.engine).update_state(
                db.name, txn.label, CANCELLED,
                f"transaction [{txn.txn_id}] aborted: timeout by txn manager")
    error_log.clean_error_logs(server.engine.data_dir, conf.load_error_log_reserve_hours)


def add_routes(app: web.Application, server: HttpServices) -> None:
    async def stream_load_2pc(request: web.Request) -> web.StreamResponse:
        db_name = request.match_info["db"]
        require(request, LOAD, db_name, request.match_info.get("table"))
        h = request.headers
        body = await asyncio.to_thread(
            two_phase_operation, server, db_name, h.get("txn_id", "").strip(),
            h.get("label", "").strip(), h.get("txn_operation", "").strip().lower())
        return web.json_response(body, dumps=_dumps)

    async def get_load_state(request: web.Request) -> web.StreamResponse:
        db_name = request.match_info["db"]
        require(request, LOAD, db_name)
        label = request.query.get("label", "").strip()
        if not label:
            return web.json_response({"msg": "No label selected", "code": 1, "data": None,
                                      "count": 0}, status=400)
        if server.engine.catalog.get_database(db_name) is None:
            return web.json_response({"msg": f"unknown database, database={db_name}",
                                      "code": 1, "data": None, "count": 0}, status=404)
        state = state_of_label(server.engine, db_name, label)
        return web.json_response({"msg": "success", "code": 0, "data": state, "count": 0})

    async def load_error_log(request: web.Request) -> web.StreamResponse:
        path = error_log.error_log_path(server.engine.data_dir, request.query.get("file", ""))
        if path is None:
            return web.Response(status=404, text="error log not found\n")
        return web.FileResponse(path, headers={"Content-Type": "text/plain; charset=utf-8"})

    async def sweeper(app: web.Application) -> Any:
        async def loop() -> None:
            while True:
                try:
                    await asyncio.to_thread(sweep, server)
                except Exception:  # never let one failed sweep end the loop
                    log.exception("load sweep failed")
                # a precommit timeout shorter than the interval is still honoured promptly
                conf = server.engine.compaction_config
                await asyncio.sleep(min(SWEEP_INTERVAL_S, max(
                    1.0, conf.stream_load_default_precommit_timeout_second / 2)))

        task = asyncio.create_task(loop())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.router.add_put("/api/{db}/_stream_load_2pc", stream_load_2pc)
    app.router.add_put("/api/{db}/{table}/_stream_load_2pc", stream_load_2pc)
    app.router.add_get("/api/{db}/get_load_state", get_load_state)
    app.router.add_get("/api/_load_error_log", load_error_log)
    app.cleanup_ctx.append(sweeper)


# ---- SHOW LOAD / SHOW STREAM LOAD / SHOW TRANSACTION ------------------------------------------

SHOW_LOAD_COLUMNS = [
    "JobId", "Label", "State", "Progress", "Type", "EtlInfo", "TaskInfo", "ErrorMsg",
    "CreateTime", "EtlStartTime", "EtlFinishTime", "LoadStartTime", "LoadFinishTime", "URL",
    "JobDetails", "TransactionId", "ErrorTablets", "User", "Comment",
]
SHOW_STREAM_LOAD_COLUMNS = [
    "Label", "Db", "Table", "ClientIp", "Status", "Message", "Url", "TotalRows", "LoadedRows",
    "FilteredRows", "UnselectedRows", "LoadBytes", "StartTime", "FinishTime", "User", "Comment",
]
SHOW_TRANSACTION_COLUMNS = [
    "TransactionId", "Label", "Coordinator", "TransactionStatus", "LoadJobSourceType",
    "PrepareTime", "PreCommitTime", "CommitTime", "PublishTime", "FinishTime", "Reason",
    "ErrorReplicasCount", "ListenerId", "TimeoutMs", "ErrMsg",
]


def _time(ts: float) -> str:
    if not ts:
        return "NULL"
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _load_row(r: LoadRecordMeta) -> tuple[object, ...]:
    done = r.state in (FINISHED, CANCELLED)
    progress = "100.00% (1/1)" if done else "0.00% (0/1)"
    etl = (f"unselected.rows={r.unselected_rows}; dpp.abnorm.ALL={r.filtered_rows}; "
           f"dpp.norm.ALL={r.loaded_rows}")
    task = (f"cluster:N/A; timeout(s):{r.timeout_s}; max_filter_ratio:{r.max_filter_ratio}; "
            "priority:NORMAL")
    err = "" if r.state != CANCELLED else f"type:LOAD_RUN_FAIL; msg:{r.message}"
    details = json.dumps({"Unfinished backends": {}, "ScannedRows": r.total_rows,
                          "TaskNumber": 1, "LoadBytes": r.load_bytes, "All backends": {},
                          "FileNumber": 1, "FileSize": r.load_bytes})
    return (r.job_id, r.label, r.state, progress, r.load_type, etl, task, err or "NULL",
            _time(r.start_time), _time(r.start_time), _time(r.start_time), _time(r.start_time),
            _time(r.finish_time) if done else "NULL", r.error_url or "NULL", details, r.txn_id,
            "{}", r.user, r.comment)


def _stream_load_row(r: LoadRecordMeta) -> tuple[object, ...]:
    return (r.label, r.db, r.table, r.client_ip, r.status, r.message, r.error_url or "N/A",
            r.total_rows, r.loaded_rows, r.filtered_rows, r.unselected_rows, r.load_bytes,
            _time(r.start_time), _time(r.finish_time), r.user, r.comment)


def _txn_row(t: TxnMeta) -> tuple[object, ...]:
    committed = t.status is TxnStatus.VISIBLE
    return (t.txn_id, t.label, "FE: 127.0.0.1", t.status.value, t.source_type or "FRONTEND",
            _time(t.create_time), _time(t.precommit_time),
            _time(t.finish_time) if committed else "NULL",
            _time(t.finish_time) if committed else "NULL", _time(t.finish_time),
            t.reason, 0, -1, t.timeout_ms, "")


def _aborted_row(r: LoadRecordMeta) -> tuple[object, ...]:
    return (r.txn_id, r.label, "FE: 127.0.0.1", TxnStatus.ABORTED.value,
            "BACKEND_STREAMING" if r.load_type == STREAM_LOAD else "FRONTEND",
            _time(r.start_time), "NULL", "NULL", "NULL", _time(r.finish_time), r.message, 0,
            -1, r.timeout_s * 1000, "")


def _where_terms(where: Any) -> list[tuple[str, str, object]]:
    """WHERE as (column, op, value) terms joined by AND: `=` or LIKE (Doris allows only
    these on LABEL / STATE / ID)."""
    from sqlglot import exp

    if where is None:
        return []
    node = where.this
    parts = list(node.flatten()) if isinstance(node, exp.And) else [node]
    terms = []
    for p in parts:
        if not isinstance(p, (exp.EQ, exp.Like)) or not isinstance(p.this, exp.Column) \
                or not isinstance(p.expression, exp.Literal):
            raise DorisError("Where clause should looks like: LABEL = \"your_load_label\", or "
                             "LABEL LIKE \"matcher\",  or STATE = \"PENDING|ETL|LOADING|"
                             "FINISHED|CANCELLED\", or compound predicate with operator AND")
        value: object = p.expression.this
        if not p.expression.is_string:
            value = int(p.expression.this)
        terms.append((p.this.name.lower(), "like" if isinstance(p, exp.Like) else "=", value))
    return terms


def _matches(value: object, op: str, want: object) -> bool:
    if op == "=":
        return str(value).lower() == str(want).lower() if isinstance(want, str) else value == want
    import fnmatch

    pattern = str(want).replace("%", "*").replace("_", "?")
    return fnmatch.fnmatchcase(str(value), pattern)


def _sort_key(i: int) -> Callable[[tuple[object, ...]], tuple[int, object]]:
    """Numbers sort as numbers, everything else as text."""
    def key(row: tuple[object, ...]) -> tuple[int, object]:
        v = row[i]
        return (0, v) if isinstance(v, (int, float)) else (1, str(v))
    return key


def _order_and_limit(names: list[str], rows: list[tuple[object, ...]], stmt: Any
                     ) -> list[tuple[object, ...]]:
    order = stmt.meta.get("order")
    if order is not None:
        lower = [n.lower() for n in names]
        for o in reversed(order.expressions):
            col = o.this.name.lower() if hasattr(o.this, "name") else ""
            if col not in lower:
                raise DorisError(f"Title name[{o.this.name}] does not exist")
            rows.sort(key=_sort_key(lower.index(col)), reverse=bool(o.args.get("desc")))
    offset = stmt.args.get("offset")
    limit = stmt.args.get("limit")
    start = int(offset.this) if offset is not None else 0
    if limit is not None:
        return rows[start:start + int(limit.this)]
    return rows[start:]


def show_load_statement(server_engine: Any, kind: str, db: str, stmt: Any,
                        may_see: Callable[[str, str], bool] | None = None,
                        ) -> tuple[list[str], list[tuple[object, ...]]]:
    """SHOW LOAD / STREAM LOAD / TRANSACTION of database `db` (it must exist).
    `may_see(db, table)` hides loads of tables the user cannot see."""
    terms = _where_terms(stmt.args.get("where"))
    if kind == "TRANSACTION":
        catalog = server_engine.catalog
        database = catalog.get_database(db)
        if not terms or terms[0][0] not in ("label", "id") or len(terms) > 1 \
                or terms[0][1] != "=":
            raise DorisError("Where clause should looks like one of them: id = 123 or "
                             "label = 'label'")
        col, _, value = terms[0]
        if col == "id":
            t = catalog.txn_by_id(int(str(value)))
            txns = [t] if t is not None and t.db_id == database.db_id else []
        else:
            txns = catalog.txns_by_label(database.db_id, str(value))[-1:]
        if txns:
            return SHOW_TRANSACTION_COLUMNS, [_txn_row(t) for t in txns]
        # a load that failed before its publish left no catalog record: its load record
        # still tells its txn, ABORTED (until a restart)
        failed = [r for r in load_records(server_engine).list(db)
                  if r.txn_id >= 0 and r.state == CANCELLED
                  and (r.txn_id == value if col == "id" else r.label == value)][-1:]
        if not failed:
            raise DorisError(f"transaction with {'id' if col == 'id' else 'label'} "
                             f"{value} does not exist")
        return SHOW_TRANSACTION_COLUMNS, [_aborted_row(r) for r in failed]
    records = load_records(server_engine).list(db)
    if kind == "STREAM LOAD":
        records = [r for r in records if r.load_type == STREAM_LOAD]
    if may_see is not None:
        records = [r for r in records if may_see(r.db, r.table)]
    for col, op, value in terms:
        if col == "label":
            records = [r for r in records if _matches(r.label, op, value)]
        elif col == "state" and kind == "LOAD":
            records = [r for r in records if _matches(r.state, op, value)]
        elif col == "status" and kind == "STREAM LOAD":
            records = [r for r in records if _matches(r.status, op, value)]
        else:
            raise DorisError("Where clause should looks like: LABEL = \"your_load_label\", "
                             "or LABEL LIKE \"matcher\",  or STATE = \"PENDING|ETL|LOADING|"
                             "FINISHED|CANCELLED\", or compound predicate with operator AND")
    if kind == "LOAD":
        names, rows = SHOW_LOAD_COLUMNS, [_load_row(r) for r in records]
    else:
        names, rows = SHOW_STREAM_LOAD_COLUMNS, [_stream_load_row(r) for r in records]
    return names, _order_and_limit(names, rows, stmt)


# ---- /metrics ---------------------------------------------------------------------------------

def metric_families(engine: Any) -> Any:
    """Load figures for `/metrics` (server/metrics.py), Doris' names where Doris has them:
    doris_fe_txn_counter{type=begin|success|failed}, doris_be_load_rows / _bytes,
    doris_be_stream_load{type=load_rows|receive_bytes}, doris_be_stream_load_txn_request,
    doris_fe_job{job=load,type=..}; the Stream Load request and failure counts are ShaleDB's."""
    from prometheus_client.core import Metric

    c = load_records(engine).counters

    def exact(name: str, doc: str, samples: list[tuple[dict[str, str], float]]) -> Metric:
        family = Metric(name, doc, "counter")  # Doris' names carry no `_total`
        for labels, value in samples:
            family.add_sample(name, labels, value)
        return family

    yield exact("doris_fe_txn_counter", "Load transactions since start, by outcome.",
                [({"type": "begin"}, c.txn_begin), ({"type": "success"}, c.txn_success),
                 ({"type": "failed"}, c.txn_failed)])
    yield exact("doris_be_load_rows", "Rows loaded (visible) since start.",
                [({}, c.load_rows)])
    yield exact("doris_be_load_bytes", "Bytes of loads that became visible since start.",
                [({}, c.load_bytes)])
    yield exact("doris_be_stream_load", "Stream Load rows loaded and bytes received.",
                [({"type": "load_rows"}, c.stream_load_rows),
                 ({"type": "receive_bytes"}, c.stream_load_bytes)])
    yield exact("doris_be_stream_load_txn_request", "Stream Load transaction requests.",
                [({"type": "begin"}, c.stream_load_requests),
                 ({"type": "commit"}, c.stream_load_requests - c.stream_load_failed),
                 ({"type": "rollback"}, c.stream_load_failed)])
    yield exact("shaledb_stream_load_requests", "Stream Load requests answered since start.",
                [({}, c.stream_load_requests)])
    yield exact("shaledb_stream_load_failed", "Stream Load requests that failed since start.",
                [({}, c.stream_load_failed)])
    jobs = Metric("doris_fe_job", "Loads recorded since start, by type.", "gauge")
    for load_type, n in sorted(c.loads_by_type.items()):
        jobs.add_sample("doris_fe_job", {"job": "load", "type": load_type}, n)
    yield jobs
