"""Bitmap indexes and bloom filters end to end, over the MySQL protocol.

The same random rows (NULLs, unicode strings of many lengths, dates, decimals; eight INSERT
batches, so eight segments, and long strings, so several pages per segment) live in four tables:
with bitmap indexes (`INDEX .. USING BITMAP`), with bloom filters (`"bloom_filter_columns"`),
with both, and with none. Random predicate trees (AND / OR / NOT of =, !=, <, <=, >, >=, IN,
NOT IN, IS [NOT] NULL) return identical rows from the four, equal to DuckDB's. Then the profile
proves the pruning: on selective predicates the bitmap index and the bloom filter skip rows and
pages (SHOW QUERY PROFILE), with the same rows as the table without indexes.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.duck import insert_rows
from support.names import unique_db_name

COLUMNS = ("s", "u", "d", "m", "i")
INDEXED = ", ".join(COLUMNS)
SCHEMA = ("id INT NOT NULL, s VARCHAR(8), u VARCHAR(1000), d DATE, m DECIMAL(10, 2), i INT")
TABLES = {
    "t_none": ("", {}),
    "t_bitmap": (", " + ", ".join(f"INDEX idx_{c} ({c}) USING BITMAP" for c in COLUMNS), {}),
    "t_bloom": ("", {"bloom_filter_columns": INDEXED}),
    "t_both": (", " + ", ".join(f"INDEX idx_{c} ({c}) USING BITMAP" for c in COLUMNS),
               {"bloom_filter_columns": INDEXED, "bloom_filter_fpp": "0.02"}),
}

# value pools: the predicates draw constants from them (plus values no row holds)
S_POOL = ["a", "b", "c", "d", "e", "", "zz", "ab"]
U_WORDS = ["ü", "日本", "x", "Ω≈", "naïve", "🙂", "plain", "ÆØÅ"]
U_POOL = sorted({(w * k)[:200] for w in U_WORDS for k in (1, 3, 90)} | {""})  # long: many pages
D_POOL = [dt.date(2020, 1, 1) + dt.timedelta(days=37 * k) for k in range(30)]
M_POOL = [Decimal(v).quantize(Decimal("0.01")) for v in
          ("-12.5", "-1", "0", "0.01", "3.14", "99.99", "100", "12345.67", "-9999.99", "7.5")]
I_POOL = list(range(-15, 16))
POOLS = {"s": S_POOL, "u": U_POOL, "d": D_POOL, "m": M_POOL, "i": I_POOL}
OUTSIDE = {"s": ["q", "aa"], "u": ["nope", "日"], "d": [dt.date(1999, 12, 31)],
           "m": [Decimal("5.55")], "i": [99, -99]}
BATCHES = 8
BATCH_ROWS = 1000


def _rows() -> list[tuple[object, ...]]:
    rng = random.Random(2024)
    out = []
    ids = list(range(BATCHES * BATCH_ROWS))
    rng.shuffle(ids)

    def pick(pool: list[object], null: float) -> object:
        return None if rng.random() < null else rng.choice(pool)

    for n, rid in enumerate(ids):
        null = 0.15 if n % 3 else 0.4  # some rows with many NULLs
        out.append((rid, *(pick(p, null) for p in (S_POOL, U_POOL, D_POOL, M_POOL, I_POOL))))
    return out


def _lit(v: object, duck: bool = False) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'" if duck else f"'{v.isoformat()}'"
    return str(v)


@pytest.fixture(scope="module")
def tables(server):  # type: ignore[no-untyped-def]
    db = unique_db_name("index_property")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rows = _rows()
    with conn.cursor() as cur:
        for name, (indexes, props) in TABLES.items():
            properties = ", ".join(f'"{k}" = "{v}"' for k, v in props.items())
            cur.execute(f"CREATE TABLE {name} ({SCHEMA}{indexes}) DUPLICATE KEY(id) "
                        "DISTRIBUTED BY HASH(id) BUCKETS 1"
                        + (f" PROPERTIES ({properties})" if properties else ""))
            for start in range(0, len(rows), BATCH_ROWS):
                cur.execute(f"INSERT INTO {name} VALUES " + ", ".join(
                    "(" + ", ".join(map(_lit, r)) + ")" for r in rows[start:start + BATCH_ROWS]))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t (id INT, s VARCHAR, u VARCHAR, d DATE, m DECIMAL(10, 2), "
                 "i INT)")
    insert_rows(duck, "t", rows)
    yield conn, duck
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


# ---- random predicate trees -------------------------------------------------------------
def _constants(column: str) -> st.SearchStrategy[object]:
    return st.sampled_from(POOLS[column] + OUTSIDE[column])


@st.composite
def _leaf(draw: st.DrawFn) -> tuple[str, str]:
    """(our SQL, DuckDB's SQL) of one column test."""
    column = draw(st.sampled_from(COLUMNS))
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "IN", "NOT IN", "IS NULL",
                               "IS NOT NULL"]))
    if op in ("IS NULL", "IS NOT NULL"):
        text = f"{column} {op}"
        return text, text
    if op in ("IN", "NOT IN"):
        values = draw(st.lists(_constants(column), min_size=1, max_size=5))
        return (f"{column} {op} ({', '.join(_lit(v) for v in values)})",
                f"{column} {op} ({', '.join(_lit(v, True) for v in values)})")
    value = draw(_constants(column))
    return f"{column} {op} {_lit(value)}", f"{column} {op} {_lit(value, True)}"


