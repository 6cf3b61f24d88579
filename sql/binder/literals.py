"""Literal typing and session constants for the binder.

Numeric literals get Doris' types (smallest integer type, DECIMAL(p,s) for `1.50`, DOUBLE for
`1e3`); session values (@@variables, DATABASE(), USER(), CONNECTION_ID(), VERSION(), NOW(),
CURDATE() ...) are folded into literals once per statement, as Doris evaluates them at
analysis time. Also undoes sqlglot's strftime rewriting of DATE_FORMAT patterns.
"""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlglot import exp

from sql.binder.expressions import Literal
from sql.functions.coercion import literal_int_type, literal_string_type
from storage.types import (
    BIGINT,
    DATE,
    DOUBLE,
    EXACT_DECIMALS,
    NULL,
    TypeKind,
    date_to_days,
    datetime,
    datetime_to_micros,
    decimal,
    varchar,
)

if TYPE_CHECKING:
    from sql.binder.bind_expressions import SessionLike

# sqlglot node classes of session functions -> our key
SESSION_FUNCTIONS: dict[type, str] = {
    exp.CurrentSchema: "database", exp.CurrentUser: "current_user",
    exp.CurrentVersion: "version", exp.CurrentDate: "curdate", exp.CurrentTimestamp: "now",
    exp.Localtime: "now", exp.Localtimestamp: "now", exp.UtcTimestamp: "utc_timestamp",
}
_NOW_KEYS = {"now", "sysdate", "current_timestamp", "localtime", "localtimestamp",
             "utc_timestamp"}


def session_constant(key: str, nargs: int, precision: object, session: SessionLike | None,
                     now: _dt.datetime) -> Literal | None:
    """The literal a session function folds to, or None if `key` is not one."""
    s = session
    if key in ("database", "schema"):
        return Literal(s.database if s is not None else None, varchar(64))
    if key in ("user", "session_user", "system_user"):
        return value_literal(s.user if s is not None else "")
    if key == "current_user":
        return value_literal(s.current_user if s is not None else "")
    if key == "connection_id":
        return Literal(s.connection_id if s is not None else 0, BIGINT)
    if key == "version":
        return value_literal(s.options.version if s is not None else "")
    if key in _NOW_KEYS:
        scale = min(max(int(precision), 0), 6) if isinstance(precision, int) else 0
        if key == "utc_timestamp":
            now = _dt.datetime.fromtimestamp(now.timestamp(), _dt.UTC).replace(
                tzinfo=None)
        return Literal(datetime_to_micros(now, scale), datetime(scale))
    if key in ("curdate", "current_date"):
        return Literal(date_to_days(now.date()), DATE)
    if key == "unix_timestamp" and nargs == 0:
        return Literal(int(now.timestamp()), BIGINT)
    return None


def number_literal(text: str) -> Literal:
    """Type a numeric literal as Doris does: smallest integer type, DECIMAL(p,s) for `1.50`,
    DOUBLE with an exponent (or beyond 38 digits)."""
    low = text.lower()
    if "e" in low or low in ("inf", "nan"):
        return Literal(float(text), DOUBLE)
    if "." in text:
        d = Decimal(text)
        digits = d.as_tuple()
        scale = max(-int(digits.exponent), 0)
        prec = max(len(digits.digits), scale, 1)
        if prec > 38:
            return Literal(float(text), DOUBLE)
        return Literal(int(d.scaleb(scale, EXACT_DECIMALS)), decimal(prec, scale))
    v = int(text)
    t = literal_int_type(v)
    if t.kind is TypeKind.LARGEINT and not -(2**127) <= v < 2**127:
        return Literal(float(v), DOUBLE)
    return Literal(v, t)


_STRFTIME_TO_MYSQL = {
    "%Y": "%Y", "%y": "%y", "%m": "%m", "%-m": "%c", "%d": "%d", "%-d": "%e", "%H": "%H",
    "%-H": "%k", "%I": "%h", "%-I": "%l", "%M": "%i", "%S": "%s", "%f": "%f", "%p": "%p",
    "%B": "%M", "%b": "%b", "%A": "%W", "%a": "%a", "%j": "%j", "%W": "%u", "%U": "%U",
    "%G": "%x", "%%": "%%",
}


def strftime_to_mysql(fmt: str) -> str:
    """Undo sqlglot's MySQL -> strftime format conversion (DATE_FORMAT patterns)."""
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            spec = fmt[i: i + 3] if fmt[i + 1] == "-" else fmt[i: i + 2]
            out.append(_STRFTIME_TO_MYSQL.get(spec, spec))
            i += len(spec)
            continue
        out.append(fmt[i])
        i += 1
    return "".join(out)


def value_literal(value: object) -> Literal:
    if value is None:
        return Literal(None, NULL)
    if isinstance(value, bool):
        return Literal(int(value), BIGINT)
    if isinstance(value, int):
        return Literal(value, BIGINT)
    if isinstance(value, float):
        return Literal(value, DOUBLE)
    text = str(value)
    return Literal(text, literal_string_type(text))
