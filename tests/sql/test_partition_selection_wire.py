"""Partition selection over the MySQL protocol and Stream Load (issue 15 point 8):
`FROM t PARTITION (..)` reads only the named partitions (joins, subqueries, aliases, EXPLAIN),
`INSERT INTO t PARTITION (..)` and Stream Load's `partitions` header take only rows of the named
partitions, `DELETE FROM t PARTITION (..)` deletes only there; Doris' messages for unknown
names. Rows are compared with DuckDB over the same rows."""

from __future__ import annotations

import duckdb
import pymysql
import pytest
from support.duck import insert_rows
from support.rows import normalize_rows
from support.stream_load import curl_load

ROWS = [(k, k * 10, f"s{k % 3}") for k in range(1, 50)]  # k in [1, 50)
# five partitions: p1 [.., 10), p2 [10, 20), p3 [20, 30), p4 [30, 40), p5 [40, 50)
CREATE = """CREATE TABLE {name} (k INT, v INT, s VARCHAR(8)) DUPLICATE KEY(k)
PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN ("10"),
  PARTITION p2 VALUES LESS THAN ("20"), PARTITION p3 VALUES LESS THAN ("30"),
  PARTITION p4 VALUES LESS THAN ("40"), PARTITION p5 VALUES LESS THAN ("50"))
DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ("replication_num" = "1")"""
RANGES = {"p1": (-(2**31), 10), "p2": (10, 20), "p3": (20, 30), "p4": (30, 40), "p5": (40, 50)}


def _where(*parts: str) -> str:
    return " OR ".join(f"(k >= {RANGES[p][0]} AND k < {RANGES[p][1]})" for p in parts)


@pytest.fixture(scope="module")
def sel(server, tmp_path_factory):  # type: ignore[no-untyped-def]
    """One database with table `t` holding ROWS and DuckDB's copy (read-only tests)."""
    name = "psel_shared"
    c = server.connect()
    cur = c.cursor()
    cur.execute(f"DROP DATABASE IF EXISTS {name}")
    cur.execute(f"CREATE DATABASE {name}")
    cur.execute(f"USE {name}")
    cur.execute(CREATE.format(name="t"))
    cur.execute("INSERT INTO t VALUES " + ", ".join(f"({k}, {v}, '{s}')" for k, v, s in ROWS))
    # a temporary partition overlapping p1..p5: every test below also checks it stays unseen
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp VALUES [('0'), ('50'))")
    cur.execute("INSERT INTO t TEMPORARY PARTITION (tp) VALUES (1, -1, 's1'), (15, -1, 's0')")
    cur.execute("""CREATE TABLE agg (k INT, s VARCHAR(8), v BIGINT SUM) AGGREGATE KEY(k, s)
        PARTITION BY RANGE(k) (PARTITION a1 VALUES LESS THAN ("20"),
          PARTITION a2 VALUES LESS THAN ("40"), PARTITION a3 VALUES LESS THAN ("60"))
        DISTRIBUTED BY HASH(k) BUCKETS 2 ROLLUP (by_s (s, v))
        PROPERTIES ("replication_num" = "1")""")
    cur.execute("INSERT INTO agg SELECT k, s, v FROM t")
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (k INT, v INT, s VARCHAR)")
    insert_rows(duck, "t", ROWS)
    try:
        yield cur, duck
    finally:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")
        c.close()


def _same(cur, duck, ours: str, theirs: str) -> None:  # type: ignore[no-untyped-def]
    cur.execute(ours)
    got = normalize_rows(cur.fetchall())
    want = normalize_rows(duck.execute(theirs).fetchall())
    assert sorted(got, key=repr) == sorted(want, key=repr)
    assert got, "the comparison must involve rows"


@pytest.mark.parametrize("clause, parts", [
    ("PARTITION (p1, p3)", ("p1", "p3")),
    ("PARTITIONS (p2, p5)", ("p2", "p5")),
    ("PARTITION p4", ("p4",)),
    ("PARTITION (`P2`)", ("p2",)),
])
def test_select_reads_only_named_partitions(sel, clause, parts) -> None:  # type: ignore[no-untyped-def]
    cur, duck = sel
    _same(cur, duck, f"SELECT k, v, s FROM t {clause}", f"SELECT k, v, s FROM t WHERE {_where(*parts)}")
    _same(cur, duck, f"SELECT count(*), sum(v) FROM t {clause} WHERE s = 's1'",
          f"SELECT count(*), sum(v) FROM t WHERE ({_where(*parts)}) AND s = 's1'")


