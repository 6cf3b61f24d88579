"""Nested columns through Stream Load (curl) and Arrow Flight SQL (ADBC), checked over MySQL.

JSON rows carry arrays and objects; CSV carries Doris' text form; Arrow and Parquet files carry
pyarrow list / map / struct columns. Flight SQL returns the same columns as Arrow list / map /
struct arrays whose values equal what was loaded.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.stream_load import curl_load

_DDL = ("CREATE TABLE {name} (k INT, a ARRAY<INT>, m MAP<STRING,DOUBLE>, "
        "s STRUCT<f1:INT, f2:STRING>, d ARRAY<DECIMAL(10,2)>) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2")

# (k, a, m, s, d) as Python values, and as Doris prints them
ROWS = [
    (1, [1, None, 3], {"x": 1.5, "y": None}, {"f1": 1, "f2": "é"}, [Decimal("1.25")]),
    (2, [], {}, {"f1": None, "f2": None}, []),
    (3, None, None, None, None),
]
TEXT = [
    (1, "[1, null, 3]", '{"x":1.5, "y":null}', '{"f1":1, "f2":"é"}', "[1.25]"),
    (2, "[]", "{}", '{"f1":null, "f2":null}', "[]"),
    (3, None, None, None, None),
]

ARROW_SCHEMA = pa.schema([
    ("k", pa.int32()), ("a", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.float64())),
    ("s", pa.struct([("f1", pa.int32()), ("f2", pa.string())])),
    ("d", pa.list_(pa.decimal128(10, 2))),
])


def _arrow_table() -> pa.Table:
    cols = list(zip(*ROWS))
    maps = [None if m is None else list(m.items()) for m in cols[2]]
    return pa.table([pa.array(cols[0], pa.int32()), pa.array(cols[1], pa.list_(pa.int32())),
                     pa.array(maps, ARROW_SCHEMA.field("m").type),
                     pa.array(cols[3], ARROW_SCHEMA.field("s").type),
                     pa.array(cols[4], ARROW_SCHEMA.field("d").type)], schema=ARROW_SCHEMA)


@pytest.fixture
def table(server, db):
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute(_DDL.format(name="t"))
    return db


def _select(server, db: str) -> list[tuple]:
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("SELECT k, a, m, s, d FROM t ORDER BY k")
        return list(cur.fetchall())


def _ok(result: tuple) -> None:
    code, _, body = result
    assert code == 200 and isinstance(body, dict), body
    assert body["Status"] == "Success", body


def test_stream_load_json(server, table, tmp_path):
    def plain(v):
        return float(v) if isinstance(v, Decimal) else v
    lines = [{"k": k, "a": a, "m": m, "s": s,
              "d": None if d is None else [plain(x) for x in d]} for k, a, m, s, d in ROWS]
    path = tmp_path / "rows.json"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines))
    _ok(curl_load(server, table, "t", path, "format: json", "read_json_by_line: true"))
    assert _select(server, table) == TEXT


def test_stream_load_csv_doris_text(server, table, tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("\n".join("|".join(r"\N" if v is None else str(v) for v in row)
                              for row in TEXT) + "\n")
    _ok(curl_load(server, table, "t", path, "column_separator: |"))
    assert _select(server, table) == TEXT


def test_stream_load_arrow_and_parquet(server, table, tmp_path):
    arrow_path = tmp_path / "rows.arrow"
    with pa.OSFile(str(arrow_path), "wb") as f, pa.ipc.new_stream(f, ARROW_SCHEMA) as w:
        w.write_table(_arrow_table())
    _ok(curl_load(server, table, "t", arrow_path, "format: arrow"))
    assert _select(server, table) == TEXT
    parquet_path = tmp_path / "rows.parquet"
    pq.write_table(_arrow_table(), parquet_path)
    with server.connect(table) as c, c.cursor() as cur:
        cur.execute("TRUNCATE TABLE t")
    _ok(curl_load(server, table, "t", parquet_path, "format: parquet"))
    assert _select(server, table) == TEXT


def test_bad_nested_value_strict_and_not(server, table, tmp_path):
    """A value that does not fit the nested type filters the row in strict mode and loads
    as NULL otherwise (Doris' non-strict conversion)."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"k": 1, "a": ["x"]}) + "\n")
    code, _, body = curl_load(server, table, "t", path, "format: json",
                              "read_json_by_line: true", "strict_mode: true")
    assert isinstance(body, dict) and body["Status"] == "Fail", body
    assert body["NumberFilteredRows"] == 1
    _ok(curl_load(server, table, "t", path, "format: json", "read_json_by_line: true"))
    assert _select(server, table) == [(1, None, None, None, None)]


def test_flight_sql_returns_arrow_nested_types(tmp_path_factory):
    """ADBC's Flight SQL driver reads list / map / struct arrays equal to the loaded values."""
    from support.flight_sql import adbc_connect
    from support.server import ServerProcess

    with ServerProcess(tmp_path_factory.mktemp("nested-flight"), backends=1,
                       extra_args=("--arrow-flight-sql-port", "0")) as srv:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE nf")
            cur.execute(_DDL.format(name="nf.t"))
            cur.execute("INSERT INTO nf.t VALUES "
                        "(1, [1, NULL, 3], {'x': 1.5, 'y': NULL}, {1, 'é'}, [1.25]), "
                        "(2, [], {}, {NULL, NULL}, []), (3, NULL, NULL, NULL, NULL)")
        with adbc_connect(srv.flight_port) as conn, conn.cursor() as cur:
            cur.execute("SELECT k, a, m, s, d FROM nf.t ORDER BY k")
            table = cur.fetch_arrow_table()
    assert table.schema == ARROW_SCHEMA
    assert table.to_pylist() == _arrow_table().to_pylist()
