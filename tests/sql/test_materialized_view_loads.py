"""Every load path maintains a sync materialized view, and a view survives a restart.

Stream Load (curl), two-phase Stream Load (visible only after the commit), group commit and
INSERT all write the view (an expression key and an expression sum); after `kill`-free restart
the view is still chosen, equals DuckDB, and a load after the restart computes its expression
columns again (the evaluator is installed before anything loads)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
from support.alter_jobs import wait_alter_job
from support.duck import insert_rows
from support.server import ServerProcess
from support.stream_load import curl_load

TABLE = """CREATE TABLE t (d INT NOT NULL, k VARCHAR(8), v INT, w BIGINT)
DUPLICATE KEY(d, k) DISTRIBUTED BY HASH(d) BUCKETS 2"""
VIEW = ("CREATE MATERIALIZED VIEW by_month AS SELECT d DIV 100, k, SUM(v * 3), COUNT(w), "
        "MAX(w) FROM t GROUP BY d DIV 100, k")
QUERY = ("SELECT d DIV 100 AS m, k, SUM(v * 3), COUNT(w), MAX(w) FROM t "
         "GROUP BY d DIV 100, k")


def _rows(cur, sql: str) -> list[tuple]:
    cur.execute(sql)
    return list(cur.fetchall())


def _index(cur) -> str:
    text = "\n".join(r[0] for r in _rows(cur, "EXPLAIN " + QUERY))
    line = next(x for x in text.splitlines() if "TABLE: " in x)
    return line.split("(", 1)[1].split(")", 1)[0]


def _check(cur, rows: list[tuple]) -> None:
    d = duckdb.connect()
    d.execute("CREATE TABLE t (d INTEGER, k VARCHAR, v INTEGER, w BIGINT)")
    insert_rows(d, "t", rows)
    expected = sorted(map(repr, d.execute(QUERY.replace(" DIV ", " // ")).fetchall()))
    assert _index(cur) == "by_month"
    got = sorted(map(repr, (tuple(int(x) if x is not None and not isinstance(x, str) else x
                                  for x in r) for r in _rows(cur, QUERY))))
    assert got == expected


def _csv(path: Path, rows: list[tuple]) -> Path:
    path.write_text("".join(",".join(r"\N" if x is None else str(x) for x in r) + "\n"
                            for r in rows))
    return path


def test_every_load_path_writes_the_view_and_it_survives_a_restart(tmp_path: Path) -> None:
    rows: list[tuple] = []
    srv = ServerProcess(tmp_path / "data", backends=2).start()
    try:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE ml")
            cur.execute("USE ml")
            cur.execute(TABLE)
            cur.execute(VIEW)
            assert wait_alter_job(cur, "by_month", "MATERIALIZED VIEW", 60)["State"] == "FINISHED"
            batch = [(20240105, "a", 1, 10), (20240131, "a", None, 11), (20240201, "b", 4, None)]
            _, _, body = curl_load(srv, "ml", "t", _csv(tmp_path / "1.csv", batch),
                                   "column_separator:,")
            assert body["Status"] == "Success", body
            rows += batch
            _check(cur, rows)
            batch = [(20240105, "a", 7, 1), (20231231, "ü", 2, 2)]
            _, _, body = curl_load(srv, "ml", "t", _csv(tmp_path / "2.csv", batch),
                                   "column_separator:,", "two_phase_commit:true", "label:mv2pc")
            assert body["Status"] == "Success", body
            _check(cur, rows)  # precommitted: nothing visible yet, in the view either
            url = f"http://127.0.0.1:{srv.http_port}/api/ml/_stream_load_2pc"
            out = subprocess.run(
                ["curl", "-s", "--location-trusted", "-u", "root:", "-X", "PUT", "-H",
                 f"txn_id:{body['TxnId']}", "-H", "txn_operation:commit", url],
                capture_output=True, text=True, timeout=60, check=True).stdout
            assert json.loads(out)["status"] == "Success", out
            rows += batch
            _check(cur, rows)
            batch = [(20240210, "b", 5, 5)]
            _, _, body = curl_load(srv, "ml", "t", _csv(tmp_path / "3.csv", batch),
                                   "column_separator:,", "group_commit:sync_mode")
            assert body["Status"] == "Success", body
            rows += batch
            _check(cur, rows)
            cur.execute("INSERT INTO t VALUES (20240301, '', 9, 9)")
            rows.append((20240301, "", 9, 9))
            _check(cur, rows)
    finally:
        srv.stop()
    srv = ServerProcess(tmp_path / "data", backends=2).start()
    try:
        with srv.connect("ml") as c, c.cursor() as cur:
            _check(cur, rows)
            cur.execute("INSERT INTO t VALUES (20240302, 'a', 3, NULL), (20240105, 'a', 1, 1)")
            rows += [(20240302, "a", 3, None), (20240105, "a", 1, 1)]
            _check(cur, rows)
    finally:
        srv.stop()
