"""CREATE TABLE .. AS SELECT, CREATE TABLE .. LIKE and INSERT .. WITH LABEL over the wire.

CTAS rows are compared with DuckDB running the same SELECT on the same data; its column types,
keys and distribution with Doris 2.1's CTAS rules; atomicity by a failing CTAS leaving no table
and a concurrent reader never seeing the new table empty.
"""

from __future__ import annotations

import random
import re
import threading

import duckdb
import pymysql
import pytest
from support.duck import insert_rows
from support.rows import normalize_rows

ROWS = 600


@pytest.fixture(scope="module")
def src(server):
    """A module database with `src` (k, g, name, v) in ShaleDB and the same rows in DuckDB."""
    from support.names import unique_db_name

    name = unique_db_name("ctas")
    rng = random.Random(13)
    rows = [(i, rng.randrange(7), rng.choice(["ab", "cde", None, "x"]),
             None if i % 11 == 0 else rng.randrange(-1000, 1000)) for i in range(ROWS)]
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"USE {name}")
        cur.execute("CREATE TABLE src (k INT NOT NULL, g TINYINT NOT NULL, name VARCHAR(10), "
                    "v INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3")
        values = ", ".join(
            f"({k}, {g}, {'NULL' if n is None else repr(n)}, {'NULL' if v is None else v})"
            for k, g, n, v in rows)
        cur.execute(f"INSERT INTO src VALUES {values}")
    duck = duckdb.connect()
    duck.execute("CREATE TABLE src (k INT, g TINYINT, name VARCHAR, v INT)")
    insert_rows(duck, "src", rows)
    yield name, duck
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")


def _cursor(server, name):
    conn = server.connect(name)
    return conn, conn.cursor()


def _norm(rows):
    return normalize_rows(rows)


def _create_text(cur, table: str) -> str:
    cur.execute(f"SHOW CREATE TABLE {table}")
    return cur.fetchone()[1]


@pytest.mark.parametrize("query", [
    "SELECT k, g, name, v FROM src WHERE v > 0",
    "SELECT g, count(*) AS c, sum(v) AS s, min(name) AS mn FROM src GROUP BY g",
    "SELECT name, k * 2 AS k2, v + 1 AS v1 FROM src WHERE k < 100",
])
def test_ctas_rows_equal_duckdb(server, src, query) -> None:
    name, duck = src
    conn, cur = _cursor(server, name)
    table = f"c_{abs(hash(query)) % 100000}"
    cur.execute(f"DROP TABLE IF EXISTS {table}")
    cur.execute(f"CREATE TABLE {table} AS {query}")
    expected = duck.execute(query).fetchall()
    assert cur.rowcount == len(expected)
    info = conn._result.message.decode(errors="replace")
    assert re.search(r"\{'label':'insert_\w+', 'status':'VISIBLE', 'txnId':'\d+'\}$", info)
    cur.execute(f"SELECT * FROM {table}")
    assert _norm(cur.fetchall()) == _norm(expected)
    conn.close()


def test_ctas_types_keys_and_distribution_follow_doris(server, src) -> None:
    name, _ = src
    conn, cur = _cursor(server, name)
    cur.execute("CREATE TABLE typed AS SELECT k, name, concat(name, '!') AS shout, NULL AS nothing, "
                "v FROM src")
    cur.execute("DESC typed")
    desc = {r[0]: (r[1], r[2], r[3]) for r in cur.fetchall()}
    assert desc["k"] == ("INT", "No", "true")  # a NOT NULL table column keeps NOT NULL
    assert desc["name"] == ("VARCHAR(10)", "Yes", "true")  # a table column keeps its length
    assert desc["shout"] == ("VARCHAR(65533)", "Yes", "false")  # an expression: max length
    assert desc["nothing"][0] == "TINYINT"  # NULL becomes TINYINT
    text = _create_text(cur, "typed")
    assert "DUPLICATE KEY(`k`, `name`)" in text
    assert "DISTRIBUTED BY HASH(`k`) BUCKETS 10" in text
    # a first column keeps its table type; a STRING first column becomes VARCHAR(65533) (a key
    # cannot be STRING), as does a string expression anywhere
    cur.execute("CREATE TABLE first_str AS SELECT name, cast(k AS STRING) AS ks, "
                "cast(name AS STRING) AS s2 FROM src")
    cur.execute("DESC first_str")
    assert [r[1] for r in cur.fetchall()] == ["VARCHAR(10)", "VARCHAR(65533)", "VARCHAR(65533)"]
    cur.execute("CREATE TABLE first_string AS SELECT cast(k AS STRING) AS ks, k FROM src")
    cur.execute("DESC first_string")
    assert cur.fetchone()[1] == "VARCHAR(65533)"
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("CREATE TABLE wrong_cols (a, b) AS SELECT k FROM src")
    assert e.value.args[1].endswith("ctas column size is not equal to the query's")
    conn.close()