def _combine(children: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
    def join(word: str, parts: list[tuple[str, str]]) -> tuple[str, str]:
        return (f" {word} ".join(f"({a})" for a, _ in parts),
                f" {word} ".join(f"({b})" for _, b in parts))

    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda ps: join("AND", ps)),
        st.lists(children, min_size=2, max_size=3).map(lambda ps: join("OR", ps)),
        children.map(lambda p: (f"NOT ({p[0]})", f"NOT ({p[1]})")),
    )


def _and(parts: list[tuple[str, str]]) -> tuple[str, str]:
    return (" AND ".join(f"({a})" for a, _ in parts), " AND ".join(f"({b})" for _, b in parts))


# A WHERE clause: a conjunction of column tests (what storage and its indexes answer) and
# AND / OR / NOT trees (OR branches are evaluated by the scan, or by storage as disjunctions).
TREES = st.recursive(_leaf(), _combine, max_leaves=5)
PREDICATES = st.lists(st.one_of(_leaf(), _leaf(), TREES), min_size=1, max_size=3).map(_and)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(PREDICATES)
def test_four_tables_agree_with_duckdb(tables, predicate: tuple[str, str]) -> None:  # type: ignore[no-untyped-def]
    conn, duck = tables
    ours, theirs = predicate
    expected = [r[0] for r in duck.execute(
        f"SELECT id FROM t WHERE {theirs} ORDER BY id").fetchall()]
    with conn.cursor() as cur:
        for name in TABLES:
            cur.execute(f"SELECT id FROM {name} WHERE {ours} ORDER BY id")
            got = [r[0] for r in cur.fetchall()]
            assert got == expected, (name, ours)


def test_simple_index_predicates_agree(tables) -> None:  # type: ignore[no-untyped-def]
    """Deterministic cases every run covers (one per operator and column kind), besides the
    random trees."""
    conn, duck = tables
    cases = [("u = 'ü'", "u = 'ü'"), ("s IN ('a', 'zz', 'q')", "s IN ('a', 'zz', 'q')"),
             ("i < -10", "i < -10"), ("u <= 'naïve'", "u <= 'naïve'"), ("s > 'b'", "s > 'b'"),
             ("d >= '2021-01-01' AND d < '2022-01-01'",
              "d >= DATE '2021-01-01' AND d < DATE '2022-01-01'"),
             ("m NOT IN (0, 3.14)", "m NOT IN (0, 3.14)"),
             ("d = '2020-02-07'", "d = DATE '2020-02-07'"), ("m >= 99.99", "m >= 99.99"),
             ("i IS NULL AND s IS NOT NULL", "i IS NULL AND s IS NOT NULL"),
             ("s = 'a' OR u = '日本'", "s = 'a' OR u = '日本'"),
             ("NOT (i IN (1, 2, 3)) AND m != 0", "NOT (i IN (1, 2, 3)) AND m != 0")]
    with conn.cursor() as cur:
        for ours, theirs in cases:
            expected = [r[0] for r in duck.execute(
                f"SELECT id FROM t WHERE {theirs} ORDER BY id").fetchall()]
            assert expected, theirs
            for name in TABLES:
                cur.execute(f"SELECT id FROM {name} WHERE {ours} ORDER BY id")
                assert [r[0] for r in cur.fetchall()] == expected, (name, ours)


