"""AUTO PARTITION over the MySQL protocol and Stream Load (issue 15 point 7): loads create
the partitions their rows need, with Doris' names and ranges, atomically with the load;
SHOW CREATE TABLE prints the clause; the DDL checks give Doris' messages."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import threading

import duckdb
import pymysql
import pytest
from support.stream_load import curl_load

RANGE_TABLE = """CREATE TABLE {name} (k DATETIME NOT NULL, v INT) DUPLICATE KEY(k)
AUTO PARTITION BY RANGE (date_trunc(k, '{unit}')) ()
DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ("replication_num" = "1")"""

LIST_TABLE = """CREATE TABLE {name} (city VARCHAR(20) NOT NULL, n INT NOT NULL, v INT)
DUPLICATE KEY(city, n) AUTO PARTITION BY LIST (city, n) ()
DISTRIBUTED BY HASH(city) BUCKETS 1 PROPERTIES ("replication_num" = "1")"""


def _rows(cur, sql: str):  # type: ignore[no-untyped-def]
    cur.execute(sql)
    return cur.fetchall()


def partitions(cur, table: str) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(name, range text) of SHOW PARTITIONS, by name."""
    return sorted((r[1], r[6]) for r in _rows(cur, f"SHOW PARTITIONS FROM {table}"))


def _range(lo: str, hi: str) -> str:
    return f"[types: [DATETIMEV2(0)]; keys: [{lo}]; ..types: [DATETIMEV2(0)]; keys: [{hi}]; )"


def _date_range(lo: str, hi: str) -> str:
    return f"[types: [DATEV2]; keys: [{lo}]; ..types: [DATEV2]; keys: [{hi}]; )"


STAMPS = ["2024-01-31 23:59:59", "2024-02-01 00:00:00", "2024-02-29 12:00:00",
          "2024-05-15 08:30:00", "2023-12-31 10:00:00", "2024-03-31 23:00:00"]


@pytest.mark.parametrize("unit", ["year", "quarter", "month", "week", "day", "hour"])
def test_insert_creates_doris_named_partitions_placed_as_duckdb_truncates(db_conn, unit) -> None:
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="t", unit=unit))
    assert _rows(cur, "SHOW PARTITIONS FROM t") == ()
    values = ", ".join(f"('{s}', {i})" for i, s in enumerate(STAMPS))
    cur.execute(f"INSERT INTO t VALUES {values}")
    duck = duckdb.connect()
    want = {}
    for s in STAMPS:
        lo = duck.execute(f"SELECT date_trunc('{unit}', TIMESTAMP '{s}')").fetchone()[0]
        hi = duck.execute(
            f"SELECT TIMESTAMP '{lo}' + INTERVAL 1 {unit}").fetchone()[0]
        want[f"p{lo:%Y%m%d%H%M%S}"] = _range(f"{lo:%Y-%m-%d %H:%M:%S}", f"{hi:%Y-%m-%d %H:%M:%S}")
    assert partitions(cur, "t") == sorted(want.items())
    # every row sits in the partition of its truncated value, and queries see them all
    for i, s in enumerate(STAMPS):
        lo = duck.execute(f"SELECT date_trunc('{unit}', TIMESTAMP '{s}')").fetchone()[0]
        got = _rows(cur, f"SELECT v FROM t PARTITION (p{lo:%Y%m%d%H%M%S}) WHERE v = {i}")
        assert got == ((i,),)
    assert _rows(cur, "SELECT count(*) FROM t") == ((len(STAMPS),),)
    # a second load reuses the partitions it finds
    cur.execute(f"INSERT INTO t VALUES {values}")
    assert len(partitions(cur, "t")) == len(want)
    assert _rows(cur, "SELECT count(*) FROM t WHERE k >= '2024-02-01'") == ((8,),)


