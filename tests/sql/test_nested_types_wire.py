"""ARRAY / MAP / STRUCT columns over the MySQL protocol (pymysql against a live server).

DDL (DESC / SHOW CREATE TABLE spellings, Doris' refusals), INSERT of literals and of Doris'
text form, SELECT in Doris' text form, element access and the common functions; array
functions are compared with DuckDB (whose lists are 1-based too) on the same generated rows.
"""

from __future__ import annotations

import random

import duckdb
import pymysql
import pytest

_DDL = ("CREATE TABLE t (k INT, a ARRAY<INT>, m MAP<STRING,INT>, "
        "s STRUCT<f1:INT, f2:VARCHAR(10)>, n ARRAY<ARRAY<DECIMAL(10,2)>>) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3")


@pytest.fixture(scope="module")
def nested_db(server):
    from support.names import unique_db_name

    name = unique_db_name("nested")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"USE {name}")
        cur.execute(_DDL)
        cur.execute(
            "INSERT INTO t VALUES "
            "(1, [1, 2, NULL], {'a': 1, 'b': NULL}, {1, 'x'}, [[1.5], []]), "
            "(2, NULL, map('c', 3), named_struct('f1', 2, 'f2', 'y'), NULL), "
            "(3, [], {}, struct(3, NULL), [[1, 2.25]]), "
            "(4, array(5), NULL, NULL, [NULL])")
        cur.execute("INSERT INTO t VALUES "
                    "(5, '[7, 8]', '{\"z\":9}', '{\"f1\":5, \"f2\":\"w\"}', '[[0.5]]')")
    yield name
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")


def _rows(server, db: str, sql: str) -> list[tuple]:
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _error(server, db: str, sql: str) -> str:
    with server.connect(db) as c, c.cursor() as cur, pytest.raises(pymysql.MySQLError) as err:
        cur.execute(sql)
    return str(err.value.args[1])


def test_desc_and_show_create(server, nested_db):
    desc = {r[0]: r[1] for r in _rows(server, nested_db, "DESC t")}
    assert desc == {"k": "INT", "a": "ARRAY<INT>", "m": "MAP<TEXT,INT>",
                    "s": "STRUCT<f1:INT,f2:VARCHAR(10)>", "n": "ARRAY<ARRAY<DECIMAL(10,2)>>"}
    create = _rows(server, nested_db, "SHOW CREATE TABLE t")[0][1]
    assert "`a` array<int> NULL" in create
    assert "`m` map<text,int> NULL" in create
    assert "`s` struct<f1:int,f2:varchar(10)> NULL" in create


def test_select_prints_doris_text(server, nested_db):
    assert _rows(server, nested_db, "SELECT k, a, m, s, n FROM t ORDER BY k") == [
        (1, "[1, 2, null]", '{"a":1, "b":null}', '{"f1":1, "f2":"x"}', "[[1.50], []]"),
        (2, None, '{"c":3}', '{"f1":2, "f2":"y"}', None),
        (3, "[]", "{}", '{"f1":3, "f2":null}', "[[1.00, 2.25]]"),
        (4, "[5]", None, None, "[null]"),
        (5, "[7, 8]", '{"z":9}', '{"f1":5, "f2":"w"}', "[[0.50]]"),
    ]


def test_literals_and_constructors(server, nested_db):
    assert _rows(server, nested_db,
                 "SELECT [1, 2, NULL], ['a', 'b'], {'a': 1}, map('x', [1, 2]), "
                 "named_struct('f1', 1, 'f2', 'x'), struct(1, 'x'), [[1, 2], [3]], [1, 2][2]"
                 ) == [("[1, 2, null]", '["a", "b"]', '{"a":1}', '{"x":[1, 2]}',
                        '{"f1":1, "f2":"x"}', '{"col1":1, "col2":"x"}', "[[1, 2], [3]]", 2)]


def test_element_access_and_functions(server, nested_db):
    assert _rows(server, nested_db,
                 "SELECT k, a[1], a[-1], a[9], element_at(a, 2), array_size(a), size(a), "
                 "cardinality(a), array_contains(a, 2) FROM t ORDER BY k") == [
        (1, 1, None, None, 2, 3, 3, 3, 1),
        (2, None, None, None, None, None, None, None, None),
        (3, None, None, None, None, 0, 0, 0, 0),
        (4, 5, 5, None, None, 1, 1, 1, 0),
        (5, 7, 8, None, 8, 2, 2, 2, 0),
    ]
    assert _rows(server, nested_db,
                 "SELECT k, m['a'], element_at(m, 'c'), map_keys(m), map_values(m), "
                 "map_contains_key(m, 'a'), size(m), struct_element(s, 'f2'), "
                 "struct_element(s, 1) FROM t ORDER BY k") == [
        (1, 1, None, '["a", "b"]', "[1, null]", 1, 2, "x", 1),
        (2, None, 3, '["c"]', "[3]", 0, 1, "y", 2),
        (3, None, None, "[]", "[]", 0, 0, None, 3),
        (4, None, None, None, None, None, None, None, None),
        (5, None, None, '["z"]', "[9]", 0, 1, "w", 5),
    ]
    assert _rows(server, nested_db,
                 "SELECT k FROM t WHERE array_contains(a, 5) OR size(m) = 2 ORDER BY k"
                 ) == [(1,), (4,)]


