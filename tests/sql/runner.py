"""sqllogictest-style runner for ShaleDB's SQL corpus (tests/sql/**/*.test).

Owns the .test file format, its parser and its executor over a live MySQL-protocol connection.
Upstream concept: SQLite's sqllogictest as DuckDB and BusTub use it; Doris' regression suites
play the same role (`-- !tag --` blocks in `.out` files).

File format
-----------
A file is a sequence of *records* separated by one or more blank lines. Lines starting with `#`
between records are comments. Each record starts with a header line:

``statement ok``
    The SQL that follows (up to the next blank line, may span several lines) must succeed.
    A result set, if any, is read and ignored.

``statement error <mysql_code> [regex]``
    The SQL must fail with MySQL error number ``<mysql_code>``. When a regex is given (the rest of
    the header line after the code), ``re.search(regex, message)`` must match the server's error
    message. For code 1105 the message must also start with ``errCode = 2, detailMessage = ``
    (Doris' wording for analysis and DDL errors, DORIS_REFERENCE.md a.0). Works for queries too.

``query <types> [rowsort|nosort|valuesort]``
    The SQL (up to a line that is exactly ``----``) must return rows. ``<types>`` has one letter per
    result column: ``I`` integer, ``R`` real (float/double), ``T`` text, ``D`` decimal or other
    text (dates, datetimes). The number of result columns must equal the number of letters, and
    ``I``/``R`` values must look like integers/reals (catches typos in expected results). After
    ``----`` come the expected rows, one per line, values separated by a single TAB, ending at a
    blank line or the end of the file. ``----`` followed directly by a blank line means "no rows".
    Sort modes: ``nosort`` (the default) compares in server order (use it with ORDER BY);
    ``rowsort`` sorts the rows of both sides as text before comparing; ``valuesort`` sorts all
    values of both sides.
    Plan flags may follow on the header: ``+ensure:rollup=r1`` (some scan reads index r1),
    ``+ensure:preagg=off``, ``+ensure:partitions=1/3``, ``+ensure:tablets=2/8``. They are checked
    against the scan facts of the query's profile (the runner turns ``enable_profile`` on for it).

``halt``
    Stop running the file here (for debugging).

``control sortmode <rowsort|nosort|valuesort>``
    Change the default sort mode for the rest of the file.

Values are compared as the exact text the server sent: the runner opens its connection with an
empty pymysql converter map, so every value arrives as ``str`` (bytes are decoded as UTF-8). A SQL
NULL is written ``NULL`` and an empty string ``(empty)``. A value cannot contain a TAB or a newline.
If a value of another Python type reaches `format_value` (other callers), it is rendered the way the
MySQL text protocol would: floats via repr without a trailing ``.0``, datetimes as
``YYYY-MM-DD HH:MM:SS[.ffffff]``, Decimals as str.

Each file runs on its own connection inside its own fresh database ``sqltest_<stem>_<random>``,
created and USEd before the first record and dropped afterwards, so files may freely CREATE TABLE.
``${db}`` in SQL, expected values and error regexes is replaced by that database's name (in a
regex it is escaped). A trailing ``;`` on the SQL is stripped. One statement per record.

Failures are reported with ``file:line``, the SQL and expected vs actual; the runner keeps going
after a failed record (later records often still tell something) and stops at a lost connection.

Run standalone: ``python tests/sql/runner.py --port 9030 tests/sql/foundation/*.test``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import decimal
import re
import secrets
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

NULL_TEXT = "NULL"
EMPTY_TEXT = "(empty)"
SORT_MODES = ("nosort", "rowsort", "valuesort")
TYPE_LETTERS = frozenset("IRTD")
DORIS_PREFIX = "errCode = 2, detailMessage = "
# Client-side error numbers (CR_*): the connection itself is gone, nothing more can run.
_CONNECTION_LOST = frozenset({2006, 2013, 2014, 2055, 2003})

_INT_RE = re.compile(r"^-?\d+$")
_REAL_RE = re.compile(r"^(-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|-?[Ii]nf(inity)?|NaN|nan)$")


class SqlLogicParseError(ValueError):
    """A malformed .test file; the message carries file:line."""


@dataclass(frozen=True)
class Statement:
    line: int
    sql: str
    expect_error: bool = False
    error_code: int | None = None
    error_regex: str | None = None


@dataclass(frozen=True)
class Query:
    line: int
    sql: str
    types: str
    sort_mode: str
    expected: tuple[tuple[str, ...], ...]
    ensure: tuple[str, ...] = ()  # "+ensure:<key>=<value>" plan flags


@dataclass(frozen=True)
class Halt:
    line: int


Record = Statement | Query | Halt


# ---- parsing ----------------------------------------------------------------------------------
def parse(text: str, filename: str = "<string>") -> list[Record]:
    """Parse .test text into records. Raises SqlLogicParseError with file:line on bad input."""
    lines = text.splitlines()
    records: list[Record] = []
    sort_default = "nosort"
    i = 0
    n = len(lines)

    def err(lineno: int, msg: str) -> SqlLogicParseError:
        return SqlLogicParseError(f"{filename}:{lineno}: {msg}")

    while i < n:
        raw = lines[i]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        header_line = i + 1
        words = stripped.split()
        kind = words[0]
        if kind == "halt":
            records.append(Halt(header_line))
            i += 1
            continue
        if kind == "control":
            if len(words) != 3 or words[1] != "sortmode" or words[2] not in SORT_MODES:
                raise err(header_line, f"bad control line: {stripped!r}")
            sort_default = words[2]
            i += 1
            continue
        if kind == "statement":
            record, i = _parse_statement(lines, i, words, stripped, err)
            records.append(record)
            continue
        if kind == "query":
            record, i = _parse_query(lines, i, words, sort_default, err)
            records.append(record)
            continue
        raise err(header_line, f"unknown record type {kind!r}")
    return records


def _collect_sql(lines: list[str], i: int, stop_at_dashes: bool) -> tuple[list[str], int, bool]:
    """Collect SQL lines from index i; returns (lines, next index, saw_dashes)."""
    sql: list[str] = []
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            return sql, i, False
        if stop_at_dashes and line.strip() == "----":
            return sql, i + 1, True
        if not line.lstrip().startswith("#"):
            sql.append(line.rstrip())
        i += 1
    return sql, i, False


def _finish_sql(sql_lines: list[str]) -> str:
    sql = "\n".join(sql_lines).strip()
    if sql.endswith(";"):
        sql = sql[:-1].rstrip()
    return sql


def _parse_statement(lines, i, words, stripped, err):
    header_line = i + 1
    if len(words) >= 2 and words[1] == "ok":
        if len(words) != 2:
            raise err(header_line, f"unexpected text after 'statement ok': {stripped!r}")
        expect_error, code, regex = False, None, None
    elif len(words) >= 2 and words[1] == "error":
        m = re.match(r"^statement\s+error(?:\s+(\S+))?(?:\s+(.*))?$", stripped)
        assert m is not None
        if m.group(1) is None:
            raise err(header_line, "'statement error' needs a MySQL error code")
        try:
            code = int(m.group(1))
        except ValueError:
            raise err(header_line, f"error code must be an integer, got {m.group(1)!r}") from None
        regex = m.group(2).strip() if m.group(2) else None
        if regex:
            try:
                re.compile(regex.replace("${db}", "db"))
            except re.error as e:
                raise err(header_line, f"bad error regex {regex!r}: {e}") from None
        expect_error = True
    else:
        raise err(header_line, f"expected 'statement ok' or 'statement error', got {stripped!r}")
    sql_lines, i, _ = _collect_sql(lines, i + 1, stop_at_dashes=False)
    sql = _finish_sql(sql_lines)
    if not sql:
        raise err(header_line, "statement without SQL")
    return Statement(header_line, sql, expect_error, code, regex), i


def _parse_query(lines, i, words, sort_default, err):
    header_line = i + 1
    if len(words) < 2:
        raise err(header_line, "'query' needs column types, e.g. 'query IT rowsort'")
    types = words[1]
    if not types or any(c not in TYPE_LETTERS for c in types):
        raise err(header_line, f"bad column types {types!r}: use letters I, R, T, D")
    ensure = tuple(w[len(ENSURE_PREFIX):] for w in words[2:] if w.startswith(ENSURE_PREFIX))
    words = [w for w in words if not w.startswith(ENSURE_PREFIX)]
    for flag in ensure:
        key, _, value = flag.partition("=")
        if key not in ENSURE_KEYS or not value:
            raise err(header_line, f"bad plan flag {ENSURE_PREFIX}{flag}: use "
                                   + ", ".join(f"{ENSURE_PREFIX}{k}=.." for k in ENSURE_KEYS))
    sort_mode = sort_default
    if len(words) >= 3:
        if words[2] not in SORT_MODES:
            raise err(
                header_line, f"bad sort mode {words[2]!r}: use one of {', '.join(SORT_MODES)}"
            )
        sort_mode = words[2]
    if len(words) > 3:
        raise err(header_line, f"unexpected text after sort mode: {' '.join(words[3:])!r}")
    sql_lines, i, saw_dashes = _collect_sql(lines, i + 1, stop_at_dashes=True)
    sql = _finish_sql(sql_lines)
    if not sql:
        raise err(header_line, "query without SQL")
    if not saw_dashes:
        raise err(header_line, "query without '----' separator before its expected rows")
    expected: list[tuple[str, ...]] = []
    n = len(lines)
    while i < n and lines[i].strip():
        row_text = lines[i].rstrip("\r\n")
        values = tuple(row_text.split("\t"))
        if len(values) != len(types):
            raise err(
                i + 1,
                f"expected row has {len(values)} values but the query declares {len(types)} "
                f"columns ({types}); separate values with one TAB: {row_text!r}",
            )
        expected.append(values)
        i += 1
    return Query(header_line, sql, types, sort_mode, tuple(expected), ensure), i


def parse_file(path: str | Path) -> list[Record]:
    p = Path(path)
    return parse(p.read_text(encoding="utf-8"), str(p))


# ---- value formatting and comparison -----------------------------------------------------------
def format_value(value: Any) -> str:
    """The text form of one result value as the corpus writes it."""
    if value is None:
        return NULL_TEXT
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8", "replace")
    if isinstance(value, str):
        return EMPTY_TEXT if value == "" else value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, _dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        if value.microsecond:
            text += f".{value.microsecond:06d}"
        return text
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        total = int(value.total_seconds())
        sign = "-" if total < 0 else ""
        total = abs(total)
        return f"{sign}{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"
    return str(value)


def substitute(text: str, subs: dict[str, str], regex: bool = False) -> str:
    for key, val in subs.items():
        text = text.replace("${" + key + "}", re.escape(val) if regex else val)
    return text


def sort_rows(rows: Sequence[tuple[str, ...]], mode: str) -> list[tuple[str, ...]]:
    if mode == "rowsort":
        return sorted(rows)
    if mode == "valuesort":
        return [(v,) for v in sorted(v for row in rows for v in row)]
    return list(rows)


def check_types(types: str, rows: Iterable[tuple[str, ...]]) -> str | None:
    """Return a message for the first value that does not fit its declared column type."""
    for r, row in enumerate(rows, start=1):
        for c, (letter, value) in enumerate(zip(types, row, strict=True), start=1):
            if value == NULL_TEXT:
                continue
            if letter == "I" and not _INT_RE.match(value):
                return f"row {r} column {c}: {value!r} is not an integer (type I)"
            if letter == "R" and not _REAL_RE.match(value):
                return f"row {r} column {c}: {value!r} is not a real number (type R)"
    return None


# ---- running ----------------------------------------------------------------------------------
@dataclass
class Failure:
    filename: str
    line: int
    sql: str
    message: str

    def render(self) -> str:
        sql = "\n".join("    " + s for s in self.sql.splitlines())
        return f"{self.filename}:{self.line}: {self.message}\n  SQL:\n{sql}"


@dataclass
class FileResult:
    filename: str
    records_run: int = 0
    failures: list[Failure] = field(default_factory=list)
    aborted: str | None = None

    @property
    def ok(self) -> bool:
        return not self.failures and self.aborted is None

    def report(self) -> str:
        parts = [
            f"{self.filename}: {len(self.failures)} failing record(s) of {self.records_run} run"
        ]
        if self.aborted:
            parts.append(f"ABORTED: {self.aborted}")
        parts.extend(f.render() for f in self.failures)
        return "\n\n".join(parts)


def _error_of(exc: BaseException) -> tuple[int | None, str]:
    args = getattr(exc, "args", ())
    if len(args) >= 2 and isinstance(args[0], int):
        return args[0], str(args[1])
    return None, str(exc)


def _render_rows(rows: Sequence[tuple[str, ...]]) -> str:
    if not rows:
        return "    (no rows)"
    return "\n".join("    " + "\t".join(r) for r in rows)


class _LostConnection(Exception):
    pass


def run_records(
    conn: Any, records: Sequence[Record], filename: str, subs: dict[str, str] | None = None
) -> FileResult:
    """Run parsed records on an open DB-API connection (values should arrive as text)."""
    subs = subs or {}
    result = FileResult(filename)
    for rec in records:
        if isinstance(rec, Halt):
            break
        result.records_run += 1
        try:
            failure = _run_one(conn, rec, filename, subs)
        except _LostConnection as e:
            result.failures.append(Failure(filename, rec.line, substitute(rec.sql, subs), str(e)))
            result.aborted = f"lost the connection at line {rec.line}"
            break
        if failure is not None:
            result.failures.append(failure)
    return result


def _execute(conn: Any, sql: str) -> tuple[list[tuple[Any, ...]] | None, int | None]:
    cur = conn.cursor()
    try:
        cur.execute(sql)
        if cur.description is None:
            return None, None
        return [tuple(r) for r in cur.fetchall()], len(cur.description)
    finally:
        cur.close()


ENSURE_PREFIX = "+ensure:"
# rollup=<index> (some scan reads that index), preagg=on|off, partitions=k/n, tablets=k/n,
# join=colocate|bucket_shuffle|broadcast|shuffle (some join of the query ran in that mode)
ENSURE_KEYS = ("rollup", "preagg", "partitions", "tablets", "join")
JOIN_MODES = {"colocate": "(COLOCATE[])", "bucket_shuffle": "(BUCKET_SHUFFLE)",
              "broadcast": "(BROADCAST)", "shuffle": "(PARTITIONED)"}


def _scan_facts(conn: Any) -> list[str]:
    """The VOlapScanNode and join lines of the newest query profile (SHOW QUERY PROFILE)."""
    rows, _ = _execute(conn, 'SHOW QUERY PROFILE "/"')
    if not rows:
        return []
    profile_id = format_value(rows[0][0])
    rows, _ = _execute(conn, f'SHOW QUERY PROFILE "/{profile_id}"')
    return [format_value(v) for k, v in rows or []
            if format_value(k).startswith("VOlapScanNode") or " JOIN" in format_value(k)]


def check_ensure(flags: Sequence[str], facts: Sequence[str]) -> str | None:
    """None when every plan flag holds for some scan of the query, else the problem."""
    for flag in flags:
        key, _, value = flag.partition("=")
        if key == "rollup":
            want = f"({value}), PREAGGREGATION"
        elif key == "preagg":
            want = "PREAGGREGATION: " + value.upper()
        elif key == "join":
            want = JOIN_MODES.get(value.lower(), f"({value.upper()})")
        else:
            want = f"{key}={value}"
        if not any(want in f for f in facts):
            return f"plan flag {ENSURE_PREFIX}{flag} does not hold; scans: {list(facts)}"
    return None


def _run_one(
    conn: Any, rec: Statement | Query, filename: str, subs: dict[str, str]
) -> Failure | None:
    sql = substitute(rec.sql, subs)

    def fail(msg: str) -> Failure:
        return Failure(filename, rec.line, sql, msg)

    if isinstance(rec, Query) and rec.ensure:
        # The plan facts come from the query profile of this very query.
        _execute(conn, "SET enable_profile = true")
        try:
            failure = _run_one(conn, replace(rec, ensure=()), filename, subs)
            problem = check_ensure(rec.ensure, _scan_facts(conn))
        finally:
            _execute(conn, "SET enable_profile = false")
        return failure or (fail(problem) if problem else None)

    try:
        rows, ncols = _execute(conn, sql)
        error: tuple[int | None, str] | None = None
    except Exception as exc:  # DB-API errors of any driver
        code, msg = _error_of(exc)
        if code is None or code in _CONNECTION_LOST:
            raise _LostConnection(f"connection error: {exc!r}") from exc
        error = (code, msg)
        rows, ncols = None, None

    if isinstance(rec, Statement):
        if not rec.expect_error:
            if error is not None:
                return fail(f"statement failed: ERROR {error[0]}: {error[1]}")
            return None
        want = f"ERROR {rec.error_code}" + (
            f" matching /{rec.error_regex}/" if rec.error_regex else ""
        )
        if error is None:
            return fail(f"statement succeeded but expected {want}")
        code, msg = error
        if code != rec.error_code:
            return fail(f"expected {want}\n  got ERROR {code}: {msg}")
        if code == 1105 and not msg.startswith(DORIS_PREFIX):
            return fail(f"ERROR 1105 message must start with {DORIS_PREFIX!r}\n  got: {msg}")
        if rec.error_regex:
            pattern = substitute(rec.error_regex, subs, regex=True)
            if not re.search(pattern, msg):
                return fail(f"expected {want}\n  got ERROR {code}: {msg}")
        return None

    # Query
    if error is not None:
        return fail(f"query failed: ERROR {error[0]}: {error[1]}")
    if rows is None:
        return fail("query returned no result set (an OK packet)")
    if ncols != len(rec.types):
        return fail(
            f"query returned {ncols} columns but the record declares {len(rec.types)} ({rec.types})"
        )
    actual = [tuple(format_value(v) for v in row) for row in rows]
    expected = [tuple(substitute(v, subs) for v in row) for row in rec.expected]
    type_problem = check_types(rec.types, actual)
    if sort_rows(actual, rec.sort_mode) != sort_rows(expected, rec.sort_mode):
        want_rows = _render_rows(sort_rows(expected, rec.sort_mode))
        got_rows = _render_rows(sort_rows(actual, rec.sort_mode))
        return fail(
            f"result mismatch ({rec.sort_mode})\n"
            f"  expected {len(expected)} row(s):\n{want_rows}\n"
            f"  actual {len(actual)} row(s):\n{got_rows}"
        )
    if type_problem:
        return fail(f"result has the expected text but a wrong type: {type_problem}")
    return None


def database_name_for(path: str | Path) -> str:
    stem = re.sub(r"[^a-z0-9_]", "_", Path(path).stem.lower())
    return f"sqltest_{stem}_{secrets.token_hex(4)}"


def run_file(
    path: str | Path, connect: Callable[[], Any], display_name: str | None = None
) -> FileResult:
    """Parse and run one .test file in its own fresh database on a new connection.

    `connect()` must return a DB-API connection with autocommit on whose values arrive as text
    (see `text_connect_kwargs`).
    """
    name = display_name or str(path)
    records = parse_file(path)
    db = database_name_for(path)
    conn = connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{db}`")
            cur.execute(f"USE `{db}`")
        result = run_records(conn, records, name, {"db": db})
        if result.aborted is None:
            try:
                with conn.cursor() as cur:
                    cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
            except Exception as exc:  # report, the records themselves may be fine
                result.failures.append(
                    Failure(name, 0, f"DROP DATABASE {db}", f"cleanup failed: {exc!r}")
                )
        return result
    finally:
        try:
            conn.close()
        except Exception:
            pass


def text_connect_kwargs() -> dict[str, Any]:
    """pymysql.connect(...) arguments that make every value arrive as the server's text.

    pymysql splits `conv` into encoders (type keys, used to escape parameters, e.g. for its own
    `SET AUTOCOMMIT`) and decoders (int field-type keys); keeping only the encoders means no value
    is converted on the way in.
    """
    import pymysql.converters

    encoders_only = {
        k: v for k, v in pymysql.converters.conversions.items() if not isinstance(k, int)
    }
    return {"conv": encoders_only, "autocommit": True, "charset": "utf8mb4"}


def main(argv: list[str] | None = None) -> int:
    import pymysql

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9030)
    ap.add_argument("--user", default="root")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)

    def connect() -> Any:
        return pymysql.connect(
            host=args.host, port=args.port, user=args.user, password="", **text_connect_kwargs()
        )

    bad = 0
    for f in args.files:
        res = run_file(f, connect)
        print(("ok   " if res.ok else "FAIL ") + f"{f} ({res.records_run} records)")
        if not res.ok:
            bad += 1
            print(res.report())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
