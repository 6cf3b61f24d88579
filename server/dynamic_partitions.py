"""The dynamic partition scheduler (Doris `DynamicPartitionScheduler`): one daemon thread per
server that creates and drops the partitions of every table with dynamic_partition.* rules.

When it runs:
* at server start, then every `dynamic_partition_check_interval_seconds` (a wait on an Event,
  so changing the interval or any FE config re-arms it at once);
* immediately when `current_time_override` moves "today" (storage/clock.py on_change);
* synchronously, for one table, at CREATE TABLE of a dynamic table and after each ALTER of its
  dynamic_partition.* properties, and for every table after ADMIN SET FRONTEND CONFIG, so the
  statement that triggered the run gets its failures as warnings (SHOW WARNINGS).
Nothing runs while the FE config `dynamic_partition_enable` is false.

Each creation and each drop is one catalog transaction (sql/ddl/ddl_ops.py add_dynamic_partition /
drop_dynamic_partition); which partitions are wanted is sql/ddl/dynamic_partition.py's pure plan.

Per-table runtime state (LastUpdateTime, LastSchedulerTime, State, LastCreatePartitionMsg,
LastDropPartitionMsg) is what SHOW DYNAMIC PARTITION TABLES prints. Doris keeps it in memory
only; we also write it to `<data_dir>/fe/dynamic_partition_state.json` (atomically) after each
run, so a restart, even after kill -9, still shows the last failure.

Unlike Doris, failures are not silent: each one is logged, counted on /metrics
(`shaledb_dynamic_partition_failures_total{op=...}`), returned to the triggering statement
as a warning, and a run that had a failed creation ends in State=ERROR even when a later
creation of the same run succeeded (Doris clears the state on the next success).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, Metric

from server.frontend_config import FrontendConfig
from sql.ddl import ddl_ops
from sql.ddl import dynamic_partition as D
from sql.ddl.partitions import range_text
from sql.ddl.properties import replication_num
from sql.errors import DorisError
from storage import clock
from storage.catalog import service as catalog_service
from storage.catalog.meta import PartitionMeta, PartitionType, TableMeta
from storage.engine import StorageEngine
from storage.faults import fault_point
from storage.fileio import write_atomic
from storage.partition import bound_key
from storage.per_engine import PerEngine
from storage.types import TypeKind

logger = logging.getLogger("shaledb.dynamic_partition")

NA = "N/A"
STATE_FILE = "dynamic_partition_state.json"


@dataclass
class TableRuntime:
    """One table's row of runtime columns in SHOW DYNAMIC PARTITION TABLES."""

    last_update_time: str = NA
    last_scheduler_time: str = NA
    state: str = "NORMAL"
    create_msg: str = NA
    drop_msg: str = NA


@dataclass
class Counters:
    created: int = 0
    dropped: int = 0
    create_failures: int = 0
    drop_failures: int = 0


