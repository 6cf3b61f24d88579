"""EXPLAIN in Doris' format: golden files for every join mode, hint and session variable, the
aggregate phases, EXPLAIN VERBOSE reasons and EXPLAIN SHAPE PLAN; and every mode returns the
same rows (checked against DuckDB).

The server is private to this module and fed the same statements in the same order, so ids
(tablets, nodes) are deterministic. After an intended change of the format, regenerate with
`SHALEDB_REGEN_GOLDEN=1 pytest tests/sql/test_explain.py` and review the diff.
Tables follow seed 000 (t1 / t2 in colocate group `t1`) plus a table outside the group.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from support.duck import insert_rows
from support.server import ServerProcess

GOLDEN = Path(__file__).parent / "explain_golden"
REGEN = os.environ.get("SHALEDB_REGEN_GOLDEN") == "1"

SETUP = [
    "CREATE DATABASE ex",
    "USE ex",
    "CREATE TABLE t1 (id INT, value VARCHAR(8)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) "
    "BUCKETS 10 PROPERTIES (\"colocate_with\" = \"t1\", \"replication_num\" = \"1\")",
    "CREATE TABLE t2 (id INT, value VARCHAR(8)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) "
    "BUCKETS 10 PROPERTIES (\"colocate_with\" = \"t1\", \"replication_num\" = \"1\")",
    "CREATE TABLE big (k INT, id INT, amount BIGINT) DUPLICATE KEY(k) "
    "DISTRIBUTED BY HASH(k) BUCKETS 4",
    "CREATE TABLE small (sid INT, name VARCHAR(8)) DUPLICATE KEY(sid) "
    "DISTRIBUTED BY HASH(sid) BUCKETS 2",
]
T1 = [(i, f"v{i % 7}") for i in range(60)]
T2 = [(i, f"w{i % 5}") for i in range(0, 90, 3)]
BIG = [(i, i % 40, i * 3 % 101) for i in range(3000)]
SMALL = [(i, f"s{i}") for i in range(0, 40, 4)]

CASES = {
    "colocate": ("", "SELECT t1.id, t2.value FROM t1 JOIN t2 ON t1.id = t2.id"),
    "colocate_disabled_plan": ("SET disable_colocate_plan = true",
                               "SELECT t1.id, t2.value FROM t1 JOIN t2 ON t1.id = t2.id"),
    "colocate_disabled_join": ("SET disable_colocate_join = true",
                               "SELECT t1.id, t2.value FROM t1 JOIN t2 ON t1.id = t2.id"),
    "bucket_shuffle": ("", "SELECT count(*) FROM big JOIN [bucket] small ON big.k = small.sid"),
    "bucket_shuffle_off": ("SET enable_bucket_shuffle_join = false",
                           "SELECT count(*) FROM big JOIN small ON big.k = small.sid"),
    "broadcast": ("", "SELECT name, sum(amount) FROM big JOIN small ON big.id = small.sid "
                      "GROUP BY name"),
    "shuffle_hint": ("", "SELECT count(*) FROM big JOIN [shuffle] small ON big.id = small.sid"),
    "broadcast_hint": ("", "SELECT count(*) FROM big JOIN [broadcast] small ON big.k = small.sid"),
    "shuffle_hint_keeps_colocate": (
        "", "SELECT count(*) FROM t1 JOIN [shuffle] t2 ON t1.id = t2.id"),
    "right_outer_shuffles": (
        "", "SELECT count(*) FROM big RIGHT JOIN small ON big.id = small.sid"),
    "agg_one_phase_on_bucket_key": ("", "SELECT id, count(*) FROM t1 GROUP BY id"),
    "agg_two_phase": ("", "SELECT value, count(*) FROM t1 GROUP BY value ORDER BY value LIMIT 3"),
    "count_star": ("", "SELECT count(*) FROM big WHERE amount > 10"),
    "verbose_reasons": ("", "EXPLAIN VERBOSE SELECT count(*) FROM big JOIN t1 ON big.id = t1.id"),
    "shape_plan": ("", "EXPLAIN SHAPE PLAN SELECT name, count(*) FROM big JOIN small "
                       "ON big.id = small.sid GROUP BY name"),
    "three_way_colocate": ("", "SELECT count(*) FROM t1 a JOIN t2 b ON a.id = b.id "
                               "JOIN t1 c ON b.id = c.id"),
}
RESET = ["SET disable_colocate_plan = false", "SET disable_colocate_join = false",
         "SET enable_bucket_shuffle_join = true"]


@pytest.fixture(scope="module")
def explain_server(tmp_path_factory):  # type: ignore[no-untyped-def]
    srv = ServerProcess(tmp_path_factory.mktemp("explain") / "data", backends=3).start()
    conn = srv.connect()
    with conn.cursor() as cur:
        for s in SETUP:
            cur.execute(s)
        for table, rows in (("t1", T1), ("t2", T2), ("big", BIG), ("small", SMALL)):
            cur.execute(f"INSERT INTO {table} VALUES " + ", ".join(
                "(" + ", ".join(repr(v) for v in r) + ")" for r in rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t1 (id INT, value VARCHAR); CREATE TABLE t2 (id INT, value VARCHAR)")
    duck.execute("CREATE TABLE big (k INT, id INT, amount BIGINT)")
    duck.execute("CREATE TABLE small (sid INT, name VARCHAR)")
    for table, rows in (("t1", T1), ("t2", T2), ("big", BIG), ("small", SMALL)):
        insert_rows(duck, table, rows)
    yield conn, duck
    conn.close()
    srv.stop()


def _explain(cur, setting: str, sql: str) -> str:  # type: ignore[no-untyped-def]
    for s in RESET:
        cur.execute(s)
    if setting:
        cur.execute(setting)
    cur.execute(sql if sql.startswith("EXPLAIN") else f"EXPLAIN {sql}")
    assert [d[0] for d in cur.description] == ["Explain String(Nereids Planner)"]
    return "\n".join(r[0] for r in cur.fetchall()) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_explain_golden(explain_server, name: str) -> None:  # type: ignore[no-untyped-def]
    conn, _ = explain_server
    setting, sql = CASES[name]
    with conn.cursor() as cur:
        text = _explain(cur, setting, sql)
    path = GOLDEN / f"{name}.txt"
    if REGEN or not path.exists():
        path.write_text(text)
    assert text == path.read_text()


MODE_MARKERS = {
    "colocate": "INNER JOIN(COLOCATE[])[]",
    "colocate_disabled_plan": "INNER JOIN(BUCKET_SHUFFLE)[]",
    "colocate_disabled_join": "INNER JOIN(BUCKET_SHUFFLE)[]",
    "bucket_shuffle": "INNER JOIN(BUCKET_SHUFFLE)[]",
    "bucket_shuffle_off": "INNER JOIN(BROADCAST)[]",
    "broadcast": "INNER JOIN(BROADCAST)[]",
    "shuffle_hint": "INNER JOIN(PARTITIONED)[]",
    "broadcast_hint": "INNER JOIN(BROADCAST)[]",
    "shuffle_hint_keeps_colocate": "INNER JOIN(COLOCATE[])[]",
    "right_outer_shuffles": "RIGHT OUTER JOIN(PARTITIONED)[]",
    # b.id = c.id colocates too: after a.id = b.id, b.id carries a's bucket distribution
    "three_way_colocate": "INNER JOIN(COLOCATE[])[]",
}


@pytest.mark.parametrize("name", sorted(MODE_MARKERS))
def test_join_mode_and_rows(explain_server, name: str) -> None:  # type: ignore[no-untyped-def]
    """The mode is what Doris would pick, and the rows equal DuckDB's whatever the mode."""
    conn, duck = explain_server
    setting, sql = CASES[name]
    with conn.cursor() as cur:
        text = _explain(cur, setting, sql)
        assert MODE_MARKERS[name] in text
        if name == "three_way_colocate":
            assert text.count("INNER JOIN(COLOCATE[])[]") == 2
        if "COLOCATE" in MODE_MARKERS[name]:
            # seed 000 Q4: the join's children are the scans themselves, no exchange between
            join_at = text.index("VHASH JOIN")
            assert "VEXCHANGE" not in text[join_at:text.index("PLAN FRAGMENT", join_at)
                                         if "PLAN FRAGMENT" in text[join_at:] else None]
        cur.execute(sql.replace("[bucket]", "").replace("[shuffle]", "")
                    .replace("[broadcast]", ""))
        got = sorted(tuple(r) for r in cur.fetchall())
        cur.execute(sql)  # the hinted form runs too
        assert sorted(tuple(r) for r in cur.fetchall()) == got
    plain = sql.replace("[bucket]", "").replace("[shuffle]", "").replace("[broadcast]", "")
    assert got == sorted(tuple(r) for r in duck.execute(plain).fetchall())


