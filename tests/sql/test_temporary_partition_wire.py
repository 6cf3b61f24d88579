"""Temporary partitions over the MySQL protocol and Stream Load (issue 15 point 8, Doris 2.1
"Temporary partition"): ADD / DROP TEMPORARY PARTITION, loads into them (INSERT, Stream Load's
`temporary_partitions`), `FROM t TEMPORARY PARTITION (..)`, SHOW TEMPORARY PARTITIONS, REPLACE
PARTITION .. WITH TEMPORARY PARTITION (strict_range, use_temp_partition_name), invisibility to
normal queries, DROP TABLE, restart, and Doris' messages for the error cases."""

from __future__ import annotations

import duckdb
import pymysql
import pytest
from support.rows import normalize_rows
from support.server import ServerProcess
from support.stream_load import curl_load

CREATE = """CREATE TABLE t (k INT, v INT) DUPLICATE KEY(k)
PARTITION BY RANGE(k) (PARTITION p1 VALUES LESS THAN ("10"),
  PARTITION p2 VALUES LESS THAN ("20"), PARTITION p3 VALUES LESS THAN ("30"))
DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ("replication_num" = "1")"""


def _rows(cur, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    cur.execute(sql)
    return sorted(normalize_rows(cur.fetchall()))


def _err(cur, sql: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(pymysql.MySQLError) as e:
        cur.execute(sql)
    return e.value.args[0], e.value.args[1]


def _names(cur, temporary: bool = False) -> list[str]:  # type: ignore[no-untyped-def]
    cur.execute(f"SHOW {'TEMPORARY ' if temporary else ''}PARTITIONS FROM t")
    return sorted(r[1] for r in cur.fetchall())


@pytest.fixture
def cur(db_conn):  # type: ignore[no-untyped-def]
    c = db_conn.cursor()
    c.execute(CREATE)
    c.execute("INSERT INTO t VALUES " + ", ".join(f"({k}, {k})" for k in range(30)))
    return c


def test_temporary_partition_load_query_and_replace(cur, server, db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES [('10'), ('20'))")
    assert _names(cur, True) == ["tp1"] and _names(cur) == ["p1", "p2", "p3"]
    cur.execute("INSERT INTO t TEMPORARY PARTITION (tp1) SELECT k, v * 100 FROM t PARTITION (p2)")
    f = tmp_path / "rows.csv"
    f.write_text("15\t-1\n")
    _, _, body = curl_load(server, db, "t", f, "temporary_partitions:tp1")
    assert body["Status"] == "Success", body
    # invisible to normal queries: the formal rows only
    assert _rows(cur, "SELECT count(*), sum(v) FROM t") == [(30, sum(range(30)))]
    want = sorted(normalize_rows(duckdb.sql(
        "SELECT k, v * 100 FROM range(10, 20) r(k), (SELECT range AS v FROM range(10, 20)) x "
        "WHERE k = v UNION ALL SELECT 15, -1").fetchall()))
    assert _rows(cur, "SELECT k, v FROM t TEMPORARY PARTITION (tp1)") == want
    assert _rows(cur, "SELECT k, v FROM t TEMPORARY PARTITIONS (tp1) WHERE k = 15") == \
        [(15, -1), (15, 1500)]
    # a row outside the temporary ranges is a filtered row (strict: an error)
    _, msg = _err(cur, "INSERT INTO t TEMPORARY PARTITION (tp1) VALUES (25, 1)")
    assert "no partition for this tuple" in msg
    assert _rows(cur, "SELECT k, v FROM t PARTITION (p2)") == [(k, k) for k in range(10, 20)]
    cur.execute("ALTER TABLE t REPLACE PARTITION (p2) WITH TEMPORARY PARTITION (tp1)")
    assert _names(cur) == ["p1", "p2", "p3"] and _names(cur, True) == []
    assert _rows(cur, "SELECT k, v FROM t WHERE k >= 10 AND k < 20") == want
    assert _rows(cur, "SELECT k, v FROM t PARTITION (p2)") == want


def test_replace_properties_and_ranges(cur) -> None:  # type: ignore[no-untyped-def]
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES [('10'), ('15'))")
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp2 VALUES [('15'), ('30'))")
    cur.execute("INSERT INTO t TEMPORARY PARTITION (tp1, tp2) VALUES (12, 0), (25, 0)")
    # strict_range (the default): [10, 30) == [10, 20) + [20, 30); names: counts differ -> tp*
    _, msg = _err(cur, "ALTER TABLE t REPLACE PARTITION (p2) WITH TEMPORARY PARTITION (tp1, tp2)")
    assert "2 range lists are not stricly matched" in msg
    cur.execute("ALTER TABLE t REPLACE PARTITION (p2, p3) WITH TEMPORARY PARTITION (tp1, tp2)")
    # equal counts and use_temp_partition_name false: the formal names stay
    assert _names(cur) == ["p1", "p2", "p3"]
    assert _rows(cur, "SELECT k FROM t WHERE k >= 10") == [(12,), (25,)]
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp9 VALUES [('40'), ('50'))")
    _, msg = _err(cur, "ALTER TABLE t REPLACE PARTITION (p3) WITH TEMPORARY PARTITION (tp9)")
    assert "2 range lists are not stricly matched" in msg
    cur.execute("ALTER TABLE t REPLACE PARTITION (p3) WITH TEMPORARY PARTITION (tp9) "
                "PROPERTIES ('strict_range' = 'false', 'use_temp_partition_name' = 'true')")
    assert _names(cur) == ["p1", "p2", "tp9"]
    cur.execute("INSERT INTO t VALUES (45, 1)")
    assert _rows(cur, "SELECT k FROM t PARTITION (tp9)") == [(45,)]


def test_temporary_partition_errors(cur) -> None:  # type: ignore[no-untyped-def]
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES LESS THAN ('20')")  # overlaps p1
    assert _err(cur, "ALTER TABLE t ADD TEMPORARY PARTITION p1 VALUES [('50'), ('60'))") == \
        (1517, "errCode = 2, detailMessage = Duplicate partition name p1")
    assert _err(cur, "ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES [('50'), ('60'))")[0] == 1517
    _, msg = _err(cur, "ALTER TABLE t ADD TEMPORARY PARTITION tp2 VALUES [('15'), ('25'))")
    assert "is intersected with range" in msg
    assert "Partition[p9] does not exist" in _err(
        cur, "ALTER TABLE t REPLACE PARTITION (p9) WITH TEMPORARY PARTITION (tp1)")[1]
    assert "Temp partition[tp9] does not exist" in _err(
        cur, "ALTER TABLE t REPLACE PARTITION (p1) WITH TEMPORARY PARTITION (tp9)")[1]
    assert "Unknown properties" in _err(
        cur, "ALTER TABLE t REPLACE PARTITION (p1) WITH TEMPORARY PARTITION (tp1) "
             "PROPERTIES ('invalid' = 'invalid')")[1]
    assert "Partition: tp9 is not exists on table t" in _err(
        cur, "SELECT * FROM t TEMPORARY PARTITION (tp9)")[1]
    assert "Partition: tp1 is not exists on table t" in _err(cur, "SELECT * FROM t PARTITION (tp1)")[1]
    assert "partition p1 is not found in table t" in _err(
        cur, "INSERT INTO t TEMPORARY PARTITION (p1) VALUES (1, 1)")[1]
    _, msg = _err(cur, "ALTER TABLE t DROP TEMPORARY PARTITION tp9")
    assert msg.endswith("Error in list of partitions to tp9")
    cur.execute("ALTER TABLE t DROP TEMPORARY PARTITION IF EXISTS tp9")
    cur.execute("ALTER TABLE t DROP TEMPORARY PARTITION tp1")
    assert _names(cur, True) == []
    assert _rows(cur, "SELECT count(*) FROM t") == [(30,)]


def test_stream_load_unknown_temporary_partition(cur, server, db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "rows.csv"
    f.write_text("15\t1\n")
    _, _, body = curl_load(server, db, "t", f, "temporary_partitions:tp1")
    assert body["Status"] == "Fail" and "tp1" in body["Message"], body


def test_rollup_refused_while_temporary_partitions_exist(cur) -> None:  # type: ignore[no-untyped-def]
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES [('10'), ('20'))")
    assert "Can not alter table when there are temp partitions in table" in _err(
        cur, "ALTER TABLE t ADD ROLLUP r1 (k)")[1]
    assert "Can not alter table when there are temp partitions in table" in _err(
        cur, "ALTER TABLE t ADD INDEX i1 (v) USING BITMAP")[1]
    assert "Can not alter table when there are temp partitions in table" in _err(
        cur, "ALTER TABLE t SET (\"bloom_filter_columns\" = \"v\")")[1]
    cur.execute("ALTER TABLE t DROP TEMPORARY PARTITION tp1")
    cur.execute("ALTER TABLE t SET (\"bloom_filter_columns\" = \"v\")")


def test_temporary_partitions_survive_restart_and_go_with_the_table(tmp_path) -> None:
    with ServerProcess(tmp_path / "data", backends=1) as srv:
        with srv.connect() as conn, conn.cursor() as c:
            c.execute("CREATE DATABASE d")
            c.execute("USE d")
            c.execute(CREATE)
            c.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES [('10'), ('20')) "
                      "DISTRIBUTED BY HASH(k) BUCKETS 3")
            c.execute("INSERT INTO t TEMPORARY PARTITION (tp1) VALUES (11, 1), (12, 2)")
        srv.stop()
        srv.start()
        with srv.connect("d") as conn, conn.cursor() as c:
            c.execute("SHOW TEMPORARY PARTITIONS FROM t")
            rows = c.fetchall()
            assert [(r[1], r[8]) for r in rows] == [("tp1", "3")]
            assert _rows(c, "SELECT k, v FROM t TEMPORARY PARTITION (tp1)") == [(11, 1), (12, 2)]
            assert _rows(c, "SELECT count(*) FROM t") == [(0,)]
            c.execute("DROP TABLE t FORCE")
            c.execute(CREATE)
            c.execute("SHOW TEMPORARY PARTITIONS FROM t")
            assert c.fetchall() == ()


def test_dynamic_partition_table_takes_temporary_partitions(db_conn) -> None:  # type: ignore[no-untyped-def]
    """Doris checks dynamic tables for formal ADD / DROP PARTITION only."""
    c = db_conn.cursor()
    c.execute("""CREATE TABLE dyn (d DATE, v INT) DUPLICATE KEY(d)
        PARTITION BY RANGE(d) () DISTRIBUTED BY HASH(d) BUCKETS 1
        PROPERTIES ("replication_num" = "1", "dynamic_partition.enable" = "true",
          "dynamic_partition.time_unit" = "DAY", "dynamic_partition.end" = "1",
          "dynamic_partition.prefix" = "p", "dynamic_partition.buckets" = "1")""")
    assert "Cannot add/drop partition on a Dynamic Partition Table" in _err(
        c, "ALTER TABLE dyn ADD PARTITION x VALUES [('2099-01-01'), ('2099-01-02'))")[1]
    c.execute("ALTER TABLE dyn ADD TEMPORARY PARTITION tx VALUES [('2099-01-01'), ('2099-01-02'))")
    c.execute("INSERT INTO dyn TEMPORARY PARTITION (tx) VALUES ('2099-01-01', 7)")
    assert _rows(c, "SELECT v FROM dyn TEMPORARY PARTITION (tx)") == [(7,)]
    c.execute("ALTER TABLE dyn DROP TEMPORARY PARTITION tx")


def test_mysql_load_into_temporary_partition(cur, server, db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES [('10'), ('20'))")
    f = tmp_path / "rows.csv"
    f.write_text("11,1\n12,2\n25,3\n")
    conn = server.connect(db, local_infile=True)
    try:
        with conn.cursor() as c:
            c.execute(f"LOAD DATA LOCAL INFILE '{f}' INTO TABLE t TEMPORARY PARTITION (tp1) "
                      "COLUMNS TERMINATED BY ',' (k, v) PROPERTIES (\"max_filter_ratio\" = \"0.5\")")
            assert _rows(c, "SELECT k, v FROM t TEMPORARY PARTITION (tp1)") == [(11, 1), (12, 2)]
    finally:
        conn.close()
    assert _rows(cur, "SELECT count(*) FROM t") == [(30,)]


def test_delete_and_overwrite_in_a_temporary_partition(cur) -> None:  # type: ignore[no-untyped-def]
    """DELETE FROM t TEMPORARY PARTITION (tp) WHERE .. (Doris' DeleteFromCommand isTempPart)
    and INSERT OVERWRITE TABLE t TEMPORARY PARTITION (tp): both touch the temporary partition
    only; the formal rows of the same keys stay."""
    cur.execute("ALTER TABLE t ADD TEMPORARY PARTITION tp1 VALUES [('10'), ('20'))")
    cur.execute("INSERT INTO t TEMPORARY PARTITION (tp1) VALUES (11, 1), (12, 2), (13, 3)")
    cur.execute("DELETE FROM t TEMPORARY PARTITION (tp1) WHERE k = 12")
    assert _rows(cur, "SELECT k, v FROM t TEMPORARY PARTITION (tp1)") == [(11, 1), (13, 3)]
    cur.execute("DELETE FROM t TEMPORARY PARTITIONS (tp1) WHERE v >= 3")
    assert _rows(cur, "SELECT k, v FROM t TEMPORARY PARTITION (tp1)") == [(11, 1)]
    assert _rows(cur, "SELECT count(*), sum(v) FROM t") == [(30, sum(range(30)))]
    assert _err(cur, "DELETE FROM t TEMPORARY PARTITION (tp9) WHERE k = 1") == (
        1105, "errCode = 2, detailMessage = Partition [tp9] does not exist in table [t]")
    assert _err(cur, "DELETE FROM t TEMPORARY PARTITION (p1) WHERE k = 1")[0] == 1105
    # overwrite: the temporary partition's rows are replaced, the formal p2 keeps its own
    cur.execute("INSERT OVERWRITE TABLE t TEMPORARY PARTITION (tp1) "
                "SELECT k, v * 10 FROM t PARTITION (p2) WHERE k < 15")
    want = [(k, k * 10) for k in range(10, 15)]
    assert _rows(cur, "SELECT k, v FROM t TEMPORARY PARTITION (tp1)") == want
    cur.execute("INSERT OVERWRITE TABLE t TEMPORARY PARTITION (tp1) VALUES (19, 190)")
    assert _rows(cur, "SELECT k, v FROM t TEMPORARY PARTITION (tp1)") == [(19, 190)]
    assert _rows(cur, "SELECT k, v FROM t PARTITION (p2)") == [(k, k) for k in range(10, 20)]
    # a row outside the named temporary partition fails the whole overwrite: nothing changes
    _, msg = _err(cur, "INSERT OVERWRITE TABLE t TEMPORARY PARTITION (tp1) VALUES (18, 1), (25, 1)")
    assert "no partition for this tuple" in msg or "Insert has filtered data" in msg, msg
    assert _rows(cur, "SELECT k, v FROM t TEMPORARY PARTITION (tp1)") == [(19, 190)]
    cur.execute("ALTER TABLE t REPLACE PARTITION (p2) WITH TEMPORARY PARTITION (tp1)")
    assert _rows(cur, "SELECT k, v FROM t WHERE k >= 10 AND k < 20") == [(19, 190)]
