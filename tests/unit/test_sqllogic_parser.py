"""Pure-logic tests of the sqllogictest runner (tests/sql/runner.py): parser, value formatting,
comparison and error matching, with a fake DB-API connection. No server needed."""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal
from pathlib import Path

import pytest

SQL_DIR = Path(__file__).resolve().parents[1] / "sql"
if str(SQL_DIR) not in sys.path:
    sys.path.insert(0, str(SQL_DIR))

import runner  # noqa: E402
from runner import Halt, Query, SqlLogicParseError, Statement, parse  # noqa: E402


# ---- parser -----------------------------------------------------------------------------------
def test_statement_ok_multiline_and_comments() -> None:
    text = (
        "# leading comment\n"
        "\n"
        "statement ok\n"
        "CREATE TABLE t (\n"
        "  k INT\n"
        ") DISTRIBUTED BY HASH(k) BUCKETS 1;\n"
        "\n"
        "# between records\n"
        "statement ok\n"
        "INSERT INTO t VALUES (1)\n"
    )
    recs = parse(text, "f.test")
    assert recs == [
        Statement(3, "CREATE TABLE t (\n  k INT\n) DISTRIBUTED BY HASH(k) BUCKETS 1"),
        Statement(9, "INSERT INTO t VALUES (1)"),
    ]


def test_statement_error_with_and_without_regex() -> None:
    text = (
        "statement error 1105 Key column can not set aggregation type: k1\n"
        "CREATE TABLE x (k1 INT SUM) AGGREGATE KEY(k1) DISTRIBUTED BY HASH(k1) BUCKETS 1\n"
        "\n"
        "statement error 1064\n"
        "SELEC 1\n"
    )
    a, b = parse(text)
    assert isinstance(a, Statement) and a.expect_error and a.error_code == 1105
    assert a.error_regex == "Key column can not set aggregation type: k1"
    assert isinstance(b, Statement) and b.error_code == 1064 and b.error_regex is None


def test_query_types_sortmode_rows_null_empty() -> None:
    text = (
        "query ITR rowsort\n"
        "SELECT a,\n"
        "       b, c FROM t\n"
        "----\n"
        "1\tx\t1.5\n"
        "2\t(empty)\tNULL\n"
        "\n"
        "query I\n"
        "SELECT 1 WHERE 1 = 0\n"
        "----\n"
    )
    q1, q2 = parse(text)
    assert q1 == Query(
        1,
        "SELECT a,\n       b, c FROM t",
        "ITR",
        "rowsort",
        (("1", "x", "1.5"), ("2", "(empty)", "NULL")),
    )
    assert q2 == Query(8, "SELECT 1 WHERE 1 = 0", "I", "nosort", ())


def test_query_rows_end_at_eof_and_values_keep_spaces() -> None:
    recs = parse("query T\nSELECT 'a b'\n----\na b ")
    assert recs[0].expected == (("a b ",),)


def test_control_sortmode_and_halt() -> None:
    text = (
        "control sortmode rowsort\n"
        "\n"
        "query I\nSELECT 1\n----\n1\n"
        "\n"
        "query I valuesort\nSELECT 1\n----\n1\n"
        "\n"
        "halt\n"
        "\n"
        "statement ok\nSELECT 1\n"
    )
    recs = parse(text)
    assert [type(r) for r in recs] == [Query, Query, Halt, Statement]
    assert recs[0].sort_mode == "rowsort" and recs[1].sort_mode == "valuesort"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("query X\nSELECT 1\n----\n1\n", "bad column types"),
        ("query I sorted\nSELECT 1\n----\n1\n", "bad sort mode"),
        ("query I\nSELECT 1\n", "without '----'"),
        ("query II\nSELECT 1, 2\n----\n1 2\n", "expected row has 1 values"),
        ("statement error\nSELECT 1\n", "needs a MySQL error code"),
        ("statement error abc\nSELECT 1\n", "must be an integer"),
        ("statement error 1105 ([\nSELECT 1\n", "bad error regex"),
        ("statement ok extra\nSELECT 1\n", "unexpected text"),
        ("statement ok\n\n", "statement without SQL"),
        ("explain\nSELECT 1\n", "unknown record type"),
        ("control sortmode random\n", "bad control line"),
    ],
)
def test_parse_errors_carry_file_and_line(text: str, fragment: str) -> None:
    with pytest.raises(SqlLogicParseError) as ei:
        parse("\n" + text, "bad.test")
    assert fragment in str(ei.value)
    assert str(ei.value).startswith("bad.test:")


