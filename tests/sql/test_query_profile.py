"""Predicate pushdown through the wire: the short-key index and zone maps read less, and give the
same answer as a scan that cannot use them (SHOW QUERY PROFILE counters)."""

from __future__ import annotations


def _profile(cur) -> dict[str, int]:
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    return {name: int(value) for name, value in cur.fetchall() if value.lstrip("-").isdigit()}


def _count(cur, where: str) -> tuple[int, dict[str, int]]:
    cur.execute(f"SELECT count(*), sum(v) FROM t WHERE {where}")
    count = cur.fetchone()
    return count, _profile(cur)


def test_short_key_and_zone_map_prune_with_same_results(db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT NOT NULL, v BIGINT, s VARCHAR(8)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(s) BUCKETS 1")
        for start in range(0, 40000, 10000):
            values = ", ".join(f"({i}, {i // 1000}, 'x')" for i in range(start, start + 10000))
            cur.execute(f"INSERT INTO t VALUES {values}")
        cur.execute("SET enable_profile = true")

        pushed, p1 = _count(cur, "k = 12345")
        full, p2 = _count(cur, "k + 0 = 12345")  # an expression: nothing reaches the indexes
        assert pushed == full == (1, 12)
        # four loads, four rowsets of disjoint key ranges: the three that cannot hold k = 12345
        # are skipped by their zone maps before anything is read, the short key narrows the 4th
        assert p1["NumRowsetFiltered"] == 3 and p1["NumRowsetTotal"] == 4
        assert p1["NumSegmentFilteredByZoneMap"] == 3
        assert p1["RowsStatsFiltered"] == 30000 and p1["RowsKeyRangeFiltered"] > 9000
        assert p2["RowsKeyRangeFiltered"] == 0 and p2["RowsTotal"] == 40000
        assert p2["NumRowsetFiltered"] == 0

        pushed, p3 = _count(cur, "v = 5")  # non-key column, clustered values: page zone maps
        full, p4 = _count(cur, "v + 0 = 5")
        assert pushed == full == (1000, 5000)
        assert p3["PagesFilteredByZoneMap"] > 0 and p3["RowsStatsFiltered"] > 0
        assert p4["PagesFilteredByZoneMap"] == 0

        pushed, p5 = _count(cur, "k > 50000")  # nothing can match: the segment is skipped
        assert pushed == (0, None)
        assert p5["NumSegmentFiltered"] == p5["NumSegmentTotal"] > 0


def _scans(cur) -> dict[str, str]:
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    return {name: value for name, value in cur.fetchall() if name.startswith("VOlapScanNode")}


def test_profile_shows_pruning_and_rollup_choice(db_conn) -> None:
    """The scan facts the planner recorded (partitions=k/n, tablets=k/n, the chosen index and
    PREAGGREGATION) reach the client through the query profile, in Doris' wording."""
    with db_conn.cursor() as cur:
        cur.execute("""CREATE TABLE ev (dt DATE, k INT, city VARCHAR(8), cost BIGINT SUM)
            AGGREGATE KEY(dt, k, city)
            PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-02-01"),
              PARTITION p2 VALUES LESS THAN ("2024-03-01"), PARTITION p3 VALUES LESS THAN MAXVALUE)
            DISTRIBUTED BY HASH(k) BUCKETS 4
            ROLLUP (r_city(dt, city, cost))""")
        cur.execute("INSERT INTO ev VALUES " + ", ".join(
            f"('2024-0{1 + i % 3}-0{1 + i % 9}', {i % 11}, 'c{i % 4}', {i})" for i in range(200)))
        cur.execute("SET enable_profile = true")
        cur.execute("SELECT city, sum(cost) FROM ev WHERE dt >= '2024-02-01' GROUP BY city")
        rows = sorted(cur.fetchall())
        (facts,) = _scans(cur).values()
        assert facts.startswith(f"TABLE: {db_conn.db.decode()}.ev(r_city), PREAGGREGATION: ON")
        assert "partitions=2/3 (p2,p3)" in facts and "tablets=8/8" in facts
        cur.execute("SELECT city, max(cost) FROM ev WHERE dt >= '2024-02-01' AND k = 3 "
                    "GROUP BY city")
        (facts,) = _scans(cur).values()
        assert "(ev), PREAGGREGATION: OFF. Reason: max(cost) is not match agg mode SUM" in facts
        assert "partitions=2/3 (p2,p3)" in facts and "tablets=2/8" in facts
        cur.execute("SET disable_nereids_rules = 'MATERIALIZED_INDEX_AGG_SCAN,PRUNE_SCANS'")
        cur.execute("SELECT city, sum(cost) FROM ev WHERE dt >= '2024-02-01' GROUP BY city")
        assert sorted(cur.fetchall()) == rows
        (facts,) = _scans(cur).values()
        assert "(ev), PREAGGREGATION: ON" in facts and "partitions=" not in facts
