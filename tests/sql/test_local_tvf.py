"""The local() file table function over the wire (pymysql): rows equal DuckDB reading the same
files, INSERT .. SELECT .. FROM local(..) loads them, DESC FUNCTION gives Doris' columns, and
paths outside the import directory (`..`, absolute, symlinks) are refused."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
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
from support.rows import normalize_rows

CSV_ROWS = [(i, f"name{i % 7}", f"{i * 1.25:.2f}", f"2024-01-{i % 28 + 1:02d}")
            for i in range(1, 301)]


@pytest.fixture(scope="module")
def files(server) -> Iterator[tuple[str, Path]]:
    """A fresh folder under the server's import dir: (its name relative to the import dir,
    its absolute path) with CSV, gzip CSV, header CSV, parquet and ORC files."""
    rel = f"tvf_{secrets.token_hex(4)}"
    root = server.data_dir / "import" / rel
    root.mkdir(parents=True)
    lines = ["|".join(str(v) for v in r) for r in CSV_ROWS]
    (root / "part1.csv").write_text("\n".join(lines[:200]) + "\n")
    (root / "part2.csv").write_text("\n".join(lines[200:]) + "\n")
    (root / "nulls.csv").write_text("1|\\N|x\n2|b|\\N\n")
    with gzip.open(root / "data.csv.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    (root / "header.csv").write_text("id,city\n1,Oslo\n2,Lima\n")
    (root / "rows.json").write_text('{"id": 1, "city": "Oslo", "tags": ["a", "b"]}\n'
                                    '{"id": 2, "city": null, "tags": []}\n')
    (root / "skip.csv").write_text("# exported 2024-01-01\n1|x|y\n2|z|w\n")
    (root / "enclosed.csv").write_text('1,"a,b",x\n2,"c",y\n')
    (root / "multi.txt").write_text("1||a;;2||b;;")
    table = pa.table({
        "id": pa.array(range(50), pa.int32()),
        "big": pa.array([i * 10**12 if i % 5 else None for i in range(50)], pa.int64()),
        "name": pa.array([f"n{i}" if i % 4 else None for i in range(50)]),
        "price": pa.array([decimal.Decimal(i) / 4 for i in range(50)], pa.decimal128(10, 2)),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(50)]),
        "ts": pa.array([dt.datetime(2024, 2, 1, 12, 0, i % 60, 1000 * i) for i in range(50)],
                       pa.timestamp("us")),
        "ratio": pa.array([i / 3 for i in range(50)], pa.float64()),
        "flag": pa.array([i % 2 == 0 for i in range(50)]),
    })
    pq.write_table(table, root / "t.parquet")
    paorc.write_table(table, root / "t.orc")
    yield rel, root


def _local(path: str, fmt: str = "csv", **props: str) -> str:
    args = {"file_path": path, "backend_id": "10000", "format": fmt, **props}
    return "local(" + ", ".join(f'"{k}" = "{v}"' for k, v in args.items()) + ")"


def _rows(conn, sql: str) -> list[tuple[object, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _duck_csv(path: Path | str, sep: str = "|") -> list[tuple[object, ...]]:
    return duckdb.sql(f"SELECT * FROM read_csv('{path}', header = false, all_varchar = true, "
                      f"delim = '{sep}', quote = '', escape = '', nullstr = '\\N')").fetchall()


def test_csv_columns_are_strings_named_c1_to_cn(conn, files) -> None:
    rel, root = files
    got = _rows(conn, f"SELECT * FROM {_local(rel + '/part1.csv', column_separator='|')}")
    assert normalize_rows(got) == normalize_rows(_duck_csv(root / "part1.csv"))
    desc = _rows(conn, f"DESC FUNCTION {_local(rel + '/part1.csv', column_separator='|')}")
    assert desc == [(f"c{i}", "TEXT", "Yes", "false", "NULL", "") for i in range(1, 5)]


def test_glob_where_aggregate_and_alias_equal_duckdb(conn, files) -> None:
    rel, root = files
    tvf = _local(rel + "/part*.csv", column_separator="|")
    got = _rows(conn, f"SELECT t.c2, count(*), sum(cast(t.c3 AS DOUBLE)) FROM {tvf} AS t "
                      "WHERE cast(t.c1 AS INT) > 25 GROUP BY t.c2")
    want = duckdb.sql(
        f"SELECT column1, count(*), sum(cast(column2 AS DOUBLE)) FROM read_csv('{root}/part*.csv',"
        " header = false, all_varchar = true, delim = '|') WHERE cast(column0 AS INT) > 25 "
        "GROUP BY column1").fetchall()
    assert normalize_rows(got) == normalize_rows(want)
    assert len(got) == 7


def test_null_marker_gzip_and_header(conn, files) -> None:
    rel, root = files
    got = _rows(conn, f"SELECT * FROM {_local(rel + '/nulls.csv', column_separator='|')}")
    assert normalize_rows(got) == [("1", None, "x"), ("2", "b", None)]
    gz = _rows(conn, f"SELECT * FROM {_local(rel + '/data.csv.gz', column_separator='|')}")
    assert normalize_rows(gz) == normalize_rows(_duck_csv(root / "data.csv.gz"))
    header_tvf = _local(rel + "/header.csv", "csv_with_names", column_separator=",")
    named = _rows(conn, f"SELECT city, id FROM {header_tvf} ORDER BY id")
    assert named == [("Oslo", "1"), ("Lima", "2")]
    js = _rows(conn, f"SELECT * FROM {_local(rel + '/rows.json', 'json')} ORDER BY id")
    assert js == [("1", "Oslo", '["a","b"]'), ("2", None, "[]")]
    # the load core's CSV options: enclose, multi-byte separators and line delimiters
    enclosed = _local(rel + "/enclosed.csv", column_separator=",", enclose='\\"')
    assert sorted(_rows(conn, f"SELECT * FROM {enclosed}")) == [("1", "a,b", "x"),
                                                                 ("2", "c", "y")]
    multi = _local(rel + "/multi.txt", column_separator="||", line_delimiter=";;")
    assert sorted(_rows(conn, f"SELECT * FROM {multi}")) == [("1", "a"), ("2", "b")]
    skip_tvf = _local(rel + "/skip.csv", skip_lines="1", column_separator="|")
    skipped = _rows(conn, f"SELECT * FROM {skip_tvf}")
    assert sorted(skipped) == [("1", "x", "y"), ("2", "z", "w")]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_typed_formats_map_to_doris_types(conn, files, fmt: str) -> None:
    rel, root = files
    tvf = _local(f"{rel}/t.{fmt}", fmt)
    desc = _rows(conn, f"DESC FUNCTION {tvf}")
    assert [(r[0], r[1]) for r in desc] == [
        ("id", "INT"), ("big", "BIGINT"), ("name", "TEXT"), ("price", "DECIMAL(10, 2)"),
        ("day", "DATE"), ("ts", "DATETIME(6)"), ("ratio", "DOUBLE"), ("flag", "BOOLEAN")]
    got = _rows(conn, f"SELECT * FROM {tvf} WHERE id >= 3")
    if fmt == "parquet":
        want = duckdb.sql(f"SELECT * FROM read_parquet('{root}/t.parquet') WHERE id >= 3"
                          ).fetchall()
    else:
        arrow = paorc.read_table(root / "t.orc")  # noqa: F841 - read by DuckDB's replacement scan
        want = duckdb.sql("SELECT * FROM arrow WHERE id >= 3").fetchall()
    assert normalize_rows(got) == normalize_rows(want)
    assert len(got) == 47


def test_insert_select_from_local_loads_the_rows(db_conn, files) -> None:
    rel, root = files
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT, name VARCHAR(20), price DECIMAL(10, 2), day DATE) "
                    "DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 3 "
                    "PROPERTIES ('replication_num' = '1')")
        cur.execute(f"INSERT INTO t SELECT c1, c2, c3, c4 FROM "
                    f"{_local(rel + '/part*.csv', column_separator='|')}")
        assert cur.rowcount == len(CSV_ROWS)
    got = _rows(db_conn, "SELECT id, name, price, day FROM t")
    want = duckdb.sql(
        f"SELECT cast(column0 AS INT), column1, cast(column2 AS DECIMAL(10, 2)), "
        f"cast(column3 AS DATE) FROM read_csv('{root}/part*.csv', header = false, "
        "all_varchar = true, delim = '|')").fetchall()
    assert normalize_rows(got) == normalize_rows(want)
    # a join of the table with the file (the file scan feeds an exchange of its own fragment)
    tvf = _local(rel + "/part2.csv", column_separator="|")
    joined = _rows(db_conn, f"SELECT t.id, f.c2 FROM t JOIN {tvf} f "
                            "ON t.id = cast(f.c1 AS INT) WHERE t.id % 10 = 0")
    assert sorted(joined) == [(i, f"name{i % 7}") for i in range(210, 301, 10)]


def test_explain_shows_a_file_scan_with_its_row_estimate(conn, files) -> None:
    rel, _ = files
    lines = [r[0] for r in _rows(conn, f"EXPLAIN SELECT c1 FROM {_local(rel + '/part1.csv')}")]
    assert any("VFILE_SCAN_NODE" in line for line in lines)
    card = next(int(ln.split("=")[1]) for ln in lines if "cardinality=" in ln)
    assert 150 <= card <= 260  # 200 lines of about the first line's length
    lines = [r[0] for r in _rows(
        conn, f"EXPLAIN SELECT id FROM {_local(rel + '/t.parquet', 'parquet')}")]
    assert any(ln.strip() == "cardinality=50" for ln in lines)  # the parquet footer's count


def _error(conn, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as info:
        _rows(conn, sql)
    code, message = info.value.args[0], info.value.args[1]
    return code, message


def test_paths_outside_the_import_dir_are_refused(server, conn, files) -> None:
    rel, root = files
    secret = server.data_dir / "fe" / "catalog.db"
    code, msg = _error(conn, f"SELECT * FROM {_local('../fe/catalog.db')}")
    assert code == 1105 and "can not contain '..'" in msg
    code, msg = _error(conn, f"SELECT * FROM {_local(str(secret))}")
    assert code == 1105 and "outside the import directory" in msg
    os.symlink(server.data_dir / "fe", root / "escape")
    code, msg = _error(conn, f"SELECT * FROM {_local(rel + '/escape/catalog.db')}")
    assert code == 1105 and "outside the import directory" in msg
    code, msg = _error(conn, f"SELECT * FROM {_local(rel + '/nothing_*.csv')}")
    assert code == 1105 and "No matching files" in msg


def test_doris_argument_checks(conn, files) -> None:
    rel, _ = files
    assert "'backend_id' is required when 'shared_storage' is false." in _error(
        conn, f'SELECT * FROM local("file_path" = "{rel}/part1.csv", "format" = "csv")')[1]
    assert "backend not found with backend_id = 424242" in _error(
        conn, f"SELECT * FROM {_local(rel + '/part1.csv', backend_id='424242')}")[1]
    assert "colour is invalid property" in _error(
        conn, f"SELECT * FROM {_local(rel + '/part1.csv', colour='red')}")[1]
    assert "format:xml is not supported." in _error(
        conn, f"SELECT * FROM {_local(rel + '/part1.csv', 'xml')}")[1]
    assert "property csv_schema of local() is not supported yet" in _error(
        conn, f"SELECT * FROM {_local(rel + '/part1.csv', csv_schema='a:int')}")[1]
    shared = (f'SELECT count(*) FROM local("file_path" = "{rel}/part1.csv", '
              '"shared_storage" = "true", "format" = "csv")')
    assert _rows(conn, shared) == [(200,)]


def test_bad_files_give_errors_and_the_server_stays_up(conn, files) -> None:
    rel, root = files
    good = gzip.compress(b"1|a\n2|b\n" * 1000)
    (root / "cut.csv.gz").write_bytes(good[: len(good) // 2])
    (root / "junk.parquet").write_bytes(b"PAR1 this is not parquet")
    (root / "latin1.csv").write_bytes(b"1|caf\xe9\n")
    (root / "latin1_late.csv").write_bytes(b"1|ok\n" * 20000 + b"2|caf\xe9\n")
    for path, fmt in [("cut.csv.gz", "csv"), ("junk.parquet", "parquet"),
                      ("latin1.csv", "csv"), ("latin1_late.csv", "csv")]:
        tvf = _local(f"{rel}/{path}", fmt, column_separator="|")
        code, message = _error(conn, f"SELECT * FROM {tvf}")
        assert code == 1105 and path in message, (path, message)
    assert _rows(conn, "SELECT 1") == [(1,)]