def test_show_create_prints_auto_clause_and_round_trips(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="r", unit="month"))
    cur.execute("INSERT INTO r VALUES ('2024-03-15 10:00:00', 1)")
    ddl = _rows(cur, "SHOW CREATE TABLE r")[0][1]
    assert "AUTO PARTITION BY RANGE (date_trunc(`k`, 'month'))" in ddl
    assert "PARTITION `p20240301000000` VALUES [(\"2024-03-01 00:00:00\"), " \
           "(\"2024-04-01 00:00:00\"))" in ddl
    cur.execute(ddl.replace("CREATE TABLE `r`", "CREATE TABLE `r2`"))
    assert partitions(cur, "r2") == partitions(cur, "r")
    assert _rows(cur, "SHOW CREATE TABLE r2")[0][1] == ddl.replace("`r`", "`r2`")
    cur.execute(LIST_TABLE.format(name="l"))
    ddl = _rows(cur, "SHOW CREATE TABLE l")[0][1]
    assert "AUTO PARTITION BY LIST (`city`, `n`)\n()" in ddl
    cur.execute(ddl.replace("CREATE TABLE `l`", "CREATE TABLE `l2`"))
    assert _rows(cur, "SHOW CREATE TABLE l2")[0][1] == ddl.replace("`l`", "`l2`")


def test_list_creates_one_partition_per_new_value_tuple(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(LIST_TABLE.format(name="l"))
    cur.execute("INSERT INTO l VALUES ('Beijing', 1, 1), ('Beijing', 1, 2), ('Beijing', 22, 3),"
                " ('new york', -5, 4)")
    got = partitions(cur, "l")
    assert [n for n, _ in got] == ["pBeijing711", "pBeijing7222", "pnew20york82d52"]
    assert _rows(cur, "SELECT v FROM l PARTITION (pBeijing711) ORDER BY v") == ((1,), (2,))
    cur.execute("INSERT INTO l VALUES ('Beijing', 1, 5), ('Paris', 1, 6)")
    assert [n for n, _ in partitions(cur, "l")] == [
        "pBeijing711", "pBeijing7222", "pParis511", "pnew20york82d52"]
    assert _rows(cur, "SELECT count(*) FROM l WHERE city = 'Beijing'") == ((4,),)


def test_failed_insert_leaves_no_partition(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="t", unit="day"))
    cur.execute("INSERT INTO t VALUES ('2024-01-01 10:00:00', 1)")
    with pytest.raises(pymysql.err.OperationalError) as err:
        # the second row's v is no INT: strict mode fails the whole load
        cur.execute("SET enable_insert_strict = true")
        cur.execute("INSERT INTO t VALUES ('2024-01-02 10:00:00', 1), "
                    "('2024-01-03 10:00:00', 'abc')")
    assert err.value.args[0] == 1105
    assert [n for n, _ in partitions(cur, "t")] == ["p20240101000000"]
    assert _rows(cur, "SELECT count(*) FROM t") == ((1,),)


def test_stream_load_creates_partitions_and_a_failed_one_none(server, db, db_conn,
                                                              tmp_path) -> None:
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="t", unit="month"))
    good = tmp_path / "good.csv"
    good.write_text("2024-01-05 00:00:00,1\n2024-03-09 10:00:00,2\n2024-03-01 00:00:00,3\n")
    code, _, body = curl_load(server, db, "t", good, "column_separator:,")
    assert code == 200 and body["Status"] == "Success", body
    assert [n for n, _ in partitions(cur, "t")] == ["p20240101000000", "p20240301000000"]
    bad = tmp_path / "bad.csv"
    bad.write_text("2025-06-05 00:00:00,1\n2025-07-01 00:00:00,x\nnot a date,3\n")
    code, _, body = curl_load(server, db, "t", bad, "column_separator:,", "strict_mode:true")
    assert body["Status"] == "Fail", body
    assert [n for n, _ in partitions(cur, "t")] == ["p20240101000000", "p20240301000000"]
    code, _, body = curl_load(server, db, "t", bad, "column_separator:,", "strict_mode:true",
                              "max_filter_ratio:0.1")
    assert body["Status"] == "Fail", body
    assert len(partitions(cur, "t")) == 2
    assert _rows(cur, "SELECT count(*) FROM t") == ((3,),)


