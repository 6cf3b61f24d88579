"""User-facing errors: MySQL error codes, SQLSTATEs and Doris' message wording.

Every error a client can see is a `ShaleError`; the server turns it into a MySQL error packet
with `code`, `sqlstate` and `message`. Doris sends analysis and DDL errors as 1105 / HY000 with
the text `errCode = 2, detailMessage = <text>` (DORIS_REFERENCE.md a.0); `DorisError` builds
that wording. This module lives in `storage` (the lowest layer) so every layer can raise these;
`sql.errors` re-exports it under the name DESIGN.md gives it.
"""

from __future__ import annotations


class ErrorCode:
    """MySQL server error numbers we send (subset of mysqld_error.h)."""

    DB_CREATE_EXISTS = 1007
    DB_DROP_EXISTS = 1008
    NO_DB_ERROR = 1046
    BAD_DB_ERROR = 1049
    TABLE_EXISTS_ERROR = 1050
    BAD_TABLE_ERROR = 1051
    BAD_FIELD_ERROR = 1054
    WRONG_VALUE_COUNT = 1136
    PARSE_ERROR = 1064
    UNKNOWN_CHARACTER_SET = 1115
    UNKNOWN_ERROR = 1105
    NO_SUCH_TABLE = 1146
    UNKNOWN_SYSTEM_VARIABLE = 1193
    WRONG_VALUE_FOR_VAR = 1231
    NOT_SUPPORTED_YET = 1235
    QUERY_INTERRUPTED = 1317
    NO_SUCH_THREAD = 1094
    ACCESS_DENIED = 1045
    UNKNOWN_TABLE_IN_DB = 1109
    WRONG_TYPE_FOR_VAR = 1232
    UNKNOWN_TIME_ZONE = 1298
    DROP_PARTITION_NON_EXISTENT = 1507
    SAME_NAME_PARTITION = 1517
    COLOCATE = 5063
    DATA_OUT_OF_RANGE = 1690  # ER_DATA_OUT_OF_RANGE: arithmetic overflow
    DBACCESS_DENIED = 1044
    KILL_DENIED = 1095
    NONEXISTING_GRANT = 1141
    TABLEACCESS_DENIED = 1142
    TOO_MANY_USER_CONNECTIONS = 1203
    SPECIFIC_ACCESS_DENIED = 1227
    CANNOT_USER = 1396
    PASSWORD_EXPIRED = 1862  # ER_MUST_CHANGE_PASSWORD_LOGIN
    ACCOUNT_LOCKED = 3955  # ER_USER_ACCESS_DENIED_FOR_USER_ACCOUNT_BLOCKED_BY_PASSWORD_LOCK
    PASSWORD_HISTORY = 3638  # ER_CREDENTIALS_CONTRADICT_TO_HISTORY
    SECURE_TRANSPORT_REQUIRED = 3159


_SQLSTATES = {
    ErrorCode.DB_CREATE_EXISTS: "HY000",
    ErrorCode.DB_DROP_EXISTS: "HY000",
    ErrorCode.NO_DB_ERROR: "3D000",
    ErrorCode.BAD_DB_ERROR: "42000",
    ErrorCode.TABLE_EXISTS_ERROR: "42S01",
    ErrorCode.BAD_TABLE_ERROR: "42S02",
    ErrorCode.BAD_FIELD_ERROR: "42S22",
    ErrorCode.WRONG_VALUE_COUNT: "21S01",
    ErrorCode.PARSE_ERROR: "42000",
    ErrorCode.UNKNOWN_CHARACTER_SET: "42000",
    ErrorCode.NO_SUCH_TABLE: "42S02",
    ErrorCode.UNKNOWN_SYSTEM_VARIABLE: "HY000",
    ErrorCode.WRONG_VALUE_FOR_VAR: "42000",
    ErrorCode.NOT_SUPPORTED_YET: "42000",
    ErrorCode.QUERY_INTERRUPTED: "70100",
    ErrorCode.ACCESS_DENIED: "28000",
    ErrorCode.UNKNOWN_TABLE_IN_DB: "42S02",
    ErrorCode.WRONG_TYPE_FOR_VAR: "42000",
    ErrorCode.COLOCATE: "42000",
    ErrorCode.DATA_OUT_OF_RANGE: "22003",
    ErrorCode.DBACCESS_DENIED: "42000",
    ErrorCode.TABLEACCESS_DENIED: "42000",
    ErrorCode.SPECIFIC_ACCESS_DENIED: "42000",
    ErrorCode.NONEXISTING_GRANT: "42000",
    ErrorCode.TOO_MANY_USER_CONNECTIONS: "42000",
    ErrorCode.ACCOUNT_LOCKED: "HY000",
    ErrorCode.PASSWORD_EXPIRED: "HY000",
    ErrorCode.PASSWORD_HISTORY: "HY000",
    ErrorCode.SECURE_TRANSPORT_REQUIRED: "HY000",
}


class ShaleError(Exception):
    """An error with a MySQL code; `message` is exactly what the client receives."""

    def __init__(self, message: str, code: int = ErrorCode.UNKNOWN_ERROR,
                 sqlstate: str | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.sqlstate = sqlstate or _SQLSTATES.get(code, "HY000")


def analysis_message(detail: str) -> str:
    """Doris' FE text for an analysis error (its AnalysisException), the one spelling of it."""
    return f"errCode = 2, detailMessage = {detail}"


def load_analysis_message(detail: str) -> str:
    """The same error as a load's Message (Stream Load, group commit, the 2PC endpoint's `msg`
    carries the bare analysis_message)."""
    return f"[ANALYSIS_ERROR]TStatus: {analysis_message(detail)}"


class DorisError(ShaleError):
    """Doris analysis/DDL error: 1105 HY000 `errCode = 2, detailMessage = <detail>`."""

    def __init__(self, detail: str, code: int = ErrorCode.UNKNOWN_ERROR):
        super().__init__(analysis_message(detail), code)
        self.detail = detail


class QueryCancelled(ShaleError):
    def __init__(self, reason: str = "Query was cancelled"):
        super().__init__(reason, ErrorCode.QUERY_INTERRUPTED)


def unknown_database(name: str) -> ShaleError:
    return DorisError(f"Unknown database '{name}'", ErrorCode.BAD_DB_ERROR)


def table_not_found(db: str, name: str) -> ShaleError:
    """A statement names a table that does not exist: Doris' wording (Nereids binder), but
    MySQL's code 1146 / SQLSTATE 42S02 instead of Doris' 1105 / HY000. Deliberate deviation:
    JDBC tools decide "table missing" from that code; Spark's MySQL dialect only creates the
    target table of `df.write.jdbc` when its existence probe fails with exactly 1146."""
    return DorisError(f"Table [{name}] does not exist in database [{db}].", ErrorCode.NO_SUCH_TABLE)


def no_database_selected() -> ShaleError:
    return DorisError("No database selected", ErrorCode.NO_DB_ERROR)
