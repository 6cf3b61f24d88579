"""Stream Load's formats and parse options with the real curl binary: every CSV option
(separators in every Doris form, line delimiters, enclose/escape, trim_double_quotes,
skip_lines, csv_with_names[_and_types], `\\N`, empty lines), every compress_type, JSON (by line,
outer array, jsonpaths, json_root, num_as_string, fuzzy_parse, missing keys), parquet, ORC and
Arrow IPC; each loads the rows DuckDB reads from the same file (pyarrow for ORC and Arrow).
Bad input gets Doris' status and reasons and leaves nothing visible."""

from __future__ import annotations

import bz2
import datetime as dt
import decimal
import gzip
import json
import random
import secrets
from collections.abc import Iterator
from pathlib import Path

import duckdb
import lz4.frame
import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pytest
from support import stream_load
from support.rows import normalize_rows

COLUMNS = ("id", "name", "price", "dt", "ts", "score")
DUCK_TYPES = ("{'id': 'INTEGER', 'name': 'VARCHAR', 'price': 'DECIMAL(10,2)', 'dt': 'DATE', "
              "'ts': 'TIMESTAMP', 'score': 'DOUBLE'}")
NAMES = ["Oslo", "Rome", "São Paulo", "Kyiv", "Lima", "Zürich"]


def curl_load(server, db: str, table: str, path: Path, *headers: str) -> tuple[int, dict]:
    """(bytes curl uploaded, parsed JSON body) of one Stream Load."""
    _, uploaded, body = stream_load.curl_load(server, db, table, path, *headers)
    return uploaded, body


@pytest.fixture(scope="module")
def fdb(server) -> Iterator[str]:
    name = f"fmt_{secrets.token_hex(6)}"
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
    yield name
    if server.running:
        with server.connect() as c, c.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture
def table(server, fdb) -> str:
    name = f"t_{secrets.token_hex(4)}"
    with server.connect(fdb) as c, c.cursor() as cur:
        cur.execute(f"""CREATE TABLE {name} (id INT NOT NULL, name VARCHAR(20),
            price DECIMAL(10, 2), dt DATE, ts DATETIME, score DOUBLE)
            DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2
            PROPERTIES ("replication_num" = "1")""")
    return name


def rows_of(server, db: str, table: str) -> list[tuple]:
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(f"SELECT {', '.join(COLUMNS)} FROM {table}")
        return normalize_rows(cur.fetchall())


