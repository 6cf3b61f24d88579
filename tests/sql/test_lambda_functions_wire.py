"""Lambda (higher-order) ARRAY functions over the MySQL protocol (sql/binder/bind_lambdas.py,
sql/functions/lambdas.py, executor/lambdas.py).

Expected values: the Doris 2.1 documentation examples (array_map, array_filter, array_exists,
array_count, array_first, array_last_index, array_sortby pages), DuckDB's list_transform /
list_filter on random arrays with NULL elements, NULL arrays and empty arrays, and a Python
reference for what DuckDB has no twin of. Errors keep Doris' wording.
"""

from __future__ import annotations

import json
import random

import duckdb
import pymysql
import pytest

from sql.functions.lambdas import array_sortby

DOC_CASES = [
    ("array_map(x -> x + 2, [1, 2, 3])", "[3, 4, 5]"),
    ("array_map(x -> power(x, 2), [1, 2, 3])", "[1, 4, 9]"),
    ("array_map((x, y) -> x + y, [1, 2, 3, 4, 5], [10, 20, -40, 80, -100])",
     "[11, 22, -37, 84, -95]"),
    ("array_map((x, y) -> x > y, [1, 2, 3, 4, 5], [10, 20, -40, 80, -100])",
     "[0, 0, 1, 0, 1]"),
    ("array_map(x -> x = 3, [1, 2, 3, 4, 5])", "[0, 0, 1, 0, 0]"),
    ("array_map(x -> cast(x as string), [6, 7, 8])", '["6", "7", "8"]'),
    ("array_map(x -> x, [])", "[]"),
    ("array_map(x -> x, NULL)", None),
    ("array_filter(x -> x > 1, [1, 2, 3, 0, NULL])", "[2, 3]"),
    ("array_filter(x -> x % 2 = 0, [10, 12, 13])", "[10, 12]"),
    ("array_filter(x -> x * (-10) > 0, [10, 20, -40, 80, -100])", "[-40, -100]"),
    ("array_filter([1, 2, 3, 4, 5], [0, 1, 0])", "[2]"),
    # Different lengths: Doris pairs by position, a longer flag array's tail is ignored.
    ("array_filter([1, 2], [1, 0, 1, 1])", "[1]"),
    ("array_filter([1, 2, 3], [])", "[]"),
    ("array_filter(x -> x > 0, array_map((x, y) -> x > y, [1, 2, 3], [10, 20, -40]))",
     "[1]"),
    ("array_exists(x -> x > 1, [1, 2, 3])", "[0, 1, 1]"),
    ("array_exists(x -> abs(x) - 1, [1, NULL])", "[0, null]"),
    ("array_exists([0, NULL])", "[0, null]"),
    ("array_count(x -> x, [0, 1, 2, 3])", 3),
    ("array_count(x -> x > 2, [0, 1, 2, 3])", 1),
    ("array_count(x -> x is null, [null, null, null, 1, 2])", 3),
    ("array_count(x -> power(x, 2) > 10, [1, 2, 3, 4, 5])", 2),
    ("array_count((x, y) -> x > y, [1, NULL, 2], [NULL, 3, 1])", 1),
    ("array_count(x -> x > 0, NULL)", 0),
    ("array_first(x -> x > 2, [1, 2, 3, 0])", 3),
    ("array_first(x -> x > 4, [1, 2, 3, 0])", None),
    ("array_first(x -> x > 1, [1, 2, 3, 0])", 2),
    ("array_last(x -> x > 0, [1, 2, 3, 0])", 3),
    ("array_last(x -> x > 4, [1, 2, 3, 0])", None),
    ("array_first_index(x -> x > 1, [1, 2, 3])", 2),
    ("array_first_index(x -> x > 5, [1, 2, 3])", 0),
    ("array_last_index(x -> x is null, [null, null, 1, 2])", 2),
    ("array_last_index(x -> x = 's', ['a', 's', 's', 's', 'b'])", 4),
    ("array_last_index(x -> power(x, 2) > 10, [1, 4, 3, 4])", 4),
    ("array_last_index((x, y) -> x > y, [1, NULL, 2], [NULL, 3, 1])", 3),
    ("array_sortby(['a', 'b', 'c'], [3, 2, 1])", '["c", "b", "a"]'),
    ("array_sortby([1, 2, 3, 4, 5], [10, 5, 1, 20, 80])", "[3, 2, 1, 4, 5]"),
    ("array_sortby([1, 2, 3, 4, 5], [10, 20, -40, 80, -100])", "[5, 3, 1, 2, 4]"),
    ("array_sortby([3], NULL)", "[3]"),
    ("array_sortby(NULL, [2])", None),
    ("array_sortby([NULL], [NULL])", "[null]"),
    ("array_sortby((x, y) -> y + x, [-40, 30, -100], [30, 10, 20])", "[-100, -40, 30]"),
    # nested lambdas: the inner body reads the outer lambda's variable
    ("array_map(x -> array_map(y -> x * 10 + y, [1, 2]), [1, 2])", "[[11, 12], [21, 22]]"),
    ("array_map(x -> concat(x, '!'), ['a', NULL, ''])", '["a!", null, "!"]'),
    ("array_map(x -> x is null, [1, NULL])", "[0, 1]"),
]


