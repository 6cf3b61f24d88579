"""Dynamic partitions over the MySQL protocol (issue 15): seed 001's examples with "today"
pinned by `ADMIN SET FRONTEND CONFIG ("current_time_override" = ..)` (always released in a
finally: the test server is shared), SHOW DYNAMIC PARTITION TABLES, failures that are not
silent (State/LastCreatePartitionMsg, SHOW WARNINGS, /metrics), conversions between dynamic and
manual tables, the FE switch, validation messages in Doris' order, and load errors that name
the nearest partitions."""

from __future__ import annotations

from contextlib import contextmanager

import pymysql
import pytest
from support.http import scrape_metrics

DAY_TABLE = """CREATE TABLE {name} (k1 {type}, v INT) DUPLICATE KEY(k1)
PARTITION BY RANGE(k1) () DISTRIBUTED BY HASH(k1) BUCKETS 2
PROPERTIES ("replication_num" = "1", {props})"""


def _props(**kw: object) -> str:
    return ", ".join(f'"dynamic_partition.{k}" = "{v}"' for k, v in kw.items())


def _rows(cur, sql: str):  # type: ignore[no-untyped-def]
    cur.execute(sql)
    return cur.fetchall()


def _set_today(cur, when: str) -> None:  # type: ignore[no-untyped-def]
    cur.execute(f'ADMIN SET FRONTEND CONFIG ("current_time_override" = "{when}")')


@contextmanager
def today(cur, when: str):  # type: ignore[no-untyped-def]
    _set_today(cur, when)
    try:
        yield
    finally:
        _set_today(cur, "")


