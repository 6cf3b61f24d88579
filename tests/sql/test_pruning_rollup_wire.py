"""Over the wire, random queries on a partitioned AGGREGATE table with rollups return the same
rows with pruning and rollup choice on, with both switched off (`SET disable_nereids_rules`),
and in DuckDB over the merged rows."""

from __future__ import annotations

import random

import duckdb
from support.duck import insert_rows
from support.rows import normalize_rows

FILTERS = [
    "dt = '2024-02-03'",
    "dt < '2024-02-01'",
    "dt BETWEEN '2024-01-20' AND '2024-03-05'",
    "dt IN ('2024-01-02', '2024-03-03')",
    "k = 3",
    "k IN (1, 4)",
    "city = 'sh'",
    "s > 50",
    "dt >= '2024-03-01' OR k = 2",
]
SELECTS = [
    ("k, sum(s)", "k"),
    ("city, sum(s), max(mx)", "city"),
    ("city, k, min(mn)", "city, k"),
    ("count(*)", None),
    ("dt, sum(s)", "dt"),
    ("k, max(mx), count(DISTINCT city)", "k"),
    ("city, avg(s)", "city"),
]




def test_random_queries_equal_with_and_without_planner_rules(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("""CREATE TABLE fact (dt DATE, k INT, city VARCHAR(4),
            s BIGINT SUM, mx INT MAX, mn INT MIN)
        AGGREGATE KEY(dt, k, city)
        PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-02-01"),
          PARTITION p2 VALUES LESS THAN ("2024-03-01"), PARTITION p3 VALUES LESS THAN MAXVALUE)
        DISTRIBUTED BY HASH(k) BUCKETS 3
        ROLLUP (r_k(k, s, mx), r_city(city, k, mn), r_dt(dt, s))""")
    rnd = random.Random(21)
    duck = duckdb.connect()
    duck.execute("CREATE TABLE raw (dt DATE, k INT, city VARCHAR, s BIGINT, mx INT, mn INT)")
    days = [f"2024-0{m}-0{d}" for m in (1, 2, 3) for d in range(1, 8)]
    for _ in range(3):
        rows = [
            (
                rnd.choice(days),
                rnd.randrange(6),
                rnd.choice(["bj", "sh", "gz"]),
                rnd.randrange(100),
                rnd.randrange(100),
                rnd.randrange(100),
            )
            for _ in range(150)
        ]
        cur.execute(
            "INSERT INTO fact VALUES "
            + ", ".join(f"('{a}', {b}, '{c}', {d}, {e}, {f})" for a, b, c, d, e, f in rows)
        )
        insert_rows(duck, "raw", rows)
    duck.execute(
        "CREATE VIEW fact AS SELECT dt, k, city, sum(s) AS s, max(mx) AS mx, "
        "min(mn) AS mn FROM raw GROUP BY dt, k, city"
    )
    for _ in range(40):
        select, group = rnd.choice(SELECTS)
        where = " AND ".join(f"({f})" for f in rnd.sample(FILTERS, rnd.randrange(3)))
        sql = (
            f"SELECT {select} FROM fact"
            + (f" WHERE {where}" if where else "")
            + (f" GROUP BY {group}" if group else "")
        )
        cur.execute("SET disable_nereids_rules = ''")
        cur.execute(sql)
        on = normalize_rows(cur.fetchall())
        cur.execute("SET disable_nereids_rules = 'PRUNE_SCANS,CHOOSE_ROLLUP'")
        cur.execute(sql)
        off = normalize_rows(cur.fetchall())
        assert on == off, sql
        assert on == normalize_rows(duck.execute(sql).fetchall()), sql


def _d(day: int) -> str:
    return f"2024-01-{day:02d}"


def test_multi_column_range_pruning_over_the_wire(db_conn) -> None:
    """PARTITION BY RANGE(a, b, c) with LESS THAN and [lo, hi) bounds: every partition column
    prunes (EXPLAIN's partitions=k/n), and random filters return the same rows with pruning on,
    off, and in DuckDB."""
    cur = db_conn.cursor()
    cur.execute(f"""CREATE TABLE m3 (a INT, b INT, c DATE, v BIGINT) DUPLICATE KEY(a, b, c)
        PARTITION BY RANGE(a, b, c) (
          PARTITION p1 VALUES LESS THAN ("1", "5", "{_d(13)}"),
          PARTITION p2 VALUES LESS THAN ("1", "8"),
          PARTITION p3 VALUES [("1", "8"), ("2", "3", "{_d(7)}")),
          PARTITION p4 VALUES LESS THAN ("3"),
          PARTITION p5 VALUES [("3", "1", "{_d(2)}"), ("3", "1", "{_d(11)}")))
        DISTRIBUTED BY HASH(v) BUCKETS 2""")
    rnd = random.Random(4)

    def route(key: tuple[int, int, int]) -> bool:
        return key < (3,) or (3, 1, 2) <= key < (3, 1, 11)

    keys = [(a, b, c) for a in range(-1, 4) for b in range(0, 10) for c in range(1, 17)]
    keys = [k for k in keys if route(k)]
    rows = [(a, b, _d(c), rnd.randrange(100)) for a, b, c in (rnd.choice(keys) for _ in range(300))]
    cur.execute("INSERT INTO m3 VALUES " + ", ".join(f"({a}, {b}, '{c}', {v})" for a, b, c, v in rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE m3 (a INT, b INT, c DATE, v BIGINT)")
    insert_rows(duck, "m3", rows)

    def partitions(where: str) -> str:
        cur.execute("SET disable_nereids_rules = ''")
        cur.execute(f"EXPLAIN SELECT v FROM m3 WHERE {where}")
        text = "\n".join(r[0] for r in cur.fetchall())
        return text.split("partitions=", 1)[1].split("\n", 1)[0].strip()

    assert partitions(f"a = 1 AND b = 5 AND c >= '{_d(13)}'") == "1/5 (p2)"
    assert partitions(f"a = 1 AND b = 5 AND c < '{_d(13)}'") == "1/5 (p1)"
    assert partitions(f"a = 2 AND b = 3 AND c > '{_d(6)}'") == "1/5 (p4)"
    assert partitions(f"a = 3 AND b = 1 AND c BETWEEN '{_d(3)}' AND '{_d(4)}'") == "1/5 (p5)"
    assert partitions(f"a = 3 AND b = 1 AND c >= '{_d(11)}'") == "0/5 ()"

    atoms = [f"a {op} {x}" for op in ("=", "<", ">=") for x in (0, 1, 2, 3)]
    atoms += [f"b {op} {x}" for op in ("=", "<=", ">") for x in (1, 3, 5, 8)]
    atoms += [f"c {op} '{_d(x)}'" for op in ("=", "<", ">", ">=") for x in (2, 6, 7, 11, 13)]
    for _ in range(40):
        where = " AND ".join(rnd.sample(atoms, rnd.randrange(1, 4)))
        if rnd.random() < 0.3:
            where = f"({where}) OR ({rnd.choice(atoms)})"
        sql = f"SELECT a, b, c, v FROM m3 WHERE {where}"
        cur.execute("SET disable_nereids_rules = ''")
        cur.execute(sql)
        on = normalize_rows(cur.fetchall())
        cur.execute("SET disable_nereids_rules = 'PRUNE_SCANS'")
        cur.execute(sql)
        off = normalize_rows(cur.fetchall())
        assert on == off, sql
        assert on == normalize_rows(duck.execute(sql).fetchall()), sql
