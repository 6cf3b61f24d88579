"""Synchronous materialized views over the wire (real server, pymysql): CREATE / DROP
MATERIALIZED VIEW, SHOW ALTER TABLE MATERIALIZED VIEW, DESC t ALL, CANCEL, Doris' errors, the
query rewrite shown by EXPLAIN, and maintenance: loads, DELETE and compaction after the view
was built give the same results as the base index and DuckDB."""

from __future__ import annotations

import duckdb
import pymysql
import pytest
from support.alter_jobs import wait_alter_job
from support.duck import insert_rows
from support.names import unique_db_name

FORCE_BASE = "SET disable_nereids_rules = 'MATERIALIZED_INDEX_AGG_SCAN'"
VIEWS_ON = "SET disable_nereids_rules = ''"
JOB_COLUMNS = ["JobId", "TableName", "CreateTime", "FinishTime", "BaseIndexName",
               "RollupIndexName", "RollupId", "TransactionId", "State", "Msg", "Progress",
               "Timeout"]
TABLE = """CREATE TABLE t (k1 INT, k2 VARCHAR(8), d INT, v1 INT, v2 DECIMAL(8, 2), v3 BIGINT)
DUPLICATE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 3"""
DUCK_TABLE = ("CREATE TABLE t (k1 INTEGER, k2 VARCHAR, d INTEGER, v1 INTEGER, "
              "v2 DECIMAL(8, 2), v3 BIGINT)")
ROWS1 = [(1, "a", 20240105, 10, "1.50", 7), (1, "a", 20240210, None, "2.50", 8),
         (2, "b", 20230101, 5, None, None), (None, "c", 20230101, 7, "3.00", 1),
         (3, "", 20221231, -4, "-1.25", 2), (2, "b", 20230615, 6, "0.25", 3)]
ROWS2 = [(1, "z", 20250101, 100, "9.50", 4), (4, "ü", 20240101, None, None, None),
         (2, "b", 20230101, 1, "1.00", 9)]


def _rows(cur, sql: str) -> list[tuple]:
    cur.execute(sql)
    return list(cur.fetchall())


def _wait(cur, name: str, timeout: float = 120.0) -> dict:
    job = wait_alter_job(cur, name, "MATERIALIZED VIEW", timeout)
    assert [*job] == JOB_COLUMNS
    return job


def _error(cur, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as ei:
        cur.execute(sql)
    return ei.value.args[0], ei.value.args[1]


def _values(rows: list[tuple]) -> str:
    def lit(v: object) -> str:
        return "NULL" if v is None else f"'{v}'" if isinstance(v, str) else str(v)

    return ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)


def _index_of(cur, sql: str) -> str:
    text = "\n".join(r[0] for r in _rows(cur, "EXPLAIN " + sql))
    marker = "TABLE: "
    line = next(x for x in text.splitlines() if marker in x)
    return line.split("(", 1)[1].split(")", 1)[0]


def _norm(rows) -> list[tuple]:
    out = []
    for r in rows:
        out.append(tuple(None if v is None else str(float(v)) if not isinstance(v, str) else v
                         for v in r))
    return sorted(out, key=repr)


QUERIES = {
    "SELECT k1, SUM(v1), MAX(v2), MIN(v1), COUNT(v1) FROM t GROUP BY k1": "mv_k1",
    "SELECT k1, SUM(v1) FROM t WHERE k1 >= 2 GROUP BY k1": "mv_k1",
    "SELECT SUM(v1), COUNT(v1) FROM t": "mv_k1",
    "SELECT COUNT(v1) FROM t WHERE k1 = 99": "mv_k1",
    "SELECT MAX(k1), MIN(k1), COUNT(DISTINCT k1) FROM t": "mv_k1",
    "SELECT d DIV 10000 AS y, k2, SUM(v1 * 2) FROM t GROUP BY d DIV 10000, k2": "mv_year",
    "SELECT d DIV 10000 AS y, SUM(v1 * 2) FROM t WHERE k2 = 'b' GROUP BY d DIV 10000": "mv_year",
    "SELECT k2, SUM(v1 * 2) FROM t WHERE d DIV 10000 >= 2023 GROUP BY k2": "mv_year",
    "SELECT k1, SUM(v3) FROM t GROUP BY k1 HAVING SUM(v3) > 5": "mv_k1",
}


