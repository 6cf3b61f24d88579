"""JSON scalar functions over the MySQL protocol (sql/functions/json_text.py), with expected
values from the Doris 2.1 documentation examples (cited per case), NULL handling, and error
wording for sqlglot-renamed functions (sql/binder/bind_functions.py SQLGLOT_TO_DORIS)."""

from __future__ import annotations

import pymysql
import pytest


def _row(cur, sql: str) -> tuple:  # type: ignore[no-untyped-def]
    cur.execute(sql)
    return cur.fetchone()


def test_get_json_family(db_conn) -> None:
    cur = db_conn.cursor()
    # Doris docs, get_json_string examples
    assert _row(cur, """SELECT get_json_string('{"k1":"v1", "k2":"v2"}', '$.k1'),
        get_json_string('{"k1":"v1", "my.key":["e1", "e2", "e3"]}', '$."my.key"[1]'),
        get_json_string('{"k1.key":{"k2":["v1", "v2"]}}', '$."k1.key".k2[0]'),
        get_json_string('{"a":{"b":[1,2]}}', '$.a'),
        get_json_string('{"a":1}', '$.missing'), get_json_string('not json', '$.a'),
        get_json_string(NULL, '$.a'), get_json_string('{"a":null}', '$.a')""") == (
        "v1", "e2", "v1", '{"b":[1,2]}', None, None, None, None)
    # Doris docs, get_json_int / get_json_bigint / get_json_double examples
    assert _row(cur, """SELECT get_json_int('{"k1":1, "k2":"2"}', '$.k1'),
        get_json_int('{"k1":"v1", "my.key":[1, 2, 3]}', '$."my.key"[1]'),
        get_json_int('{"k1":"v1"}', '$.k1'), get_json_int('{"k1":3000000000}', '$.k1'),
        get_json_bigint('{"k1":3000000000}', '$.k1'),
        get_json_double('{"k1":1.3, "k2":"2"}', '$.k1'),
        get_json_double('{"k1":"v1", "my.key":[1.1, 2.2, 3.3]}', '$."my.key"[1]'),
        get_json_double('{"k1":2}', '$.k1'), get_json_double('{"k1":"2"}', '$.k1')""") == (
        1, 2, None, None, 3000000000, 1.3, 2.2, 2.0, None)


def test_json_extract_valid_length_keys(db_conn) -> None:
    cur = db_conn.cursor()
    # Doris docs, json_extract examples
    assert _row(cur, """SELECT json_extract('{"id": 123, "name": "doris"}', '$.name'),
        json_extract('[1, 2, 3]', '$.[1]'),
        json_extract('{"k1": "v1", "k2": { "k21": 6.6, "k22": [1, 2] } }',
                     '$.k1', '$.k2.k21', '$.k2.k22', '$.k2.k22[1]'),
        jsonb_extract('{"a":{"b":true}}', '$.a'), json_extract('{"a":1}', '$.b'),
        json_extract('{"a":1}', '$')""") == (
        '"doris"', "2", '["v1",6.6,[1,2],2]', '{"b":true}', None, '{"a":1}')
    # Doris docs, json_valid / json_length / json_keys examples
    assert _row(cur, """SELECT json_valid('{"x":  1}'), json_valid('{"x"  1}'), json_valid(NULL),
        json_length('{"k1":"v31","k2":300}'), json_length('"abc"'),
        json_length('{"x": 1, "y": [1, 2]}', '$.y'), json_length('{"x": 1}', '$.z'),
        json_keys('{"a": 1, "b": {"c": 30}}'), json_keys('{"a": 1, "b": {"c": 30}}', '$.b'),
        json_keys('1', '$.b')""") == (
        1, 0, None, 2, 1, 2, None, '["a","b"]', '["c"]', None)


def test_json_contains(db_conn) -> None:
    cur = db_conn.cursor()
    # Doris docs json_contains: '{"a": 1, "b": 2, "c": {"d": 4}}' contains '1' at '$.a' -> 1,
    # '1' at '$.b' -> 0, '{"d": 4}' at '$.c' -> 1
    doc = '{"a": 1, "b": 2, "c": {"d": 4}}'
    assert _row(cur, f"""SELECT json_contains('{doc}', '1', '$.a'),
        json_contains('{doc}', '1', '$.b'), json_contains('{doc}', '{{"d": 4}}', '$.c'),
        json_contains('[1, 2]', '1'), json_contains('[1, [2, 3]]', '[3]'),
        json_contains('[1, 2]', '"1"'), json_contains('[1, 2]', 'bad'),
        json_contains(NULL, '1'), json_contains('{doc}', '1', '$.zz')""") == (
        1, 0, 1, 1, 1, 0, None, None, None)


def test_json_constructors_and_quoting(db_conn) -> None:
    cur = db_conn.cursor()
    # Doris docs: json_object('id', 87, 'name', 'carrot') -> {"id":87,"name":"carrot"};
    # json_array(1, "abc", NULL, TRUE) -> [1,"abc",null,true]
    assert _row(cur, """SELECT json_object('id', 87, 'name', 'carrot'),
        json_array(1, 'abc', NULL, TRUE), json_object('a', NULL),
        json_quote('[1, 2, 3]'), json_unquote('"doris"'), json_unquote('x')""") == (
        '{"id":87,"name":"carrot"}', '[1,"abc",null,true]', '{"a":null}',
        '"[1, 2, 3]"', "doris", "x")


def test_base64(db_conn) -> None:
    cur = db_conn.cursor()
    # Doris docs: to_base64('1') -> MQ==, to_base64('234') -> MjM0; from_base64('MQ==') -> 1
    assert _row(cur, """SELECT to_base64('1'), to_base64('234'), from_base64('MQ=='),
        from_base64('MjM0'), from_base64('!!'), to_base64(NULL), to_base64('é')""") == (
        "MQ==", "MjM0", "1", "234", None, None, "w6k=")


# sqlglot parses these into nodes with their own canonical names (ARRAY_UNIQUE_AGG, ARG_MAX,
# LOGICAL_OR, STRING_TO_ARRAY, ...). Whether or not the function is implemented yet, an error
# must name the function as the user wrote it; called with a wrong arity it always errors.
@pytest.mark.parametrize("call,name", [
    ("collect_set(k)", "COLLECT_SET"), ("max_by(k, k)", "MAX_BY"), ("bool_or(k > 1)", "BOOL_OR"),
    ("split_by_string('a,b', ',')", "SPLIT_BY_STRING"), ("array_join([1], ',')", "ARRAY_JOIN"),
    ("convert_tz('2024-01-01 00:00:00', 'UTC', 'Asia/Shanghai')", "CONVERT_TZ"),
    ("bit_count(7)", "BIT_COUNT"), ("array_sort([2, 1])", "ARRAY_SORT"),
    ("months_between('2024-03-01', '2024-01-01')", "MONTHS_BETWEEN"),
    ("array_distinct([1, 1])", "ARRAY_DISTINCT"), ("uuid(1)", "UUID"),
])
def test_errors_name_the_doris_function(db_conn, call: str, name: str) -> None:
    cur = db_conn.cursor()
    try:
        cur.execute(f"SELECT {call} FROM (SELECT 1 AS k) t")
        cur.fetchall()
    except pymysql.err.MySQLError as err:
        assert name in str(err), str(err)
