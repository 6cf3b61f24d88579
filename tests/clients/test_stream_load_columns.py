"""Stream Load's `columns`, `where` and `partitions` headers with the real curl binary
(executor/load/mapping.py): reordering, skipping file columns, temporary columns used in
expressions (`v = tmp * 10`, `to_bitmap`, `hll_hash`, `str_to_date`), a `where` whose dropped
rows are NumberUnselectedRows, and `partitions` whose other rows are filtered with Doris' reason.
Loaded rows are compared with DuckDB reading the same file and applying the same expressions;
header errors come back in Doris' wording before curl uploads the body."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pytest
from support.rows import normalize_rows
from support.stream_load import curl_load

N_ROWS = 400


@pytest.fixture(scope="module")
def data_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """id | day (yyyymmdd) | amount | label | user: five file columns, a few NULLs."""
    rng = random.Random(13)
    lines = []
    for i in range(N_ROWS):
        day = f"2024{rng.randrange(1, 4):02d}{rng.randrange(1, 29):02d}"
        amount = "\\N" if rng.random() < 0.05 else str(rng.randrange(-5000, 5000))
        label = rng.choice(["red", "green", "blue", "", "sky blue"])
        lines.append(f"{i}|{day}|{amount}|{label}|{rng.randrange(0, 60)}")
    path = tmp_path_factory.mktemp("columns") / "data.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def duck(path: Path, select: str, where: str = "true") -> list[tuple]:
    """`select` over the file as DuckDB reads it (columns id, day, amount, label, usr)."""
    con = duckdb.connect()
    con.execute(f"""CREATE VIEW f AS SELECT * FROM read_csv('{path}', delim='|', header=false,
        nullstr='\\N', quote='', escape='',
        columns={{'id': 'BIGINT', 'day': 'VARCHAR', 'amount': 'BIGINT', 'label': 'VARCHAR',
                 'usr': 'BIGINT'}})""")
    return con.execute(f"SELECT {select} FROM f WHERE {where}").fetchall()


def query(db_conn, sql: str) -> list[tuple]:
    with db_conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def test_columns_expressions_reorder_and_skip(server, db, db_conn, data_file) -> None:
    """`id, d, tmp_amount, note, skipped` maps the file's five columns; `amount10 = tmp * 10`,
    `day = str_to_date(d, '%Y%m%d')`, `tag = concat(note, '!')`; `skipped` (no table column, no
    use) is ignored and `ver` (not in the file) takes its DEFAULT."""
    query(db_conn, """CREATE TABLE t (id BIGINT NOT NULL, day DATE, amount10 BIGINT,
        tag VARCHAR(20), ver INT DEFAULT '3') DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3
        PROPERTIES ("replication_num" = "1")""")
    _, _, body = curl_load(
        server, db, "t", data_file, "column_separator:|",
        "columns: id, d, tmp_amount, note, skipped, amount10 = tmp_amount * 10, "
        "day = str_to_date(d, '%Y%m%d'), tag = concat(note, '!')")
    assert body["Status"] == "Success", body
    assert (body["NumberTotalRows"], body["NumberLoadedRows"], body["NumberFilteredRows"],
            body["NumberUnselectedRows"]) == (N_ROWS, N_ROWS, 0, 0)
    got = query(db_conn, "SELECT id, day, amount10, tag, ver FROM t")
    want = duck(data_file, "id, strptime(day, '%Y%m%d')::DATE, amount * 10, label || '!', 3")
    assert normalize_rows(got) == normalize_rows(want)


def test_where_drops_rows_as_unselected(server, db, db_conn, data_file) -> None:
    """`where` runs on the mapped row: its dropped rows are NumberUnselectedRows, not filtered,
    and do not count against max_filter_ratio."""
    query(db_conn, """CREATE TABLE w (id BIGINT NOT NULL, amount BIGINT, usr INT)
        DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("replication_num" = "1")""")
    _, _, body = curl_load(server, db, "w", data_file, "column_separator:|",
                           "columns: id, tmp_day, amount, tmp_label, usr",
                           "where: amount > 0 and usr < 30")
    assert body["Status"] == "Success", body
    want = duck(data_file, "id, amount, usr", "amount > 0 and usr < 30")
    assert body["NumberLoadedRows"] == len(want)
    assert body["NumberUnselectedRows"] == N_ROWS - len(want)
    assert body["NumberFilteredRows"] == 0 and body["NumberTotalRows"] == N_ROWS
    assert normalize_rows(query(db_conn, "SELECT id, amount, usr FROM w")) == normalize_rows(want)


def test_bitmap_and_hll_columns_from_expressions(server, db, db_conn, data_file) -> None:
    """An AGGREGATE table's BITMAP / HLL columns are filled by to_bitmap / hll_hash of a file
    column: the distinct counts equal DuckDB's."""
    query(db_conn, """CREATE TABLE agg (label VARCHAR(20), users BITMAP BITMAP_UNION,
        uv HLL HLL_UNION) AGGREGATE KEY(label) DISTRIBUTED BY HASH(label) BUCKETS 2
        PROPERTIES ("replication_num" = "1")""")
    _, _, body = curl_load(server, db, "agg", data_file, "column_separator:|",
                           "columns: a, b, c, label, u, users = to_bitmap(u), uv = hll_hash(u)")
    assert body["Status"] == "Success", body
    got = query(db_conn, "SELECT label, bitmap_union_count(users), hll_union_agg(uv) FROM agg "
                         "GROUP BY label")
    want = duck(data_file, "label, count(DISTINCT usr), 0", "true GROUP BY label")
    assert normalize_rows([r[:2] for r in got]) == normalize_rows([r[:2] for r in want])
    for (_, exact, approx) in got:  # HLL is an estimate: within a few percent here
        assert abs(approx - exact) <= max(2, exact * 0.05)


