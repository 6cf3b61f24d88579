"""SHOW CREATE TABLE round trips: its output re-creates the same table.

For each table shape: create it, read SHOW CREATE TABLE (columns `Table`, `Create Table`), DESC
and the partition layout; drop it; run the printed DDL; the new table must print the identical
SHOW CREATE TABLE text, DESC rows and partitions. A few canonical Doris spellings are asserted on
the text as well (DORIS_REFERENCE.md a.4): backquoted names, `) ENGINE=OLAP`, `DUPLICATE KEY(...)`,
`DISTRIBUTED BY HASH(...) BUCKETS n`, LESS THAN normalised to `[lower, upper)`, a PROPERTIES block,
`COMMENT 'OLAP'` when no comment was given, and rollups not printed.
"""

from __future__ import annotations

import re

import pytest

TABLES: dict[str, str] = {
    "rt_all_types": """
        CREATE TABLE rt_all_types (
          k1 INT NOT NULL COMMENT 'first key',
          k2 BIGINT NOT NULL,
          c_bool BOOLEAN,
          c_tiny TINYINT,
          c_small SMALLINT NULL,
          c_int INT DEFAULT "-1",
          c_large LARGEINT,
          c_float FLOAT,
          c_double DOUBLE,
          c_dec DECIMAL(27, 9) DEFAULT "0.5",
          c_date DATE DEFAULT "2024-01-01",
          c_dt DATETIME,
          c_dt3 DATETIME(3),
          c_char CHAR(5),
          c_vc VARCHAR(20) DEFAULT "" COMMENT 'a varchar',
          c_str STRING
        ) ENGINE=OLAP
        DUPLICATE KEY(k1, k2)
        COMMENT 'all scalar types'
        DISTRIBUTED BY HASH(k1) BUCKETS 4
        PROPERTIES ("replication_num" = "1")""",
    "rt_agg": """
        CREATE TABLE rt_agg (
          k1 DATE NOT NULL,
          k2 VARCHAR(32),
          v_sum BIGINT SUM DEFAULT "0",
          v_max INT MAX,
          v_min INT MIN,
          v_rep VARCHAR(10) REPLACE,
          v_rep_nn INT REPLACE_IF_NOT_NULL
        ) AGGREGATE KEY(k1, k2)
        DISTRIBUTED BY HASH(k1, k2) BUCKETS 2""",
    "rt_uniq_mow": """
        CREATE TABLE rt_uniq_mow (
          id BIGINT NOT NULL,
          name VARCHAR(50) NOT NULL,
          city VARCHAR(20)
        ) UNIQUE KEY(id, name)
        DISTRIBUTED BY HASH(id) BUCKETS 3
        PROPERTIES ("enable_unique_key_merge_on_write" = "true")""",
    "rt_uniq_mor": """
        CREATE TABLE rt_uniq_mor (
          id BIGINT NOT NULL,
          city VARCHAR(20)
        ) UNIQUE KEY(id)
        DISTRIBUTED BY HASH(id) BUCKETS 3
        PROPERTIES ("enable_unique_key_merge_on_write" = "false")""",
    "rt_range_lt": """
        CREATE TABLE rt_range_lt (
          dt DATE NOT NULL,
          id INT NOT NULL,
          v BIGINT
        ) DUPLICATE KEY(dt, id)
        PARTITION BY RANGE(dt) (
          PARTITION p202401 VALUES LESS THAN ("2024-02-01"),
          PARTITION p202402 VALUES LESS THAN ("2024-03-01"),
          PARTITION pmax VALUES LESS THAN MAXVALUE
        )
        DISTRIBUTED BY HASH(id) BUCKETS 2""",
    "rt_range_fixed": """
        CREATE TABLE rt_range_fixed (
          id INT NOT NULL,
          v VARCHAR(10)
        ) DUPLICATE KEY(id)
        PARTITION BY RANGE(id) (
          PARTITION p0 VALUES [("0"), ("100")),
          PARTITION p3 VALUES [("300"), ("400"))
        )
        DISTRIBUTED BY HASH(id) BUCKETS 1""",
    "rt_range_empty": """
        CREATE TABLE rt_range_empty (
          ts DATETIME NOT NULL,
          id INT NOT NULL
        ) DUPLICATE KEY(ts, id)
        PARTITION BY RANGE(ts) ()
        DISTRIBUTED BY HASH(id) BUCKETS 1""",
    "rt_list": """
        CREATE TABLE rt_list (
          city VARCHAR(20) NOT NULL,
          id INT NOT NULL
        ) DUPLICATE KEY(city, id)
        PARTITION BY LIST(city) (
          PARTITION p_north VALUES IN ("beijing", "harbin"),
          PARTITION p_south VALUES IN ("guangzhou")
        )
        DISTRIBUTED BY HASH(id) BUCKETS 2""",
    "rt_random": """
        CREATE TABLE rt_random (
          k1 INT,
          v1 VARCHAR(10)
        ) DUPLICATE KEY(k1)
        DISTRIBUTED BY RANDOM BUCKETS 3""",
    "rt_auto": """
        CREATE TABLE rt_auto (
          k1 INT,
          v1 VARCHAR(10)
        ) DUPLICATE KEY(k1)
        DISTRIBUTED BY HASH(k1) BUCKETS AUTO""",
    "rt_index": """
        CREATE TABLE rt_index (
          k1 INT NOT NULL,
          k2 VARCHAR(20),
          v1 INT,
          INDEX idx_k2 (k2) USING BITMAP COMMENT 'bitmap on k2'
        ) DUPLICATE KEY(k1, k2)
        DISTRIBUTED BY HASH(k1) BUCKETS 2
        PROPERTIES (
          "bloom_filter_columns" = "k2",
          "disable_auto_compaction" = "true",
          "light_schema_change" = "true"
        )""",
    "rt_colo": """
        CREATE TABLE rt_colo (
          k1 INT NOT NULL,
          v INT
        ) DUPLICATE KEY(k1)
        DISTRIBUTED BY HASH(k1) BUCKETS 4
        PROPERTIES ("colocate_with" = "rt_colo_grp")""",
    "rt_rollup": """
        CREATE TABLE rt_rollup (
          siteid INT NOT NULL,
          citycode SMALLINT NOT NULL,
          pv BIGINT SUM NOT NULL DEFAULT "0"
        ) AGGREGATE KEY(siteid, citycode)
        DISTRIBUTED BY HASH(siteid) BUCKETS 2
        ROLLUP (r_city (citycode, pv))""",
}