def test_every_corpus_file_parses() -> None:
    files = sorted(SQL_DIR.rglob("*.test"))
    assert files
    for f in files:
        recs = runner.parse_file(f)
        assert recs, f"{f} has no records"


# ---- formatting and comparison ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "NULL"),
        ("", "(empty)"),
        (b"abc", "abc"),
        ("x y", "x y"),
        (42, "42"),
        (True, "1"),
        (2.5, "2.5"),
        (3.0, "3"),
        (1e20, "1e+20"),
        (Decimal("1.50"), "1.50"),
        (dt.date(2024, 1, 5), "2024-01-05"),
        (dt.datetime(2024, 1, 5, 10, 20, 30), "2024-01-05 10:20:30"),
        (dt.datetime(2024, 1, 5, 10, 20, 30, 123000), "2024-01-05 10:20:30.123000"),
        (dt.timedelta(hours=1, minutes=2, seconds=3), "01:02:03"),
    ],
)
def test_format_value(value: object, text: str) -> None:
    assert runner.format_value(value) == text


def test_sort_modes() -> None:
    rows = [("2", "b"), ("1", "z"), ("10", "a")]
    assert runner.sort_rows(rows, "nosort") == rows
    assert runner.sort_rows(rows, "rowsort") == [("1", "z"), ("10", "a"), ("2", "b")]
    assert runner.sort_rows(rows, "valuesort") == [("1",), ("10",), ("2",), ("a",), ("b",), ("z",)]


def test_check_types() -> None:
    assert (
        runner.check_types("IRT", [("1", "2.5", "x"), ("-3", "1e+20", "NULL"), ("NULL", "3", "")])
        is None
    )
    assert "not an integer" in runner.check_types("I", [("1.5",)])
    assert "not a real" in runner.check_types("R", [("abc",)])


def test_substitute_plain_and_regex() -> None:
    subs = {"db": "sqltest_a.b"}
    assert runner.substitute("USE ${db}", subs) == "USE sqltest_a.b"
    assert runner.substitute("in ${db}$", subs, regex=True) == r"in sqltest_a\.b$"


def test_database_name_is_unique_and_safe() -> None:
    a = runner.database_name_for("tests/sql/foundation/create-table.test")
    b = runner.database_name_for("tests/sql/foundation/create-table.test")
    assert a != b
    assert a.startswith("sqltest_create_table_")
    assert all(c.isalnum() or c == "_" for c in a)


# ---- execution against a fake connection -------------------------------------------------------
class FakeError(Exception):
    pass


class FakeCursor:
    def __init__(self, conn: FakeConnection) -> None:
        self.conn = conn
        self.description = None
        self._rows: list[tuple] = []

    def execute(self, sql: str) -> None:
        self.conn.executed.append(sql)
        outcome = self.conn.script.get(sql)
        if isinstance(outcome, Exception):
            raise outcome
        if outcome is None:
            self.description = None
            self._rows = []
        else:
            ncols, rows = outcome
            self.description = [("c",)] * ncols
            self._rows = list(rows)

    def fetchall(self) -> list[tuple]:
        return self._rows

    def close(self) -> None:
        pass

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *a: object) -> None:
        pass


class FakeConnection:
    def __init__(self, script: dict) -> None:
        self.script = script
        self.executed: list[str] = []
        self.closed = False

    def cursor(self) -> FakeCursor:
        return FakeCursor(self)

    def close(self) -> None:
        self.closed = True


def _run(text: str, script: dict) -> runner.FileResult:
    return runner.run_records(FakeConnection(script), parse(text, "f.test"), "f.test", {"db": "d1"})


def test_run_passing_records() -> None:
    text = (
        "statement ok\nCREATE TABLE t (k INT)\n\n"
        "statement error 1146 does not exist in database \\[${db}\\]\nSELECT * FROM nosuch\n\n"
        "query IT rowsort\nSELECT k, s FROM t\n----\n1\t(empty)\n2\tNULL\n\n"
        "query T\nSELECT DATABASE()\n----\n${db}\n"
    )
    script = {
        "CREATE TABLE t (k INT)": None,
        "SELECT * FROM nosuch": FakeError(
            1146, "errCode = 2, detailMessage = Table [nosuch] does not exist in database [d1]."
        ),
        "SELECT k, s FROM t": (2, [("2", None), ("1", "")]),
        "SELECT DATABASE()": (1, [("d1",)]),
    }
    res = _run(text, script)
    assert res.ok, res.report()
    assert res.records_run == 4


