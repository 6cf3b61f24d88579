"""Stream Load (`PUT /api/{db}/{table}/_stream_load`) with the real curl binary, as Doris users
run it: rows loaded from a CSV file equal DuckDB's reading of the same file; a wrong password,
an unknown table, a used label and a user without LOAD_PRIV are refused before curl uploads
the body (curl's `size_upload` stays 0 after `Expect: 100-continue`); a label loads once; a
load over its max_filter_ratio leaves nothing visible."""

from __future__ import annotations

import json
import random
import secrets
import subprocess
from pathlib import Path

import duckdb
import pytest
from support.rows import normalize_rows
from support.stream_load import curl_load

PAD = "x" * 2000  # enough bytes that an upload before the server's answer would show


def count(db_conn, table: str) -> int:
    with db_conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {table}")
        return cur.fetchone()[0]


@pytest.fixture
def events(db_conn) -> str:
    with db_conn.cursor() as cur:
        cur.execute("""CREATE TABLE events (
            dt DATE NOT NULL, user_id BIGINT NOT NULL, city VARCHAR(20), cost DECIMAL(10, 2),
            score DOUBLE, ts DATETIME, flag TINYINT)
            DUPLICATE KEY(dt, user_id)
            PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-02-01"),
                                    PARTITION p2 VALUES LESS THAN ("2024-03-01"))
            DISTRIBUTED BY HASH(user_id) BUCKETS 4 PROPERTIES ("replication_num" = "1")""")
    return "events"


