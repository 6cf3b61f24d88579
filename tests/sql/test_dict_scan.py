"""String predicates on dictionary codes, end to end over the MySQL protocol.

A table of four INSERT batches (four segments) whose low-cardinality string column is
dictionary-encoded: AIR / RAIL alternate in three segments, MAIL / SHIP in the fourth, with
NULLs and empty strings. Every storage operator on it returns DuckDB's rows (full scans test
merged dictionaries, key-range scans page dictionaries), and the profile shows the pages whose
dictionary holds no wanted value skipped (`PagesFilteredByDictionary`): 'MAIL' lies inside the
AIR..RAIL zone maps, so only the dictionaries can rule those pages out.
"""

from __future__ import annotations

import duckdb
import pytest
from support.names import unique_db_name

ROWS_PER_SEGMENT = 12000


def _mode(seg: int, n: int) -> str | None:
    if n % 97 == 5:
        return None
    if n % 89 == 3:
        return ""
    return ("AIR", "RAIL")[n % 2] if seg < 3 else ("MAIL", "SHIP", "日本")[n % 3]


@pytest.fixture(scope="module")
def modes(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("dict_scan")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rows = [(seg * ROWS_PER_SEGMENT + n, _mode(seg, n), f"c{n}")
            for seg in range(4) for n in range(ROWS_PER_SEGMENT)]
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT NOT NULL, mode VARCHAR(8), city VARCHAR(20)) "
                    "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
        for seg in range(4):
            part = rows[seg * ROWS_PER_SEGMENT:(seg + 1) * ROWS_PER_SEGMENT]
            cur.execute("INSERT INTO t VALUES " + ", ".join(
                f"({i}, {'NULL' if m is None else repr(m)}, '{c}')" for i, m, c in part))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (id INT, mode VARCHAR, city VARCHAR)")
    duck.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    yield conn, duck
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


FILTERS = ["mode = 'MAIL'", "mode = ''", "mode != 'AIR'", "mode < 'MAIL'", "mode <= 'MAIL'",
           "mode > 'RAIL'", "mode >= 'SHIP'", "mode IN ('MAIL', '日本', 'nope')",
           "mode NOT IN ('AIR', '')", "mode IS NULL", "mode IS NOT NULL",
           "mode = 'MAIL' AND city = 'c30'", "mode > 'A' AND mode < 'S'",
           "mode IN ('AIR', '') AND id < 3000", "mode != 'RAIL' AND id > 43000"]


@pytest.mark.parametrize("where", FILTERS)
def test_string_filters_match_duckdb(modes, where: str) -> None:  # type: ignore[no-untyped-def]
    conn, duck = modes
    sql = f"SELECT id, mode, city FROM t WHERE {where} ORDER BY id"
    with conn.cursor() as cur:
        cur.execute(sql)
        got = [tuple(r) for r in cur.fetchall()]
    assert got == duck.execute(sql).fetchall()


def test_dictionaries_skip_pages(modes) -> None:  # type: ignore[no-untyped-def]
    """A scan of a small part of a segment (the key range: page by page) skips the pages whose
    dictionary lacks 'MAIL'. (A scan of most of a segment merges the page dictionaries and
    tests the whole column with one lookup instead: no page to skip.)"""
    conn, duck = modes
    sql = "SELECT count(*), max(city) FROM t WHERE mode = 'MAIL' AND id < 2500"
    with conn.cursor() as cur:
        cur.execute("SET enable_profile = true")
        cur.execute(sql)
        got = tuple(cur.fetchone())
        cur.execute('SHOW QUERY PROFILE "/"')
        latest = cur.fetchone()[0]
        cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
        profile = dict(cur.fetchall())
        cur.execute("SET enable_profile = false")
    assert got == duck.execute(sql).fetchone() == (0, None)
    (row,) = [v for k, v in profile.items() if k.endswith(":VOlapScanNode")]
    scan = dict(part.split(": ", 1) for part in row.split(", ") if ": " in part)
    assert int(scan["PagesFilteredByDictionary"]) >= 1
