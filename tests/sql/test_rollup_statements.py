"""ALTER TABLE ADD / DROP ROLLUP, CANCEL ALTER TABLE ROLLUP, SHOW ALTER TABLE ROLLUP and
SHOW TABLETS over the wire (real server, pymysql), plus a restart in the middle of a job.

Results are checked against DuckDB over the same rows; the rollup's presence is checked through
SHOW TABLETS (which lists the tablets of every visible index) and DESC t ALL."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import duckdb
import pymysql
import pytest
from support.alter_jobs import wait_alter_job
from support.duck import insert_rows
from support.server import ServerProcess

JOB_COLUMNS = [
    "JobId",
    "TableName",
    "CreateTime",
    "FinishTime",
    "BaseIndexName",
    "RollupIndexName",
    "RollupId",
    "TransactionId",
    "State",
    "Msg",
    "Progress",
    "Timeout",
]


def _rows(cur, sql: str) -> list[tuple]:
    cur.execute(sql)
    return list(cur.fetchall())


def _jobs(cur) -> list[dict]:
    cur.execute("SHOW ALTER TABLE ROLLUP")
    names = [d[0] for d in cur.description]
    assert names == JOB_COLUMNS
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _wait_job(cur, rollup: str, timeout: float = 120.0) -> dict:
    return wait_alter_job(cur, rollup, "ROLLUP", timeout)


def _index_names(cur, table: str) -> list[str]:
    return [r[0] for r in _rows(cur, f"DESC {table} ALL") if r[0]]


def _error(cur, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.MySQLError) as ei:
        cur.execute(sql)
    return ei.value.args[0], ei.value.args[1]


AGG_TABLE = """CREATE TABLE sales (
    k1 INT, k2 INT, city VARCHAR(8), s BIGINT SUM, mx INT MAX, mn INT MIN)
    AGGREGATE KEY(k1, k2, city)
    PARTITION BY RANGE(k1) (PARTITION p0 VALUES LESS THAN ("10"),
                            PARTITION p1 VALUES LESS THAN MAXVALUE)
    DISTRIBUTED BY HASH(k2) BUCKETS 3"""


def _load(cur, duck, rnd: random.Random, n: int = 200) -> None:
    rows = [
        (
            rnd.randrange(20),
            rnd.randrange(6),
            rnd.choice(["bj", "sh", "gz"]),
            rnd.randrange(-10, 100),
            rnd.randrange(100),
            rnd.randrange(100),
        )
        for _ in range(n)
    ]
    cur.execute(
        "INSERT INTO sales VALUES "
        + ", ".join(f"({a}, {b}, '{c}', {d}, {e}, {f})" for a, b, c, d, e, f in rows)
    )
    insert_rows(duck, "raw", rows)


def _duck() -> duckdb.DuckDBPyConnection:
    duck = duckdb.connect()
    duck.execute("CREATE TABLE raw (k1 INT, k2 INT, city VARCHAR, s BIGINT, mx INT, mn INT)")
    return duck


def _reference(duck, sql: str) -> list[tuple]:
    duck.execute(
        "CREATE OR REPLACE VIEW sales AS SELECT k1, k2, city, sum(s) AS s, max(mx) AS mx, "
        "min(mn) AS mn FROM raw GROUP BY k1, k2, city"
    )
    return sorted(
        tuple(int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x for x in r)
        for r in duck.execute(sql).fetchall()
    )


QUERIES = [
    "SELECT k2, sum(s) FROM sales GROUP BY k2",
    "SELECT k2, city, sum(s), max(mx) FROM sales GROUP BY k2, city",
    "SELECT city, min(mn) FROM sales WHERE city = 'bj' GROUP BY city",
    "SELECT count(*) FROM sales",
]


def test_add_rollup_job_builds_from_existing_data_while_loads_continue(server, db, db_conn) -> None:
    cur = db_conn.cursor()
    duck = _duck()
    rnd = random.Random(3)
    cur.execute(AGG_TABLE)
    for _ in range(3):
        _load(cur, duck, rnd)
    cur.execute("DELETE FROM sales PARTITION p0 WHERE k2 = 1")
    duck.execute("DELETE FROM raw WHERE k1 < 10 AND k2 = 1")
    cur.execute("ALTER TABLE sales ADD ROLLUP r_k2(k2, city, s, mx)")
    # loads and queries keep working while the job runs
    stop = threading.Event()
    errors: list[BaseException] = []

    def query_loop() -> None:
        try:
            with server.connect(db) as c2, c2.cursor() as cur2:
                while not stop.is_set():
                    cur2.execute("SELECT count(*) FROM sales")
                    cur2.fetchall()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=query_loop)
    t.start()
    try:
        for _ in range(2):
            _load(cur, duck, rnd, 50)
        job = _wait_job(cur, "r_k2")
    finally:
        stop.set()
        t.join()
    assert not errors
    assert job["State"] == "FINISHED", job
    assert job["TableName"] == "sales" and job["BaseIndexName"] == "sales"
    assert job["FinishTime"] not in (None, "NULL")
    assert _index_names(cur, "sales") == ["sales", "r_k2"]
    _load(cur, duck, rnd, 30)  # a load after the job writes the rollup as well
    for sql in QUERIES:
        assert sorted(_rows(cur, sql)) == _reference(duck, sql), sql
    # the rollup's tablets are listed and hold the merged rows of its keys
    tablets = _rows(cur, "SHOW TABLETS FROM sales")
    assert len(tablets) == 2 * 3 * 2  # partitions x buckets x indexes
    rollup_rows = duck.execute(
        "SELECT count(*) FROM (SELECT DISTINCT k1 >= 10, k2, city FROM raw)"
    ).fetchone()[0]
    by_index = sorted(tablets, key=lambda r: int(r[0]))[6:]  # the rollup's tablets come last
    assert sum(int(r[10]) for r in by_index) >= rollup_rows


def test_rollup_errors_use_doris_wording(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(AGG_TABLE)
    cur.execute("ALTER TABLE sales ADD ROLLUP r1(k2, s)")
    assert _wait_job(cur, "r1")["State"] == "FINISHED"
    prefix = "errCode = 2, detailMessage = "
    cases = {
        "ALTER TABLE sales ADD ROLLUP r1(k1, s)": "Rollup index[r1] already exists",
        "ALTER TABLE sales ADD ROLLUP r2(nope)": "Column[nope] does not exist",
        "ALTER TABLE sales ADD ROLLUP r2(k1) FROM nob": "Base index[nob] does not exist",
        "ALTER TABLE sales ADD ROLLUP r2(s, mx)": "No key column is found",
        "ALTER TABLE sales DROP ROLLUP sales": "Cannot drop base index by using DROP ROLLUP.",
        "ALTER TABLE sales DROP ROLLUP r9": "Rollup index[r9] does not exist in table[sales]",
        "CANCEL ALTER TABLE ROLLUP FROM sales": "Table[sales] is not under ROLLUP. Use 'ALTER TABLE DROP ROLLUP' if you want to.",
    }
    for sql, msg in cases.items():
        code, text = _error(cur, sql)
        assert (code, text) == (1105, prefix + msg), sql
    cur.execute("ALTER TABLE sales DROP ROLLUP r1")
    assert _index_names(cur, "sales") == ["sales"]


def test_add_rollup_from_index_and_drop(db_conn) -> None:
    cur = db_conn.cursor()
    duck = _duck()
    cur.execute(AGG_TABLE)
    _load(cur, duck, random.Random(5))
    cur.execute("ALTER TABLE sales ADD ROLLUP r_a(k2, city, s), r_b(city, mn)")
    jobs = {j["RollupIndexName"]: j for j in _jobs(cur)}
    assert set(jobs) == {"r_a", "r_b"}
    assert {_wait_job(cur, n)["State"] for n in jobs} == {"FINISHED"}
    cur.execute("ALTER TABLE sales ADD ROLLUP r_c(city, s) FROM r_a")
    assert _wait_job(cur, "r_c")["State"] == "FINISHED"
    assert _index_names(cur, "sales") == ["sales", "r_a", "r_b", "r_c"]
    for sql in QUERIES:
        assert sorted(_rows(cur, sql)) == _reference(duck, sql), sql
    cur.execute("ALTER TABLE sales DROP ROLLUP r_a, r_c")
    assert _index_names(cur, "sales") == ["sales", "r_b"]
    assert len(_rows(cur, "SHOW TABLETS FROM sales")) == 2 * 3 * 2
    for sql in QUERIES:
        assert sorted(_rows(cur, sql)) == _reference(duck, sql), sql


TABLET_COLUMNS = [
    "TabletId",
    "ReplicaId",
    "BackendId",
    "SchemaHash",
    "Version",
    "LstSuccessVersion",
    "LstFailedVersion",
    "LstFailedTime",
    "LocalDataSize",
    "RemoteDataSize",
    "RowCount",
    "State",
    "LstConsistencyCheckTime",
    "CheckVersion",
    "VersionCount",
    "QueryHits",
    "PathHash",
    "MetaUrl",
    "CompactionStatus",
    "CooldownReplicaId",
    "CooldownMetaId",
]


def test_show_tablets_lists_every_tablet_with_its_backend(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("""CREATE TABLE ev (dt DATE, id INT, v INT) DUPLICATE KEY(dt, id)
        PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-02-01"),
                                PARTITION p2 VALUES LESS THAN ("2024-03-01"))
        DISTRIBUTED BY HASH(id) BUCKETS 4""")
    rows = [(f"2024-0{1 + i % 2}-{1 + i % 28:02d}", i, i * 3) for i in range(120)]
    cur.execute("INSERT INTO ev VALUES " + ", ".join(f"('{a}', {b}, {c})" for a, b, c in rows))
    cur.execute("SHOW TABLETS FROM ev")
    assert [d[0] for d in cur.description] == TABLET_COLUMNS
    tablets = cur.fetchall()
    assert len(tablets) == 8
    backends = {r[0] for r in _rows(cur, "SHOW BACKENDS")}
    assert {r[2] for r in tablets} <= backends
    assert sum(int(r[10]) for r in tablets) == len(rows)
    assert all(r[4] == "2" and r[11] == "NORMAL" for r in tablets)  # one load: version 2
    p1 = _rows(cur, "SHOW TABLETS FROM ev PARTITION(p1)")
    assert len(p1) == 4 and sum(int(r[10]) for r in p1) == sum(1 for r in rows if r[0] < "2024-02")
    # per-tablet row counts agree with the Doris bucket hash of each row
    from storage.batch import Column
    from storage.distribution import bucket_of_rows
    from storage.types import INT

    seqs = bucket_of_rows([Column.from_physical(INT, [r[1] for r in rows if r[0] < "2024-02"])], 4)
    counts = sorted(int(r[10]) for r in sorted(p1, key=lambda r: int(r[0])))
    assert counts == sorted(int((seqs == b).sum()) for b in range(4))
    code, text = _error(cur, "SHOW TABLETS FROM ev PARTITION(p9)")
    assert code == 1105 and "p9" in text


def test_rollup_job_survives_a_crash(tmp_path: Path) -> None:
    """kill -9 while the job is RUNNING: after restart the job runs again and finishes."""
    duck = _duck()
    rnd = random.Random(9)
    srv = ServerProcess(tmp_path, env={"SHALEDB_FAULT_POINT": "rollup_job_running"})
    srv.start()
    try:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE rj")
            cur.execute("USE rj")
            cur.execute(AGG_TABLE)
            for _ in range(2):
                _load(cur, duck, rnd)
            cur.execute("ALTER TABLE sales ADD ROLLUP r_city(city, k2, s)")
        srv.wait_for_stderr("FAULT POINT rollup_job_running reached")
        with srv.connect("rj") as c, c.cursor() as cur:
            assert _jobs(cur)[0]["State"] == "RUNNING"
            assert _index_names(cur, "sales") == ["sales"]  # not visible before it finishes
            _load(cur, duck, rnd, 40)  # a load while the job runs writes the shadow index
            for sql in QUERIES:
                assert sorted(_rows(cur, sql)) == _reference(duck, sql), sql
    finally:
        srv.kill()
    srv = ServerProcess(tmp_path)
    srv.start()
    try:
        with srv.connect("rj") as c, c.cursor() as cur:
            job = _wait_job(cur, "r_city")
            assert job["State"] == "FINISHED", job
            assert _index_names(cur, "sales") == ["sales", "r_city"]
            for sql in QUERIES:
                assert sorted(_rows(cur, sql)) == _reference(duck, sql), sql
    finally:
        srv.stop()


def test_cancel_alter_table_rollup(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path, env={"SHALEDB_FAULT_POINT": "rollup_job_running"})
    srv.start()
    try:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE cj")
            cur.execute("USE cj")
            cur.execute(AGG_TABLE)
            _load(cur, _duck(), random.Random(1))
            cur.execute("ALTER TABLE sales ADD ROLLUP r_x(k2, s)")
            srv.wait_for_stderr("FAULT POINT rollup_job_running reached")
            _code, text = _error(cur, "ALTER TABLE sales ADD ROLLUP r_y(k2, mx)")
            assert text.endswith(
                "Table[sales]'s state(ROLLUP) is not NORMAL. Do not allow doing ALTER ops"
            )
            cur.execute("CANCEL ALTER TABLE ROLLUP FROM sales")
            job = _jobs(cur)[0]
            assert (job["State"], job["Msg"]) == ("CANCELLED", "user cancelled")
            assert _index_names(cur, "sales") == ["sales"]
            assert len(_rows(cur, "SHOW TABLETS FROM sales")) == 6
            cur.execute("SELECT count(*) FROM sales")
    finally:
        srv.kill()


def test_truncate_and_drop_while_jobs_run(tmp_path: Path) -> None:
    """TRUNCATE during a job gives the shadow index fresh tablets too; DROP TABLE during a job
    leaves it CANCELLED. Both jobs are frozen at the fault point, then the server is killed and
    restarted so the jobs resume on the changed tables."""
    duck = _duck()
    rnd = random.Random(4)
    srv = ServerProcess(tmp_path, env={"SHALEDB_FAULT_POINT": "rollup_job_running"})
    srv.start()
    try:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE tj")
            cur.execute("USE tj")
            cur.execute(AGG_TABLE)
            _load(cur, _duck(), rnd)  # truncated away below: not in the reference
            cur.execute(
                "CREATE TABLE gone (k INT, v BIGINT SUM) AGGREGATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 2"
            )
            cur.execute("INSERT INTO gone VALUES (1, 2), (3, 4)")
            cur.execute("ALTER TABLE sales ADD ROLLUP r_t(k2, s)")
            cur.execute("ALTER TABLE gone ADD ROLLUP r_g(k)")
            srv.wait_for_stderr("FAULT POINT rollup_job_running reached")
            cur.execute("TRUNCATE TABLE sales PARTITION (p0)")
            duck.execute("DELETE FROM raw")
            cur.execute("SELECT k1, k2, city, s, mx, mn FROM sales")
            kept = cur.fetchall()
            insert_rows(duck, "raw", kept)
            _load(cur, duck, rnd, 60)
            cur.execute("DROP TABLE gone")
    finally:
        srv.kill()
    srv = ServerProcess(tmp_path)
    srv.start()
    try:
        with srv.connect("tj") as c, c.cursor() as cur:
            assert _wait_job(cur, "r_t")["State"] == "FINISHED"
            job = _wait_job(cur, "r_g")
            assert job["State"] == "CANCELLED" and job["Msg"] == "Table[gone] does not exist"
            assert _index_names(cur, "sales") == ["sales", "r_t"]
            for sql in QUERIES:
                assert sorted(_rows(cur, sql)) == _reference(duck, sql), sql
    finally:
        srv.stop()
