"""Index visibility through the wire: EXPLAIN VERBOSE names, per scan filter, the index that will
serve it (short key, bitmap index, bloom filter, zone map, or none), plain EXPLAIN stays Doris'
text, and SHOW QUERY PROFILE gives each scan its own index counters under Doris' names."""

from __future__ import annotations

import re

import pytest

TABLE = """CREATE TABLE ev (
    k INT NOT NULL, dt DATE, mode VARCHAR(16), name VARCHAR(32), score DOUBLE, v BIGINT,
    INDEX idx_mode (mode) USING BITMAP COMMENT 'low cardinality')
    DUPLICATE KEY(k, dt) DISTRIBUTED BY HASH(k) BUCKETS 2
    PROPERTIES ("bloom_filter_columns" = "name, v", "replication_num" = "1")"""


def _explain(cur, sql: str, verbose: bool = True) -> list[str]:
    cur.execute(("EXPLAIN VERBOSE " if verbose else "EXPLAIN ") + sql)
    return [r[0] for r in cur.fetchall()]


def _usage(lines: list[str]) -> dict[str, str]:
    """The scan's `index:` line as {filter text: indexes}."""
    (line,) = [x.strip() for x in lines if x.strip().startswith("index: ")]
    out = {}
    for part in line[len("index: "):].split("; "):
        text, _, served = part.rpartition(" -> ")
        out[re.sub(r"\[#\d+\]|`", "", text)] = served
    return out


@pytest.fixture
def ev(db_conn):  # type: ignore[no-untyped-def]
    with db_conn.cursor() as cur:
        cur.execute(TABLE)
        cur.execute("INSERT INTO ev VALUES (1, '2024-01-01', 'AIR', 'ann', 1.5, 10), "
                    "(2, '2024-01-02', 'RAIL', 'bob', NULL, 20), (3, NULL, NULL, NULL, 2.5, 30)")
    return db_conn


def test_explain_verbose_names_the_index_of_each_filter(ev) -> None:  # type: ignore[no-untyped-def]
    with ev.cursor() as cur:
        usage = _usage(_explain(cur, "SELECT * FROM ev WHERE k = 1 AND dt > '2024-01-01' "
                                     "AND mode = 'AIR' AND name IN ('ann', 'x') AND v > 5 "
                                     "AND score = 1.5 AND abs(v) > 3 AND mode != 'SHIP'"))
        assert usage == {
            # k = 1 fixes the first key column, so the range on dt narrows the key too
            "(k = 1)": "short key, zone map",
            "(dt > '2024-01-01')": "short key, zone map",
            "(mode = 'AIR')": "bitmap index, zone map",
            "(mode != 'SHIP')": "bitmap index, zone map",
            "name IN ('ann', 'x')": "bloom filter, zone map",
            "(v > 5)": "zone map",  # a bloom filter only answers =, IN and IS NULL
            "(score = 1.5)": "zone map",
            "(abs(v) > 3)": "none (row evaluation)",
        }
        # a range on the first key column ends the key: dt gets no key range
        usage = _usage(_explain(cur, "SELECT k FROM ev WHERE k > 1 AND dt = '2024-01-02' "
                                     "AND name IS NULL"))
        assert usage == {"(k > 1)": "short key, zone map", "(dt = '2024-01-02')": "zone map",
                         "name IS NULL": "bloom filter, zone map"}
        cur.execute("SELECT k FROM ev WHERE k > 1 AND dt = '2024-01-02'")
        assert cur.fetchall() == ((2,),)


def test_plain_explain_and_unfiltered_scans_print_no_index_line(ev) -> None:  # type: ignore[no-untyped-def]
    with ev.cursor() as cur:
        plain = _explain(cur, "SELECT * FROM ev WHERE mode = 'AIR'", verbose=False)
        assert not any("index:" in line for line in plain)
        assert any(line.strip() == "PREDICATES: (`mode` = 'AIR')" for line in plain), plain
        verbose = _explain(cur, "SELECT count(*) FROM ev")
        assert not any("index:" in line for line in verbose)


def _node_rows(cur) -> dict[str, str]:  # type: ignore[no-untyped-def]
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    return dict(cur.fetchall())


def _counters(row: str) -> dict[str, str]:
    return dict(part.split(": ", 1) for part in row.split(", ") if ": " in part)


