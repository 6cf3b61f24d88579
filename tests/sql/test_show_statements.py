"""SHOW PARTITIONS and SHOW INDEX, checked column by column (their output has ids and times, so a
.test file cannot compare whole rows).

Doris 2.1 shapes (DORIS_REFERENCE.md a.4):
- SHOW PARTITIONS FROM t: 20 columns, one row per partition in range order; VisibleVersion is 1 for
  a new partition and grows by one per load that writes into that partition; Range is
  `[types: [DATEV2]; keys: [lo]; ..types: [DATEV2]; keys: [hi]; )` and the first LESS THAN
  partition starts at the type minimum (`0000-01-01` for DATE); an unpartitioned table has one
  partition named after the table. TRUNCATE replaces partitions (new ids, version 1).
- SHOW INDEX FROM t: MySQL-shaped 13 columns, Index_type BITMAP for `USING BITMAP`.
"""

from __future__ import annotations

import pymysql
import pytest

SHOW_PARTITIONS_COLUMNS = [
    "PartitionId",
    "PartitionName",
    "VisibleVersion",
    "VisibleVersionTime",
    "State",
    "PartitionKey",
    "Range",
    "DistributionKey",
    "Buckets",
    "ReplicationNum",
    "StorageMedium",
    "CooldownTime",
    "RemoteStoragePolicy",
    "LastConsistencyCheckTime",
    "DataSize",
    "IsInMemory",
    "ReplicaAllocation",
    "IsMutable",
    "SyncWithBaseTables",
    "UnsyncTables",
]
SHOW_INDEX_COLUMNS = [
    "Table",
    "Non_unique",
    "Key_name",
    "Seq_in_index",
    "Column_name",
    "Collation",
    "Cardinality",
    "Sub_part",
    "Packed",
    "Null",
    "Index_type",
    "Comment",
    "Properties",
]


def _exec(conn, sql: str) -> None:
    with conn.cursor() as cur:
        cur.execute(sql)


def _show(conn, sql: str) -> tuple[list[str], list[dict[str, str]]]:
    """Run a SHOW; rows as {column: text} (None stays None)."""
    with conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description]
        rows = [
            {
                n: (None if v is None else (v.decode() if isinstance(v, bytes) else str(v)))
                for n, v in zip(names, r, strict=True)
            }
            for r in cur.fetchall()
        ]
    return names, rows


def _partitions(conn, table: str) -> list[dict[str, str]]:
    names, rows = _show(conn, f"SHOW PARTITIONS FROM `{table}`")
    assert names == SHOW_PARTITIONS_COLUMNS
    return rows


def _versions(conn, table: str) -> dict[str, str]:
    return {r["PartitionName"]: r["VisibleVersion"] for r in _partitions(conn, table)}


def _date_range(lo: str, hi: str) -> str:
    return f"[types: [DATEV2]; keys: [{lo}]; ..types: [DATEV2]; keys: [{hi}]; )"


@pytest.fixture
def range_table(db_conn):
    _exec(
        db_conn,
        """
        CREATE TABLE ev (
          dt DATE NOT NULL,
          id INT NOT NULL,
          v INT
        ) DUPLICATE KEY(dt, id)
        PARTITION BY RANGE(dt) (
          PARTITION p202401 VALUES LESS THAN ("2024-02-01"),
          PARTITION p202402 VALUES LESS THAN ("2024-03-01"),
          PARTITION p202404 VALUES [("2024-04-01"), ("2024-05-01"))
        )
        DISTRIBUTED BY HASH(id) BUCKETS 2""",
    )
    return db_conn


def test_show_partitions_columns_names_ranges(range_table) -> None:
    rows = _partitions(range_table, "ev")
    assert [r["PartitionName"] for r in rows] == ["p202401", "p202402", "p202404"]
    assert [r["Range"] for r in rows] == [
        _date_range("0000-01-01", "2024-02-01"),
        _date_range("2024-02-01", "2024-03-01"),
        _date_range("2024-04-01", "2024-05-01"),
    ]
    for r in rows:
        assert r["VisibleVersion"] == "1"
        assert r["State"] == "NORMAL"
        assert r["PartitionKey"] == "dt"
        assert r["DistributionKey"] == "id"
        assert r["Buckets"] == "2"
        assert r["CooldownTime"] == "9999-12-31 23:59:59"
        assert r["PartitionId"] and r["PartitionId"].isdigit()
    assert len({r["PartitionId"] for r in rows}) == 3


def test_visible_version_grows_per_load_into_the_partition(range_table) -> None:
    _exec(range_table, "INSERT INTO ev VALUES ('2024-01-05', 1, 1), ('2024-01-06', 2, 2)")
    assert _versions(range_table, "ev") == {"p202401": "2", "p202402": "1", "p202404": "1"}
    _exec(range_table, "INSERT INTO ev VALUES ('2024-01-07', 3, 3), ('2024-02-07', 4, 4)")
    assert _versions(range_table, "ev") == {"p202401": "3", "p202402": "2", "p202404": "1"}
    _exec(range_table, "INSERT INTO ev VALUES ('2024-04-30', 5, 5)")
    assert _versions(range_table, "ev") == {"p202401": "3", "p202402": "2", "p202404": "2"}


def test_failed_insert_does_not_bump_versions(range_table) -> None:
    with pytest.raises(pymysql.MySQLError):
        _exec(range_table, "INSERT INTO ev VALUES ('2024-01-05', 1, 1), ('2024-03-15', 2, 2)")
    assert _versions(range_table, "ev") == {"p202401": "1", "p202402": "1", "p202404": "1"}


