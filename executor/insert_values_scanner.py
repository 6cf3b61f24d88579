"""Literal scanner for `INSERT INTO t [(cols)] VALUES (...), (...)` statements.

Tools (pandas, JDBC batch writers, Spark) send inserts of thousands of rows as one statement
of plain literals; parsing those into a sqlglot tree costs ~75 µs a row. This scanner reads the
statement text with regular expressions (C speed) instead: a header match for the target and
column list, then one `findall` over the rows that yields every row's literal tokens, column
by column. It only recognises the simple shape: each value a number (`-1`, `+2.5`, `1e-3`),
a quoted string ('..' or ".." with MySQL's backslash escapes and doubled quotes), NULL, TRUE
or FALSE; rows separated by commas, an optional `;` at the end. Anything else (expressions,
functions, DEFAULT, PARTITION, WITH LABEL, ON DUPLICATE, INSERT ... SELECT, comments, a row
with the wrong number of values) returns None, and the caller uses the general path, which
gives the same result or the same error. Tokens stay text here; executor/insert.py converts
them column by column with the general path's casting rules.

`scan_tokens` is the faster first choice: the numba kernel of executor/kernels/insert_values.py
reads the statement's UTF-8 bytes once and hands back typed token arrays (kind, byte span,
parsed number digits) instead of text, for the same grammar over ASCII whitespace; when it
says no, the regex scanner above still gets its turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from executor.kernels import insert_values as K

# A quoted string: backslash escapes anything (incl. a quote), a doubled quote is a quote.
_SQ = r"'(?:[^'\\]|\\.|'')*'"
_DQ = r'"(?:[^"\\]|\\.|"")*"'
_NUM = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
TOKEN = rf"(?:{_SQ}|{_DQ}|{_NUM}|NULL|TRUE|FALSE)"
_FLAGS = re.IGNORECASE | re.DOTALL

_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_$]*)"
_HEADER = re.compile(
    rf"\s*INSERT\s+INTO\s+(?:(?P<db>{_IDENT})\s*\.\s*)?(?P<table>{_IDENT})\s*"
    rf"(?:\((?P<cols>\s*{_IDENT}\s*(?:,\s*{_IDENT}\s*)*)\)\s*)?VALUES\s*", _FLAGS)

# MySQL escape sequences inside quoted strings (\% and \_ keep their backslash, as in MySQL).
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a",
            "%": "\\%", "_": "\\_"}
_UNESCAPE = {q: re.compile(r"\\(.)|" + q + q, re.DOTALL) for q in "'\""}


@dataclass(frozen=True, slots=True)
class ScannedInsert:
    db: str | None
    table: str
    columns: list[str] | None  # the explicit column list, None when absent
    values: list[tuple[str, ...]]  # per target column, every row's literal token (raw text)
    num_rows: int


def _ident(text: str) -> str:
    return text[1:-1].replace("``", "`") if text.startswith("`") else text


@lru_cache(maxsize=64)
def row_pattern(n: int) -> re.Pattern[str]:
    """One row of `n` literals and the comma after it (scan_rows adds one after the last row);
    group 1 is the whole match (to check
    the rows tile the text), groups 2.. the literals."""
    values = r"\s*,\s*".join([f"({TOKEN})"] * n)
    return re.compile(rf"(\(\s*{values}\s*\)\s*,\s*)", _FLAGS)


def scan_header(sql: str) -> tuple[str | None, str, list[str] | None, int] | None:
    """(db, table, column list, offset of the first row) or None."""
    m = _HEADER.match(sql)
    if m is None:
        return None
    db = _ident(m.group("db")) if m.group("db") else None
    cols = None
    if m.group("cols") is not None:
        cols = [_ident(c.strip()) for c in re.findall(_IDENT, m.group("cols"))]
    return db, _ident(m.group("table")), cols, m.end()


def scan_rows(sql: str, start: int, ncols: int) -> list[tuple[str, ...]] | None:
    """Per column, the tokens of every row; None unless the rows cover the text exactly."""
    if ncols < 1:
        return None
    body = sql[start:].rstrip()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    if not body:
        return None
    body += ","  # every row, the last one too, then ends with its comma (a missing one fails)
    rows = row_pattern(ncols).findall(body)
    # findall skips text it cannot match: the matches must add up to the whole body.
    if not rows or sum(len(r[0]) for r in rows) != len(body):
        return None
    columns = list(zip(*rows))[1:]
    return columns


def scan_insert(sql: str, table_columns: int | None = None) -> ScannedInsert | None:
    """Scan a whole statement. `table_columns` is the table's column count, used when the
    statement has no column list (the caller looks the table up from `scan_header` first)."""
    header = scan_header(sql)
    if header is None:
        return None
    db, table, cols, start = header
    ncols = len(cols) if cols is not None else table_columns
    if ncols is None:
        return None
    values = scan_rows(sql, start, ncols)
    if values is None:
        return None
    return ScannedInsert(db, table, cols, values, len(values[0]))


def unquote(token: str) -> str:
    """The value of a quoted string token, with MySQL's escapes applied (one pass, so an
    escaped quote next to a doubled one stays right)."""
    quote = token[0]
    body = token[1:-1]
    if "\\" not in body and quote not in body:
        return body
    return _UNESCAPE[quote].sub(_unescape_one, body)


def _unescape_one(m: re.Match[str]) -> str:
    ch = m.group(1)
    if ch is None:
        return m.group(0)[0]  # a doubled quote
    return _ESCAPES.get(ch, ch)


def is_null(token: str) -> bool:
    return len(token) == 4 and token[0] in "Nn"


def is_quoted(token: str) -> bool:
    return token[0] in "'\""


@dataclass(frozen=True, slots=True)
class TokenArrays:
    """Every literal of the rows as (rows, columns) arrays from `scan_values` (see its doc)."""

    buf: np.ndarray  # the statement's UTF-8 bytes (token spans index into it)
    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray
    flags: np.ndarray
    mant: np.ndarray
    frac: np.ndarray
    fval: np.ndarray
    num_rows: int

    def texts(self, col: int) -> list[str]:
        """Column `col`'s tokens as text, as the regex scanner gives them."""
        raw = self.buf.tobytes()
        return [raw[s:e].decode("utf-8")
                for s, e in zip(self.start[:, col].tolist(), self.end[:, col].tolist())]