def write_events(path: Path, n: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    cities = ["Oslo", "Rome", "Lima", "Kyiv", "", "São Paulo"]
    lines = []
    for i in range(n):
        day = rng.randrange(0, 59)
        month, d = (1, day + 1) if day < 31 else (2, day - 30)
        city = rng.choice(cities)
        lines.append(",".join([
            f"2024-{month:02d}-{d:02d}", str(rng.randrange(-10**12, 10**12)),
            "\\N" if rng.random() < 0.1 else city,
            "\\N" if rng.random() < 0.1 else f"{rng.randrange(-10**7, 10**7) / 100:.2f}",
            repr(rng.uniform(-1e6, 1e6)),
            (f"2024-01-{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:"
             f"{rng.randrange(60):02d}:{rng.randrange(60):02d}"),
            str(rng.randrange(-128, 128)),
        ]))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_csv_rows_equal_duckdb_reading_the_same_file(server, db, db_conn, events, tmp_path) -> None:
    path = write_events(tmp_path / "events.csv", 5000)
    label = f"sl_{secrets.token_hex(4)}"
    code, uploaded, body = curl_load(server, db, events, path, f"label:{label}",
                                     "column_separator:,")
    assert code == 200, body
    assert body["Status"] == "Success" and body["Message"] == "OK", body
    assert body["Label"] == label and body["TxnId"] > 0
    assert (body["NumberTotalRows"], body["NumberLoadedRows"], body["NumberFilteredRows"],
            body["NumberUnselectedRows"]) == (5000, 5000, 0, 0)
    assert body["LoadBytes"] == path.stat().st_size == uploaded
    assert body["TwoPhaseCommit"] == "false"
    for key in ("LoadTimeMs", "BeginTxnTimeMs", "StreamLoadPutTimeMs", "ReadDataTimeMs",
                "WriteDataTimeMs", "CommitAndPublishTimeMs"):
        assert isinstance(body[key], int) and body[key] >= 0, key

    duck = duckdb.connect()
    expected = duck.execute(
        "SELECT * FROM read_csv(?, header=false, delim=',', nullstr='\\N', quote='', "
        "columns={'dt': 'DATE', 'user_id': 'BIGINT', 'city': 'VARCHAR', "
        "'cost': 'DECIMAL(10,2)', 'score': 'DOUBLE', 'ts': 'TIMESTAMP', 'flag': 'TINYINT'})",
        [str(path)]).fetchall()
    with db_conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {events}")
        got = cur.fetchall()
    # DuckDB reads an empty field as NULL; Doris (and ShaleDB) keep '' for a string column
    expected = [tuple("" if (j == 2 and v is None and line_city == "") else v
                      for j, v in enumerate(row))
                for row, line_city in zip(expected, _cities(path))]
    assert normalize_rows(got) == normalize_rows(expected)
    with db_conn.cursor() as cur:
        cur.execute(f"SHOW PARTITIONS FROM {events}")
        assert len(cur.fetchall()) == 2


def _cities(path: Path) -> list[str]:
    return [line.split(",")[2] for line in path.read_text().splitlines()]


def test_wrong_password_is_401_before_the_upload(server, db, db_conn, events, tmp_path) -> None:
    path = write_events(tmp_path / "e.csv", 200)
    code, uploaded, body = curl_load(server, db, events, path, "column_separator:,",
                                     user="root:wrong")
    assert code == 401 and uploaded == 0
    assert body["msg"] == "Unauthorized" and body["data"].startswith("Access denied for user 'root'")
    assert count(db_conn, events) == 0


def test_unknown_table_fails_before_the_upload(server, db, tmp_path) -> None:
    path = write_events(tmp_path / "e.csv", 200)
    code, uploaded, body = curl_load(server, db, "no_such_table", path, "column_separator:,")
    assert uploaded == 0 and code == 404
    assert body["Status"] == "Fail"
    assert body["Message"] == ("[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = table not "
                               "found, tableName=no_such_table")
    code, uploaded, body = curl_load(server, "no_such_db", "t", path, "column_separator:,")
    assert uploaded == 0 and body["Status"] == "Fail" and "unknown database" in body["Message"]


def test_same_label_loads_once(server, db, db_conn, events, tmp_path) -> None:
    path = write_events(tmp_path / "e.csv", 300)
    label = f"dedup_{secrets.token_hex(4)}"
    code, _, first = curl_load(server, db, events, path, f"label:{label}", "column_separator:,")
    assert code == 200 and first["Status"] == "Success", first
    code, uploaded, again = curl_load(server, db, events, path, f"label:{label}",
                                      "column_separator:,")
    assert code == 200 and uploaded == 0
    assert again["Status"] == "Label Already Exists"
    assert again["ExistingJobStatus"] == "FINISHED"
    assert again["Message"] == (f"[LABEL_ALREADY_EXISTS]Label [{label}] has already been used, "
                                f"relate to txn [{first['TxnId']}]")
    assert count(db_conn, events) == 300


def test_bad_row_over_max_filter_ratio_leaves_nothing(server, db, db_conn, events,
                                                      tmp_path) -> None:
    good = write_events(tmp_path / "good.csv", 400).read_text()
    null_key = "2024-01-03,\\N,Oslo,1.00,1.0,2024-01-01 00:00:00,1\n"  # NULL for NOT NULL user_id
    path = tmp_path / "bad.csv"
    path.write_text(good + null_key)
    code, _, body = curl_load(server, db, events, path, "column_separator:,",
                              "max_filter_ratio:0")
    assert code == 200
    assert body["Status"] == "Fail"
    assert body["Message"] == "[DATA_QUALITY_ERROR]too many filtered rows"
    assert (body["NumberTotalRows"], body["NumberLoadedRows"], body["NumberFilteredRows"]) == \
        (401, 0, 1)
    assert "null value for not null column, column=user_id" in body["FirstErrorMsg"]
    assert count(db_conn, events) == 0  # nothing of the failed load is visible

    # a row with too few columns is filtered too; under max_filter_ratio the rest loads
    outside = "2024-07-01,9,Oslo,1.00,1.0,2024-01-01 00:00:00,1\n"  # no partition takes it
    path.write_text("2024-01-03,5\n" + good + null_key + outside)
    code, _, body = curl_load(server, db, events, path, "column_separator:,",
                              "max_filter_ratio:0")
    assert body["Status"] == "Fail" and body["FirstErrorMsg"].startswith(
        "Reason: actual column number in csv file is less than schema column number.actual "
        "number: 2, column separator: [,]")
    assert count(db_conn, events) == 0
    label = f"tolerant_{secrets.token_hex(4)}"
    code, _, body = curl_load(server, db, events, path, "column_separator:,",
                              "max_filter_ratio:0.01", f"label:{label}")
    assert body["Status"] == "Success", body
    assert (body["NumberTotalRows"], body["NumberLoadedRows"], body["NumberFilteredRows"]) == \
        (403, 400, 3)
    assert count(db_conn, events) == 400


def test_user_without_load_priv_is_refused(server, db, db_conn, events, tmp_path) -> None:
    user = f"sl_{secrets.token_hex(4)}"
    path = write_events(tmp_path / "e.csv", 50)
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE USER '{user}' IDENTIFIED BY 'pw'")
        cur.execute(f"GRANT SELECT_PRIV ON {db}.* TO '{user}'")
    try:
        code, uploaded, body = curl_load(server, db, events, path, "column_separator:,",
                                         user=f"{user}:pw")
        assert code == 403 and uploaded == 0
        assert "LOAD command denied" in body["data"] or "denied" in body["data"], body
        assert count(db_conn, events) == 0
        with server.connect() as c, c.cursor() as cur:
            cur.execute(f"GRANT LOAD_PRIV ON {db}.{events} TO '{user}'")
        code, _, body = curl_load(server, db, events, path, "column_separator:,",
                                  user=f"{user}:pw")
        assert code == 200 and body["Status"] == "Success", body
        assert count(db_conn, events) == 50
    finally:
        with server.connect() as c, c.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'")


def test_columns_header_and_csv_with_names(server, db, db_conn, tmp_path) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE kv (k INT NOT NULL, v VARCHAR(10), n INT DEFAULT '7') "
                    "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2 "
                    "PROPERTIES ('replication_num' = '1')")
    path = tmp_path / "kv.csv"
    path.write_text("v|k\nalpha|1\nbeta|2\n" + f"{PAD}|3\n")
    _, _, body = curl_load(server, db, "kv", path, "column_separator:|", "columns: v, k",
                              "format:csv_with_names", "max_filter_ratio:0.5")
    assert body["Status"] == "Success", body
    assert (body["NumberTotalRows"], body["NumberLoadedRows"], body["NumberFilteredRows"]) == \
        (3, 2, 1)  # the 2000-byte value does not fit VARCHAR(10)
    with db_conn.cursor() as cur:
        cur.execute("SELECT k, v, n FROM kv ORDER BY k")
        assert cur.fetchall() == ((1, "alpha", 7), (2, "beta", 7))
    _, uploaded, body = curl_load(server, db, "kv", path, "column_separator:|",
                                  "columns: v, nope")
    assert uploaded == 0 and body["Status"] == "Fail"
    # Doris: a name that is no table column is a temporary column, so k is missing
    assert body["Message"].endswith("Column has no default value. column: k"), body