def test_concurrent_loads_create_each_partition_once(server, db, db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="t", unit="day"))
    errors: list[BaseException] = []

    def load(i: int) -> None:
        try:
            with server.connect(db) as c, c.cursor() as cu:
                rows = ", ".join(f"('2024-06-{d:02d} 0{i}:00:00', {i})" for d in range(1, 6))
                cu.execute(f"INSERT INTO t VALUES {rows}")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [n for n, _ in partitions(cur, "t")] == [f"p202406{d:02d}000000" for d in range(1, 6)]
    assert _rows(cur, "SELECT count(*), count(DISTINCT v) FROM t") == ((20, 4),)


def test_partition_pruning_on_auto_partitions(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="t", unit="month"))
    cur.execute("INSERT INTO t VALUES ('2024-01-05', 1), ('2024-02-05', 2), ('2024-03-05', 3)")
    plan = "\n".join(r[0] for r in _rows(
        cur, "EXPLAIN SELECT * FROM t WHERE k >= '2024-02-01' AND k < '2024-03-01'"))
    assert "partitions=1/3 (p20240201000000)" in plan
    assert _rows(cur, "SELECT v FROM t WHERE k >= '2024-02-01' AND k < '2024-03-01'") == ((2,),)


@pytest.mark.parametrize(("ddl", "message"), [
    (("CREATE TABLE e (k DATETIME NULL) AUTO PARTITION BY RANGE (date_trunc(k, 'day')) () "
     "DISTRIBUTED BY HASH(k) BUCKETS 1"), "AUTO RANGE PARTITION doesn't support NULL column"),
    (("CREATE TABLE e (k DATETIME NOT NULL) AUTO PARTITION BY RANGE (k) () "
     "DISTRIBUTED BY HASH(k) BUCKETS 1"),
     "auto create partition only support date_trunc function of RANGE partition. k"),
    (("CREATE TABLE e (k DATETIME NOT NULL) AUTO PARTITION BY RANGE (date(k)) () "
     "DISTRIBUTED BY HASH(k) BUCKETS 1"),
     "auto create partition only support function call expr is date_trunc/date_floor/date_ceil."),
    (("CREATE TABLE e (k INT NOT NULL) AUTO PARTITION BY RANGE (date_trunc(k, 'day')) () "
     "DISTRIBUTED BY HASH(k) BUCKETS 1"), "partition expr date_trunc is illegal!"),
    (("CREATE TABLE e (k DATETIME NOT NULL) AUTO PARTITION BY RANGE (date_trunc(k, 'decade')) () "
     "DISTRIBUTED BY HASH(k) BUCKETS 1"), ("date_trunc function second param only support "
     "argument is year|quarter|month|week|day|hour|minute|second")),
    # Doris' regression suite: one argument, three arguments, two columns
    (("CREATE TABLE e (k DATETIME NOT NULL) AUTO PARTITION BY RANGE (date_trunc(k)) () "
     "DISTRIBUTED BY HASH(k) BUCKETS 1"), "partition expr date_trunc is illegal!"),
    (("CREATE TABLE e (k DATETIME NOT NULL) AUTO PARTITION BY RANGE "
      "(date_trunc(k, 'day', 'x')) () DISTRIBUTED BY HASH(k) BUCKETS 1"),
     "partition expr date_trunc is illegal!"),
    (("CREATE TABLE e (k DATETIME NOT NULL, k1 DATETIME NOT NULL) DUPLICATE KEY(k) "
      "AUTO PARTITION BY RANGE (date_trunc(k, k1, 'hour')) () DISTRIBUTED BY HASH(k) BUCKETS 1"),
     "auto create partition only support one slotRef in function expr. k, k1"),
    (("CREATE TABLE e (k INT NOT NULL) AUTO PARTITION BY LIST (abs(k)) () "
     "DISTRIBUTED BY HASH(k) BUCKETS 1"),
     "auto create partition only support slotRef in list partitions."),
    (("CREATE TABLE e (i INT NOT NULL, k DOUBLE NOT NULL) DUPLICATE KEY(i) "
     "AUTO PARTITION BY LIST (k) () DISTRIBUTED BY HASH(i) BUCKETS 1"), "Floating point type column can not be partition column"),
])
def test_ddl_errors(db_conn, ddl, message) -> None:
    cur = db_conn.cursor()
    with pytest.raises(pymysql.err.OperationalError) as err:
        cur.execute(ddl + ' PROPERTIES ("replication_num" = "1")')
    assert err.value.args[0] == 1105
    assert message in err.value.args[1]