# Substrings (or compiled regexes) the canonical text must contain, per table. Partition names may
# or may not be backquoted.
EXPECTED_FRAGMENTS: dict[str, list[str | re.Pattern[str]]] = {
    "rt_all_types": [
        "CREATE TABLE `rt_all_types` (",
        "`k1` ",
        ") ENGINE=OLAP",
        "DUPLICATE KEY(`k1`, `k2`)",
        "COMMENT 'all scalar types'",
        "DISTRIBUTED BY HASH(`k1`) BUCKETS 4",
        "PROPERTIES (",
    ],
    "rt_agg": [
        "AGGREGATE KEY(`k1`, `k2`)",
        "COMMENT 'OLAP'",
        "DISTRIBUTED BY HASH(`k1`, `k2`) BUCKETS 2",
    ],
    "rt_uniq_mow": ["UNIQUE KEY(`id`, `name`)", '"enable_unique_key_merge_on_write" = "true"'],
    "rt_uniq_mor": ["UNIQUE KEY(`id`)", '"enable_unique_key_merge_on_write" = "false"'],
    "rt_range_lt": [
        "PARTITION BY RANGE(`dt`)",
        re.compile(r'PARTITION `?p202401`? VALUES \[\("0000-01-01"\), \("2024-02-01"\)\)'),
        re.compile(r'PARTITION `?p202402`? VALUES \[\("2024-02-01"\), \("2024-03-01"\)\)'),
    ],
    "rt_range_fixed": [
        "PARTITION BY RANGE(`id`)",
        re.compile(r'PARTITION `?p0`? VALUES \[\("0"\), \("100"\)\)'),
        re.compile(r'PARTITION `?p3`? VALUES \[\("300"\), \("400"\)\)'),
    ],
    "rt_range_empty": ["PARTITION BY RANGE(`ts`)"],
    "rt_list": ["PARTITION BY LIST(`city`)", "p_north", "p_south"],
    "rt_random": ["DISTRIBUTED BY RANDOM BUCKETS 3"],
    "rt_auto": ["DISTRIBUTED BY HASH(`k1`) BUCKETS AUTO"],
    "rt_index": ["idx_k2", '"bloom_filter_columns" = "k2"', '"disable_auto_compaction" = "true"'],
    "rt_colo": ['"colocate_with" = "rt_colo_grp"'],
    "rt_rollup": ["AGGREGATE KEY(`siteid`, `citycode`)"],
}