def test_large_body_in_many_blocks_and_without_expect(server, db, db_conn, events,
                                                      tmp_path) -> None:
    """A body of several reader blocks (1 MiB each) loads whole, with a bad value deep inside
    converted per value in its block; a client that sends no `Expect` header loads as well."""
    path = write_events(tmp_path / "big.csv", 60000, seed=11)
    lines = path.read_text().splitlines()
    lines[45000] = lines[45000].rsplit(",", 1)[0] + ",not_a_number"  # flag -> NULL (non-strict)
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 3 * (1 << 20)
    args = ["curl", "-s", "--location-trusted", "-u", "root:", "-H", "Expect:",
            "-H", "column_separator:,", "-T", str(path),
            f"http://127.0.0.1:{server.http_port}/api/{db}/{events}/_stream_load"]
    body = json.loads(subprocess.run(args, capture_output=True, text=True, timeout=300,
                                     check=True).stdout)
    assert body["Status"] == "Success", body
    assert (body["NumberTotalRows"], body["NumberLoadedRows"]) == (60000, 60000)
    assert body["LoadBytes"] == path.stat().st_size
    with db_conn.cursor() as cur:
        cur.execute(f"SELECT count(*), count(flag), sum(user_id) FROM {events}")
        total, flags, user_sum = cur.fetchone()
    assert (total, flags) == (60000, 59999)
    assert int(user_sum) == sum(int(line.split(",")[1]) for line in lines)


def test_concurrent_retries_of_one_label_load_once(server, db, db_conn, events,
                                                   tmp_path) -> None:
    path = write_events(tmp_path / "e.csv", 2000)
    label = f"retry_{secrets.token_hex(4)}"
    args = ["curl", "-s", "--location-trusted", "-u", "root:", "-H", f"label:{label}",
            "-H", "column_separator:,", "-T", str(path),
            f"http://127.0.0.1:{server.http_port}/api/{db}/{events}/_stream_load"]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    bodies = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    statuses = sorted(b["Status"] for b in bodies)
    assert statuses == ["Label Already Exists"] * 3 + ["Success"], bodies
    winner = next(b for b in bodies if b["Status"] == "Success")
    for b in bodies:
        if b["Status"] != "Success":
            assert b["Message"].endswith(f"relate to txn [{winner['TxnId']}]"), b
    assert count(db_conn, events) == 2000


def test_invalid_utf8_and_a_dropped_upload_leave_nothing(server, db, db_conn, events,
                                                        tmp_path) -> None:
    import base64
    import socket

    good = write_events(tmp_path / "good.csv", 100).read_bytes()
    path = tmp_path / "latin1.csv"
    path.write_bytes(good + "2024-01-03,5,Sa\u00f5 Jo\u00e3o,1.00,1.0,2024-01-01 00:00:00,1\n"
                     .encode("latin-1"))
    # Doris (CsvReader::_validate_line) filters a line that is not UTF-8
    _, _, body = curl_load(server, db, events, path, "column_separator:,")
    assert body["Status"] == "Fail" and "too many filtered rows" in body["Message"], body
    assert "only support csv data in utf8 codec" in body["FirstErrorMsg"], body
    assert count(db_conn, events) == 0

    # the client goes away after sending part of the body it announced
    label = f"dropped_{secrets.token_hex(4)}"
    auth = base64.b64encode(b"root:").decode()
    head = (f"PUT /api/{db}/{events}/_stream_load HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Basic {auth}\r\ncolumn_separator: ,\r\nlabel: {label}\r\n"
            f"Content-Length: {len(good)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=60) as s:
        s.sendall(head + good[: len(good) // 2])
    line = server.wait_for_stderr(rf"stream load into {db}\.{events} (failed|finished): "
                                  rf"label={label}\b")
    assert "failed" in line and "Fail" in line, line
    assert count(db_conn, events) == 0
    path.write_bytes(good)
    _, _, body = curl_load(server, db, events, path, "column_separator:,", f"label:{label}")
    assert body["Status"] == "Success", body  # the dropped load did not keep the label
    assert count(db_conn, events) == 100
