"""SELECT .. INTO OUTFILE over the wire (pymysql): the files it writes under the export
directory read back with pyarrow and DuckDB as the query's rows, in every format; Doris' result
row; max_file_size splits files; success / delete_existing_files; a failed query leaves no
file; paths outside the export directory are refused."""

from __future__ import annotations

import datetime as dt
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pymysql
import pytest
from support.names import unique_db_name
from support.rows import normalize_rows
from support.stream_load import curl_load

N_ROWS = 400
DUCK_TYPES = "{'k': 'INTEGER', 'name': 'VARCHAR', 'day': 'DATE', 'ts': 'TIMESTAMP', " \
             "'price': 'DECIMAL(10,2)', 'big': 'BIGINT', 'ratio': 'DOUBLE'}"


def _value_rows() -> str:
    rows = []
    for i in range(N_ROWS):
        name = "NULL" if i % 9 == 0 else f"'n{i % 13}{',x' if i % 50 == 1 else ''}'"
        day = "NULL" if i % 11 == 0 else f"'{dt.date(2024, 1, 1) + dt.timedelta(days=i)}'"
        rows.append(f"({i}, {name}, {day}, '2024-02-03 04:05:{i % 60:02d}', {i / 8:.2f}, "
                    f"{i * 10**10}, {i / 3})")
    return ", ".join(rows)


@pytest.fixture(scope="module")
def table(server) -> Iterator[tuple[str, Path]]:
    """(database, a fresh folder under the export dir) with table t of N_ROWS rows."""
    db = unique_db_name("outfile")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT, name VARCHAR(20), day DATE, ts DATETIME, "
                    "price DECIMAL(10, 2), big BIGINT, ratio DOUBLE) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 3 PROPERTIES ('replication_num' = '1')")
        cur.execute(f"INSERT INTO t VALUES {_value_rows()}")
    folder = server.data_dir / "export" / f"of_{secrets.token_hex(4)}"
    yield db, folder
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {db}")


