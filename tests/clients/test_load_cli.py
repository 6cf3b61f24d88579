"""`shaledb load FILE db.table`: the real console script in a subprocess against a live server.

A CSV and a parquet file load in several chunks and the table equals DuckDB's reading of the
file; a load killed mid-way and rerun, and a load whose chunk k the server refuses (a NULL in a
NOT NULL column) fixed in place and rerun, end with every row exactly once; without the state
file every chunk is skipped by its label; a bad table or password is Doris' message and a
non-zero exit; `--help` lists every subcommand and `--version` prints the package's version.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from support.rows import normalize_rows

REPO_ROOT = Path(__file__).resolve().parents[2]
SHALEDB = Path(sys.executable).parent / "shaledb"  # the console script pyproject.toml defines
ROWS = 6000
CHUNK = "24KB"  # about 12 chunks of the ~280 KB file
DUCK_COLUMNS = ("{'k': 'INT', 'dt': 'DATE', 'user_id': 'BIGINT', 'city': 'VARCHAR', "
                "'cost': 'DECIMAL(10,2)', 'score': 'DOUBLE'}")


def cli_env(tmp_path: Path) -> dict[str, str]:
    # the worktree's packages before the editable install's; resume state under tmp
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def shaledb_load(server, tmp_path: Path, *args: str, chunk: str = CHUNK,
                 ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SHALEDB), "load", *args, "--http-port", str(server.http_port),
                           "--chunk-size", chunk, "--json", "--no-progress"],
                          capture_output=True, text=True, timeout=300, env=cli_env(tmp_path),
                          check=False)


@pytest.fixture
def orders(db_conn) -> str:
    with db_conn.cursor() as cur:
        cur.execute("""CREATE TABLE orders (
            k INT NOT NULL, dt DATE NOT NULL, user_id BIGINT NOT NULL, city VARCHAR(20),
            cost DECIMAL(10, 2), score DOUBLE)
            DUPLICATE KEY(k, dt)
            PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-02-01"),
                                    PARTITION p2 VALUES LESS THAN ("2024-03-01"))
            DISTRIBUTED BY HASH(user_id) BUCKETS 3 PROPERTIES ("replication_num" = "1")""")
    return "orders"


def write_orders(path: Path, n: int = ROWS) -> Path:
    """`n` comma-separated rows; row i has user_id 10 + i % 90 (always two digits)."""
    rng = random.Random(11)
    cities = ["Oslo", "Rome", "Lima", "Kyiv", "São Paulo", "\\N"]
    lines = []
    for i in range(n):
        day = rng.randrange(0, 59)
        month, d = (1, day + 1) if day < 31 else (2, day - 30)
        cost = "\\N" if rng.random() < 0.1 else f"{rng.randrange(-10**7, 10**7) / 100:.2f}"
        lines.append(f"{i},2024-{month:02d}-{d:02d},{10 + i % 90},{rng.choice(cities)},{cost},"
                     f"{rng.uniform(-1e6, 1e6)!r}")
    path.write_text("\n".join(lines) + "\n")
    return path


def duck_rows(path: Path) -> list[tuple]:
    return duckdb.connect().execute(
        f"SELECT * FROM read_csv(?, header=false, delim=',', nullstr='\\N', quote='', "
        f"columns={DUCK_COLUMNS})", [str(path)]).fetchall()


def table_rows(db_conn, table: str) -> list[tuple]:
    with db_conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {table}")
        return list(cur.fetchall())


def summary(proc: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(proc.stdout)


def test_csv_load_in_chunks_equals_duckdb(server, db, db_conn, orders, tmp_path) -> None:
    path = write_orders(tmp_path / "orders.csv")
    proc = shaledb_load(server, tmp_path, str(path), f"{db}.{orders}", "--column-separator", ",")
    assert proc.returncode == 0, proc.stderr
    s = summary(proc)
    assert s["Status"] == "Success"
    assert s["Chunks"] == s["ChunksLoaded"] > 5 and s["ChunksSkipped"] == 0
    assert (s["NumberTotalRows"], s["NumberLoadedRows"], s["NumberFilteredRows"]) == (ROWS, ROWS, 0)
    assert s["LoadBytes"] == path.stat().st_size
    assert s["MBPerSecond"] > 0 and s["RowsPerSecond"] > 0
    assert normalize_rows(table_rows(db_conn, orders)) == normalize_rows(duck_rows(path))
    assert f"chunk {s['Chunks']}/{s['Chunks']}: Success, label {s['LabelPrefix']}_" in proc.stderr

    # the same command again: every chunk is skipped (state file), nothing loads twice
    again = shaledb_load(server, tmp_path, str(path), f"{db}.{orders}", "--column-separator", ",")
    assert again.returncode == 0, again.stderr
    s2 = summary(again)
    assert (s2["ChunksLoaded"], s2["ChunksSkipped"], s2["NumberLoadedRows"]) == \
        (0, s["Chunks"], ROWS)
    # ... and without the state file every chunk is skipped by its label
    (tmp_path / "cache").rename(tmp_path / "cache.lost")
    third = shaledb_load(server, tmp_path, str(path), f"{db}.{orders}", "--column-separator", ",")
    assert third.returncode == 0, third.stderr
    assert summary(third)["ChunksSkipped"] == s["Chunks"]
    assert "already FINISHED" in third.stderr
    assert len(table_rows(db_conn, orders)) == ROWS


def test_parquet_load_by_row_groups_equals_duckdb(server, db, db_conn, orders, tmp_path) -> None:
    csv_path = write_orders(tmp_path / "orders.csv", 3000)
    table = pacsv.read_csv(csv_path, read_options=pacsv.ReadOptions(
        column_names=["k", "dt", "user_id", "city", "cost", "score"]),
        convert_options=pacsv.ConvertOptions(
            null_values=["\\N"], strings_can_be_null=True, column_types={
            "k": pa.int32(), "dt": pa.date32(), "user_id": pa.int64(), "city": pa.string(),
            "cost": pa.decimal128(10, 2), "score": pa.float64()}))
    path = tmp_path / "orders.parquet"
    pq.write_table(table, path, row_group_size=500)
    proc = shaledb_load(server, tmp_path, str(path), f"{db}.{orders}", chunk="1")
    assert proc.returncode == 0, proc.stderr
    s = summary(proc)
    assert s["Chunks"] == 6 and s["NumberLoadedRows"] == 3000
    expected = duckdb.connect().execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
    assert normalize_rows(table_rows(db_conn, orders)) == normalize_rows(expected)


def test_killed_load_resumes_without_duplicates(server, db, db_conn, orders, tmp_path) -> None:
    path = write_orders(tmp_path / "orders.csv")
    args = [str(SHALEDB), "load", str(path), f"{db}.{orders}", "--column-separator", ",",
            "--http-port", str(server.http_port), "--chunk-size", CHUNK, "--json", "--no-progress"]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=cli_env(tmp_path))
    try:
        for line in proc.stderr:
            if line.startswith("chunk 3/"):
                proc.send_signal(signal.SIGKILL)  # mid-way: chunk 4 may be in flight
                break
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    partial = len(table_rows(db_conn, orders))
    assert 0 < partial < ROWS

    resumed = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False,
                             env=cli_env(tmp_path))
    assert resumed.returncode == 0, resumed.stderr
    s = summary(resumed)
    assert s["ChunksSkipped"] >= 3 and s["ChunksLoaded"] >= 1
    assert "chunk 1/" in resumed.stderr and "skipped" in resumed.stderr
    assert normalize_rows(table_rows(db_conn, orders)) == normalize_rows(duck_rows(path))


def test_chunk_refused_by_the_server_then_fixed_resumes(server, db, db_conn, orders,
                                                        tmp_path) -> None:
    path = write_orders(tmp_path / "orders.csv")
    lines = path.read_bytes().split(b"\n")
    bad_line = ROWS * 2 // 3
    good = lines[bad_line]
    fields = good.split(b",")
    fields[2] = b"\\N"  # NULL user_id (NOT NULL): same length as the two-digit id
    lines[bad_line] = b",".join(fields)
    path.write_bytes(b"\n".join(lines))
    label = "fix_then_resume"
    proc = shaledb_load(server, tmp_path, str(path), f"{db}.{orders}", "--column-separator", ",",
                        "--label", label)
    assert proc.returncode == 1
    assert "[DATA_QUALITY_ERROR]too many filtered rows" in proc.stderr
    assert "null value for not null column, column=user_id" in proc.stderr
    assert f"--label {label}" in proc.stderr
    failed = summary(proc)
    assert failed["Status"] == "Fail" and failed["ChunksLoaded"] > 1
    loaded = len(table_rows(db_conn, orders))
    assert loaded == failed["NumberLoadedRows"] and 0 < loaded < bad_line

    lines[bad_line] = good  # fixed in place: the chunks keep their byte ranges
    path.write_bytes(b"\n".join(lines))
    resumed = shaledb_load(server, tmp_path, str(path), f"{db}.{orders}", "--column-separator",
                           ",", "--label", label)
    assert resumed.returncode == 0, resumed.stderr
    s = summary(resumed)
    assert s["ChunksSkipped"] == failed["ChunksLoaded"]
    assert s["NumberLoadedRows"] == ROWS
    assert normalize_rows(table_rows(db_conn, orders)) == normalize_rows(duck_rows(path))


def test_bad_table_and_bad_password_fail_with_doris_message(server, db, tmp_path) -> None:
    path = write_orders(tmp_path / "orders.csv", 50)
    proc = shaledb_load(server, tmp_path, str(path), f"{db}.no_such_table")
    assert proc.returncode == 1
    assert ("[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = table not found, "
            "tableName=no_such_table") in proc.stderr
    proc = shaledb_load(server, tmp_path, str(path), f"{db}.t", "--password", "wrong")
    assert proc.returncode == 1 and "Access denied for user 'root'" in proc.stderr
    proc = shaledb_load(server, tmp_path, str(path), "no_dot")
    assert proc.returncode == 2 and "db.table" in proc.stderr


def test_help_lists_subcommands_and_version(tmp_path) -> None:
    out = subprocess.run([str(SHALEDB), "--help"], capture_output=True, text=True, check=True,
                         env=cli_env(tmp_path)).stdout
    assert "serve" in out and "run the server" in out
    assert "load" in out and "Stream Load a file" in out
    assert "warm-up" in out and "compile the load path's kernels" in out
    ver = subprocess.run([str(SHALEDB), "--version"], capture_output=True, text=True,
                         check=True, env=cli_env(tmp_path)).stdout
    assert ver.strip() == f"shaledb {metadata.version('shaledb')}"
    load_help = subprocess.run([str(SHALEDB), "load", "--help"], capture_output=True, text=True,
                               check=True, env=cli_env(tmp_path)).stdout
    for flag in ("--format", "--label", "--columns", "--column-separator", "--chunk-size",
                 "--http-port", "--user", "--password"):
        assert flag in load_help


def test_csv_with_names_repeats_the_header_and_headers_pass_through(server, db, db_conn, orders,
                                                                    tmp_path) -> None:
    body = write_orders(tmp_path / "body.csv", 3000).read_text()
    lines = body.splitlines(keepends=True)
    lines[1500] = "1500,2024-01-05,\\N,Oslo,1.00,2.0\n"  # NULL user_id: one filtered row
    path = tmp_path / "orders_named.csv"
    path.write_text("k,dt,user_id,city,cost,score\n" + "".join(lines))
    proc = shaledb_load(server, tmp_path, str(path), f"{db}.{orders}", "--format",
                        "csv_with_names", "--column-separator", ",", "-H", "max_filter_ratio:0.01")
    assert proc.returncode == 0, proc.stderr
    s = summary(proc)
    assert s["Chunks"] > 3  # every chunk starts with the header line, which the server skips
    assert (s["NumberTotalRows"], s["NumberLoadedRows"], s["NumberFilteredRows"]) == \
        (3000, 2999, 1)
    expected = duckdb.connect().execute(
        f"SELECT * FROM read_csv(?, header=true, delim=',', nullstr='\\N', quote='', "
        f"columns={DUCK_COLUMNS}) WHERE user_id IS NOT NULL", [str(path)]).fetchall()
    assert normalize_rows(table_rows(db_conn, orders)) == normalize_rows(expected)


def test_json_lines_load_in_chunks(server, db, db_conn, orders, tmp_path) -> None:
    rows = duck_rows(write_orders(tmp_path / "orders.csv", 2000))
    path = tmp_path / "orders.jsonl"
    with path.open("w") as f:
        for k, dt, user_id, city, cost, score in rows:
            f.write(json.dumps({"k": k, "dt": str(dt), "user_id": user_id, "city": city,
                                "cost": None if cost is None else str(cost), "score": score})
                    + "\n")
    proc = shaledb_load(server, tmp_path, str(path), f"{db}.{orders}", chunk="16KB")
    assert proc.returncode == 0, proc.stderr
    s = summary(proc)
    assert s["Chunks"] > 3 and s["NumberLoadedRows"] == 2000
    assert normalize_rows(table_rows(db_conn, orders)) == normalize_rows(rows)
