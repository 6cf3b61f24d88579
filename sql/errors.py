"""MySQL error codes and Doris wording for the SQL layer (re-exported from `storage.errors`).

The definitions live in the lowest layer so storage can raise user-facing errors too; SQL,
planner, executor and server code import them from here.
"""

from storage.errors import (  # noqa: F401
    DorisError,
    ErrorCode,
    QueryCancelled,
    ShaleError,
    no_database_selected,
    table_not_found,
    unknown_database,
)