def test_partitions_header_filters_other_partitions(server, db, db_conn, data_file) -> None:
    """`partitions: p1` loads the rows of p1; the others are filtered rows with Doris' reason
    (so the load fails at the default ratio 0 and nothing is visible)."""
    query(db_conn, """CREATE TABLE p (id BIGINT NOT NULL, day DATE NOT NULL)
        DUPLICATE KEY(id) PARTITION BY RANGE(day) (
            PARTITION p1 VALUES LESS THAN ("2024-02-01"),
            PARTITION p2 VALUES LESS THAN ("2024-04-01"))
        DISTRIBUTED BY HASH(id) BUCKETS 2 PROPERTIES ("replication_num" = "1")""")
    headers = ("column_separator:|", "columns: id, d, a, l, u, day = str_to_date(d, '%Y%m%d')",
               "partitions: p1")
    _, _, body = curl_load(server, db, "p", data_file, *headers)
    assert body["Status"] == "Fail" and "too many filtered rows" in body["Message"], body
    assert "no partition for this tuple" in body["FirstErrorMsg"], body
    assert query(db_conn, "SELECT count(*) FROM p") == [(0,)]
    _, _, body = curl_load(server, db, "p", data_file, *headers, "max_filter_ratio:1")
    assert body["Status"] == "Success", body
    want = duck(data_file, "id, strptime(day, '%Y%m%d')::DATE", "day < '20240201'")
    assert body["NumberLoadedRows"] == len(want)
    assert body["NumberFilteredRows"] == N_ROWS - len(want)
    assert normalize_rows(query(db_conn, "SELECT id, day FROM p")) == normalize_rows(want)