def scan_tokens(sql: str, start: int, ncols: int) -> TokenArrays | None:
    """The rows after `start` (a str offset, from scan_header) as token arrays, or None when
    the kernel does not recognise them (the caller then tries `scan_rows`)."""
    if ncols < 1:
        return None
    try:
        raw = sql.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: leave it to the other paths
        return None
    byte_start = start if len(raw) == len(sql) else len(sql[:start].encode("utf-8"))
    buf = np.frombuffer(raw, dtype=np.uint8)
    cap = int(np.count_nonzero(buf[byte_start:] == 44)) + 1  # tokens <= commas + 1
    kind = np.empty(cap, dtype=np.uint8)
    tstart = np.empty(cap, dtype=np.int64)
    tend = np.empty(cap, dtype=np.int64)
    flags = np.empty(cap, dtype=np.uint8)
    mant = np.empty(cap, dtype=np.int64)
    frac = np.empty(cap, dtype=np.int64)
    fval = np.empty(cap, dtype=np.float64)
    rows = K.scan_values(buf, byte_start, ncols, kind, tstart, tend, flags, mant, frac, fval)
    if rows <= 0:
        return None
    n = rows * ncols
    shape = (rows, ncols)
    return TokenArrays(buf, kind[:n].reshape(shape), tstart[:n].reshape(shape),
                       tend[:n].reshape(shape), flags[:n].reshape(shape),
                       mant[:n].reshape(shape), frac[:n].reshape(shape),
                       fval[:n].reshape(shape), rows)
