"""What the connection-facing parts use of the server, as narrow objects server/app.py builds
once: `SessionServices` for every MySQL session (server/session.py, and through it the
connection, prepared statements and LOAD DATA LOCAL), `HttpServices` for the HTTP listener
(server/http.py, stream_load.py, load_status.py, metrics.py), and the counters both update
(`ServerStats`). None of them holds the `ShaleServer`, so a session or a route can be built
and read without the whole server (statements have had `StatementServices` since issue 15).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from server.audit import AuditLog
from server.privileges import PrivilegeManager
from server.privileges.statements import AccountStatements
from server.statement_cache import ParseCache
from server.statements import StatementServices
from server.variables import GlobalVariables
from storage.engine import StorageEngine

if TYPE_CHECKING:
    from prometheus_client.registry import Metric


@dataclass
class ServerStats:
    """The server's counters (/metrics, COM_STATISTICS, the audit log's error count)."""

    connections_total: int = 0
    queries_total: int = 0
    insert_fast_path_total: int = 0  # INSERT VALUES statements the literal scanner took
    point_query_fast_path_total: int = 0  # point lookups run from a template (point_query.py)
    query_err_total: int = 0  # statements answered with an error (audit State=ERR)
    login_failed_total: int = 0  # login attempts refused (wrong password, unknown user or db)
    started_at: float = field(default_factory=time.time)


class ConnectionList(Protocol):
    """The server's open connections (server/app.py SequentialControl)."""

    def has(self, connection_id: int) -> bool: ...

    def count(self) -> int: ...

    def session_of(self, connection_id: int) -> object | None: ...

    def sessions(self) -> list[object]: ...

    async def kill(self, connection_id: int, kind: Any) -> None: ...  # mysql-mimic's KillKind


@dataclass(frozen=True)
class SessionServices:
    """What a MySQL session uses of the server, shared by every connection."""

    statements: StatementServices  # handed to each session's StatementRunner
    global_vars: GlobalVariables  # each session's variables fall back to these
    privileges: PrivilegeManager  # logins, grants read live by every statement's Access
    account_statements: AccountStatements  # CREATE USER, GRANT, ... (their own parser)
    # statements run on `pool`; those reading no table and catalog lookups on `session_pool`
    pool: Executor
    session_pool: Executor
    stats: ServerStats
    audit: AuditLog
    connections: ConnectionList  # KILL, max_user_connections, COM_STATISTICS
    database_exists: Callable[[str], bool]  # the database named at connect
    # the URL of an error log file served by the HTTP listener (its port is known at start)
    error_log_url: Callable[[str], str]
    # parse trees by statement text, shared by every session (server/statement_cache.py)
    parse_cache: ParseCache = field(default_factory=ParseCache)

    @property
    def engine(self) -> StorageEngine:
        return self.statements.engine


@dataclass(frozen=True)
class HttpServices:
    """What the HTTP listener's routes use of the server."""

    engine: StorageEngine
    privileges: PrivilegeManager  # HTTP basic auth against the MySQL accounts
    stats: ServerStats
    audit: AuditLog  # /metrics reads its dropped-event count
    mysql_port: Callable[[], int]  # /api/bootstrap; bound once the MySQL listener started
    # /api/backends advertises it (-1: Arrow Flight SQL is off); bound once its listener started
    flight_port: Callable[[], int] = lambda: -1
    # /metrics: the Flight port's call slots and sessions (none while it is off)
    flight_metrics: Callable[[], Iterable[Metric]] = lambda: ()
