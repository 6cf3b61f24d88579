"""SHOW PROCESSLIST: one row per connection in Doris' columns, and who may see which rows
(a user without ADMIN / GRANT sees only their own sessions, as in Doris)."""

from __future__ import annotations

import time

from server.privileges import Access
from server.privileges.enforce import may_manage_sessions

COLUMNS = ["Id", "User", "Host", "LoginTime", "Catalog", "Db", "Command", "Time", "State",
           "QueryId", "Info"]


def process_row(connection_id: int, user: str, login_time: float, database: str | None,
                statement_text: str, statement_start: float) -> tuple[object, ...]:
    """A connection's row: Query while a statement runs (its first 100 characters), else Sleep."""
    busy = bool(statement_text)
    return (
        str(connection_id), user, "127.0.0.1", _fmt_ts(login_time), "internal",
        database or "", "Query" if busy else "Sleep",
        str(int(time.time() - (statement_start or login_time))), "OK", "",
        statement_text[:100],
    )


def visible_rows(rows: list[tuple[object, ...]], access: Access | None,
                 user: str) -> list[tuple[object, ...]]:
    if access is not None and not may_manage_sessions(access):
        return [r for r in rows if r[1] == user]  # own sessions only (Doris)
    return rows


def _fmt_ts(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
