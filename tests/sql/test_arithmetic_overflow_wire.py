"""Integer arithmetic and date ranges over the MySQL protocol: Doris 2.1's result types, and no
result ever wraps silently or reaches the client as a garbled value (issue 12, point 6).

Values are compared with DuckDB on the same rows. DuckDB types `a + b` as the operands' common
type while Doris widens one step, so each DuckDB query casts its operands to the Doris result
type first: then both engines compute in the same type, DuckDB raises exactly where the value
leaves that type, and ShaleDB must raise there too (error 1690, Doris' `Arithmetic overflow`
wording) and agree on every other value. Where the engines differ by design (dates past
9999-12-31: DuckDB has them, Doris 2.1 gives NULL) the expected values are Doris'.
"""

from __future__ import annotations

import datetime as dt
import random

import duckdb
import pymysql
import pytest

I64 = 2**63
COLUMNS = {"ti": ("TINYINT", 2**7), "si": ("SMALLINT", 2**15), "i": ("INT", 2**31),
           "bi": ("BIGINT", I64)}
# Doris 2.1 result types of integer + - * (promotion) and of DIV / % (the wider operand)
ORDER = ["TINYINT", "SMALLINT", "INT", "BIGINT"]
PROMOTED = {"TINYINT": "SMALLINT", "SMALLINT": "INT", "INT": "BIGINT", "BIGINT": "BIGINT"}
# MySQL column type codes pymysql reports
WIRE_TYPE = {"SMALLINT": 2, "INT": 3, "BIGINT": 8, "TINYINT": 1, "LARGEINT": 253}


def _rows() -> list[tuple[int, int, int, int, int]]:
    rng = random.Random(1212)
    out = []
    for k in range(300):
        row = [k]
        for _, bound in COLUMNS.values():
            pick = rng.random()
            if pick < 0.15:
                v = rng.choice([-bound, bound - 1, -bound + 1, -1, 0, 1])
            elif pick < 0.5:
                v = rng.randint(-bound, bound - 1)
            else:
                v = rng.randint(-100, 100)
            row.append(v)
        out.append(tuple(row))  # type: ignore[arg-type]
    return out  # type: ignore[return-value]


@pytest.fixture(scope="module")
def tables(server, tmp_path_factory):  # type: ignore[no-untyped-def]
    rows = _rows()
    name = "arith_" + tmp_path_factory.mktemp("x").name.replace("-", "_")[-12:]
    ddl_cols = ", ".join(f"{c} {t}" for c, (t, _) in COLUMNS.items())
    values = ", ".join(str(r) for r in rows)
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"CREATE TABLE {name}.n (k INT, {ddl_cols}) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ('replication_num' = '1')")
        cur.execute(f"INSERT INTO {name}.n VALUES {values}")
    duck = duckdb.connect()
    duck.execute(f"CREATE TABLE n (k INT, {ddl_cols})")
    duck.execute(f"INSERT INTO n VALUES {values}")
    yield name, duck
    duck.close()
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")


def _doris_type(op: str, a: str, b: str) -> str:
    wider = max(COLUMNS[a][0], COLUMNS[b][0], key=ORDER.index)
    return PROMOTED[wider] if op in "+-*" else wider


def _shale(cur, sql: str):  # type: ignore[no-untyped-def]
    try:
        cur.execute(sql)
        return cur.fetchall(), cur.description
    except pymysql.err.OperationalError as e:
        return e, None


PAIRS = [("ti", "ti"), ("ti", "si"), ("si", "si"), ("i", "i"), ("si", "i"), ("i", "bi"),
         ("bi", "bi"), ("bi", "ti")]


@pytest.mark.parametrize("op", ["+", "-", "*"])
@pytest.mark.parametrize("a,b", PAIRS)
def test_integer_arithmetic_matches_duckdb_or_errors(server, tables, op: str, a: str,
                                                     b: str) -> None:
    db, duck = tables
    t = _doris_type(op, a, b)
    got, desc = _shale(server.connect(db).cursor(), f"SELECT k, {a} {op} {b} FROM n ORDER BY k")
    try:
        want = duck.execute(f"SELECT k, CAST({a} AS {t}) {op} CAST({b} AS {t}) FROM n "
                            "ORDER BY k").fetchall()
    except duckdb.OutOfRangeException:
        want = None
    if want is None:  # the value leaves the result type in some row: an error, never a wrap
        assert isinstance(got, pymysql.err.OperationalError), got
        code, message = got.args
        assert code == 1690 and "Arithmetic overflow" in message, message
        assert f"out of the range of {t.lower()}" in message and "CAST an operand" in message
        return
    assert not isinstance(got, Exception), got
    assert desc[1][1] == WIRE_TYPE[t], (t, desc[1])
    assert [tuple(r) for r in got] == [tuple(r) for r in want]


