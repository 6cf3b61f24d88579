"""MySQL Load (`LOAD DATA LOCAL INFILE`, server/local_infile.py) with real clients: pymysql
(`local_infile=True`), the `mariadb` CLI (`--local-infile`) and a raw protocol client for a
client that hangs up mid-file. Loaded rows equal DuckDB reading the same file and applying the
same SET expressions; the OK info is Doris' `Records: N  Deleted: 0  Skipped: M  Warnings: 0`;
a failed load leaves nothing visible and the connection stays usable."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import duckdb
import pymysql
import pytest
from support.mysql_raw import (
    COM_QUERY,
    COM_STMT_PREPARE,
    DEFAULT_CAPS,
    RawClient,
    healthy,
    parse_error,
)
from support.rows import normalize_rows

N_ROWS = 3000
CLIENT_LOCAL_FILES = 0x80
MARIADB = shutil.which("mariadb") or "/usr/bin/mariadb"


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A header line, then `id,name,amount,day` rows (some NULLs as \\N)."""
    rng = random.Random(5)
    lines = ["id,name,amount,day"]
    for i in range(N_ROWS):
        name = rng.choice(["ann", "bo", "cy", "dee", ""])
        amount = "\\N" if rng.random() < 0.05 else str(rng.randrange(-10**6, 10**6))
        lines.append(f"{i},{name},{amount},2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}")
    path = tmp_path_factory.mktemp("load_data") / "rows.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def duck(path: Path, select: str, where: str = "true") -> list[tuple]:
    con = duckdb.connect()
    con.execute(f"""CREATE VIEW f AS SELECT * FROM read_csv('{path}', delim=',', header=true,
        nullstr='\\N', quote='', escape='',
        columns={{'id': 'BIGINT', 'name': 'VARCHAR', 'amount': 'BIGINT', 'day': 'DATE'}})""")
    return con.execute(f"SELECT {select} FROM f WHERE {where}").fetchall()


@pytest.fixture
def table(db_conn) -> str:
    with db_conn.cursor() as cur:
        cur.execute("""CREATE TABLE ld (id BIGINT NOT NULL, name VARCHAR(8), doubled BIGINT,
            day DATE, src VARCHAR(10) DEFAULT 'csv') DUPLICATE KEY(id)
            PARTITION BY RANGE(day) (PARTITION h1 VALUES LESS THAN ("2024-07-01"),
                                     PARTITION h2 VALUES LESS THAN ("2025-01-01"))
            DISTRIBUTED BY HASH(id) BUCKETS 3 PROPERTIES ("replication_num" = "1")""")
    return "ld"


def load_sql(path: Path | str, extra: str = "", props: str = "") -> str:
    return (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE ld {extra} COLUMNS TERMINATED BY ',' "
            "LINES TERMINATED BY '\\n' IGNORE 1 LINES (id, name, @amount, day) "
            f"SET (doubled = @amount * 2) {props}")


def rows(conn, sql: str) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def test_pymysql_load_equals_duckdb(server, db, table, csv_file) -> None:
    conn = server.connect(db, local_infile=True)
    try:
        with conn.cursor() as cur:
            affected = cur.execute(load_sql(csv_file, props='PROPERTIES ("strict_mode" = "true", '
                                                            '"timezone" = "Asia/Shanghai")'))
        assert affected == N_ROWS
        assert conn._result.message.endswith(
            f"Records: {N_ROWS}  Deleted: 0  Skipped: 0  Warnings: 0".encode())
        got = rows(conn, "SELECT id, name, doubled, day, src FROM ld")
        assert normalize_rows(got) == normalize_rows(
            duck(csv_file, "id, name, amount * 2, day, 'csv'"))
    finally:
        conn.close()


def test_partition_clause_and_bad_rows_under_ratio(server, db, table, csv_file, tmp_path) -> None:
    """PARTITION (h1) loads the first half-year; the rest are filtered (Skipped) and allowed by
    max_filter_ratio."""
    conn = server.connect(db, local_infile=True)
    try:
        with conn.cursor() as cur:
            affected = cur.execute(load_sql(csv_file, "PARTITION (h1)",
                                            'PROPERTIES ("max_filter_ratio" = "0.9")'))
        want = duck(csv_file, "id, day", "day < DATE '2024-07-01'")
        assert affected == len(want)
        skipped = N_ROWS - len(want)
        assert conn._result.message.endswith(
            f"Records: {len(want)}  Deleted: 0  Skipped: {skipped}  Warnings: 0".encode())
        assert normalize_rows(rows(conn, "SELECT id, day FROM ld")) == normalize_rows(want)
    finally:
        conn.close()


