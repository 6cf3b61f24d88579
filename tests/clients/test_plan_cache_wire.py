"""The plan cache over the wire (server/plan_cache.py): a query text run again after something
changed what it must read or how it may be planned answers from the new state, compared with
DuckDB on the same rows. Each statement runs twice before every change, so the second run is
answered by the kept plan and the run after the change would read a stale snapshot (old
partition versions, the dropped table's tablets, the schema before ALTER, the plan without the
view) if the cache were not invalidated. The plan actually run is read from the query profile
(SHOW QUERY PROFILE: which index a scan read)."""

from __future__ import annotations

import random
import threading
from typing import Any

import duckdb
import pytest
from support.alter_jobs import wait_alter_job
from support.duck import insert_rows
from support.rows import normalize_rows

DDL = ("CREATE TABLE t (k INT, g INT, v BIGINT, s VARCHAR(16)) DUPLICATE KEY(k) "
       "PARTITION BY RANGE(k) (PARTITION p0 VALUES LESS THAN ('100'), "
       "PARTITION p1 VALUES LESS THAN ('1000')) DISTRIBUTED BY HASH(k) BUCKETS 3")
DUCK_DDL = "CREATE TABLE t (k INTEGER, g INTEGER, v BIGINT, s VARCHAR)"
QUERIES = [
    "SELECT g, SUM(v), COUNT(*), MIN(s), MAX(k) FROM t WHERE k >= 5 GROUP BY g ORDER BY g",
    "SELECT COUNT(*), SUM(v) FROM t WHERE k BETWEEN 10 AND 500 AND s LIKE 'a%'",
    "SELECT k, v FROM t WHERE k < 50 ORDER BY k, v LIMIT 7",
    "SELECT g, SUM(v) FROM t GROUP BY g HAVING COUNT(*) > 1 ORDER BY g",
]
VIEW_QUERY = "SELECT g, SUM(v) FROM t GROUP BY g ORDER BY g"
WORDS = ["a", "ab", "", "b", "äö", "a✓", "zz"]


def _rows(rnd: random.Random, n: int, top: int = 1000) -> list[tuple[Any, ...]]:
    return [(rnd.randrange(top), rnd.choice([None, 1, 2, 3]), rnd.choice([None, -5, 0, 7,
             2**40, rnd.randrange(-1000, 1000)]), rnd.choice([None, *WORDS]))
            for _ in range(n)]


def _values(rows: list[tuple[Any, ...]]) -> str:
    def lit(v: Any) -> str:
        if v is None:
            return "NULL"
        return "'" + v.replace("'", "''") + "'" if isinstance(v, str) else str(v)
    return ", ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)


def _same(cur: Any, duck: duckdb.DuckDBPyConnection, sql: str, twice: bool = True) -> None:
    expected = normalize_rows(duck.execute(sql).fetchall())
    for _ in range(2 if twice else 1):  # the second run is the kept plan's
        cur.execute(sql)
        assert normalize_rows(cur.fetchall()) == expected, sql


def _all_same(cur: Any, duck: duckdb.DuckDBPyConnection) -> None:
    for sql in QUERIES:
        _same(cur, duck, sql)


def _scanned_index(cur: Any, sql: str) -> str:
    """The index the newest run of `sql` read (enable_profile must be on)."""
    cur.execute(sql)
    cur.fetchall()
    cur.execute('SHOW QUERY PROFILE "/"')
    newest = cur.fetchall()[0][0]
    cur.execute(f'SHOW QUERY PROFILE "/{newest}"')
    facts = [str(v) for k, v in cur.fetchall() if str(k).startswith("VOlapScanNode")]
    assert len(facts) == 1, facts
    return facts[0].split("(", 1)[1].split(")", 1)[0]


@pytest.fixture
def tables(db_conn: Any) -> tuple[Any, duckdb.DuckDBPyConnection, random.Random]:
    cur = db_conn.cursor()
    cur.execute("SET delete_without_partition = true")
    cur.execute(DDL)
    duck = duckdb.connect()
    duck.execute(DUCK_DDL)
    rnd = random.Random(17)
    rows = _rows(rnd, 60)
    cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
    insert_rows(duck, "t", rows)
    return cur, duck, rnd


