"""Regular expressions on RE2 and interruptible expression evaluation, over the MySQL protocol.

Issue 12: a REGEXP that backtracks exponentially in Python's `re` froze the whole server (it
held the GIL; no KILL or query_timeout got through). These tests run the ReDoS pattern with a
long input (RE2 answers at once), check Doris' RE2 semantics and error wording, and kill a
deliberately slow expression over 140K rows: the KILL must be answered within a second and the
server must stop spending CPU on the query (the worker checks the cancel token inside the
batch, executor/interruptible.py), and query_timeout must end it about on time.
"""

from __future__ import annotations

import os
import threading
import time

import pymysql
import pytest

# ~0.3 ms a row: a 64K-row batch takes far longer than the second KILL is allowed
SLOW = ("SELECT count(*) FROM big WHERE "
        "regexp_replace(repeat(s, 20), '([a-z]+)([0-9]+)', '\\\\2\\\\1') LIKE '%9%'")


def _one(cur, sql: str):  # type: ignore[no-untyped-def]
    cur.execute(sql)
    return cur.fetchone()[0]


def test_redos_pattern_answers_at_once(db_conn) -> None:
    cur = db_conn.cursor()
    start = time.perf_counter()
    # Python's re needs about 2**50000 steps here; RE2 is linear in the input
    assert _one(cur, "SELECT concat(repeat('a', 50000), '!') REGEXP '^(a+)+$'") == 0
    assert _one(cur, "SELECT repeat('a', 50000) REGEXP '^(a+)+$'") == 1
    assert _one(cur, "SELECT concat(repeat('a', 30000), '!') NOT RLIKE '(a|aa)+$'") == 1
    assert _one(cur, "SELECT concat(repeat('a', 30000), 'x') LIKE '%a%a%a%a%a%a%b'") == 0
    # STR_TO_DATE's format becomes a pattern too: 40 blanks are 40 `\s*` in a row
    blanks = " " * 40
    assert _one(cur, f"SELECT str_to_date(concat(repeat(' ', 40), 'x'), '{blanks}%Y')") is None
    assert time.perf_counter() - start < 10


