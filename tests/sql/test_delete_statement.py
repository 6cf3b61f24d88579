"""DELETE through the wire: Doris' OK info string, new partition versions, SHOW DELETE."""

from __future__ import annotations

import re

import MySQLdb

DELETE_INFO = re.compile(r"^\{'label':'delete_[0-9a-f-]+', 'status':'VISIBLE', 'txnId':'\d+'\}$")


def test_delete_reports_label_bumps_version_and_shows_in_show_delete(server, db) -> None:
    conn = MySQLdb.connect(host="127.0.0.1", port=server.port, user="root", passwd="", db=db)
    cur = conn.cursor()
    cur.execute(
        "CREATE TABLE t (dt DATE NOT NULL, k INT NOT NULL, v VARCHAR(5)) DUPLICATE KEY(dt, k) "
        "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
        "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 2"
    )
    cur.execute("INSERT INTO t VALUES ('2024-01-05', 1, 'a'), ('2024-02-05', 2, 'b')")
    cur.execute("DELETE FROM t PARTITION p2 WHERE k IN (2, 3) AND v = 'b'")
    assert cur.rowcount == 0
    assert DELETE_INFO.match(conn.info() or ""), conn.info()

    cur.execute("SHOW PARTITIONS FROM t")
    names = [d[0] for d in cur.description]
    versions = {r[names.index("PartitionName")]: r[names.index("VisibleVersion")] for r in cur.fetchall()}
    assert versions == {"p1": "2", "p2": "3"}  # create = 1, the load = 2, the delete = 3 (p2 only)

    cur.execute("SHOW DELETE")
    rows = cur.fetchall()
    assert [d[0] for d in cur.description] == ["TableName", "PartitionName", "CreateTime", "DeleteCondition", "State"]
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [("t", "p2", 'k IN ("2", "3") AND v EQ "b"', "FINISHED")]

    cur.execute("SELECT k, v FROM t ORDER BY k")
    assert cur.fetchall() == ((1, "a"),)
    conn.close()
