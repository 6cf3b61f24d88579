"""kill -9 during Stream Load and between the two phases of a two-phase Stream Load.

- Killed mid-load (the body half uploaded, or every segment file fsynced but not published):
  after the restart nothing of the load is visible, its files are gone and its label is free.
- Killed after `two_phase_commit: true` answered PRECOMMITTED: after the restart the txn is
  still PRECOMMITTED (its files kept, nothing visible); `_stream_load_2pc` commits it and its
  rows are there, also after one more restart. A precommitted txn nobody commits is aborted
  after `stream_load_default_precommit_timeout_second`.
"""

from __future__ import annotations

import base64
import socket
from pathlib import Path

import pytest
import requests
from support.server import ServerProcess

DDL = ("CREATE TABLE t (dt DATE NOT NULL, k INT NOT NULL, v VARCHAR(20)) DUPLICATE KEY(dt, k) "
       "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
       "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 4")


def csv_rows(start: int, n: int) -> bytes:
    return "".join(f"2024-0{1 + i % 2}-{1 + i % 28:02d},{i},v{i}\n"
                   for i in range(start, start + n)).encode()


def segment_files(data_dir: Path) -> set[str]:
    return {str(p.relative_to(data_dir)) for p in data_dir.glob("be/*/data/*/*") if p.is_file()}


def setup_db(srv: ServerProcess) -> None:
    conn = srv.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE crashdb")
        cur.execute("USE crashdb")
        cur.execute(DDL)
    conn.close()
    assert stream_load(srv, csv_rows(0, 100), "base")["Status"] == "Success"


def stream_load(srv: ServerProcess, body: bytes, label: str, **headers: str) -> dict:
    r = requests.put(f"http://127.0.0.1:{srv.http_port}/api/crashdb/t/_stream_load",
                     data=body, auth=("root", ""), timeout=120,
                     headers={"label": label, "column_separator": ",", **headers})
    return r.json()


def two_pc(srv: ServerProcess, **headers: str) -> dict:
    r = requests.put(f"http://127.0.0.1:{srv.http_port}/api/crashdb/_stream_load_2pc",
                     auth=("root", ""), headers=headers, timeout=120)
    return r.json()


def load_state(srv: ServerProcess, label: str) -> str:
    r = requests.get(f"http://127.0.0.1:{srv.http_port}/api/crashdb/get_load_state",
                     params={"label": label}, auth=("root", ""), timeout=60)
    return r.json()["data"]


def totals(srv: ServerProcess) -> tuple:
    conn = srv.connect("crashdb")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*), sum(k) FROM t")
            return tuple(int(x) for x in cur.fetchone())
    finally:
        conn.close()


def show_load_state(srv: ServerProcess, label: str) -> str:
    conn = srv.connect("crashdb")
    try:
        with conn.cursor() as cur:
            cur.execute(f"SHOW LOAD WHERE LABEL = '{label}'")
            names = [d[0] for d in cur.description]
            (row,) = cur.fetchall()
            return row[names.index("State")]
    finally:
        conn.close()


def half_upload(srv: ServerProcess, body: bytes) -> socket.socket:
    """Start a Stream Load that declares `body` but sends only its first half."""
    auth = base64.b64encode(b"root:").decode()
    head = (f"PUT /api/crashdb/t/_stream_load HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Basic {auth}\r\nlabel: crash_label\r\ncolumn_separator: ,\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    s = socket.create_connection(("127.0.0.1", srv.http_port), timeout=60)
    s.sendall(head + body[: len(body) // 2])
    return s


@pytest.mark.parametrize("when", ["mid_upload", "load_before_publish"])
def test_kill_9_mid_stream_load_leaves_nothing(tmp_path: Path, when: str) -> None:
    data = tmp_path / "data"
    with ServerProcess(data) as srv:
        setup_db(srv)
        committed = totals(srv)
    files_before = segment_files(data)
    body = csv_rows(1000, 20000)
    env = {"SHALEDB_FAULT_POINT": when} if when != "mid_upload" else {}
    crashing = ServerProcess(data, env=env).start()
    if when == "mid_upload":
        sock = half_upload(crashing, body)
        assert totals(crashing) == committed  # the server took the load and still answers
    else:
        sock = half_upload(crashing, body)
        sock.sendall(body[len(body) // 2:])
        crashing.wait_for_stderr(f"FAULT POINT {when} reached", timeout=120)
        assert segment_files(data) - files_before, "the load wrote its files before the crash"
    crashing.kill()
    sock.close()

    with ServerProcess(data) as srv:
        assert totals(srv) == committed
        assert segment_files(data) == files_before  # the crashed load's files were removed
        assert load_state(srv, "crash_label") == "UNKNOWN"
        assert stream_load(srv, body, "crash_label")["Status"] == "Success"  # label free
        assert totals(srv)[0] == committed[0] + 20000


def test_precommitted_load_survives_kill_9_and_commits_after_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    body = csv_rows(1000, 5000)
    with ServerProcess(data) as srv:
        setup_db(srv)
        committed = totals(srv)
    srv = ServerProcess(data).start()
    result = stream_load(srv, body, "two_phase", two_phase_commit="true")
    assert (result["Status"], result["TwoPhaseCommit"]) == ("Success", "true"), result
    txn_id = result["TxnId"]
    pending_files = segment_files(data)
    assert show_load_state(srv, "two_phase") == "LOADING"
    srv.kill()

    with ServerProcess(data) as srv:
        assert segment_files(data) == pending_files  # the start-up GC kept the pending files
        assert totals(srv) == committed  # still nothing visible
        assert load_state(srv, "two_phase") == "PRECOMMITTED"
        again = stream_load(srv, body, "two_phase")
        assert (again["Status"], again["ExistingJobStatus"]) == ("Label Already Exists",
                                                                "RUNNING")
        assert two_pc(srv, txn_id=str(txn_id), txn_operation="commit") == {
            "status": "Success", "msg": f"transaction [{txn_id}] commit successfully."}
        expected = (committed[0] + 5000, committed[1] + sum(range(1000, 6000)))
        assert totals(srv) == expected
        # the load record came back from before the kill and follows the commit
        assert show_load_state(srv, "two_phase") == "FINISHED"
    srv = ServerProcess(data).start()
    try:
        assert totals(srv) == expected  # the commit is durable
        assert load_state(srv, "two_phase") == "VISIBLE"
    finally:
        srv.kill()


def test_a_precommitted_load_never_committed_is_aborted_after_its_timeout(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    conf = tmp_path / "short.toml"
    conf.write_text("[load]\nstream_load_default_precommit_timeout_second = 1\n")
    with ServerProcess(data) as srv:
        setup_db(srv)
        committed = totals(srv)
        before = segment_files(data)
        result = stream_load(srv, csv_rows(1000, 300), "forgotten", two_phase_commit="true")
        assert result["TwoPhaseCommit"] == "true"
    # restarted with a one-second precommit timeout, the server aborts it by itself
    with ServerProcess(data, extra_args=("--conf", str(conf))) as srv:
        srv.wait_for_stderr(r"two-phase load txn=\d+ label=forgotten aborted", timeout=60)
        assert load_state(srv, "forgotten") == "ABORTED"
        assert totals(srv) == committed
        assert segment_files(data) == before
        failed = two_pc(srv, label="forgotten", txn_operation="commit")
        assert failed["status"] != "Success" and "already aborted" in failed["msg"]
