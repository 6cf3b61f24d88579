"""Flight SQL errors: which gRPC status a client sees for each of our errors.

Every SQL error keeps the MySQL error's code, SQLSTATE and Doris' text in its message, as the
mysql client prints it (`ERROR 1146 (42S02): errCode = 2, detailMessage = Table [t] does not
exist in database [db].`), so an ADBC user reads Doris' wording; the gRPC status says what kind
of failure it is, as Flight SQL servers use them:

    INVALID_ARGUMENT   a statement that cannot run: syntax, analysis (Doris' `errCode = 2`),
                       wrong values, a malformed Flight SQL command
    NOT_FOUND          an unknown table, database or thread; an unknown statement handle
    UNAUTHENTICATED    a failed login, an expired token
    PERMISSION_DENIED  a missing privilege; a login past the user's max_user_connections
    CANCELLED          KILL QUERY / KILL, the client's own cancel, a server stop
    DEADLINE_EXCEEDED  the query ran past `query_timeout`
    UNIMPLEMENTED      a statement or command this server does not serve over Flight SQL
    INTERNAL           anything else (a bug, an I/O failure)

Doris' own Arrow Flight SQL answers INTERNAL for all of them with the MySQL code and text in
the message (DorisFlightSqlProducer); we keep that message and tell the kinds apart.

pyarrow serves INVALID_ARGUMENT, NOT_FOUND and UNIMPLEMENTED only from the Python exceptions
ValueError, KeyError and NotImplementedError, and appends the raising frames to their message
(`. Detail: Python exception: Traceback ...`); service.py raises them from frames compiled
without a source file, so that detail names no server path or source line.
"""

from __future__ import annotations

import pyarrow as pa
from pyarrow import flight

from sql.errors import ErrorCode, ShaleError

# query_timeout's error (server/statements/query_timeout.py)
_TIMEOUT_TEXT = "Query exceeded time limit of"
_UNAUTHENTICATED = frozenset({ErrorCode.ACCESS_DENIED, ErrorCode.PASSWORD_EXPIRED,
                              ErrorCode.ACCOUNT_LOCKED})
_DENIED = frozenset({ErrorCode.DBACCESS_DENIED, ErrorCode.TABLEACCESS_DENIED,
                     ErrorCode.SPECIFIC_ACCESS_DENIED, ErrorCode.KILL_DENIED,
                     ErrorCode.SECURE_TRANSPORT_REQUIRED, ErrorCode.TOO_MANY_USER_CONNECTIONS})
_NOT_FOUND = frozenset({ErrorCode.NO_SUCH_TABLE, ErrorCode.BAD_DB_ERROR,
                        ErrorCode.UNKNOWN_TABLE_IN_DB, ErrorCode.BAD_TABLE_ERROR,
                        ErrorCode.NO_SUCH_THREAD, ErrorCode.DROP_PARTITION_NON_EXISTENT})
_INVALID = frozenset({ErrorCode.PARSE_ERROR, ErrorCode.BAD_FIELD_ERROR,
                      ErrorCode.WRONG_VALUE_COUNT, ErrorCode.DATA_OUT_OF_RANGE,
                      ErrorCode.WRONG_VALUE_FOR_VAR, ErrorCode.WRONG_TYPE_FOR_VAR,
                      ErrorCode.UNKNOWN_SYSTEM_VARIABLE, ErrorCode.UNKNOWN_CHARACTER_SET,
                      ErrorCode.UNKNOWN_TIME_ZONE, ErrorCode.NO_DB_ERROR,
                      ErrorCode.TABLE_EXISTS_ERROR, ErrorCode.DB_CREATE_EXISTS,
                      ErrorCode.DB_DROP_EXISTS, ErrorCode.SAME_NAME_PARTITION,
                      ErrorCode.COLOCATE, ErrorCode.NONEXISTING_GRANT, ErrorCode.CANNOT_USER,
                      ErrorCode.PASSWORD_HISTORY})
# Doris' FE analysis error text (storage/errors.py analysis_message)
_ANALYSIS_PREFIX = "errCode = 2, detailMessage = "


def mysql_text(error: ShaleError) -> str:
    """The error as the mysql client prints it: code, SQLSTATE and Doris' text."""
    return f"ERROR {error.code} ({error.sqlstate}): {error.message}"


def flight_error(error: ShaleError) -> Exception:
    """The exception whose gRPC status and message the client receives for `error`."""
    text = mysql_text(error)
    code = error.code
    if code == ErrorCode.QUERY_INTERRUPTED:
        return flight.FlightCancelledError(text)
    if _TIMEOUT_TEXT in error.message:
        return flight.FlightTimedOutError(text)
    if code in _UNAUTHENTICATED:
        return flight.FlightUnauthenticatedError(text)
    if code in _DENIED:
        return flight.FlightUnauthorizedError(text)
    if code in _NOT_FOUND:
        return not_found(text)
    if code == ErrorCode.NOT_SUPPORTED_YET:
        return unimplemented(text)
    if code in _INVALID or error.message.startswith(_ANALYSIS_PREFIX):
        return invalid_argument(text)
    return flight.FlightInternalError(text)


def invalid_argument(text: str) -> Exception:
    return pa.ArrowInvalid(text)


def not_found(text: str) -> Exception:
    return pa.ArrowKeyError(text)


def unimplemented(text: str) -> Exception:
    return pa.ArrowNotImplementedError(text)


def internal(error: BaseException) -> Exception:
    return flight.FlightInternalError(f"Internal error: {error}")

