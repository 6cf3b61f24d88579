"""Connecting: an unknown database is Doris' 1049 (PyMySQL, mysqlclient, the mariadb CLI's -D)
with no traceback in the server log; the handshake announces utf8mb4 (collation 45) and the
session stays utf8mb4 whatever charset the client asks for (CLI `status`, @@character_set_*),
as in Doris; SET NAMES follows Doris' SetNamesVar."""

from __future__ import annotations

import shutil
import subprocess

import MySQLdb
import pymysql
import pytest

MARIADB = shutil.which("mariadb") or "/usr/bin/mariadb"
UTF8MB4_GENERAL_CI = 45


def _cli(server, *args: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    return subprocess.run(
        [MARIADB, "-h127.0.0.1", f"-P{server.port}", "--protocol=TCP", "-uroot", "--skip-ssl",
         *args], capture_output=True, text=True, timeout=120)


def _logged_connection(server) -> str:  # type: ignore[no-untyped-def]
    """Connect, and return the log line the server wrote for that connection."""
    with server.connect() as c, c.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        conn_id = cur.fetchone()[0]
    return server.wait_for_stderr(rf"Started new connection: {conn_id}$")


def _log_between(server, first: str, last: str) -> list[str]:  # type: ignore[no-untyped-def]
    lines = list(server._stderr_tail)
    return lines[lines.index(first) + 1: lines.index(last)]


def test_unknown_database_at_connect_is_1049_without_traceback(server) -> None:  # type: ignore[no-untyped-def]
    name = "nosuch_db_at_connect"
    with server.connect() as c, c.cursor() as cur:
        with pytest.raises(pymysql.MySQLError) as use_error:
            cur.execute(f"USE {name}")  # Doris' text for an unknown database
    code, message = use_error.value.args
    assert code == 1049 and message == f"errCode = 2, detailMessage = Unknown database '{name}'"

    first = _logged_connection(server)
    with pytest.raises(pymysql.err.OperationalError) as ei:
        server.connect(name)
    assert ei.value.args == (code, message)
    with pytest.raises(MySQLdb.OperationalError) as mi:
        MySQLdb.connect(host="127.0.0.1", port=server.port, user="root", db=name)
    assert mi.value.args == (code, message)
    proc = _cli(server, "-D", name, "-e", "SELECT 1")
    assert proc.returncode == 1 and proc.stderr == f"ERROR {code} (42000): {message}\n"
    # Authentication comes first (Doris' order): a wrong password is 1045, not 1049.
    with pytest.raises(pymysql.err.OperationalError) as denied:
        server.connect(name, password="wrong")
    assert denied.value.args[0] == 1045

    # Everything the failed connects logged: connection starts, no error and no traceback.
    between = _log_between(server, first, _logged_connection(server))
    assert sum("Started new connection" in ln for ln in between) == 4, between
    assert not [ln for ln in between
                if "Traceback" in ln or "exception" in ln.lower() or "Error" in ln], between
    # the server still serves the database once it exists
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
    try:
        with server.connect(name) as c, c.cursor() as cur:
            cur.execute("SELECT DATABASE()")
            assert cur.fetchone() == (name,)
    finally:
        with server.connect() as c, c.cursor() as cur:
            cur.execute(f"DROP DATABASE {name}")


@pytest.mark.parametrize("client_charset", [None, "latin1", "utf8mb4"])
def test_cli_status_reports_utf8mb4(server, client_charset: str | None) -> None:  # type: ignore[no-untyped-def]
    args = [f"--default-character-set={client_charset}"] if client_charset else []
    proc = _cli(server, *args, "-e", "status")
    assert proc.returncode == 0, proc.stderr
    lines = dict(
        (k.strip(), v.strip()) for k, _, v in
        (ln.partition(":") for ln in proc.stdout.splitlines() if "characterset" in ln))
    assert lines == {"Server characterset": "utf8mb4", "Db     characterset": "utf8mb4",
                     "Client characterset": "utf8mb4", "Conn.  characterset": "utf8mb4"}


def test_handshake_collation_and_session_charset(server) -> None:  # type: ignore[no-untyped-def]
    variables = ("character_set_client", "character_set_connection", "character_set_results")
    with server.connect(charset="utf8mb4") as c, c.cursor() as cur:
        assert c.server_language == UTF8MB4_GENERAL_CI  # the collation id of the handshake
        cur.execute("SELECT " + ", ".join(f"@@{v}" for v in variables))
        assert cur.fetchone() == ("utf8mb4",) * 3
        cur.execute("SELECT '日本語 ünïcode'")
        assert cur.fetchone() == ("日本語 ünïcode",)
    # mysqlclient: libmariadb reads the handshake's collation as the server's charset
    conn = MySQLdb.connect(host="127.0.0.1", port=server.port, user="root")
    try:
        cur = conn.cursor()
        cur.execute("SELECT " + ", ".join(f"@@{v}" for v in variables))
        assert cur.fetchone() == ("utf8mb4",) * 3
        assert conn.character_set_name() == "utf8mb4"
    finally:
        conn.close()


def test_set_names_follows_doris(server) -> None:  # type: ignore[no-untyped-def]
    with server.connect() as c, c.cursor() as cur:
        for stmt in ("SET NAMES utf8mb4", "SET NAMES 'utf8' COLLATE 'utf8_general_ci'",
                     "SET NAMES DEFAULT", "SET NAMES gbk", "SET CHARACTER SET utf8mb4"):
            cur.execute(stmt)
        with pytest.raises(pymysql.MySQLError) as ei:
            cur.execute("SET NAMES latin1")
        assert ei.value.args == (1115, "errCode = 2, detailMessage = Unknown character set: 'latin1'")
        cur.execute("SELECT @@character_set_client, @@character_set_results")
        assert cur.fetchone() == ("utf8mb4", "utf8mb4")