def test_explain_of_non_query_is_refused(explain_server) -> None:  # type: ignore[no-untyped-def]
    conn, _ = explain_server
    with conn.cursor() as cur, pytest.raises(Exception) as err:
        cur.execute("EXPLAIN INSERT INTO small VALUES (1, 'x')")
    assert err.value.args[0] == 1105 and "EXPLAIN" in err.value.args[1]


def _node_counters(cur) -> dict[str, str]:  # type: ignore[no-untyped-def]
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    return {name: value for name, value in cur.fetchall() if name.startswith("Fragment")}


def _exchange_bytes(counters: dict[str, str]) -> int:
    return sum(int(v.split("BytesSent: ")[1]) for k, v in counters.items()
               if k.endswith(":VEXCHANGE"))


def test_profile_counts_exchange_traffic_per_join_mode(explain_server) -> None:  # type: ignore[no-untyped-def]
    """Seed 000: a colocated join moves nothing below the join; a shuffle moves both sides."""
    conn, _ = explain_server
    sql = "SELECT t1.id, t2.value FROM t1 JOIN {hint} t2 ON t1.id = t2.id"
    with conn.cursor() as cur:
        for s in RESET:
            cur.execute(s)
        cur.execute("SET enable_profile = true")
        cur.execute(sql.format(hint=""))
        colocated = cur.fetchall()
        colo = _node_counters(cur)
        cur.execute("SET disable_colocate_plan = true")
        cur.execute("SET enable_bucket_shuffle_join = false")
        cur.execute("SET broadcast_row_count_limit = 1")  # too big to broadcast: shuffle
        cur.execute(sql.format(hint=""))
        shuffled = cur.fetchall()
        shuf = _node_counters(cur)
        for s in RESET + ["SET broadcast_row_count_limit = 30000000",
                          "SET enable_profile = false"]:
            cur.execute(s)
    assert sorted(colocated) == sorted(shuffled) and len(colocated) == 20
    join = [v for k, v in colo.items() if k.endswith("VHASH JOIN")]
    assert len(join) == 1 and join[0].startswith("INNER JOIN(COLOCATE[])[], RowsReturned: 20, ")
    exchanges = [k for k in colo if k.endswith(":VEXCHANGE")]
    assert len(exchanges) == 1  # only the final gather to the result fragment
    shuffle_exchanges = [v for k, v in shuf.items() if k.endswith(":VEXCHANGE")]
    assert len(shuffle_exchanges) == 3  # both join inputs + the gather
    sent = sorted(int(v.split(",")[0].split(": ")[1]) for v in shuffle_exchanges)
    assert sent == [20, 30, 60]  # t2's 30 rows and t1's 60 rows (its id column), the result
    assert _exchange_bytes(shuf) > _exchange_bytes(colo) > 0