def test_profile_gives_each_scan_its_index_counters(db_conn) -> None:  # type: ignore[no-untyped-def]
    """Two scans of one query: each scan's row counts what the indexes pruned for it alone;
    the query's totals add them up, under Doris' counter names."""
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE f (k INT NOT NULL, v INT NOT NULL) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("CREATE TABLE d (k INT NOT NULL, w INT NOT NULL) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
        for start in range(0, 20000, 5000):  # four rowsets of disjoint v ranges
            cur.execute("INSERT INTO f VALUES " + ", ".join(
                f"({i % 50}, {i})" for i in range(start, start + 5000)))
        cur.execute("INSERT INTO d VALUES " + ", ".join(f"({i}, {i})" for i in range(50)))
        cur.execute("SET enable_profile = true")
        cur.execute("SELECT count(*) FROM f JOIN d ON f.k = d.k WHERE f.v < 5000 AND d.w >= 0")
        assert cur.fetchall() == ((5000,),)
        rows = _node_rows(cur)
        scans = {k: _counters(v) for k, v in rows.items() if k.endswith(":VOlapScanNode")}
        assert len(scans) == 2
        fact = next(c for c in scans.values() if int(c["RowsStatsFiltered"]) > 0)
        dim = next(c for c in scans.values() if c is not fact)
        assert int(fact["RowsStatsFiltered"]) == 15000 and dim["RowsStatsFiltered"] == "0"
        for c in scans.values():
            assert c["RowsBitmapIndexFiltered"] == "0" and c["RowsBloomFilterFiltered"] == "0"
            assert c["PagesFilteredByBitmapIndex"] == "0"
            assert c["PagesFilteredByBloomFilter"] == "0"
            assert re.fullmatch(r"\d+(\.\d{3}us|\.\d{3}ms|ns)",
                                c["BlockConditionsFilteredBloomFilterTime"])
            assert re.fullmatch(r"\d+(\.\d{3}us|\.\d{3}ms|ns)", c["BitmapIndexFilterTimer"])
        assert rows["RowsStatsFiltered"] == "15000"
        for name in ("RowsBitmapIndexFiltered", "RowsBloomFilterFiltered",
                     "PagesFilteredByBitmapIndex", "PagesFilteredByBloomFilter",
                     "BitmapIndexFilterTimer", "BlockConditionsFilteredBloomFilterTime"):
            assert name in rows
        cur.execute("SET enable_profile = false")


def test_explain_verbose_names_the_index_of_each_runtime_filter(ev) -> None:  # type: ignore[no-untyped-def]
    """A string-key runtime filter may come as an `in` list (served by the column's bitmap
    index / bloom filter and zone maps) or a bloom filter of the keys (min / max for zone
    maps); an integer key set prunes with its min / max, through the short key when the column
    leads the key."""
    with ev.cursor() as cur:
        cur.execute("CREATE TABLE dim (k INT NOT NULL, name VARCHAR(32), mode VARCHAR(16)) "
                    "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("INSERT INTO dim VALUES (1, 'ann', 'AIR')")
        lines = _explain(cur, "SELECT ev.v FROM ev JOIN dim ON ev.name = dim.name "
                              "AND ev.mode = dim.mode AND ev.k = dim.k WHERE dim.k > 0")
        (line,) = [x.strip() for x in lines if x.strip().startswith("runtime filter index: ")]
        parts = sorted(re.sub(r"\[#\d+\]", "", re.sub(r"RF\d+", "RF", p)) for p in
                       line[len("runtime filter index: "):].split("; "))
        assert parts == sorted([
            "RF[in] -> name: bloom filter, zone map",
            "RF[bloom] -> name: zone map (min / max)",
            "RF[in] -> mode: bitmap index, zone map",
            "RF[bloom] -> mode: zone map (min / max)",
            "RF[bitmap] -> k: short key, zone map (min / max)",
        ])
        # an integer key set of at most 1024 keys is looked up in bitmap indexes / bloom filters
        cur.execute("CREATE TABLE ints (id INT NOT NULL, v BIGINT, INDEX iv (v) USING BITMAP) "
                    "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 "
                    'PROPERTIES ("bloom_filter_columns" = "v")')
        lines = _explain(cur, "SELECT ints.id FROM ints JOIN dim ON ints.v = dim.k")
        (line,) = [x.strip() for x in lines if x.strip().startswith("runtime filter index: ")]
        assert re.sub(r"RF\d+", "RF", line) == (
            "runtime filter index: RF[bitmap] -> v: bitmap index (<= 1024 keys), "
            "bloom filter (<= 1024 keys), zone map (min / max)")
        # an OR tree storage evaluates is served by the bitmap indexes when all its columns
        # have one, and by page zone maps; an OR with an expression stays with the scan
        usage = _usage(_explain(cur, "SELECT k FROM ev WHERE (mode = 'AIR' OR mode IS NULL) "
                                     "AND (mode = 'RAIL' OR name = 'bob')"))
        assert usage == {"((mode = 'AIR') OR mode IS NULL)": "bitmap index, zone map",
                         "((mode = 'RAIL') OR (name = 'bob'))": "zone map"}
        usage = _usage(_explain(cur, "SELECT k FROM ev WHERE mode = 'AIR' OR abs(v) > 3"))
        assert usage == {"((mode = 'AIR') OR (abs(v) > 3))": "none (row evaluation)"}
        plain = _explain(cur, "SELECT ev.v FROM ev JOIN dim ON ev.name = dim.name", False)
        assert not any("runtime filter index" in x for x in plain)