def test_list_partition_name_over_fifty_characters_fails_the_load(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE l (s VARCHAR(80) NOT NULL) DUPLICATE KEY(s) "
                "AUTO PARTITION BY LIST (s) () DISTRIBUTED BY HASH(s) BUCKETS 1 "
                'PROPERTIES ("replication_num" = "1")')
    with pytest.raises(pymysql.err.OperationalError) as err:
        cur.execute(f"INSERT INTO l VALUES ('{'x' * 48}'), ('ok')")
    assert "Partition name's length is over limit of 50" in err.value.args[1]
    assert partitions(cur, "l") == []
    cur.execute(f"INSERT INTO l VALUES ('{'x' * 46}'), ('ok')")  # p + 46 x + "46": 49
    assert [n for n, _ in partitions(cur, "l")] == ["pok2", "p" + "x" * 46 + "46"]


def test_ctas_and_insert_overwrite_into_auto_tables(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="src", unit="day"))
    cur.execute("INSERT INTO src VALUES ('2024-01-01 10:00:00', 1), ('2024-01-02 10:00:00', 2)")
    cur.execute("CREATE TABLE c (k DATETIME NOT NULL, v INT) DUPLICATE KEY(k) "
                "AUTO PARTITION BY RANGE (date_trunc(k, 'month')) () "
                'DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("replication_num" = "1") '
                "AS SELECT k, v FROM src")
    assert [n for n, _ in partitions(cur, "c")] == ["p20240101000000"]
    assert _rows(cur, "SELECT count(*) FROM c") == ((2,),)
    cur.execute("INSERT OVERWRITE TABLE src VALUES ('2024-01-02 11:00:00', 3), "
                "('2024-02-09 00:00:00', 4)")
    assert [n for n, _ in partitions(cur, "src")] == [
        "p20240101000000", "p20240102000000", "p20240209000000"]
    assert _rows(cur, "SELECT v FROM src ORDER BY v") == ((3,), (4,))


def test_group_commit_insert_and_stream_load_create_partitions(server, db, db_conn,
                                                               tmp_path) -> None:
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE g (k DATE NOT NULL, v INT) DUPLICATE KEY(k) "
                "AUTO PARTITION BY RANGE (date_trunc(k, 'year')) () "
                "DISTRIBUTED BY HASH(k) BUCKETS 1 "
                "PROPERTIES ('replication_num' = '1', 'group_commit_interval_ms' = '100')")
    cur.execute("SET group_commit = 'sync_mode'")
    cur.execute("INSERT INTO g VALUES ('2021-05-05', 1), ('2022-01-01', 2)")
    cur.execute("SET group_commit = 'off_mode'")
    data = tmp_path / "g.csv"
    data.write_text("2023-12-31,3\n2021-01-01,4\n")
    code, _, body = curl_load(server, db, "g", data, "column_separator:,",
                              "group_commit:sync_mode")
    assert code == 200 and body["Status"] == "Success", body
    assert partitions(cur, "g") == [
        (f"p{y}0101000000", _date_range(f"{y}-01-01", f"{y + 1}-01-01"))
        for y in (2021, 2022, 2023)]
    assert _rows(cur, "SELECT v FROM g ORDER BY v") == ((1,), (2,), (3,), (4,))


