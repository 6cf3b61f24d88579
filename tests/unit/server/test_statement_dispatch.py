"""The {statement type: handler} table (server/statements/dispatch.py) covers every statement
type the parser produces, and every statement answers with an Outcome or a ShaleError (for
what we do not support: `... is not supported yet`, 1105), never a Python exception. Run on
a real StatementRunner over a real StorageEngine in a temporary directory."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.statements.dispatch import HANDLERS, handler_of
from server.statements.outcomes import OkOutcome, RowsOutcome, TextOutcome
from server.statements.show import SHOW_HANDLERS
from sql.errors import ErrorCode, ShaleError
from sql.parser.dialect import ShaleDorisParser, SqlSyntaxError, parse, parse_one
from sql.parser.dialect_nodes import STATEMENT_TYPES
from tests.unit.planner.inprocess import InProcess

# One statement of each type the parser produces (STATEMENT_TYPES). A new statement type
# fails test_every_statement_type_has_an_example until it gets an example here, and with it
# a handler or a deliberate "not supported" entry in the dispatch table.
EXAMPLES = [
    "SELECT k FROM t",
    "SELECT 1 UNION ALL SELECT 2",
    "ADMIN COMPACT TABLE t WHERE type = 'BASE'",
    "ADMIN SET FRONTEND CONFIG ('dynamic_partition_check_interval_seconds' = '600')",
    "ADMIN SHOW FRONTEND CONFIG LIKE 'dynamic%'",
    "CANCEL ALTER TABLE ROLLUP FROM t",
    ("CREATE TABLE t2 (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
     "PROPERTIES ('replication_num' = '1')"),
    "DROP TABLE IF EXISTS t3",
    "ALTER TABLE t SET ('replication_num' = '1')",
    "TRUNCATE TABLE t2",
    "INSERT INTO t VALUES (1)",
    "DELETE FROM t WHERE k = 5",
    "UPDATE t SET k = 2 WHERE k = 1",
    "SHOW TABLES",
    "DESC t",
    "USE d",
    "SET query_timeout = 100",
    "KILL 12345",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "EXPLAIN SELECT k FROM t",
    "DESC t ALL",
    "DESC FUNCTION local('file_path' = 'nope.csv', 'format' = 'csv')",
    "SELECT k FROM t INTO OUTFILE 'file:///tmp/x_' FORMAT AS CSV",
    "EXPORT TABLE t TO 'file:///tmp/shaledb_dispatch_test/'",
    "CANCEL EXPORT WHERE LABEL = 'nope'",
    "LOAD DATA LOCAL INFILE 'nope.csv' INTO TABLE t",
]

# Statement types the server does not run (the parser accepts them so the error is ours).
NOT_SUPPORTED = {"UPDATE": "Statement UPDATE is not supported yet",
                 "KILL": "KILL outside a client connection is not supported yet"}


@pytest.fixture(scope="module")
def inprocess(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    ip = InProcess(Path(tmp_path_factory.mktemp("dispatch")), backends=1)
    ip.run("CREATE DATABASE d")
    ip.db = "d"
    ip.run("CREATE TABLE t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
           "PROPERTIES ('replication_num' = '1')")
    try:
        yield ip
    finally:
        ip.close()


def test_every_statement_type_has_a_handler() -> None:
    missing = [t.__name__ for t in STATEMENT_TYPES if handler_of(t) is None]
    assert missing == []


def test_every_statement_type_has_an_example() -> None:
    parsed = {type(parse_one(sql)) for sql in EXAMPLES}
    uncovered = [t.__name__ for t in STATEMENT_TYPES
                 if not any(issubclass(p, t) for p in parsed)]
    assert uncovered == []
    assert all(handler_of(t) is not None for t in parsed)
    # and the table holds nothing the parser cannot produce
    assert all(any(issubclass(h, t) for t in STATEMENT_TYPES) for h in HANDLERS)


@pytest.mark.parametrize("sql", EXAMPLES)
def test_every_statement_answers_or_fails_cleanly(inprocess: InProcess, sql: str) -> None:
    stmt = parse_one(sql)
    inprocess.runner.begin_statement(sql)
    try:
        outcome = inprocess.runner.run(stmt)
    except ShaleError as e:
        expected = NOT_SUPPORTED.get(type(stmt).__name__.upper())
        if expected is not None:
            assert (e.code, e.message) == (ErrorCode.UNKNOWN_ERROR,
                                           f"errCode = 2, detailMessage = {expected}")
        return
    assert type(stmt).__name__.upper() not in NOT_SUPPORTED
    if isinstance(outcome, RowsOutcome):
        list(outcome.batches)  # the rows too are produced without a Python exception
    assert outcome is not None


def _show_forms() -> list[str]:
    """`SHOW <key>` (or `SHOW <key> FROM t`) for every SHOW the parser accepts."""
    forms = []
    for key in sorted(ShaleDorisParser.SHOW_PARSERS):
        for sql in (f"SHOW {key}", f"SHOW {key} FROM t"):
            try:
                parse(sql)
            except SqlSyntaxError:
                continue
            forms.append(sql)
            break
    return forms


def test_show_forms_are_found() -> None:
    assert len(_show_forms()) > 50  # the probe below really covers the parser's SHOWs


@pytest.mark.parametrize("sql", _show_forms())
def test_every_show_has_a_handler_or_says_not_supported(inprocess: InProcess, sql: str) -> None:
    stmt = parse_one(sql)
    kind = stmt.name.upper()
    try:
        outcome = inprocess.runner.run(stmt)
    except ShaleError as e:
        if kind not in SHOW_HANDLERS:
            assert e.message == f"errCode = 2, detailMessage = SHOW {kind} is not supported yet"
        return
    assert kind in SHOW_HANDLERS
    assert isinstance(outcome, (TextOutcome, OkOutcome))


def test_statements_never_import_the_server_or_the_connection() -> None:
    """Handlers get StatementServices and the runner's session state, never the ShaleServer,
    the session or the connection (their modules are the wiring above the statements)."""
    package = Path(__file__).resolve().parents[3] / "server" / "statements"
    wiring = {"server.app", "server.session", "server.connection", "server.listener",
              "server.http", "mysql_mimic.control"}
    found = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):  # `from server import app` too
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            found += [f"{path.name}: {n}" for n in names if n in wiring]
    assert len(list(package.glob("*.py"))) >= 10
    assert found == []