@pytest.mark.parametrize(("headers", "message"), [
    (("columns: id, x = id + 1",), "Mapping column is not in table. column: x"),
    (("columns: id, amount = nope * 2",), "Unknown column 'nope' in 'table list'"),
    (("columns: id, id2, id2",), "Duplicate column: id2"),
    (("columns: id, amount = id, amount = id",), "Duplicate column mapping: amount"),
    (("where: nope > 1",), "Unknown column 'nope' in 'table list'"),
    (("partitions: p9",), "Unknown partition 'p9' in table 'e'"),
    (("temporary_partitions: tp1",), "Unknown partition 'tp1' in table 'e'"),
    (("where: amount > 1 union select 1",), "Syntax error in where [amount > 1 union select 1]"),
    (("columns: id from e",), "Syntax error in columns [id from e]"),
    (("columns: id, a, users = a",), "Column's type is BITMAP"),
])
def test_header_errors_before_upload(server, db, db_conn, data_file, headers, message) -> None:
    query(db_conn, """CREATE TABLE e (id BIGINT NOT NULL, amount BIGINT SUM, users BITMAP
        BITMAP_UNION) AGGREGATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1
        PROPERTIES ("replication_num" = "1")""")
    _, uploaded, body = curl_load(server, db, "e", data_file, "column_separator:|", *headers)
    assert body["Status"] == "Fail" and message in body["Message"], body
    assert body["Message"].startswith("[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = ")
    assert uploaded == 0  # refused before 100 Continue


def test_mappings_only_read_the_table_columns_from_the_file(server, db, db_conn,
                                                            data_file) -> None:
    """`columns` with mappings but no file column names: the file holds the table's columns in
    table order (Doris), and a mapping may use the column it replaces."""
    query(db_conn, """CREATE TABLE m (id BIGINT NOT NULL, day VARCHAR(8), amount BIGINT,
        label VARCHAR(10), usr INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2
        PROPERTIES ("replication_num" = "1")""")
    _, _, body = curl_load(server, db, "m", data_file, "column_separator:|",
                           "columns: usr = usr + 100, label = upper(label)")
    assert body["Status"] == "Success" and body["NumberLoadedRows"] == N_ROWS, body
    got = query(db_conn, "SELECT id, day, amount, label, usr FROM m")
    assert normalize_rows(got) == normalize_rows(
        duck(data_file, "id, day, amount, upper(label), usr + 100"))


def test_timezone_sets_now_in_mappings(server, db, db_conn, data_file) -> None:
    """`timezone` is the clock of now() in mappings (+14:00 and -12:00 are 26 hours apart); an
    unknown zone is refused before the upload."""
    query(db_conn, """CREATE TABLE tz (id BIGINT NOT NULL, zone VARCHAR(8), ts DATETIME)
        DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ("replication_num" = "1")""")
    for zone in ("+14:00", "-12:00"):
        _, _, body = curl_load(server, db, "tz", data_file, "column_separator:|",
                               f"columns: id, d, a, l, u, zone = '{zone}', ts = now()",
                               f"timezone: {zone}")
        assert body["Status"] == "Success", body
    (east, west), = query(db_conn, "SELECT max(CASE WHEN zone = '+14:00' THEN ts END), "
                                   "max(CASE WHEN zone = '-12:00' THEN ts END) FROM tz")
    assert abs((east - west).total_seconds() - 26 * 3600) < 600
    _, uploaded, body = curl_load(server, db, "tz", data_file, "column_separator:|",
                                  "columns: id, d, a, l, u, ts = now()", "timezone: Mars/Base")
    assert body["Status"] == "Fail" and uploaded == 0
    assert body["Message"] == "[INVALID_ARGUMENT]Unknown or incorrect time zone: 'Mars/Base'"


def test_json_lines_with_expressions(server, db, db_conn, tmp_path) -> None:
    """JSON fields are matched by name; a temporary field feeds an expression, typed (a JSON
    number stays a number)."""
    query(db_conn, """CREATE TABLE j (id BIGINT NOT NULL, total BIGINT, tag VARCHAR(10))
        DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ("replication_num" = "1")""")
    path = tmp_path / "rows.json"
    path.write_text('{"id": 1, "qty": 3, "price": 5, "tag": "a"}\n'
                    '{"tag": "b", "price": 7, "id": 2, "qty": 2}\n'
                    '{"id": 3, "qty": null, "price": 1}\n')
    _, _, body = curl_load(server, db, "j", path, "format:json", "read_json_by_line:true",
                           "columns: id, qty, price, tag, total = qty * price")
    assert body["Status"] == "Success" and body["NumberLoadedRows"] == 3, body
    assert query(db_conn, "SELECT id, total, tag FROM j ORDER BY id") == [
        (1, 15, "a"), (2, 14, "b"), (3, None, None)]