def test_two_phase_stream_load_commits_into_new_partitions(server, db, db_conn,
                                                           tmp_path) -> None:
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="t", unit="day"))
    data = tmp_path / "t.csv"
    data.write_text("2024-04-01 01:00:00,1\n2024-04-02 02:00:00,2\n")
    _, _, body = curl_load(server, db, "t", data, "column_separator:,",
                           "two_phase_commit:true", "label:ap2pc")
    assert body["Status"] == "Success", body
    assert _rows(cur, "SELECT count(*) FROM t") == ((0,),)  # nothing visible before commit
    url = f"http://127.0.0.1:{server.http_port}/api/{db}/_stream_load_2pc"
    out = subprocess.run(["curl", "-s", "--location-trusted", "-u", "root:", "-X", "PUT",
                          "-H", f"txn_id:{body['TxnId']}", "-H", "txn_operation:commit", url],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out)["status"] == "Success", out
    assert [n for n, _ in partitions(cur, "t")] == ["p20240401000000", "p20240402000000"]
    assert _rows(cur, "SELECT v FROM t ORDER BY v") == ((1,), (2,))


def test_null_list_value_gets_px_and_out_of_range_day_fails_the_load(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE n (s VARCHAR(10) NULL, v INT) DUPLICATE KEY(s) "
                "AUTO PARTITION BY LIST (s) () DISTRIBUTED BY HASH(v) BUCKETS 1 "
                'PROPERTIES ("replication_num" = "1")')
    cur.execute("INSERT INTO n VALUES ('a', 1), (NULL, 2), (NULL, 3)")
    assert partitions(cur, "n") == [("pX", "[types: [VARCHAR(10)]; keys: [NULL]; ]"),
                                    ("pa1", "[types: [VARCHAR(10)]; keys: [a]; ]")]
    assert _rows(cur, "SELECT v FROM n PARTITION (pX) ORDER BY v") == ((2,), (3,))
    assert _rows(cur, "SELECT v FROM n WHERE s IS NULL ORDER BY v") == ((2,), (3,))
    assert _rows(cur, "SELECT v FROM n WHERE s = 'a'") == ((1,),)
    ddl = _rows(cur, "SHOW CREATE TABLE n")[0][1]
    assert "PARTITION `pX` VALUES IN (NULL)" in ddl
    cur.execute(ddl.replace("CREATE TABLE `n`", "CREATE TABLE `n2`"))
    assert partitions(cur, "n2") == partitions(cur, "n")
    cur.execute("INSERT INTO n2 VALUES (NULL, 4)")  # routed into the re-created pX
    assert _rows(cur, "SELECT v FROM n2 PARTITION (pX)") == ((4,),)
    cur.execute(RANGE_TABLE.format(name="t", unit="year"))
    with pytest.raises(pymysql.err.OperationalError) as err:
        cur.execute("INSERT INTO t VALUES ('2024-01-01 00:00:00', 1), ('9999-06-01 00:00:00', 2)")
    assert "Cannot create an auto partition for 9999-01-01" in err.value.args[1]
    assert partitions(cur, "t") == []
    cur.execute("SELECT 1")  # the connection and the server are fine


def test_load_data_local_infile_creates_partitions_like_duckdb_groups(server, db,
                                                                     tmp_path) -> None:
    data = tmp_path / "ld.csv"
    days = [f"2024-{m:02d}-{d:02d}" for m in (1, 2, 11) for d in (1, 15, 28)]
    data.write_text("".join(f"{day},{i}\n" for i, day in enumerate(days)))
    conn = server.connect(db, local_infile=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (k DATE NOT NULL, v INT) DUPLICATE KEY(k) "
                        "AUTO PARTITION BY RANGE (date_trunc(k, 'week')) () "
                        'DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("replication_num" = "1")')
            assert cur.execute(f"LOAD DATA LOCAL INFILE '{data}' INTO TABLE t "
                               "COLUMNS TERMINATED BY ',' (k, v)") == len(days)
            got = partitions(cur, "t")
            cur.execute("SELECT count(*) FROM t")
            assert cur.fetchone() == (len(days),)
    finally:
        conn.close()
    weeks = duckdb.connect().execute(
        f"SELECT DISTINCT date_trunc('week', CAST(column0 AS DATE)) AS w FROM "
        f"read_csv('{data}', header = false) ORDER BY w").fetchall()
    starts = [w.date() if isinstance(w, dt.datetime) else w for (w,) in weeks]
    assert len(starts) == 9
    assert got == sorted(
        (f"p{w:%Y%m%d}000000", _date_range(w.isoformat(), (w + dt.timedelta(days=7)).isoformat()))
        for w in starts)


