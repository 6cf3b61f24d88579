"""EXPORT TABLE over the wire (pymysql): the asynchronous job moves PENDING -> EXPORTING ->
FINISHED in SHOW EXPORT (Doris' columns), its files under the export directory read back with
DuckDB and pyarrow as the exported rows (columns, WHERE, PARTITION, format, separator), labels
are unique, CANCEL EXPORT refuses a finished job, and paths outside the export directory or
unknown columns are refused at once."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pymysql
import pytest
from support.names import unique_db_name
from support.rows import normalize_rows

SHOW_COLUMNS = ["JobId", "Label", "State", "Progress", "TaskInfo", "Path", "CreateTime",
                "StartTime", "FinishTime", "Timeout", "ErrorMsg", "OutfileInfo"]


@pytest.fixture(scope="module")
def table(server) -> Iterator[tuple[str, Path]]:
    """(database, a fresh folder under the export dir); table t is partitioned by day."""
    db = unique_db_name("export")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT, day DATE, name VARCHAR(20), v DOUBLE) "
                    "DUPLICATE KEY(k) PARTITION BY RANGE(day) ("
                    "PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
                    "PARTITION p2 VALUES LESS THAN ('2024-03-01')) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ('replication_num' = '1')")
        values = ", ".join(
            f"({i}, '2024-0{1 + i % 2}-{1 + i % 28:02d}', "
            f"{'NULL' if i % 7 == 0 else repr(f'n{i % 5}')}, {i / 4})" for i in range(300))
        cur.execute(f"INSERT INTO t VALUES {values}")
    yield db, server.data_dir / "export" / f"ex_{secrets.token_hex(4)}"
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {db}")


def _run(conn, sql: str) -> list[tuple[object, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _wait(conn, label: str, timeout: float = 60.0) -> dict[str, object]:
    """The job's SHOW EXPORT row once it has stopped (FINISHED or CANCELLED)."""
    deadline = time.monotonic() + timeout
    while True:
        with conn.cursor() as cur:
            cur.execute(f'SHOW EXPORT WHERE LABEL = "{label}"')
            names = [d[0] for d in cur.description]
            (row,) = cur.fetchall()
        job = dict(zip(names, row))
        if job["State"] in ("FINISHED", "CANCELLED") or time.monotonic() > deadline:
            return job
        time.sleep(0.05)  # the job runs on its own thread; nothing to trigger


def _export(conn, body: str, **props: str) -> None:
    clause = ", ".join(f'"{k}" = "{v}"' for k, v in props.items())
    _run(conn, f"EXPORT TABLE {body} PROPERTIES ({clause})")


def test_csv_export_with_columns_where_and_separator(server, table) -> None:
    db, folder = table
    target = folder / "csv"
    label = f"l_{secrets.token_hex(4)}"
    with server.connect(db) as conn:
        _export(conn, f't WHERE k > 100 TO "file://{target}/"', label=label,
                columns="k,name,v", column_separator="|")
        job = _wait(conn, label)
        want = _run(conn, "SELECT k, name, v FROM t WHERE k > 100")
        with conn.cursor() as cur:
            cur.execute(f'SHOW EXPORT FROM {db} WHERE LABEL = "{label}"')
            assert [d[0] for d in cur.description] == SHOW_COLUMNS
    assert job["State"] == "FINISHED" and job["Progress"] == "100%", job
    assert job["ErrorMsg"] == "NULL" and job["Path"] == f"file://{target}/"
    info = json.loads(job["TaskInfo"])
    assert (info["format"], info["column_separator"], info["tbl"]) == ("csv", "|", "t")
    (outfile,) = json.loads(job["OutfileInfo"])[0]
    assert outfile["totalRows"] == str(len(want)) and outfile["fileNumber"] == "1"
    files = sorted(target.glob("*.csv"))
    assert len(files) == 1 and outfile["url"].startswith(f"file://{target}/")
    got = duckdb.sql(f"SELECT * FROM read_csv('{files[0]}', header = false, delim = '|', "
                     "nullstr = '\\N', columns = {'k': 'INT', 'name': 'VARCHAR', "
                     "'v': 'DOUBLE'})").fetchall()
    assert normalize_rows(got) == normalize_rows(want)


def test_parquet_export_of_one_partition(server, table) -> None:
    db, folder = table
    target = folder / "parquet"
    label = f"p_{secrets.token_hex(4)}"
    with server.connect(db) as conn:
        _export(conn, f't PARTITION (p2) TO "file://{target}/"', label=label, format="parquet")
        job = _wait(conn, label)
        want = _run(conn, "SELECT * FROM t PARTITION (p2)")
    assert job["State"] == "FINISHED", job
    assert json.loads(job["TaskInfo"])["partitions"] == ["p2"]
    (f,) = sorted(target.glob("*.parquet"))
    arrow = pq.read_table(f)
    assert arrow.schema.names == ["k", "day", "name", "v"]
    assert normalize_rows(tuple(r.values()) for r in arrow.to_pylist()) == normalize_rows(want)
    duck = duckdb.sql(f"SELECT * FROM read_parquet('{f}')").fetchall()
    assert normalize_rows(duck) == normalize_rows(want) and len(want) == 150


