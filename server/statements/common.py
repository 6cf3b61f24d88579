"""Small helpers every statement family uses: the "not supported" error, the (db, table) parts
of a table node and the LIKE filter of SHOW rows."""

from __future__ import annotations

from sqlglot import expressions as exp

from sql.errors import DorisError, ErrorCode, ShaleError
from sql.show import statements as show


def not_supported(what: str) -> ShaleError:
    return DorisError(f"{what} is not supported yet", ErrorCode.UNKNOWN_ERROR)


def table_parts(node: exp.Expression) -> tuple[str | None, str]:
    """(db, table) of a Table / Identifier / Schema node."""
    if isinstance(node, exp.Schema):
        node = node.this
    if isinstance(node, exp.Table):
        return (node.text("db") or None), node.name
    return None, node.name


def like_filter(rows: list[tuple[object, ...]], pattern: str | None) -> list[tuple[object, ...]]:
    if pattern is None:
        return rows
    return [r for r in rows if show.like_match(str(r[0]), pattern)]
