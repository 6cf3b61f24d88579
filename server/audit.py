"""The audit log: Doris' fe.audit.log, one line per statement and per login attempt.

A line is what Doris' builtin `AuditLogBuilder` writes through log4j's
`%d{yyyy-MM-dd HH:mm:ss,SSS} [%c{1}] %m%n` layout, its `AuditEvent` fields in order:

    2026-11-25 16:40:01,123 [query] |Client=127.0.0.1:50312|User=root|Ctl=internal|Db=d|
    State=EOF|ErrorCode=0|ErrorMessage=|Time(ms)=3|ScanBytes=0|ScanRows=0|ReturnRows=1|
    StmtId=7|QueryId=1f0c..-8e2d..|IsQuery=true|isNereids=true|feIp=127.0.0.1|Stmt=select 1|
    CpuTimeMS=0|ShuffleSendBytes=0|ShuffleSendRows=0|SqlHash=..|peakMemoryBytes=0|SqlDigest=|
    TraceId=|WorkloadGroup=normal|FuzzyVariables=

(one line in the file). Statements slower than `qe_slow_log_ms` get a second, `[slow_query]`
line, as in Doris. Login attempts (which Doris does not audit) are `[connection]` lines with the
same fields (State=OK or ERR with 1045, Stmt empty). The statement is written as Doris'
`AuditLogHelper.handleStmt` does: passwords of CREATE/ALTER USER, SET PASSWORD and GRANT masked
(`*XXX`, Doris' `NeedAuditEncryption`), cut at `audit_plugin_max_sql_length` bytes with Doris'
marker, newlines and tabs escaped.

Writing is off the statement's path (Doris' `AuditEventProcessor`): a statement only appends its
event to a bounded buffer (`audit_event_log_queue_size` events; past that an event is dropped and
counted) and wakes the writer thread only when it is idle; the writer collects for
`FLUSH_SECONDS`, then formats the batch and writes it with one flush to
`<data_dir>/log/fe.audit.log`, which `AuditFileHandler` rotates daily or hourly
(`audit_log_roll_interval`) and by size (`log_roll_size_mb`), naming rotated files
`fe.audit.log.<yyyyMMdd[HH]>-<n>` as Doris' log4j pattern does, keeping at most
`audit_log_roll_num` per interval and none older than `audit_log_delete_age`.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import logging
import logging.handlers
import os
import random
import re
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

AUDIT_FILE = "fe.audit.log"
AUDIT_LOGGER = "shaledb.audit"
# A statement's line is written at most this long after it ended (and at close).
FLUSH_SECONDS = 0.1
DEFAULT_MAX_SQL_LENGTH = 4096  # Doris GlobalVariable audit_plugin_max_sql_length
_DELETE_AGE = re.compile(r"^(\d+)([dhms])$")
_AGE_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """conf/shaledb.toml [log]: the audit log's Doris fe.conf settings."""

    audit_log_roll_num: int = 90
    audit_log_roll_interval: str = "DAY"  # DAY | HOUR
    audit_log_delete_age: str = "30d"  # <n>d | <n>h | <n>m | <n>s
    log_roll_size_mb: int = 1024
    audit_event_log_queue_size: int = 250000
    qe_slow_log_ms: int = 5000


def delete_age_seconds(text: str) -> int:
    """Doris' age syntax (`30d`, `12h`, `90m`, `60s`) in seconds; ValueError otherwise."""
    m = _DELETE_AGE.match(text.strip().lower())
    if m is None:
        raise ValueError(text)
    return int(m.group(1)) * _AGE_SECONDS[m.group(2)]


@dataclass(slots=True)
class AuditEvent:
    """Doris' AuditEvent fields (plugin/audit/AuditEvent.java), in their log order."""

    kind: str = "query"  # the log4j logger: query | slow_query | connection
    client: str = ""
    user: str = ""
    ctl: str = "internal"
    db: str = ""
    state: str = "OK"
    error_code: int = 0
    error_message: str = ""
    query_time_ms: int = 0
    scan_bytes: int = 0
    scan_rows: int = 0
    return_rows: int = 0
    stmt_id: int = 0
    query_id: str = ""
    is_query: bool = False
    is_nereids: bool = False
    fe_ip: str = ""
    stmt: str = ""
    max_sql_length: int = DEFAULT_MAX_SQL_LENGTH
    workload_group: str = "normal"


