"""`SELECT .. FROM t TABLET (id, ..)` (Doris' tabletList) over the MySQL protocol: each tablet
read alone gives exactly its rows, together they give the table, with filters and column
pruning on top; an id that is not a tablet of the table is an error."""

from __future__ import annotations

import pymysql
import pytest


@pytest.fixture
def loaded(db_conn) -> list[int]:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE t (k INT, v VARCHAR(8)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 4 PROPERTIES('replication_num'='1')")
        cur.execute("INSERT INTO t VALUES " + ",".join(f"({i}, 'v{i}')" for i in range(200)))
        cur.execute("SHOW TABLETS FROM t")
        return [int(r[0]) for r in cur.fetchall()]


def test_tablets_partition_the_rows(db_conn, loaded) -> None:
    assert len(loaded) == 4
    seen: list[int] = []
    with db_conn.cursor() as cur:
        for tablet in loaded:
            cur.execute(f"SELECT k FROM t TABLET({tablet})")
            part = [r[0] for r in cur.fetchall()]
            assert 0 < len(part) < 200
            seen += part
        assert sorted(seen) == list(range(200))
        two = ", ".join(map(str, loaded[:2]))
        cur.execute(f"SELECT count(*) FROM t TABLET({two}) x WHERE x.k >= 100")
        got = cur.fetchone()[0]
        cur.execute(f"SELECT k FROM t TABLET({loaded[0]})")
        first = {r[0] for r in cur.fetchall()}
        cur.execute(f"SELECT k FROM t TABLET({loaded[1]})")
        second = {r[0] for r in cur.fetchall()}
        assert got == sum(1 for k in first | second if k >= 100)


def test_unknown_tablet_is_an_error(db_conn, loaded) -> None:
    bad = max(loaded) + 1000
    with db_conn.cursor() as cur, pytest.raises(pymysql.MySQLError) as err:
        cur.execute(f"SELECT k FROM t TABLET({loaded[0]}, {bad})")
    assert err.value.args[0] == 1105
    assert f"Tablet {bad} does not exist in table t" in err.value.args[1]
