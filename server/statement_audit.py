"""What one session tells the audit log (server/audit.py): its statements and login attempts.

A `StatementAudit` follows the statement in flight: `begin` when a COM_QUERY statement (or a
prepared statement's execution) starts, `outcome` with what it returned, `add_returned` as
result rows are sent, `error` when an error packet answers it, `end` once its last packet is
out; `end` builds the `AuditEvent` and hands it to the log's queue, nothing more on the
statement's path. Doris fills the same event in `AuditLogHelper.logAuditLog` after
`StmtExecutor` finished.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from server.audit import AuditEvent, AuditLog, new_query_id, peer

if TYPE_CHECKING:
    from server.services import ServerStats
    from storage.scan_stats import ScanStats

QUERY_INTERRUPTED = 1317


class StatementAudit:
    """One session's statements in the audit log; statements answered with an error also
    count in `stats.query_err_total` (/metrics)."""

    def __init__(self, audit: AuditLog, stats: ServerStats) -> None:
        self.audit = audit
        self.stats = stats
        self.client = ""
        self.fe_ip = ""
        self._event: AuditEvent | None = None
        self._start = 0.0

    def bind(self, connection: Any) -> None:
        self.client, self.fe_ip = peer(connection)

    @property
    def in_flight(self) -> bool:
        return self._event is not None

    def begin(self, sql: str, user: str, db: str | None, max_sql_length: int) -> None:
        """`max_sql_length`: the session's audit_plugin_max_sql_length."""
        self.end()  # the previous statement of a multi-statement COM_QUERY
        self._start = time.monotonic()
        self._event = AuditEvent(
            client=self.client, user=user, db=db or "", state="OK", stmt=sql,
            stmt_id=self.audit.next_stmt_id(), query_id=new_query_id(),
            fe_ip=self.fe_ip, max_sql_length=max_sql_length)

    def outcome(self, state: str, is_query: bool, rows: int = 0) -> None:
        """The statement's reply: EOF (a result set) or OK; `rows` of an in-memory result."""
        e = self._event
        if e is not None and e.state != "ERR":
            e.state, e.is_query, e.is_nereids = state, is_query, is_query
            e.return_rows = rows  # result-set rows are added as they are sent

    def add_returned(self, rows: int) -> None:
        if self._event is not None:
            self._event.return_rows += rows

    def error(self, code: int, message: str) -> None:
        e = self._event
        if e is not None:
            e.state, e.error_code, e.error_message = "ERR", code, message

    def end(self, scan: ScanStats | None = None, killed: bool = False,
            db: str | None = None) -> None:
        e, self._event = self._event, None
        if e is None:
            return
        if killed and e.state != "ERR":  # KILL QUERY cancelled it before any error was sent
            e.state, e.error_code, e.error_message = "ERR", QUERY_INTERRUPTED, "Query was killed"
        e.query_time_ms = int((time.monotonic() - self._start) * 1000)
        if db is not None:
            e.db = db  # Doris logs the database the statement ends in (USE d: d)
        if scan is not None:
            # Doris' ScanRows: rows the scanners read (after short-key and zone-map pruning).
            e.scan_rows = scan.rows_total - scan.rows_skipped_short_key - scan.rows_skipped_zone_map
            e.scan_bytes = scan.bytes_read
        if e.state == "ERR":
            self.stats.query_err_total += 1
        self.audit.log(e)


def audit_login(audit: AuditLog, stats: ServerStats, connection: Any, user: str,
                db: str | None, elapsed_ms: int, code: int = 0, message: str = "") -> None:
    """One `[connection]` line per login attempt; a failed one also counts in /metrics."""
    client, fe_ip = peer(connection)
    if code:
        stats.login_failed_total += 1
    audit.log(AuditEvent(
        kind="connection", client=client, user=user, db=db or "",
        state="ERR" if code else "OK", error_code=code, error_message=message,
        query_time_ms=elapsed_ms, stmt_id=audit.next_stmt_id(), fe_ip=fe_ip))