def test_too_many_bad_rows_names_them_and_loads_nothing(server, db, table, tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("h\n1,a,5,2024-01-02\nzz,b,6,2024-01-03\n3,c,7,2024-13-45\n4,d,8,2024-02-02\n")
    conn = server.connect(db, local_infile=True)
    try:
        with pytest.raises(pymysql.err.OperationalError) as err:
            conn.cursor().execute(load_sql(path, props='PROPERTIES ("strict_mode"="true")'))
        code, message = err.value.args
        assert code == 1105
        assert message.startswith("errCode = 2, detailMessage = [DATA_QUALITY_ERROR]too many "
                                  "filtered rows"), message
        assert "2 rows filtered of 4" in message and "zz,b,6,2024-01-03" in message
        assert "2024-13-45" in message
        assert rows(conn, "SELECT count(*) FROM ld") == [(0,)]  # nothing visible, same conn
    finally:
        conn.close()


def test_parse_error_mid_file_keeps_the_connection(server, db, table, tmp_path) -> None:
    """Invalid UTF-8 early in a file of several reader blocks: the load fails at once, the rest
    of the upload is read and dropped, the error arrives and the connection carries on."""
    path = tmp_path / "latin1.csv"
    good = "".join(f"{i},name{i % 7},{i},2024-03-04\n" for i in range(1, 200_000))
    path.write_bytes(b"h\n1,caf\xe9,1,2024-01-01\n" + good.encode())
    conn = server.connect(db, local_infile=True)
    try:
        with pytest.raises(pymysql.err.OperationalError) as err:
            conn.cursor().execute(load_sql(path))
        assert "UTF8" in err.value.args[1] or "utf" in err.value.args[1].lower(), err.value
        assert rows(conn, "SELECT count(*) FROM ld") == [(0,)]
    finally:
        conn.close()


def test_client_without_local_infile_is_refused(server, db, table, csv_file) -> None:
    conn = server.connect(db)  # pymysql announces CLIENT_LOCAL_FILES only with local_infile
    try:
        with pytest.raises(pymysql.err.OperationalError) as err:
            conn.cursor().execute(load_sql(csv_file))
        assert err.value.args == (1148, "This client is not support to load client local file.")
        assert rows(conn, "SELECT count(*) FROM ld") == [(0,)]
    finally:
        conn.close()


def test_unknown_table_and_unknown_column(server, db, table, csv_file) -> None:
    conn = server.connect(db, local_infile=True)
    try:
        with pytest.raises(pymysql.err.ProgrammingError) as err:
            conn.cursor().execute(f"LOAD DATA LOCAL INFILE '{csv_file}' INTO TABLE nope")
        assert err.value.args[0] == 1146 and "Table [nope] does not exist" in err.value.args[1]
        with pytest.raises(pymysql.err.OperationalError) as err:
            conn.cursor().execute(f"LOAD DATA LOCAL INFILE '{csv_file}' INTO TABLE ld "
                                  "(id, name, @a, day) SET (doubled = @b * 2)")
        assert err.value.args == (
            1105, "errCode = 2, detailMessage = Unknown column 'b' in 'table list'")
        with pytest.raises(pymysql.err.OperationalError) as err:
            conn.cursor().execute(f"LOAD DATA INFILE '{csv_file}' INTO TABLE ld")
        assert "LOAD DATA LOCAL INFILE" in err.value.args[1]
        assert rows(conn, "SELECT count(*) FROM ld") == [(0,)]
    finally:
        conn.close()


def test_missing_client_file_then_connection_usable(server, db, table) -> None:
    """pymysql cannot open the file: it ends the upload at once (an empty file) and raises;
    the server's answer is consumed and the connection goes on."""
    conn = server.connect(db, local_infile=True)
    try:
        with pytest.raises(pymysql.err.OperationalError):
            conn.cursor().execute(load_sql("/nonexistent/rows.csv"))
        assert rows(conn, "SELECT count(*) FROM ld") == [(0,)]
    finally:
        conn.close()


def test_load_priv_required(server, db, table, csv_file) -> None:
    user = f"ld_{db[-8:]}"
    with server.connect() as admin, admin.cursor() as cur:
        cur.execute(f"CREATE USER '{user}' IDENTIFIED BY 'pw'")
        cur.execute(f"GRANT SELECT_PRIV ON {db}.* TO '{user}'")
    try:
        conn = server.connect(db, user=user, password="pw", local_infile=True)
        try:
            with pytest.raises(pymysql.err.MySQLError) as err:
                conn.cursor().execute(load_sql(csv_file))
            assert err.value.args[0] == 1142 and "LOAD" in err.value.args[1], err.value
        finally:
            conn.close()
        with server.connect() as admin, admin.cursor() as cur:
            cur.execute(f"GRANT LOAD_PRIV ON {db}.ld TO '{user}'")
        conn = server.connect(db, user=user, password="pw", local_infile=True)
        try:
            assert conn.cursor().execute(load_sql(csv_file)) == N_ROWS
        finally:
            conn.close()
    finally:
        with server.connect() as admin, admin.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'")


def _raw_load_client(server) -> RawClient:
    client = RawClient(server.port)
    client.login(caps=DEFAULT_CAPS | CLIENT_LOCAL_FILES)
    return client


def _raw_load(server, db: str) -> RawClient:
    """A raw client that sent LOAD DATA and got the server's LOCAL INFILE request."""
    client = _raw_load_client(server)
    request = client.command(bytes([COM_QUERY]) + (
        f"LOAD DATA LOCAL INFILE 'wanted.csv' INTO TABLE {db}.ld COLUMNS TERMINATED BY ',' "
        "(id, name, doubled, day)").encode())
    assert request == b"\xfbwanted.csv"  # the server asks for the client's file by name
    return client


def test_raw_client_hangs_up_mid_file(server, db, table) -> None:
    client = _raw_load(server, db)
    client.send(b"1,a,2,2024-01-01\n2,b,4,2024-01-02\n", 2)
    client.send(b"3,c,6,2024-0", 3)
    client.close()  # gone mid-file: no empty packet
    assert healthy(server.port)
    with server.connect(db) as conn:
        assert rows(conn, "SELECT count(*) FROM ld") == [(0,)]


def test_raw_client_file_in_packets(server, db, table) -> None:
    """The file arrives in packets cut mid-line; the empty packet ends it; the OK follows, and
    the same connection runs the next command."""
    with _raw_load(server, db) as client:
        client.send(b"1,a,2,2024-01-01\n2,b,4,20", 2)
        client.send(b"24-01-02\n3,c,6,2024-09-03\n", 3)
        client.send(b"", 4)
        ok = client.read()
        assert ok is not None and ok[:1] == b"\x00", ok and parse_error(ok)
        assert ok.endswith(b"Records: 3  Deleted: 0  Skipped: 0  Warnings: 0")
        assert ok[1] == 3  # affected rows
        reply = client.command(bytes([COM_QUERY]) + f"SELECT count(*) FROM {db}.ld".encode())
        assert reply is not None and reply[:1] == b"\x01"  # a result set of one column
    with server.connect(db) as conn:
        assert rows(conn, "SELECT id, doubled FROM ld ORDER BY id") == [(1, 2), (2, 4), (3, 6)]


def test_mariadb_cli_local_infile(server, db, table, csv_file) -> None:
    cmd = [MARIADB, "-h127.0.0.1", f"-P{server.port}", "--protocol=TCP", "-uroot", "--skip-ssl",
           "--batch", "--local-infile=1", db, "-vvv", "-e", load_sql(csv_file)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert f"{N_ROWS} rows affected" in proc.stdout, proc.stdout
    assert f"Records: {N_ROWS}  Deleted: 0  Skipped: 0  Warnings: 0" in proc.stdout, proc.stdout
    with server.connect(db) as conn:
        got = rows(conn, "SELECT id, name, doubled, day FROM ld")
    assert normalize_rows(got) == normalize_rows(duck(csv_file, "id, name, amount * 2, day"))
    # without --local-infile the client refuses: nothing is loaded
    cmd[cmd.index("--local-infile=1")] = "--local-infile=0"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0
    assert "not allowed" in proc.stderr.lower() or "not support" in proc.stderr.lower(), \
        proc.stderr
    with server.connect(db) as conn:
        assert rows(conn, "SELECT count(*) FROM ld") == [(N_ROWS,)]


JAVA_DIR = Path(__file__).resolve().parent / "java"
CONNECTOR_JAR = Path("/usr/share/java/mariadb-java-client.jar")


def test_jdbc_connector_j(server, db, table, csv_file, tmp_path) -> None:
    """MariaDB Connector/J (allowLocalInfile=true) loads the file; a failing load is an
    SQLException with Doris' message and the same connection goes on."""
    classes = tmp_path / "classes"
    javac = subprocess.run(["javac", "-cp", str(CONNECTOR_JAR), "-d", str(classes),
                            str(JAVA_DIR / "JdbcLoadData.java")],
                           capture_output=True, text=True, timeout=180, check=False)
    assert javac.returncode == 0, javac.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("h\nx,a,5,2024-01-01\n")
    url = f"jdbc:mysql://127.0.0.1:{server.port}/{db}?allowLocalInfile=true&useSSL=false"
    strict = load_sql(bad, props='PROPERTIES ("strict_mode" = "true")')
    proc = subprocess.run(
        ["java", "-cp", f"{classes}:{CONNECTOR_JAR}", "JdbcLoadData", url,
         f"update:{load_sql(csv_file)}",
         f"update:{strict}",
         "query:SELECT count(*), sum(doubled) FROM ld"],
        capture_output=True, text=True, timeout=180, check=False)
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and lines[-1] == ["DONE"], proc.stdout + proc.stderr[-3000:]
    assert lines[0] == ["UPDATED", str(N_ROWS)]
    assert lines[1][:2] == ["ERROR", "1105"] and "too many filtered rows" in lines[1][2]
    (want,) = duck(csv_file, "count(*), sum(amount * 2)")
    assert lines[2] == ["ROW", str(want[0]), str(want[1])]


def test_server_side_prepare_is_refused(server, db, table, csv_file) -> None:
    """LOAD DATA cannot be a server-side prepared statement (MySQL's 1295): the LOCAL INFILE
    exchange exists only for COM_QUERY."""
    with _raw_load_client(server) as client:
        reply = client.command(bytes([COM_STMT_PREPARE]) + load_sql(csv_file).replace(
            "INTO TABLE ld", f"INTO TABLE {db}.ld").encode())
        assert reply is not None
        assert parse_error(reply)[0] == 1295
        assert client.command(bytes([COM_QUERY]) + b"SELECT 1")[:1] == b"\x01"


def test_kill_query_mid_file_aborts_the_load(server, db, table) -> None:
    """KILL QUERY while the client is sending the file: the load aborts (nothing visible), the
    rest of the upload is read, the client gets `Query was killed` and its connection goes on."""
    with _raw_load(server, db) as client:
        assert client.greeting is not None
        version_end = client.greeting.index(b"\x00", 1)
        connection_id = int.from_bytes(client.greeting[version_end + 1:version_end + 5], "little")
        client.send(b"1,a,2,2024-01-01\n2,b,4,2024-01-02\n", 2)
        with server.connect() as admin, admin.cursor() as cur:
            cur.execute(f"KILL QUERY {connection_id}")
        client.send(b"3,c,6,2024-01-03\n", 3)
        client.send(b"", 4)
        reply = client.read()
        assert reply is not None and parse_error(reply)[2] == "Query was killed", reply
        answer = client.command(bytes([COM_QUERY]) + f"SELECT count(*) FROM {db}.ld".encode())
        assert answer is not None and answer[:1] == b"\x01"
    with server.connect(db) as conn:
        assert rows(conn, "SELECT count(*) FROM ld") == [(0,)]


def test_large_file_in_many_packets(server, db, table, tmp_path) -> None:
    """A file of several reader blocks and hundreds of 16 KB packets (the sequence id wraps
    past 255) loads whole and equals DuckDB's reading."""
    path = tmp_path / "large.csv"
    with path.open("w") as f:
        f.write("id,name,amount,day\n")
        for i in range(120_000):
            f.write(f"{i},n{i % 97},{(i * 7919) % 100_000 - 50_000},2024-0{1 + i % 9}-1{i % 10}\n")
    assert path.stat().st_size > 3 * (1 << 20)
    conn = server.connect(db, local_infile=True)
    try:
        assert conn.cursor().execute(load_sql(path)) == 120_000
        got = rows(conn, "SELECT count(*), sum(doubled), count(DISTINCT name), min(day), "
                         "max(day) FROM ld")
    finally:
        conn.close()
    want = duck(path, "count(*), sum(amount * 2), count(DISTINCT name), min(day), max(day)")
    assert normalize_rows(got) == normalize_rows(want)


def test_enclosed_fields(server, db, table, tmp_path) -> None:
    """ENCLOSED BY '"': separators inside quoted fields stay in the value."""
    path = tmp_path / "quoted.csv"
    path.write_text('h\n1,"a,b",3,2024-01-01\n2,"c",4,2024-08-02\n')
    conn = server.connect(db, local_infile=True)
    try:
        sql = load_sql(path).replace("COLUMNS TERMINATED BY ','",
                                     "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'")
        assert conn.cursor().execute(sql) == 2
        assert rows(conn, "SELECT id, name, doubled FROM ld ORDER BY id") == [
            (1, "a,b", 6), (2, "c", 8)]
    finally:
        conn.close()
