"""EXPORT TABLE jobs: asynchronous unloads of a table into files, with SHOW / CANCEL EXPORT.

`ExportJobs.of(engine)` keeps the jobs of one server; a job's SHOW EXPORT row is also stored
in the catalog's `export_jobs` table (storage/catalog/repository.py) on every change of that
job, so it survives a restart (a job that was still running then shows CANCELLED: its plan is
not kept); the latest MAX_KEPT_JOBS are kept. A data dir from before the catalog kept them,
`<data_dir>/fe/export_jobs.json`, is imported once and renamed to `export_jobs.json.imported`.
`submit` checks the statement the way Doris' ExportStmt does (table, partitions, columns,
properties, label unique in the database), plans its SELECT at once (so errors reach the
client), and runs it on a job thread: PENDING -> EXPORTING -> FINISHED, or CANCELLED on error,
timeout or CANCEL EXPORT. The files are written by the OUTFILE writer (executor/outfile.py)
under the export directory; a job that does not finish leaves no files. SHOW EXPORT prints
Doris' columns.
Upstream: Doris `ExportStmt`, `ExportJob`, `ExportMgr`, `ShowExportStmt`, `CancelExportStmt`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from executor.outfile import (
    OutfileOptions,
    OutfileResult,
    clear_directory,
    outfile_options,
    write_outfile,
)
from executor.query import execute, new_query_id
from planner.query import PlannedQuery, plan_select
from sql.errors import DorisError, QueryCancelled
from sql.options import SessionContext
from storage.catalog import service as catalog_service
from storage.catalog.meta import ExportJobMeta
from storage.per_engine import PerEngine

if TYPE_CHECKING:
    from server.statements.runner import StatementRunner
    from storage.engine import StorageEngine

logger = logging.getLogger("shaledb.export")

SHOW_COLUMNS = ("JobId", "Label", "State", "Progress", "TaskInfo", "Path", "CreateTime",
                "StartTime", "FinishTime", "Timeout", "ErrorMsg", "OutfileInfo")
EXPORT_PROPERTIES = frozenset({
    "label", "format", "column_separator", "line_delimiter", "columns", "parallelism",
    "timeout", "max_file_size", "delete_existing_files", "with_bom", "data_consistency",
    "compress_type"})
DEFAULT_TIMEOUT_S = 7200
LEGACY_JOB_FILE = "export_jobs.json"  # under <data_dir>/fe/: imported once, then renamed
MAX_KEPT_JOBS = 2000  # the oldest rows go first
_LABEL = re.compile(r"^[-_A-Za-z0-9:]{1,128}$")  # Doris' FeNameFormat label rule
FILE_PREFIX = "export-data-"


def property_map(nodes: list[exp.Expression] | None) -> dict[str, str]:
    """`PROPERTIES ("k" = "v", ..)` nodes -> {k: v} (keys as written)."""
    out: dict[str, str] = {}
    for node in nodes or []:
        if isinstance(node, exp.Property):
            value = node.args.get("value")
            out[node.name] = value.name if isinstance(value, exp.Expression) else str(value)
    return out


def order_and_limit(names: list[str], rows: list[tuple[object, ...]],
                    order: exp.Expression | None, limit: exp.Expression | None
                    ) -> list[tuple[object, ...]]:
    """SHOW EXPORT's ORDER BY <column> [DESC], .. and LIMIT [offset,] n over its rows (numbers
    in JobId / Timeout sort as numbers)."""
    lower = [n.lower() for n in names]
    for item in reversed(order.expressions if order is not None else []):
        name = item.this.name.lower()
        if name not in lower:
            raise DorisError(f"Title name[{item.this.name}] does not exist")
        i = lower.index(name)

        def key(row: tuple[object, ...], i: int = i) -> tuple[int, object]:
            text = str(row[i])
            return (0, int(text)) if text.isdigit() else (1, text)

        rows = sorted(rows, key=key, reverse=bool(item.args.get("desc")))
    if limit is not None:
        offset = int(limit.args["offset"].name) if limit.args.get("offset") is not None else 0
        rows = rows[offset: offset + int(limit.expression.name)]
    return rows


def _ts(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "NULL"


@dataclass
class ExportJob:
    job_id: int
    label: str
    db: str
    table: str
    path: str
    timeout: int
    task_info: dict[str, Any]
    tasks: list[PlannedQuery]  # one OUTFILE query per group of partitions (parallelism)
    ctx: SessionContext
    options: OutfileOptions
    state: str = "PENDING"
    create_time: float = field(default_factory=time.time)
    start_time: float | None = None
    finish_time: float | None = None
    error: str = ""
    results: list[OutfileResult] = field(default_factory=list)

    def row(self) -> tuple[object, ...]:
        outfile = "NULL"
        if self.state == "FINISHED":
            outfile = json.dumps([[{
                "fileNumber": str(len(r.files)), "totalRows": str(r.rows),
                "fileSize": f"{r.bytes}bytes", "url": r.url}] for r in self.results])
        progress = 100 if self.state == "FINISHED" else \
            100 * len(self.results) // max(len(self.tasks), 1)
        return (str(self.job_id), self.label, self.state, f"{progress}%",
                json.dumps(self.task_info), self.path, _ts(self.create_time),
                _ts(self.start_time), _ts(self.finish_time), str(self.timeout),
                self.error or "NULL", outfile)


@dataclass
class PastJob:
    """A job of an earlier server run, as SHOW EXPORT last showed it (from the catalog)."""

    job_id: int
    label: str
    db: str
    state: str
    cells: tuple[object, ...]

    def row(self) -> tuple[object, ...]:
        return self.cells


class ExportJobs:
    @classmethod
    def of(cls, engine: StorageEngine) -> ExportJobs:
        return _JOBS(engine)

    def __init__(self, engine: StorageEngine) -> None:
        self.engine = engine
        self._jobs: list[ExportJob | PastJob] = []
        self._lock = threading.Lock()
        self._next_id = int(time.time() * 1000)
        # SHOW EXPORT rows survive a restart (Doris keeps export jobs in its FE journal)
        self._repo = engine.catalog.repo
        legacy = Path(engine.data_dir) / "fe" / LEGACY_JOB_FILE
        if legacy.exists():
            self._import(legacy)
        self._load()

    # ---- the catalog -----------------------------------------------------------------------
    def _import(self, path: Path) -> None:
        """Move the jobs of `export_jobs.json` into the catalog (once: the file is renamed to
        *.imported afterwards). An unreadable file is renamed too: SHOW EXPORT starts empty."""
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            saved = []
        jobs = []
        for entry in saved if isinstance(saved, list) else []:
            try:
                cells = tuple(str(c) for c in entry["row"])
                jobs.append(ExportJobMeta(int(cells[0]), str(entry["db"]), cells[1], cells[2],
                                          cells))
            except (KeyError, TypeError, ValueError, IndexError):
                continue
        if jobs:
            self._repo.put_export_jobs(jobs[-MAX_KEPT_JOBS:])
        os.replace(path, path.with_name(path.name + ".imported"))

    def _load(self) -> None:
        for saved in self._repo.export_jobs()[-MAX_KEPT_JOBS:]:
            cells = list(saved.row)
            if len(cells) != len(SHOW_COLUMNS):
                continue
            if cells[2] in ("PENDING", "EXPORTING"):  # its plan did not survive the restart
                cells[2] = "CANCELLED"
                cells[10] = "type:CANCELLED; msg:the server stopped before the job finished"
            self._jobs.append(PastJob(saved.job_id, cells[1], saved.db, cells[2], tuple(cells)))
            self._next_id = max(self._next_id, saved.job_id)

    def _save(self, *jobs: ExportJob) -> None:
        """Store the SHOW EXPORT rows of `jobs` (lock held) and drop the oldest jobs past
        MAX_KEPT_JOBS, in memory and in the catalog (one transaction)."""
        del self._jobs[:max(0, len(self._jobs) - MAX_KEPT_JOBS)]
        metas = [ExportJobMeta(j.job_id, j.db, j.label, j.state,
                               tuple(str(c) for c in j.row())) for j in jobs]
        try:
            self._repo.put_export_jobs(metas, keep_from=self._jobs[0].job_id if self._jobs
                                       else None)
        except (OSError, sqlite3.Error) as e:  # a full disk must not fail the export itself
            logger.warning("cannot store export jobs %s: %s", [j.job_id for j in jobs], e)

    # ---- EXPORT TABLE ----------------------------------------------------------------------
    def submit(self, runner: StatementRunner, db: str, stmt: exp.Expression) -> ExportJob:
        table_node = stmt.this
        table = catalog_service.require_table(self.engine, db, table_node.name)
        props = property_map(stmt.expressions)
        for key in props:
            if key not in EXPORT_PROPERTIES:
                raise DorisError(f"Invalid property key: [{key}]")
        label = props.get("label") or f"export_{uuid.uuid4()}"
        if not _LABEL.match(label):
            raise DorisError(f"Label format error. regex: {_LABEL.pattern}, label: {label}")
        timeout = _int_property(props, "timeout", DEFAULT_TIMEOUT_S)
        parallelism = _int_property(props, "parallelism", 1)
        partitions = [e.name for e in table_node.args["partition"].expressions] \
            if table_node.args.get("partition") is not None else []
        known = {p.name.lower() for p in self.engine.catalog.partitions(table.table_id)}
        for p in partitions:
            if p.lower() not in known:
                raise DorisError(f"Partition {p} does not exist in table {table.name}")
        columns = [c.strip().strip("`") for c in props["columns"].split(",")] \
            if props.get("columns") else list(table.column_names)
        for c in columns:
            if not table.has_column(c):
                raise DorisError(f"Unknown column [{c}] in table [{table.name}]")
        outfile_props = {k: v for k, v in props.items() if k in (
            "column_separator", "line_delimiter", "max_file_size", "delete_existing_files")}
        path = stmt.args["path"].name
        if not path.endswith("/"):
            raise DorisError(f"The path must end with '/' (a directory), got [{path}]")
        fmt = props.get("format", "csv")
        options = outfile_options(runner.file_dirs, path + FILE_PREFIX, fmt, outfile_props,
                                  "EXPORT")
        # Doris' data_consistency = partition: `parallelism` tasks, each exporting whole
        # partitions (round robin), each its own query writing its own files
        chosen = partitions or [p.name for p in self.engine.catalog.partitions(table.table_id)]
        groups = [chosen[i::parallelism] for i in range(min(parallelism, len(chosen)))] \
            if parallelism > 1 and len(chosen) > 1 else [partitions]
        ctx = dataclasses.replace(runner.context(), cancel=threading.Event())
        tasks = []
        for group in groups:
            select = exp.select(*[exp.column(c, quoted=True) for c in columns]).from_(
                exp.Table(this=exp.to_identifier(table.name, quoted=True),
                          db=exp.to_identifier(db, quoted=True),
                          partition=exp.Partition(expressions=[
                              exp.to_identifier(p) for p in group]) if group else None))
            if stmt.args.get("where") is not None:
                select.set("where", stmt.args["where"].copy())
            tasks.append(plan_select(select, runner.visible_catalog(), ctx, sql=select.sql()))
        with self._lock:
            if any(j.db.lower() == db.lower() and j.label == label and j.state != "CANCELLED"
                   for j in self._jobs):
                raise DorisError(f"Label [{label}] has already been used.")
            self._next_id += 1
            job = ExportJob(
                self._next_id, label, db, table.name, path, timeout,
                {"partitions": partitions or ["*"], "parallelism": parallelism,
                 "data_consistency": props.get("data_consistency", "partition"),
                 "format": fmt.lower(), "broker": "",
                 "column_separator": options.separator, "line_delimiter": options.line_delimiter,
                 "max_file_size": props.get("max_file_size", ""),
                 "delete_existing_files": props.get("delete_existing_files", ""),
                 "with_bom": props.get("with_bom", "false"), "db": db, "tbl": table.name},
                tasks, ctx, options)
            self._jobs.append(job)
            self._save(job)
        threading.Thread(target=self._run, args=(job,), daemon=True,
                         name=f"export-{job.job_id}").start()
        return job

    def _run(self, job: ExportJob) -> None:
        cancel = job.ctx.cancel
        with self._lock:
            if job.state != "PENDING":
                return
            job.state, job.start_time = "EXPORTING", time.time()
            self._save(job)
        timer = threading.Timer(job.timeout, cancel.set)
        timer.daemon = True
        timer.start()
        try:
            if job.options.delete_existing_files:  # once, not by each task
                clear_directory(job.options.directory)
            opts = dataclasses.replace(job.options, delete_existing_files=False)
            with ThreadPoolExecutor(len(job.tasks), thread_name_prefix="export-task") as pool:
                futures = [pool.submit(self._task, job, t, opts) for t in job.tasks]
                for f in as_completed(futures):
                    if f.exception() is not None:
                        cancel.set()  # a failed task stops the others; all files go below
            errors = [e for e in (f.exception() for f in futures) if e is not None]
            if errors:  # the task that failed first, not the ones it stopped
                raise next((e for e in errors if not isinstance(e, QueryCancelled)), errors[0])
            with self._lock:
                if job.state == "EXPORTING":
                    job.state, job.finish_time = "FINISHED", time.time()
                    self._save(job)
                else:  # cancelled while the last file was published
                    _remove_files(job)
        except QueryCancelled:
            _remove_files(job)
            self._fail(job, f"type:CANCELLED; msg:timeout after {job.timeout} seconds")
        except Exception as e:  # noqa: BLE001 - the job's failure is reported by SHOW EXPORT
            _remove_files(job)
            self._fail(job, f"type:RUN_FAIL; msg:{getattr(e, 'message', None) or e}")
        finally:
            timer.cancel()

    def _task(self, job: ExportJob, task: PlannedQuery, opts: OutfileOptions) -> None:
        result = execute(task, self.engine, job.ctx)
        written = write_outfile(result.batches, list(task.names), list(task.types), opts,
                                new_query_id())
        with self._lock:
            job.results.append(written)

    def _fail(self, job: ExportJob, message: str) -> None:
        with self._lock:
            job.state = "CANCELLED"
            job.error = job.error or message  # a user cancel already said why
            job.finish_time = job.finish_time or time.time()
            self._save(job)

    # ---- SHOW EXPORT / CANCEL EXPORT -------------------------------------------------------
    def show(self, db: str, matches: Callable[[dict[str, Any]], bool] | None
             ) -> tuple[list[str], list[tuple[object, ...]]]:
        with self._lock:
            jobs = [j for j in self._jobs if j.db.lower() == db.lower()]
            rows = [j.row() for j in jobs]
        if matches is not None:
            rows = [r for r in rows if matches({"label": r[1], "state": r[2], "id": r[0],
                                                "jobid": r[0]})]
        return list(SHOW_COLUMNS), rows

    def cancel(self, db: str, matches: Callable[[dict[str, Any]], bool]) -> int:
        with self._lock:
            picked = [j for j in self._jobs if j.db.lower() == db.lower()
                      and matches({"label": j.label, "state": j.state, "id": str(j.job_id)})]
            if not picked:
                raise DorisError("Export job not found")
            # jobs of an earlier run (PastJob) are all finished
            running = [j for j in picked
                       if isinstance(j, ExportJob) and j.state in ("PENDING", "EXPORTING")]
            if not running:
                raise DorisError(f"Export job [{picked[0].label}] is already finished or "
                                 "cancelled")
            for j in running:
                j.error = "type:CANCELLED; msg:user cancel"
                if j.state == "PENDING":
                    j.state, j.finish_time = "CANCELLED", time.time()
                j.ctx.cancel.set()
            self._save(*running)
        return len(running)


def _remove_files(job: ExportJob) -> None:
    """A job that does not finish leaves no files: those its finished tasks wrote go."""
    for r in job.results:
        for f in r.files:
            f.unlink(missing_ok=True)


def _int_property(props: dict[str, str], key: str, default: int) -> int:
    try:
        value = int(props.get(key, default))
    except ValueError:
        value = 0
    if value <= 0:
        raise DorisError(f"The value of {key} is invalid!")
    return value


_JOBS: PerEngine[ExportJobs] = PerEngine(ExportJobs)