def _set_today(cur, when: str) -> None:  # type: ignore[no-untyped-def]
    cur.execute(f'ADMIN SET FRONTEND CONFIG ("current_time_override" = "{when}")')


def test_auto_with_dynamic_end_zero_loads_create_and_the_scheduler_drops(db_conn) -> None:
    """Doris 2.1.7's recipe: dynamic_partition.end = 0 on an AUTO table (refused without
    AUTO): the scheduler creates nothing and only drops partitions before `start`."""
    cur = db_conn.cursor()
    props = ('"dynamic_partition.enable" = "true", "dynamic_partition.prefix" = "p", '
             '"dynamic_partition.start" = "-1", "dynamic_partition.end" = "0", '
             '"dynamic_partition.time_unit" = "year", "replication_num" = "1"')
    with pytest.raises(pymysql.err.OperationalError) as err:
        cur.execute("CREATE TABLE m (k DATETIME NOT NULL) PARTITION BY RANGE (k) () "
                    f"DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ({props})")
    assert "Dynamic partition end must greater than 0" in err.value.args[1]
    _set_today(cur, "2026-06-01 00:00:00")
    try:
        cur.execute("CREATE TABLE d (k DATETIME NOT NULL) "
                    "AUTO PARTITION BY RANGE (date_trunc(k, 'year')) () "
                    f"DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ({props})")
        assert partitions(cur, "d") == []
        cur.execute("INSERT INTO d VALUES ('2020-03-03 00:00:00'), ('2026-02-02 00:00:00')")
        assert [n for n, _ in partitions(cur, "d")] == ["p20200101000000", "p20260101000000"]
        _set_today(cur, "2026-06-02 00:00:00")  # a scheduler pass: 2020 is before start
        assert [n for n, _ in partitions(cur, "d")] == ["p20260101000000"]
    finally:
        _set_today(cur, "")


def test_initial_partitions_route_first_and_an_overlapping_auto_range_fails(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE o (k DATE NOT NULL, v INT) DUPLICATE KEY(k) "
                "AUTO PARTITION BY RANGE (date_trunc(k, 'month')) "
                "(PARTITION early VALUES [('2024-01-01'), ('2024-01-15'))) "
                'DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ("replication_num" = "1")')
    cur.execute("INSERT INTO o VALUES ('2024-01-05', 1), ('2024-03-05', 2)")
    assert [n for n, _ in partitions(cur, "o")] == ["early", "p20240301000000"]
    with pytest.raises(pymysql.err.OperationalError) as err:
        cur.execute("INSERT INTO o VALUES ('2024-04-01', 3), ('2024-01-20', 4)")
    assert ("Range [2024-01-01, 2024-02-01) of the auto partition p20240101000000 is "
            "intersected with partition early") in err.value.args[1]
    assert [n for n, _ in partitions(cur, "o")] == ["early", "p20240301000000"]
    assert _rows(cur, "SELECT v FROM o ORDER BY v") == ((1,), (2,))


def test_group_commit_statement_with_a_bad_value_fails_alone(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE l (s VARCHAR(80) NOT NULL) DUPLICATE KEY(s) "
                "AUTO PARTITION BY LIST (s) () DISTRIBUTED BY HASH(s) BUCKETS 1 "
                "PROPERTIES ('replication_num' = '1', 'group_commit_interval_ms' = '100')")
    cur.execute("SET group_commit = 'sync_mode'")
    try:
        with pytest.raises(pymysql.err.OperationalError) as err:
            cur.execute(f"INSERT INTO l VALUES ('{'x' * 48}')")
        assert "Partition name's length is over limit of 50" in err.value.args[1]
        cur.execute("INSERT INTO l VALUES ('ok')")
    finally:
        cur.execute("SET group_commit = 'off_mode'")
    assert [n for n, _ in partitions(cur, "l")] == ["pok2"]