@pytest.mark.parametrize("call,expected", DOC_CASES, ids=[c[0] for c in DOC_CASES])
def test_lambda_function(db_conn, call: str, expected: object) -> None:
    cur = db_conn.cursor()
    cur.execute(f"SELECT {call}")
    assert cur.fetchone()[0] == expected


ERROR_CASES = [
    ("array_map((x, y) -> x + y, [1, 2])",
     "lambda (x, y) -> x + y arguments' size is not equal parameters' size"),
    ("array_map(x -> x, 1)", "lambda argument must be array but is 1"),
    ("array_map((x, y) -> x, [1], [1, 2])",
     ("in array map function, the input column size are not equal completely, nested column "
      "data rows 1st size is 1, 2th size is 2.")),
    ("array_filter(x -> 'a', [1, 2])",
     ("Can not find the compatibility function signature: array_filter(ARRAY<TINYINT>, "
      "ARRAY<VARCHAR(1)>)")),
    ("array_count(x -> [x], [1, 2])",
     "Can not find the compatibility function signature: array_count(ARRAY<ARRAY<TINYINT>>)"),
    ("array_map(x -> sum(x), [1, 2])", "aggregate function is not allowed"),
    # array_match_all / array_match_any arrived in Doris 3.0
    ("array_match_all(x -> x > 1, [1])", "Can not found function 'ARRAY_MATCH_ALL'"),
]


