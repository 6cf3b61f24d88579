"""Over the wire, random queries on a partitioned AGGREGATE table with rollups return the same
rows with pruning and rollup choice on, with both switched off (`SET disable_nereids_rules`),
and in DuckDB over the merged rows."""

from __future__ import annotations

import decimal
import random

import duckdb

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


def _norm(rows) -> list[tuple]:
    out = []
    for r in rows:
        vals = []
        for x in r:
            if isinstance(x, (float, decimal.Decimal)):
                x = round(float(x), 4)
            elif hasattr(x, "isoformat"):
                x = x.isoformat()
            vals.append(x)
        out.append(tuple(vals))
    return sorted(out, key=repr)


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
        duck.executemany("INSERT INTO raw VALUES (?, ?, ?, ?, ?, ?)", rows)
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
        on = _norm(cur.fetchall())
        cur.execute("SET disable_nereids_rules = 'PRUNE_SCANS,CHOOSE_ROLLUP'")
        cur.execute(sql)
        off = _norm(cur.fetchall())
        assert on == off, sql
        assert on == _norm(duck.execute(sql).fetchall()), sql
