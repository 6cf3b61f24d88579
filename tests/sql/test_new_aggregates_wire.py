"""The Doris 2.1 aggregates of sql/functions/collect.py, pairs.py and percentile.py over the
MySQL protocol: compared with DuckDB's equivalents on the same random rows (NULLs, an all-NULL
group, negative numbers, unicode) in a 3-bucket table loaded by several INSERTs (so the
aggregate merges partial states of several batches and instances), with GROUP BY, without it,
and over empty input; Doris' documented examples where DuckDB has no equivalent."""

from __future__ import annotations

import json
import math
import random

import duckdb
import pymysql
import pytest
from support.duck import insert_rows
from support.names import unique_db_name

N_ROWS = 1500

# (ShaleDB expression, DuckDB expression, how the values compare)
CASES = [
    ("collect_list(v)", "list(v) FILTER (WHERE v IS NOT NULL)", "bag"),
    ("collect_list(s)", "list(s) FILTER (WHERE s IS NOT NULL)", "bag"),
    ("collect_set(v)", "list(DISTINCT v) FILTER (WHERE v IS NOT NULL)", "bag"),
    ("collect_set(s)", "list(DISTINCT s) FILTER (WHERE s IS NOT NULL)", "bag"),
    ("collect_list(DISTINCT v)", "list(DISTINCT v) FILTER (WHERE v IS NOT NULL)", "bag"),
    ("array_agg(v)", "list(v)", "bag"),
    ("count_if(v > 50)", "coalesce(count_if(v > 50), 0)", "exact"),  # Doris: 0
    ("bool_or(v > 90)", "bool_or(v > 90)", "exact"),
    ("bool_and(v > -3)", "bool_and(v > -3)", "exact"),
    ("max_by(s, u)", "arg_max_null(s, u)", "exact"),
    ("min_by(v, u)", "arg_min_null(v, u)", "exact"),
    ("max_by(u, s)", None, "by"),  # ties in s: any u of the largest s
    ("median(v)", "quantile_cont(v, 0.5)", "float"),
    ("percentile(v, 0.3)", "quantile_cont(v, 0.3)", "float"),
    ("percentile(x, 1)", "quantile_cont(x, 1.0)", "float"),
    ("percentile_approx(x, 0.9)", "quantile_cont(x, 0.9)", "float"),
    ("corr(x, v)", "corr(x, v)", "float"),
    ("covar_pop(x, v)", "covar_pop(x, v)", "float"),
    ("covar_samp(u, v)", "covar_samp(u, v)", "float"),
    ("group_bit_or(v)", "bit_or(v)", "exact"),
    ("group_bit_and(v)", "bit_and(v)", "exact"),
    ("group_bit_xor(v)", "bit_xor(v)", "exact"),
    ("multi_distinct_count(v)", "count(DISTINCT v)", "exact"),
    ("multi_distinct_sum(v)", "sum(DISTINCT v)", "exact"),
]

SHAPES = [
    "SELECT g, {f} FROM t GROUP BY g",
    "SELECT {f} FROM t",
    "SELECT {f} FROM t WHERE u < 0",  # empty input: one row
    "SELECT g, {f} FROM t WHERE u < 0 GROUP BY g",  # empty input: no rows
]


def _rows(seed: int) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    us = rng.sample(range(10 * N_ROWS), N_ROWS)  # distinct: MAX_BY ties are unspecified
    rows = []
    for i in range(N_ROWS):
        g = rng.choice(["a", "b", "c", "dd", "nul"])
        v = None if g == "nul" or rng.random() < 0.1 else rng.randint(-5, 100)
        x = None if rng.random() < 0.1 else round(rng.uniform(-1e3, 1e3), 3)
        s = None if rng.random() < 0.1 else rng.choice(["p", "q", "é", "", "zz"])
        rows.append((i, g, v, x, s, us[i]))
    return rows