@pytest.fixture(scope="module")
def mv_db(server):
    name = unique_db_name("mv_statements")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    conn = server.connect(name)
    cur = conn.cursor()
    cur.execute(TABLE)
    cur.execute(f"INSERT INTO t VALUES {_values(ROWS1)}")
    cur.execute("CREATE MATERIALIZED VIEW mv_k1 AS SELECT k1, SUM(v1), MAX(v2), MIN(v1), "
                "COUNT(v1), SUM(v3) FROM t GROUP BY k1")
    assert _wait(cur, "mv_k1")["State"] == "FINISHED"
    cur.execute("CREATE MATERIALIZED VIEW mv_year AS SELECT d DIV 10000, k2, SUM(v1 * 2) "
                "FROM t GROUP BY d DIV 10000, k2")
    assert _wait(cur, "mv_year")["State"] == "FINISHED"
    cur.execute(f"INSERT INTO t VALUES {_values(ROWS2)}")  # written to every index
    yield conn, name
    cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    conn.close()


def _duck(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    d = duckdb.connect()
    d.execute(DUCK_TABLE)
    insert_rows(d, "t", rows)
    return d


def test_desc_all_lists_the_views_columns(mv_db) -> None:
    conn, _ = mv_db
    rows = _rows(conn.cursor(), "DESC t ALL")
    views = {r[2]: r for r in rows if r[2].startswith("mv")}
    assert views["mv_k1"][0] == "mv_k1" and views["mv_k1"][1] == "AGG_KEYS"
    assert views["mv_k1"][6] == "true" and views["mv_k1"][10] == "`k1`"
    total = views["mva_SUM__CAST(`v1` AS bigint)"]
    assert (total[3], total[6], total[8], total[10]) == ("BIGINT", "false", "SUM",
                                                         "CAST(`v1` AS bigint)")
    count = views["mva_SUM__CASE WHEN `v1` IS NULL THEN 0 ELSE 1 END"]
    assert (count[3], count[8]) == ("BIGINT", "SUM")
    assert views["mva_MAX__`v2`"][8] == "MAX"
    assert views["mv_(d DIV 10000)"][10] == "(`d` DIV 10000)"
    assert "mva_SUM__(CAST(`v1` AS bigint) * 2)" in views


@pytest.mark.parametrize("sql", list(QUERIES))
def test_rewrite_equals_base_and_duckdb(mv_db, sql: str) -> None:
    conn, _ = mv_db
    cur = conn.cursor()
    cur.execute(VIEWS_ON)
    assert _index_of(cur, sql) == QUERIES[sql]
    got = _rows(cur, sql)
    cur.execute(FORCE_BASE)
    assert _index_of(cur, sql) == "t"
    base = _rows(cur, sql)
    cur.execute(VIEWS_ON)
    expected = _duck(ROWS1 + ROWS2).execute(sql.replace(" DIV ", " // ")).fetchall()
    assert _norm(got) == _norm(base) == _norm(expected)


def test_queries_the_view_cannot_answer_read_the_base(mv_db) -> None:
    conn, _ = mv_db
    cur = conn.cursor()
    for sql in ("SELECT k1, AVG(v1) FROM t GROUP BY k1",  # no avg column
                "SELECT k1, SUM(v1) FROM t WHERE v1 > 3 GROUP BY k1",  # filter on a value
                "SELECT k2, SUM(v1) FROM t GROUP BY k2",  # k2 is no key of mv_k1
                "SELECT k1, v1 FROM t",  # no aggregate
                "SELECT k1, SUM(v1 + 1) FROM t GROUP BY k1"):  # another expression
        assert _index_of(cur, sql) == "t", sql


def test_delete_and_compaction_keep_the_view_exact(make_db, server) -> None:
    name = make_db("mv_delete")
    conn = server.connect(name)
    cur = conn.cursor()
    cur.execute(TABLE)
    cur.execute(f"INSERT INTO t VALUES {_values(ROWS1)}")
    cur.execute("CREATE MATERIALIZED VIEW mv_k1 AS SELECT k1, k2, SUM(v1), COUNT(v3) FROM t "
                "GROUP BY k1, k2")
    assert _wait(cur, "mv_k1")["State"] == "FINISHED"
    cur.execute(f"INSERT INTO t VALUES {_values(ROWS2)}")
    cur.execute("DELETE FROM t WHERE k1 = 2")
    code, msg = _error(cur, "DELETE FROM t WHERE v1 = 5")  # a value column of the view
    assert code == 1105 and "mv_k1" in msg
    cur.execute(f"INSERT INTO t VALUES {_values(ROWS2[:1])}")
    cur.execute("ADMIN COMPACT TABLE t WHERE type = 'cumulative'")
    rows = [r for r in ROWS1 + ROWS2 if r[0] != 2] + ROWS2[:1]
    sql = "SELECT k1, k2, SUM(v1), COUNT(v3) FROM t GROUP BY k1, k2"
    assert _index_of(cur, sql) == "mv_k1"
    expected = _duck(rows).execute(sql).fetchall()
    assert _norm(_rows(cur, sql)) == _norm(expected)
    conn.close()


def test_errors_in_doris_wording(mv_db) -> None:
    conn, _ = mv_db
    cur = conn.cursor()
    cases = {
        "CREATE MATERIALIZED VIEW mv_k1 AS SELECT k1, SUM(v1) FROM t GROUP BY k1":
            "Materialized view[mv_k1] already exists",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, AVG(v1) FROM t GROUP BY k1":
            "only support sum, min, max and count",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, SUM(nope) FROM t GROUP BY k1":
            "Unknown column 'nope'",
        "CREATE MATERIALIZED VIEW m2 AS SELECT SUM(v1), k1 FROM t GROUP BY k1":
            "The aggregate column should be after the single column",
        "CREATE MATERIALIZED VIEW m2 AS SELECT * FROM t":
            "The materialized view not support select star",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, SUM(v1) FROM t x GROUP BY k1":
            "The materialized view not support table with alias.",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, SUM(v1) FROM t GROUP BY k1 HAVING SUM(v1) > 1":
            "The having clause is not supported",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, k2, SUM(v1) FROM t GROUP BY k1":
            "The select expr `k2` not in grouping or aggregate columns",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, SUM(v1) FROM t GROUP BY k1 ORDER BY k2":
            "The order of columns in order by clause must be same",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, now() FROM t":
            "The materialized view contain now is disallowed",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, k1 FROM t": "Duplicate column name 'mv_k1'",
        "CREATE MATERIALIZED VIEW m2 AS SELECT k1, SUM(v1) FROM nope GROUP BY k1": "nope",
        "DROP MATERIALIZED VIEW nope ON t": "Materialized view [nope] does not exist in table [t]",
        "DROP MATERIALIZED VIEW t ON t": "Materialized view [t] does not exist in table [t]",
    }
    for sql, text in cases.items():
        code, msg = _error(cur, sql)
        assert text in msg, (sql, code, msg)
        if "nope ON" not in sql and "FROM nope" not in sql:
            assert code in (1105, 1054, 1235), (sql, code)
    code, msg = _error(cur, "CANCEL ALTER TABLE MATERIALIZED VIEW FROM t")  # nothing running
    assert code == 1105 and "Table[t] is not under ROLLUP" in msg, msg
    cur.execute("CREATE MATERIALIZED VIEW IF NOT EXISTS mv_k1 AS SELECT k1, SUM(v1) FROM t "
                "GROUP BY k1")  # exists: nothing happens
    cur.execute("DROP MATERIALIZED VIEW IF EXISTS nope ON t")


def test_create_on_aggregate_table_and_drop(make_db, server) -> None:
    name = make_db("mv_agg")
    conn = server.connect(name)
    cur = conn.cursor()
    cur.execute("CREATE TABLE a (k1 INT, k2 INT, s BIGINT SUM, mx INT MAX) AGGREGATE KEY(k1, k2) "
                "DISTRIBUTED BY HASH(k1) BUCKETS 2")
    cur.execute("INSERT INTO a VALUES (1, 1, 5, 3), (1, 2, 6, 9), (2, 1, NULL, 4), (1, 1, 1, 1)")
    code, msg = _error(cur, "CREATE MATERIALIZED VIEW m AS SELECT k1, MAX(s) FROM a GROUP BY k1")
    assert code == 1105, msg
    assert "Aggregate function require same with slot aggregate type, input: SUM, required: MAX" \
        in msg, msg
    code, msg = _error(cur, "CREATE MATERIALIZED VIEW m AS SELECT s, SUM(s) FROM a GROUP BY s")
    assert code == 1105 and "s is a value column" in msg, msg
    cur.execute("CREATE MATERIALIZED VIEW m AS SELECT k1, SUM(s), MAX(mx) FROM a GROUP BY k1")
    assert _wait(cur, "m")["State"] == "FINISHED"
    cur.execute("INSERT INTO a VALUES (2, 7, 10, 20)")
    sql = "SELECT k1, SUM(s), MAX(mx) FROM a GROUP BY k1 ORDER BY k1"
    assert _index_of(cur, sql) == "m"
    assert [tuple(map(str, r)) for r in _rows(cur, sql)] == [("1", "12", "9"),
                                                            ("2", "10", "20")]
    cur.execute(f"DROP MATERIALIZED VIEW m ON {name}.a")
    assert _index_of(cur, sql) == "a"
    assert [r[0] for r in _rows(cur, "DESC a ALL") if r[0]] == ["a"]
    cur.execute("CREATE TABLE u (k INT, v INT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    code, msg = _error(cur, "CREATE MATERIALIZED VIEW mu AS SELECT k, v FROM u")
    assert code == 1235 and "UNIQUE KEY table is not supported" in msg, msg
    conn.close()


def test_filters_the_scanned_partitions_imply_need_no_view_column(make_db, server) -> None:
    """`d >= 202301 AND d < 202501` on yearly partitions p2023, p2024 filters nothing there, so
    a view keyed by `d DIV 100` answers it; `d >= 202302` cuts a partition and needs `d`.
    `d <= 202412` is not implied by p2024's bounds (it may hold 202413..202500): the view
    answers it only while the segment zone maps prove no stored row exceeds 202412, and no
    longer once 202413 is stored."""
    name = make_db("mv_parts")
    conn = server.connect(name)
    cur = conn.cursor()
    cur.execute("""CREATE TABLE p (d INT NOT NULL, k INT, v INT) DUPLICATE KEY(d)
        PARTITION BY RANGE(d) (PARTITION p2022 VALUES [("-2147483648"), ("202301")),
          PARTITION p2023 VALUES [("202301"), ("202401")),
          PARTITION p2024 VALUES [("202401"), ("202501")))
        DISTRIBUTED BY HASH(k) BUCKETS 2""")
    rows = [(202212, 1, 5), (202301, 1, 1), (202305, 2, 2), (202312, 1, 3), (202402, 2, 4),
            (202411, 1, None)]
    cur.execute(f"INSERT INTO p VALUES {_values(rows)}")
    cur.execute("CREATE MATERIALIZED VIEW by_year AS SELECT d DIV 100, k, SUM(v), COUNT(d) "
                "FROM p GROUP BY d DIV 100, k")
    assert _wait(cur, "by_year")["State"] == "FINISHED"
    d = duckdb.connect()
    d.execute("CREATE TABLE p (d INTEGER, k INTEGER, v INTEGER)")
    insert_rows(d, "p", rows)
    implied = ("SELECT d DIV 100 AS y, k, SUM(v) FROM p WHERE d >= 202301 AND d < 202501 "
               "GROUP BY d DIV 100, k")
    cut = "SELECT k, SUM(v) FROM p WHERE d >= 202302 GROUP BY k"
    not_implied = "SELECT k, SUM(v) FROM p WHERE d >= 202301 AND d <= 202412 GROUP BY k"
    # count(*) from the count of NOT NULL d (global: 0 over no rows, not NULL)
    stars = ["SELECT k, COUNT(*) FROM p GROUP BY k", "SELECT COUNT(*) FROM p WHERE k = 99",
             "SELECT COUNT(*), COUNT(d) FROM p"]
    assert _index_of(cur, implied) == "by_year"
    assert _index_of(cur, cut) == "p"
    assert _index_of(cur, not_implied) == "by_year"  # every stored d is <= 202412
    assert [_index_of(cur, q) for q in stars] == ["by_year"] * 3
    for sql in (implied, cut, not_implied, *stars):
        assert _norm(_rows(cur, sql)) == _norm(d.execute(sql.replace(" DIV ", " // ")).fetchall())
    cur.execute("INSERT INTO p VALUES (202413, 1, 7)")
    d.execute("INSERT INTO p VALUES (202413, 1, 7)")
    assert _index_of(cur, not_implied) == "p"
    assert _index_of(cur, implied) == "by_year"  # p2024's bounds still imply `d < 202501`
    for sql in (implied, not_implied):
        assert _norm(_rows(cur, sql)) == _norm(d.execute(sql.replace(" DIV ", " // ")).fetchall())
    # a partition added later gets the view's tablets too; LIKE .. WITH ROLLUP copies no view
    cur.execute('ALTER TABLE p ADD PARTITION p2025 VALUES [("202501"), ("202601"))')
    cur.execute("INSERT INTO p VALUES (202503, 2, 8), (202503, 2, 1)")
    d.execute("INSERT INTO p VALUES (202503, 2, 8), (202503, 2, 1)")
    every = "SELECT d DIV 100 AS y, k, SUM(v) FROM p GROUP BY d DIV 100, k"
    assert _index_of(cur, every) == "by_year"
    assert _norm(_rows(cur, every)) == _norm(d.execute(every.replace(" DIV ", " // ")).fetchall())
    cur.execute("CREATE TABLE p2 LIKE p WITH ROLLUP")
    assert [r[0] for r in _rows(cur, "DESC p2 ALL") if r[0]] == ["p2"]
    conn.close()