@pytest.mark.parametrize("a,b", PAIRS)
def test_div_and_mod_match_duckdb(server, tables, a: str, b: str) -> None:
    """DIV truncates and % takes the dividend's sign in both engines; a zero divisor is NULL in
    Doris (an error in DuckDB, so the DuckDB query routes it to NULL); MIN DIV -1 overflows."""
    db, duck = tables
    t = _doris_type("DIV", a, b)
    got, desc = _shale(server.connect(db).cursor(),
                       f"SELECT k, {a} DIV {b}, {a} % {b} FROM n ORDER BY k")
    x, y = f"CAST({a} AS {t})", f"CAST({b} AS {t})"
    try:
        want = duck.execute(
            f"SELECT k, CASE WHEN {b} = 0 THEN NULL ELSE {x} // {y} END, "
            f"CASE WHEN {b} = 0 THEN NULL ELSE {x} % {y} END FROM n ORDER BY k").fetchall()
    except duckdb.OutOfRangeException:
        want = None
    if want is None:
        assert isinstance(got, pymysql.err.OperationalError), got
        assert got.args[0] == 1690 and "int_divide -1" in got.args[1], got.args
        return
    assert not isinstance(got, Exception), got
    assert desc[1][1] == WIRE_TYPE[t] and desc[2][1] == WIRE_TYPE[t], desc
    assert [tuple(r) for r in got] == [tuple(r) for r in want]


def test_constant_overflow_cases(conn) -> None:
    cur = conn.cursor()
    for sql, text in [
        ("SELECT 9223372036854775807 + 1", "9223372036854775807 add 1 is out of the range of bigint"),
        ("SELECT -9223372036854775808 - 1", "subtract 1"),
        ("SELECT 3037000500 * 3037000500", "multiply"),
        ("SELECT -(-9223372036854775808)", "negate -9223372036854775808"),
        ("SELECT 170141183460469231731687303715884105727 + 1", "of largeint"),
        ("SELECT CAST(99999999999999999999999999999999999999 AS DECIMAL(38, 0)) + 1",
         "of decimal(38,0)"),
        ("SELECT CAST(-2147483648 AS INT) DIV -1", "int_divide -1 is out of the range of int"),
        ("SELECT CAST(99999999999999999999999999999999999999 AS DECIMAL(38, 0)) / 0.5",
         "divide 0.5 is out of the range of decimal(38,4)"),
    ]:
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute(sql)
        code, message = info.value.args
        assert code == 1690 and "Arithmetic overflow: " in message and text in message, message
    # widened instead of wrapped, as Doris types them
    cur.execute("SELECT CAST(127 AS TINYINT) + CAST(1 AS TINYINT), 2147483647 * 2147483647, "
                "abs(-9223372036854775808), 3037000499 * 3037000499, "
                "CAST(9223372036854775807 AS LARGEINT) + 1")
    row = cur.fetchone()
    assert row == (128, 4611686014132420609, "9223372036854775808", 9223372030926249001,
                   "9223372036854775808")
    assert [d[1] for d in cur.description] == [2, 8, 253, 8, 253]


def test_abs_of_largeint(conn) -> None:
    """abs() keeps LARGEINT (there is no wider integer): exact values, and Doris' overflow error
    for the one value whose absolute value leaves the type."""
    cur = conn.cursor()
    cur.execute("SELECT abs(CAST(-170141183460469231731687303715884105727 AS LARGEINT)), "
                "abs(CAST(-5 AS LARGEINT)), abs(CAST(NULL AS LARGEINT))")
    assert cur.fetchone() == ("170141183460469231731687303715884105727", "5", None)
    with pytest.raises(pymysql.err.OperationalError) as info:
        cur.execute("SELECT abs(CAST(-170141183460469231731687303715884105727 AS LARGEINT) - 1)")
    code, message = info.value.args
    assert code == 1690 and "Arithmetic overflow: " in message and "of largeint" in message, message


def test_dates_past_9999_are_null_never_garbled(conn) -> None:
    """Doris 2.1: date arithmetic leaving 0000-01-01 .. 9999-12-31 gives NULL (DuckDB would
    answer 10000-01-01); before this, the wire carried '10000-01-01 00:00:0'."""
    cur = conn.cursor()
    cur.execute(
        "SELECT date_add('9999-12-31', INTERVAL 1 DAY), "
        "date_add(CAST('9999-12-31 23:59:59' AS DATETIME), INTERVAL 1 SECOND), "
        "CAST('2020-01-01' AS DATE) + INTERVAL 8000 YEAR, "
        "date_sub(CAST('0001-01-01' AS DATE), INTERVAL 1 DAY), "
        "date_add('2020-01-01', INTERVAL 9223372036854775807 DAY), "
        "date_add('2020-01-01', INTERVAL -9223372036854775807 SECOND), "
        "CAST('10000-01-01' AS DATE), CAST(100001231 AS DATE), from_days(99999999), "
        "makedate(9999, 366), str_to_date('10000-01-01', '%Y-%m-%d'), "
        "date_add('9999-12-30', INTERVAL 1 DAY), CAST('2020-01-01' AS DATE) + INTERVAL 1 YEAR")
    row = cur.fetchone()
    assert row[:11] == (None,) * 11
    assert row[11] == dt.datetime(9999, 12, 31) and row[12] == dt.date(2021, 1, 1)