def partitions(cur, table: str) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(name, range text) of SHOW PARTITIONS, by name."""
    return sorted((r[1], r[6]) for r in _rows(cur, f"SHOW PARTITIONS FROM {table}"))


def names(cur, table: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [n for n, _ in partitions(cur, table)]


def dyn_row(cur, table: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    cur.execute("SHOW DYNAMIC PARTITION TABLES")
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    return next(r for r in rows if r["TableName"] == table)


def _date_range(lo: str, hi: str, kind: str = "DATEV2") -> str:
    return f"[types: [{kind}]; keys: [{lo}]; ..types: [{kind}]; keys: [{hi}]; )"


def test_seed_day_example_creates_then_rolls_and_drops(db_conn) -> None:
    cur = db_conn.cursor()
    with today(cur, "2020-05-29 09:30:00"):
        cur.execute(DAY_TABLE.format(name="tbl1", type="DATE", props=_props(
            enable="true", time_unit="DAY", start=-7, end=3, prefix="p", buckets=32)))
        assert partitions(cur, "tbl1") == [
            ("p20200529", _date_range("2020-05-29", "2020-05-30")),
            ("p20200530", _date_range("2020-05-30", "2020-05-31")),
            ("p20200531", _date_range("2020-05-31", "2020-06-01")),
            ("p20200601", _date_range("2020-06-01", "2020-06-02"))]
        assert {r[8] for r in _rows(cur, "SHOW PARTITIONS FROM tbl1")} == {"32"}  # buckets
        cur.execute("INSERT INTO tbl1 VALUES ('2020-05-30', 1), ('2020-06-01', 2)")
        _set_today(cur, "2020-05-30 00:00:01")  # the next day: p20200602 appears at once
        assert names(cur, "tbl1")[-1] == "p20200602"
        _set_today(cur, "2020-06-06 12:00:00")  # 7 days back is 2020-05-30: p20200529 goes
        got = names(cur, "tbl1")
        assert got[0] == "p20200530" and "p20200529" not in got and got[-1] == "p20200609"
        assert _rows(cur, "SELECT v FROM tbl1 ORDER BY v") == ((1,), (2,))  # data kept


def test_seed_week_example_on_datetime(db_conn) -> None:
    cur = db_conn.cursor()
    with today(cur, "2020-05-29 00:00:00"):
        for name, dow in (("w1", 1), ("w3", 3)):
            cur.execute(DAY_TABLE.format(name=name, type="DATETIME", props=_props(
                time_unit="WEEK", start=-2, end=2, prefix="p", buckets=8,
                start_day_of_week=dow)))
        dt = "DATETIMEV2(0)"
        assert partitions(cur, "w1") == [
            ("p2020_22", _date_range("2020-05-25 00:00:00", "2020-06-01 00:00:00", dt)),
            ("p2020_23", _date_range("2020-06-01 00:00:00", "2020-06-08 00:00:00", dt)),
            ("p2020_24", _date_range("2020-06-08 00:00:00", "2020-06-15 00:00:00", dt))]
        assert partitions(cur, "w3")[0] == (
            "p2020_22", _date_range("2020-05-27 00:00:00", "2020-06-03 00:00:00", dt))
        _set_today(cur, "2020-06-15 08:00:00")  # week 25: two weeks back is week 23
        assert names(cur, "w1") == ["p2020_23", "p2020_24", "p2020_25", "p2020_26",
                                    "p2020_27"]


def test_seed_month_examples_and_integer_column(db_conn) -> None:
    cur = db_conn.cursor()
    with today(cur, "2020-05-29 00:00:00"):
        cur.execute(DAY_TABLE.format(name="m3", type="DATE", props=_props(
            enable="true", time_unit="MONTH", end=2, prefix="p", buckets=8,
            start_day_of_month=3)))
        assert partitions(cur, "m3") == [
            ("p202005", _date_range("2020-05-03", "2020-06-03")),
            ("p202006", _date_range("2020-06-03", "2020-07-03")),
            ("p202007", _date_range("2020-07-03", "2020-08-03"))]
        cur.execute(DAY_TABLE.format(name="mi", type="INT", props=_props(
            time_unit="DAY", end=1, prefix="d")))
        assert partitions(cur, "mi") == [
            ("d20200529", "[types: [INT]; keys: [20200529]; ..types: [INT]; keys: [20200530]; )"),
            ("d20200530", "[types: [INT]; keys: [20200530]; ..types: [INT]; keys: [20200531]; )")]
    with today(cur, "2020-05-20 00:00:00"):
        cur.execute(DAY_TABLE.format(name="m28", type="DATE", props=_props(
            time_unit="MONTH", end=2, prefix="p", start_day_of_month=28)))
        assert [n for n, _ in partitions(cur, "m28")] == ["p202004", "p202005", "p202006"]
        assert partitions(cur, "m28")[0][1] == _date_range("2020-04-28", "2020-05-28")


@pytest.mark.parametrize("num, first", [(1, "p20210519"), (5, "p20210517"), (-1, "p20210517")])
def test_seed_history_partitions(db_conn, num, first) -> None:
    cur = db_conn.cursor()
    with today(cur, "2021-05-20 10:00:00"):
        cur.execute(DAY_TABLE.format(name="h", type="DATE", props=_props(
            time_unit="DAY", start=-3, end=3, prefix="p", create_history_partition="true",
            history_partition_num=num)))
        got = names(cur, "h")
        assert got[0] == first and got[-1] == "p20210523" and len(got) == 24 - int(first[-2:])


def test_show_dynamic_partition_tables_columns_and_values(db_conn, db) -> None:
    cur = db_conn.cursor()
    with today(cur, "2020-05-25 14:29:24"):
        cur.execute(DAY_TABLE.format(name="d3", type="DATE", props=_props(
            time_unit="WEEK", start=-3, end=3, prefix="p", buckets=1,
            reserved_history_periods="[2021-12-01,2021-12-31],[2020-06-01,2020-06-20]")))
        cur.execute(DAY_TABLE.format(name="d7", type="DATE", props=_props(
            time_unit="MONTH", end=5, prefix="p", buckets=8, start_day_of_month=24)))
        cur.execute(DAY_TABLE.format(name="d5", type="DATE", props=_props(
            enable="false", time_unit="DAY", start=-7, end=3, prefix="p")))
        cur.execute("SHOW DYNAMIC PARTITION TABLES")
        assert [d[0] for d in cur.description] == [
            "TableName", "Enable", "TimeUnit", "Start", "End", "Prefix", "Buckets",
            "ReplicationNum", "ReplicaAllocation", "StartOf", "LastUpdateTime",
            "LastSchedulerTime", "State", "LastCreatePartitionMsg", "LastDropPartitionMsg",
            "ReservedHistoryPeriods"]
        rows = {r[0]: r for r in cur.fetchall()}
        assert rows["d3"] == ("d3", "true", "WEEK", "-3", "3", "p", "1", "1",
                              "tag.location.default: 1", "MONDAY", "N/A",
                              "2020-05-25 14:29:24", "NORMAL", "N/A", "N/A",
                              "[2020-06-01,2020-06-20],[2021-12-01,2021-12-31]")
        assert rows["d7"][3] == "-2147483648" and rows["d7"][9] == "24th"
        assert rows["d7"][15] == "NULL"
        # disabled: listed, never scheduled, no partitions; buckets default to the table's
        assert rows["d5"][1:3] == ("false", "DAY") and rows["d5"][6] == "2"
        assert rows["d5"][11] == "N/A" and names(cur, "d5") == []
        # ALTER of a dynamic property stamps LastUpdateTime
        _set_today(cur, "2020-05-26 08:00:00")
        cur.execute('ALTER TABLE d7 SET ("dynamic_partition.end" = "6")')
        row = dyn_row(cur, "d7")
        assert (row["End"], row["LastUpdateTime"], row["LastSchedulerTime"]) == (
            "6", "2020-05-26 08:00:00", "2020-05-26 08:00:00")
        assert _rows(cur, f"SHOW DYNAMIC PARTITION TABLES FROM {db}") == _rows(
            cur, "SHOW DYNAMIC PARTITION TABLES")


def test_overlap_failure_is_state_warning_log_and_metric(server, db_conn) -> None:
    """Issue 15 point 6: a creation a manual partition blocks sets State=ERROR and
    LastCreatePartitionMsg (Doris), and is also a warning on the triggering statement and a
    /metrics counter."""
    cur = db_conn.cursor()
    before = scrape_metrics(server.http_port).get(
        'shaledb_dynamic_partition_failures_total{op="create"}', 0.0)
    with today(cur, "2020-06-06 10:00:00"):
        cur.execute(DAY_TABLE.format(name="t", type="DATE", props=_props(
            enable="false", time_unit="DAY", start=-3, end=3, prefix="p")))
        cur.execute('ALTER TABLE t ADD PARTITION manual VALUES [("2020-06-08"), ("2020-06-20"))')
        warnings = cur.execute('ALTER TABLE t SET ("dynamic_partition.enable" = "true")')
        assert warnings == 0  # affected rows; the warning count is in the OK packet
        assert db_conn._result.warning_count == 2  # 2020-06-08 and 2020-06-09 are blocked
        shown = _rows(cur, "SHOW WARNINGS")
        assert [w[0] for w in shown] == ["Warning", "Warning"]
        expected = ("Range " + _date_range("2020-06-08", "2020-06-09") + " is intersected with "
                    "range: " + _date_range("2020-06-08", "2020-06-20"))
        assert expected in shown[0][2] and "add partition failed" in shown[0][2]
        assert names(cur, "t") == ["manual", "p20200606", "p20200607"]
        row = dyn_row(cur, "t")
        assert row["State"] == "ERROR"
        assert row["LastCreatePartitionMsg"] == (
            "Range " + _date_range("2020-06-09", "2020-06-10") + " is intersected with range: "
            + _date_range("2020-06-08", "2020-06-20"))
        after = scrape_metrics(server.http_port)
        assert after['shaledb_dynamic_partition_failures_total{op="create"}'] == before + 2
        assert after["shaledb_dynamic_partition_created_total"] >= 2
        # SHOW WARNINGS describes the last statement only
        _rows(cur, "SELECT 1")
        assert _rows(cur, "SHOW WARNINGS") == ()
        # once the blocking partition is gone the next run clears the state
        cur.execute('ALTER TABLE t SET ("dynamic_partition.enable" = "false")')
        cur.execute("ALTER TABLE t DROP PARTITION manual")
        cur.execute('ALTER TABLE t SET ("dynamic_partition.enable" = "true")')
        assert db_conn._result.warning_count == 0
        assert dyn_row(cur, "t")["State"] == "NORMAL"
        assert names(cur, "t")[-1] == "p20200609"
    assert any("dynamic add partition failed" in line for line in server.take_stderr())


def test_manual_partitions_rejected_while_enabled_and_conversions(db_conn) -> None:
    cur = db_conn.cursor()
    with today(cur, "2024-03-15 00:00:00"):
        cur.execute("CREATE TABLE r (k1 DATE, v INT) DUPLICATE KEY(k1) PARTITION BY RANGE(k1) "
                    '(PARTITION p_old VALUES [("2024-01-01"), ("2024-02-01"))) '
                    'DISTRIBUTED BY HASH(k1) BUCKETS 1 PROPERTIES ("replication_num" = "1")')
        # a manual RANGE table becomes dynamic: validated with the same messages ...
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute('ALTER TABLE r SET ("dynamic_partition.time_unit" = "DAY")')
        assert "Must assign dynamic_partition.prefix properties" in info.value.args[1]
        cur.execute("ALTER TABLE r SET (" + _props(time_unit="DAY", start=-30, end=1,
                                                  prefix="p") + ")")
        # ... and scheduled at once: p_old ends before 2024-02-14 and is dropped
        assert names(cur, "r") == ["p20240315", "p20240316"]
        message = ("Cannot add/drop partition on a Dynamic Partition Table, Use command `ALTER "
                   'TABLE r SET ("dynamic_partition.enable" = "false")` firstly.')
        for stmt in ('ALTER TABLE r ADD PARTITION x VALUES [("2025-01-01"), ("2025-01-02"))',
                     "ALTER TABLE r DROP PARTITION p20240315"):
            with pytest.raises(pymysql.err.OperationalError) as info:
                cur.execute(stmt)
            assert info.value.args == (1105, f"errCode = 2, detailMessage = {message}")
        cur.execute('ALTER TABLE r SET ("dynamic_partition.enable" = "false")')
        cur.execute('ALTER TABLE r ADD PARTITION x VALUES [("2025-01-01"), ("2025-01-02"))')
        cur.execute("ALTER TABLE r DROP PARTITION p20240315")
        _set_today(cur, "2024-03-20 00:00:00")  # disabled: nothing created or dropped
        assert names(cur, "r") == ["p20240316", "x"]


def test_fe_switch_and_reserved_history_periods(db_conn) -> None:
    cur = db_conn.cursor()
    try:
        with today(cur, "2021-09-06 00:00:00"):
            cur.execute(DAY_TABLE.format(name="keep", type="DATE", props=_props(
                time_unit="DAY", start=-3, end=1, prefix="p", create_history_partition="true",
                reserved_history_periods="[2021-09-03,2021-09-04]")))
            assert names(cur, "keep") == ["p20210903", "p20210904", "p20210905", "p20210906",
                                          "p20210907"]
            cur.execute('ADMIN SET FRONTEND CONFIG ("dynamic_partition_enable" = "false")')
            _set_today(cur, "2021-09-10 00:00:00")
            assert names(cur, "keep")[-1] == "p20210907"  # switched off: nothing happens
            cur.execute('ADMIN SET FRONTEND CONFIG ("dynamic_partition_enable" = "true")')
            # on again: runs at once; 09-05 is dropped, the reserved 09-03 / 09-04 stay
            assert names(cur, "keep") == ["p20210903", "p20210904", "p20210907", "p20210908",
                                          "p20210909", "p20210910", "p20210911"]
    finally:
        cur.execute('ADMIN SET FRONTEND CONFIG ("dynamic_partition_enable" = "true")')


def test_load_outside_every_partition_names_the_nearest(db_conn) -> None:
    cur = db_conn.cursor()
    with today(cur, "2023-12-30 00:00:00"):
        cur.execute(DAY_TABLE.format(name="ny", type="DATE", props=_props(
            time_unit="DAY", end=1, prefix="p")))
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute("INSERT INTO ny VALUES ('2024-01-01', 1)")
    text = info.value.args[1]
    assert "no partition for this tuple (k1=" in text and "2024-01-01" in text
    assert "nearest partitions: p20231231 [2023-12-31, 2024-01-01) below" in text


BAD_PROPERTIES = [
    (_props(time_unit="DAY", prefix="p"), "Must assign dynamic_partition.end properties"),
    (_props(prefix="p", end=3, enable="maybe"),
     "Must assign dynamic_partition.time_unit properties"),
    (_props(time_unit="MINUTE", prefix="p", end=3),
     "Unsupported time unit MINUTE. Expect HOUR/DAY/WEEK/MONTH/YEAR."),
    (_props(time_unit="DAY", prefix="1p", end=3, buckets=0),
     "Invalid dynamic partition prefix: 1p."),
    (_props(time_unit="DAY", prefix="p", end=3, buckets=0, enable="maybe"),
     "Dynamic partition buckets must greater than 0"),
    (_props(time_unit="DAY", prefix="p", end=3, enable="maybe", start=1),
     "Invalid dynamic partition enable: maybe. Expected true or false"),
    (_props(time_unit="DAY", prefix="p", end=3, start="x"), "Invalid dynamic partition start x"),
    (_props(time_unit="DAY", prefix="p", end=0, start=0),
     "Dynamic partition start must less than 0"),
    (_props(time_unit="DAY", prefix="p", end=-1), "Dynamic partition end must greater than 0"),
    (_props(time_unit="DAY", prefix="p", end=3, create_history_partition="yes"),
     "Invalid dynamic partition create_history_partition: yes. Expected true or false"),
    (_props(time_unit="DAY", prefix="p", end=3, create_history_partition="true"),
     ("Provide start or history_partition_num property when create_history_partition=true. "
     "Otherwise set create_history_partition=false")),
    (_props(time_unit="DAY", prefix="p", end=600), "Too many dynamic partitions: 600. Limit: 500"),
    (_props(time_unit="DAY", prefix="p", end=3, start=-1000, create_history_partition="true",
            start_day_of_month=40), "Too many dynamic partitions: 1003. Limit: 500"),
    (_props(time_unit="MONTH", prefix="p", end=3, start_day_of_month=29, start_day_of_week=0),
     "dynamic_partition.start_day_of_month should between 1 and 28"),
    (_props(time_unit="WEEK", prefix="p", end=3, start_day_of_week=8),
     "dynamic_partition.start_day_of_week should between 1 and 7"),
    (_props(time_unit="DAY", prefix="p", end=3, time_zone="Mars/Olympus"),
     "Unknown or incorrect time zone: 'Mars/Olympus'"),
    (_props(time_unit="DAY", prefix="p", end=3, reserved_history_periods="2021-01-01"),
     'Invalid " dynamic_partition.reserved_history_periods " value 2021-01-01. It must be like'),
    (_props(time_unit="DAY", prefix="p", end=3,
            reserved_history_periods="[2021-02-01,2021-01-01]"),
     "The first date is larger than the second date, [2021-02-01,2021-01-01] is invalid."),
    (_props(time_unit="DAY", prefix="p", end=3, buckets="x"),
     "Invalid dynamic partition buckets x"),
    (_props(time_unit="DAY", prefix="p", end="y"), "Invalid dynamic partition end y"),
    (_props(time_unit="DAY", prefix="p", end=3, history_partition_num=-5),
     "Dynamic history partition num must greater than 0"),
    (_props(time_unit="DAY", prefix="p", end=3, history_partition_num="z"),
     "Invalid properties: dynamic_partition.history_partition_num"),
    (_props(time_unit="DAY", prefix="p", end=3, hot_partition_num=-1),
     "dynamic_partition.hot_partition_num must larger than 0."),
    (_props(time_unit="DAY", prefix="p", end=3, replication_num=0),
     "Dynamic partition replication num must greater than 0"),
    (_props(time_unit="DAY", prefix="p", end=3,
            reserved_history_periods="[2021-01-01 00:00:00,2021-01-02 00:00:00]"),
     ('Invalid " dynamic_partition.reserved_history_periods " value [2021-01-01 00:00:00,'
     '2021-01-02 00:00:00]. It must be like')),
    (_props(time_unit="DAY", prefix="p", end=3,
            reserved_history_periods="[2021-02-30,2021-03-01]"),
     "Invalid dynamic_partition.reserved_history_periods value. It must be correct DATE value"),
    (_props(time_unit="DAY", prefix="p", end=3, storage_medium="tape"),
     "invalid storage medium: tape. Should be SSD or HDD"),
    (_props(time_unit="DAY", prefix="p", end=3, color="red"),
     "Invalid dynamic partition properties: dynamic_partition.color"),
]


@pytest.mark.parametrize("props, message", BAD_PROPERTIES)
def test_bad_properties_in_doris_order(db_conn, props, message) -> None:
    cur = db_conn.cursor()
    with pytest.raises(pymysql.err.OperationalError) as info:
        cur.execute(DAY_TABLE.format(name="bad", type="DATE", props=props))
    code = 1298 if "time zone" in message else 1105  # Doris' ERR_UNKNOWN_TIME_ZONE
    assert info.value.args[0] == code and message in info.value.args[1], info.value.args


def test_type_rules_hour_and_colocate(db_conn) -> None:
    cur = db_conn.cursor()
    cases = [
        (DAY_TABLE.format(name="h1", type="DATE", props=_props(time_unit="HOUR", prefix="p",
                                                               end=3)),
         ("dynamic_partition.time_unit could not be HOUR when type of partition column k1 is "
         "DATE or DATEV2")),
        (DAY_TABLE.format(name="h2", type="INT", props=_props(time_unit="HOUR", prefix="p",
                                                              end=3)),
         ("dynamic_partition.time_unit could not be HOUR when type of partition column k1 is "
         "Integer")),
        ("CREATE TABLE l (k1 DATE, v INT) DUPLICATE KEY(k1) PARTITION BY LIST(k1) () "
         "DISTRIBUTED BY HASH(k1) BUCKETS 2 PROPERTIES (" + _props(time_unit="DAY", prefix="p",
                                                              end=3) + ")",
         "Dynamic partition only support single-column range partition"),
        (DAY_TABLE.format(name="c1", type="DATE", props=_props(
            time_unit="DAY", prefix="p", end=3, buckets=4) + ', "colocate_with" = "dyn_g"'),
         ("Dynamic partition buckets must equal the distribution buckets if creating a colocate "
         "table: 2")),
    ]
    for sql, message in cases:
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute(sql)
        assert message in info.value.args[1], info.value.args
    cur.execute(DAY_TABLE.format(name="c2", type="DATE", props=_props(
        time_unit="DAY", prefix="p", end=3, buckets=2, enable="false")
        + ', "colocate_with" = "dyn_g2"'))
    with pytest.raises(pymysql.err.OperationalError) as info:
        cur.execute('ALTER TABLE c2 SET ("dynamic_partition.buckets" = "3")')
    assert ("Dynamic partition buckets must equal the distribution buckets if creating a "
            "colocate table: 2") in info.value.args[1]
    with today(cur, "2024-06-01 10:00:00"):
        cur.execute(DAY_TABLE.format(name="hr", type="DATETIME", props=_props(
            time_unit="HOUR", prefix="h", end=1, time_zone="UTC")))
        assert len(names(cur, "hr")) == 2


def test_max_dynamic_partition_num_is_the_fe_config(db_conn) -> None:
    cur = db_conn.cursor()
    sql = DAY_TABLE.format(name="many", type="DATE", props=_props(
        time_unit="DAY", prefix="p", end=8, enable="false"))
    try:
        cur.execute('ADMIN SET FRONTEND CONFIG ("max_dynamic_partition_num" = "5")')
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute(sql.replace('"false"', '"true"'))
        assert "Too many dynamic partitions: 8. Limit: 5" in info.value.args[1]
        cur.execute(sql)  # Doris counts only enabled rules
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute('ALTER TABLE many SET ("dynamic_partition.enable" = "true")')
        assert "Too many dynamic partitions: 8. Limit: 5" in info.value.args[1]
    finally:
        cur.execute('ADMIN SET FRONTEND CONFIG ("max_dynamic_partition_num" = "500")')


def test_conflict_at_create_is_a_ddl_error_and_leaves_no_table(db_conn) -> None:
    """Seed 001: a new partition conflicting with an existing one at CREATE TABLE is a DDL
    error (checked before the table is committed, so nothing is left behind)."""
    cur = db_conn.cursor()
    ddl = ("CREATE TABLE c (k1 DATE, v INT) DUPLICATE KEY(k1) PARTITION BY RANGE(k1) "
           "(PARTITION m VALUES [({lo}), ({hi}))) DISTRIBUTED BY HASH(k1) BUCKETS 1 "
           'PROPERTIES ("replication_num" = "1", ' + _props(time_unit="MONTH", end=1,
                                                            prefix="p") + ")")
    with today(cur, "2024-03-15 00:00:00"):
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute(ddl.format(lo='"2024-03-10"', hi='"2024-03-20"'))
        assert info.value.args[1].endswith(
            "Range " + _date_range("2024-03-01", "2024-04-01") + " is intersected with range: "
            + _date_range("2024-03-10", "2024-03-20"))
        assert _rows(cur, "SHOW TABLES") == ()
        # a manual partition with exactly a period's range is that period's partition
        cur.execute(ddl.format(lo='"2024-03-01"', hi='"2024-04-01"'))
        assert names(cur, "c") == ["m", "p202404"]
        assert db_conn._result.warning_count == 0


def test_show_create_table_prints_every_dynamic_key_in_doris_order(db_conn) -> None:
    """Doris 2.1's SHOW CREATE TABLE: the whole dynamic_partition.* block with defaults after
    is_being_synced, start_day_of_month only for MONTH; and the text creates the same table."""
    cur = db_conn.cursor()
    cur.execute(DAY_TABLE.format(name="sc", type="DATE", props=_props(
        enable="false", time_unit="MONTH", end=2, prefix="p", time_zone="Asia/Shanghai")))
    text = _rows(cur, "SHOW CREATE TABLE sc")[0][1]
    block = text[text.index('"is_being_synced"'):text.index('"storage_medium"')]
    assert block.splitlines()[1:] == [
        '"dynamic_partition.enable" = "false",',
        '"dynamic_partition.time_unit" = "MONTH",',
        '"dynamic_partition.time_zone" = "Asia/Shanghai",',
        '"dynamic_partition.start" = "-2147483648",',
        '"dynamic_partition.end" = "2",',
        '"dynamic_partition.prefix" = "p",',
        '"dynamic_partition.replication_allocation" = "tag.location.default: 1",',
        '"dynamic_partition.buckets" = "2",',
        '"dynamic_partition.create_history_partition" = "false",',
        '"dynamic_partition.history_partition_num" = "-1",',
        '"dynamic_partition.hot_partition_num" = "0",',
        '"dynamic_partition.reserved_history_periods" = "NULL",',
        '"dynamic_partition.storage_policy" = "",',
        '"dynamic_partition.start_day_of_month" = "1",']
    assert text.count("dynamic_partition.enable") == 1
    cur.execute("DROP TABLE sc")
    cur.execute(text)
    assert _rows(cur, "SHOW CREATE TABLE sc")[0][1] == text