# ---- counters: the profile proves the pruning ---------------------------------------------
def _profile(cur) -> dict[str, str]:  # type: ignore[no-untyped-def]
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    return dict(cur.fetchall())


def _scan_row(profile: dict[str, str]) -> dict[str, str]:
    (row,) = [v for k, v in profile.items() if k.endswith(":VOlapScanNode")]
    return dict(part.split(": ", 1) for part in row.split(", ") if ": " in part)


@pytest.fixture(scope="module")
def pruning(server):  # type: ignore[no-untyped-def]
    """Pages worth skipping: 4 segments of 12000 rows, a random-order unique `code` (zone maps
    cannot prune it; bloom filter on it) and a `mode` with one rare value (bitmap index)."""
    db = unique_db_name("index_counters")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    conn = server.connect(db)
    rng = random.Random(99)
    codes = [f"code-{n:06d}-{rng.random():.6f}" for n in range(48000)]
    rng.shuffle(codes)
    rows = [(n, codes[n], "RARE" if n % 4001 == 17 else rng.choice(["AIR", "RAIL", "SHIP"]))
            for n in range(48000)]
    with conn.cursor() as cur:
        for name, extra, props in (
                ("plain", "", ""),
                ("indexed", ", INDEX idx_mode (mode) USING BITMAP",
                 ' PROPERTIES ("bloom_filter_columns" = "code")')):
            cur.execute(f"CREATE TABLE {name} (id INT NOT NULL, code VARCHAR(40), "
                        f"mode VARCHAR(8){extra}) DUPLICATE KEY(id) "
                        f"DISTRIBUTED BY HASH(id) BUCKETS 1{props}")
            for start in range(0, len(rows), 12000):
                cur.execute(f"INSERT INTO {name} VALUES " + ", ".join(
                    f"({i}, '{c}', '{m}')" for i, c, m in rows[start:start + 12000]))
    yield conn, rows
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {db}")
    conn.close()


def _run(cur, sql: str) -> tuple[list[tuple], dict[str, str], dict[str, str]]:  # type: ignore[no-untyped-def]
    cur.execute(sql)
    rows = sorted(cur.fetchall())
    profile = _profile(cur)
    return rows, profile, _scan_row(profile)


def test_bloom_filter_skips_pages_for_a_point_lookup(pruning) -> None:  # type: ignore[no-untyped-def]
    conn, rows = pruning
    wanted = rows[30123][1]
    with conn.cursor() as cur:
        cur.execute("SET enable_profile = true")
        got, totals, scan = _run(cur, f"SELECT id, code, mode FROM indexed WHERE code = '{wanted}'")
        plain, _, plain_scan = _run(cur, f"SELECT id, code, mode FROM plain "
                                         f"WHERE code = '{wanted}'")
        cur.execute("SET enable_profile = false")
    assert got == plain == [tuple(rows[30123])]
    # every segment but the one holding the code has all its pages dropped by bloom filters
    assert int(scan["PagesFilteredByBloomFilter"]) > 0
    assert int(scan["RowsBloomFilterFiltered"]) >= 30000
    assert totals["RowsBloomFilterFiltered"] == scan["RowsBloomFilterFiltered"]
    assert plain_scan["RowsBloomFilterFiltered"] == "0"
    assert plain_scan["PagesFilteredByBloomFilter"] == "0"
    assert int(plain_scan["RowsVectorPredFiltered"]) > int(scan["RowsVectorPredFiltered"])