def test_ctas_with_clauses_routes_rows_to_partitions(server, src) -> None:
    name, duck = src
    conn, cur = _cursor(server, name)
    cur.execute(
        "CREATE TABLE IF NOT EXISTS parted (kk, grp, val) ENGINE=OLAP DUPLICATE KEY(kk) "
        "PARTITION BY RANGE(kk) (PARTITION p_low VALUES LESS THAN ('300'), "
        "PARTITION p_high VALUES LESS THAN ('1000')) DISTRIBUTED BY HASH(kk) BUCKETS 2 "
        "PROPERTIES ('replication_num' = '1') AS SELECT k, g, v FROM src")
    text = _create_text(cur, "parted")
    assert "`kk` int NOT NULL" in text and "DISTRIBUTED BY HASH(`kk`) BUCKETS 2" in text
    cur.execute("SHOW PARTITIONS FROM parted")
    cols = [d[0] for d in cur.description]
    parts = {r[cols.index("PartitionName")]: r for r in cur.fetchall()}
    assert set(parts) == {"p_low", "p_high"}
    assert all(p[cols.index("VisibleVersion")] == "2" for p in parts.values())
    cur.execute("SELECT count(*) FROM parted WHERE kk < 300")
    assert cur.fetchone()[0] == 300
    cur.execute("SELECT kk, grp, val FROM parted")
    assert _norm(cur.fetchall()) == _norm(duck.execute("SELECT k, g, v FROM src").fetchall())
    # IF NOT EXISTS on an existing table: OK, nothing loaded a second time
    cur.execute("CREATE TABLE IF NOT EXISTS parted AS SELECT k, g, v FROM src")
    cur.execute("SELECT count(*) FROM parted")
    assert cur.fetchone()[0] == ROWS
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("CREATE TABLE parted AS SELECT k FROM src")
    assert e.value.args[0] == 1050 and "already exists" in e.value.args[1]
    conn.close()


def test_failing_ctas_leaves_no_table(server, src) -> None:
    name, _ = src
    conn, cur = _cursor(server, name)
    # rows past the last partition fail the load (strict mode): no table afterwards
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute(
            "CREATE TABLE broken DUPLICATE KEY(k) PARTITION BY RANGE(k) (PARTITION p1 VALUES "
            "LESS THAN ('500')) DISTRIBUTED BY HASH(k) BUCKETS 2 AS SELECT k, v FROM src")
    assert e.value.args[1].startswith("errCode = 2, detailMessage = Failed to execute CTAS "
                                      "Reason: Insert has filtered data in strict mode")
    assert "no partition for this tuple" in e.value.args[1]
    cur.execute("SHOW TABLES LIKE 'broken'")
    assert cur.fetchall() == ()
    with pytest.raises(pymysql.err.ProgrammingError) as e:
        cur.execute("SELECT * FROM broken")
    assert e.value.args[0] == 1146
    # the query failing while it runs (BIGINT overflow on the rows with k > 0): no table
    with pytest.raises(pymysql.err.MySQLError) as e:
        cur.execute("CREATE TABLE broken AS SELECT k, 9223372036854775807 + k AS x FROM src")
    assert e.value.args[0] == 1690
    cur.execute("SHOW TABLES LIKE 'broken'")
    assert cur.fetchall() == ()
    # an analysis error of the query: no table either, and the name stays free
    with pytest.raises(pymysql.err.OperationalError):
        cur.execute("CREATE TABLE broken AS SELECT nosuch FROM src")
    cur.execute("CREATE TABLE broken AS SELECT k FROM src WHERE k < 3")
    cur.execute("SELECT count(*) FROM broken")
    assert cur.fetchone()[0] == 3
    conn.close()


