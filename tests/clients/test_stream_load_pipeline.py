"""A Stream Load of several 128k-row batches, prepared on several threads and inserted in file
order (executor/load/job.py, prefetch.py `prepared_ahead`): a UNIQUE key loaded many times
keeps the row the file gives last (checked against DuckDB reading the same file, with and
without a `columns` mapping), and the error log lists filtered rows in file order whether the
parser (wrong column count), the conversion (NULL for a NOT NULL column) or the routing (no
partition) filtered them."""

from __future__ import annotations

import datetime as dt
import random

import duckdb
import pytest
import requests
from support.stream_load import curl_load

from executor.load.job import COALESCE_ROWS

ROWS = 3 * COALESCE_ROWS + 12345  # four batches, the last one short


EPOCH = dt.date(1970, 1, 1)


def _day(n: int) -> dt.date:
    """A distinct day past every partition for each n (the reason names it in days since
    1970, DATE's stored value)."""
    return dt.date(2030, 1, 1) + dt.timedelta(days=n)


@pytest.mark.parametrize("mapping", [False, True], ids=["plain", "columns-mapping"])
def test_unique_key_keeps_the_files_last_row_across_batches(server, db, db_conn, tmp_path,
                                                            mapping) -> None:
    with db_conn.cursor() as cur:
        cur.execute("""CREATE TABLE u (k INT NOT NULL, v BIGINT, s VARCHAR(16))
            UNIQUE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 5
            PROPERTIES ("replication_num" = "1")""")
    rng = random.Random(5 + mapping)
    keys = 40_000  # each key ~13 times, spread over every batch
    path = tmp_path / "u.csv"
    with path.open("w") as f:
        for i in range(ROWS):
            s = "\\N" if i % 17 == 0 else f"s{i % 977}"
            f.write(f"{rng.randrange(keys)},{i},{s}\n")
    headers = ["column_separator:,"]
    if mapping:  # the expression path (map_batch) instead of the plain conversion
        headers.append("columns: k, tmp, s, v = tmp * 2")
    code, _, body = curl_load(server, db, "u", path, *headers)
    assert code == 200 and body["Status"] == "Success", body
    assert body["NumberLoadedRows"] == ROWS
    factor = 2 if mapping else 1
    want = duckdb.sql(f"""
        SELECT k, v * {factor}, s FROM (
            SELECT column0 AS k, column1 AS v, column2 AS s,
                   row_number() OVER (PARTITION BY column0 ORDER BY rn DESC) AS last
            FROM (SELECT *, row_number() OVER () AS rn
                  FROM read_csv('{path}', header=false, nullstr='\\N',
                                columns={{'column0': 'INT', 'column1': 'BIGINT',
                                          'column2': 'VARCHAR'}})))
        WHERE last = 1 ORDER BY k""").fetchall()
    with db_conn.cursor() as cur:
        cur.execute("SELECT k, v, s FROM u ORDER BY k")
        got = [tuple(r) for r in cur.fetchall()]
    assert len(got) == len(want)
    assert got == want


def test_error_log_lists_filtered_rows_in_file_order_across_batches(server, db, db_conn,
                                                                    tmp_path) -> None:
    """Reasons of the conversion (NOT NULL) and the routing (no partition) are in exact file
    order; a reader's reasons (wrong column count) come with a parse block (1 MiB): pyarrow's
    streaming reader meets a block's bad lines while it reads ahead, so they may come with the
    block before theirs, never later and never further ahead."""
    with db_conn.cursor() as cur:
        cur.execute("""CREATE TABLE d (dt DATE NOT NULL, id BIGINT NOT NULL, tag VARCHAR(20))
            DUPLICATE KEY(dt, id)
            PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-02-01"))
            DISTRIBUTED BY HASH(id) BUCKETS 4 PROPERTIES ("replication_num" = "1")""")
    rng = random.Random(11)
    bad_at = set(rng.sample(range(ROWS), 90))
    bad: list[tuple[str, int, str]] = []  # (kind, byte offset of the line, text in its reason)
    offset = 0
    path = tmp_path / "d.csv"
    with path.open("w") as f:
        for i in range(ROWS):
            if i in bad_at:
                kind = ("columns", "null", "partition")[len(bad) % 3]
                line, mark = {
                    "columns": (f"2024-01-02,{i}\n", f"src line [2024-01-02,{i}]"),
                    "null": (f"2024-01-02,\\N,bad{i}\n", f"bad{i}"),
                    "partition": (f"{_day(len(bad))},{i},x\n", f"dt={(_day(len(bad)) - EPOCH).days})"),
                }[kind]
                bad.append((kind, offset, mark))
            else:
                line = f"2024-01-{1 + i % 31:02d},{i},t{i % 7}\n"
            f.write(line)
            offset += len(line)
    code, _, body = curl_load(server, db, "d", path, "column_separator:,",
                              "max_filter_ratio:0.01")
    assert code == 200 and body["Status"] == "Success", body
    assert body["NumberFilteredRows"] == len(bad)
    assert body["NumberLoadedRows"] == ROWS - len(bad)
    log = requests.get(body["ErrorURL"], timeout=30).text.splitlines()
    reasons = [line for line in log if line.startswith("Reason:")]
    assert len(reasons) == len(bad)
    at = {}
    for kind, off, mark in bad:
        found = [j for j, r in enumerate(reasons) if mark in r]
        assert len(found) == 1, (mark, found)
        at[off] = (kind, found[0])
    exact = [pos for off, (kind, pos) in sorted(at.items()) if kind != "columns"]
    assert exact == sorted(exact)
    block = 1 << 20  # a row more than a block (and a line) before another is in an earlier block
    for off_a, (_, pos_a) in at.items():
        for off_b, (kind_b, pos_b) in at.items():
            if off_a + (2 if kind_b == "columns" else 1) * (block + 64) < off_b:
                assert pos_a < pos_b, (off_a, off_b, at[off_a], at[off_b])