# Field name in the line -> how to render it (Java's String.valueOf: booleans are true/false).
def _line(e: AuditEvent) -> str:
    stmt, secrets = mask_passwords(e.stmt)
    message = e.error_message.replace("\n", " ").replace("\t", " ")
    if secrets:  # a syntax error quotes the statement near the error, maybe cut mid-password
        message = scrub(mask_passwords(message)[0], secrets)
    stmt = handle_stmt(stmt, e.max_sql_length)
    pairs = (
        ("Client", e.client), ("User", e.user), ("Ctl", e.ctl), ("Db", e.db),
        ("State", e.state), ("ErrorCode", e.error_code), ("ErrorMessage", message),
        ("Time(ms)", e.query_time_ms), ("ScanBytes", e.scan_bytes), ("ScanRows", e.scan_rows),
        ("ReturnRows", e.return_rows), ("StmtId", e.stmt_id), ("QueryId", e.query_id),
        ("IsQuery", e.is_query), ("isNereids", e.is_nereids), ("feIp", e.fe_ip),
        ("Stmt", stmt), ("CpuTimeMS", 0), ("ShuffleSendBytes", 0), ("ShuffleSendRows", 0),
        ("SqlHash", hashlib.md5(stmt.encode()).hexdigest() if stmt else ""),
        ("peakMemoryBytes", 0), ("SqlDigest", ""), ("TraceId", ""),
        ("WorkloadGroup", e.workload_group), ("FuzzyVariables", ""),
    )
    return "".join(f"|{k}={_java_str(v)}" for k, v in pairs)


def _java_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---- statement text ----------------------------------------------------------------------------
_QUOTED = r"'(?:[^'\\]|\\.|'')*'?|\"(?:[^\"\\]|\\.|\"\")*\"?"
# IDENTIFIED [WITH plugin] BY [PASSWORD] <secret> | IDENTIFIED WITH plugin AS <secret>
_IDENTIFIED = re.compile(
    r"(\bIDENTIFIED\s+(?:WITH\s+\S+\s+)?(?:BY\s+(?:PASSWORD\s+)?|AS\s+))"
    rf"({_QUOTED}|[^\s;]+)", re.IGNORECASE)
# SET PASSWORD [FOR user] = PASSWORD('x') | = 'hash'
_SET_PASSWORD = re.compile(
    r"(\bSET\s+PASSWORD\b[^=]*=\s*(?:PASSWORD\s*\(\s*)?)"
    rf"({_QUOTED}|[^\s;)]+)", re.IGNORECASE)


def mask_passwords(sql: str) -> tuple[str, tuple[str, ...]]:
    """`sql` with every password literal replaced by Doris' `*XXX`, and the secrets found (so
    an error message quoting them can be scrubbed too)."""
    secrets: list[str] = []

    def hide(m: re.Match[str]) -> str:
        literal = m.group(2)
        inner = literal[1:-1] if len(literal) >= 2 and literal[0] == literal[-1] and \
            literal[0] in "'\"" else literal.strip("'\"")
        if inner:
            secrets.append(inner)
        return m.group(1) + "'*XXX'"

    if "IDENTIFIED" not in sql.upper() and "PASSWORD" not in sql.upper():
        return sql, ()
    masked = _SET_PASSWORD.sub(hide, _IDENTIFIED.sub(hide, sql))
    return masked, tuple(secrets)


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret, and every prefix of one of 3 characters or more (an error's
    `near '...'` excerpt may cut it), replaced by `*XXX`."""
    for secret in sorted(secrets, key=len, reverse=True):
        for end in range(len(secret), min(3, len(secret)) - 1, -1):
            text = text.replace(secret[:end], "*XXX")
    return text


def handle_stmt(sql: str, max_len: int) -> str:
    """Doris' AuditLogHelper.handleStmt: cut at `max_len` UTF-8 bytes (never inside a
    character) with its marker, then escape newlines, tabs and carriage returns."""
    raw = sql.encode("utf-8")
    if max_len >= 0 and len(raw) > max_len:
        sql = raw[:max_len].decode("utf-8", "ignore") + (
            f" ... /* truncated. audit_plugin_max_sql_length={max_len} */")
    return sql.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


# ---- the file ------------------------------------------------------------------------------
class AuditFormatter(logging.Formatter):
    """`%d{yyyy-MM-dd HH:mm:ss,SSS} [%c{1}] %m`: Python's default asctime is that very format."""

    def format(self, record: logging.LogRecord) -> str:
        event: AuditEvent = record.msg  # type: ignore[assignment]
        return f"{self.formatTime(record)} [{event.kind}] {_line(event)}"