def test_insert_and_delete_are_seen(tables: Any) -> None:
    cur, duck, rnd = tables
    _all_same(cur, duck)
    for step in range(6):
        if step % 2 == 0:
            rows = _rows(rnd, rnd.randint(1, 30))
            cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
            insert_rows(duck, "t", rows)
        else:
            victim = rnd.choice([1, 2, 3])
            cur.execute(f"DELETE FROM t WHERE g = {victim}")
            duck.execute(f"DELETE FROM t WHERE g = {victim}")
        _all_same(cur, duck)


def test_compaction_keeps_the_answer(tables: Any) -> None:
    cur, duck, rnd = tables
    for _ in range(3):
        rows = _rows(rnd, 20)
        cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
        insert_rows(duck, "t", rows)
    _all_same(cur, duck)
    cur.execute("ADMIN COMPACT TABLE t WHERE type = 'FULL'")
    _all_same(cur, duck)
    rows = _rows(rnd, 5)
    cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
    insert_rows(duck, "t", rows)
    _all_same(cur, duck)


def test_alter_drop_create_and_partitions(tables: Any) -> None:
    cur, duck, rnd = tables
    star = "SELECT * FROM t WHERE k < 200"
    _same(cur, duck, star)
    _all_same(cur, duck)
    cur.execute("ALTER TABLE t DROP PARTITION p0")  # its rows go: k < 100
    duck.execute("DELETE FROM t WHERE k < 100")
    _same(cur, duck, star)
    _all_same(cur, duck)
    # a new partition, then rows in it: the scan must list its tablets
    cur.execute("ALTER TABLE t ADD PARTITION p2 VALUES LESS THAN ('5000')")
    rows = [(k, *r[1:]) for k, r in zip(range(1000, 1040), _rows(rnd, 40))]
    cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
    insert_rows(duck, "t", rows)
    _all_same(cur, duck)
    # DROP + CREATE under the same name: other tablets, other rows, one more column for `*`
    cur.execute("DROP TABLE t FORCE")
    duck.execute("DROP TABLE t")
    cur.execute(DDL.replace("s VARCHAR(16))", "s VARCHAR(16), w INT)"))
    duck.execute(DUCK_DDL.replace("s VARCHAR)", "s VARCHAR, w INTEGER)"))
    rows = [(*r, rnd.choice([None, 3])) for r in _rows(rnd, 25)]
    cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
    insert_rows(duck, "t", rows)
    _same(cur, duck, star)
    _all_same(cur, duck)
    cur.execute("TRUNCATE TABLE t")
    duck.execute("DELETE FROM t")
    _all_same(cur, duck)


def test_other_database_same_text(server: Any, make_db: Any) -> None:
    """The same text in two databases reads each database's table."""
    duck = {}
    rnd = random.Random(5)
    conn = server.connect()
    cur = conn.cursor()
    for name in (make_db("pc_a"), make_db("pc_b")):
        cur.execute(f"USE `{name}`")
        cur.execute(DDL)
        rows = _rows(rnd, rnd.randint(5, 40))
        cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
        duck[name] = duckdb.connect()
        duck[name].execute(DUCK_DDL)
        insert_rows(duck[name], "t", rows)
    for _ in range(2):
        for name, d in duck.items():
            cur.execute(f"USE `{name}`")
            _all_same(cur, d)


def test_view_creation_and_planner_variables(tables: Any) -> None:
    cur, duck, rnd = tables
    cur.execute("SET enable_profile = true")
    _same(cur, duck, VIEW_QUERY)
    assert _scanned_index(cur, VIEW_QUERY) == "t"
    cur.execute("CREATE MATERIALIZED VIEW mv_g AS SELECT g, SUM(v) FROM t GROUP BY g")
    assert wait_alter_job(cur, "mv_g", "MATERIALIZED VIEW")["State"] == "FINISHED"
    rows = _rows(rnd, 30)
    cur.execute(f"INSERT INTO t VALUES {_values(rows)}")
    insert_rows(duck, "t", rows)
    _same(cur, duck, VIEW_QUERY)
    assert _scanned_index(cur, VIEW_QUERY) == "mv_g"  # the kept base plan was dropped
    cur.execute("SET disable_nereids_rules = 'MATERIALIZED_INDEX_AGG_SCAN'")
    _same(cur, duck, VIEW_QUERY)
    assert _scanned_index(cur, VIEW_QUERY) == "t"
    cur.execute("SET disable_nereids_rules = ''")
    _same(cur, duck, VIEW_QUERY)
    assert _scanned_index(cur, VIEW_QUERY) == "mv_g"
    cur.execute("DROP MATERIALIZED VIEW mv_g ON t")
    _same(cur, duck, VIEW_QUERY)
    assert _scanned_index(cur, VIEW_QUERY) == "t"


