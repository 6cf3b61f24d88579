"""Stream Load's transaction and status side with real clients (curl, requests, pydoris):
two-phase commit (`two_phase_commit: true`, then `_stream_load_2pc` commit or abort by txn id
or label), the ErrorURL of filtered rows, SHOW LOAD / SHOW STREAM LOAD / SHOW TRANSACTION,
`get_load_state`, label dedup of concurrent retries, the `timeout` / `exec_mem_limit` /
`group_commit` / `timezone` headers and Doris' 401 body. Loaded rows are compared with DuckDB
reading the same file."""

from __future__ import annotations

import base64
import json
import secrets
import socket
import subprocess
import threading
from pathlib import Path

import duckdb
import pytest
import requests
from pydoris.doris_client import DorisClient
from support.rows import normalize_rows

DDL = """CREATE TABLE t (dt DATE NOT NULL, k INT NOT NULL, v VARCHAR(10))
    DUPLICATE KEY(dt, k)
    PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ("2024-02-01"),
                            PARTITION p2 VALUES LESS THAN ("2024-03-01"))
    DISTRIBUTED BY HASH(k) BUCKETS 3 PROPERTIES ("replication_num" = "1")"""


@pytest.fixture
def table(db_conn) -> str:
    with db_conn.cursor() as cur:
        cur.execute(DDL)
    return "t"