class AuditFileHandler(logging.handlers.TimedRotatingFileHandler):
    """Daily (or hourly) and size-based rotation of fe.audit.log, Doris' file names and
    retention. The standard handler does the rolling; this class adds the size trigger, the
    `-<n>` index of Doris' `%i` and its delete rules."""

    def __init__(self, path: Path, settings: AuditSettings, max_bytes: int | None = None) -> None:
        hourly = settings.audit_log_roll_interval.upper() == "HOUR"
        super().__init__(str(path), when="H" if hourly else "MIDNIGHT", encoding="utf-8",
                         backupCount=max(1, settings.audit_log_roll_num))
        self.suffix = "%Y%m%d%H" if hourly else "%Y%m%d"
        self.max_bytes = settings.log_roll_size_mb * 1024 * 1024 if max_bytes is None else max_bytes
        self.roll_num = max(1, settings.audit_log_roll_num)
        self.delete_age = delete_age_seconds(settings.audit_log_delete_age)
        self.namer = self._indexed_name

    def shouldRollover(self, record: logging.LogRecord) -> int:
        if super().shouldRollover(record):
            return 1
        if self.max_bytes <= 0:
            return 0
        if self.stream is None:
            self.stream = self._open()
        size = self.stream.tell()
        return int(size > 0 and size + len(self.format(record)) + 1 > self.max_bytes)

    @staticmethod
    def _indexed_name(default_name: str) -> str:
        """fe.audit.log.20261125 -> fe.audit.log.20261125-<n>, one above the period's highest
        index so far (log4j's %i with fileIndex="max": the highest index is the newest)."""
        directory, base = os.path.split(default_name)
        taken = re.compile(re.escape(base) + r"-(\d+)$")
        indexes = [int(m.group(1)) for name in os.listdir(directory or ".")
                   if (m := taken.match(name))]
        return f"{default_name}-{max(indexes, default=0) + 1}"

    def getFilesToDelete(self) -> list[str]:
        """Rotated files older than audit_log_delete_age, and beyond audit_log_roll_num of one
        interval (oldest first), as Doris' DefaultRolloverStrategy max + Delete IfLastModified."""
        directory, base = os.path.split(self.baseFilename)
        pattern = re.compile(re.escape(base) + r"\.(\d{8,10})-(\d+)$")
        now = time.time()
        by_period: dict[str, list[tuple[int, str]]] = {}
        doomed: list[str] = []
        for name in os.listdir(directory):
            m = pattern.match(name)
            if m is None:
                continue
            path = os.path.join(directory, name)
            try:
                if now - os.path.getmtime(path) > self.delete_age:
                    doomed.append(path)
                    continue
            except OSError:
                continue
            by_period.setdefault(m.group(1), []).append((int(m.group(2)), path))
        for files in by_period.values():
            files.sort()
            doomed.extend(path for _, path in files[:max(0, len(files) - self.roll_num)])
        return doomed


class _BatchWriter(threading.Thread):
    """The writer thread (Doris' AuditEventProcessor). Statements append to `pending` (a deque:
    appending needs no lock) and wake the writer only when it is idle; the writer then waits
    `flush_seconds` so that every statement of that interval shares one wake-up, writes the
    batch and flushes the file once. Per-statement wake-ups were ~12% of a `SELECT 1`'s server
    CPU (docs/performance.md)."""

    def __init__(self, audit: AuditLog, flush_seconds: float) -> None:
        super().__init__(name="shaledb-audit-writer", daemon=True)
        self.audit = audit
        self.flush_seconds = flush_seconds
        self.wake = threading.Event()
        self.stopping = False

    def run(self) -> None:
        while True:
            self.wake.wait()
            if not self.stopping:  # gather the interval's events (close cuts the wait short)
                self.audit.closing.wait(self.flush_seconds)
            self.wake.clear()
            self.audit.write_pending()
            if self.stopping:
                self.audit.write_pending()
                return