def test_run_reports_mismatches_with_line_numbers() -> None:
    text = (
        "statement ok\nBAD\n\n"  # line 1: fails
        "statement error 1050\nCREATE TABLE t (k INT)\n\n"  # line 4: succeeds unexpectedly
        "statement error 1105 exists\nX\n\n"  # line 7: wrong code
        "statement error 1105 exists\nY\n\n"  # line 10: no Doris prefix
        "query I\nSELECT 1\n----\n2\n\n"  # line 13: wrong value
        "query II\nSELECT 1\n----\n1\t1\n\n"  # line 18: wrong column count
        "query I\nSELECT 'a'\n----\na\n"  # line 23: text where I declared
    )
    script = {
        "BAD": FakeError(1064, "syntax error"),
        "CREATE TABLE t (k INT)": None,
        "X": FakeError(1050, "errCode = 2, detailMessage = Table 't' already exists"),
        "Y": FakeError(1105, "Table 't' already exists"),
        "SELECT 1": (1, [("1",)]),
        "SELECT 'a'": (1, [("a",)]),
    }
    res = _run(text, script)
    lines = [f.line for f in res.failures]
    assert lines == [1, 4, 7, 10, 13, 18, 23]
    report = res.report()
    assert "f.test:13: result mismatch" in report
    assert "statement succeeded but expected ERROR 1050" in report
    assert "must start with" in report
    assert "wrong type" in report


def test_run_aborts_on_lost_connection() -> None:
    text = "statement ok\nA\n\nstatement ok\nB\n"
    res = _run(
        text, {"A": FakeError(2013, "Lost connection to MySQL server during query"), "B": None}
    )
    assert res.aborted is not None
    assert res.records_run == 1


def test_run_file_creates_uses_and_drops_its_database(tmp_path: Path) -> None:
    f = tmp_path / "my-file.test"
    f.write_text("query T\nSELECT DATABASE()\n----\n${db}\n")
    conns: list[FakeConnection] = []

    class Recorder(FakeConnection):
        def cursor(self) -> FakeCursor:
            cur = FakeCursor(self)
            orig = cur.execute

            def execute(sql: str) -> None:
                if sql == "SELECT DATABASE()":
                    db = self.executed[0].split("`")[1]
                    self.script[sql] = (1, [(db,)])
                orig(sql)

            cur.execute = execute  # type: ignore[method-assign]
            return cur

    def connect() -> FakeConnection:
        c = Recorder({})
        conns.append(c)
        return c

    res = runner.run_file(f, connect)
    assert res.ok, res.report()
    (c,) = conns
    db = c.executed[0].split("`")[1]
    assert db.startswith("sqltest_my_file_")
    assert c.executed == [
        f"CREATE DATABASE `{db}`",
        f"USE `{db}`",
        "SELECT DATABASE()",
        f"DROP DATABASE IF EXISTS `{db}`",
    ]
    assert c.closed


# ---- +ensure: plan flags ------------------------------------------------------------------------
def test_ensure_flags_parse_and_check() -> None:
    (q,) = parse("query II rowsort +ensure:rollup=r1 +ensure:tablets=1/4\nSELECT 1, 2\n----\n1\t2\n")
    assert isinstance(q, Query) and q.sort_mode == "rowsort"
    assert q.ensure == ("rollup=r1", "tablets=1/4")
    facts = ["TABLE: d.t(r1), PREAGGREGATION: ON; partitions=1/1 (t); tablets=1/4, tabletList=7"]
    assert runner.check_ensure(q.ensure, facts) is None
    assert runner.check_ensure(("rollup=t",), facts) is not None
    assert runner.check_ensure(("preagg=off",), facts) is not None
    assert runner.check_ensure(("partitions=1/1",), facts) is None
    (j,) = parse("query I +ensure:join=colocate\nSELECT 1\n----\n1\n")
    assert isinstance(j, Query) and j.ensure == ("join=colocate",)
    joins = ["INNER JOIN(COLOCATE[])[], RowsReturned: 3, InclusiveTime: 0.1ms"]
    assert runner.check_ensure(("join=colocate",), joins) is None
    assert runner.check_ensure(("join=shuffle",), joins) is not None
    with pytest.raises(SqlLogicParseError):
        parse("query I +ensure:nosuchkey=1\nSELECT 1\n----\n1\n")
