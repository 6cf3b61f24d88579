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
        "ERROR 1146 (42S02) at line 1: errCode = 2, detailMessage = "
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


# ---- interactive use on a pty -------------------------------------------------------------
def spawn_interactive(server, db: str | None = None):
    """The mariadb CLI on a pseudo-terminal, as a person runs it (auto-rehash on, so it reads
    table and column names for completion at connect and at every USE)."""
    import pexpect  # noqa: PLC0415

    args = ["-h127.0.0.1", f"-P{server.port}", "--protocol=TCP", "-uroot", "--skip-ssl"]
    if db is not None:
        args.append(db)
    env = {"TERM": "dumb", "HOME": "/tmp", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    child = pexpect.spawn(MARIADB, args, encoding="utf-8", timeout=60, dimensions=(40, 200), env=env)
    return child


def _prompt(db: str) -> str:
    return rf"\[{db}\]> "


def test_interactive_query_and_exit(server, make_db) -> None:
    import pexpect  # noqa: PLC0415

    db = make_db("cli_pty")
    child = spawn_interactive(server, db)
    try:
        child.expect(_prompt(db))
        child.sendline("CREATE TABLE t (k INT, v VARCHAR(10)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1;")
        child.expect(r"Query OK, 0 rows affected")
        child.expect(_prompt(db))
        child.sendline("INSERT INTO t VALUES (1, 'one'), (2, 'two');")
        child.expect(r"Query OK, 2 rows affected")
        child.expect(_prompt(db))
        child.sendline("SELECT v FROM t ORDER BY k;")
        # the boxed table the CLI draws for a terminal
        child.expect(r"\| v +\|\r\n\+-+\+\r\n\| one +\|\r\n\| two +\|\r\n\+-+\+\r\n2 rows in set")
        child.expect(_prompt(db))
        child.sendline("SELECT * FROM no_such_table;")
        child.expect(r"ERROR 1146 \(42S02\): errCode = 2, detailMessage = Table \[no_such_table\] does not exist")
        child.expect(_prompt(db))
        child.sendline("exit")
        child.expect("Bye")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def test_interactive_use_changes_database(server, make_db) -> None:
    """`USE db` in the CLI is COM_INIT_DB; the prompt and DATABASE() follow it."""
    db1, db2 = make_db("cli_use_a"), make_db("cli_use_b")
    child = spawn_interactive(server, db1)
    try:
        child.expect(_prompt(db1))
        child.sendline(f"USE {db2}")
        child.expect("Database changed")
        child.expect(_prompt(db2))
        child.sendline("SELECT DATABASE() AS d;")
        child.expect(rf"\| {db2} \|")
        child.expect(_prompt(db2))
        child.sendline("USE sqlt_no_such_db_xyz")
        child.expect(r"ERROR 1049 \(42000\): errCode = 2, detailMessage = Unknown database 'sqlt_no_such_db_xyz'")
        child.expect(_prompt(db2))  # still in the old database
        child.sendline("exit")
    finally:
        child.close(force=True)


def test_status_command_uses_com_statistics(server, make_db) -> None:
    db = make_db("cli_status")
    child = spawn_interactive(server, db)
    try:
        child.expect(_prompt(db))
        child.sendline("status")
        child.expect(rf"Current database:\s+{db}")
        child.expect(r"Server version:\s+5\.7\.99 ShaleDB")
        # the line after "Uptime:" is the server's COM_STATISTICS answer
        child.expect(r"Threads: \d+  Questions: \d+  Slow queries: 0  Opens: 0  Flush tables: 1  "
                     r"Open tables: 0  Queries per second avg: \d+\.\d{3}")
        child.expect(_prompt(db))
        child.sendline("exit")
    finally:
        child.close(force=True)


def test_status_in_batch_mode(server) -> None:
    out = ok(run_cli(server, sql="status"))
    assert "Uptime:" in out and "Threads: " in out and "Questions: " in out


def test_tab_completion_reads_columns_with_com_field_list(server, make_db) -> None:
    """At connect the CLI lists tables (SHOW TABLES) and each table's columns (COM_FIELD_LIST);
    TAB then completes a column name only this table has."""
    db = make_db("cli_tab")
    ok(run_cli(server, sql="CREATE TABLE zt (k INT, zebra_stripes_count BIGINT DEFAULT '7') "
                           "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db=db))
    child = spawn_interactive(server, db)
    try:
        child.expect(_prompt(db))
        child.send("SELECT zebra_str\t")
        child.expect("zebra_stripes_count")
        child.send(" FROM zt;\r")
        child.expect(r"Empty set")
        child.expect(_prompt(db))
        child.sendline("exit")
    finally:
        child.close(force=True)


def test_com_field_list_metadata(server, make_db) -> None:
    """COM_FIELD_LIST answers with each column's real type and default (mysqlclient's
    `list_fields` would not show it; checked through pymysql's raw protocol)."""
    import pymysql  # noqa: PLC0415
    from pymysql.constants import COMMAND  # noqa: PLC0415

    db = make_db("cli_fl")
    ok(run_cli(server, sql="CREATE TABLE ft (k INT, d DECIMAL(10, 3) DEFAULT '1.5', s VARCHAR(9)) "
                           "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1", db=db))
    conn = server.connect(db)
    try:
        conn._execute_command(COMMAND.COM_FIELD_LIST, "ft\0")
        fields = []
        while True:
            packet = conn._read_packet()
            if packet.is_eof_packet() or packet.is_ok_packet():
                break
            fields.append(_field(packet))
        assert [(f[0], f[1], f[2]) for f in fields] == [("k", 3, 11), ("d", 246, 12), ("s", 253, 255)]
        with pytest.raises(pymysql.err.ProgrammingError) as ei:
            conn._execute_command(COMMAND.COM_FIELD_LIST, "no_such\0")
            conn._read_packet()
        assert ei.value.args[0] == 1146
        conn.select_db("information_schema")  # virtual tables too (completion after USE)
        conn._execute_command(COMMAND.COM_FIELD_LIST, "schemata\0")
        names = []
        while not (packet := conn._read_packet()).is_eof_packet() and not packet.is_ok_packet():
            names.append(_field(packet)[0])
        assert names == ["CATALOG_NAME", "SCHEMA_NAME", "DEFAULT_CHARACTER_SET_NAME",
                         "DEFAULT_COLLATION_NAME", "SQL_PATH"]
    finally:
        conn.close()


def _field(packet) -> tuple[str, int, int]:
    from pymysql.protocol import FieldDescriptorPacket  # noqa: PLC0415

    fd = FieldDescriptorPacket(packet._data, "utf8")
    return fd.name, fd.type_code, fd.length