def _contains(text: str, fragment: str | re.Pattern[str]) -> bool:
    if isinstance(fragment, re.Pattern):
        return fragment.search(text) is not None
    return fragment in text


def _query(conn, sql: str) -> tuple[list[str], list[tuple]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description] if cur.description else []
        return names, [tuple(r) for r in cur.fetchall()]


def _exec(conn, sql: str) -> None:
    with conn.cursor() as cur:
        cur.execute(sql)


def _show_create(conn, table: str) -> str:
    names, rows = _query(conn, f"SHOW CREATE TABLE `{table}`")
    assert names[:2] == ["Table", "Create Table"], names
    assert len(rows) == 1, rows
    assert rows[0][0] == table
    text = rows[0][1]
    assert isinstance(text, str) and text.strip(), rows
    return text


def _partition_layout(conn, table: str) -> list[tuple]:
    names, rows = _query(conn, f"SHOW PARTITIONS FROM `{table}`")
    idx = {n: i for i, n in enumerate(names)}
    keep = ["PartitionName", "PartitionKey", "Range", "DistributionKey", "Buckets"]
    return sorted(tuple(str(r[idx[k]]) for k in keep) for r in rows)


def _snapshot(conn, table: str) -> dict[str, object]:
    return {
        "create": _show_create(conn, table),
        "desc": _query(conn, f"DESC `{table}`")[1],
        "partitions": _partition_layout(conn, table),
    }


@pytest.mark.parametrize("table", sorted(TABLES))
def test_show_create_table_round_trips(db_conn, table: str) -> None:
    _exec(db_conn, TABLES[table])
    before = _snapshot(db_conn, table)
    text = before["create"]
    assert isinstance(text, str)
    for fragment in EXPECTED_FRAGMENTS[table]:
        assert _contains(text, fragment), f"{fragment!r} not in SHOW CREATE TABLE output:\n{text}"
    if table == "rt_rollup":
        assert "r_city" not in text, "rollups are not printed by SHOW CREATE TABLE"

    _exec(db_conn, f"DROP TABLE `{table}`")
    _exec(db_conn, text)
    after = _snapshot(db_conn, table)
    assert after["create"] == text, (
        f"re-created table prints differently:\n{text}\n---\n{after['create']}"
    )
    assert after["desc"] == before["desc"]
    assert after["partitions"] == before["partitions"]


def test_show_create_reflects_alter_set_and_add_partition(db_conn) -> None:
    _exec(db_conn, TABLES["rt_range_lt"])
    _exec(db_conn, 'ALTER TABLE rt_range_lt SET ("disable_auto_compaction" = "true")')
    _exec(db_conn, "ALTER TABLE rt_range_lt DROP PARTITION pmax")
    _exec(db_conn, 'ALTER TABLE rt_range_lt ADD PARTITION p202403 VALUES LESS THAN ("2024-04-01")')
    text = _show_create(db_conn, "rt_range_lt")
    assert '"disable_auto_compaction" = "true"' in text, text
    assert re.search(
        r'PARTITION `?p202403`? VALUES \[\("2024-03-01"\), \("2024-04-01"\)\)', text
    ), text
    assert "pmax" not in text, text
    before = _snapshot(db_conn, "rt_range_lt")
    _exec(db_conn, "DROP TABLE rt_range_lt")
    _exec(db_conn, text)
    assert _snapshot(db_conn, "rt_range_lt") == before


def test_show_create_of_missing_table_is_an_error(db_conn) -> None:
    import pymysql

    with pytest.raises(pymysql.MySQLError) as ei:
        _query(db_conn, "SHOW CREATE TABLE no_such_table_xyz")
    code, msg = ei.value.args[0], ei.value.args[1]
    # MySQL's ER_NO_SUCH_TABLE: SQLAlchemy's reflection maps exactly 1146 to NoSuchTableError
    assert code == 1146, (code, msg)
    current_db = _query(db_conn, "SELECT DATABASE()")[1][0][0]
    assert msg == (f"errCode = 2, detailMessage = Table [no_such_table_xyz] does not exist in "
                   f"database [{current_db}].")
