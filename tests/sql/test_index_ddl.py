"""Bitmap index and bloom filter DDL over the wire (real server, pymysql): ADD / DROP INDEX,
CREATE / DROP INDEX .. ON, SET ("bloom_filter_columns" ..) as asynchronous jobs in SHOW ALTER
TABLE COLUMN, CANCEL ALTER TABLE COLUMN, SHOW INDEX, SHOW CREATE TABLE.

That a job rewrote the data is seen through the BE compaction status (`/api/compaction/show`):
every data rowset gets a new id with the same version range; results stay equal to what was
loaded. Jobs are awaited by polling SHOW ALTER TABLE COLUMN against a deadline. Error messages
are in tests/sql/index/*.test (corpus)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from support.http import authorized
from support.server import ServerProcess

from storage.segment.reader import SegmentReader

ALTER_COLUMN_COLUMNS = ["JobId", "TableName", "CreateTime", "FinishTime", "IndexName", "IndexId",
                        "OriginIndexId", "SchemaVersion", "TransactionId", "State", "Msg",
                        "Progress", "Timeout"]
SHOW_INDEX_COLUMNS = ["Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name",
                      "Collation", "Cardinality", "Sub_part", "Packed", "Null", "Index_type",
                      "Comment", "Properties"]
DDL = """CREATE TABLE t (k INT NOT NULL, city VARCHAR(20), code BIGINT, v INT)
    DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2
    PROPERTIES ("disable_auto_compaction" = "true")"""
DEBUG = {"SHALEDB_ENABLE_DEBUG_POINTS": "1"}


def _rows(k0: int, n: int) -> list[tuple]:
    return [(k0 + i, f"c{(k0 + i) % 7}", (k0 + i) * 13 % 1000, i % 5) for i in range(n)]


def _insert(cur, rows: list[tuple]) -> None:
    cur.execute("INSERT INTO t VALUES " + ", ".join(f"({a}, '{b}', {c}, {d})" for a, b, c, d in rows))


def _table_rows(cur) -> list[tuple]:
    cur.execute("SELECT k, city, code, v FROM t ORDER BY k")
    return [(int(a), b, int(c), int(d)) for a, b, c, d in cur.fetchall()]


def _jobs(cur) -> list[dict]:
    cur.execute("SHOW ALTER TABLE COLUMN")
    names = [d[0] for d in cur.description]
    assert names == ALTER_COLUMN_COLUMNS
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _wait_last_job(cur, want: str = "FINISHED", timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = _jobs(cur)[-1]
        if job["State"] == want:
            return job
        assert job["State"] not in ("FINISHED", "CANCELLED"), job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def _rowsets(srv: ServerProcess, cur) -> dict[str, str]:
    """rowset id -> version range of every data rowset of t (BE compaction status)."""
    cur.execute("SHOW TABLETS FROM t")
    out = {}
    for row in cur.fetchall():
        req = authorized(f"http://127.0.0.1:{srv.http_port}/api/compaction/show"
                         f"?tablet_id={row[0]}")
        with urllib.request.urlopen(req, timeout=30) as resp:
            status = json.loads(resp.read())
        for text in status["rowsets"]:
            version, _segments, kind, _overlap, rowset_id = text.split()[:5]
            if kind == "DATA" and version != "[0-1]":
                out[rowset_id] = version
    return out


def _segment_indexes(srv: ServerProcess, rowset_ids) -> tuple[set[str], set[str]]:
    """(columns with a bitmap index, columns with bloom filters) in any segment of the given
    rowsets, read from the segment footers on disk."""
    bitmap: set[str] = set()
    bloom: set[str] = set()
    paths = [p for r in rowset_ids for p in srv.data_dir.glob(f"be/*/data/*/{r}_*.seg")]
    assert paths
    for path in paths:
        with SegmentReader(path, {}) as reader:
            for c in reader.footer.columns:
                if c.bitmap_index is not None:
                    bitmap.add(c.name)
                if c.bloom_filter is not None:
                    bloom.add(c.name)
    return bitmap, bloom


def _show_index(cur, sql: str = "SHOW INDEX FROM t") -> list[tuple]:
    cur.execute(sql)
    assert [d[0] for d in cur.description] == SHOW_INDEX_COLUMNS
    return list(cur.fetchall())


def _create_text(cur) -> str:
    cur.execute("SHOW CREATE TABLE t")
    return cur.fetchone()[1]


def test_add_index_rewrites_data_as_a_job(server, db_conn, db) -> None:
    cur = db_conn.cursor()
    cur.execute(DDL)
    loaded = _rows(0, 40) + _rows(100, 30) + _rows(200, 20)
    for part in (loaded[:40], loaded[40:70], loaded[70:]):
        _insert(cur, part)
    before = _rowsets(server, cur)
    assert before
    cur.execute("ALTER TABLE t ADD INDEX idx_city (city) USING BITMAP COMMENT 'city lookups'")
    job = _wait_last_job(cur)
    assert job["TableName"] == "t" and job["IndexName"] == "t" and job["Msg"] == ""
    assert int(job["TransactionId"]) > 0 and job["SchemaVersion"].startswith("1:")
    after = _rowsets(server, cur)
    # every data rowset rewritten: new ids, the same versions
    assert not set(after) & set(before)
    assert sorted(after.values()) == sorted(before.values())
    assert _segment_indexes(server, before) == (set(), set())
    assert _segment_indexes(server, after) == ({"city"}, set())  # the rewrite wrote the index
    assert _table_rows(cur) == sorted(loaded)
    cur.execute("SELECT k FROM t WHERE city = 'c3' ORDER BY k")  # answered through the index
    assert [int(r[0]) for r in cur.fetchall()] == sorted(r[0] for r in loaded if r[1] == "c3")
    assert _show_index(cur) == [(f"{db}.t", "", "idx_city", "", "city", "", "", "", "", "",
                                 "BITMAP", "city lookups", "")]
    assert "  INDEX idx_city (`city`) USING BITMAP COMMENT 'city lookups'" in _create_text(cur)
    # a load after the job, then DROP INDEX: a second job rewrites everything again
    _insert(cur, _rows(500, 10))
    with_index = _rowsets(server, cur)
    cur.execute("ALTER TABLE t DROP INDEX idx_city")
    assert _show_index(cur) == []  # the definition goes at once
    assert "INDEX idx_city" not in _create_text(cur)
    job2 = _wait_last_job(cur)
    assert job2["SchemaVersion"].startswith("2:")
    # only rowsets written with the index are rewritten; all of them were
    dropped = _rowsets(server, cur)
    assert not set(dropped) & set(with_index)
    assert _segment_indexes(server, with_index) == ({"city"}, set())  # the load wrote it too
    assert _segment_indexes(server, dropped) == (set(), set())
    assert _table_rows(cur) == sorted(loaded + _rows(500, 10))


def test_create_and_drop_index_statements(server, db_conn, db) -> None:
    cur = db_conn.cursor()
    cur.execute(DDL)
    # an empty table: nothing to rewrite, the job is listed FINISHED at once
    cur.execute(f"CREATE INDEX idx_code ON {db}.t (code) USING INVERTED COMMENT 'inv'")
    job = _jobs(cur)[-1]
    assert job["State"] == "FINISHED" and job["FinishTime"] != "NULL"
    cur.execute("CREATE INDEX IF NOT EXISTS idx_code ON t (v) USING BITMAP")  # no-op
    cur.execute("CREATE INDEX idx_k ON t (k)")  # USING omitted: BITMAP, as Doris
    expected = [(f"{db}.t", "", "idx_code", "", "code", "", "", "", "", "", "INVERTED", "inv", ""),
                (f"{db}.t", "", "idx_k", "", "k", "", "", "", "", "", "BITMAP", "", "")]
    assert _show_index(cur) == expected
    assert _show_index(cur, f"SHOW INDEXES FROM t FROM {db}") == expected
    assert _show_index(cur, f"SHOW KEYS FROM {db}.t") == expected
    text = _create_text(cur)
    assert "  INDEX idx_code (`code`) USING INVERTED COMMENT 'inv',\n" in text
    assert "  INDEX idx_k (`k`) USING BITMAP\n) ENGINE=OLAP" in text
    cur.execute("DROP INDEX idx_code ON t")
    cur.execute(f"DROP INDEX IF EXISTS idx_code ON {db}.t")  # no-op
    assert [r[2] for r in _show_index(cur)] == ["idx_k"]
    assert len(_jobs(cur)) == 3
    assert all(j["State"] == "FINISHED" for j in _jobs(cur))


def test_bloom_filter_set_is_a_job(server, db_conn, db) -> None:
    cur = db_conn.cursor()
    cur.execute(DDL)
    loaded = _rows(0, 50)
    _insert(cur, loaded)
    before = _rowsets(server, cur)
    cur.execute('ALTER TABLE t SET ("bloom_filter_columns" = "city,code", '
                '"bloom_filter_fpp" = "0.01")')
    _wait_last_job(cur)
    after = _rowsets(server, cur)
    assert not set(after) & set(before)
    assert _segment_indexes(server, after) == (set(), {"city", "code"})
    text = _create_text(cur)
    assert '"bloom_filter_columns" = "city, code"' in text
    assert '"bloom_filter_fpp" = "0.01"' in text
    assert _show_index(cur) == []  # legacy bloom filters are not listed by SHOW INDEX
    cur.execute('ALTER TABLE t SET ("bloom_filter_fpp" = "0.01")')  # unchanged: no job
    assert len(_jobs(cur)) == 1
    cur.execute('ALTER TABLE t SET ("bloom_filter_columns" = "")')  # drops them: a job again
    _wait_last_job(cur)
    assert len(_jobs(cur)) == 2
    assert _segment_indexes(server, _rowsets(server, cur)) == (set(), set())
    assert '"bloom_filter_columns"' not in _create_text(cur)
    assert _table_rows(cur) == sorted(loaded)


def test_cancel_restores_the_definitions(tmp_path: Path) -> None:
    """A job held at the debug point `index_job_running` (after its first rowset) is cancelled:
    the index definition goes away again, the data stays correct, a second CANCEL is Doris'
    error."""
    import pymysql

    with ServerProcess(tmp_path / "data", backends=1, env=DEBUG) as srv:
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE d")
        cur.execute("USE d")
        cur.execute(DDL)
        loaded = _rows(0, 30) + _rows(100, 30)
        _insert(cur, loaded[:30])
        _insert(cur, loaded[30:])
        _debug(srv, "add", "index_job_running")
        cur.execute("ALTER TABLE t ADD INDEX idx_v (v) USING BITMAP")
        srv.wait_for_stderr("DEBUG POINT index_job_running reached", timeout=60)
        job = _jobs(cur)[-1]
        assert job["State"] == "RUNNING" and job["Progress"].startswith("1/")
        with pytest.raises(pymysql.err.OperationalError) as e:
            cur.execute("ALTER TABLE t ADD INDEX idx_c (city)")
        assert "Table[t]'s state(SCHEMA_CHANGE) is not NORMAL. Do not allow doing ALTER ops" \
            in str(e.value)
        cur.execute("CANCEL ALTER TABLE COLUMN FROM t")
        job = _jobs(cur)[-1]
        assert job["State"] == "CANCELLED" and job["Msg"] == "user cancelled"
        assert _show_index(cur) == []
        _debug(srv, "remove", "index_job_running")
        with pytest.raises(pymysql.err.OperationalError) as e:
            cur.execute("CANCEL ALTER TABLE COLUMN FROM t")
        assert e.value.args[0] == 1105
        assert "Table[t] is not under SCHEMA_CHANGE." in e.value.args[1]
        assert _table_rows(cur) == sorted(loaded)
        cur.execute("ALTER TABLE t ADD INDEX idx_c (city)")  # the table is NORMAL again
        _wait_last_job(cur)
        assert _table_rows(cur) == sorted(loaded)
        conn.close()


def test_job_waits_for_a_load_that_began_before_it(tmp_path: Path) -> None:
    """A load held open before publish keeps the job in WAITING_TXN; once it publishes, the
    job rewrites its rowset too (the load wrote it without the new index) and no row is lost."""
    with ServerProcess(tmp_path / "data", backends=1, env=DEBUG) as srv:
        conn = srv.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE d")
        cur.execute("USE d")
        cur.execute(DDL)
        base, old, new = _rows(0, 40), _rows(1000, 25), _rows(5000, 15)
        _insert(cur, base)
        _debug(srv, "add", "load_before_publish", "?execute=1")
        errors: list[BaseException] = []

        def held() -> None:
            try:
                with srv.connect("d") as c, c.cursor() as hc:
                    _insert(hc, old)
            except BaseException as e:  # noqa: BLE001 - reported to the test
                errors.append(e)

        th = threading.Thread(target=held, daemon=True)
        th.start()
        srv.wait_for_stderr("DEBUG POINT load_before_publish reached", timeout=60)
        cur.execute("ALTER TABLE t ADD INDEX idx_city (city)")
        _wait_last_job(cur, "WAITING_TXN")
        _insert(cur, new)  # began after the job: written with the index already
        assert _jobs(cur)[-1]["State"] == "WAITING_TXN"
        _debug(srv, "remove", "load_before_publish")
        th.join(60)
        assert not errors
        _wait_last_job(cur)
        assert _table_rows(cur) == sorted(base + old + new)
        conn.close()


def _debug(srv: ServerProcess, op: str, name: str, query: str = "") -> None:
    req = authorized(f"http://127.0.0.1:{srv.http_port}/api/debug_point/{op}/{name}{query}",
                     method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200


def test_several_indexes_in_one_alter_are_one_job(server, db_conn, db) -> None:
    """Doris' regression test shape (index/test_bitmap_index.groovy): several ADD INDEX clauses
    in one ALTER, polled with SHOW ALTER TABLE COLUMN WHERE TableName = .. ORDER BY createtime
    DESC LIMIT 1 (State is column 9)."""
    cur = db_conn.cursor()
    cur.execute(DDL)
    cur.execute("CREATE TABLE other (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    cur.execute("CREATE INDEX i_other ON other (k)")  # a job of another table, listed too
    loaded = _rows(0, 30)
    _insert(cur, loaded)
    cur.execute("ALTER TABLE t ADD INDEX i1 (k) USING BITMAP, ADD INDEX i2 (city) USING BITMAP, "
                "ADD INDEX i3 (code) USING INVERTED")
    poll = "SHOW ALTER TABLE COLUMN WHERE TableName = 't' ORDER BY createtime DESC LIMIT 1"
    deadline = time.monotonic() + 60
    while True:
        cur.execute(poll)
        (row,) = cur.fetchall()
        if row[9] == "FINISHED":
            break
        assert row[9] in ("PENDING", "WAITING_TXN", "RUNNING") and time.monotonic() < deadline
        time.sleep(0.05)
    assert row[1] == "t"
    assert [j["TableName"] for j in _jobs(cur)] == ["other", "t"]  # one job for the three
    cur.execute(f"SHOW ALTER TABLE COLUMN FROM {db} WHERE TableName = 'other'")
    assert [r[1] for r in cur.fetchall()] == ["other"]
    assert [r[2] for r in _show_index(cur)] == ["i1", "i2", "i3"]
    assert _table_rows(cur) == sorted(loaded)


def test_rewrite_keeps_every_model_and_delete_version(server, db_conn, db) -> None:
    """AGGREGATE (with a rollup) and UNIQUE tables loaded several times over the same keys, with
    a DELETE version in between: the rewrite of every rowset (base and rollup tablets) changes
    no answer, and the rollup's segments get the index too."""
    cur = db_conn.cursor()
    cur.execute("""CREATE TABLE a (k1 INT, k2 VARCHAR(10), s BIGINT SUM, m INT MAX)
        AGGREGATE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 2
        PROPERTIES ("disable_auto_compaction" = "true")""")
    cur.execute("ALTER TABLE a ADD ROLLUP r(k2, s)")
    deadline = time.monotonic() + 60
    while True:
        cur.execute("SHOW ALTER TABLE ROLLUP")
        if cur.fetchall()[-1][8] == "FINISHED":
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cur.execute("""CREATE TABLE u (k INT, v VARCHAR(10), n INT) UNIQUE KEY(k)
        DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ("disable_auto_compaction" = "true")""")
    for load in range(3):
        cur.execute("INSERT INTO a VALUES " + ", ".join(
            f"({i % 9}, 'g{i % 3}', {i + load}, {i * load % 17})" for i in range(40)))
        cur.execute("INSERT INTO u VALUES " + ", ".join(
            f"({i}, 'v{(i + load) % 4}', {i * 10 + load})" for i in range(load * 5, 30 + load * 5)))
        if load == 1:
            cur.execute("DELETE FROM a WHERE k2 = 'g1'")
            cur.execute("DELETE FROM u WHERE k = 7")
    queries = ["SELECT k1, k2, s, m FROM a ORDER BY k1, k2",
               "SELECT k2, sum(s) FROM a GROUP BY k2 ORDER BY k2",
               "SELECT k, v, n FROM u ORDER BY k",
               "SELECT v, count(*) FROM u GROUP BY v ORDER BY v"]

    def answers() -> list[list[tuple]]:
        out = []
        for q in queries:
            cur.execute(q)
            out.append(list(cur.fetchall()))
        return out

    before = answers()
    cur.execute("ALTER TABLE a ADD INDEX ia (k2) USING BITMAP")
    _wait_last_job(cur)
    cur.execute("CREATE INDEX iu ON u (v) USING BITMAP")
    _wait_last_job(cur)
    assert answers() == before
    cur.execute("SHOW TABLETS FROM a")
    rollup_files = [p for row in cur.fetchall()
                    for p in server.data_dir.glob(f"be/*/data/{row[0]}/ix*.seg")]
    assert rollup_files  # base and rollup tablets were rewritten
    indexed = set()
    for path in rollup_files:
        with SegmentReader(path, {}) as reader:
            indexed |= {c.name for c in reader.footer.columns if c.bitmap_index}
    assert indexed == {"k2"}
