"""Doris' BE compaction HTTP actions, served on ShaleDB's HTTP port, and the compaction metrics.

Mirrors `be/src/http/action/compaction_action.cpp` (Doris 2.1 with full-compaction run status):
- `GET  /api/compaction/show?tablet_id=N`: the tablet's compaction status JSON
  (`CompactionManager.status`: cumulative point, rowsets as `[0-5] 3 DATA NONOVERLAPPING <id>
  1.05 MB`, stale rowsets, ...).
- `POST /api/compaction/run?tablet_id=N&compact_type=base|cumulative|full` starts one
  compaction; `?table_id=T` starts a full compaction on every tablet of a table (the
  compact_type must still be valid, as in Doris). Doris runs the task and waits up to 2 s for
  it, answering its error if it failed within that time; so does ShaleDB.
- `GET  /api/compaction/run_status?tablet_id=N`: whether the tablet is compacting; without
  tablet_id, the compacting tablets of each data dir (backend storage root) per kind.
Errors are Doris' `Status::to_json()`: `{"status": "<code>", "msg": "<text>"}` with HTTP 200,
`<code>` being the TStatusCode name (NOT_FOUND, INTERNAL_ERROR, NOT_IMPLEMENTED_ERROR, ...) or
`E<n>` for a storage error (E-2000 CUMULATIVE_NO_SUITABLE_VERSION, E-808
BE_NO_SUITABLE_VERSION, E-2008 FULL_NO_SUITABLE_VERSION, E-216 TRY_LOCK_FAILED). JSON is
indented by 4 as rapidjson's PrettyWriter does.

`Actions` holds the request logic as plain methods over query parameters (testable without
HTTP); they read the catalog, so the handlers run them off the event loop.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from server.privileges.http_auth import requires
from server.privileges.model import ADMIN
from storage.compaction.scheduler import (
    BASE,
    CUMULATIVE,
    FULL,
    KINDS,
    NO_SUITABLE,
    NOT_FOUND,
    RUNNING,
)

if TYPE_CHECKING:
    from storage.catalog.meta import TabletMeta
    from storage.engine import StorageEngine

# Doris waits this long for a manual compaction it started before answering.
RUN_WAIT_SECONDS = 2.0
_NO_SUITABLE_CODE = {CUMULATIVE: "E-2000", BASE: "E-808", FULL: "E-2008"}
# The try-lock message each Doris compaction gives when the tablet is already compacting.
_LOCKED_MSG = {
    CUMULATIVE: "The tablet is under cumulative compaction. tablet={}",
    BASE: "another base compaction is running. tablet={}",
    FULL: "The tablet is under full compaction. tablet={}",
}
_DIGITS = re.compile(r"\s*([+-]?\d+)")

Json = dict[str, Any]


class ParamError(Exception):
    """A query parameter std::stoull would reject."""


def _fail(code: str, msg: str) -> Json:
    return {"status": code, "msg": msg}


def _stoull(text: str, name: str) -> int:
    """std::stoull as Doris applies it: leading digits parse ("12x" is 12), a negative number
    wraps around, anything else fails with `convert <name> failed, stoull`."""
    m = _DIGITS.match(text)
    if m is None or int(m.group(1)) >= 1 << 64:
        raise ParamError(f"convert {name} failed, stoull")
    return int(m.group(1)) % (1 << 64)


def _tablet_param(params: Mapping[str, str]) -> int | Json:
    """`tablet_id` (0 when absent), or the error answer for a value stoull rejects."""
    try:
        return _stoull(params["tablet_id"], "tablet_id") if params.get("tablet_id") else 0
    except ParamError as e:
        return _fail("INTERNAL_ERROR", str(e))


class Actions:
    """The three compaction actions over one storage engine."""

    def __init__(self, engine: StorageEngine) -> None:
        self.engine = engine
        self.manager = engine.compaction

    # ---- /api/compaction/show ---------------------------------------------------------------
    def show(self, params: Mapping[str, str]) -> Json:
        tablet_id = _tablet_param(params)
        if isinstance(tablet_id, dict):
            return tablet_id
        if tablet_id == 0:
            return _fail("INTERNAL_ERROR", "check param failed: missing tablet_id")
        status = self.manager.status(tablet_id)
        if status is None:
            return _fail("NOT_FOUND", f"Tablet not found. tablet_id={tablet_id}")
        return status

    # ---- /api/compaction/run ----------------------------------------------------------------
    def run(self, params: Mapping[str, str]) -> Json:
        tablet_text, table_text = params.get("tablet_id", ""), params.get("table_id", "")
        if not tablet_text and not table_text:
            return _fail("INTERNAL_ERROR",
                         "tablet id and table id can not be empty at the same time!")
        if tablet_text and table_text:
            return _fail(
                "INTERNAL_ERROR", "tablet id and table id can not be set at the same time!"
            )
        try:
            tablet_id = _stoull(tablet_text, "tablet_id") if tablet_text else 0
            table_id = _stoull(table_text, "table_id") if table_text else 0
        except ParamError as e:
            return _fail("INTERNAL_ERROR", str(e))
        kind = params.get("compact_type", "")
        if kind not in KINDS:
            return _fail("NOT_IMPLEMENTED_ERROR", f"The compaction type '{kind}' is not supported")
        remote = params.get("remote", "")
        if remote not in ("", "true", "false"):
            return _fail("NOT_IMPLEMENTED_ERROR", f"The remote = '{remote}' is not supported")
        if tablet_id == 0 and table_id != 0:
            failed = self._run_table(table_id)
            if failed is not None:
                return failed
        else:
            failed = self._run_tablet(tablet_id, kind, remote == "true")
            if failed is not None:
                return failed
        return {"status": "Success", "msg": "compaction task is successfully triggered. "
                f"Table id: {table_id}. Tablet id: {tablet_id}"}

    def _run_table(self, table_id: int) -> Json | None:
        """Doris submits a full compaction per tablet of the table (whatever compact_type
        says) and stops at the first refusal; tablets with nothing to merge are skipped."""
        for tablet in self.engine.catalog.tablets(table_id):
            result = self.manager.trigger(tablet.tablet_id, FULL)
            if result.reason == RUNNING:
                return _fail("ALREADY_EXIST", "compaction task has already been submitted, "
                             f"tablet_id={tablet.tablet_id}, compaction_type=full.")
        return None

    def _tablet(self, tablet_id: int) -> TabletMeta | None:
        return self.engine.catalog.tablet_by_id(tablet_id)

    def _run_tablet(self, tablet_id: int, kind: str, remote: bool) -> Json | None:
        tablet = self._tablet(tablet_id)
        if tablet is None:
            return _fail("NOT_FOUND", f"Tablet not found. tablet_id={tablet_id}")
        if remote:
            # Single replica compaction fetches a peer's result; every ShaleDB tablet has one
            # replica, so there is never a peer, as Doris says for a tablet without one.
            return _fail("NOT_IMPLEMENTED_ERROR", "tablet should do compaction locally")
        result = self.manager.trigger(tablet_id, kind)
        if result.reason == NOT_FOUND:
            return _fail("NOT_FOUND", f"Tablet not found. tablet_id={tablet_id}")
        if result.reason == RUNNING:
            return _fail("E-216", _LOCKED_MSG[kind].format(tablet_id))
        if result.reason == NO_SUITABLE:
            return _fail(_NO_SUITABLE_CODE[kind], result.msg)
        if not result.started or result.future is None:
            return _fail("INTERNAL_ERROR", result.msg)
        try:
            swapped = result.future.result(timeout=RUN_WAIT_SECONDS)
        except FutureTimeout:
            return None  # still running: reported as triggered, as Doris does after 2 s
        if not swapped:
            last = self.manager.state(tablet_id).last_result.get(kind, "compaction failed")
            return _fail("INTERNAL_ERROR", last)
        return None

    # ---- /api/compaction/run_status ---------------------------------------------------------
    def run_status(self, params: Mapping[str, str]) -> Json:
        tablet_id = _tablet_param(params)
        if isinstance(tablet_id, dict):
            return tablet_id
        if tablet_id == 0:
            return self._running_by_dir()
        if self._tablet(tablet_id) is None:
            return _fail("INTERNAL_ERROR", f"fail to get {tablet_id}")
        kind = self.manager.is_running(tablet_id)
        return {
            "status": "Success",
            "run_status": kind is not None,
            "msg": "compaction task for this tablet is running" if kind is not None
            else "compaction task for this tablet is not running",
            "tablet_id": tablet_id,
            "compact_type": kind or "",
        }

    def _running_by_dir(self) -> Json:
        """{"BaseCompaction": {"<data dir>": ["<tablet id>", ..]}, "CumulativeCompaction": ..,
        "FullCompaction": ..}: every data dir is listed, with the tablets compacting there
        (ids as strings, as Doris writes them)."""
        catalog = self.engine.catalog
        dirs = {
            b.backend_id: str(self.engine.backend_root(b.backend_id)) for b in catalog.backends()
        }
        running = self.manager.running()
        backend_of = {t.tablet_id: t.backend_id for t in catalog.all_tablets()
                      if t.tablet_id in running}
        out: Json = {}
        for key, kind in (("BaseCompaction", BASE), ("CumulativeCompaction", CUMULATIVE),
                          ("FullCompaction", FULL)):
            per_dir: dict[str, list[str]] = {path: [] for path in dirs.values()}
            for tid, k in sorted(running.items()):
                if k == kind and backend_of.get(tid) in dirs:
                    per_dir[dirs[backend_of[tid]]].append(str(tid))
            out[key] = per_dir
        return out


# ---- /metrics ---------------------------------------------------------------------------------
def metric_families(engine: StorageEngine) -> Iterator[Metric]:
    """Compaction metrics for server/metrics.py: Doris BE names where Doris has the metric
    (doris_be_*), shaledb_* for ShaleDB's own. Reads the catalog: call it off the event loop."""
    manager = engine.compaction
    stats = manager.stats
    versions, cumu_score, base_score = manager.max_scores()

    def gauge(name: str, text: str, value: float) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, text, value=value)

    def per_kind(name: str, text: str, values: Mapping[str, float]) -> CounterMetricFamily:
        family = CounterMetricFamily(name, text, labels=["type"])
        for k in (BASE, CUMULATIVE, FULL):
            family.add_metric([k], values[k])
        return family

    yield gauge("doris_be_max_tablet_rowset_num",
                "Most versions (rowsets, with the initial [0-1]) any tablet holds.", versions)
    yield gauge("doris_be_tablet_cumulative_max_compaction_score",
                "Highest cumulative compaction score of any tablet.", cumu_score)
    yield gauge("doris_be_tablet_base_max_compaction_score",
                "Highest base compaction score of any tablet.", base_score)
    yield gauge("shaledb_compaction_running_tasks", "Compactions running or queued now.",
                len(manager.running()))
    yield gauge("shaledb_stale_rowsets",
                "Rowsets replaced by compaction whose files are still kept for readers.",
                len(engine.stale_rowsets))
    yield per_kind("doris_be_compaction_deltas_total", "Rowsets merged by successful compactions.",
                   stats.rowsets_merged)
    yield per_kind("doris_be_compaction_bytes_total",
                   "Bytes of the rowsets merged by successful compactions.", stats.bytes_merged)
    yield per_kind("shaledb_compaction_rows_total", "Rows read by successful compactions.",
                   stats.rows_merged)
    yield per_kind("shaledb_compaction_seconds_total",
                   "Seconds successful compactions spent merging (throughput = rows / seconds).",
                   stats.seconds)
    requests = CounterMetricFamily("doris_be_engine_requests_total",
                                   "Compaction tasks run (total) and failed.",
                                   labels=["type", "status"])
    for k in (BASE, CUMULATIVE, FULL):
        requests.add_metric([f"{k}_compaction", "total"], stats.tasks[k] + stats.failures[k])
        requests.add_metric([f"{k}_compaction", "failed"], stats.failures[k])
    yield requests
    yield CounterMetricFamily(
        "shaledb_load_back_pressure_waits_total",
        "Loads that waited for compaction to bring a tablet's version count down.",
        value=stats.back_pressure_waits)
    yield CounterMetricFamily(
        "shaledb_too_many_versions_total",
        "Loads refused with E-235 (more than max_tablet_version_num versions).",
        value=stats.too_many_versions)


# ---- routes -----------------------------------------------------------------------------------
def add_routes(app: web.Application, engine: StorageEngine) -> None:
    """Doris registers show and run_status for GET and run for POST only; other methods fall
    through to the app's 404 handler."""
    actions = Actions(engine)

    def handler(action: Callable[[Mapping[str, str]], Json]
                ) -> Callable[[web.Request], Any]:
        @requires(ADMIN)  # a backend's admin actions (server/privileges/http_auth.py)
        async def handle(request: web.Request) -> web.Response:
            params = dict(request.query)
            # The catalog may be locked by a load, and run waits for the task: never on the loop.
            body = await asyncio.to_thread(action, params)
            return web.Response(text=json.dumps(body, indent=4), content_type="application/json")

        return handle

    app.router.add_get("/api/compaction/show", handler(actions.show))
    app.router.add_post("/api/compaction/run", handler(actions.run))
    app.router.add_get("/api/compaction/run_status", handler(actions.run_status))