def test_aborted_two_phase_stream_load_keeps_its_empty_partitions_only(server, db, db_conn,
                                                                       tmp_path) -> None:
    """Doris 2.1 keeps the partitions a failed or cancelled load created (auto partition docs,
    "Key points"); here only a two-phase load has created any before its outcome: after the
    abort its partitions stay, empty, and none of its rows is visible. A failed one-phase load
    leaves no partition (see test_null_list_value_gets_px_and_out_of_range_day_fails_the_load)."""
    cur = db_conn.cursor()
    cur.execute(RANGE_TABLE.format(name="t", unit="day"))
    cur.execute("INSERT INTO t VALUES ('2024-04-01 00:00:00', 0)")
    data = tmp_path / "t.csv"
    data.write_text("2024-04-01 01:00:00,1\n2024-04-03 02:00:00,2\n")
    _, _, body = curl_load(server, db, "t", data, "column_separator:,",
                           "two_phase_commit:true", "label:ap2pc_abort")
    assert body["Status"] == "Success", body
    url = f"http://127.0.0.1:{server.http_port}/api/{db}/_stream_load_2pc"
    out = subprocess.run(["curl", "-s", "--location-trusted", "-u", "root:", "-X", "PUT",
                          "-H", f"txn_id:{body['TxnId']}", "-H", "txn_operation:abort", url],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out)["status"] == "Success", out
    assert [n for n, _ in partitions(cur, "t")] == ["p20240401000000", "p20240403000000"]
    assert _rows(cur, "SELECT v FROM t ORDER BY v") == ((0,),)
    assert _rows(cur, "SELECT count(*) FROM t PARTITION (p20240403000000)") == ((0,),)
    cur.execute("ALTER TABLE t DROP PARTITION p20240403000000")
    assert [n for n, _ in partitions(cur, "t")] == ["p20240401000000"]


def test_list_partition_names_follow_doris_regression_suite(db_conn) -> None:
    """Names from Doris' regression suite test_auto_partition_name (PartitionExprUtil): every
    character other than an ASCII letter or digit becomes the hex of its UTF-16 code point
    (a character past U+FFFF: its code point, then its low surrogate), the value's Java length
    follows, a leading '-' adds '_', NULL is X; multi-column names concatenate."""
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE n1 (s VARCHAR(40) NULL) DUPLICATE KEY(s) "
                "AUTO PARTITION BY LIST (s) () DISTRIBUTED BY HASH(s) BUCKETS 1 "
                'PROPERTIES ("replication_num" = "1")')
    values = ["Beijing", "XXX", "Abc", None, "\u60a8\u597d", "   ", "", "X", "NULL", "a,b,c,",
              "---###___a#b!c!!", "12345", "-9876", "x;y;z", "p|q|r", "accent\u00e9",
              "\U0001f60a\U0001f602\U0001f44d", "!@#$%^&*()"]
    cur.executemany("INSERT INTO n1 VALUES (%s)", [(v,) for v in values])
    assert {n for n, _ in partitions(cur, "n1")} == {
        "pBeijing7", "pXXX3", "pAbc3", "pX", "p60a8597d2", "p2020203", "p0", "pX1", "pNULL4",
        "pa2cb2cc2c6", "p_2d2d2d2323235f5f5fa23b21c212116", "p123455", "p_2d98765",
        "px3by3bz5", "pp7cq7cr5", "paccente97", "p1f60ade0a1f602de021f44ddc4d6",
        "p21402324255e262a282910"}
    assert _rows(cur, "SELECT count(*) FROM n1") == ((len(values),),)
    cur.execute("CREATE TABLE n2 (a VARCHAR(20) NULL, b VARCHAR(20) NULL) DUPLICATE KEY(a) "
                "AUTO PARTITION BY LIST (a, b) () DISTRIBUTED BY HASH(a) BUCKETS 1 "
                'PROPERTIES ("replication_num" = "1")')
    pairs = [("123", "123"), ("1231", "23"), (None, ","), (",", None), ("", ""), (" ", " ")]
    cur.executemany("INSERT INTO n2 VALUES (%s, %s)", pairs)
    assert {n for n, _ in partitions(cur, "n2")} == {
        "p12331233", "p12314232", "pX2c1", "p2c1X", "p00", "p201201"}