def sample_rows(n: int = 200, seed: int = 3) -> list[tuple]:
    """(id, name, price, dt, ts, score) with NULLs; names never empty (Doris keeps '' where
    DuckDB reads NULL)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append((
            i, None if i % 11 == 0 else rng.choice(NAMES),
            None if i % 7 == 0 else decimal.Decimal(rng.randrange(-10**6, 10**6)) / 100,
            dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(300)),
            dt.datetime(2024, 3, 1, rng.randrange(24), rng.randrange(60), rng.randrange(60)),
            round(rng.uniform(-1e4, 1e4), 3),
        ))
    return out


def csv_text(rows: list[tuple], sep: str, eol: str) -> str:
    def cell(v: object) -> str:
        return "\\N" if v is None else str(v)
    return "".join(sep.join(cell(v) for v in r) + eol for r in rows)


def duck_csv(path: Path, **opts: object) -> list[tuple]:
    """DuckDB's reading of `path`; `opts` are read_csv's options (delim, quote, ...)."""
    extra = "".join(f", {k}=?" for k in opts)
    return normalize_rows(duckdb.connect().execute(
        f"SELECT * FROM read_csv(?, header=false, nullstr='\\N', columns={DUCK_TYPES}{extra})",
        [str(path), *opts.values()]).fetchall())


def ok(body: dict, total: int, loaded: int | None = None) -> None:
    assert body["Status"] == "Success", body
    assert body["NumberTotalRows"] == total, body
    assert body["NumberLoadedRows"] == (total if loaded is None else loaded), body


# --- CSV -------------------------------------------------------------------------------

@pytest.mark.parametrize(("sep", "eol", "headers"), [
    (",", "\n", ["column_separator:,"]),
    ("\t", "\r\n", ["line_delimiter:\\r\\n"]),
    ("\x01", "\n", ["column_separator:\\x01"]),
    ("||", "\n", ["column_separator:||"]),
    ("|#|", "\x02", ["column_separator:|#|", "line_delimiter:\\x02"]),
    (";", "$$\n", ["column_separator:;", "line_delimiter:$$\\n"]),
], ids=["comma", "crlf", "hex01", "multi-sep", "multi-sep-hex-eol", "multi-eol"])
def test_csv_separators_load_what_duckdb_reads(server, fdb, table, tmp_path, sep, eol,
                                               headers) -> None:
    rows = sample_rows()
    path = tmp_path / "data.csv"
    path.write_bytes(csv_text(rows, sep, eol).encode())
    _, body = curl_load(server, fdb, table, path, *headers)
    ok(body, len(rows))
    if eol in ("\n", "\r\n"):  # DuckDB knows no other line delimiter
        expected = duck_csv(path, delim=sep, quote="")
    else:
        plain = tmp_path / "plain.csv"
        plain.write_text(csv_text(rows, ",", "\n"))
        expected = duck_csv(plain, delim=",", quote="")
    assert rows_of(server, fdb, table) == expected
    assert len(expected) == len(rows)


def test_csv_enclose_escape_empty_lines_and_null(server, fdb, table, tmp_path) -> None:
    text = ('1,"Oslo, Norway",1.50,2024-01-02,2024-01-02 03:04:05,1.5\n'
            '\n'
            '2,"say \\"hi\\"",\\N,2024-01-03,2024-01-03 00:00:00,2\n'
            '3,"two\nlines",3.00,2024-01-04,2024-01-04 00:00:00,3\n'
            '4,\\N,4.00,2024-01-05,2024-01-05 00:00:00,4\n'
            '\n')
    path = tmp_path / "enclosed.csv"
    path.write_text(text)
    _, body = curl_load(server, fdb, table, path, "column_separator:,", 'enclose:"',
                        "escape:\\")
    ok(body, 4)
    table2 = _table(server, fdb)  # `\` is Doris' default escape
    _, body = curl_load(server, fdb, table2, path, "column_separator:,", 'enclose:"')
    ok(body, 4)
    assert rows_of(server, fdb, table2) == rows_of(server, fdb, table)
    # DuckDB takes no escape together with nullstr '\N': it reads a copy with another marker
    marked = tmp_path / "marked.csv"
    marked.write_text(text.replace("\\N", "NULLX"))
    expected = normalize_rows(duckdb.connect().execute(
        f"SELECT * FROM read_csv(?, header=false, nullstr='NULLX', delim=',', quote='\"', "
        f"escape='\\', columns={DUCK_TYPES})", [str(marked)]).fetchall())
    assert rows_of(server, fdb, table) == expected
    names = {r[0]: r[1] for r in rows_of(server, fdb, table)}
    assert names == {1: "Oslo, Norway", 2: 'say "hi"', 3: "two\nlines", 4: None}


def test_csv_trim_double_quotes_and_skip_lines(server, fdb, table, tmp_path) -> None:
    rows = sample_rows(50)
    quoted = [tuple(f'"{v}"' if j == 1 and v is not None else v for j, v in enumerate(r))
              for r in rows]
    path = tmp_path / "quoted.csv"
    path.write_text("junk line one\njunk,line,two\n" + csv_text(quoted, ",", "\n"))
    _, body = curl_load(server, fdb, table, path, "column_separator:,", "skip_lines:2",
                        "trim_double_quotes:true")
    ok(body, 50)
    plain = tmp_path / "plain.csv"
    plain.write_text(csv_text(rows, ",", "\n"))
    assert rows_of(server, fdb, table) == duck_csv(plain, delim=",", quote="")


@pytest.mark.parametrize("fmt", ["csv_with_names", "csv_with_names_and_types"])
def test_csv_with_names_skips_the_header_and_maps_by_position(server, fdb, table, tmp_path,
                                                              fmt) -> None:
    rows = sample_rows(40)
    # header names that are not the table's: Doris skips them and maps columns by position
    header = "a,b,c,d,e,f\n" + ("int,string,decimal,date,datetime,double\n"
                                if fmt.endswith("types") else "")
    path = tmp_path / "named.csv"
    path.write_text(header + csv_text(rows, ",", "\n"))
    _, body = curl_load(server, fdb, table, path, "column_separator:,", f"format:{fmt}",
                        "skip_lines:5")  # ignored for these formats, as in Doris
    ok(body, 40)
    skip = 2 if fmt.endswith("types") else 1
    assert rows_of(server, fdb, table) == duck_csv(path, delim=",", quote="",
                                                   skip=skip)


# --- compression -------------------------------------------------------------------------

COMPRESSORS = {
    "gz": gzip.compress, "bz2": bz2.compress, "lz4": lz4.frame.compress,
    "zstd": lambda data: pa.compress(data, "zstd", asbytes=True),
}


@pytest.mark.parametrize("codec", list(COMPRESSORS))
def test_compressed_csv_loads_like_the_plain_file(server, fdb, table, tmp_path, codec) -> None:
    rows = sample_rows(300)
    plain = tmp_path / "plain.csv"
    plain.write_text(csv_text(rows, ",", "\n"))
    packed = tmp_path / f"data.csv.{codec}"
    packed.write_bytes(COMPRESSORS[codec](plain.read_bytes()))
    uploaded, body = curl_load(server, fdb, table, packed, "column_separator:,",
                               f"compress_type:{codec}")
    ok(body, 300)
    assert body["LoadBytes"] == packed.stat().st_size == uploaded  # bytes received
    assert rows_of(server, fdb, table) == duck_csv(plain, delim=",", quote="")


@pytest.mark.parametrize("codec", ["gz", "zstd"])
def test_truncated_or_corrupt_compressed_body_fails_and_leaves_nothing(
        server, fdb, table, tmp_path, codec) -> None:
    data = COMPRESSORS[codec](csv_text(sample_rows(2000), ",", "\n").encode())
    path = tmp_path / "cut.bin"
    path.write_bytes(data[: len(data) // 2])
    _, body = curl_load(server, fdb, table, path, "column_separator:,",
                        f"compress_type:{codec}")
    assert body["Status"] == "Fail", body
    assert "Failed to decompress" in body["Message"], body
    path.write_bytes(b"this is not compressed at all\n" * 10)
    _, body = curl_load(server, fdb, table, path, "column_separator:,",
                        f"compress_type:{codec}")
    assert body["Status"] == "Fail" and "Failed to decompress" in body["Message"], body
    assert rows_of(server, fdb, table) == []


# --- JSON --------------------------------------------------------------------------------

def json_records(rows: list[tuple]) -> list[dict]:
    out = []
    for r in rows:
        rec = {"id": r[0], "name": r[1], "price": None if r[2] is None else float(r[2]),
               "dt": r[3].isoformat(), "ts": r[4].isoformat(sep=" "), "score": r[5]}
        if r[0] % 5 == 0:
            del rec["score"]  # a missing key reads as NULL
        out.append(rec)
    return out


def duck_json(path: Path, fmt: str) -> list[tuple]:
    return normalize_rows(duckdb.connect().execute(
        f"SELECT {', '.join(COLUMNS)} FROM read_json(?, format='{fmt}', columns={DUCK_TYPES})",
        [str(path)]).fetchall())


def test_json_by_line_and_outer_array_load_what_duckdb_reads(server, fdb, tmp_path) -> None:
    recs = json_records(sample_rows(300))
    lines = tmp_path / "rows.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in recs))
    array = tmp_path / "rows.json"
    array.write_text(json.dumps(recs, indent=1))
    for path, headers, duck_fmt in [
            (lines, ["read_json_by_line:true"], "newline_delimited"),
            (array, ["strip_outer_array:true"], "array"),
            (array, ["strip_outer_array:true", "fuzzy_parse:true"], "array")]:
        table = _table(server, fdb)
        _, body = curl_load(server, fdb, table, path, "format:json", *headers)
        ok(body, 300)
        assert rows_of(server, fdb, table) == duck_json(path, duck_fmt), headers


def _table(server, fdb: str) -> str:
    name = f"t_{secrets.token_hex(4)}"
    with server.connect(fdb) as c, c.cursor() as cur:
        cur.execute(f"""CREATE TABLE {name} (id INT NOT NULL, name VARCHAR(20),
            price DECIMAL(10, 2), dt DATE, ts DATETIME, score DOUBLE)
            DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 2
            PROPERTIES ("replication_num" = "1")""")
    return name


def test_gzipped_json_lines_and_a_columns_subset(server, fdb, table, tmp_path) -> None:
    recs = json_records(sample_rows(200))
    plain = tmp_path / "rows.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in recs))
    packed = tmp_path / "rows.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    # only id and name are loaded: the other columns take their default (NULL)
    _, body = curl_load(server, fdb, table, packed, "format:json", "read_json_by_line:true",
                        "compress_type:gz", "columns:id,name")
    ok(body, 200)
    expected = duckdb.connect().execute(
        f"SELECT id, name, NULL, NULL, NULL, NULL FROM read_json(?, "
        f"format='newline_delimited', columns={DUCK_TYPES})", [str(plain)]).fetchall()
    assert rows_of(server, fdb, table) == normalize_rows(expected)


def test_json_lines_whose_field_types_change_load_as_text(server, fdb, table,
                                                         tmp_path) -> None:
    # pyarrow.json refuses a field that changes type between lines: the block is then parsed
    # line by line, and a number into a VARCHAR column is its text, as in Doris
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"id": "5", "name": 123, "score": 1}\n'
                    '{"id": 6, "name": "x", "score": "2.5", "dt": "2024-01-02"}\n'
                    '{"id": 7, "name": true, "price": 1.25}\n')
    _, body = curl_load(server, fdb, table, path, "format:json", "read_json_by_line:true")
    ok(body, 3)
    expected = normalize_rows([
        (5, "123", None, None, None, 1.0), (6, "x", None, dt.date(2024, 1, 2), None, 2.5),
        (7, "1", decimal.Decimal("1.25"), None, None, None)])
    assert rows_of(server, fdb, table) == expected
    array = tmp_path / "mixed.json"  # the same objects as one array
    array.write_text("[" + ",".join(path.read_text().splitlines()) + "]")
    table2 = _table(server, fdb)
    _, body = curl_load(server, fdb, table2, array, "format:json", "strip_outer_array:true")
    ok(body, 3)
    assert rows_of(server, fdb, table2) == expected


def test_json_root_jsonpaths_and_num_as_string(server, fdb, table, tmp_path) -> None:
    doc = {"meta": {"n": 2}, "data": [
        {"k": {"id": 1, "who": ["Oslo"]}, "p": 12345678.91, "d": "2024-01-02",
         "t": "2024-01-02 03:04:05", "s": 0.5},
        {"k": {"id": 2, "who": ["Rome"]}, "p": 0.10, "d": "2024-02-03",
         "t": "2024-02-03 00:00:00"},
    ]}
    path = tmp_path / "nested.json"
    path.write_text(json.dumps(doc))
    paths = '["$.k.id", "$.k.who[0]", "$.p", "$.d", "$.t", "$.s"]'
    _, body = curl_load(server, fdb, table, path, "format:json", "strip_outer_array:true",
                        "json_root:$.data", f"jsonpaths:{paths}", "num_as_string:true")
    ok(body, 2)
    assert rows_of(server, fdb, table) == normalize_rows([
        (1, "Oslo", decimal.Decimal("12345678.91"), dt.date(2024, 1, 2),
         dt.datetime(2024, 1, 2, 3, 4, 5), 0.5),
        (2, "Rome", decimal.Decimal("0.10"), dt.date(2024, 2, 3), dt.datetime(2024, 2, 3),
         None)])


def test_json_single_object_and_columns_matched_by_name(server, fdb, table, tmp_path) -> None:
    path = tmp_path / "one.json"
    # field order differs from the table's, an unknown field is ignored, nested -> JSON text
    path.write_text('{"score": 2.5, "extra": 1, "ID": 7, "name": {"a": [1, true]},'
                    ' "dt": "2024-05-06"}')
    _, body = curl_load(server, fdb, table, path, "format:json")
    ok(body, 1)
    assert rows_of(server, fdb, table) == [(7, '{"a":[1,true]}', None, "2024-05-06", None,
                                            2.5)]


def test_bad_json_lines_are_filtered_with_doris_reasons(server, fdb, table, tmp_path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": 1, "name": "ok"}\n{"id": 2, "name": \n{"name": "no id"}\n'
                    '[{"id": 3}]\n{"id": 4, "name": "fine"}\n')
    _, body = curl_load(server, fdb, table, path, "format:json", "read_json_by_line:true")
    assert body["Status"] == "Fail" and "too many filtered rows" in body["Message"], body
    assert "Parse json data for JsonDoc failed" in body["FirstErrorMsg"], body
    assert rows_of(server, fdb, table) == []
    _, body = curl_load(server, fdb, table, path, "format:json", "read_json_by_line:true",
                        "max_filter_ratio:0.8")
    ok(body, 5, 2)
    assert body["NumberFilteredRows"] == 3
    assert [r[0] for r in rows_of(server, fdb, table)] == [1, 4]

    array = tmp_path / "array.json"
    array.write_text('[{"id": 1}]')
    _, body = curl_load(server, fdb, table, array, "format:json")  # no strip_outer_array
    assert body["Status"] == "Fail", body
    assert "`strip_outer_array` must be TRUE" in body["FirstErrorMsg"], body


# --- parquet, ORC, Arrow -----------------------------------------------------------------

def typed_table(rows: list[tuple]) -> pa.Table:
    """The rows as typed Arrow columns, in another order and case than the table's, with a
    column the table does not have."""
    cols = list(zip(*rows))
    return pa.table({
        "Score": pa.array(cols[5], pa.float64()),
        "ID": pa.array(cols[0], pa.int64()),
        "name": pa.array(cols[1], pa.string()),
        "price": pa.array(cols[2], pa.decimal128(12, 2)),
        "dt": pa.array(cols[3], pa.date32()),
        "ts": pa.array(cols[4], pa.timestamp("ms")),
        "unused": pa.array([1] * len(rows), pa.int8()),
    })


def test_parquet_loads_what_duckdb_reads(server, fdb, table, tmp_path) -> None:
    path = tmp_path / "rows.parquet"
    pq.write_table(typed_table(sample_rows(500)), path, row_group_size=128)
    _, body = curl_load(server, fdb, table, path, "format:parquet")
    ok(body, 500)
    expected = duckdb.connect().execute(
        "SELECT id, name, price, dt, ts, score FROM read_parquet(?)", [str(path)]).fetchall()
    assert rows_of(server, fdb, table) == normalize_rows(expected)


@pytest.mark.parametrize("fmt", ["orc", "arrow"])
def test_orc_and_arrow_load_what_pyarrow_reads(server, fdb, table, tmp_path, fmt) -> None:
    data = typed_table(sample_rows(300))
    path = tmp_path / f"rows.{fmt}"
    if fmt == "orc":
        paorc.write_table(data, path, stripe_size=4096)
    else:
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, data.schema) as w:
            w.write_table(data, max_chunksize=100)
    _, body = curl_load(server, fdb, table, path, f"format:{fmt}")
    ok(body, 300)
    read = paorc.read_table(path) if fmt == "orc" else pa.ipc.open_stream(
        path.read_bytes()).read_all()
    expected = read.select(["ID", "name", "price", "dt", "ts", "Score"]).to_pylist()
    assert rows_of(server, fdb, table) == normalize_rows(tuple(r.values()) for r in expected)


def test_zoned_timestamps_load_in_the_timezone_header(server, fdb, tmp_path) -> None:
    path = tmp_path / "zoned.parquet"
    utc = dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.UTC)
    pq.write_table(pa.table({"id": pa.array([1], pa.int32()),
                             "ts": pa.array([utc], pa.timestamp("us", "UTC")),
                             "dt": pa.array([utc.replace(hour=20)], pa.timestamp("us", "UTC"))}),
                   path)
    for headers, wall in [([], dt.datetime(2024, 1, 1, 12)),  # ShaleDB's default: UTC
                          (["timezone:Asia/Shanghai"], dt.datetime(2024, 1, 1, 20)),
                          (["timezone:-05:00"], dt.datetime(2024, 1, 1, 7))]:
        table = _table(server, fdb)
        _, body = curl_load(server, fdb, table, path, "format:parquet", *headers)
        ok(body, 1)
        day = dt.date(2024, 1, 2) if headers == ["timezone:Asia/Shanghai"] else dt.date(2024, 1, 1)
        assert rows_of(server, fdb, table) == normalize_rows([(1, None, None, day, wall, None)])
    _, body = curl_load(server, fdb, table, path, "format:parquet", "timezone:Mars/Olympus")
    assert body["Status"] == "Fail" and "Unknown or incorrect time zone" in body["Message"]


def test_typed_values_out_of_range_are_filtered_per_row(server, fdb, tmp_path) -> None:
    with server.connect(fdb) as c, c.cursor() as cur:
        cur.execute("""CREATE TABLE narrow (k TINYINT NOT NULL, s VARCHAR(3), d DECIMAL(4, 1))
            DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1
            PROPERTIES ("replication_num" = "1")""")
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 300, 3, 4], pa.int64()),
                             "s": ["abc", "ok", "toolong", "x"],
                             "d": pa.array([decimal.Decimal("1.5"), decimal.Decimal("2.5"),
                                            decimal.Decimal("3.5"), decimal.Decimal("12345.5")],
                                           pa.decimal128(10, 1))}), path)
    _, body = curl_load(server, fdb, "narrow", path, "format:parquet", "strict_mode:true")
    assert body["Status"] == "Fail" and "too many filtered rows" in body["Message"], body
    assert rows_of_narrow(server, fdb) == []
    _, body = curl_load(server, fdb, "narrow", path, "format:parquet", "strict_mode:true",
                        "max_filter_ratio:0.9")
    ok(body, 4, 1)
    assert body["NumberFilteredRows"] == 3
    assert rows_of_narrow(server, fdb) == [(1, "abc", decimal.Decimal("1.5"))]


def rows_of_narrow(server, db: str) -> list[tuple]:
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("SELECT k, s, d FROM narrow ORDER BY k")
        return list(cur.fetchall())


# --- bad input ---------------------------------------------------------------------------

def test_bad_format_options_fail_before_the_upload(server, fdb, table, tmp_path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("1,a\n" * 500)
    for headers, words in [(["format:xml"], "unknown data format, format=xml"),
                           (["compress_type:rar"], "unknown compress type"),
                           (["skip_lines:-1"], "Invalid skip_lines"),
                           (["jsonpaths:[$.a"], "Invalid json path"),
                           (['jsonpaths:["$.a[x"]'], "Invalid json path"),
                           (["json_root:data"], "Invalid json path"),
                           (["enclose:ab"], "enclose must be a single-char"),
                           (["column_separator:\\xZZ"], "invalid column_separator"),
                           (['enclose:"', "column_separator:||"], "enclose is not supported")]:
        uploaded, body = curl_load(server, fdb, table, path, *headers)
        assert body["Status"] == "Fail" and words in body["Message"], (headers, body)
        assert uploaded == 0, headers
    assert rows_of(server, fdb, table) == []


def test_wrong_column_count_and_type_errors_are_filtered_rows(server, fdb, table,
                                                              tmp_path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text("1|a|1.00|2024-01-01|2024-01-01 00:00:00|1\n"
                    "2|b|2.00\n"
                    "3|c|3.00|2024-01-01|2024-01-01 00:00:00|3|extra\n"
                    "4|this name is far too long|4.00|2024-01-01|2024-01-01 00:00:00|4\n"
                    "5|e|5.00|not a date|2024-01-01 00:00:00|5\n")
    _, body = curl_load(server, fdb, table, path, "column_separator:|", "strict_mode:true")
    assert body["Status"] == "Fail" and "too many filtered rows" in body["Message"], body
    assert body["NumberFilteredRows"] == 4, body
    assert rows_of(server, fdb, table) == []
    _, body = curl_load(server, fdb, table, path, "column_separator:|", "strict_mode:true",
                        "max_filter_ratio:0.8")
    ok(body, 5, 1)
    assert [r[0] for r in rows_of(server, fdb, table)] == [1]


def test_corrupt_parquet_fails_and_the_spool_file_is_gone(server, fdb, table,
                                                          tmp_path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"PAR1" + secrets.token_bytes(3000))
    _, body = curl_load(server, fdb, table, path, "format:parquet")
    assert body["Status"] == "Fail" and "parquet" in body["Message"], body
    assert rows_of(server, fdb, table) == []
    spool = Path(server.data_dir) / "tmp" / "load"
    assert not spool.exists() or not any(spool.iterdir())


def test_a_parquet_upload_dropped_midway_leaves_no_spool_file(server, fdb, table,
                                                             tmp_path) -> None:
    import base64
    import socket

    path = tmp_path / "rows.parquet"
    pq.write_table(typed_table(sample_rows(2000)), path)
    data = path.read_bytes()
    label = f"dropped_{secrets.token_hex(4)}"
    auth = base64.b64encode(b"root:").decode()
    head = (f"PUT /api/{fdb}/{table}/_stream_load HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Basic {auth}\r\nformat: parquet\r\nlabel: {label}\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=60) as s:
        s.sendall(head + data[: len(data) // 2])
    line = server.wait_for_stderr(rf"stream load into {fdb}\.{table} (failed|finished): "
                                  rf"label={label}\b")
    assert "failed" in line, line
    assert rows_of(server, fdb, table) == []
    spool = Path(server.data_dir) / "tmp" / "load"
    assert not spool.exists() or not any(spool.iterdir())
