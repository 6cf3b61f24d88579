"""The `mariadb` command-line client (batch mode) against a live ShaleDB: queries with -e, scripts
on stdin, tab-separated output, NULL, and the exact error line the client prints."""

from __future__ import annotations

import shutil
import subprocess

import pytest

MARIADB = shutil.which("mariadb") or "/usr/bin/mariadb"


def run_cli(
    server,
    *args: str,
    sql: str | None = None,
    stdin: str | None = None,
    db: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    cmd = [
        MARIADB,
        "-h127.0.0.1",
        f"-P{server.port}",
        "--protocol=TCP",
        "-uroot",
        "--skip-ssl",
        "--batch",
        "--skip-print-query-on-error",
        *args,
    ]
    if sql is not None:
        cmd += ["-e", sql]
    if db is not None:
        cmd.append(db)
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return proc.stdout


def test_cli_binary_present() -> None:
    proc = subprocess.run([MARIADB, "--version"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and "mariadb" in proc.stdout.lower()


def test_select_1_with_header(server) -> None:
    assert ok(run_cli(server, sql="SELECT 1")) == "1\n1\n"


def test_select_without_header(server) -> None:
    assert ok(run_cli(server, "-N", sql="SELECT 1, 'abc', NULL")) == "1\tabc\tNULL\n"


def test_create_insert_select_tab_separated(server, make_db) -> None:
    db = make_db("cli_flow")
    script = (
        "CREATE TABLE t (k INT NOT NULL, name VARCHAR(20), score DECIMAL(6, 2), day DATE) "
        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 2;"
        "INSERT INTO t VALUES (1, 'alpha', 1.50, '2024-01-01'), (2, NULL, NULL, NULL), "
        "(3, 'gamma beta', -7.25, '2024-12-31');"
        "SELECT k, name, score, day FROM t ORDER BY k;"
    )
    out = ok(run_cli(server, sql=script, db=db))
    assert out == (
        "k\tname\tscore\tday\n"
        "1\talpha\t1.50\t2024-01-01\n"
        "2\tNULL\tNULL\tNULL\n"
        "3\tgamma beta\t-7.25\t2024-12-31\n"
    )


def test_create_database_and_show_databases(server) -> None:
    name = "sqlt_cli_created_db"
    ok(run_cli(server, sql=f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}"))
    try:
        out = ok(run_cli(server, "-N", sql="SHOW DATABASES"))
        assert name in out.splitlines()
        assert "information_schema" in out.splitlines()
        out = ok(run_cli(server, sql=f"SHOW DATABASES LIKE '{name}'"))
        assert out == f"Database\n{name}\n"
    finally:
        ok(run_cli(server, sql=f"DROP DATABASE IF EXISTS {name}"))


def test_script_on_stdin_with_use(server, make_db) -> None:
    db = make_db("cli_stdin")
    script = (
        f"USE {db};\n"
        "CREATE TABLE s (k INT, v VARCHAR(5)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1;\n"
        "INSERT INTO s VALUES (1, 'x');\n"
        "INSERT INTO s VALUES (2, 'y'), (3, 'z');\n"
        "SELECT count(*) AS n FROM s;\n"
        "SELECT DATABASE();\n"
    )
    out = ok(run_cli(server, stdin=script))
    assert out == f"n\n3\nDATABASE()\n{db}\n"


def test_error_output_format(server, make_db) -> None:
    db = make_db("cli_err")
    proc = run_cli(server, sql="SELECT * FROM no_such_table", db=db)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        "ERROR 1105 (HY000) at line 1: errCode = 2, detailMessage = "
        f"Table [no_such_table] does not exist in database [{db}].\n"
    )


def test_error_stops_script_at_its_line(server, make_db) -> None:
    db = make_db("cli_err_line")
    script = (
        "CREATE TABLE t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1;\n"
        "CREATE TABLE t (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1;\n"
        "SELECT 'not reached';\n"
    )
    proc = run_cli(server, stdin=script, db=db)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        "ERROR 1050 (42S01) at line 2: errCode = 2, detailMessage = Table 't' already exists\n"
    )


@pytest.mark.parametrize(
    ("sql", "line"),
    [
        (
            "CREATE DATABASE sqlt_cli_dup_db; CREATE DATABASE sqlt_cli_dup_db",
            "ERROR 1007 (HY000) at line 1: errCode = 2, detailMessage = "
            "Can't create database 'sqlt_cli_dup_db'; database exists\n",
        ),
        (
            "USE sqlt_no_such_db_xyz",
            "ERROR 1049 (42000) at line 1: errCode = 2, detailMessage = "
            "Unknown database 'sqlt_no_such_db_xyz'\n",
        ),
    ],
)
def test_error_codes_and_sqlstates(server, sql: str, line: str) -> None:
    try:
        proc = run_cli(server, sql=sql)
        assert proc.returncode == 1
        assert proc.stderr == line
    finally:
        run_cli(server, sql="DROP DATABASE IF EXISTS sqlt_cli_dup_db")


def test_connect_to_unknown_database(server) -> None:
    proc = run_cli(server, sql="SELECT 1", db="sqlt_no_such_db_xyz")
    assert proc.returncode == 1
    assert "1049" in proc.stderr and "Unknown database 'sqlt_no_such_db_xyz'" in proc.stderr