def test_concurrent_reader_never_sees_the_new_table_empty(server, src) -> None:
    name, _ = src
    conn, cur = _cursor(server, name)
    cur.execute("CREATE TABLE big DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 4 AS "
                "SELECT a.k * 1000 + b.k AS k, a.v FROM src a CROSS JOIN src b "
                "WHERE b.k < 40")
    cur.execute("SELECT count(*) FROM big")
    total = cur.fetchone()[0]
    assert total == ROWS * 40
    seen: list[object] = []
    done = threading.Event()

    def reader() -> None:
        rconn, rcur = _cursor(server, name)
        while not done.is_set():
            try:
                rcur.execute("SELECT count(*) FROM big_copy")
                seen.append(rcur.fetchone()[0])
            except pymysql.err.ProgrammingError as e:
                seen.append(e.args[0])  # 1146: not there yet
        rconn.close()

    t = threading.Thread(target=reader)
    t.start()
    try:
        cur.execute("CREATE TABLE big_copy AS SELECT * FROM big")
    finally:
        done.set()
        t.join()
    assert seen and set(seen) <= {1146, total}
    cur.execute("SELECT count(*) FROM big_copy")
    assert cur.fetchone()[0] == total
    conn.close()


def test_create_table_like_copies_definition_without_data(server, db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute(
        "CREATE TABLE base (dt DATE NOT NULL, k INT NOT NULL, v BIGINT SUM DEFAULT '0') "
        "AGGREGATE KEY(dt, k) PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN "
        "('2024-02-01'), PARTITION p2 VALUES LESS THAN ('2024-03-01')) "
        "DISTRIBUTED BY HASH(k) BUCKETS 3 ROLLUP (r_k (k, v), r_dt (dt, v)) "
        "PROPERTIES ('replication_num' = '1', 'bloom_filter_columns' = 'k')")
    cur.execute("INSERT INTO base VALUES ('2024-01-02', 1, 5), ('2024-02-03', 2, 7)")
    cur.execute("CREATE TABLE twin LIKE base")
    copy_text = _create_text(cur, "twin")
    assert "ROLLUP" not in copy_text
    for part in ("PARTITION BY RANGE(`dt`)", "DISTRIBUTED BY HASH(`k`) BUCKETS 3",
                 '"bloom_filter_columns" = "k"', "AGGREGATE KEY(`dt`, `k`)",
                 "`v` bigint SUM NULL DEFAULT '0'",
                 "PARTITION `p2` VALUES [(\"2024-02-01\"), (\"2024-03-01\"))"):
        assert part in copy_text, part
    # every line of the copy is a line of the source's text (the rollup clause aside)
    base_lines = set(_create_text(cur, "base").splitlines())
    assert set(copy_text.replace("`twin`", "`base`").splitlines()) <= base_lines
    cur.execute("SHOW PARTITIONS FROM twin")
    assert sorted(r[1] for r in cur.fetchall()) == ["p1", "p2"]
    cur.execute("SELECT count(*) FROM twin")
    assert cur.fetchone()[0] == 0
    # WITH ROLLUP copies every rollup, WITH ROLLUP (r) only the named ones
    cur.execute("CREATE TABLE copy_all LIKE base WITH ROLLUP")
    cur.execute("DESC copy_all ALL")
    assert {r[0] for r in cur.fetchall() if r[0]} == {"copy_all", "r_k", "r_dt"}
    cur.execute("CREATE TABLE copy_one LIKE base WITH ROLLUP (r_dt)")
    cur.execute("DESC copy_one ALL")
    assert {r[0] for r in cur.fetchall() if r[0]} == {"copy_one", "r_dt"}
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("CREATE TABLE copy_bad LIKE base WITH ROLLUP (nosuch)")
    assert "Rollup index[nosuch] not exists in Table[base]" in e.value.args[1]
    # IF NOT EXISTS: an existing table is left as it is
    cur.execute("CREATE TABLE IF NOT EXISTS twin LIKE copy_all")
    cur.execute("DESC twin ALL")
    assert {r[0] for r in cur.fetchall() if r[0]} == {"twin"}
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("CREATE TABLE twin LIKE base")
    assert e.value.args[0] == 1050
    cur.execute("INSERT INTO copy_one VALUES ('2024-01-02', 1, 5), ('2024-01-02', 1, 6)")
    cur.execute("SELECT dt, sum(v) FROM copy_one GROUP BY dt")
    assert [(str(r[0]), int(r[1])) for r in cur.fetchall()] == [("2024-01-02", 11)]


def test_insert_with_label_reports_it_and_rejects_reuse(server, db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE lt (dt DATE NOT NULL, k INT NOT NULL) DUPLICATE KEY(dt) "
                "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'), "
                "PARTITION p2 VALUES LESS THAN ('2024-03-01')) DISTRIBUTED BY HASH(k) BUCKETS 2")
    cur.execute("CREATE TABLE lsrc (dt DATE NOT NULL, k INT NOT NULL) DISTRIBUTED BY HASH(k) "
                "BUCKETS 1")
    cur.execute("INSERT INTO lsrc VALUES ('2024-01-05', 1), ('2024-02-05', 2)")
    cur.execute("INSERT INTO lt WITH LABEL my_label_1 (dt, k) SELECT dt, k FROM lsrc")
    info = db_conn._result.message.decode()
    m = re.search(r"\{'label':'my_label_1', 'status':'VISIBLE', 'txnId':'(\d+)'\}", info)
    assert m, info
    assert cur.rowcount == 2
    with pytest.raises(pymysql.err.OperationalError) as e:
        cur.execute("INSERT INTO lt WITH LABEL my_label_1 SELECT dt, k FROM lsrc")
    assert e.value.args[1].endswith(
        f"Label [my_label_1] has already been used, relate to txn [{m.group(1)}]")
    cur.execute("INSERT INTO lt PARTITION (p2) WITH LABEL my_label_2 "
                "SELECT dt, k FROM lsrc WHERE k = 2")
    assert "'label':'my_label_2'" in db_conn._result.message.decode()
    cur.execute("SELECT count(*) FROM lt WHERE dt >= '2024-02-01'")
    assert cur.fetchone()[0] == 2
    cur.execute("SELECT count(*) FROM lt")
    assert cur.fetchone()[0] == 3  # the rejected label loaded nothing


def test_ctas_and_like_need_select_on_the_source(server, db) -> None:
    user = f"ctas_{db[-8:]}"
    with server.connect(db) as root, root.cursor() as cur:
        cur.execute("CREATE TABLE secret (k INT, v INT) DISTRIBUTED BY HASH(k) BUCKETS 1")
        cur.execute("INSERT INTO secret VALUES (1, 2)")
        cur.execute(f"CREATE USER '{user}' IDENTIFIED BY 'pw'")
        cur.execute(f"GRANT CREATE_PRIV, LOAD_PRIV ON {db}.* TO '{user}'")
    try:
        with pymysql.connect(host="127.0.0.1", port=server.port, user=user, password="pw",
                             database=db, autocommit=True, ssl_disabled=True) as conn:
            cur = conn.cursor()
            for sql in ("CREATE TABLE c1 AS SELECT * FROM secret", "CREATE TABLE c2 LIKE secret"):
                with pytest.raises(pymysql.err.MySQLError) as e:
                    cur.execute(sql)
                assert e.value.args[0] == 1142 and "SELECT command denied" in e.value.args[1]
            cur.execute("SHOW TABLES")
            assert [r[0] for r in cur.fetchall()] == ["secret"]  # neither c1 nor c2
        with server.connect(db) as root, root.cursor() as rcur:
            rcur.execute(f"GRANT SELECT_PRIV ON {db}.secret TO '{user}'")
        with pymysql.connect(host="127.0.0.1", port=server.port, user=user, password="pw",
                             database=db, autocommit=True, ssl_disabled=True) as conn:
            cur = conn.cursor()
            cur.execute("CREATE TABLE c2 LIKE secret")
            cur.execute("CREATE TABLE c1 AS SELECT * FROM secret")
            assert cur.rowcount == 1
    finally:
        with server.connect() as root, root.cursor() as cur:
            cur.execute(f"DROP USER '{user}'")


def test_two_ctas_of_one_name_one_wins(server, src) -> None:
    name, _ = src
    outcomes: list[object] = []

    def ctas() -> None:
        conn, cur = _cursor(server, name)
        try:
            cur.execute("CREATE TABLE twice AS SELECT a.k, a.v FROM src a CROSS JOIN src b "
                        "WHERE b.k < 5")
            outcomes.append("ok")
        except pymysql.err.MySQLError as e:
            outcomes.append(e.args[0])
        finally:
            conn.close()

    threads = [threading.Thread(target=ctas) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes, key=str) == [1050, "ok"]
    conn, cur = _cursor(server, name)
    cur.execute("SELECT count(*) FROM twice")
    assert cur.fetchone()[0] == ROWS * 5  # one whole copy, never two
    conn.close()


def test_show_load_lists_the_ctas_insert(server, src) -> None:
    name, _ = src
    conn, cur = _cursor(server, name)
    cur.execute("CREATE TABLE listed AS SELECT k FROM src WHERE k < 7")
    label = re.search(r"'label':'(\w+)'", conn._result.message.decode(errors="replace"))[1]
    cur.execute(f"SHOW LOAD WHERE LABEL = '{label}'")
    cols = [d[0] for d in cur.description]
    row = dict(zip(cols, cur.fetchone()))
    assert row["State"] == "FINISHED" and row["Type"] == "INSERT"
    conn.close()