def write_rows(path: Path, start: int, n: int) -> Path:
    lines = [f"2024-0{1 + i % 2}-{1 + i % 28:02d},{i},v{i}" for i in range(start, start + n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def base(server, db: str) -> str:
    return f"http://127.0.0.1:{server.http_port}/api/{db}"


def curl(args: list[str]) -> dict:
    out = subprocess.run(["curl", "-s", "--location-trusted", "-u", "root:", *args],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out)


def curl_load(server, db: str, path: Path, *headers: str) -> dict:
    args = ["-H", "Expect:100-continue", "-H", "column_separator:,"]
    for h in headers:
        args += ["-H", h]
    return curl([*args, "-T", str(path), f"{base(server, db)}/t/_stream_load"])


def curl_2pc(server, db: str, *headers: str, with_table: bool = False) -> dict:
    args = ["-X", "PUT"]
    for h in headers:
        args += ["-H", h]
    path = "/t/_stream_load_2pc" if with_table else "/_stream_load_2pc"
    return curl([*args, base(server, db) + path])


def rows(db_conn) -> list[tuple]:
    with db_conn.cursor() as cur:
        cur.execute("SELECT dt, k, v FROM t")
        return normalize_rows(cur.fetchall())


def duck_rows(path: Path) -> list[tuple]:
    got = duckdb.sql(f"SELECT * FROM read_csv('{path}', header=false, "
                     "columns={'dt': 'DATE', 'k': 'INTEGER', 'v': 'VARCHAR'})").fetchall()
    return normalize_rows(got)


def load_state(server, db: str, label: str) -> str:
    r = requests.get(f"{base(server, db)}/get_load_state", params={"label": label},
                     auth=("root", ""), timeout=60)
    body = r.json()
    assert (r.status_code, body["code"], body["msg"]) == (200, 0, "success"), body
    return body["data"]


def show(db_conn, sql: str) -> list[dict]:
    with db_conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]


def test_two_phase_commit_with_curl_by_txn_id(server, db, db_conn, table, tmp_path) -> None:
    path = write_rows(tmp_path / "a.csv", 0, 500)
    label = f"tpc_{secrets.token_hex(4)}"
    body = curl_load(server, db, path, f"label:{label}", "two_phase_commit:true")
    assert (body["Status"], body["TwoPhaseCommit"], body["NumberLoadedRows"]) == \
        ("Success", "true", 500), body
    txn_id = body["TxnId"]
    assert rows(db_conn) == []  # precommitted: nothing visible
    assert load_state(server, db, label) == "PRECOMMITTED"
    [txn] = show(db_conn, f"SHOW TRANSACTION WHERE LABEL = '{label}'")
    assert (txn["TransactionId"], txn["TransactionStatus"]) == (str(txn_id), "PRECOMMITTED")
    # a retry of the label while it waits for its commit: RUNNING, nothing loaded twice
    again = curl_load(server, db, path, f"label:{label}", "two_phase_commit:true")
    assert (again["Status"], again["ExistingJobStatus"]) == ("Label Already Exists", "RUNNING")

    done = curl_2pc(server, db, f"txn_id:{txn_id}", "txn_operation:commit")
    assert done == {"status": "Success", "msg": f"transaction [{txn_id}] commit successfully."}
    assert rows(db_conn) == duck_rows(path)
    assert load_state(server, db, label) == "VISIBLE"
    [txn] = show(db_conn, f"SHOW TRANSACTION FROM {db} WHERE ID = {txn_id}")
    assert txn["TransactionStatus"] == "VISIBLE" and txn["Label"] == label
    # committing twice is refused with Doris' reason; the rows stay loaded once
    twice = curl_2pc(server, db, f"txn_id:{txn_id}", "txn_operation:commit")
    assert twice["status"] != "Success" and "is already visible" in twice["msg"], twice
    again = curl_load(server, db, path, f"label:{label}")
    assert (again["Status"], again["ExistingJobStatus"]) == ("Label Already Exists", "FINISHED")
    assert len(rows(db_conn)) == 500


def test_two_phase_abort_by_label_with_requests(server, db, db_conn, table, tmp_path) -> None:
    path = write_rows(tmp_path / "b.csv", 0, 50)
    label = f"tpa_{secrets.token_hex(4)}"
    url = f"{base(server, db)}/t/_stream_load"
    headers = {"label": label, "two_phase_commit": "true", "column_separator": ","}
    r = requests.put(url, data=path.read_bytes(), headers=headers, auth=("root", ""),
                     timeout=60)
    assert r.json()["TwoPhaseCommit"] == "true" and r.json()["Status"] == "Success"
    r = requests.put(f"{base(server, db)}/t/_stream_load_2pc", auth=("root", ""), timeout=60,
                     headers={"label": label, "txn_operation": "abort"})
    assert r.json() == {"status": "Success", "msg": f"label [{label}] abort successfully."}
    assert rows(db_conn) == []
    assert load_state(server, db, label) == "ABORTED"
    [txn] = show(db_conn, f"SHOW TRANSACTION WHERE LABEL = '{label}'")
    assert (txn["TransactionStatus"], txn["Reason"]) == ("ABORTED", "user abort")
    r = requests.put(f"{base(server, db)}/_stream_load_2pc", auth=("root", ""), timeout=60,
                     headers={"label": label, "txn_operation": "commit"})
    assert r.json()["status"] != "Success" and "already aborted" in r.json()["msg"]
    # the aborted label is free again: a plain load under it succeeds
    r = requests.put(url, data=path.read_bytes(), auth=("root", ""), timeout=60,
                     headers={"label": label, "column_separator": ","})
    assert r.json()["Status"] == "Success", r.json()
    assert rows(db_conn) == duck_rows(path)
    assert load_state(server, db, label) == "VISIBLE"


def test_two_phase_requests_with_bad_arguments(server, db, table) -> None:
    cases = [
        ((), "txn_id and label are both empty"),
        (("txn_id:1", "label:x", "txn_operation:commit"), "can not be specified at the same"),
        (("txn_id:1",), "should be 'commit' or 'abort'"),
        (("txn_id:99999999", "txn_operation:commit"), "transaction [99999999] not found"),
        (("label:no_such_label", "txn_operation:abort"), "label [no_such_label] not found"),
    ]
    for headers, message in cases:
        body = curl_2pc(server, db, *headers, with_table=True)
        assert body["status"] != "Success" and message in body["msg"], (headers, body)
    assert load_state(server, db, "no_such_label") == "UNKNOWN"


def test_error_url_lists_the_filtered_rows(server, db, db_conn, table, tmp_path) -> None:
    path = write_rows(tmp_path / "c.csv", 0, 20)
    with path.open("a") as f:
        f.write("2024-01-05,not_a_number,bad1\n")  # k is NOT NULL: filtered
        f.write("2024-09-01,77,nopart\n")  # no partition takes September
        f.write("2024-01-06,78\n")  # too few columns
    label = f"err_{secrets.token_hex(4)}"
    body = curl_load(server, db, path, f"label:{label}", "max_filter_ratio:0.5")
    assert (body["Status"], body["NumberLoadedRows"], body["NumberFilteredRows"]) == \
        ("Success", 20, 3), body
    url = body["ErrorURL"]
    assert url.startswith(f"http://127.0.0.1:{server.http_port}/api/_load_error_log?file=")
    r = requests.get(url, timeout=60)  # no credentials needed, as on Doris
    assert r.status_code == 200
    lines = r.text.splitlines()
    assert len(lines) == 3 and all(line.startswith("Reason: ") for line in lines), lines
    assert any("not_a_number" in line for line in lines)
    assert any("no partition for this tuple" in line for line in lines)
    # SHOW LOAD and SHOW STREAM LOAD carry the same URL
    [load] = show(db_conn, f"SHOW LOAD WHERE LABEL = '{label}'")
    assert (load["State"], load["Type"], load["URL"]) == ("FINISHED", "STREAM_LOAD", url)
    assert "dpp.abnorm.ALL=3" in load["EtlInfo"] and "dpp.norm.ALL=20" in load["EtlInfo"]
    [sl] = show(db_conn, f"SHOW STREAM LOAD FROM {db} WHERE LABEL = '{label}'")
    assert (sl["Status"], sl["Url"], sl["TotalRows"], sl["LoadedRows"], sl["FilteredRows"],
            sl["Table"], sl["User"]) == ("Success", url, "23", "20", "3", "t", "root")
    # a load failed for too many filtered rows points at its rows too, and loads nothing
    failed = curl_load(server, db, path, f"label:{label}_strict")
    assert failed["Status"] == "Fail" and "too many filtered rows" in failed["Message"]
    assert subprocess.run(["curl", "-s", failed["ErrorURL"]], capture_output=True, text=True,
                          timeout=60, check=True).stdout.count(
        "Reason: ") == 3
    [load] = show(db_conn, f"SHOW LOAD WHERE LABEL = '{label}_strict'")
    assert load["State"] == "CANCELLED" and "too many filtered rows" in load["ErrorMsg"]
    [txn] = show(db_conn, f"SHOW TRANSACTION WHERE LABEL = '{label}_strict'")
    assert (txn["TransactionId"], txn["TransactionStatus"]) == (str(failed["TxnId"]),
                                                                "ABORTED")
    assert "too many filtered rows" in txn["Reason"]
    assert len(rows(db_conn)) == 20
    # only our own error logs are served
    for name in ("../fe/catalog.db", "error_log_nope", "/etc/passwd"):
        r = requests.get(f"http://127.0.0.1:{server.http_port}/api/_load_error_log",
                         params={"file": name}, timeout=60)
        assert r.status_code == 404


def test_show_load_filters_orders_and_limits(server, db, db_conn, table, tmp_path) -> None:
    path = write_rows(tmp_path / "d.csv", 0, 5)
    labels = [f"sl{i}_{secrets.token_hex(3)}" for i in range(3)]
    for label in labels:
        assert curl_load(server, db, path, f"label:{label}",
                         "max_filter_ratio:0.25")["Status"] == "Success"
    task = show(db_conn, f"SHOW LOAD WHERE LABEL = '{labels[0]}'")[0]["TaskInfo"]
    assert "max_filter_ratio:0.25;" in task, task
    bad = curl_load(server, db, path, "label:sl_bad", "columns:k,nope")
    assert bad["Status"] == "Fail"
    finished = show(db_conn, "SHOW LOAD WHERE STATE = 'FINISHED' ORDER BY Label DESC LIMIT 2")
    assert [r["Label"] for r in finished] == sorted(labels, reverse=True)[:2]
    assert [r["Label"] for r in show(db_conn, "SHOW LOAD WHERE LABEL LIKE 'sl1_%'")] == \
        [labels[1]]
    with db_conn.cursor() as cur:
        cur.execute("SHOW LOAD")
        assert [d[0] for d in cur.description][:5] == ["JobId", "Label", "State", "Progress",
                                                       "Type"]
        cur.execute("SHOW STREAM LOAD")
        assert [d[0] for d in cur.description][:7] == ["Label", "Db", "Table", "ClientIp",
                                                       "Status", "Message", "Url"]
        with pytest.raises(Exception, match="does not exist"):
            cur.execute("SHOW TRANSACTION WHERE LABEL = 'never_used'")


def test_concurrent_retries_report_the_real_job_status(server, db, db_conn, table,
                                                       tmp_path) -> None:
    """Six clients retry one label at once (requests, in threads): one loads, every other
    is `Label Already Exists` with RUNNING (the first still loading) or FINISHED."""
    data = write_rows(tmp_path / "e.csv", 0, 3000).read_bytes()
    label = f"dup_{secrets.token_hex(4)}"
    bodies: list[dict] = []

    def put() -> None:
        r = requests.put(f"{base(server, db)}/t/_stream_load", data=data, auth=("root", ""),
                         headers={"label": label, "column_separator": ","}, timeout=120)
        bodies.append(r.json())

    threads = [threading.Thread(target=put) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(b["Status"] for b in bodies) == ["Label Already Exists"] * 5 + ["Success"]
    winner = next(b for b in bodies if b["Status"] == "Success")
    for b in bodies:
        if b is not winner:
            assert b["ExistingJobStatus"] in ("RUNNING", "FINISHED"), b
            assert b["Message"].endswith(f"relate to txn [{winner['TxnId']}]"), b
    assert len(rows(db_conn)) == 3000


def test_pydoris_client_loads(server, db, db_conn, table, tmp_path) -> None:
    path = write_rows(tmp_path / "f.csv", 100, 40)
    client = DorisClient("127.0.0.1", str(server.http_port), "root", "")
    client.options.set_csv_format(",").set_auto_uuid_label()
    assert client.write(db, "t", path.read_bytes()) is True
    assert rows(db_conn) == duck_rows(path)
    label = client.options.get_options()["label"]
    assert load_state(server, db, label) == "VISIBLE"
    assert client.write(db, "t", path.read_bytes()) is False  # same label: refused
    assert len(rows(db_conn)) == 40


def test_wrong_password_is_dorises_401_body(server, db, table, tmp_path) -> None:
    path = write_rows(tmp_path / "g.csv", 0, 3)
    r = requests.put(f"{base(server, db)}/t/_stream_load", data=path.read_bytes(),
                     auth=("root", "nope"), timeout=60)
    body = r.json()
    assert r.status_code == 401 and (body["msg"], body["code"]) == ("Unauthorized", 401)
    assert body["data"].startswith("Access denied for user 'root'")


@pytest.mark.parametrize("header, message", [
    ("exec_mem_limit:lots", "Invalid exec_mem_limit"),
    ("timeout:-3", "Invalid timeout"),
    ("group_commit:sometimes", "group_commit can only be"),
    ("timezone:Mars/Olympus", "Unknown or incorrect time zone"),
    ("two_phase_commit:maybe", "Invalid two_phase_commit"),
])
def test_bad_transaction_headers_fail_before_loading(server, db, db_conn, table, tmp_path,
                                                     header, message) -> None:
    body = curl_load(server, db, write_rows(tmp_path / "h.csv", 0, 3), header)
    assert body["Status"] == "Fail" and message in body["Message"], body
    assert rows(db_conn) == []


def test_accepted_transaction_headers_load(server, db, db_conn, table, tmp_path) -> None:
    path = write_rows(tmp_path / "i.csv", 0, 10)
    body = curl_load(server, db, path, "exec_mem_limit:1073741824", "timeout:100",
                     "timezone:Asia/Shanghai", "group_commit:off_mode")
    assert body["Status"] == "Success", body
    both = curl_load(server, db, path, "group_commit:sync_mode", "label:gc_and_label")
    assert "label and group_commit can't be set at the same time" in both["Message"]
    body = curl_load(server, db, path, "group_commit:sync_mode", "timezone:+08:00")
    assert body["Status"] == "Success", body
    assert len(rows(db_conn)) == 20


def test_a_load_past_its_timeout_fails_and_leaves_nothing(server, db, db_conn, table) -> None:
    """`timeout: 1` and a client that sends half its body and then stalls: the load fails
    with a timeout after about a second, nothing is visible, the label is free."""
    half = b"2024-01-01,1,a\n2024-01-02,2,b\n"
    label = f"slow_{secrets.token_hex(4)}"
    auth = base64.b64encode(b"root:").decode()
    request = (f"PUT /api/{db}/t/_stream_load HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Authorization: Basic {auth}\r\nlabel: {label}\r\ntimeout: 1\r\n"
               f"column_separator: ,\r\nContent-Length: {len(half) * 10}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=60) as s:
        s.sendall(request + half)
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    body = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert body["Status"] == "Fail" and "[TIMEOUT]" in body["Message"], body
    assert rows(db_conn) == []
    assert load_state(server, db, label) == "ABORTED"


def test_show_load_lists_inserts(server, db, db_conn, table) -> None:
    """INSERT records itself too (executor/load/records.py `record_insert`): Type INSERT,
    FINISHED with its rows, or CANCELLED with its error."""
    with db_conn.cursor() as cur:
        cur.execute("INSERT INTO t WITH LABEL ins_ok VALUES ('2024-01-03', 1, 'a'), "
                    "('2024-02-03', 2, 'b')")
        with pytest.raises(Exception, match="no partition"):
            cur.execute("INSERT INTO t WITH LABEL ins_bad VALUES ('2030-01-01', 3, 'c')")
    [ok] = show(db_conn, "SHOW LOAD WHERE LABEL = 'ins_ok'")
    assert (ok["Type"], ok["State"], ok["User"]) == ("INSERT", "FINISHED", "root")
    assert "dpp.norm.ALL=2" in ok["EtlInfo"]
    [bad] = show(db_conn, "SHOW LOAD WHERE LABEL = 'ins_bad'")
    assert bad["State"] == "CANCELLED" and "no partition" in bad["ErrorMsg"]
    assert load_state(server, db, "ins_ok") == "VISIBLE"
    assert show(db_conn, "SHOW STREAM LOAD WHERE LABEL = 'ins_ok'") == []


def test_metrics_count_loads_rows_bytes_and_failures(server, db, table, tmp_path) -> None:
    from support.http import scrape_metrics

    path = write_rows(tmp_path / "m.csv", 0, 30)
    before = scrape_metrics(server.http_port)
    assert curl_load(server, db, path)["Status"] == "Success"
    assert curl_load(server, db, path, "columns:k,nope")["Status"] == "Fail"
    after = scrape_metrics(server.http_port)

    def delta(name: str) -> float:
        return after[name] - before.get(name, 0.0)

    assert delta('doris_fe_txn_counter{type="success"}') == 1
    assert delta("doris_be_load_rows") == 30
    assert delta("doris_be_load_bytes") == path.stat().st_size
    assert delta('doris_be_stream_load{type="load_rows"}') == 30
    assert delta("shaledb_stream_load_requests") == 2
    assert delta("shaledb_stream_load_failed") == 1
    assert delta('doris_be_stream_load_txn_request{type="rollback"}') == 1
    assert delta('doris_fe_job{job="load",type="STREAM_LOAD"}') == 2


def test_group_commit_stream_loads_share_one_txn(server, db, db_conn, tmp_path) -> None:
    """`group_commit: sync_mode`: Stream Loads into one table within its
    group_commit_interval_ms become one load, one txn, one version, as in Doris."""
    with db_conn.cursor() as cur:
        cur.execute(DDL.replace('"replication_num" = "1"', '"replication_num" = "1", '
                                '"group_commit_interval_ms" = "2000"'))
    paths = [write_rows(tmp_path / f"gc{i}.csv", i * 100, 100) for i in range(3)]
    bodies: list[dict] = []

    def put(path: Path) -> None:
        r = requests.put(f"{base(server, db)}/t/_stream_load", data=path.read_bytes(),
                         auth=("root", ""), timeout=120,
                         headers={"group_commit": "sync_mode", "column_separator": ","})
        bodies.append(r.json())

    threads = [threading.Thread(target=put, args=(p,)) for p in paths]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(b["Status"] == "Success" and b["GroupCommit"] is True for b in bodies), bodies
    assert sorted(b["NumberLoadedRows"] for b in bodies) == [100, 100, 100]
    assert len({b["TxnId"] for b in bodies}) == 1
    assert all(b["Label"].startswith("group_commit_") for b in bodies)
    assert len(rows(db_conn)) == 300
    with db_conn.cursor() as cur:
        cur.execute("SHOW PARTITIONS FROM t")
        names = [d[0] for d in cur.description]
        versions = [r[names.index("VisibleVersion")] for r in cur.fetchall()]
    assert [int(v) for v in versions] == [2, 2]  # one version per partition for all three


def test_show_load_lists_load_data(server, db, db_conn, table, tmp_path) -> None:
    """LOAD DATA LOCAL INFILE (pymysql) is a MYSQL_LOAD job in SHOW LOAD under its generated
    label, whose state is VISIBLE; a failed one is CANCELLED with its reason."""
    path = write_rows(tmp_path / "ld.csv", 0, 12)
    bad = tmp_path / "bad.csv"
    bad.write_text("2024-01-01,x,a\n2024-01-02,y,b\n")
    conn = server.connect(db, local_infile=True)
    try:
        with conn.cursor() as cur:
            cur.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE t COLUMNS TERMINATED BY "
                        "','")
            with pytest.raises(Exception, match="too many filtered rows"):
                cur.execute(f"LOAD DATA LOCAL INFILE '{bad}' INTO TABLE t COLUMNS TERMINATED "
                            "BY ','")
    finally:
        conn.close()
    [ok] = show(db_conn, "SHOW LOAD WHERE STATE = 'FINISHED'")
    assert (ok["Type"], ok["State"]) == ("MYSQL_LOAD", "FINISHED")
    assert "dpp.norm.ALL=12" in ok["EtlInfo"]
    [failed] = show(db_conn, "SHOW LOAD WHERE STATE = 'CANCELLED'")
    assert failed["Type"] == "MYSQL_LOAD" and "too many filtered rows" in failed["ErrorMsg"]
    assert load_state(server, db, ok["Label"]) == "VISIBLE"
    assert rows(db_conn) == duck_rows(path)