def test_select_partition_alias_join_subquery(sel) -> None:  # type: ignore[no-untyped-def]
    cur, duck = sel
    _same(cur, duck,
          "SELECT a.k, b.k FROM t PARTITION (p1) a JOIN t PARTITION (p2) AS b ON a.k + 10 = b.k",
          f"SELECT a.k, b.k FROM (SELECT * FROM t WHERE {_where('p1')}) a JOIN "
          f"(SELECT * FROM t WHERE {_where('p2')}) b ON a.k + 10 = b.k")
    _same(cur, duck,
          "SELECT k FROM t WHERE k IN (SELECT k - 20 FROM t PARTITION (p3, p4))",
          f"SELECT k FROM t WHERE k IN (SELECT k - 20 FROM t WHERE {_where('p3', 'p4')})")
    _same(cur, duck,
          "SELECT x.s, count(*) FROM (SELECT * FROM t PARTITION (p5)) x GROUP BY x.s",
          f"SELECT s, count(*) FROM t WHERE {_where('p5')} GROUP BY s")
    # a predicate pruning further inside the chosen partitions
    _same(cur, duck, "SELECT k FROM t PARTITION (p1, p2) WHERE k >= 15",
          "SELECT k FROM t WHERE k >= 15 AND k < 20")


def test_explain_counts_selected_partitions(sel) -> None:  # type: ignore[no-untyped-def]
    cur, _ = sel
    cur.execute("EXPLAIN SELECT * FROM t PARTITION (p1, p3)")
    text = "\n".join(r[0] for r in cur.fetchall())
    assert "partitions=2/5 (p1,p3)" in text, text
    cur.execute("EXPLAIN SELECT * FROM t PARTITION (p1, p3) WHERE k > 25")
    text = "\n".join(r[0] for r in cur.fetchall())
    assert "partitions=1/5 (p3)" in text, text


def test_rollup_serves_a_partition_selection(sel) -> None:  # type: ignore[no-untyped-def]
    cur, duck = sel
    sql = "SELECT s, sum(v) FROM agg PARTITION (a2) GROUP BY s"
    cur.execute("EXPLAIN " + sql)
    text = "\n".join(r[0] for r in cur.fetchall())
    assert "(by_s)" in text and "partitions=1/3 (a2)" in text, text
    _same(cur, duck, sql, "SELECT s, sum(v) FROM t WHERE k >= 20 AND k < 40 GROUP BY s")


def test_explain_temporary_partition_counts_formal_total(sel) -> None:  # type: ignore[no-untyped-def]
    cur, _ = sel
    cur.execute("EXPLAIN SELECT * FROM t TEMPORARY PARTITION (tp)")
    text = "\n".join(r[0] for r in cur.fetchall())
    assert "partitions=1/5 (tp)" in text, text
    cur.execute("SELECT k, v FROM t TEMPORARY PARTITION (tp) ORDER BY k")
    assert cur.fetchall() == ((1, -1), (15, -1))


def test_select_unknown_partition_is_doris_error(sel) -> None:  # type: ignore[no-untyped-def]
    cur, _ = sel
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute("SELECT * FROM t PARTITION (p1, p9)")
    assert e.value.args[0] == 1105
    assert "Partition: p9 is not exists on table t" in e.value.args[1]
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute("SELECT * FROM psel_shared.t PARTITION (p9)")
    assert "Partition: p9 is not exists on table psel_shared.t" in e.value.args[1]


def _table(cur) -> None:  # type: ignore[no-untyped-def]
    cur.execute(CREATE.format(name="w"))


def _ks(cur, sql: str = "SELECT k FROM w ORDER BY k") -> list[int]:  # type: ignore[no-untyped-def]
    cur.execute(sql)
    return [r[0] for r in cur.fetchall()]