def test_session_functions_are_never_kept(db_conn: Any) -> None:
    """Texts whose result depends on the session or the clock are planned every time."""
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE one (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    cur.execute("INSERT INTO one VALUES (1)")
    seen = set()
    for value in (3, 4):
        cur.execute(f"SET query_timeout = {value}")
        cur.execute("SELECT k, @@query_timeout FROM one")
        seen.add(cur.fetchall()[0][1])
    assert seen == {3, 4}
    cur.execute("SELECT k, DATABASE() FROM one")
    db = cur.fetchall()[0][1]
    cur.execute("CREATE DATABASE IF NOT EXISTS pc_other_db")
    cur.execute("CREATE TABLE IF NOT EXISTS pc_other_db.one (k INT) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 1")
    cur.execute("INSERT INTO pc_other_db.one VALUES (2)")
    try:
        cur.execute("USE pc_other_db")
        cur.execute("SELECT k, DATABASE() FROM one")
        assert cur.fetchall() == ((2, "pc_other_db"),)
        cur.execute(f"USE `{db}`")
        cur.execute("SELECT k, DATABASE() FROM one")
        assert cur.fetchall() == ((1, db),)
    finally:
        cur.execute("DROP DATABASE pc_other_db FORCE")


def test_kept_plan_under_concurrent_loads(server: Any, db: str) -> None:
    """A loader commits batches while another connection repeats one text: every answer is
    one consistent snapshot (the count and sum of a prefix of the batches) and never older
    than the last batch committed before the query started."""
    setup = server.connect(db)
    setup.cursor().execute(DDL)
    rnd = random.Random(3)
    batches = [[(rnd.randrange(1000), 1, rnd.randrange(1, 100), "a") for _ in range(10)]
               for _ in range(25)]
    prefix = [0]
    for b in batches:
        prefix.append(prefix[-1] + sum(r[2] for r in b))
    committed = [0]
    errors: list[BaseException] = []

    def load() -> None:
        try:
            with server.connect(db) as conn, conn.cursor() as cur:
                for i, b in enumerate(batches):
                    cur.execute(f"INSERT INTO t VALUES {_values(b)}")
                    committed[0] = i + 1
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    loader = threading.Thread(target=load)
    loader.start()
    answers = 0
    with server.connect(db) as conn, conn.cursor() as cur:
        while loader.is_alive() or answers < 5:
            before = committed[0]
            cur.execute("SELECT COUNT(*), SUM(v) FROM t WHERE k >= 0")
            count, total = cur.fetchone()
            assert count % 10 == 0 and count // 10 >= before, (count, before)
            assert int(total or 0) == prefix[count // 10], (count, total)
            answers += 1
    loader.join()
    assert not errors, errors
    setup.close()


def test_revoke_after_a_kept_plan(server: Any, db_conn: Any, db: str) -> None:
    """Privileges are checked on every run of a kept text."""
    import pymysql

    cur = db_conn.cursor()
    cur.execute(DDL)
    cur.execute("INSERT INTO t VALUES (1, 1, 1, 'a')")
    user = f"pc_{db[-8:]}"
    cur.execute(f"CREATE USER '{user}' IDENTIFIED BY 'pw'")
    try:
        cur.execute(f"GRANT SELECT_PRIV ON {db}.t TO '{user}'@'%'")
        conn = pymysql.connect(host="127.0.0.1", port=server.port, user=user, password="pw",
                               database=db, autocommit=True)
        with conn, conn.cursor() as mine:
            for _ in range(2):
                mine.execute("SELECT COUNT(*) FROM t WHERE k >= 0")
                assert mine.fetchall() == ((1,),)
            cur.execute(f"REVOKE SELECT_PRIV ON {db}.t FROM '{user}'@'%'")
            with pytest.raises(pymysql.err.OperationalError) as denied:
                mine.execute("SELECT COUNT(*) FROM t WHERE k >= 0")
            assert denied.value.args[0] == 1142
    finally:
        cur.execute(f"DROP USER IF EXISTS '{user}'")