@pytest.mark.parametrize("call,message", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_lambda_errors(db_conn, call: str, message: str) -> None:
    cur = db_conn.cursor()
    with pytest.raises(pymysql.MySQLError) as err:
        cur.execute(f"SELECT {call}")
    assert message in str(err.value)


def _random_rows(seed: int, n: int) -> list[tuple[int, list[int | None] | None, int | None]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.1:
            arr: list[int | None] | None = None
        elif roll < 0.2:
            arr = []
        else:
            arr = [None if rng.random() < 0.15 else rng.randint(-50, 50)
                   for _ in range(rng.randint(1, 8))]
        k = None if rng.random() < 0.1 else rng.randint(-10, 10)
        rows.append((i, arr, k))
    return rows


def _sql_array(a: list[int | None] | None) -> str:
    if a is None:
        return "NULL"
    return "[" + ", ".join("NULL" if x is None else str(x) for x in a) + "]"


def _parse(text: str | None) -> object:
    return None if text is None else json.loads(text)


@pytest.mark.parametrize("seed", [1, 2])
def test_lambdas_match_duckdb_on_random_arrays(db_conn, seed: int) -> None:
    """array_map / array_filter / array_count / array_first_index against DuckDB's
    list_transform / list_filter on random arrays (NULL elements, NULL and empty arrays) with an
    outer column in the body."""
    rows = _random_rows(seed, 80)
    cur = db_conn.cursor()
    table = f"lam_rand_{seed}"
    cur.execute(f"CREATE TABLE {table} (id INT, a ARRAY<INT>, k INT) DUPLICATE KEY(id) "
                "DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ('replication_num'='1')")
    cur.execute(f"INSERT INTO {table} VALUES " + ", ".join(
        f"({i}, {_sql_array(a)}, {'NULL' if k is None else k})" for i, a, k in rows))
    cur.execute("SELECT id, array_map(x -> x * 2 + k, a), array_filter(x -> x > k, a), "
                "array_count(x -> x > k, a), array_first_index(x -> x > k, a), "
                "array_map(x -> x > k, a), array_last(x -> x < k, a) "
                f"FROM {table} ORDER BY id")
    ours = [(r[0], _parse(r[1]), _parse(r[2]), r[3], r[4], _parse(r[5]), r[6])
            for r in cur.fetchall()]

    duck = duckdb.connect()
    try:
        duck.execute("CREATE TABLE t (id INT, a INT[], k INT)")
        duck.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        theirs = duck.execute(
            "SELECT id, list_transform(a, lambda x: x * 2 + k), list_filter(a, lambda x: x > k), "
            "coalesce(len(list_filter(a, lambda x: x > k)), 0), "
            "coalesce(list_position(list_transform(a, lambda x: coalesce(x > k, false)), true),"
            " 0), "
            "list_transform(a, lambda x: (x > k)::INT), "
            "list_filter(a, lambda x: x < k)[-1] "
            "FROM t ORDER BY id").fetchall()
    finally:
        duck.close()
    assert ours == [tuple(r) for r in theirs]


def test_lambdas_over_a_table_with_two_arrays(db_conn) -> None:
    """(x, y) lambdas over stored cells and array_sortby against the Python reference."""
    rows = _random_rows(7, 40)
    rng = random.Random(8)
    keys = [None if a is None or rng.random() < 0.1 else
            [None if rng.random() < 0.2 else rng.randint(0, 5) for _ in a] for _, a, _ in rows]
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE lam_two (id INT, a ARRAY<INT>, b ARRAY<INT>) DUPLICATE KEY(id) "
                "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ('replication_num'='1')")
    cur.execute("INSERT INTO lam_two VALUES " + ", ".join(
        f"({i}, {_sql_array(a)}, {_sql_array(b)})" for (i, a, _), b in zip(rows, keys)))
    cur.execute("SELECT id, array_sortby(a, b), array_map((x, y) -> coalesce(y, 0) - x, a, b) "
                "FROM lam_two WHERE b IS NOT NULL OR a IS NULL ORDER BY id")
    got = {r[0]: (_parse(r[1]), _parse(r[2])) for r in cur.fetchall()}
    for (i, a, _), b in zip(rows, keys):
        if b is None and a is not None:
            continue
        want_sorted = None if a is None else array_sortby(a, b)
        want_map = None if a is None or b is None else [
            None if x is None else (y or 0) - x for x, y in zip(a, b)]
        assert got[i] == (want_sorted, want_map), i


def test_lambdas_in_where_group_by_join_and_nesting(db_conn) -> None:
    """A lambda in WHERE / GROUP BY (the SELECT and GROUP BY copies bind to one expression),
    a body reading the other side of a join, and three nested lambdas reading an outer column."""
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE lam_use (id INT, a ARRAY<INT>, k INT) DUPLICATE KEY(id) "
                "DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ('replication_num'='1')")
    cur.execute("INSERT INTO lam_use VALUES (1, [1, 2, 3, 4, 5], 2), (2, [6, 7, 8], NULL), "
                "(3, [1], 1), (4, NULL, 5), (5, [], 1), (6, [1, NULL, 2], 0)")
    cur.execute("SELECT id FROM lam_use WHERE array_count(x -> x > 1, a) > 2 ORDER BY id")
    assert cur.fetchall() == ((1,), (2,))
    cur.execute("SELECT array_count(x -> x > k, a) c, count(*) FROM lam_use "
                "GROUP BY array_count(x -> x > k, a) ORDER BY c")
    assert cur.fetchall() == ((0, 4), (2, 1), (3, 1))
    cur.execute("SELECT t1.id, array_map(x -> x + t2.k, t1.a) FROM lam_use t1 "
                "JOIN lam_use t2 ON t1.id = t2.id + 1 ORDER BY t1.id")
    assert cur.fetchall() == ((2, "[8, 9, 10]"), (3, "[null]"), (4, None), (5, "[]"),
                              (6, "[2, null, 3]"))
    cur.execute("SELECT array_map(x -> array_map(y -> array_map(z -> x * 100 + y * 10 + z + k,"
                " [1]), [1, 2]), [1, 2]) FROM lam_use WHERE id = 3")
    assert cur.fetchone()[0] == "[[[112], [122]], [[212], [222]]]"


def test_fused_forms_match_the_cell_path(db_conn) -> None:
    """array_count / _first_index / _last_index / array_filter of a lambda read the mapped
    values directly (executor/lambdas.py `compile_fused`); wrapping the map in a no-op
    array_slice(.., 1) forces the path through ARRAY cells and the array forms: same results."""
    rows = _random_rows(21, 120)
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE lam_fused (id INT, a ARRAY<INT>, k INT) DUPLICATE KEY(id) "
                "DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ('replication_num'='1')")
    cur.execute("INSERT INTO lam_fused VALUES " + ", ".join(
        f"({i}, {_sql_array(a)}, {'NULL' if k is None else k})" for i, a, k in rows))
    forms = ["array_count({m})", "array_first_index({m})", "array_last_index({m})",
             "array_filter(a, {m})", "element_at(array_filter(a, {m}), 1)",
             "element_at(array_filter(a, {m}), -1)"]
    mapped = "array_map(x -> x % 3 - k, a)"
    sliced = f"array_slice({mapped}, 1)"
    fused = ", ".join(f.format(m=mapped) for f in forms)
    plain = ", ".join(f.format(m=sliced) for f in forms)
    cur.execute(f"SELECT id, {fused} FROM lam_fused ORDER BY id")
    got = cur.fetchall()
    cur.execute(f"SELECT id, {plain} FROM lam_fused ORDER BY id")
    assert got == cur.fetchall()
    assert len(got) == len(rows)