def test_insert_into_named_partitions(db_conn) -> None:  # type: ignore[no-untyped-def]
    cur = db_conn.cursor()
    _table(cur)
    cur.execute("INSERT INTO w PARTITION (p1, p2) VALUES (1, 1, 'a'), (15, 2, 'b')")
    assert _ks(cur) == [1, 15]
    # strict (the default): a row of another partition fails the statement, nothing lands
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute("INSERT INTO w PARTITION (p1) VALUES (2, 1, 'a'), (25, 2, 'b')")
    assert "no partition for this tuple" in e.value.args[1]
    assert _ks(cur) == [1, 15]
    # not strict: such rows are filtered rows
    cur.execute("SET enable_insert_strict = false")
    cur.execute("INSERT INTO w PARTITION (p1) VALUES (3, 1, 'a'), (26, 2, 'b')")
    assert _ks(cur) == [1, 3, 15]
    # INSERT .. SELECT; `PARTITION p5` without parentheses
    cur.execute("INSERT INTO w PARTITION (p3, p4) SELECT k + 20, v, s FROM w")
    cur.execute("INSERT INTO w PARTITION p5 SELECT k + 30, v, s FROM w PARTITION (p2)")
    assert _ks(cur) == [1, 3, 15, 21, 23, 35, 45]
    cur.execute("SET enable_insert_strict = true")
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute("INSERT INTO w PARTITION (p1, p9) VALUES (4, 1, 'a')")
    assert "partition p9 is not found in table w" in e.value.args[1]
    with pytest.raises(pymysql.MySQLError):
        cur.execute("INSERT INTO w PARTITION (p2) SELECT k, v, s FROM w PARTITION (p1)")
    assert _ks(cur) == [1, 3, 15, 21, 23, 35, 45]


def test_stream_load_partitions_header(server, db, db_conn, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cur = db_conn.cursor()
    _table(cur)
    f = tmp_path / "rows.csv"
    f.write_text("".join(f"{k},{k},x\n" for k in (5, 12, 33)))
    _, _, body = curl_load(server, db, "w", f, "column_separator:,", "partitions:p1,p2")
    assert body["Status"] == "Fail", body  # 33 is outside p1, p2: a filtered row, ratio 0
    assert _ks(cur) == []
    _, _, body = curl_load(server, db, "w", f, "column_separator:,", "partitions:p1, p2",
                              "max_filter_ratio:0.5")
    assert body["Status"] == "Success" and body["NumberFilteredRows"] == 1, body
    assert _ks(cur) == [5, 12]
    _, _, body = curl_load(server, db, "w", f, "column_separator:,", "partitions:p9")
    assert body["Status"] == "Fail" and "p9" in body["Message"], body


def test_delete_in_named_partitions(db_conn) -> None:  # type: ignore[no-untyped-def]
    cur = db_conn.cursor()
    _table(cur)
    cur.execute("INSERT INTO w VALUES " + ", ".join(f"({k}, {k % 2}, 'a')" for k in range(1, 50)))
    cur.execute("DELETE FROM w PARTITION (p1, p3) WHERE v = 1")
    want = [k for k in range(1, 50) if not (k % 2 == 1 and (k < 10 or 20 <= k < 30))]
    assert _ks(cur) == want
    cur.execute("DELETE FROM w PARTITION p5 WHERE v = 0")
    want = [k for k in want if not (k >= 40 and k % 2 == 0)]
    assert _ks(cur) == want
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute("DELETE FROM w PARTITION (p9) WHERE v = 0")
    assert "p9" in e.value.args[1]


def test_explain_tablet_totals_leave_temporary_partitions_out(sel) -> None:  # type: ignore[no-untyped-def]
    """Doris' `tablets=k/n`: n counts the tablets of the partitions the scan selects (formal
    ones, or the named temporary ones), never another partition's; t has 5 x 2 formal tablets
    and tp 2 more."""
    cur, _ = sel
    for sql, want in (("SELECT * FROM t", "tablets=10/10"),
                      ("SELECT * FROM t TEMPORARY PARTITION (tp)", "tablets=2/2"),
                      ("SELECT * FROM t PARTITION (p1, p3)", "tablets=4/4")):
        cur.execute("EXPLAIN " + sql)
        text = "\n".join(r[0] for r in cur.fetchall())
        assert want in text, (sql, text)


def test_show_tablets_lists_formal_partitions_only(sel) -> None:  # type: ignore[no-untyped-def]
    """SHOW TABLETS FROM t (Doris ShowExecutor: the table's partitions, not its temporary ones)
    and SHOW TABLETS .. PARTITION (p) for a formal partition."""
    cur, _ = sel
    cur.execute("SHOW TABLETS FROM t")
    assert len(cur.fetchall()) == 10
    cur.execute("SHOW TABLETS FROM t PARTITION (p2)")
    assert len(cur.fetchall()) == 2
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute("SHOW TABLETS FROM t PARTITION (tp)")
    assert "Unknown partition: tp" in e.value.args[1]