@dataclass
class DynamicPartitionScheduler:
    engine: StorageEngine
    runtime: dict[int, TableRuntime] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)
    _run_lock: threading.Lock = field(default_factory=threading.Lock)
    _wake: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _loaded: bool = False

    @classmethod
    def of(cls, engine: StorageEngine) -> DynamicPartitionScheduler:
        return _REGISTRY(engine)

    # ---- the daemon -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the daemon thread (once) and listen to clock and FE config changes."""
        if self._thread is not None:
            return
        clock.on_change(self._wake.set)
        FrontendConfig.of(self.engine).on_change(lambda _key: self._wake.set())
        self._thread = threading.Thread(target=self._loop, name="dynamic-partition-scheduler",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """End the thread after its current table (server shutdown, before the catalog
        closes)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run()
            except Exception:  # a bug must not end the thread: log and try at the next tick
                logger.exception("dynamic partition scheduler run failed")
            interval = max(1, self._config().get_int("dynamic_partition_check_interval_seconds"))
            self._wake.wait(interval)
            self._wake.clear()

    def _config(self) -> FrontendConfig:
        return FrontendConfig.of(self.engine)

    # ---- runs -------------------------------------------------------------------------------
    def run(self, table_ids: Iterable[int] | None = None) -> list[str]:
        """One scheduling pass over `table_ids` (default: every table); returns the failures of
        this pass as warning texts. Does nothing while dynamic_partition_enable is false."""
        if not self._config().get_bool("dynamic_partition_enable"):
            return []
        with self._run_lock:
            self._load_state()
            cat = self.engine.catalog
            if table_ids is None:
                tables = [t for db in cat.list_databases() for t in cat.list_tables(db.name)]
                live = {t.table_id for t in tables}
                for gone in [tid for tid in self.runtime if tid not in live]:
                    del self.runtime[gone]
            else:
                tables = [t for t in (cat.table_by_id(i) for i in table_ids) if t is not None]
            warnings: list[str] = []
            for table in tables:
                if self._stop.is_set():
                    break
                try:
                    warnings += self._run_table(table)
                except Exception as e:  # a bug in one table must not fail the statement or run
                    logger.exception("dynamic partition run of table %s failed", table.name)
                    runtime = self.runtime.setdefault(table.table_id, TableRuntime())
                    warnings.append(self._create_failed(runtime, table.name, repr(e)))
            self._save_state()
            return warnings

    def note_properties_changed(self, table_id: int) -> None:
        """ALTER TABLE .. SET ("dynamic_partition.*"): LastUpdateTime (Doris sets it there)."""
        with self._run_lock:
            self._load_state()
            self.runtime.setdefault(table_id, TableRuntime()).last_update_time = _now_text()
            self._save_state()

    def _run_table(self, table: TableMeta) -> list[str]:
        rule = D.DynamicRule.of(dict(table.properties))
        info = table.partition_info
        if rule is None or not rule.enable or info.type is not PartitionType.RANGE \
                or len(info.columns) != 1:
            return []
        runtime = self.runtime.setdefault(table.table_id, TableRuntime())
        runtime.last_scheduler_time = _now_text()
        column = table.column(info.columns[0])
        fmt = _bound_format(column.type.kind, column.type.is_integer)
        db = self.engine.catalog.database_by_id(table.db_id)
        where = f"{db.name if db else table.db_id}.{table.name}"
        if fmt is None:
            return [self._create_failed(runtime, where,
                                        "Dynamic Partition Only Support DATE, DATETIME and "
                                        "INTEGER Type Now.")]
        try:
            zone = rule.zone()
            now = clock.now_in(zone) if zone is not None else clock.now()
        except ValueError:
            now = clock.now()
        warnings = self._drop(table, rule, now, fmt, runtime, where)
        warnings += self._create(table, rule, now, fmt, runtime, where)
        return warnings

    def _drop(self, table: TableMeta, rule: D.DynamicRule, now: dt.datetime, fmt: str,
              runtime: TableRuntime, where: str) -> list[str]:
        runtime.drop_msg = NA
        if runtime.create_msg == NA:
            runtime.state = "NORMAL"
        try:
            boundary = D.drop_boundary(rule, now, fmt)
        except D.PlanError as e:
            hint = (f"'dynamic_partition.start' = {rule.start}, maybe it's too small, can use "
                    "alter table sql to increase it. ")
            return [self._drop_failed(runtime, where, f"{hint}, error: {e}")]
        if boundary is None:
            return []
        types = [table.column(table.partition_info.columns[0]).type]
        limit = bound_key(types, (boundary,))
        reserved = [(bound_key(types, (lo,)), bound_key(types, (hi,)))
                    for lo, hi in D.reserved_ranges(rule, fmt)]
        warnings = []
        for part in self.engine.catalog.partitions(table.table_id):
            upper = bound_key(types, part.upper)
            lower = bound_key(types, part.lower)
            if upper is None or limit < upper:
                continue  # some of it is at or after the start offset's lower bound: kept
            if any((lower is None or not hi < lower) and lo < upper for lo, hi in reserved):
                continue  # intersects a reserved history period
            try:
                if catalog_service.drop_dynamic_partition(self.engine, table.table_id, part.name):
                    self.counters.dropped += 1
                    logger.info("dynamic partition: dropped %s of %s", part.name, where)
            except DorisError as e:
                warnings.append(self._drop_failed(runtime, where, str(e)))
        return warnings

    def _create(self, table: TableMeta, rule: D.DynamicRule, now: dt.datetime, fmt: str,
                runtime: TableRuntime, where: str) -> list[str]:
        if table.partition_info.auto and rule.end == 0:
            return []  # AUTO PARTITION + end 0: the loads create, the scheduler only drops
        try:
            wanted = D.wanted_partitions(rule, now, fmt)
        except D.PlanError as e:
            return [self._create_failed(runtime, where,
                                        f"maybe dynamic_partition.start is too small, error: {e}")]
        types = [table.column(table.partition_info.columns[0]).type]
        failures: list[str] = []
        for plan in wanted:
            existing = self.engine.catalog.partitions(table.table_id)
            if _holds(types, existing, plan):
                continue  # the period exists already
            clash = _intersection(types, existing, plan)
            if clash is not None:  # a partition with another range holds part of it
                failures.append(clash)
                continue
            try:
                medium, cooldown = D.storage_placement(rule, now, plan.offset)
                if ddl_ops.add_dynamic_partition(self.engine, table.table_id, plan.name,
                                                 plan.lower, plan.upper, rule.buckets,
                                                 rule.replication_num, medium, cooldown):
                    self.counters.created += 1
                    logger.info("dynamic partition: created %s [%s, %s) of %s", plan.name,
                                plan.lower, plan.upper, where)
                    fault_point("dynamic_partition_between_adds")  # crash tests: kill here
            except DorisError as e:
                failures.append(str(e))
        if not failures:
            runtime.create_msg = NA
            if runtime.drop_msg == NA:
                runtime.state = "NORMAL"
            return []
        return [self._create_failed(runtime, where, msg) for msg in failures]

    # ---- failures: state, log, metric, warning ------------------------------------------------
    def _create_failed(self, runtime: TableRuntime, where: str, msg: str) -> str:
        runtime.state, runtime.create_msg = "ERROR", msg
        self.counters.create_failures += 1
        logger.warning("dynamic add partition failed: %s, table: %s", msg, where)
        return f"dynamic partition of table {where}: add partition failed: {msg}"

    def _drop_failed(self, runtime: TableRuntime, where: str, msg: str) -> str:
        runtime.state, runtime.drop_msg = "ERROR", msg
        self.counters.drop_failures += 1
        logger.warning("dynamic drop partition failed: %s, table: %s", msg, where)
        return f"dynamic partition of table {where}: drop partition failed: {msg}"

    # ---- persistence of the runtime state ------------------------------------------------------
    def _state_path(self) -> Path:
        return Path(self.engine.data_dir) / "fe" / STATE_FILE

    def _load_state(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            raw = json.loads(self._state_path().read_text())
            for key, value in raw.items():
                self.runtime.setdefault(int(key), TableRuntime(**value))
        except FileNotFoundError:
            pass
        except (ValueError, TypeError) as e:  # a damaged file only loses the SHOW columns
            logger.warning("ignoring unreadable %s: %s", self._state_path(), e)

    def _save_state(self) -> None:
        payload = {str(k): asdict(v) for k, v in self.runtime.items()}
        try:
            write_atomic(self._state_path(), json.dumps(payload, sort_keys=True).encode())
        except OSError as e:
            logger.warning("cannot store the dynamic partition state: %s", e)

    def runtime_of(self, table_id: int) -> TableRuntime:
        with self._run_lock:
            self._load_state()
            return self.runtime.get(table_id, TableRuntime())


def _holds(types: list, parts: Iterable[PartitionMeta], plan: D.PlannedPartition) -> bool:
    """Some partition has exactly the planned range."""
    lo, up = bound_key(types, (plan.lower,)), bound_key(types, (plan.upper,))
    return any(bound_key(types, p.lower) == lo and bound_key(types, p.upper) == up
               for p in parts)


def _intersection(types: list, parts: Iterable[PartitionMeta], plan: D.PlannedPartition
                  ) -> str | None:
    """Doris' RangeUtils message when a partition intersects the planned range."""
    lo, up = bound_key(types, (plan.lower,)), bound_key(types, (plan.upper,))
    for part in parts:
        p_lo, p_up = bound_key(types, part.lower), bound_key(types, part.upper)
        if (p_lo is None or p_lo < up) and (p_up is None or lo < p_up):
            return (f"Range {range_text(types, (plan.lower,), (plan.upper,))} is intersected "
                    f"with range: {range_text(types, part.lower, part.upper)}")
    return None


def check_first_run(engine: StorageEngine, table: TableMeta,
                    partitions: Iterable[PartitionMeta]) -> None:
    """Before a new dynamic table is committed: raise what its first scheduling would fail on
    (seed 001: a conflict at CREATE TABLE is a DDL error), so a failed CREATE leaves nothing.
    The partitions are those the CREATE defines."""
    rule = D.DynamicRule.of(dict(table.properties))
    if rule is None or not rule.enable \
            or not FrontendConfig.of(engine).get_bool("dynamic_partition_enable"):
        return
    column = table.column(table.partition_info.columns[0])
    fmt = _bound_format(column.type.kind, column.type.is_integer)
    if fmt is None:
        return
    try:
        zone = rule.zone()
        now = clock.now_in(zone) if zone is not None else clock.now()
        wanted = [] if table.partition_info.auto and rule.end == 0 \
            else D.wanted_partitions(rule, now, fmt)
    except (D.PlanError, ValueError) as e:
        raise DorisError(f"maybe dynamic_partition.start is too small, error: {e}") from None
    parts = list(partitions)
    for plan in wanted:
        if not _holds([column.type], parts, plan):
            clash = _intersection([column.type], parts, plan)
            if clash is not None:
                raise DorisError(clash)


def _now_text() -> str:
    return clock.now().strftime("%Y-%m-%d %H:%M:%S")


def _bound_format(kind: TypeKind, is_integer: bool) -> str | None:
    if kind is TypeKind.DATE:
        return D.DATE_FORMAT
    if kind is TypeKind.DATETIME:
        return D.DATETIME_FORMAT
    if is_integer:
        return D.INTEGER_FORMAT
    return None


_REGISTRY: PerEngine[DynamicPartitionScheduler] = PerEngine(
    lambda engine: DynamicPartitionScheduler(engine))


SHOW_COLUMNS = [
    "TableName", "Enable", "TimeUnit", "Start", "End", "Prefix", "Buckets", "ReplicationNum",
    "ReplicaAllocation", "StartOf", "LastUpdateTime", "LastSchedulerTime", "State",
    "LastCreatePartitionMsg", "LastDropPartitionMsg", "ReservedHistoryPeriods",
]


def show_rows(engine: StorageEngine, tables: Iterable[TableMeta]) -> list[tuple[str, ...]]:
    """SHOW DYNAMIC PARTITION TABLES rows (Doris ShowExecutor.handleShowDynamicPartition) for
    the tables that have dynamic_partition rules, enabled or not, by table name."""
    scheduler = DynamicPartitionScheduler.of(engine)
    rows: list[tuple[str, ...]] = []
    for table in sorted(tables, key=lambda t: t.name):
        props = dict(table.properties)
        rule = D.DynamicRule.of(props)
        if rule is None:
            continue
        replicas = rule.replication_num or replication_num(props, 32767)
        state = scheduler.runtime_of(table.table_id)
        rows.append((
            table.name, str(rule.enable).lower(), rule.time_unit, str(rule.start), str(rule.end),
            rule.prefix, str(rule.buckets or table.distribution.buckets), str(replicas),
            f"tag.location.default: {replicas}", rule.start_of_info(), state.last_update_time,
            state.last_scheduler_time, state.state, state.create_msg, state.drop_msg,
            D.sorted_reserved_text(rule),
        ))
    return rows


def metric_families(engine: StorageEngine) -> Iterator[Metric]:
    """/metrics: partitions the scheduler created and dropped, and its failures by operation
    (what Doris users only find in SHOW DYNAMIC PARTITION TABLES)."""
    scheduler = _REGISTRY.peek(engine)
    counters = scheduler.counters if scheduler is not None else Counters()
    yield CounterMetricFamily("shaledb_dynamic_partition_created",
                              "Partitions created by the dynamic partition scheduler.",
                              value=counters.created)
    yield CounterMetricFamily("shaledb_dynamic_partition_dropped",
                              "Partitions dropped by the dynamic partition scheduler.",
                              value=counters.dropped)
    failures = CounterMetricFamily("shaledb_dynamic_partition_failures",
                                   "Dynamic partition creations and drops that failed.",
                                   labels=["op"])
    failures.add_metric(["create"], counters.create_failures)
    failures.add_metric(["drop"], counters.drop_failures)
    yield failures
