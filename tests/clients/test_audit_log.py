"""The audit log (issue 12, point 7): `<data_dir>/log/fe.audit.log` as Doris writes fe.audit.log,
one line per statement and per login attempt, read back from the file after real pymysql
sessions; passwords never reach it; failed logins count in /metrics; the file rotates by size
under the `[log]` settings of the conf file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import mysql.connector
import pymysql
import pytest
from support.http import scrape_metrics
from support.server import ServerProcess

KEYS = ("Client", "User", "Ctl", "Db", "State", "ErrorCode", "ErrorMessage", "Time(ms)",
        "ScanBytes", "ScanRows", "ReturnRows", "StmtId", "QueryId", "IsQuery", "isNereids",
        "feIp", "Stmt", "CpuTimeMS", "ShuffleSendBytes", "ShuffleSendRows", "SqlHash",
        "peakMemoryBytes", "SqlDigest", "TraceId", "WorkloadGroup", "FuzzyVariables")
LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \[(?P<kind>\w+)\] "
    + "".join(rf"\|{re.escape(k)}=(?P<f{i}>.*?)" for i, k in enumerate(KEYS)) + "$")
PASSWORDS = ("Zebra-pw-1", "Okapi-pw-2", "Tapir-pw-3", "Lemur-pw-4", "Quoll-pw-5")


def parse(path: Path) -> list[dict[str, str]]:
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        m = LINE.match(raw)
        assert m is not None, f"not a Doris audit line: {raw!r}"
        entry = {k: m.group(f"f{i}") for i, k in enumerate(KEYS)}
        entry["kind"], entry["time"] = m.group("kind"), m.group("time")
        out.append(entry)
    return out


def metric(srv: ServerProcess, name: str) -> int:
    return int(scrape_metrics(srv.http_port)[name])


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """One server session of many statement kinds; the audit file is parsed after a clean stop
    (which writes every queued event)."""
    data = tmp_path_factory.mktemp("audit") / "data"
    srv = ServerProcess(data, backends=1)
    facts: dict[str, object] = {}
    with srv:
        conn = srv.connect()
        host, port = conn._sock.getsockname()[:2]  # type: ignore[attr-defined]
        facts["client"] = f"{host}:{port}"
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE audit_db")
            cur.execute("USE audit_db")
            cur.execute("CREATE TABLE t (k INT NOT NULL, v VARCHAR(10)) DUPLICATE KEY(k) "
                        "DISTRIBUTED BY HASH(k) BUCKETS 2")
            cur.execute("INSERT INTO t VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(40)))
            cur.execute("SELECT k, v FROM t WHERE k < 5 ORDER BY k")
            assert len(cur.fetchall()) == 5
            cur.execute("SHOW TABLES")
            facts["show_rows"] = len(cur.fetchall())
            for bad in ("SELECT * FROM missing_table", "SELEC 1"):
                with pytest.raises(pymysql.MySQLError):
                    cur.execute(bad)
            # Statements carrying passwords, accepted or not; none may leak into the log.
            cur.execute(f"CREATE USER 'audited' IDENTIFIED BY '{PASSWORDS[0]}'")
            cur.execute("CREATE USER IF NOT EXISTS 'audited8'@'%' IDENTIFIED WITH "
                        f"caching_sha2_password BY '{PASSWORDS[1]}'")
            for attempt in ((f"CREATE USER 'audited8'@'%' IDENTIFIED WITH caching_sha2_password "
                             f"BY \"{PASSWORDS[1]}\""),  # refused: the user exists
                            f"SET PASSWORD FOR 'audited' = PASSWORD('{PASSWORDS[2]}')",
                            f"ALTER USER 'audited' IDENTIFIED BY '{PASSWORDS[3]}'",
                            f"CREATE USER 'broken' IDENTIFIED BY '{PASSWORDS[4]}' garbage here"):
                try:
                    cur.execute(attempt)
                except pymysql.MySQLError:
                    pass
            cur.execute("SET GLOBAL audit_plugin_max_sql_length = 60")
            cur.execute("SELECT '" + "é" * 100 + "' AS long_one")
            cur.execute("SET GLOBAL audit_plugin_max_sql_length = 4096")
        conn.close()
        # A prepared statement's executions (COM_STMT_EXECUTE, binary protocol) are audited too.
        prepared = mysql.connector.connect(host="127.0.0.1", port=srv.port, user="root",
                                           password="", database="audit_db", use_pure=True)
        pcur = prepared.cursor(prepared=True)
        pcur.execute("SELECT k, v FROM t WHERE k >= %s", (37,))
        assert len(pcur.fetchall()) == 3
        prepared.close()
        failed_before = metric(srv, "shaledb_login_failed_total")
        with pytest.raises(pymysql.err.OperationalError) as denied:
            srv.connect(user="audited", password="not-the-password")
        assert denied.value.args[0] == 1045
        with pytest.raises(pymysql.err.OperationalError):
            srv.connect(user="nobody_here", password="")
        facts["failed_delta"] = metric(srv, "shaledb_login_failed_total") - failed_before
        # SET PASSWORD and ALTER USER .. IDENTIFIED BY changed it: ALTER USER's is the last
        good = srv.connect(user="audited", password=PASSWORDS[3])
        good.close()
    facts["lines"] = parse(data / "log" / "fe.audit.log")
    facts["raw"] = (data / "log" / "fe.audit.log").read_text(encoding="utf-8")
    yield facts


def query_lines(facts: dict[str, object]) -> list[dict[str, str]]:
    return [e for e in facts["lines"] if e["kind"] == "query"]  # type: ignore[union-attr]


def by_stmt(facts: dict[str, object], prefix: str) -> dict[str, str]:
    (entry,) = [e for e in query_lines(facts) if e["Stmt"].startswith(prefix)]
    return entry


def test_every_statement_has_one_line_with_doris_fields(audited: dict[str, object]) -> None:
    lines = query_lines(audited)
    assert len(lines) >= 14
    client = audited["client"]
    mine = [e for e in lines if e["Client"] == client]
    assert mine and all(e["User"] == "root" and e["Ctl"] == "internal" and e["feIp"] == "127.0.0.1"
                        and e["WorkloadGroup"] == "normal" for e in mine)
    # one id per statement and per login; a [slow_query] line repeats its statement's id
    ids = [int(e["StmtId"]) for e in audited["lines"]  # type: ignore[union-attr]
           if e["kind"] != "slow_query"]
    assert len(set(ids)) == len(ids)
    by_id = {e["StmtId"]: e for e in lines}
    assert all(by_id[e["StmtId"]]["Stmt"] == e["Stmt"]
               for e in audited["lines"] if e["kind"] == "slow_query")  # type: ignore[union-attr]
    # An id is taken when a statement starts and its line written when it ends, so lines of
    # different sessions may interleave out of id order; one session's are in order.
    mine_ids = [int(e["StmtId"]) for e in mine]
    assert mine_ids == sorted(mine_ids)
    assert all(re.fullmatch(r"[0-9a-f]{1,16}-[0-9a-f]{1,16}", e["QueryId"]) for e in lines)
    assert len({e["QueryId"] for e in lines}) == len(lines)
    assert all(int(e["Time(ms)"]) >= 0 for e in lines)


def test_select_insert_ddl_show_lines(audited: dict[str, object]) -> None:
    select = by_stmt(audited, "SELECT k, v FROM t WHERE k < 5")
    assert (select["State"], select["ErrorCode"], select["IsQuery"]) == ("EOF", "0", "true")
    assert select["Db"] == "audit_db" and select["ReturnRows"] == "5"
    assert int(select["ScanRows"]) >= 5 and int(select["ScanBytes"]) > 0
    assert re.fullmatch(r"[0-9a-f]{32}", select["SqlHash"])
    insert = by_stmt(audited, "INSERT INTO t VALUES (0, 'v0')")
    assert (insert["State"], insert["IsQuery"], insert["ReturnRows"]) == ("OK", "false", "0")
    create = by_stmt(audited, "CREATE TABLE t")
    assert (create["State"], create["Db"]) == ("OK", "audit_db")
    assert by_stmt(audited, "CREATE DATABASE audit_db")["Db"] == ""
    assert by_stmt(audited, "USE audit_db")["Db"] == "audit_db"
    show = by_stmt(audited, "SHOW TABLES")
    assert (show["State"], show["IsQuery"]) == ("EOF", "false")
    assert show["ReturnRows"] == str(audited["show_rows"])


def test_prepared_statement_executions_are_audited(audited: dict[str, object]) -> None:
    execute = by_stmt(audited, "SELECT k, v FROM t WHERE k >= ?")
    assert (execute["State"], execute["IsQuery"], execute["ReturnRows"]) == ("EOF", "true", "3")
    assert execute["Db"] == "audit_db"


def test_errors_carry_their_codes_and_messages(audited: dict[str, object]) -> None:
    missing = by_stmt(audited, "SELECT * FROM missing_table")
    assert (missing["State"], missing["ErrorCode"]) == ("ERR", "1146")
    assert "Table [missing_table] does not exist" in missing["ErrorMessage"]
    syntax = by_stmt(audited, "SELEC 1")
    assert (syntax["State"], syntax["ErrorCode"]) == ("ERR", "1064")
    assert syntax["ErrorMessage"]


def test_passwords_never_reach_the_log(audited: dict[str, object]) -> None:
    raw = str(audited["raw"])
    for secret in PASSWORDS:
        assert secret not in raw
    create = by_stmt(audited, "CREATE USER 'audited' ")
    assert create["Stmt"] == "CREATE USER 'audited' IDENTIFIED BY '*XXX'"
    assert "BY '*XXX'" in by_stmt(audited, "CREATE USER IF NOT EXISTS 'audited8'")["Stmt"]
    assert by_stmt(audited, "SET PASSWORD FOR")["Stmt"].endswith("PASSWORD('*XXX')")
    assert "*XXX" in by_stmt(audited, "ALTER USER 'audited'")["Stmt"]
    assert "*XXX" in by_stmt(audited, "CREATE USER 'broken'")["Stmt"]
    refused = by_stmt(audited, "CREATE USER 'audited8'@")
    assert refused["State"] == "ERR" and refused["Stmt"].endswith("BY '*XXX'")


def test_long_statements_are_cut_as_doris_does(audited: dict[str, object]) -> None:
    long_one = by_stmt(audited, "SELECT 'éé")
    marker = " ... /* truncated. audit_plugin_max_sql_length=60 */"
    assert long_one["Stmt"].endswith(marker)
    kept = long_one["Stmt"][: -len(marker)]
    assert kept == "SELECT '" + "é" * 26  # 8 + 26 x 2 = 60 bytes, no character cut in half
    assert long_one["ReturnRows"] == "1"


def test_logins_are_audited_and_failures_counted(audited: dict[str, object]) -> None:
    logins = [e for e in audited["lines"] if e["kind"] == "connection"]  # type: ignore[union-attr]
    denied = [e for e in logins if e["State"] == "ERR"]
    assert [(e["User"], e["ErrorCode"]) for e in denied] == [("audited", "1045"),
                                                              ("nobody_here", "1045")]
    assert denied[0]["ErrorMessage"] == ("Access denied for user 'audited'@'127.0.0.1' "
                                         "(using password: YES)")
    assert all(re.fullmatch(r"127\.0\.0\.1:\d+", e["Client"]) for e in logins)
    assert [e["User"] for e in logins if e["State"] == "OK"][-1] == "audited"
    assert audited["failed_delta"] == 2


def test_the_audit_file_rotates_by_size_under_the_conf_settings(tmp_path: Path) -> None:
    conf = tmp_path / "shaledb.toml"
    conf.write_text('[log]\nlog_roll_size_mb = 1\naudit_log_roll_num = 2\n'
                    'audit_log_roll_interval = "DAY"\naudit_log_delete_age = "30d"\n')
    data = tmp_path / "data"
    srv = ServerProcess(data, backends=1, extra_args=("--conf", str(conf)))
    with srv, srv.connect() as conn, conn.cursor() as cur:
        filler = "x" * 4000
        for i in range(800):  # ~3.3 MB of audit lines: three roll-overs
            cur.execute(f"SELECT {i}, '{filler}'")
    log_dir = data / "log"
    rotated = sorted(p.name for p in log_dir.iterdir() if p.name != "fe.audit.log")
    assert len(rotated) == 2, rotated  # audit_log_roll_num: the oldest was deleted
    assert all(re.fullmatch(r"fe\.audit\.log\.\d{8}-\d+", n) for n in rotated)
    indexes = sorted(int(n.rsplit("-", 1)[1]) for n in rotated)
    assert indexes == [2, 3]
    for name in rotated:
        assert (log_dir / name).stat().st_size <= 1024 * 1024
        parse(log_dir / name)  # every line whole
    current = parse(log_dir / "fe.audit.log")
    assert current[-1]["Stmt"].startswith("SELECT 799, 'xxx")
