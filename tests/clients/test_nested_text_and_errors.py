"""ARRAY / MAP / STRUCT over pymysql: the text Doris 2.1 sends for nested values (`[1, 2,
null]`, `{"a":1, "b":null}`, strings and dates quoted inside) and struct_element's errors in
Doris' wording, which ends with the call as Doris' FE prints it (StructElement.toSql(); the
examples of Doris' STRUCT_ELEMENT documentation)."""

from __future__ import annotations

import pymysql
import pytest

STRUCT = "named_struct('name', 'Alice', 'age', 25)"


def one(conn: pymysql.connections.Connection, sql: str) -> object:
    with conn.cursor() as cur:
        cur.execute(sql)
        [(value,)] = cur.fetchall()
        return value


def error_of(conn: pymysql.connections.Connection, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as ei, conn.cursor() as cur:
        cur.execute(sql)
    return ei.value.args[0], ei.value.args[1]


@pytest.mark.parametrize(("sql", "text"), [
    ("SELECT [1, 2, null]", "[1, 2, null]"),
    ("SELECT ['a', null, 'c']", '["a", null, "c"]'),
    ("SELECT [[1, 2], [3]]", "[[1, 2], [3]]"),
    ("SELECT map('a', 1, 'b', null)", '{"a":1, "b":null}'),
    ("SELECT map(1, 'x', 2, null)", '{1:"x", 2:null}'),
    ("SELECT named_struct('f1', 1, 'f2', 'a', 'f3', null)", '{"f1":1, "f2":"a", "f3":null}'),
    ("SELECT array(cast('2020-01-01' AS date), null)", '["2020-01-01", null]'),
    ("SELECT named_struct('a', [1, 2], 'b', map('x', 'y'))", '{"a":[1, 2], "b":{"x":"y"}}'),
    ("SELECT []", "[]"),
])
def test_nested_text(conn, sql: str, text: str) -> None:
    assert one(conn, sql) == text


def test_element_access(conn) -> None:
    assert one(conn, "SELECT [1, 2, 3][0]") is None  # Doris: out of range is NULL
    assert one(conn, "SELECT [1, 2, 3][5]") is None
    assert one(conn, "SELECT [1, 2, 3][-1]") == 3
    assert one(conn, "SELECT map('a', 1)['b']") is None
    assert one(conn, f"SELECT struct_element({STRUCT}, 'age')") == 25
    assert one(conn, f"SELECT struct_element({STRUCT}, 1)") == "Alice"


@pytest.mark.parametrize(("arg", "message"), [
    ("5", f"the specified field index out of bound: struct_element({STRUCT}, 5)"),
    ("0", f"the specified field index out of bound: struct_element({STRUCT}, 0)"),
    ("'nonexistent'", ("the specified field name nonexistent was not found: "
                      f"struct_element({STRUCT}, 'nonexistent')")),
])
def test_struct_element_errors(conn, arg: str, message: str) -> None:
    assert error_of(conn, f"SELECT struct_element({STRUCT}, {arg})") == (
        1105, f"errCode = 2, detailMessage = {message}")


def test_struct_element_of_null_has_no_signature(conn) -> None:
    assert error_of(conn, "SELECT struct_element(NULL, 5)") == (
        1105, ("errCode = 2, detailMessage = Can not find the compatibility function signature: "
              "struct_element(NULL, TINYINT)"))


def test_struct_element_on_a_column(db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT, s STRUCT<f1:INT, f2:VARCHAR(10)>, inv INT) "
                    "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                    "PROPERTIES ('replication_num' = '1')")
        cur.execute("INSERT INTO t VALUES (1, named_struct('f1', 1, 'f2', 'x'), 2)")
    assert one(db_conn, "SELECT s FROM t") == '{"f1":1, "f2":"x"}'
    prefix = "errCode = 2, detailMessage = "
    assert error_of(db_conn, "SELECT struct_element(s, inv) FROM t") == (
        1105, (f"{prefix}struct_element only allows constant int or string second parameter: "
              "struct_element(s, inv)"))
    assert error_of(db_conn, "SELECT struct_element(s, 3) FROM t") == (
        1105, f"{prefix}the specified field index out of bound: struct_element(s, 3)")
    assert error_of(db_conn, "SELECT struct_element(s, 'f3') FROM t") == (
        1105, f"{prefix}the specified field name f3 was not found: struct_element(s, 'f3')")
