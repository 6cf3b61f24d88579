"""Colocate groups over the wire: seed 000's t1/t2 tables, SHOW PROC '/colocation_group' and
'/colocation_group/<id>' (the bucket seq -> backend map), tablets placed on their bucket seq's
backend (SHOW TABLETS), ALTER TABLE t SET ("colocate_with" = ..) with Doris' checks, and the
stable / unstable switch of Doris' /api/colocate/group_stable."""

from __future__ import annotations

import json
import urllib.request

import pymysql
import pytest
from support.http import authorized

GROUP_COLUMNS = [
    "GroupId",
    "GroupName",
    "TableIds",
    "BucketsNum",
    "ReplicaAllocation",
    "DistCols",
    "IsStable",
    "ErrorMsg",
]


def _rows(cur, sql: str) -> list[tuple]:
    cur.execute(sql)
    return list(cur.fetchall())


def _groups(cur) -> list[dict]:
    cur.execute("SHOW PROC '/colocation_group'")
    assert [d[0] for d in cur.description] == GROUP_COLUMNS
    return [dict(zip(GROUP_COLUMNS, r)) for r in cur.fetchall()]


def _seed_tables(cur) -> None:
    for t in ("t1", "t2"):
        cur.execute(f"""CREATE TABLE `{t}` (`id` int(11) COMMENT "", `value` varchar(8) COMMENT "")
            ENGINE=OLAP DUPLICATE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 10
            PROPERTIES ("colocate_with" = "t1")""")


def _my_group(cur, name: str) -> dict:
    """The newest group called `name` (groups are global; tests run one after another, so the
    group this test created is the newest one)."""
    mine = [g for g in _groups(cur) if g["GroupName"] == f"{g['GroupId'].split('.')[0]}_{name}"]
    return max(mine, key=lambda g: int(g["GroupId"].split(".")[1]))


def _placement(cur, table: str) -> dict[int, str]:
    """Bucket seq -> backend of a one-partition table (tablets list in bucket order)."""
    tablets = sorted(_rows(cur, f"SHOW TABLETS FROM {table}"), key=lambda r: int(r[0]))
    return {i: r[2] for i, r in enumerate(tablets)}


def test_seed_000_group_and_bucket_map(db_conn) -> None:
    cur = db_conn.cursor()
    _seed_tables(cur)
    g = _my_group(cur, "t1")
    db_id = g["GroupId"].split(".")[0]
    assert g["GroupName"] == f"{db_id}_t1"
    assert (g["BucketsNum"], g["ReplicaAllocation"], g["DistCols"], g["IsStable"]) == (
        "10",
        "tag.location.default: 1",
        "int",
        "true",
    )
    assert len(g["TableIds"].split(", ")) == 2
    cur.execute(f"SHOW PROC '/colocation_group/{g['GroupId']}'")
    assert [d[0] for d in cur.description] == ["BucketIndex", '{"location" : "default"}']
    bucket_map = {int(r[0]): r[1] for r in cur.fetchall()}
    assert sorted(bucket_map) == list(range(10))
    backends = {r[0] for r in _rows(cur, "SHOW BACKENDS")}
    assert set(bucket_map.values()) == backends  # round robin over the 3 backends
    # seed 000 section 1: bucket seq i of every table in the group lives on the map's backend
    assert _placement(cur, "t1") == bucket_map
    assert _placement(cur, "t2") == bucket_map
    cur.execute("INSERT INTO t1 VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(50)))
    cur.execute("INSERT INTO t2 SELECT * FROM t1")
    assert _rows(cur, "SELECT count(*) FROM t1 JOIN t2 ON t1.id = t2.id") == [(50,)]


def test_alter_colocate_with_moves_tables(db_conn) -> None:
    cur = db_conn.cursor()
    _seed_tables(cur)
    cur.execute("""CREATE TABLE t3 (id INT, value VARCHAR(8)) DUPLICATE KEY(id)
        DISTRIBUTED BY HASH(id) BUCKETS 10""")
    cur.execute("""CREATE TABLE t4 (id BIGINT, value VARCHAR(8)) DUPLICATE KEY(id)
        DISTRIBUTED BY HASH(id) BUCKETS 10""")
    cur.execute("""CREATE TABLE t5 (id INT, value VARCHAR(8)) DUPLICATE KEY(id)
        DISTRIBUTED BY HASH(id) BUCKETS 5""")
    cur.execute("INSERT INTO t3 VALUES " + ", ".join(f"({i}, 'x{i}')" for i in range(100)))
    before = sorted(_rows(cur, "SELECT * FROM t3"))
    g = _my_group(cur, "t1")
    cur.execute(f"SHOW PROC '/colocation_group/{g['GroupId']}'")
    bucket_map = {int(r[0]): r[1] for r in cur.fetchall()}
    cur.execute('ALTER TABLE t3 SET ("colocate_with" = "t1")')
    g = _my_group(cur, "t1")
    assert len(g["TableIds"].split(", ")) == 3
    assert _placement(cur, "t3") == bucket_map  # tablets relocated to the group's backends
    assert sorted(_rows(cur, "SELECT * FROM t3")) == before  # and their data moved with them
    errors = {
        'ALTER TABLE t4 SET ("colocate_with" = "t1")': "Colocate tables distribution columns must have the same data type: "
        "bigint should be int",
        'ALTER TABLE t5 SET ("colocate_with" = "t1")': "Colocate tables must have same bucket num: 5 should be 10",
    }
    for sql, msg in errors.items():
        with pytest.raises(pymysql.MySQLError) as ei:
            cur.execute(sql)
        assert ei.value.args == (5063, f"errCode = 2, detailMessage = {msg}"), sql
    # a new group name creates a group with the table as its parent; "" leaves the group
    cur.execute('ALTER TABLE t4 SET ("colocate_with" = "g_big")')
    gb = _my_group(cur, "g_big")
    assert (gb["BucketsNum"], gb["DistCols"]) == ("10", "bigint")
    cur.execute('ALTER TABLE t3 SET ("colocate_with" = "")')
    assert len(_my_group(cur, "t1")["TableIds"].split(", ")) == 2
    assert "colocate_with" not in _rows(cur, "SHOW CREATE TABLE t3")[0][1]
    cur.execute('ALTER TABLE t4 SET ("colocate_with" = "")')  # the emptied group disappears
    assert not [g for g in _groups(cur) if g["GroupId"] == gb["GroupId"]]
    assert sorted(_rows(cur, "SELECT * FROM t3")) == before


def test_group_stable_switch(server, db_conn) -> None:
    cur = db_conn.cursor()
    _seed_tables(cur)
    g = _my_group(cur, "t1")
    db_id, group_id = g["GroupId"].split(".")
    url = (
        f"http://127.0.0.1:{server.http_port}/api/colocate/group_stable"
        f"?db_id={db_id}&group_id={group_id}"
    )
    req = authorized(url, method="DELETE")
    with urllib.request.urlopen(req) as resp:
        assert json.loads(resp.read())["msg"] == "success"
    assert _my_group(cur, "t1")["IsStable"] == "false"
    with urllib.request.urlopen(authorized(f"http://127.0.0.1:{server.http_port}/api/colocate")) as resp:
        listed = {x["GroupId"]: x for x in json.loads(resp.read())["data"]}
    assert listed[g["GroupId"]]["IsStable"] == "false"
    with urllib.request.urlopen(authorized(url, method="POST")) as resp:
        assert json.loads(resp.read())["code"] == 0
    assert _my_group(cur, "t1")["IsStable"] == "true"
