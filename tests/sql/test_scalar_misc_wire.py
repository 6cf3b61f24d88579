"""Date and string scalar functions over the MySQL protocol: the <unit>s_add / <unit>s_sub
family (rewritten to DATE_ADD in sql/binder/bind_functions.py), and sql/functions/
misc_scalars.py. Expected values are the Doris 2.1 documentation examples (cited) plus NULLs
and edge cases; the <unit>s_add family is checked against DuckDB's interval arithmetic."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

D = dt.date
T = dt.datetime

CASES = [
    # Doris docs: days_add('2020-01-31', 1) ... on a DATE stays a DATE
    ("days_add(cast('2024-01-01' as date), 1)", D(2024, 1, 2)),
    ("days_sub(cast('2024-03-01' as date), 1)", D(2024, 2, 29)),
    ("hours_sub('2024-01-01 00:00:00', 1)", T(2023, 12, 31, 23)),
    ("years_add('2020-02-29', 1)", T(2021, 2, 28)),
    ("months_sub('2024-03-31 10:00:00', 1)", T(2024, 2, 29, 10)),
    ("minutes_add(NULL, 1)", None), ("months_add('2024-01-31', 1)", T(2024, 2, 29)),
    # Doris docs months_between examples
    ("months_between('2020-12-26', '2020-10-25')", 2.03225806),
    ("months_between('2020-10-25 10:00:00', '2020-12-26 11:00:00', false)",
     -2.0336021505376345),
    ("months_between('2020-03-31', '2020-02-29')", 1.0),  # both month ends: whole months
    ("months_between(NULL, '2020-02-29')", None),
    # Doris docs to_monday('2022-09-10') -> 2022-09-05; up to 1970-01-04 -> 1970-01-01
    ("to_monday('2022-09-10')", D(2022, 9, 5)), ("to_monday('1970-01-02')", D(1970, 1, 1)),
    # Doris docs convert_tz examples
    ("convert_tz('2019-08-01 13:21:03', 'Asia/Shanghai', 'America/Los_Angeles')",
     T(2019, 7, 31, 22, 21, 3)),
    ("convert_tz('2019-08-01 13:21:03', '+08:00', 'America/Los_Angeles')",
     T(2019, 7, 31, 22, 21, 3)),
    ("convert_tz('2019-08-01 13:21:03', 'no/such_zone', 'UTC')", None),
    # Doris docs sec_to_time(59738) -> 16:35:38; time_to_sec('16:32:18') -> 59538
    ("sec_to_time(59738)", "16:35:38"), ("time_to_sec('16:32:18')", 59538),
    ("time_to_sec('abc')", None),
    ("field('b', 'a', 'b')", 2), ("field('z', 'a', 'b')", 0), ("field(NULL, 'a')", 0),
    ("elt(1, 'a', 'b')", "a"), ("elt(3, 'a', 'b')", None), ("elt(0, 'a')", None),
    # Doris docs mask: upper -> X, lower -> x, digits -> n; custom replacements in that order
    ("mask('abc123XYZ')", "xxxnnnXXX"), ("mask('abc123XYZ', '*', '#', '$')", "###$$$***"),
    ("mask(NULL)", None),
    # Doris docs url_decode example
    ("url_decode('https%3A%2F%2Fdoris.apache.org%2Fzh-CN%2Fdocs%2Fsql-manual')",
     "https://doris.apache.org/zh-CN/docs/sql-manual"),
    # Doris docs parse_url('https://doris.apache.org/', 'HOST') -> doris.apache.org
    ("parse_url('https://doris.apache.org/', 'HOST')", "doris.apache.org"),
    ("parse_url('http://a.com/x?y=1&z=2', 'QUERY', 'z')", "2"),
    ("parse_url('http://a.com/x?y=1', 'PROTOCOL')", "http"),
    ("parse_url('http://a.com/x?y=1', 'REF')", None),
    # Doris docs murmur_hash3_32: "hello" -> 1321743225, ("hello", "world") -> 984713481
    ("murmur_hash3_32('hello')", 1321743225), ("murmur_hash3_32('hello', 'world')", 984713481),
    ("murmur_hash3_32(NULL)", None),
    # Doris docs xxhash_32 / xxhash_64 (XXH32 and XXH3_64, seed 0, chained)
    ("xxhash_32('hello')", -83855367), ("xxhash_32('hello', 'world')", -920844969),
    ("xxhash_32(NULL)", None), ("xxhash_32('hello', NULL)", None),
    ("xxhash_64('hello')", -7685981735718036227),
    ("xxhash_64('hello', 'world')", 7001965798170371843), ("xxhash_64(NULL)", None),
    ("bit_count(7)", 3), ("bit_count(-1)", 8), ("bit_count(cast(-1 as bigint))", 64),
    ("bit_count(NULL)", None),
    ("length(uuid())", 36),
    # Doris docs money_format examples
    ("money_format(17014116)", "17,014,116.00"), ("money_format(1123.456)", "1,123.46"),
    ("money_format(1123.4)", "1,123.40"), ("money_format(NULL)", None),
    # Doris docs to_base64 / from_base64 live in tests/sql/test_json_functions_wire.py
]


@pytest.mark.parametrize("call,expected", CASES, ids=[c[0] for c in CASES])
def test_scalar(db_conn, call: str, expected: object) -> None:
    cur = db_conn.cursor()
    cur.execute(f"SELECT {call}")
    assert cur.fetchone()[0] == expected


@pytest.mark.parametrize("unit", ["year", "quarter", "month", "week", "day", "hour", "minute",
                                  "second"])
def test_unit_add_family_matches_duckdb(db_conn, unit: str) -> None:
    cur = db_conn.cursor()
    duck = duckdb.connect()
    stamps = ["2024-01-31 10:20:30", "2024-02-29 00:00:00", "1999-12-31 23:59:59"]
    for stamp in stamps:
        for n in (1, -3, 13):
            cur.execute(f"SELECT {unit}s_add('{stamp}', {n}), {unit}s_sub('{stamp}', {n})")
            ours = cur.fetchone()
            # fetchall on a connection of our own: a half-read result on duckdb's shared
            # default connection breaks the next test that uses it
            (ref,) = duck.execute(f"SELECT TIMESTAMP '{stamp}' + INTERVAL ({n}) {unit}, "
                                  f"TIMESTAMP '{stamp}' - INTERVAL ({n}) {unit}").fetchall()
            assert ours == ref, (unit, stamp, n)