def _run(conn, sql: str) -> list[tuple[object, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _outfile(conn, query: str, target: str, fmt: str, **props: str) -> tuple[object, ...]:
    clause = ""
    if props:
        clause = " PROPERTIES (" + ", ".join(f'"{k}" = "{v}"' for k, v in props.items()) + ")"
    (row,) = _run(conn, f'{query} INTO OUTFILE "file://{target}" FORMAT AS {fmt}{clause}')
    return row


def _files(url: str) -> list[Path]:
    prefix = url.removeprefix("file://")
    return sorted(Path(prefix).parent.glob(Path(prefix).name + "*"))


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_typed_files_read_back_as_the_query_rows(server, table, fmt: str) -> None:
    db, folder = table
    query = "SELECT * FROM t WHERE k >= 10"
    with server.connect(db) as conn:
        want = _run(conn, query)
        number, rows, size, url = _outfile(conn, query, f"{folder}/{fmt}/r_", fmt)
    files = _files(url)
    assert (number, rows) == (1, N_ROWS - 10) and len(files) == 1
    assert files[0].name.endswith(f"_0.{fmt}") and files[0].name.startswith("r_")
    assert size == files[0].stat().st_size
    arrow = pq.read_table(files[0]) if fmt == "parquet" else paorc.read_table(files[0])
    assert arrow.schema.names == ["k", "name", "day", "ts", "price", "big", "ratio"]
    assert arrow.schema.field("day").type == pa.date32()
    assert arrow.schema.field("price").type == pa.decimal128(10, 2)
    assert normalize_rows(tuple(r.values()) for r in arrow.to_pylist()) == normalize_rows(want)
    if fmt == "parquet":
        duck = duckdb.sql(f"SELECT * FROM read_parquet('{files[0]}')").fetchall()
        assert normalize_rows(duck) == normalize_rows(want)


def test_csv_reads_back_with_duckdb(server, table) -> None:
    db, folder = table
    query = "SELECT k, name, day, ts, price, big, ratio FROM t"
    with server.connect(db) as conn:
        want = _run(conn, query)
        number, rows, _, url = _outfile(conn, query, f"{folder}/csv/c_", "CSV",
                                        column_separator=",", success_file_name="_SUCCESS")
    (f,) = _files(url)
    assert (number, rows) == (1, N_ROWS)
    assert (f.parent / "_SUCCESS").exists()
    got = duckdb.sql(f"SELECT * FROM read_csv('{f}', header = false, delim = ',', "
                     f"nullstr = '\\N', quote = '\"', columns = {DUCK_TYPES})").fetchall()
    assert normalize_rows(got) == normalize_rows(want)
    lines = f.read_text().splitlines()
    # Doris' text forms, unquoted (strings are quoted only in a batch holding a value with the
    # separator, such as "n1,x")
    assert any(line.endswith(",2024-01-04,2024-02-03 04:05:03,0.38,30000000000,1")
               and line.startswith("3,") for line in lines)


@pytest.mark.parametrize("fmt", ["parquet", "orc", "csv_with_names"])
def test_an_empty_result_gives_one_empty_file(server, table, fmt: str) -> None:
    db, folder = table
    with server.connect(db) as conn:
        number, rows, size, url = _outfile(conn, "SELECT k, price, day FROM t WHERE k < 0",
                                           f"{folder}/empty/{fmt}_", fmt)
    (f,) = _files(url)
    assert (number, rows, size) == (1, 0, f.stat().st_size)
    if fmt == "csv_with_names":
        assert f.read_text() == "k\tprice\tday\n"
        return
    arrow = pq.read_table(f) if fmt == "parquet" else paorc.read_table(f)
    assert arrow.num_rows == 0 and arrow.schema.names == ["k", "price", "day"]
    assert arrow.schema.field("price").type == pa.decimal128(10, 2)


def test_explain_draws_the_file_sink(server, table) -> None:
    db, folder = table
    with server.connect(db) as conn:
        lines = [r[0] for r in _run(conn, f'EXPLAIN SELECT k FROM t INTO OUTFILE '
                                          f'"file://{folder}/ex_" FORMAT AS CSV')]
    text = "\n".join(lines)
    assert "RESULT FILE SINK" in text and f"FILE PATH: file://{folder}/ex_" in text
    assert "VRESULT SINK" not in text and "MYSQL_PROTOCAL" not in text
    assert "VOlapScanNode" in text
    assert not (folder / "ex_").exists() and not list(folder.glob("ex_*"))


def test_csv_with_names_and_types_headers(server, table) -> None:
    db, folder = table
    with server.connect(db) as conn:
        _, _, _, url = _outfile(conn, "SELECT k, name AS who FROM t WHERE k < 3",
                                f"{folder}/hdr/h_", "CSV_WITH_NAMES_AND_TYPES")
        _, _, _, url2 = _outfile(conn, "SELECT k, price FROM t WHERE k < 3",
                                 f"{folder}/hdr/n_", "csv_with_names")
    (f,) = _files(url)
    assert f.read_text().splitlines()[:2] == ["k\twho", "INT\tVARCHAR(20)"]
    assert sorted(f.read_text().splitlines()[2:]) == ["0\t\\N", "1\tn1,x", "2\tn2"]
    (g,) = _files(url2)
    got = duckdb.sql(f"SELECT * FROM read_csv('{g}', header = true, delim = '\t')").fetchall()
    assert normalize_rows(got) == normalize_rows([(0, 0.0), (1, 0.12), (2, 0.25)])


@pytest.fixture(scope="module")
def big_csv(server) -> Iterator[str]:
    """A 140 000-line CSV file (about 11.5 MB) in the import dir: its local() call."""
    big = server.data_dir / "import" / f"big_{secrets.token_hex(4)}.csv"
    line = "|".join(["x" * 60, "y" * 20])
    big.write_text("".join(f"{i}|{line}\n" for i in range(140_000)))
    yield (f'local("file_path" = "{big.name}", "backend_id" = "10000", "format" = "csv", '
           '"column_separator" = "|")')
    big.unlink()


def test_max_file_size_splits_and_delete_existing_files(server, table, big_csv) -> None:
    db, folder = table
    tvf = big_csv
    target = folder / "split"
    target.mkdir(parents=True)
    (target / "stale.txt").write_text("old")
    with server.connect(db) as conn:
        number, rows, size, url = _outfile(
            conn, f"SELECT * FROM {tvf}", f"{target}/s_", "CSV", column_separator="|",
            max_file_size="5MB", delete_existing_files="true")
    files = _files(url)
    assert not (target / "stale.txt").exists()
    assert rows == 140_000 and number == len(files) >= 2
    assert size == sum(f.stat().st_size for f in files)
    assert [f.name.rsplit("_", 1)[1] for f in files] == [f"{i}.csv" for i in range(len(files))]
    assert all(f.stat().st_size < 5 * 1024 * 1024 + (2 << 20) for f in files)
    got = duckdb.sql(f"SELECT count(*), count(DISTINCT column0), min(column1) FROM read_csv("
                     f"'{target}/s_*.csv', header = false, delim = '|', all_varchar = true)"
                     ).fetchall()
    assert got == [(140_000, 140_000, "x" * 60)]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_query_failing_midway_leaves_no_file(server, table, big_csv, fmt: str) -> None:
    """The first 65 536-row batch is written, a later one overflows BIGINT (error 1690): the
    files written so far and the one being written are removed."""
    db, folder = table
    target = folder / f"failed_{fmt}"
    query = f"SELECT c1, cast(c1 AS BIGINT) * 92233720368547 FROM {big_csv}"
    with server.connect(db) as conn, pytest.raises(pymysql.MySQLError) as info:
        _outfile(conn, query, f"{target}/f_", fmt, max_file_size="5MB")
    assert info.value.args[0] == 1690
    assert target.exists() and list(target.iterdir()) == []


def _refused(server, db: str, sql: str) -> str:
    with server.connect(db) as conn, pytest.raises(pymysql.MySQLError) as info:
        _run(conn, sql)
    assert info.value.args[0] == 1105
    return info.value.args[1]


def test_paths_outside_the_export_dir_are_refused(server, table, tmp_path) -> None:
    db, folder = table
    q = "SELECT k FROM t"
    assert "may only write under the export directory" in _refused(
        server, db, f'{q} INTO OUTFILE "file://{tmp_path}/x_" FORMAT AS CSV')
    assert "can not contain '..'" in _refused(
        server, db, f'{q} INTO OUTFILE "file://{folder}/../../x_" FORMAT AS CSV')
    assert "local file system" in _refused(
        server, db, f'{q} INTO OUTFILE "s3://bucket/x_" FORMAT AS CSV')
    folder.mkdir(parents=True, exist_ok=True)
    os.symlink(tmp_path, folder / "link")
    assert "outside the export directory" in _refused(
        server, db, f'{q} INTO OUTFILE "file://{folder}/link/x_" FORMAT AS CSV')
    assert list(tmp_path.iterdir()) == [] or all(p.name != "x_" for p in tmp_path.iterdir())
    assert "max file size should between 5MB and 2GB" in _refused(
        server, db, f'{q} INTO OUTFILE "file://{folder}/m_" FORMAT AS CSV '
                    'PROPERTIES ("max_file_size" = "1MB")')
    assert "format:xlsx is not supported." in _refused(
        server, db, f'{q} INTO OUTFILE "file://{folder}/m_" FORMAT AS XLSX')


def test_privileges(server, table) -> None:
    """OUTFILE needs SELECT on what the query reads, EXPORT SELECT on the table, and local()
    / DESC FUNCTION (the server's own files) ADMIN_PRIV."""
    db, folder = table
    user = f"u_{secrets.token_hex(4)}"
    with server.connect() as root:
        _run(root, f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
        _run(root, f"GRANT SELECT_PRIV ON {db}.t TO '{user}'@'%'")
    try:
        conn = pymysql.connect(host="127.0.0.1", port=server.port, user=user, password="pw",
                               database=db, autocommit=True, ssl_disabled=True)
        with conn:
            (row,) = _run(conn, f'SELECT k FROM t INTO OUTFILE "file://{folder}/priv/ok_" '
                                'FORMAT AS CSV')
            assert row[1] == N_ROWS
            tvf = 'local("file_path" = "x.csv", "backend_id" = "10000", "format" = "csv")'
            for sql, code in [
                # a table the user holds no SELECT on (checked before it is looked up)
                (f'SELECT * FROM {db}.t2 INTO OUTFILE "file://{folder}/priv/no_"', 1142),
                (f"SELECT * FROM {tvf}", 1227),
                (f"DESC FUNCTION {tvf}", 1227),
                (f'SELECT * FROM {tvf} INTO OUTFILE "file://{folder}/priv/no_"', 1227),
            ]:
                with pytest.raises(pymysql.MySQLError) as info:
                    _run(conn, sql)
                assert info.value.args[0] == code, (sql, info.value.args)
    finally:
        with server.connect() as root:
            _run(root, f"DROP USER IF EXISTS '{user}'@'%'")
    assert not list((folder / "priv").glob("no_*"))


NESTED_ROWS = ("(1, [1, 2, NULL], {'a': 1, 'b': NULL}, named_struct('x', 5, 'y', 'hi')), "
               "(2, NULL, NULL, NULL), "
               "(3, [], {}, named_struct('x', NULL, 'y', 'a,b')), "
               "(4, [7], {'k,1': 2}, named_struct('x', -1, 'y', ''))")


@pytest.mark.parametrize("fmt", ["csv", "csv_with_names_and_types", "parquet", "orc"])
def test_nested_columns_round_trip(server, table, fmt: str) -> None:
    """ARRAY / MAP / STRUCT columns: CSV holds Doris' text form (`[1, 2, null]`, quoted where
    it holds the separator or a quote), read back by a Stream Load into a copy of the table;
    parquet and ORC keep Arrow's list / map / struct types."""
    db, folder = table
    ddl = ("(k INT, a ARRAY<INT>, m MAP<STRING, INT>, s STRUCT<x: INT, y: STRING>) "
           "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1 "
           "PROPERTIES ('replication_num' = '1')")
    src, copy = f"nested_{fmt}", f"nested_{fmt}_copy"
    with server.connect(db) as conn:
        _run(conn, f"CREATE TABLE {src} {ddl}")
        _run(conn, f"CREATE TABLE {copy} {ddl}")
        _run(conn, f"INSERT INTO {src} VALUES {NESTED_ROWS}")
        query = f"SELECT * FROM {src} ORDER BY k"
        want = _run(conn, query)
        props = {} if fmt in ("parquet", "orc") else {"column_separator": ","}
        number, rows, _, url = _outfile(conn, query, f"{folder}/nested_{fmt}/r_", fmt, **props)
        assert (number, rows) == (1, 4)
        (path,) = _files(url)
        if fmt in ("parquet", "orc"):
            got = (pq.read_table(path) if fmt == "parquet" else paorc.read_table(path))
            assert got.column("a").to_pylist() == [[1, 2, None], None, [], [7]]
            assert got.column("s").to_pylist()[2] == {"x": None, "y": "a,b"}
            return
        headers = ["column_separator:,", "enclose:\""]
        if fmt == "csv_with_names_and_types":
            lines = path.read_text().splitlines()
            assert lines[:2] == ["k,a,m,s", "INT,ARRAY<INT>,MAP<TEXT,INT>,STRUCT<x:INT,y:TEXT>"]
            headers.append("format:csv_with_names_and_types")
        status, _, body = curl_load(server, db, copy, path, *headers)
        assert status == 200 and isinstance(body, dict) and body["Status"] == "Success", body
        assert _run(conn, f"SELECT * FROM {copy} ORDER BY k") == want
