"""Scan -> filter -> global aggregate, end to end over the MySQL protocol against DuckDB.

The table has five INSERT batches (five segments, each sorted by its DUPLICATE key `dt`), with
NULLs in every value column. Global aggregates of the shapes the fused kernel runs
(executor/fused_aggregate.py: SUM / AVG / MIN / MAX / COUNT of integer and DECIMAL products,
sums and widening casts, of DOUBLE columns) and residual filters whose constants are folded
into storage predicates (planner/rules/fold_constants.py: DATE + INTERVAL, DECIMAL arithmetic) return
DuckDB's rows, including when every row is filtered out; the folded date predicate is used by
storage (the profile's zone-map counters move), as TPC-H Q6's is.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import duckdb
import pytest
from support.names import unique_db_name

ROWS_PER_SEGMENT = 6000
DDL = ("(dt DATE NOT NULL, qty TINYINT, price DECIMAL(15,2), disc DECIMAL(15,2), "
       "big BIGINT, f DOUBLE, tag VARCHAR(10))")


def _rows() -> list[tuple]:  # type: ignore[type-arg]
    rng = random.Random(17)
    base = dt.date(1994, 1, 1)
    out = []
    for seg in range(5):
        for i in range(ROWS_PER_SEGMENT):
            def maybe(v: object) -> object:
                return None if rng.random() < 0.07 else v
            out.append((base + dt.timedelta(days=seg * 150 + i // 40),
                        maybe(rng.randint(1, 50)),
                        maybe(Decimal(rng.randint(90000, 10000000)).scaleb(-2)),
                        maybe(Decimal(rng.randint(0, 10)).scaleb(-2)),
                        maybe(rng.randint(-10 ** 12, 10 ** 12)),
                        maybe(round(rng.uniform(-100, 100), 3)),
                        maybe(rng.choice(["a", "", "日本"]))))
    return out


def _lit(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str | dt.date):
        return f"'{v}'"
    return str(v)


@pytest.fixture(scope="module")
def tables(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("scan_pipeline")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rows = _rows()
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE t {DDL} DUPLICATE KEY(dt) DISTRIBUTED BY HASH(dt) BUCKETS 1")
        for seg in range(5):
            part = rows[seg * ROWS_PER_SEGMENT:(seg + 1) * ROWS_PER_SEGMENT]
            cur.execute("INSERT INTO t VALUES " + ", ".join(
                "(" + ", ".join(_lit(v) for v in r) + ")" for r in part))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (dt DATE, qty TINYINT, price DECIMAL(15,2), "
                 "disc DECIMAL(15,2), big BIGINT, f DOUBLE, tag VARCHAR)")
    duck.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    yield conn, duck
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


AGGREGATES = [
    "sum(price * disc)",
    "sum(price * (1 - disc)), count(*)",
    "sum(qty), avg(qty), min(qty), max(qty), count(qty)",
    "avg(price), min(disc), max(price)",
    "sum(big), min(-big), max(big + qty)",
    "sum(f), min(f), max(f), count(f)",
]
WHERES = [
    "",
    ("WHERE dt >= date '1994-03-01' AND dt < date '1994-03-01' + interval '1' year "
     "AND disc BETWEEN 0.06 - 0.01 AND 0.06 + 0.01 AND qty < 24"),
    "WHERE dt <= date '1995-12-01' - interval '90' day",
    "WHERE qty * 2 < 10 + 20",
    "WHERE dt > date '2001-01-01' - interval '1' month",  # no row
    "WHERE tag = '日本' AND big > 0",
]


def _close(got: object, want: object) -> bool:
    """Exact for integers and NULLs; DOUBLE sums to 1e-9 relative (summation order); AVG of a
    DECIMAL to its 6th decimal (Doris truncates the quotient at scale 6, DuckDB gives a
    DOUBLE)."""
    if isinstance(got, float | Decimal) and isinstance(want, float | Decimal):
        g, w = float(got), float(want)
        return abs(g - w) <= max(1e-9 * abs(w), 2e-6)
    return got == want


@pytest.mark.parametrize("where", WHERES)
@pytest.mark.parametrize("select", AGGREGATES)
def test_global_aggregates_match_duckdb(tables, select: str, where: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = tables
    sql = f"SELECT {select} FROM t {where}"
    with conn.cursor() as cur:
        cur.execute(sql)
        got = cur.fetchall()
    want = duck.execute(sql.replace("interval '1' year", "interval 1 year")
                        .replace("interval '90' day", "interval 90 day")
                        .replace("interval '1' month", "interval 1 month")).fetchall()
    assert len(got) == len(want) == 1
    assert all(_close(g, w) for g, w in zip(got[0], want[0])), (got, want)


def test_grouped_aggregate_unchanged(tables) -> None:  # type: ignore[no-untyped-def]
    """GROUP BY keeps the general operators; same rows as DuckDB."""
    conn, duck = tables
    sql = ("SELECT tag, sum(price * disc), count(*) FROM t WHERE qty < 10 "
           "GROUP BY tag ORDER BY tag")
    with conn.cursor() as cur:
        cur.execute(sql)
        got = [tuple(r) for r in cur.fetchall()]
    assert got == duck.execute(sql.replace("ORDER BY tag", "ORDER BY tag NULLS FIRST")).fetchall()


def test_folded_date_predicate_prunes_with_zone_maps(tables) -> None:  # type: ignore[no-untyped-def]
    """`dt < date '1994-01-01' + interval '2' month` is a storage predicate once folded:
    the rows outside it are skipped by the indexes (zone maps, short key) before decoding."""
    conn, duck = tables
    sql = "SELECT count(*), sum(qty) FROM t WHERE dt < date '1994-01-01' + interval '2' month"
    with conn.cursor() as cur:
        cur.execute("SET enable_profile = true")
        cur.execute(sql)
        got = tuple(cur.fetchone())
        cur.execute('SHOW QUERY PROFILE "/"')
        latest = cur.fetchone()[0]
        cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
        profile = dict(cur.fetchall())
        cur.execute("SET enable_profile = false")
    want = duck.execute(sql.replace("interval '2' month", "interval 2 month")).fetchone()
    assert got == want
    (row,) = [v for k, v in profile.items() if k.endswith(":VOlapScanNode")]
    scan = dict(part.split(": ", 1) for part in row.split(", ") if ": " in part)
    # by the zone maps, or by the short-key index once compaction merged the segments
    skipped = int(scan["RowsStatsFiltered"]) + int(scan["RowsKeyRangeFiltered"])
    assert skipped >= 4 * ROWS_PER_SEGMENT, scan