def test_struct_from_map_literal_by_field_name(server, make_db):
    """`{'f1': 1, 'f2': 'x'}` fills a STRUCT column by field name (a missing field is NULL)."""
    db = make_db("nested_sm")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE s (k INT, s STRUCT<f1:INT, f2:STRING>) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("INSERT INTO s VALUES (1, {'f1': 1, 'f2': 'x'}), (2, {'f2': 'y'})")
        cur.execute("SELECT * FROM s ORDER BY k")
        assert cur.fetchall() == ((1, '{"f1":1, "f2":"x"}'), (2, '{"f1":null, "f2":"y"}'))


def test_casts(server, nested_db):
    assert _rows(server, nested_db,
                 "SELECT CAST('[1, 2]' AS ARRAY<INT>), CAST([1, 2] AS STRING), "
                 "CAST(a AS ARRAY<BIGINT>), CAST('[1, x]' AS ARRAY<INT>) FROM t WHERE k = 1"
                 ) == [("[1, 2]", "[1, 2]", "[1, 2, null]", None)]


def test_unique_table_keeps_last_value(server, make_db):
    db = make_db("nested_u")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE u (k INT, a ARRAY<STRING>, m MAP<INT,STRING>) UNIQUE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("INSERT INTO u VALUES (1, ['a'], {1: 'x'})")
        cur.execute("INSERT INTO u VALUES (1, ['b', 'é'], {2: 'y'})")
        cur.execute("SELECT * FROM u")
        assert cur.fetchall() == ((1, '["b", "é"]', '{2:"y"}'),)


def test_aggregate_table_replace(server, make_db):
    db = make_db("nested_agg")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE g (k INT, v INT SUM, a ARRAY<INT> REPLACE) "
                    "AGGREGATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("INSERT INTO g VALUES (1, 1, [1])")
        cur.execute("INSERT INTO g VALUES (1, 2, [2, 3])")
        cur.execute("SELECT * FROM g")
        assert cur.fetchall() == ((1, 3, "[2, 3]"),)


ONLY_METRIC = "must use with specific function, and don't support filter, group by or order by"


@pytest.mark.parametrize(("sql", "message"), [
    ("CREATE TABLE b1 (a ARRAY<INT>, k INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(k) BUCKETS 1",
     "Array can only be used in the non-key column of the duplicate table at present."),
    ("CREATE TABLE b2 (m MAP<INT,INT>, k INT) DUPLICATE KEY(m) DISTRIBUTED BY HASH(k) BUCKETS 1",
     "Map can only be used in the non-key column of the duplicate table at present."),
    (("CREATE TABLE b3 (k INT, a ARRAY<INT> SUM) AGGREGATE KEY(k) "
      "DISTRIBUTED BY HASH(k) BUCKETS 1"), "ARRAY column can't support aggregation SUM"),
    (("CREATE TABLE b4 (k INT, s STRUCT<f1:INT, f1:INT>) DUPLICATE KEY(k) "
      "DISTRIBUTED BY HASH(k) BUCKETS 1"), "Duplicate field name f1"),
    ("CREATE TABLE b5 (k INT, a ARRAY<INT>) DUPLICATE KEY(k) DISTRIBUTED BY HASH(a) BUCKETS 1",
     "Array Type should not be used in distribution column[a]."),
    ("SELECT * FROM t ORDER BY a", ONLY_METRIC),
    ("SELECT m, count(*) FROM t GROUP BY m", ONLY_METRIC),
    ("SELECT * FROM t WHERE a = [1, 2]", ONLY_METRIC),
    ("SELECT struct_element(s, 'nope') FROM t", "the specified field name nope was not found"),
    ("INSERT INTO t (k, a) VALUES (9, [1, 'x'])", "'x' is not a valid integer"),
    ("INSERT INTO t (k, a) VALUES (9, 5)", "can not cast from origin type TINYINT"),
])
def test_errors(server, nested_db, sql, message):
    assert message in _error(server, nested_db, sql)


def test_array_functions_match_duckdb(server, make_db):
    """element_at / size / contains over random arrays with NULLs agree with DuckDB."""
    rng = random.Random(7)
    rows = []
    for k in range(60):
        arr = None if k % 9 == 0 else [
            None if rng.random() < 0.2 else rng.randrange(-5, 5)
            for _ in range(rng.randrange(0, 5))]
        rows.append((k, arr))
    db = make_db("nested_duck")
    lit = ", ".join(f"({k}, {'NULL' if a is None else '[' + ', '.join('NULL' if x is None else str(x) for x in a) + ']'})"  # noqa: E501
                    for k, a in rows)
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE r (k INT, a ARRAY<INT>) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 2")
        cur.execute(f"INSERT INTO r VALUES {lit}")
        cur.execute("SELECT k, a[1], a[2], a[-1], array_size(a), array_contains(a, 3) "
                    "FROM r ORDER BY k")
        ours = [tuple(r) for r in cur.fetchall()]
    duck = duckdb.connect()
    duck.execute("CREATE TABLE r (k INT, a INT[])")
    duck.executemany("INSERT INTO r VALUES (?, ?)", rows)
    theirs = duck.execute(
        "SELECT k, a[1], a[2], a[-1], len(a), "
        "CASE WHEN a IS NULL THEN NULL ELSE list_contains(a, 3)::INT END FROM r ORDER BY k"
    ).fetchall()
    assert ours == [tuple(r) for r in theirs]