def test_parallelism_exports_partitions_as_separate_tasks(server, table) -> None:
    db, folder = table
    target = folder / "parallel"
    target.mkdir(parents=True)
    (target / "old.parquet").write_text("stale")  # delete_existing_files clears it, once
    label = f"par_{secrets.token_hex(4)}"
    with server.connect(db) as conn:
        _export(conn, f't TO "file://{target}/"', label=label, format="parquet",
                parallelism="2", delete_existing_files="true")
        job = _wait(conn, label)
        want = _run(conn, "SELECT * FROM t")
    assert job["State"] == "FINISHED", job
    tasks = json.loads(job["OutfileInfo"])
    assert len(tasks) == 2 and sorted(int(t[0]["totalRows"]) for t in tasks) == [150, 150]
    files = sorted(target.glob("*.parquet"))
    assert len(files) == 2 and not (target / "old.parquet").exists()
    got = duckdb.sql(f"SELECT * FROM read_parquet('{target}/*.parquet')").fetchall()
    assert normalize_rows(got) == normalize_rows(want)


def test_labels_are_unique_and_finished_jobs_cannot_be_cancelled(server, table) -> None:
    db, folder = table
    label = f"u_{secrets.token_hex(4)}"
    with server.connect(db) as conn:
        _export(conn, f't TO "file://{folder}/u1/"', label=label)
        assert _wait(conn, label)["State"] == "FINISHED"
        with pytest.raises(pymysql.MySQLError) as info:
            _export(conn, f't TO "file://{folder}/u2/"', label=label)
        assert f"Label [{label}] has already been used." in info.value.args[1]
        with pytest.raises(pymysql.MySQLError) as info:
            _run(conn, f'CANCEL EXPORT WHERE LABEL = "{label}"')
        assert "already finished or cancelled" in info.value.args[1]
        assert _run(conn, 'SHOW EXPORT WHERE STATE = "CANCELLED" AND LABEL = "none"') == []
        rows = _run(conn, "SHOW EXPORT ORDER BY JobId DESC")
        assert [r[0] for r in rows] == sorted((r[0] for r in rows), key=int, reverse=True)
        assert _run(conn, "SHOW EXPORT ORDER BY JobId DESC LIMIT 1") == rows[:1]
        assert _run(conn, "SHOW EXPORT ORDER BY JobId DESC LIMIT 1, 1") == rows[1:2]


def test_cancel_stops_a_running_job_without_leaving_files(server, table) -> None:
    db, folder = table
    target = folder / "cancel"
    label = f"c_{secrets.token_hex(4)}"
    with server.connect(db) as conn:
        # the job runs on its own thread: a CANCEL sent right after EXPORT finds it running
        # (measured: every time); should it have finished first, CANCEL must say so
        _export(conn, f't TO "file://{target}/"', label=label, format="parquet")
        cancelled = True
        try:
            _run(conn, f'CANCEL EXPORT FROM {db} WHERE LABEL = "{label}"')
        except pymysql.MySQLError as e:  # it finished before the CANCEL arrived
            assert "already finished" in e.args[1]
            cancelled = False
        job = _wait(conn, label)
    if cancelled:
        assert job["State"] == "CANCELLED" and "user cancel" in job["ErrorMsg"], job
        assert not target.exists() or list(target.iterdir()) == []
    else:
        assert job["State"] == "FINISHED"


def test_bad_exports_are_refused_at_once(server, table, tmp_path) -> None:
    db, folder = table
    cases = [
        (f't TO "file://{tmp_path}/"', {}, "may only write under the export directory"),
        (f't TO "file://{folder}/x/"', {"columns": "k,nope"}, "Unknown column [nope]"),
        (f't PARTITION (p9) TO "file://{folder}/x/"', {}, "Partition p9 does not exist"),
        (f't TO "file://{folder}/x/"', {"colour": "red"}, "Invalid property key: [colour]"),
        (f't TO "file://{folder}/x/"', {"format": "xml"}, "format:xml is not supported."),
        (f'nope TO "file://{folder}/x/"', {}, "Unknown table 'nope'"),
        (f't TO "file://{folder}/x/"', {"label": "a b"}, "Label format error."),
    ]
    with server.connect(db) as conn:
        for body, props, message in cases:
            with pytest.raises(pymysql.MySQLError) as info:
                _export(conn, body, **{"label": f"bad_{secrets.token_hex(4)}", **props})
            assert message in info.value.args[1], (body, info.value.args)
    assert list(tmp_path.iterdir()) == []


def test_show_export_survives_a_restart(tmp_path) -> None:
    """A server of its own: a finished job's SHOW EXPORT row is the same after a restart."""
    from support.server import ServerProcess

    with ServerProcess(tmp_path / "data", backends=1) as srv:
        with srv.connect() as conn:
            _run(conn, "CREATE DATABASE d")
            _run(conn, "CREATE TABLE d.t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) "
                       "BUCKETS 1 PROPERTIES ('replication_num' = '1')")
            _run(conn, "INSERT INTO d.t VALUES (1), (2)")
            _run(conn, f'EXPORT TABLE d.t TO "file://{srv.data_dir.resolve()}/export/r/" '
                       'PROPERTIES ("label" = "kept")')
            with srv.connect("d") as dconn:
                before = _wait(dconn, "kept")
        assert before["State"] == "FINISHED"
        srv.stop()
        srv.start()
        with srv.connect("d") as conn:
            with conn.cursor() as cur:
                cur.execute('SHOW EXPORT WHERE LABEL = "kept"')
                after = dict(zip([d[0] for d in cur.description], cur.fetchone()))
            assert after == before
            with pytest.raises(pymysql.MySQLError) as info:  # the label is still taken
                _run(conn, f'EXPORT TABLE t TO "file://{srv.data_dir.resolve()}/export/s/" '
                           'PROPERTIES ("label" = "kept")')
            assert "Label [kept] has already been used." in info.value.args[1]