def test_re2_semantics(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(
        "SELECT regexp_extract_all('a1 b22 c333', '([a-z])([0-9]+)'), "
        "regexp_extract_all('abc', '[a-z]'), regexp_extract_all('123', '([a-z])'), "
        "regexp_replace('abc', 'b*', '-'), regexp_replace_one('a.b.c', '[.]', '/'), "
        "regexp_replace('2020-01-02', '(\\\\d+)-(\\\\d+)-(\\\\d+)', '\\\\3/\\\\2/\\\\1'), "
        "regexp_replace('abc', 'b', '\\\\2'), "
        "'a\\nb' REGEXP 'a.b', 'AbCdE' REGEXP '^[[:upper:]][[:lower:]]', "
        "regexp_extract('x=héllo;', 'x=([^;]+)', 1), regexp_replace('héllo', 'é', 'e')")
    assert cur.fetchone() == (
        "['a','b','c']", "", "", "-a-c-", "a/b.c", "02/01/2020", "abc", 1, 1, "héllo", "hello")


def test_invalid_pattern_is_a_doris_error(db_conn) -> None:
    cur = db_conn.cursor()
    for sql in ("SELECT 'abc' REGEXP '([a-z'", "SELECT regexp_extract('abc', '(?=a)', 0)",
                "SELECT regexp_replace('abc', 'a{2,1}', 'x')"):
        with pytest.raises(pymysql.err.OperationalError) as info:
            cur.execute(sql)
        code, message = info.value.args
        assert code == 1105
        assert "Invalid regex expression: " in message and ". Error: " in message, message
    with pytest.raises(pymysql.err.OperationalError, match=r"missing \]: \[a-z"):
        cur.execute("SELECT 'abc' REGEXP '([a-z'")


def test_pattern_per_row(db_conn) -> None:
    """A pattern from a column: REGEXP errors on an invalid one (Doris' like.cpp), the
    regexp_* functions give NULL for that row (Doris warns and pushes NULL)."""
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE p (k INT, s VARCHAR(20), pat VARCHAR(20)) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
    cur.execute("INSERT INTO p VALUES (1, 'abc', 'b+'), (2, 'xyz', '(x'), (3, 'aaa', '^a+$'), "
                "(4, NULL, 'a')")
    cur.execute("SELECT k, regexp_replace(s, pat, '#') FROM p ORDER BY k")
    assert cur.fetchall() == ((1, "a#c"), (2, None), (3, "#"), (4, None))
    with pytest.raises(pymysql.err.OperationalError, match="Invalid regex expression: \\(x"):
        cur.execute("SELECT k, s REGEXP pat FROM p")
    cur.execute("SELECT k, s REGEXP pat FROM p WHERE k <> 2 ORDER BY k")
    assert cur.fetchall() == ((1, 1), (3, 1), (4, None))


@pytest.fixture
def big_table(server, db) -> str:  # type: ignore[no-untyped-def]
    """140K rows of short strings built server-side (a 100 x 200 cross join, 7 times)."""
    with server.connect(db) as c, c.cursor() as cur:
        cur.execute("CREATE TABLE small (k INT, s VARCHAR(20)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
        cur.execute("INSERT INTO small VALUES " + ", ".join(
            f"({i}, 'row{i}abc')" for i in range(200)))
        # 3 buckets on 3 backends: the expression runs in fragment instances on their own
        # threads, which must see the KILL too (the query's halt flag)
        cur.execute("CREATE TABLE big (k INT, s VARCHAR(100)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 3 PROPERTIES ('replication_num' = '1')")
        cur.execute("INSERT INTO big SELECT a.k * 1000 + b.k, concat(a.s, b.s) FROM small a "
                    "CROSS JOIN small b WHERE a.k < 100")
        for i in range(1, 7):  # 20K -> 140K rows
            cur.execute(f"INSERT INTO big SELECT k + {i} * 1000000, s FROM big WHERE k < 1000000")
        assert _one(cur, "SELECT count(*) FROM big") == 140000
    return db


def _server_cpu_seconds(server) -> float:  # type: ignore[no-untyped-def]
    with open(f"/proc/{server.proc.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_running(conn, thread_id: int) -> None:  # type: ignore[no-untyped-def]
    """Until SHOW PROCESSLIST has connection `thread_id` executing a statement."""
    deadline = time.monotonic() + 30
    with conn.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("SHOW PROCESSLIST")
            if any(int(row[0]) == thread_id and row[6] == "Query" for row in cur.fetchall()):
                return
    raise AssertionError(f"connection {thread_id} never started its query")


def test_kill_query_stops_a_slow_expression_inside_a_batch(server, big_table) -> None:
    victim = server.connect(big_table)
    killer = server.connect()
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            with victim.cursor() as cur:
                cur.execute(SLOW)
                outcome["result"] = cur.fetchall()
        except pymysql.err.Error as e:
            outcome["error"] = e.args

    thread = threading.Thread(target=run)
    thread.start()
    try:
        _wait_running(killer, victim.thread_id())
        busy0 = _server_cpu_seconds(server)
        time.sleep(1.0)
        busy = _server_cpu_seconds(server) - busy0
        assert busy > 0.05, "the slow query was not running"
        start = time.perf_counter()
        with killer.cursor() as cur:
            cur.execute(f"KILL QUERY {victim.thread_id()}")
        thread.join(5)
        assert not thread.is_alive()
        assert time.perf_counter() - start < 1.0
        assert "result" not in outcome and "killed" in str(outcome.get("error")), outcome
        # the worker must have stopped too (not only the reply): the server goes idle. Background
        # compaction of big's 8 versions may take a second window of CPU, so look at up to six
        # windows; an unkilled query keeps every one busy (it needs ~20 s of two cores)
        windows = []
        for _ in range(6):
            idle0 = _server_cpu_seconds(server)
            time.sleep(1.0)
            windows.append(_server_cpu_seconds(server) - idle0)
            if windows[-1] < max(busy * 0.3, 0.03):
                break
        else:
            raise AssertionError(f"server still busy after KILL: {windows} (busy {busy})")
        with victim.cursor() as cur:  # the session goes on
            assert _one(cur, "SELECT count(*) FROM big WHERE s REGEXP '^row1[0-9]abc'") > 0
    finally:
        thread.join(60)
        victim.close()
        killer.close()


def test_query_timeout_ends_a_slow_expression(server, big_table) -> None:
    with server.connect(big_table) as c, c.cursor() as cur:
        cur.execute("SET query_timeout = 1")
        start = time.perf_counter()
        with pytest.raises(pymysql.err.OperationalError, match="query_timeout"):
            cur.execute(SLOW)
        # one batch alone takes far longer than this without the in-batch checks
        assert time.perf_counter() - start < 3.0