def test_date_arithmetic_on_a_column_nulls_only_the_rows_out_of_range(conn, make_db) -> None:
    db = make_db("dates")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {db}.d (k INT, d DATE, t DATETIME) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
    cur.execute(f"INSERT INTO {db}.d VALUES (1, '9999-12-31', '9999-12-31 12:00:00'), "
                "(2, '2020-02-29', '2020-02-29 10:00:00'), (3, NULL, NULL)")
    cur.execute(f"SELECT k, d + INTERVAL 1 DAY, t + INTERVAL 12 HOUR, d + INTERVAL 1 YEAR "
                f"FROM {db}.d ORDER BY k")
    assert cur.fetchall() == (
        (1, None, None, None),
        (2, dt.date(2020, 3, 1), dt.datetime(2020, 2, 29, 22, 0), dt.date(2021, 2, 28)),
        (3, None, None, None))


def test_sum_past_bigint_is_an_error_not_a_crash(conn, make_db) -> None:
    """SUM(BIGINT) is BIGINT (Doris wraps it silently): exact partial sums may pass 2^63 on
    the way (group 1 ends in range) but a final sum out of range is error 1690."""
    db = make_db("sums")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {db}.s (k INT, v BIGINT, g INT) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ('replication_num' = '1')")
    cur.execute(f"INSERT INTO {db}.s VALUES (1, 9223372036854775807, 1), (2, 1, 1), "
                "(3, 5, 2), (4, -5, 1), (5, 9223372036854775807, 3), (6, 9223372036854775807, 3)")
    cur.execute(f"SELECT g, sum(v) FROM {db}.s WHERE g < 3 GROUP BY g ORDER BY g")
    assert cur.fetchall() == ((1, 9223372036854775803), (2, 5))
    for sql in (f"SELECT sum(v) FROM {db}.s", f"SELECT g, sum(v) FROM {db}.s GROUP BY g",
                f"SELECT sum(v) OVER (PARTITION BY g) FROM {db}.s"):
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute(sql)
        assert info.value.args[0] == 1690, info.value.args
        assert "Arithmetic overflow: sum = " in info.value.args[1]
    cur.execute(f"SELECT sum(CAST(v AS LARGEINT)) FROM {db}.s")
    assert cur.fetchone() == (str(3 * (2**63 - 1) + 1),)


def test_decimal_sum_past_38_digits_is_an_error(conn, make_db) -> None:
    db = make_db("dsum")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {db}.s (k INT, d DECIMAL(38, 0)) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
    big = "6" + "0" * 37  # two of them pass 10**38
    cur.execute(f"INSERT INTO {db}.s VALUES (1, {big}), (2, {big}), (3, -{big})")
    cur.execute(f"SELECT sum(d) FROM {db}.s WHERE k <> 2")
    assert cur.fetchone()[0] == 0
    with pytest.raises(pymysql.err.OperationalError) as info:
        cur.execute(f"SELECT sum(d) FROM {db}.s WHERE k < 3")
    assert info.value.args[0] == 1690
    assert "is out of the range of decimal(38,0)" in info.value.args[1]


def test_38_digit_decimals_stay_exact(conn, make_db) -> None:
    """Python's default decimal context keeps 28 digits: literals, casts and inserted values of
    29..38 digits were silently rounded (...6789012345 -> ...6790000000)."""
    from decimal import Decimal

    db = make_db("d38")
    cur = conn.cursor()
    v35 = "1234567890123456789012345678901.2345"
    v38 = "9" * 38
    cur.execute(f"SELECT {v35}, CAST('{v35}' AS DECIMAL(38, 4)), CAST('{v38}' AS DECIMAL(38, 0))")
    assert cur.fetchone() == (Decimal(v35), Decimal(v35), Decimal(v38))
    cur.execute(f"CREATE TABLE {db}.d (k INT, d DECIMAL(38, 4), e DECIMAL(38, 0)) "
                "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                "PROPERTIES ('replication_num' = '1')")
    cur.execute(f"INSERT INTO {db}.d VALUES (1, {v35}, {v38}), (2, '-{v35}', '-{v38}')")
    cur.execute(f"INSERT INTO {db}.d SELECT 3, d, e FROM {db}.d WHERE k = 1")
    cur.execute(f"SELECT k, d, e FROM {db}.d ORDER BY k")
    assert cur.fetchall() == ((1, Decimal(v35), Decimal(v38)),
                              (2, Decimal("-" + v35), Decimal("-" + v38)),
                              (3, Decimal(v35), Decimal(v38)))