class AuditLog:
    """The server's audit log: `log(event)` from any thread, `close()` flushes and stops.
    Lines reach the file within `flush_seconds` of their statement (and at close); a `kill -9`
    loses at most that interval's lines, less than Doris' audit loader, which batches for
    longer. At most `audit_event_log_queue_size` events wait unwritten (queued or being
    written); past that, new events are dropped and counted."""

    def __init__(self, log_dir: Path, settings: AuditSettings | None = None,
                 flush_seconds: float = FLUSH_SECONDS) -> None:
        self.settings = settings or AuditSettings()
        log_dir.mkdir(parents=True, exist_ok=True)
        self.path = log_dir / AUDIT_FILE
        self.dropped = 0
        self.file_handler = AuditFileHandler(self.path, self.settings)
        self.file_handler.setFormatter(AuditFormatter())
        self._limit = max(1, self.settings.audit_event_log_queue_size)
        # (event, time.time() of the statement's end); deque appends and pops are atomic
        self._pending: collections.deque[tuple[AuditEvent, float]] = collections.deque()
        self._in_flight = 0  # taken by the writer, not yet written
        self._stmt_ids = itertools.count(1)
        self.closing = threading.Event()
        self._closed = False
        self._writer = _BatchWriter(self, flush_seconds)
        self._writer.start()

    def next_stmt_id(self) -> int:
        return next(self._stmt_ids)

    def log(self, event: AuditEvent) -> None:
        if self._closed:
            return
        now = time.time()
        self._enqueue(event, now)
        if event.kind == "query" and event.query_time_ms > self.settings.qe_slow_log_ms:
            slow = AuditEvent(**{f.name: getattr(event, f.name) for f in fields(AuditEvent)})
            slow.kind = "slow_query"
            self._enqueue(slow, now)

    def _enqueue(self, event: AuditEvent, when: float) -> None:
        if len(self._pending) + self._in_flight >= self._limit:
            self.dropped += 1
            return
        self._pending.append((event, when))
        if not self._writer.wake.is_set():  # the writer is idle: one wake-up per interval
            self._writer.wake.set()

    def write_pending(self) -> None:
        """Write and flush what is queued (on the writer thread)."""
        batch = []
        pending = self._pending
        while pending:
            batch.append(pending.popleft())
        if not batch:
            return
        self._in_flight = len(batch)
        handler = self.file_handler
        lock = handler.lock
        assert lock is not None  # Handler.__init__ creates it
        try:
            with lock:  # one lock round and one flush for the whole batch
                for event, when in batch:
                    record = logging.LogRecord(AUDIT_LOGGER, logging.INFO, "", 0, event, None,
                                               None)
                    record.created, record.msecs = when, (when - int(when)) * 1000
                    try:
                        if handler.shouldRollover(record):
                            handler.doRollover()
                        stream = handler.stream
                        if stream is None:
                            stream = handler.stream = handler._open()
                        stream.write(handler.format(record) + handler.terminator)
                    except Exception:  # noqa: BLE001 - as logging does: report, carry on
                        handler.handleError(record)
                if handler.stream is not None:
                    handler.stream.flush()
        finally:
            self._in_flight = 0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._writer.stopping = True
        self.closing.set()
        self._writer.wake.set()
        self._writer.join()  # writes what is queued, then the thread ends
        self.file_handler.close()


def new_query_id() -> str:
    """A query id printed as Doris' DebugUtil.printId(TUniqueId): `<hi hex>-<lo hex>`. Random
    bits from the process' PRNG (seeded from the OS at start): an id only has to be unique,
    and uuid4's read of os.urandom per statement was ~2% of a point lookup."""
    return f"{_ids.getrandbits(64):x}-{_ids.getrandbits(64):x}"


_ids = random.Random()  # seeded from os.urandom


def peer(connection: Any) -> tuple[str, str]:
    """(client "ip:port", frontend ip) of a mysql-mimic connection."""
    writer = connection.stream.writer
    remote = writer.get_extra_info("peername")
    local = writer.get_extra_info("sockname")
    client = f"{remote[0]}:{remote[1]}" if isinstance(remote, tuple) else "localhost"
    fe_ip = local[0] if isinstance(local, tuple) else "127.0.0.1"
    return client, fe_ip

