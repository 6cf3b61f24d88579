"""Stream Load of an SSB-lineorder-like CSV (`|`-separated, 17 columns, 300k rows: many
reader blocks, several 64k-row conversion batches, 7 yearly range partitions x 8 hash
buckets) through curl: the rows ShaleDB returns equal DuckDB's reading of the same file,
and a few bad lines deep in the file are filtered with the rest loaded. Covers the load path
end to end: the body parsed on its own thread (executor/load/prefetch.py), conversion without
a separate UTF-8 pass for typed columns, the tablet split, the memtables' key-at-a-time sort
(storage/memtable.py) and the segments written at commit."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
from support.rows import normalize_rows
from support.stream_load import curl_load

INT_COLUMNS = ["lo_orderkey", "lo_linenumber", "lo_custkey", "lo_partkey", "lo_suppkey",
               "lo_shippriority", "lo_quantity", "lo_extendedprice", "lo_ordtotalprice",
               "lo_discount", "lo_revenue", "lo_supplycost", "lo_tax", "lo_commitdate"]
DDL = """CREATE TABLE lo (lo_orderdate INT NOT NULL, lo_orderkey INT NOT NULL,
  lo_linenumber INT NOT NULL, lo_custkey INT NOT NULL, lo_partkey INT NOT NULL,
  lo_suppkey INT NOT NULL, lo_orderpriority VARCHAR(16) NOT NULL, lo_shippriority INT NOT NULL,
  lo_quantity INT NOT NULL, lo_extendedprice INT NOT NULL, lo_ordtotalprice INT NOT NULL,
  lo_discount INT NOT NULL, lo_revenue INT NOT NULL, lo_supplycost INT NOT NULL,
  lo_tax INT NOT NULL, lo_commitdate INT NOT NULL, lo_shipmode VARCHAR(11) NOT NULL)
DUPLICATE KEY(lo_orderdate, lo_orderkey)
PARTITION BY RANGE(lo_orderdate) (
  PARTITION p1992 VALUES [("-2147483648"), ("19930101")),
  PARTITION p1993 VALUES [("19930101"), ("19940101")),
  PARTITION p1994 VALUES [("19940101"), ("19950101")),
  PARTITION p1995 VALUES [("19950101"), ("19960101")),
  PARTITION p1996 VALUES [("19960101"), ("19970101")),
  PARTITION p1997 VALUES [("19970101"), ("19980101")),
  PARTITION p1998 VALUES [("19980101"), ("19990101")))