def test_bitmap_index_selects_rows_before_decoding(pruning) -> None:  # type: ignore[no-untyped-def]
    conn, rows = pruning
    expected = sorted((i, c) for i, c, m in rows if m == "RARE")
    with conn.cursor() as cur:
        cur.execute("SET enable_profile = true")
        got, totals, scan = _run(cur, "SELECT id, code FROM indexed WHERE mode = 'RARE'")
        plain, _, plain_scan = _run(cur, "SELECT id, code FROM plain WHERE mode = 'RARE'")
        cur.execute("SET enable_profile = false")
    assert got == plain == expected and len(expected) == 12
    # the bitmap answers mode = 'RARE' exactly: every other row is skipped unread, and the
    # `code` pages holding no selected row are never decoded
    assert int(scan["RowsBitmapIndexFiltered"]) == 48000 - 12 - int(scan["RowsStatsFiltered"]) \
        - int(scan["RowsKeyRangeFiltered"])
    assert int(scan["PagesFilteredByBitmapIndex"]) > 0
    assert totals["RowsBitmapIndexFiltered"] == scan["RowsBitmapIndexFiltered"]
    assert plain_scan["RowsBitmapIndexFiltered"] == "0"
    assert int(plain_scan["RowsVectorPredFiltered"]) == 48000 - 12


def test_runtime_filter_in_list_prunes_pages_with_bloom_filter_and_bitmap(pruning) -> None:  # type: ignore[no-untyped-def]
    """A join on a string key whose build side keeps three keys sends the fact scan an `in`
    list: the fact table's bloom filter drops the pages holding none of them, and on `mode`
    the bitmap index answers it, with the same rows as without runtime filters."""
    conn, rows = pruning
    picked = [rows[n] for n in (5, 20000, 47000)]
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE wanted (code VARCHAR(40), mode VARCHAR(8), tag INT) "
                    "DUPLICATE KEY(code) DISTRIBUTED BY HASH(code) BUCKETS 1")
        cur.execute("INSERT INTO wanted VALUES " + ", ".join(
            f"('{c}', 'RARE', {k})" for k, (_, c, _) in enumerate(picked)) +
            ", ('none', 'NONE', 9)" * 40)
        cur.execute("SET enable_profile = true")
        sql = ("SELECT f.id, f.code FROM indexed f JOIN wanted w ON f.code = w.code "
               "WHERE w.tag < 3")
        got = _rows_of(cur, sql)
        fact = _fact_row(cur)
        cur.execute("SET runtime_filter_mode = 'OFF'")
        off = _rows_of(cur, sql)
        fact_off = _fact_row(cur)
        cur.execute("SET runtime_filter_mode = 'GLOBAL'")
        sql = ("SELECT f.id, f.mode FROM indexed f JOIN wanted w ON f.mode = w.mode "
               "WHERE w.tag = 1")
        by_mode = _rows_of(cur, sql)
        mode_scan = _fact_row(cur)
        cur.execute("SET enable_profile = false")
    assert got == off == sorted((i, c) for i, c, _ in picked)
    assert fact["RuntimeFilters"] == "in" and "RuntimeFilters" not in fact_off
    assert int(fact["PagesFilteredByBloomFilter"]) > 0 and fact_off["PagesFilteredByBloomFilter"] == "0"
    assert int(fact["RowsReturned"]) == 3
    assert by_mode == sorted((i, m) for i, _, m in rows if m == "RARE")
    assert mode_scan["RuntimeFilters"] == "in"
    assert int(mode_scan["RowsBitmapIndexFiltered"]) > 40000


def _fact_row(cur) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The counters of the newest profile's scan of `indexed` (the one with the most rows)."""
    profile = _profile(cur)
    scans = [dict(part.split(": ", 1) for part in v.split(", ") if ": " in part)
             for k, v in profile.items() if k.endswith(":VOlapScanNode")]
    return max(scans, key=lambda c: int(c["RowsTotal"]))


def _rows_of(cur, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    cur.execute(sql)
    return sorted(cur.fetchall())
