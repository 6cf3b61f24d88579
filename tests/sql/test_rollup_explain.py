"""EXPLAIN of rollup hits and misses (seed 004 tables, PREAGGREGATION ON / OFF with Doris'
reasons, count(*) on an AGGREGATE table) and of partition / bucket pruning: golden files in
tests/sql/explain_golden_rollup/ plus marker checks that name what each golden file proves.

The server is private to this module and fed the same statements in the same order, so tablet
ids are deterministic. Regenerate with `SHALEDB_REGEN_GOLDEN=1 pytest tests/sql/test_rollup_explain.py`
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.server import ServerProcess

GOLDEN = Path(__file__).parent / "explain_golden_rollup"
REGEN = os.environ.get("SHALEDB_REGEN_GOLDEN") == "1"

SETUP = [
    "CREATE DATABASE rx",
    "USE rx",
    """CREATE TABLE example_tbl (user_id LARGEINT NOT NULL, date DATE NOT NULL,
        city VARCHAR(20), age SMALLINT, sex TINYINT,
        last_visit_date DATETIME REPLACE DEFAULT "1970-01-01 00:00:00",
        cost BIGINT SUM DEFAULT "0", max_dwell_time INT MAX DEFAULT "0",
        min_dwell_time INT MIN DEFAULT "99999")
      AGGREGATE KEY(user_id, date, city, age, sex) DISTRIBUTED BY HASH(user_id) BUCKETS 3
      ROLLUP (rollup_cost(user_id, cost),
              rollup_city(city, age, cost, max_dwell_time, min_dwell_time))""",
    """INSERT INTO example_tbl VALUES
      (10000, '2017-10-01', '北京', 20, 0, '2017-10-01 07:00:00', 35, 10, 2),
      (10001, '2017-10-01', '北京', 30, 1, '2017-10-01 17:05:45', 2, 22, 22),
      (10002, '2017-10-02', '上海', 20, 1, '2017-10-02 12:59:12', 200, 5, 5),
      (10003, '2017-10-02', '广州', 32, 0, '2017-10-02 11:20:00', 30, 11, 11),
      (10004, '2017-10-01', '深圳', 35, 0, '2017-10-01 10:00:15', 100, 3, 3),
      (10004, '2017-10-03', '深圳', 35, 0, '2017-10-03 10:20:22', 11, 6, 6)""",
    """CREATE TABLE ev (dt DATE, k INT, v BIGINT) DUPLICATE KEY(dt, k)
      PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-02-01"),
        PARTITION p2 VALUES LESS THAN ("2024-03-01"), PARTITION p3 VALUES LESS THAN MAXVALUE)
      DISTRIBUTED BY HASH(k) BUCKETS 4""",
    """INSERT INTO ev VALUES ('2024-01-05', 1, 10), ('2024-02-10', 1, 30), ('2024-02-11', 3, 40),
      ('2024-03-01', 2, 50)""",
    """CREATE TABLE users (uid LARGEINT, name VARCHAR(8)) DUPLICATE KEY(uid)
      DISTRIBUTED BY HASH(uid) BUCKETS 3""",
    "INSERT INTO users VALUES (10000, 'a'), (10001, 'b'), (10004, 'c')",
]

CASES = {
    "rollup_hit_user_cost": (
        "SELECT user_id, sum(cost) FROM example_tbl GROUP BY user_id",
        ["TABLE: rx.example_tbl(rollup_cost), PREAGGREGATION: ON"],
    ),
    "rollup_hit_city_age": (
        (
            "SELECT city, sum(cost), max(max_dwell_time), min(min_dwell_time) FROM example_tbl "
            "GROUP BY city"
        ),
        ["TABLE: rx.example_tbl(rollup_city), PREAGGREGATION: ON"],
    ),
    "rollup_miss_count_star": (
        "SELECT count(*) FROM example_tbl",
        [
            (
                "TABLE: rx.example_tbl(example_tbl), PREAGGREGATION: OFF. Reason: can't turn preAgg "
                "on for aggregate function count(*)"
            )
        ],
    ),
    "rollup_miss_agg_mismatch": (
        "SELECT user_id, max(cost) FROM example_tbl GROUP BY user_id",
        [
            (
                "(example_tbl), PREAGGREGATION: OFF. Reason: max(cost) is not match agg mode SUM or "
                "has distinct param"
            )
        ],
    ),
    "rollup_miss_value_predicate": (
        "SELECT city, sum(cost) FROM example_tbl WHERE cost > 30 GROUP BY city",
        [
            (
                "(example_tbl), PREAGGREGATION: OFF. Reason: Predicate (cost > 30) contains value "
                "column cost"
            )
        ],
    ),
    "rollup_miss_no_aggregate": (
        "SELECT city FROM example_tbl",
        ["(example_tbl), PREAGGREGATION: OFF. Reason: No aggregate on scan."],
    ),
    "rollup_hit_through_join": (
        "SELECT u.name, sum(e.cost) FROM example_tbl e JOIN users u ON e.user_id = u.uid "
        "GROUP BY u.name",
        ["TABLE: rx.example_tbl(rollup_cost), PREAGGREGATION: ON"],
    ),
    "rollup_miss_through_join_count_star": (
        "SELECT u.name, count(*) FROM example_tbl e JOIN users u ON e.user_id = u.uid "
        "GROUP BY u.name",
        [
            (
                "TABLE: rx.example_tbl(example_tbl), PREAGGREGATION: OFF. Reason: can't turn "
                "preAgg on because aggregate function count(*) in other table"
            )
        ],
    ),
    "rollup_hit_through_filter": (
        "SELECT c, sum(cost) FROM (SELECT concat(city, '!') AS c, cost FROM example_tbl) t "
        "WHERE c <> '北京!' GROUP BY c",
        ["TABLE: rx.example_tbl(rollup_city), PREAGGREGATION: ON"],
    ),
    "rollup_hit_through_grouping_sets": (  # choose_rollup looks through the Repeat
        "SELECT city, sum(cost), GROUPING(city) FROM example_tbl GROUP BY ROLLUP(city)",
        ["TABLE: rx.example_tbl(rollup_city), PREAGGREGATION: ON"],
    ),
    "partition_pruning": (
        "SELECT sum(v) FROM ev WHERE dt >= '2024-02-01' AND dt < '2024-03-01'",
        ["partitions=1/3 (p2)", "tablets=4/4"],
    ),
    "partition_and_bucket_pruning": (
        "SELECT sum(v) FROM ev WHERE dt BETWEEN '2024-01-01' AND '2024-02-15' AND k = 1",
        ["partitions=2/3 (p1,p2)", "tablets=2/8"],
    ),
    "no_partition_matches": (
        "SELECT sum(v) FROM ev WHERE dt > '2024-03-05' AND dt < '2024-01-20'",
        ["partitions=0/3 ()", "tablets=0/0"],
    ),
}


@pytest.fixture(scope="module")
def rx(tmp_path_factory):  # type: ignore[no-untyped-def]
    srv = ServerProcess(tmp_path_factory.mktemp("rollup_explain") / "data", backends=3).start()
    conn = srv.connect()
    with conn.cursor() as cur:
        for s in SETUP:
            cur.execute(s)
    yield conn
    conn.close()
    srv.stop()


def _explain(conn, sql: str) -> str:  # type: ignore[no-untyped-def]
    with conn.cursor() as cur:
        cur.execute(f"EXPLAIN {sql}")
        return "\n".join(r[0] for r in cur.fetchall()) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_rollup_and_pruning_explain(rx, name: str) -> None:  # type: ignore[no-untyped-def]
    sql, markers = CASES[name]
    text = _explain(rx, sql)
    for m in markers:
        assert m in text, f"{name}: {m!r} not in\n{text}"
    path = GOLDEN / f"{name}.txt"
    if REGEN or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()


def test_bucket_pruning_lists_the_hashed_tablet(rx) -> None:  # type: ignore[no-untyped-def]
    """`k = 1` in partition p2 reads exactly the tablet whose bucket seq Doris' hash gives."""
    from storage.batch import Column
    from storage.distribution import bucket_of_rows
    from storage.types import INT

    text = _explain(rx, "SELECT sum(v) FROM ev WHERE dt = '2024-02-10' AND k = 1")
    line = next(ln for ln in text.splitlines() if "tabletList=" in ln)
    assert "tablets=1/4" in line
    tablet_id = line.split("tabletList=")[1].strip()
    with rx.cursor() as cur:
        cur.execute("SHOW TABLETS FROM ev PARTITION (p2)")
        ids = [r[0] for r in sorted(cur.fetchall(), key=lambda r: int(r[0]))]
    seq = int(bucket_of_rows([Column.from_physical(INT, [1])], 4)[0])
    assert tablet_id == ids[seq]