DISTRIBUTED BY HASH(lo_orderkey) BUCKETS 8 PROPERTIES ("replication_num" = "1")"""


def write_lineorder(path: Path, n: int, seed: int = 13) -> None:
    rng = np.random.default_rng(seed)
    years = rng.integers(1992, 1999, n)
    dates = years * 10000 + rng.integers(1, 13, n) * 100 + rng.integers(1, 29, n)
    orderkey = np.cumsum(rng.integers(0, 2, n)) + 1  # in file order, ties: several lines
    cols: dict[str, pa.Array] = {"lo_orderdate": pa.array(dates.astype(np.int32))}
    for name in INT_COLUMNS:
        values = orderkey if name == "lo_orderkey" else \
            rng.integers(-(2**31), 2**31 - 1, n) if name == "lo_revenue" else \
            rng.integers(0, 10**7, n)
        cols[name] = pa.array(values.astype(np.int32))
    prio = np.array(["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW", "", "Ünïcødé"])
    cols["lo_orderpriority"] = pa.array(prio[rng.integers(0, len(prio), n)])
    modes = np.array(["AIR", "MAIL", "RAIL", "SHIP", "TRUCK", "REG AIR", "FOB"])
    cols["lo_shipmode"] = pa.array(modes[rng.integers(0, len(modes), n)])
    order = ["lo_orderdate", "lo_orderkey", "lo_linenumber", "lo_custkey", "lo_partkey",
             "lo_suppkey", "lo_orderpriority", "lo_shippriority", "lo_quantity",
             "lo_extendedprice", "lo_ordtotalprice", "lo_discount", "lo_revenue",
             "lo_supplycost", "lo_tax", "lo_commitdate", "lo_shipmode"]
    pacsv.write_csv(pa.table({k: cols[k] for k in order}), path, pacsv.WriteOptions(
        include_header=False, delimiter="|", quoting_style="none"))


def test_lineorder_rows_equal_duckdb_reading_the_same_file(server, db, db_conn,
                                                           tmp_path) -> None:
    path = tmp_path / "lineorder.csv"
    n = 300_000
    write_lineorder(path, n)
    lines = path.read_bytes().split(b"\n")
    # three bad lines deep in the file: a value out of INT range, too few columns, a date no
    # partition takes; each filtered, the rest loaded
    lines[150_001] = lines[150_001].replace(b"|", b"|99999999999|", 1)
    lines[150_001] = b"|".join(lines[150_001].split(b"|")[:17])
    lines[200_002] = b"|".join(lines[200_002].split(b"|")[:5])
    lines[250_003] = b"20240101" + lines[250_003][8:]
    path.write_bytes(b"\n".join(lines))
    with db_conn.cursor() as cur:
        cur.execute(DDL)
    code, _, body = curl_load(server, db, "lo", path, "column_separator:|",
                              "max_filter_ratio:0.1")
    assert code == 200 and isinstance(body, dict), body
    assert body["Status"] == "Success", body
    assert (body["NumberTotalRows"], body["NumberLoadedRows"], body["NumberFilteredRows"]) \
        == (n, n - 3, 3), body

    kept = path.parent / "kept.csv"
    kept.write_bytes(b"\n".join(line for i, line in enumerate(lines)
                                if i not in (150_001, 200_002, 250_003)))
    names = ", ".join(f"'c{i}': '{'VARCHAR' if i in (6, 16) else 'INTEGER'}'" for i in range(17))
    expected = duckdb.connect().execute(
        f"SELECT * FROM read_csv(?, header=false, delim='|', quote='', columns={{{names}}}) "
        "ORDER BY c1, c2", [str(kept)]).fetchall()
    # DuckDB reads an empty field as NULL; Doris keeps '' for a string column
    expected = [tuple("" if v is None else v for v in row) for row in expected]
    with db_conn.cursor() as cur:
        cur.execute("SELECT * FROM lo ORDER BY lo_orderkey, lo_linenumber")
        got = cur.fetchall()
    assert len(got) == n - 3
    assert normalize_rows(got) == normalize_rows(expected)


def test_a_load_flushed_while_it_streams_equals_duckdb(server, db, db_conn, tmp_path) -> None:
    """300k rows into 2 tablets: each tablet's memtable passes EARLY_FLUSH_ROWS (storage/txn.py)
    twice, so its rowset is written as runs during the load (the file's dates are random, so
    every run spans the key range: an OVERLAPPING rowset); the rows read back equal DuckDB's."""
    path = tmp_path / "lineorder.csv"
    n = 300_000
    write_lineorder(path, n, seed=14)
    ddl = DDL.split("PARTITION BY")[0] + \
        'DISTRIBUTED BY HASH(lo_orderkey) BUCKETS 2 PROPERTIES ("replication_num" = "1")'
    with db_conn.cursor() as cur:
        cur.execute(ddl)
    code, _, body = curl_load(server, db, "lo", path, "column_separator:|")
    assert code == 200 and isinstance(body, dict), body
    assert body["Status"] == "Success" and body["NumberLoadedRows"] == n, body
    with db_conn.cursor() as cur:
        cur.execute("SHOW TABLETS FROM lo")
        names = [d[0] for d in cur.description]
        tablet_ids = [dict(zip(names, r))["TabletId"] for r in cur.fetchall()]
    segments = [list(server.data_dir.glob(f"be/*/data/{tid}/*.seg")) for tid in tablet_ids]
    assert len(segments) == 2 and all(len(s) >= 2 for s in segments), segments  # several runs
    names = ", ".join(f"'c{i}': '{'VARCHAR' if i in (6, 16) else 'INTEGER'}'" for i in range(17))
    expected = duckdb.connect().execute(
        f"SELECT * FROM read_csv(?, header=false, delim='|', quote='', columns={{{names}}}) "
        "ORDER BY c1, c2, c0", [str(path)]).fetchall()
    expected = [tuple("" if v is None else v for v in row) for row in expected]
    with db_conn.cursor() as cur:
        cur.execute("SELECT * FROM lo ORDER BY lo_orderkey, lo_linenumber, lo_orderdate")
        got = cur.fetchall()
    assert normalize_rows(got) == normalize_rows(expected)
    with db_conn.cursor() as cur:  # a range the runs all span, pruned per run
        cur.execute("SELECT count(*), sum(lo_revenue) FROM lo "
                    "WHERE lo_orderdate BETWEEN 19940101 AND 19941231")
        got_range = cur.fetchall()
    want_range = duckdb.connect().execute(
        "SELECT count(*), sum(c12) FROM read_csv(?, header=false, delim='|', quote='', "
        f"columns={{{names}}}) WHERE c0 BETWEEN 19940101 AND 19941231", [str(path)]).fetchall()
    assert normalize_rows(got_range) == normalize_rows(want_range)