@pytest.fixture(scope="module")
def tables(server):  # type: ignore[no-untyped-def]
    rows = _rows(11)
    db = unique_db_name("new_aggs")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{db}`")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT, g VARCHAR(8), v INT, x DOUBLE, s VARCHAR(4), u INT) "
                    "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3 "
                    "PROPERTIES ('replication_num' = '1')")
        for i in range(0, N_ROWS, 500):
            values = ", ".join(
                "(" + ", ".join("NULL" if x is None else repr(x) for x in r) + ")"
                for r in rows[i:i + 500])
            cur.execute(f"INSERT INTO t VALUES {values}")
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (id INTEGER, g VARCHAR, v INTEGER, x DOUBLE, s VARCHAR, "
                 "u INTEGER)")
    insert_rows(duck, "t", rows)
    yield db, duck, rows
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{db}`")


def _bag(value: object) -> list[object]:
    """An ARRAY value (Doris text over the wire, a list from DuckDB) as a sorted list; a NULL
    array from DuckDB (no non-NULL input) is Doris' []."""
    if value is None:
        return []
    items = json.loads(value) if isinstance(value, str) else list(value)  # type: ignore[arg-type]
    return sorted(items, key=lambda x: (x is None, str(type(x)), x if x is not None else 0))


def _same(kind: str, got: object, want: object) -> bool:
    if kind == "bag":
        return _bag(got) == _bag(want)
    if kind == "float":
        if got is None or want is None:
            return got is None and want is None
        return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-9)  # type: ignore[arg-type]
    if isinstance(want, bool):
        want = int(want)
    return got == want


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("case", [c for c in CASES if c[1] is not None], ids=lambda c: c[0])
def test_same_as_duckdb(server, tables, case, shape: str) -> None:  # type: ignore[no-untyped-def]
    db, duck, _ = tables
    ours, theirs, kind = case
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(shape.format(f=ours))
        got = {r[:-1]: r[-1] for r in cur.fetchall()}
    want = {r[:-1]: r[-1] for r in duck.execute(shape.format(f=theirs)).fetchall()}
    assert got.keys() == want.keys()
    bad = {k: (got[k], want[k]) for k in want if not _same(kind, got[k], want[k])}
    assert not bad, bad


