"""Compaction made visible and controllable, over real sockets (issue 11 point 6).

One server of its own with `[compaction] disable_auto_compaction = true`, so only these tests
decide when a tablet compacts: through Doris' BE HTTP actions (`/api/compaction/show`, `run`,
`run_status`) and `ADMIN COMPACT TABLE`; they wait on `run_status`, never on a sleep alone.
Checked: SHOW TABLETS' VersionCount before and after, the rowset listing, SELECT results
unchanged by compaction, SHOW TABLET <id>, the /metrics counters, and the error answers in
Doris' shapes (`{"status": "<code>", "msg": ...}` over HTTP, errCode 2 texts over MySQL).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from support.http import authorized, scrape_metrics
from support.names import unique_db_name
from support.server import ServerProcess

# `[2-2] 1 DATA NONOVERLAPPING <rowset id> 1.05 KB` (size `0` for the empty [0-1])
ROWSET_RE = re.compile(r"^\[(\d+)-(\d+)\] (\d+) (DATA|DELETE) (NONOVERLAPPING|OVERLAPPING) "
                       r"(\w+) (0|\d+\.\d\d (B|KB|MB|GB))$")
POLL_LIMIT_S = 60.0


# ---- fixtures and helpers ------------------------------------------------------------------
@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("compaction-admin")
    conf = root / "shaledb.toml"
    conf.write_text("[compaction]\ndisable_auto_compaction = true\n")
    server = ServerProcess(root / "data", backends=2, extra_args=("--conf", str(conf)))
    server.start()
    try:
        yield server
    finally:
        if server.running:
            server.stop()


@pytest.fixture
def db(srv: ServerProcess) -> Iterator[str]:
    name = unique_db_name("compaction")
    with srv.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    yield name
    with srv.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture
def conn(srv: ServerProcess, db: str):
    c = srv.connect(db)
    try:
        yield c
    finally:
        c.close()


def http(srv: ServerProcess, method: str, path: str) -> tuple[int, str]:
    req = authorized(f"http://127.0.0.1:{srv.http_port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def http_json(srv: ServerProcess, method: str, path: str) -> dict:
    status, body = http(srv, method, path)
    assert status == 200, body  # Doris answers errors with HTTP 200 and a status field
    return json.loads(body)


def run_compaction(srv: ServerProcess, tablet_id: int, kind: str) -> dict:
    return http_json(srv, "POST",
                     f"/api/compaction/run?tablet_id={tablet_id}&compact_type={kind}")


def wait_not_running(srv: ServerProcess, tablet_ids: list[int]) -> None:
    """Poll run_status until none of the tablets is compacting (bounded)."""
    deadline = time.monotonic() + POLL_LIMIT_S
    pending = set(tablet_ids)
    while pending:
        for tid in sorted(pending):
            st = http_json(srv, "GET", f"/api/compaction/run_status?tablet_id={tid}")
            assert st["status"] == "Success", st
            if not st["run_status"]:
                pending.discard(tid)
        if pending:
            assert time.monotonic() < deadline, f"still compacting: {pending}"
            time.sleep(0.05)


def query(conn, sql: str) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def show(conn, sql: str) -> list[dict[str, object]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def tablets(conn, table: str) -> list[dict[str, object]]:
    return show(conn, f"SHOW TABLETS FROM {table}")


def metrics(srv: ServerProcess) -> dict[str, float]:
    return scrape_metrics(srv.http_port)


def create_dup_table(conn, name: str, buckets: int = 1) -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (k INT, v VARCHAR(20), n BIGINT) DUPLICATE KEY(k) "
                    f"DISTRIBUTED BY HASH(k) BUCKETS {buckets} "
                    "PROPERTIES ('replication_num' = '1')")


def insert_loads(conn, table: str, loads: int, start: int = 0) -> None:
    """One INSERT (one version) per load, three rows each."""
    with conn.cursor() as cur:
        for i in range(start, start + loads):
            cur.execute(f"INSERT INTO {table} VALUES ({i}, 'v{i}', {i * 10}), "
                        f"({i + 100}, NULL, {i}), ({i + 200}, 'w{i}', NULL)")


# ---- HTTP: show, run, run_status -------------------------------------------------------------
def test_cumulative_compaction_over_http(srv: ServerProcess, conn) -> None:
    create_dup_table(conn, "t")
    insert_loads(conn, "t", 6)
    before = query(conn, "SELECT k, v, n FROM t ORDER BY k")
    (tablet,) = tablets(conn, "t")
    tid = int(tablet["TabletId"])
    assert tablet["VersionCount"] == "7"  # [0-1] and six loads [2-2] .. [7-7]
    assert tablet["RowCount"] == "18"
    assert tablet["CompactionStatus"].endswith(f"/api/compaction/show?tablet_id={tid}")

    status = http_json(srv, "GET", f"/api/compaction/show?tablet_id={tid}")
    assert status["cumulative policy type"] == "SIZE_BASED"
    assert status["cumulative point"] == 2
    rowsets = [ROWSET_RE.match(r) for r in status["rowsets"]]
    assert all(rowsets), status["rowsets"]
    assert [(m[1], m[2]) for m in rowsets] == [("0", "1")] + [(str(v), str(v)) for v in
                                                             range(2, 8)]
    assert status["rowsets"][0].startswith("[0-1] 0 DATA NONOVERLAPPING")
    assert status["missing_rowsets"] == [] and status["stale_rowsets"] == []
    assert status["last cumulative success time"] == "1970-01-01 08:00:00.000"

    st = http_json(srv, "GET", f"/api/compaction/run_status?tablet_id={tid}")
    assert st == {"status": "Success", "run_status": False,
                  "msg": "compaction task for this tablet is not running", "tablet_id": tid,
                  "compact_type": ""}

    answer = run_compaction(srv, tid, "cumulative")
    assert answer == {"status": "Success", "msg": "compaction task is successfully triggered. "
                      f"Table id: 0. Tablet id: {tid}"}
    wait_not_running(srv, [tid])

    status = http_json(srv, "GET", f"/api/compaction/show?tablet_id={tid}")
    assert [r.split(" ")[0] for r in status["rowsets"]] == ["[0-1]", "[2-7]"]
    assert status["last cumulative success time"] != "1970-01-01 08:00:00.000"
    assert len(status["stale_rowsets"]) == 6  # kept for readers until the sweep
    assert status["stale version path"][0]["path list"].startswith("1-> [2-2] -> [3-3]")
    (tablet,) = tablets(conn, "t")
    assert tablet["VersionCount"] == "2"
    assert tablet["RowCount"] == "18"
    assert query(conn, "SELECT k, v, n FROM t ORDER BY k") == before

    # Full: everything, the initial [0-1] included, becomes [0-7]: one version left.
    assert run_compaction(srv, tid, "full")["status"] == "Success"
    wait_not_running(srv, [tid])
    status = http_json(srv, "GET", f"/api/compaction/show?tablet_id={tid}")
    assert [r.split(" ")[0] for r in status["rowsets"]] == ["[0-7]"]
    (tablet,) = tablets(conn, "t")
    assert tablet["VersionCount"] == "1"
    assert query(conn, "SELECT k, v, n FROM t ORDER BY k") == before
    assert query(conn, "SELECT count(*), sum(n) FROM t") == [(18, sum(
        i * 10 + i for i in range(6)))]


def test_run_refusals_use_doris_codes(srv: ServerProcess, conn) -> None:
    create_dup_table(conn, "one")
    insert_loads(conn, "one", 1)
    (tablet,) = tablets(conn, "one")
    tid = int(tablet["TabletId"])
    # Too few deltas for a cumulative compaction: Doris' CUMULATIVE_NO_SUITABLE_VERSION.
    answer = run_compaction(srv, tid, "cumulative")
    assert answer["status"] == "E-2000", answer
    # Nothing below the cumulative point: BE_NO_SUITABLE_VERSION.
    answer = run_compaction(srv, tid, "base")
    assert answer["status"] == "E-808", answer
    assert run_compaction(srv, tid, "full")["status"] == "Success"
    wait_not_running(srv, [tid])
    answer = run_compaction(srv, tid, "full")  # already one rowset
    assert answer["status"] == "E-2008", answer


def test_http_errors_in_doris_shapes(srv: ServerProcess, conn) -> None:
    create_dup_table(conn, "e")
    insert_loads(conn, "e", 1)
    missing = 987654321987
    assert http_json(srv, "GET", f"/api/compaction/show?tablet_id={missing}") == {
        "status": "NOT_FOUND", "msg": f"Tablet not found. tablet_id={missing}"}
    assert http_json(srv, "GET", "/api/compaction/show") == {
        "status": "INTERNAL_ERROR", "msg": "check param failed: missing tablet_id"}
    assert http_json(srv, "GET", "/api/compaction/show?tablet_id=abc") == {
        "status": "INTERNAL_ERROR", "msg": "convert tablet_id failed, stoull"}
    assert run_compaction(srv, missing, "base") == {
        "status": "NOT_FOUND", "msg": f"Tablet not found. tablet_id={missing}"}
    (tablet,) = tablets(conn, "e")
    tid = int(tablet["TabletId"])
    assert run_compaction(srv, tid, "major") == {
        "status": "NOT_IMPLEMENTED_ERROR", "msg": "The compaction type 'major' is not supported"}
    assert http_json(srv, "POST", "/api/compaction/run?compact_type=base") == {
        "status": "INTERNAL_ERROR",
        "msg": "tablet id and table id can not be empty at the same time!"}
    assert http_json(srv, "POST", "/api/compaction/run?tablet_id=1&table_id=2&compact_type=full"
                     ) == {"status": "INTERNAL_ERROR",
                           "msg": "tablet id and table id can not be set at the same time!"}
    assert http_json(srv, "GET", f"/api/compaction/run_status?tablet_id={missing}") == {
        "status": "INTERNAL_ERROR", "msg": f"fail to get {missing}"}
    # run is POST only in Doris; GET falls through to 404.
    status, _ = http(srv, "GET", f"/api/compaction/run?tablet_id={tid}&compact_type=full")
    assert status == 404
    # Without tablet_id: every data dir, with the tablets compacting there, per kind.
    overall = http_json(srv, "GET", "/api/compaction/run_status")
    assert set(overall) == {"BaseCompaction", "CumulativeCompaction", "FullCompaction"}
    assert len(overall["BaseCompaction"]) == 2  # one data dir per embedded backend
    assert all(isinstance(ids, list) for ids in overall["FullCompaction"].values())


def test_run_full_compaction_of_a_table_by_id(srv: ServerProcess, conn, db: str) -> None:
    create_dup_table(conn, "byid", buckets=3)
    insert_loads(conn, "byid", 3)
    rows = tablets(conn, "byid")
    table_id = int(show(conn, "SHOW TABLET " + rows[0]["TabletId"])[0]["TableId"])
    answer = http_json(srv, "POST", f"/api/compaction/run?table_id={table_id}&compact_type=full")
    assert answer == {"status": "Success", "msg": "compaction task is successfully triggered. "
                      f"Table id: {table_id}. Tablet id: 0"}
    wait_not_running(srv, [int(r["TabletId"]) for r in rows])
    assert {r["VersionCount"] for r in tablets(conn, "byid")} == {"1"}


# ---- SQL: ADMIN COMPACT TABLE, SHOW TABLET ---------------------------------------------------
def test_admin_compact_table_full(srv: ServerProcess, conn, db: str) -> None:
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE p (d DATE, k INT, n BIGINT SUM) AGGREGATE KEY(d, k) "
                    "PARTITION BY RANGE(d) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
                    "PARTITION p2 VALUES LESS THAN ('2024-03-01')) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 2 PROPERTIES ('replication_num' = '1')")
        cur.execute("ALTER TABLE p ADD ROLLUP r_k (k, n)")
    # The rollup is built asynchronously; wait for it (SHOW ALTER) before loading.
    deadline = time.monotonic() + POLL_LIMIT_S
    while show(conn, "SHOW ALTER TABLE ROLLUP")[-1]["State"] != "FINISHED":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with conn.cursor() as cur:
        for i in range(4):
            cur.execute(f"INSERT INTO p VALUES ('2024-01-0{i + 1}', {i}, 1), "
                        f"('2024-02-0{i + 1}', {i % 2}, {i}), ('2024-01-09', 7, 5)")
    before = query(conn, "SELECT d, k, n FROM p ORDER BY d, k")
    by_k = query(conn, "SELECT k, sum(n) FROM p GROUP BY k ORDER BY k")
    rows = tablets(conn, "p")
    assert len(rows) == 8  # 2 partitions x 2 indexes x 2 buckets
    assert max(int(r["VersionCount"]) for r in rows) == 5
    m0 = metrics(srv)
    assert m0["doris_be_max_tablet_rowset_num"] >= 5

    with conn.cursor() as cur:
        assert cur.execute("ADMIN COMPACT TABLE p WHERE type = 'FULL'") == 0
    wait_not_running(srv, [int(r["TabletId"]) for r in rows])
    assert {r["VersionCount"] for r in tablets(conn, "p")} == {"1"}
    assert query(conn, "SELECT d, k, n FROM p ORDER BY d, k") == before
    assert query(conn, "SELECT k, sum(n) FROM p GROUP BY k ORDER BY k") == by_k

    m1 = metrics(srv)

    def delta(name: str) -> float:
        return m1[name] - m0[name]

    compacted = [r for r in rows if r["VersionCount"] != "1"]  # a tablet with no load is not
    assert delta('doris_be_compaction_deltas_total{type="full"}') == sum(
        int(r["VersionCount"]) - 1 for r in compacted)  # the real rowsets, not the [0-1]
    assert delta('doris_be_compaction_bytes_total{type="full"}') > 0
    assert delta('shaledb_compaction_rows_total{type="full"}') > 0
    assert delta('doris_be_engine_requests_total{status="total",type="full_compaction"}') == len(
        compacted)
    assert delta('doris_be_engine_requests_total{status="failed",type="full_compaction"}') == 0
    merged = delta('doris_be_compaction_deltas_total{type="full"}')
    assert m1["shaledb_stale_rowsets"] >= merged
    assert m1["shaledb_compaction_running_tasks"] == 0
    for name in ("doris_be_tablet_cumulative_max_compaction_score",
                 "doris_be_tablet_base_max_compaction_score",
                 "shaledb_load_back_pressure_waits_total", "shaledb_too_many_versions_total"):
        assert name in m1

    # Doris' own form: one partition, BASE or CUMULATIVE; it starts nothing here (too few
    # deltas) and still answers OK, as the BE drops such tasks.
    total = query(conn, "SELECT sum(n) FROM p")[0][0]
    with conn.cursor() as cur:
        cur.execute("INSERT INTO p VALUES ('2024-01-03', 1, 1)")
        cur.execute("ADMIN COMPACT TABLE p PARTITION p1 WHERE TYPE = 'CUMULATIVE'")
        cur.execute(f"ADMIN COMPACT TABLE {db}.p PARTITION (p2) WHERE type = 'base'")
    wait_not_running(srv, [int(r["TabletId"]) for r in rows])
    assert query(conn, "SELECT sum(n) FROM p") == [(total + 1,)]


def test_admin_compact_errors(conn) -> None:
    create_dup_table(conn, "a")
    cases = [
        ("ADMIN COMPACT TABLE a WHERE type = 'MAJOR'", 1105,
         "Where clause should looks like: type = 'BASE/CUMULATIVE'"),
        ("ADMIN COMPACT TABLE a WHERE kind = 'BASE'", 1105,
         "Where clause should looks like: type = 'BASE/CUMULATIVE'"),
        ("ADMIN COMPACT TABLE a", 1105,
         "Compaction type must be specified in Where clause like: type = 'BASE/CUMULATIVE'"),
        ("ADMIN COMPACT TABLE a PARTITION (a, b) WHERE type = 'BASE'", 1105,
         "Only support single partition for compaction"),
        ("ADMIN COMPACT TABLE a PARTITION nope WHERE type = 'BASE'", 1105,
         "partition[nope] not exist in table[a]"),
        ("ADMIN COMPACT TABLE missing WHERE type = 'BASE'", 1051, "Unknown table 'missing'"),
    ]
    for sql, code, text in cases:
        with pytest.raises(Exception) as info, conn.cursor() as cur:
            cur.execute(sql)
        assert info.value.args[0] == code, (sql, info.value.args)
        assert info.value.args[1].endswith(text), (sql, info.value.args)


def test_show_tablet_by_id(conn, db: str) -> None:
    create_dup_table(conn, "s", buckets=3)
    rows = tablets(conn, "s")
    with conn.cursor() as cur:
        cur.execute(f"SHOW TABLET {rows[2]['TabletId']}")
        names = [d[0] for d in cur.description]
        (row,) = cur.fetchall()
    assert names == ["DbName", "TableName", "PartitionName", "IndexName", "DbId", "TableId",
                     "PartitionId", "IndexId", "IsSync", "Order", "QueryHits", "DetailCmd"]
    got = dict(zip(names, row, strict=True))
    assert (got["DbName"], got["TableName"], got["PartitionName"], got["IndexName"]) == (
        db, "s", "s", "s")
    assert (got["IsSync"], got["Order"], got["QueryHits"]) == ("true", "2", "0")
    assert got["DetailCmd"] == (
        f"SHOW PROC '/dbs/{got['DbId']}/{got['TableId']}/partitions/{got['PartitionId']}/"
        f"{got['IndexId']}/{rows[2]['TabletId']}';")
    # An unknown id is no error in Doris: NULL names, -1 ids, IsSync false.
    (unknown,) = show(conn, "SHOW TABLET 424242424242")
    assert list(unknown.values()) == [None, None, None, None, "-1", "-1", "-1", "-1", "false",
                                      "-1", "0",
                                      "SHOW PROC '/dbs/-1/-1/partitions/-1/-1/424242424242';"]