def test_nested_columns_through_queries_and_metadata(server, nested_db, make_db):
    """CTAS, INSERT .. SELECT, join payloads, UNION ALL, IS NULL, COALESCE keep nested values;
    DESC ALL and information_schema name the nested types."""
    db = make_db("nested_q")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(f"CREATE TABLE c AS SELECT k, a, m, s FROM {nested_db}.t")
        cur.execute("DESC c")
        assert [r[1] for r in cur.fetchall()] == [
            "INT", "ARRAY<INT>", "MAP<TEXT,INT>", "STRUCT<f1:INT,f2:VARCHAR(10)>"]
        cur.execute("INSERT INTO c SELECT k + 10, a, m, s FROM c WHERE k <= 2")
        cur.execute("SELECT k, a, s FROM c WHERE a IS NOT NULL ORDER BY k")
        assert cur.fetchall() == ((1, "[1, 2, null]", '{"f1":1, "f2":"x"}'),
                                  (3, "[]", '{"f1":3, "f2":null}'), (4, "[5]", None),
                                  (5, "[7, 8]", '{"f1":5, "f2":"w"}'),
                                  (11, "[1, 2, null]", '{"f1":1, "f2":"x"}'))
        cur.execute("SELECT c.k, x.m FROM c JOIN c x ON c.k = x.k WHERE c.k IN (1, 12) "
                    "ORDER BY c.k")
        assert cur.fetchall() == ((1, '{"a":1, "b":null}'), (12, '{"c":3}'))
        cur.execute("SELECT a FROM c WHERE k = 4 UNION ALL SELECT [9, NULL]")
        assert sorted(r[0] for r in cur.fetchall()) == ["[5]", "[9, null]"]
        cur.execute("SELECT k, coalesce(a, []) FROM c WHERE k IN (2, 4) ORDER BY k")
        assert cur.fetchall() == ((2, "[]"), (4, "[5]"))
        cur.execute("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS "
                    f"WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = 'c' ORDER BY ORDINAL_POSITION")
        assert cur.fetchall()[1:] == (
            ("a", "array<int>", "array<int>"), ("m", "map<text,int>", "map<text,int>"),
            ("s", "struct<f1:int,f2:varchar(10)>", "struct<f1:int,f2:varchar(10)>"))


def test_compaction_keeps_nested_values(server, make_db):
    """A UNIQUE table loaded five times, then fully compacted: the same rows before and after."""
    import time

    db = make_db("nested_compact")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE u (k INT, a ARRAY<STRING>, s STRUCT<x:INT,y:MAP<INT,INT>>) "
                    "UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                    # versions stay apart until the full compaction below asks for it
                    "PROPERTIES ('disable_auto_compaction' = 'true')")
        for i in range(5):
            cur.execute(f"INSERT INTO u VALUES ({i % 3}, ['v{i}', NULL], {{{i}, {{{i}: {i}}}}}), "
                        f"({10 + i}, [], NULL)")
        cur.execute("SELECT * FROM u ORDER BY k")
        before = cur.fetchall()
        assert before[0] == (0, '["v3", null]', '{"x":3, "y":{3:3}}')

        def version_count() -> int:
            cur.execute("SHOW TABLETS FROM u")
            names = [d[0] for d in cur.description]
            return int(dict(zip(names, cur.fetchone()))["VersionCount"])

        loaded = version_count()
        assert loaded >= 5
        cur.execute("ADMIN COMPACT TABLE u WHERE type = 'FULL'")
        deadline = time.monotonic() + 120
        while version_count() > 2:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        cur.execute("SELECT * FROM u ORDER BY k")
        assert cur.fetchall() == before


def test_prepared_statement_binary_protocol(server, nested_db):
    """Server-side prepared statements (binary result rows) carry the same Doris text."""
    import mysql.connector

    conn = mysql.connector.connect(host="127.0.0.1", port=server.port, user="root",
                                   database=nested_db)
    try:
        cur = conn.cursor(prepared=True)
        cur.execute("SELECT a, m, s FROM t WHERE k = ?", (1,))
        row = [v.decode() if isinstance(v, (bytes, bytearray)) else v for v in cur.fetchone()]
        assert row == ["[1, 2, null]", '{"a":1, "b":null}', '{"f1":1, "f2":"x"}']
        cur.close()
    finally:
        conn.close()