def test_add_drop_truncate_show_in_partitions(range_table) -> None:
    _exec(range_table, "INSERT INTO ev VALUES ('2024-01-05', 1, 1)")
    before = {r["PartitionName"]: r["PartitionId"] for r in _partitions(range_table, "ev")}

    _exec(range_table, 'ALTER TABLE ev ADD PARTITION p202405 VALUES LESS THAN ("2024-06-01")')
    rows = _partitions(range_table, "ev")
    assert [r["PartitionName"] for r in rows] == ["p202401", "p202402", "p202404", "p202405"]
    assert rows[-1]["Range"] == _date_range("2024-05-01", "2024-06-01")
    assert rows[-1]["VisibleVersion"] == "1"

    _exec(range_table, "ALTER TABLE ev DROP PARTITION p202402")
    assert [r["PartitionName"] for r in _partitions(range_table, "ev")] == [
        "p202401",
        "p202404",
        "p202405",
    ]

    _exec(range_table, "TRUNCATE TABLE ev")
    rows = _partitions(range_table, "ev")
    assert [r["PartitionName"] for r in rows] == ["p202401", "p202404", "p202405"]
    assert all(r["VisibleVersion"] == "1" for r in rows)
    assert rows[0]["PartitionId"] != before["p202401"], "TRUNCATE replaces the partition"


def test_int_fixed_ranges_and_list_partitions(db_conn) -> None:
    _exec(
        db_conn,
        """
        CREATE TABLE gaps (
          k INT NOT NULL,
          v INT
        ) DUPLICATE KEY(k)
        PARTITION BY RANGE(k) (
          PARTITION p0 VALUES [("0"), ("100")),
          PARTITION p3 VALUES [("300"), ("400"))
        )
        DISTRIBUTED BY HASH(k) BUCKETS 1""",
    )
    rows = _partitions(db_conn, "gaps")
    assert [(r["PartitionName"], r["Range"]) for r in rows] == [
        ("p0", "[types: [INT]; keys: [0]; ..types: [INT]; keys: [100]; )"),
        ("p3", "[types: [INT]; keys: [300]; ..types: [INT]; keys: [400]; )"),
    ]

    _exec(
        db_conn,
        """
        CREATE TABLE cities (
          city VARCHAR(20) NOT NULL,
          id INT NOT NULL
        ) DUPLICATE KEY(city, id)
        PARTITION BY LIST(city) (
          PARTITION p_north VALUES IN ("beijing", "harbin"),
          PARTITION p_south VALUES IN ("guangzhou")
        )
        DISTRIBUTED BY HASH(id) BUCKETS 3""",
    )
    _exec(db_conn, "INSERT INTO cities VALUES ('guangzhou', 1)")
    rows = _partitions(db_conn, "cities")
    assert {r["PartitionName"]: r["VisibleVersion"] for r in rows} == {
        "p_north": "1",
        "p_south": "2",
    }
    assert {r["PartitionKey"] for r in rows} == {"city"}
    assert {r["Buckets"] for r in rows} == {"3"}


def test_unpartitioned_and_random_tables_have_one_partition(db_conn) -> None:
    _exec(
        db_conn,
        "CREATE TABLE plain (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3",
    )
    _exec(
        db_conn, "CREATE TABLE rnd (k INT, v INT) DUPLICATE KEY(k) DISTRIBUTED BY RANDOM BUCKETS 2"
    )
    (p,) = _partitions(db_conn, "plain")
    assert p["PartitionName"] == "plain"
    assert p["VisibleVersion"] == "1"
    assert p["Buckets"] == "3"
    assert p["DistributionKey"] == "k"
    _exec(db_conn, "INSERT INTO plain VALUES (1, 1), (2, 2)")
    _exec(db_conn, "INSERT INTO plain VALUES (3, 3)")
    assert _versions(db_conn, "plain") == {"plain": "3"}
    (r,) = _partitions(db_conn, "rnd")
    assert r["PartitionName"] == "rnd"
    assert r["DistributionKey"] == "RANDOM"
    assert r["Buckets"] == "2"


def test_show_partitions_of_missing_table_is_an_error(db_conn) -> None:
    with pytest.raises(pymysql.MySQLError) as ei:
        _show(db_conn, "SHOW PARTITIONS FROM no_such_table_xyz")
    assert "no_such_table_xyz" in ei.value.args[1]


def test_show_index_lists_bitmap_index(db_conn, db) -> None:
    _exec(
        db_conn,
        """
        CREATE TABLE idx_t (
          k1 INT NOT NULL,
          k2 VARCHAR(20),
          v1 INT,
          INDEX idx_k2 (k2) USING BITMAP COMMENT 'bitmap on k2'
        ) DUPLICATE KEY(k1, k2)
        DISTRIBUTED BY HASH(k1) BUCKETS 2""",
    )
    names, rows = _show(db_conn, "SHOW INDEX FROM idx_t")
    assert names == SHOW_INDEX_COLUMNS
    assert len(rows) == 1, rows
    (r,) = rows
    assert r["Table"] == f"{db}.idx_t"  # Doris prints the analyzed TableName: db.t
    assert r["Key_name"] == "idx_k2"
    assert r["Column_name"] == "k2"
    assert r["Index_type"] == "BITMAP"
    assert r["Comment"] == "bitmap on k2"

    _exec(db_conn, "CREATE TABLE no_idx (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    names, rows = _show(db_conn, "SHOW INDEX FROM no_idx")
    assert names == SHOW_INDEX_COLUMNS
    assert rows == []