def test_max_by_with_ties(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _, rows = tables
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("SELECT g, max_by(u, s), min_by(u, s) FROM t GROUP BY g")
        got = {g: (hi, lo) for g, hi, lo in cur.fetchall()}
    for g, (hi, lo) in got.items():
        texts = [r[4] for r in rows if r[1] == g and r[4] is not None]
        assert hi in {r[5] for r in rows if r[1] == g and r[4] == max(texts)}
        assert lo in {r[5] for r in rows if r[1] == g and r[4] == min(texts)}


def test_all_null_group_and_empty_input(server, tables) -> None:  # type: ignore[no-untyped-def]
    db, _, _ = tables
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("SELECT collect_list(v), collect_set(v), count_if(v > 0), bool_or(v > 0), "
                    "max_by(v, v), median(v), corr(v, v), group_bit_xor(v), "
                    "multi_distinct_count(v), multi_distinct_sum(v), topn(v, 2) "
                    "FROM t WHERE g = 'nul'")
        assert list(cur.fetchall()) == [
            ("[]", "[]", 0, None, None, None, None, None, 0, None, None)]
        cur.execute("SELECT array_agg(v) FROM t WHERE g = 'nul' AND id < 40")
        (text,), = cur.fetchall()
        assert set(json.loads(text)) <= {None}


def test_doris_documented_examples(server, make_db) -> None:  # type: ignore[no-untyped-def]
    db = make_db("agg_docs")
    with server.connect(db) as c, c.cursor() as cur:
        # TOPN: the Doris docs' page_visits example (its tie for third place left out)
        cur.execute("CREATE TABLE page_visits (page_id INT, user_id INT, visit_date DATE) "
                    "DISTRIBUTED BY HASH(page_id) BUCKETS 3 PROPERTIES ('replication_num' = '1')")
        cur.execute("INSERT INTO page_visits VALUES (1, 101, '2024-01-01'), (2, 102, '2024-01-01'),"
                    " (1, 103, '2024-01-01'), (3, 101, '2024-01-01'), (1, 104, '2024-01-01'),"
                    " (2, 105, '2024-01-01'), (1, 106, '2024-01-01'), (4, 107, '2024-01-01')")
        cur.execute("SELECT topn(page_id, 2) FROM page_visits")
        assert list(cur.fetchall()) == [('{"1":4,"2":2}',)]
        # ARRAY_AGG keeps NULLs, COLLECT_LIST drops them (Doris docs' test_doris_array_agg)
        cur.execute("CREATE TABLE a (c1 INT, c2 VARCHAR(4)) DISTRIBUTED BY HASH(c1) BUCKETS 3 "
                    "PROPERTIES ('replication_num' = '1')")
        cur.execute("INSERT INTO a VALUES (1, 'a'), (1, 'b'), (2, 'c'), (2, NULL), (3, NULL)")
        cur.execute("SELECT c1, array_agg(c2), collect_list(c2), collect_list(c2, 1) FROM a "
                    "GROUP BY c1 ORDER BY c1")
        got = [(k, _bag(x), _bag(y), len(json.loads(z))) for k, x, y, z in cur.fetchall()]
        assert got == [(1, ["a", "b"], ["a", "b"], 1), (2, ["c", None], ["c"], 1),
                       (3, [None], [], 0)]
        # CORR of a constant column is 0 in Doris (DuckDB: NaN); percentile interpolates
        cur.execute("SELECT corr(c1, 5), percentile(c1, 0.5), percentile(c1, 0.25), "
                    "percentile_approx(c1, 0.5), percentile_array(c1, [0.0, 1.0]) FROM a")
        assert list(cur.fetchall()) == [(0.0, 2.0, 1.0, 2.0, "[1, 3]")]


@pytest.mark.parametrize("sql", [
    "SELECT percentile(v, 1.5) FROM t",
    "SELECT percentile(v, v) FROM t",
    "SELECT group_bit_or(x) FROM t",
    "SELECT max_by(v) FROM t",
])
def test_errors(server, tables, sql: str) -> None:  # type: ignore[no-untyped-def]
    db, _, _ = tables
    with server.connect(db) as c, c.cursor() as cur, pytest.raises(pymysql.MySQLError):
        cur.execute(sql)


def test_retention_doris_example(server, make_db) -> None:  # type: ignore[no-untyped-def]
    """Doris docs' retention_test example (3 buckets: the conditions of one uid meet in the
    merge), plus an empty input."""
    db = make_db("agg_retention")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE retention_test (uid INT, `date` DATETIME) DUPLICATE KEY(uid) "
                    "DISTRIBUTED BY HASH(uid) BUCKETS 3 PROPERTIES ('replication_num' = '1')")
        cur.execute("INSERT INTO retention_test VALUES (0, '2022-10-12'), (0, '2022-10-13'), "
                    "(0, '2022-10-14'), (1, '2022-10-12'), (1, '2022-10-13'), (2, '2022-10-12')")
        cur.execute("INSERT INTO retention_test VALUES (3, '2022-10-13'), (3, NULL)")
        cur.execute("SELECT uid, RETENTION(`date` = '2022-10-12') AS r, "
                    "RETENTION(`date` = '2022-10-12', `date` = '2022-10-13') AS r2, "
                    "RETENTION(`date` = '2022-10-12', `date` = '2022-10-13', "
                    "`date` = '2022-10-14') AS r3 FROM retention_test GROUP BY uid ORDER BY uid")
        assert list(cur.fetchall()) == [
            (0, "[1]", "[1, 1]", "[1, 1, 1]"), (1, "[1]", "[1, 1]", "[1, 1, 0]"),
            (2, "[1]", "[1, 0]", "[1, 0, 0]"), (3, "[0]", "[0, 0]", "[0, 0, 0]")]
        cur.execute("SELECT RETENTION(`date` = '2022-10-12', `date` = '2022-10-13') "
                    "FROM retention_test WHERE uid < 0")
        assert list(cur.fetchall()) == [("[0, 0]",)]
