"""`StatementRunner`: one per connection, the session state every statement reads and changes
(current database, variables, user and access, cancel token, last warnings) and the entry
point `run(stmt)`, which checks privileges and hands the statement to its family's handler
(server/statements/dispatch.py). The handlers themselves live in query.py, dml.py, ddl.py,
show.py and admin.py; this module holds no statement logic and no sockets."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlglot import expressions as exp

from executor.file_dirs import FileDirs
from executor.file_scan import LocalFiles
from executor.insert import Tolerance
from server.deadlines import Deadlines
from server.plan_cache import PlanCache
from server.privileges import Access
from server.privileges.enforce import VisibleCatalog, authorize, is_superuser
from server.profiles import QueryProfiles
from server.statements import admin, dml, processlist
from server.statements.dispatch import handler_for
from server.statements.outcomes import OkOutcome, Outcome
from server.variables import SessionVariables, query_options
from sql.options import QueryOptions, SessionContext
from storage.catalog.meta import TableMeta
from storage.engine import StorageEngine
from storage.group_commit import GroupCommitOptions
from storage.scan_stats import ScanStats


@dataclass(frozen=True)
class StatementServices:
    """What statements use of the server, shared by every connection (server/app.py builds
    it once): the storage engine (and its catalog), the query profiles, the query_timeout
    timer thread, the import / export directories and the connection list."""

    engine: StorageEngine
    profiles: QueryProfiles
    # query_timeout: the server's one timer thread (server/deadlines.py)
    deadlines: Deadlines
    # where local() reads and OUTFILE / EXPORT write (conf [load] import_dir / export_dir)
    file_dirs: FileDirs
    # every connection's SHOW PROCESSLIST row (the server's connection adapter)
    processlist: Callable[[], list[tuple[object, ...]]] = list
    # plans of repeated COM_QUERY texts, shared by every connection (server/plan_cache.py)
    plan_cache: PlanCache = field(default_factory=PlanCache)

    @classmethod
    def for_engine(cls, engine: StorageEngine) -> StatementServices:
        """Services of an engine run without a server (tests, tools): no other connections."""
        return cls(engine, QueryProfiles(), Deadlines(), FileDirs.under(engine.data_dir))


class StatementRunner:
    """One per connection: holds the session state statements read and change. The current
    database and user are the session's (`current_db` / `set_db` / `current_user`)."""

    def __init__(
        self, services: StatementServices, variables: SessionVariables, connection_id: int,
        current_db: Callable[[], str | None], set_db: Callable[[str | None], None],
        current_user: Callable[[], str] = lambda: "root",
    ) -> None:
        self.services = services
        self.engine = services.engine
        self.deadlines = services.deadlines
        self.file_dirs = services.file_dirs
        self.profiles = services.profiles
        self.processlist = services.processlist
        self._current_user = current_user
        self.login_time = time.time()
        self.statement_text = ""
        self.statement_start = 0.0
        self.global_vars = variables.global_variables
        self.variables = variables
        self.connection_id = connection_id
        self._current_db = current_db
        self.set_db = set_db
        # who runs the statements (server/privileges/); None = an internal caller, unchecked
        self.access: Access | None = None
        self.cancel = threading.Event()
        # The scan counters of the statement's query (its audit line's ScanRows / ScanBytes).
        self.scan_stats: ScanStats | None = None
        # Writes a failed INSERT's filtered rows to an error log and returns its URL on the
        # HTTP port (Doris' tracking_url); set by the session, None: no URL in the error
        self.error_log_url: Callable[[list[str]], str] | None = None
        # SHOW STATUS rows from the connection (server/tls.py status_rows), set by the session
        self.status_rows: Callable[[], list[tuple[object, ...]]] = list
        # SHOW WARNINGS: (Level, Code, Message) of the last statement that was not SHOW WARNINGS
        self.last_warnings: list[tuple[str, int, str]] = []

    def begin_statement(self, text: str = "") -> None:
        """A fresh cancel token per statement: a late KILL or timer never hits the next one."""
        self.cancel = threading.Event()
        self.statement_text = text
        self.statement_start = time.time()
        self.scan_stats = None

    def process_row(self) -> tuple[object, ...]:
        """This connection's SHOW PROCESSLIST row."""
        return processlist.process_row(self.connection_id, self.user, self.login_time,
                                       self.database, self.statement_text, self.statement_start)

    @property
    def database(self) -> str | None:
        return self._current_db()

    @property
    def user(self) -> str:
        """The logged-in user's name (the session's, changed by COM_CHANGE_USER)."""
        return self._current_user()

    # ---- context for the SQL layer ----------------------------------------------------------
    def lookup_variable(self, name: str) -> object:
        low = name.lower()
        scope = None
        for prefix in ("session.", "local.", "global."):
            if low.startswith(prefix):
                scope, low = prefix[:-1], low[len(prefix):]
        if scope == "global":
            return self.global_vars.get_variable(low)
        return self.variables.get_variable(low)

    def context(self) -> SessionContext:
        host = self.access.identity.host if self.access is not None else "%"
        return SessionContext(
            database=self.database, connection_id=self.connection_id, user=f"{self.user}@%",
            current_user=f"'{self.user}'@'{host}'", options=self.options(),
            cancel=self.cancel, system_variables=self.lookup_variable, table_functions=LocalFiles(
                self.file_dirs, lambda: [b.backend_id for b in self.engine.catalog.backends()]),
            stored_bounds=getattr(self.engine, "stored_bounds", None),
        )

    def visible_catalog(self) -> Any:
        """The catalog as this user may see it (information_schema, SHOW DATABASES/TABLES)."""
        if self.access is None or is_superuser(self.access):
            return self.engine.catalog
        return VisibleCatalog(self.engine.catalog, self.access)

    def options(self) -> QueryOptions:
        """This statement's typed query options (server/variables.py builds them, cached until
        the next SET)."""
        return query_options(self.variables)

    def tolerance(self) -> Tolerance:
        """Doris' enable_insert_strict / insert_max_filter_ratio for this statement."""
        options = self.options()
        return Tolerance(options.enable_insert_strict, options.insert_max_filter_ratio,
                         error_log=self.error_log_url)

    def group_commit(self, table: TableMeta) -> GroupCommitOptions | None:
        """Doris' `group_commit` session variable: off_mode, sync_mode, async_mode (the
        registry refuses other values at SET)."""
        if self.options().group_commit == "off_mode":
            return None
        return GroupCommitOptions.for_table(table)

    def warn(self, messages: list[str]) -> OkOutcome:
        """An OK whose warnings (count in the OK packet, texts in SHOW WARNINGS) are
        `messages`: failures the statement caused but did not fail on."""
        self.last_warnings = [("Warning", 1105, m) for m in messages]
        return OkOutcome(warnings=len(messages))

    # ---- dispatch ---------------------------------------------------------------------------
    def run(self, stmt: exp.Expression) -> Outcome:
        if self.access is not None:  # every statement family's privilege check
            authorize(self.access, stmt, self.database)
        if not (isinstance(stmt, exp.Show) and stmt.name.upper() in ("WARNINGS", "ERRORS")):
            self.last_warnings = []
        return handler_for(stmt)(self, stmt)

    def use(self, name: str) -> None:
        """USE / COM_INIT_DB (server/statements/admin.py)."""
        admin.use(self, name)

    def try_fast_insert(self, sql: str) -> Outcome | None:
        """INSERT VALUES without the SQL parser (server/statements/dml.py)."""
        return dml.try_fast_insert(self, sql)