COLOCATED_JOINS = [
    "SELECT t1.id, t1.value, t2.value FROM t1 JOIN t2 ON t1.id = t2.id",
    "SELECT t1.id, t2.value FROM t1 LEFT JOIN t2 ON t1.id = t2.id",
    "SELECT t1.id, t2.id FROM t1 FULL OUTER JOIN t2 ON t1.id = t2.id",
    "SELECT t2.id FROM t1 RIGHT JOIN t2 ON t1.id = t2.id AND t1.value > 'v3'",
    "SELECT t1.id FROM t1 WHERE t1.id IN (SELECT id FROM t2)",
    "SELECT t1.id FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.id = t1.id)",
    "SELECT count(*) FROM t1 a JOIN t2 b ON a.id = b.id JOIN t1 c ON b.id = c.id "
    "WHERE c.value <> 'v2'",
]


@pytest.mark.parametrize("sql", COLOCATED_JOINS)
def test_colocated_joins_run_per_bucket(explain_server, sql: str) -> None:  # type: ignore[no-untyped-def]
    """A COLOCATE join runs in its fragment's instances, each joining whole buckets (10
    bucket seqs for seed 000's tables), and returns DuckDB's rows for every join
    kind, NULL-extended rows included."""
    conn, duck = explain_server
    with conn.cursor() as cur:
        for s in RESET:
            cur.execute(s)
        cur.execute(f"EXPLAIN {sql}")
        assert "(COLOCATE[])" in "\n".join(r[0] for r in cur.fetchall())
        cur.execute("SET enable_profile = true")
        cur.execute(sql)
        got = cur.fetchall()
        counters = _node_counters(cur)
        cur.execute("SET enable_profile = false")
    colocated = [k for k, v in counters.items() if "(COLOCATE[])" in v]
    assert colocated and counters[colocated[0]].endswith("Buckets: 10")
    # seed 000's tables are small: the join's fragment is one instance joining all buckets
    fragment = counters[colocated[0].split(" / ")[0]]
    assert fragment.startswith("Instances: 1, Backends: ")
    key = lambda r: [(v is None, v) for v in r]  # noqa: E731
    assert sorted(got, key=key) == sorted(duck.execute(sql).fetchall(), key=key)
