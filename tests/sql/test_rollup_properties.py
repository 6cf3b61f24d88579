"""Property test (issue 5, "How it is checked"): every rollup choice returns the base index's rows.

Random AGGREGATE, UNIQUE (merge-on-write and merge-on-read) and DUPLICATE tables, partitioned
or not, hash or random distribution, with several rollups (other column orders, prefixes,
subsets; some added later by ALTER TABLE ADD ROLLUP, whose job converts rowsets that deletes
already hide rows of), random loads (several INSERTs, so storage merges rowsets on read; UNIQUE
overwrites; DELETE WHERE on columns every index has) and random aggregate queries (sum / min /
max / count / count(*) / count DISTINCT / avg, GROUP BY subsets of the columns, HAVING,
DISTINCT, filters on prefix and non-prefix columns, value-column filters, derived tables that
rename columns, queries over a join with a dimension table, plain row queries). Each query runs over the wire with the rollup choice on and with it forced off (`SET
disable_nereids_rules = 'MATERIALIZED_INDEX_AGG_SCAN'`, Doris' rule name that maps to our
planner/rules/choose_rollup.py); both must equal DuckDB over the same logical data (the table's
rows after every load and delete, merged by the table's keys as Doris defines it, modelled here
in Python). EXPLAIN (`TABLE: db.t(index), PREAGGREGATION: ..`) must show that many queries
really read a rollup, that some ran with PREAGGREGATION OFF, and that the forced variant read the
base index.

Reproduce a failure with the seed printed in the assertion message:
`SHALEDB_PROPERTY_SEED=<seed> pytest tests/sql/test_rollup_properties.py`.
"""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import random
import re
import time
from dataclasses import dataclass, field

import duckdb
import pytest
from support.duck import insert_rows
from support.rows import normalize_rows
from support.seeds import property_seeds

DEFAULT_SEEDS = (3, 77)
ROUNDS = 2  # load / delete, then queries; twice, so later loads merge with earlier ones
QUERIES_PER_ROUND = 10  # per table

FORCE_BASE = "SET disable_nereids_rules = 'MATERIALIZED_INDEX_AGG_SCAN'"
ROLLUP_ON = "SET disable_nereids_rules = ''"
SCAN_RE = re.compile(r"TABLE: [^.\s]+\.(\w+)\((\w+)\), PREAGGREGATION: (ON|OFF)")

DATES = [dt.date(2024, 3, d) for d in (1, 2, 3, 5, 8, 13)]
STRS = ["a", "b", "c", "ab", "", "zz"]
DECS = [decimal.Decimal(x) for x in ("0.50", "1.25", "-3.00", "10.10", "7.77")]


@dataclass(frozen=True)
class Col:
    name: str
    ddl: str  # type (and aggregation for AGGREGATE value columns)
    duck: str
    key: bool
    agg: str | None = None  # SUM / MAX / MIN on AGGREGATE value columns


KEYS = (
    Col("k1", "INT", "INTEGER", True),
    Col("k2", "VARCHAR(8)", "VARCHAR", True),
    Col("k3", "DATE", "DATE", True),
    Col("k4", "BIGINT", "BIGINT", True),
)
VALUES = {
    "AGGREGATE": (Col("s", "BIGINT SUM", "BIGINT", False, "SUM"),
                  Col("mx", "INT MAX", "INTEGER", False, "MAX"),
                  Col("mn", "DECIMAL(8, 2) MIN", "DECIMAL(8, 2)", False, "MIN"),
                  Col("s2", "INT SUM", "INTEGER", False, "SUM")),
    "UNIQUE": (Col("v1", "INT", "INTEGER", False), Col("v2", "VARCHAR(8)", "VARCHAR", False),
               Col("v3", "DECIMAL(8, 2)", "DECIMAL(8, 2)", False)),
    "DUPLICATE": (Col("v1", "INT", "INTEGER", False), Col("v2", "VARCHAR(8)", "VARCHAR", False),
                  Col("v3", "DECIMAL(8, 2)", "DECIMAL(8, 2)", False)),
}


def _value_of(col: Col, rnd: random.Random) -> object:
    if rnd.random() < 0.1:
        return None
    if col.name in ("k1", "s2", "mx", "v1"):
        return rnd.choice((0, 1, 2, 3, 5, 8, -1, 13)) if col.key else rnd.randrange(-20, 100)
    if col.name in ("k2", "v2"):
        return rnd.choice(STRS)
    if col.name == "k3":
        return rnd.choice(DATES)
    if col.name in ("k4", "s"):
        return rnd.choice((10**12, 7, -4)) if col.key else rnd.randrange(-1000, 10**6)
    return rnd.choice(DECS)


@dataclass
class Model:
    """One table and its logical content (what a query must see)."""

    name: str
    keys_type: str  # AGGREGATE / UNIQUE / DUPLICATE
    columns: tuple[Col, ...]
    rollups: dict[str, list[str]]
    partitioned: bool
    distribution: str = "HASH(k1) BUCKETS 3"
    properties: tuple[str, ...] = ()
    rows: list[tuple] = field(default_factory=list)  # DUPLICATE
    merged: dict[tuple, list] = field(default_factory=dict)  # AGGREGATE / UNIQUE, by key

    @property
    def key_names(self) -> list[str]:
        return [c.name for c in self.columns if c.key]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def logical_rows(self) -> list[tuple]:
        if self.keys_type == "DUPLICATE":
            return list(self.rows)
        return [k + tuple(v) for k, v in self.merged.items()]

    def load(self, rows: list[tuple]) -> None:
        nk = len(self.key_names)
        for r in rows:
            if self.keys_type == "DUPLICATE":
                self.rows.append(r)
            elif self.keys_type == "UNIQUE":
                self.merged[r[:nk]] = list(r[nk:])
            else:
                old = self.merged.get(r[:nk])
                if old is None:
                    self.merged[r[:nk]] = list(r[nk:])
                    continue
                for i, c in enumerate(self.columns[nk:]):
                    a, b = old[i], r[nk + i]
                    # SUM / MAX / MIN ignore NULL inputs (DORIS_REFERENCE.md AGGREGATE KEY)
                    if a is None or b is None:
                        old[i] = b if a is None else a
                    elif c.agg == "SUM":
                        old[i] = a + b
                    elif c.agg == "MAX":
                        old[i] = max(a, b)
                    else:
                        old[i] = min(a, b)

    def delete(self, matches) -> None:  # type: ignore[no-untyped-def]
        if self.keys_type == "DUPLICATE":
            self.rows = [r for r in self.rows if not matches(dict(zip(self.names, r)))]
        else:
            self.merged = {k: v for k, v in self.merged.items()
                           if not matches(dict(zip(self.names, k + tuple(v))))}


def random_model(name: str, keys_type: str, rnd: random.Random) -> Model:
    keys = KEYS[: rnd.choice((3, 4))] if keys_type != "UNIQUE" else KEYS[:3]
    columns = tuple(keys) + VALUES[keys_type]
    m = Model(name, keys_type, columns, {}, partitioned=rnd.random() < 0.5)
    dist = rnd.choice(["HASH(k1)", "HASH(k1)", "HASH(k1, k2)", "HASH(k2)"])
    if keys_type == "DUPLICATE" and rnd.random() < 0.3:
        dist = "RANDOM"
    m.distribution = f"{dist} BUCKETS {rnd.randrange(1, 6)}"
    if keys_type == "UNIQUE" and rnd.random() < 0.5:  # merge-on-read (else merge-on-write)
        m.properties = ('"enable_unique_key_merge_on_write" = "false"',)
    for i in range(rnd.randrange(2, 5)):
        cols = random_rollup(m, i, rnd)
        m.rollups[f"r{i}_{'_'.join(cols)}"[:60]] = cols
    return m


def random_rollup(m: Model, i: int, rnd: random.Random) -> list[str]:
    """The columns of rollup number `i` (the first ones are shaped to serve many queries)."""
    keys_type = m.keys_type
    key_names = m.key_names
    value_names = [c.name for c in m.columns if not c.key]
    if keys_type == "UNIQUE":  # Doris: a UNIQUE rollup holds every unique key
        cols = rnd.sample(key_names, len(key_names))
        # the first one narrow (one value column): it serves every query on the keys
        cols += rnd.sample(value_names, 1 if i == 0 else rnd.randrange(1, len(value_names) + 1))
    elif keys_type == "AGGREGATE":
        if i == 0:  # all the keys, other order: serves queries without an aggregate
            cols = rnd.sample(key_names, len(key_names))
        elif i == 1:  # a prefix of the base keys
            cols = key_names[: rnd.randrange(1, len(key_names))]
        else:
            cols = rnd.sample(key_names, rnd.randrange(1, len(key_names) + 1))
        cols += rnd.sample(value_names, rnd.randrange(1, len(value_names) + 1))
    elif i == 0:  # DUPLICATE: all columns but one, reordered (serves most queries)
        cols = rnd.sample(key_names + value_names, len(key_names) + len(value_names) - 1)
    else:  # DUPLICATE: any columns in any order (the leading ones become its sort key)
        cols = rnd.sample(key_names + value_names, rnd.randrange(2, 6))
    return cols


def create_sql(m: Model) -> str:
    cols = ", ".join(f"{c.name} {c.ddl}" for c in m.columns)
    keys = ", ".join(m.key_names)
    parts = ""
    if m.partitioned:
        parts = ("PARTITION BY RANGE(k3) (PARTITION p0 VALUES LESS THAN ('2024-01-01'), "
                 "PARTITION p1 VALUES LESS THAN ('2024-03-04'), "
                 "PARTITION p2 VALUES LESS THAN MAXVALUE) ")
    rollups = ", ".join(f"{n}({', '.join(c)})" for n, c in m.rollups.items())
    props = ", ".join(('"replication_num" = "1"',) + m.properties)
    return (f"CREATE TABLE {m.name} ({cols}) {m.keys_type} KEY({keys}) {parts}"
            f"DISTRIBUTED BY {m.distribution} PROPERTIES ({props}) ROLLUP ({rollups})")


def _literal(x: object) -> str:
    if x is None:
        return "NULL"
    if isinstance(x, (str, dt.date)):
        return f"'{x}'"
    return str(x)


# ---- loads and deletes -----------------------------------------------------------------------
def random_load(m: Model, rnd: random.Random) -> list[tuple]:
    n = rnd.randrange(1, 50)
    rows = [tuple(_value_of(c, rnd) for c in m.columns) for _ in range(n)]
    if m.keys_type == "UNIQUE":
        # one row per key in a statement: which duplicate of a batch wins is not what this tests
        by_key = {r[: len(m.key_names)]: r for r in rows}
        rows = list(by_key.values())
    return rows


def random_delete(m: Model, rnd: random.Random) -> tuple[str, object] | None:
    """(DELETE condition, Python predicate) on a column every index has, or None."""
    common = set(m.names)
    for cols in m.rollups.values():
        common &= set(cols)
    if m.keys_type != "DUPLICATE":
        common &= set(m.key_names)  # AGGREGATE / UNIQUE: key columns only
    usable = sorted(common & {"k1", "k2", "k3"})
    if not usable:
        return None
    col = rnd.choice(usable)
    pool = {"k1": [0, 1, 2, 3, 5, 8, 13], "k2": STRS, "k3": DATES}[col]
    op = rnd.choice(("=", "IN", "<", ">=", "!=", "IS NULL"))
    if op == "IS NULL":
        return f"{col} IS NULL", lambda r: r[col] is None
    if op == "IN":
        vals = rnd.sample(pool, 2)
        return (f"{col} IN ({', '.join(_literal(v) for v in vals)})",
                lambda r: r[col] is not None and r[col] in vals)
    v = rnd.choice(pool)
    test = {"=": lambda a: a == v, "<": lambda a: a < v, ">=": lambda a: a >= v,
            "!=": lambda a: a != v}[op]
    return f"{col} {op} {_literal(v)}", lambda r: r[col] is not None and test(r[col])


# ---- queries ---------------------------------------------------------------------------------
def _aggregates(m: Model, rnd: random.Random) -> list[str]:
    if m.keys_type == "AGGREGATE":
        pool = ["sum(s)", "max(mx)", "min(mn)", "sum(s2)",  # match the columns' aggregation
                "count(*)", "avg(s)", "min(s)", "sum(mx)", "count(mn)",  # turn pre-agg off
                "count(DISTINCT k2)", "min(k1)", "max(k3)", "count(DISTINCT s2)"]
    else:
        pool = ["sum(v1)", "max(v1)", "min(v2)", "sum(v3)", "count(*)", "avg(v1)",
                "count(DISTINCT k2)", "min(k1)", "max(k3)", "count(v3)", "count(DISTINCT v2)"]
    # mostly aggregates a rollup can serve, sometimes one that cannot
    n = rnd.randrange(1, 4)
    if m.keys_type == "AGGREGATE" and rnd.random() < 0.6:
        return rnd.sample(pool[:4] + pool[9:], n)
    return rnd.sample(pool, n)


def _filters(m: Model, rnd: random.Random, alias: str = "") -> list[str]:
    p = alias + "." if alias else ""
    pool = [f"{p}k1 = {rnd.choice((1, 3, 5))}", f"{p}k1 IN (0, 2, 8)", f"{p}k1 > 2",
            f"{p}k2 = '{rnd.choice(STRS)}'", f"{p}k2 IN ('a', 'zz')", f"{p}k2 >= 'b'",
            f"{p}k3 >= '2024-03-03'", f"{p}k3 BETWEEN '2024-03-02' AND '2024-03-08'",
            f"{p}k3 = '2024-03-05'", f"({p}k1 = 1 OR {p}k2 = 'c')", f"{p}k1 IS NULL"]
    if "k4" in m.names:
        pool.append(f"{p}k4 = 7")
    values = [c.name for c in m.columns if not c.key]
    if rnd.random() < 0.2:  # a value-column filter (pre-aggregation off on AGGREGATE)
        v = rnd.choice(values)
        pool.append(f"{p}{v} IS NOT NULL" if v in ("v2", "mn", "v3") else f"{p}{v} > 10")
    return rnd.sample(pool, rnd.choice((0, 1, 1, 2)))


def random_query(m: Model, dim: str, rnd: random.Random) -> str:
    r = rnd.random()
    keys = m.key_names
    if r < 0.15:  # over a join with the dimension table
        g = rnd.sample(["f.k2", "f.k3", "d.name"], rnd.randrange(1, 3))
        aggs = [a.replace("(", "(f.", 1) if a != "count(*)" and "DISTINCT" not in a
                else a.replace("DISTINCT ", "DISTINCT f.") for a in _aggregates(m, rnd)]
        where = _filters(m, rnd, "f") + ([f"d.name <> 'n{rnd.randrange(3)}'"]
                                         if rnd.random() < 0.5 else [])
        return (f"SELECT {', '.join(g + aggs)} FROM {m.name} f JOIN {dim} d ON f.k1 = d.k1"
                + (f" WHERE {' AND '.join(where)}" if where else "")
                + f" GROUP BY {', '.join(g)}")
    if r < 0.25:  # no aggregate: the rows themselves
        cols = rnd.sample(m.names, rnd.randrange(1, 4))
        where = _filters(m, rnd)
        return (f"SELECT {', '.join(cols)} FROM {m.name}"
                + (f" WHERE {' AND '.join(where)}" if where else ""))
    values = [c.name for c in m.columns if not c.key]
    if r < 0.35:  # through a derived table that renames (and sometimes computes) columns
        g_key, other = rnd.sample(keys, 2)
        val = rnd.choice(values)
        inner = f"{g_key} AS g_, {other} AS o_, {val} AS v_"
        if rnd.random() < 0.3:
            inner += f", {other} = {_literal(_value_of(m.columns[keys.index(other)], rnd))} AS e_"
        where = _filters(m, rnd)
        fn = rnd.choice(("sum", "max", "min", "count")) if val != "v2" else \
            rnd.choice(("max", "min", "count"))
        aggs = [f"{fn}(v_)", rnd.choice(("max(o_)", "count(DISTINCT o_)", "count(*)"))]
        return (f"SELECT g_, {', '.join(aggs)} FROM (SELECT {inner} FROM {m.name}"
                + (f" WHERE {' AND '.join(where)}" if where else "") + ") q GROUP BY g_")
    if r < 0.42:  # DISTINCT rows of some columns
        cols = rnd.sample(keys, rnd.randrange(1, 3))
        where = _filters(m, rnd)
        return (f"SELECT DISTINCT {', '.join(cols)} FROM {m.name}"
                + (f" WHERE {' AND '.join(where)}" if where else ""))
    group = rnd.sample(keys, rnd.randrange(0, 3))
    if rnd.random() < 0.1:  # grouping by a value column
        group.append(rnd.choice(values))
    aggs = _aggregates(m, rnd)
    where = _filters(m, rnd)
    having = ""
    if group and rnd.random() < 0.2:  # an aggregate only HAVING uses
        having = " HAVING " + rnd.choice(_aggregates(m, rnd)) + " IS NOT NULL"
    return (f"SELECT {', '.join(group + aggs)} FROM {m.name}"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + (f" GROUP BY {', '.join(group)}" if group else "") + having)


# ---- comparison ------------------------------------------------------------------------------


def _scans(cur, sql: str) -> list[tuple[str, str, str]]:
    """(table, index, ON|OFF) of every OLAP scan in the query's EXPLAIN."""
    cur.execute("EXPLAIN " + sql)
    return SCAN_RE.findall("\n".join(str(r[0]) for r in cur.fetchall()))


def _wait_rollup_job(cur, table: str, rollup: str, timeout: float = 120.0) -> str:
    """Poll SHOW ALTER TABLE ROLLUP until the job of `rollup` ends; its final State."""
    deadline = time.monotonic() + timeout
    while True:
        cur.execute("SHOW ALTER TABLE ROLLUP")
        names = [d[0] for d in cur.description]
        jobs = [dict(zip(names, r)) for r in cur.fetchall()]
        state = next(j["State"] for j in jobs
                     if j["TableName"] == table and j["RollupIndexName"] == rollup)
        if state in ("FINISHED", "CANCELLED") or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


def _duck_table(duck: duckdb.DuckDBPyConnection, m: Model) -> None:
    duck.execute(f"DROP TABLE IF EXISTS {m.name}")
    duck.execute(f"CREATE TABLE {m.name} ("
                 + ", ".join(f"{c.name} {c.duck}" for c in m.columns) + ")")
    rows = m.logical_rows()
    if rows:
        insert_rows(duck, m.name, rows)


def _run_seed(server, db: str, seed: int) -> collections.Counter:
    rnd = random.Random(seed)
    duck = duckdb.connect()
    stats: collections.Counter = collections.Counter()
    on, base = server.connect(db), server.connect(db)
    try:
        cur, bcur = on.cursor(), base.cursor()
        for c in (cur, bcur):  # small tables: spread the fragments over the backends anyway
            c.execute("SET shaledb_small_fragment_rows = 0")
        cur.execute(ROLLUP_ON)
        cur.execute("SET delete_without_partition = true")  # DELETE on partitioned tables
        bcur.execute(FORCE_BASE)
        models = [random_model(f"{kind.lower()}_t", kind, rnd)
                  for kind in ("AGGREGATE", "UNIQUE", "DUPLICATE")]
        for m in models:
            cur.execute(create_sql(m))
        cur.execute("CREATE TABLE dim (k1 INT, name VARCHAR(4)) DUPLICATE KEY(k1) "
                    "DISTRIBUTED BY HASH(k1) BUCKETS 2")
        dim_rows = [(k, f"n{rnd.randrange(3)}") for k in (0, 1, 2, 3, 5, 8, 8, None)]
        cur.execute("INSERT INTO dim VALUES "
                    + ", ".join(f"({_literal(a)}, '{b}')" for a, b in dim_rows))
        duck.execute("CREATE TABLE dim (k1 INTEGER, name VARCHAR)")
        insert_rows(duck, "dim", dim_rows)
        log: list[str] = []  # the statements so far, for the failure message
        for round_ in range(ROUNDS):
            for m in models:
                if round_ > 0 and rnd.random() < 0.6:
                    # a rollup added to loaded data: the job converts the existing rowsets,
                    # delete versions included
                    cols = random_rollup(m, rnd.randrange(4), rnd)
                    name = f"x{round_}_{'_'.join(cols)}"[:60]
                    sql = f"ALTER TABLE {m.name} ADD ROLLUP {name}({', '.join(cols)})"
                    cur.execute(sql)
                    assert _wait_rollup_job(cur, m.name, name) == "FINISHED", sql
                    m.rollups[name] = cols
                    log.append(sql)
                    stats["alter rollup"] += 1
                for j in range(rnd.randrange(2, 5)):
                    if (round_, j) != (0, 0) and rnd.random() < 0.3:
                        d = random_delete(m, rnd)
                        if d is not None:
                            sql = f"DELETE FROM {m.name} WHERE {d[0]}"
                            cur.execute(sql)
                            m.delete(d[1])
                            log.append(sql)
                            stats["deletes"] += 1
                            continue
                    rows = random_load(m, rnd)
                    sql = (f"INSERT INTO {m.name} VALUES "
                           + ", ".join("(" + ", ".join(_literal(x) for x in r) + ")"
                                       for r in rows))
                    cur.execute(sql)
                    m.load(rows)
                    log.append(sql[:80] + " ...")
                _duck_table(duck, m)
            for m in models:
                for i in range(QUERIES_PER_ROUND):
                    sql = random_query(m, "dim", rnd)
                    where = (f"seed={seed} round {round_} query #{i} on {m.keys_type} table "
                             f"{m.name}\nSQL: {sql}\nrollups: {m.rollups}")
                    expected = normalize_rows(duck.execute(sql).fetchall())
                    cur.execute(sql)
                    got = normalize_rows(cur.fetchall())
                    bcur.execute(sql)
                    got_base = normalize_rows(bcur.fetchall())
                    scans = [s for s in _scans(cur, sql) if s[0] == m.name]
                    base_scans = [s for s in _scans(bcur, sql) if s[0] == m.name]
                    assert got_base == expected, (
                        f"{where}\nbase index (rollup choice off) differs from DuckDB\n"
                        f"expected ({len(expected)}): {expected[:15]}\n"
                        f"got ({len(got_base)}): {got_base[:15]}\nloads: {log}")
                    assert got == expected, (
                        f"{where}\nchosen index {scans} differs from the base index and DuckDB\n"
                        f"expected ({len(expected)}): {expected[:15]}\n"
                        f"got ({len(got)}): {got[:15]}\nloads: {log}")
                    assert scans and all(s[1] == m.name for s in base_scans), (
                        f"{where}\nforced variant did not read the base index: {base_scans}")
                    stats["queries"] += 1
                    if any(s[1] != m.name for s in scans):
                        stats["rollup"] += 1
                        stats[f"rollup {m.keys_type}"] += 1
                    if any(s[2] == "OFF" for s in scans):
                        stats["preagg off"] += 1
        return stats
    finally:
        on.close()
        base.close()
        duck.close()


@pytest.mark.parametrize("seed", property_seeds(DEFAULT_SEEDS))
def test_every_rollup_choice_returns_the_base_rows(server, make_db, seed: int) -> None:
    db = make_db(f"rollupprop{seed}")
    stats = _run_seed(server, db, seed)
    n = stats["queries"]
    assert stats["rollup"] >= n // 6, f"seed={seed}: few queries read a rollup: {dict(stats)}"
    for kind in ("AGGREGATE", "UNIQUE", "DUPLICATE"):
        assert stats[f"rollup {kind}"] >= 1, f"seed={seed}: no {kind} rollup hits: {dict(stats)}"
    assert stats["preagg off"] >= 3, f"seed={seed}: PREAGGREGATION OFF never hit: {dict(stats)}"


def test_explain_shows_the_index_disable_nereids_rules_leaves(db_conn) -> None:
    """EXPLAIN plans with the session's `disable_nereids_rules`, as the query itself runs
    (it used to ignore the variable and print the rollup the query no longer read)."""
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE t (k1 INT, k2 VARCHAR(8), s BIGINT SUM) AGGREGATE KEY(k1, k2) "
                "DISTRIBUTED BY HASH(k1) BUCKETS 2 ROLLUP (r_k2(k2, s))")
    cur.execute("INSERT INTO t VALUES (1, 'a', 5), (2, 'a', 7), (3, 'b', 1)")
    sql = "SELECT k2, sum(s) FROM t GROUP BY k2"
    assert _scans(cur, sql) == [("t", "r_k2", "ON")]
    for value in ("MATERIALIZED_INDEX_AGG_SCAN", "choose_rollup"):
        cur.execute(f"SET disable_nereids_rules = '{value}'")
        assert _scans(cur, sql) == [("t", "t", "ON")], value
    cur.execute(ROLLUP_ON)
    assert _scans(cur, sql) == [("t", "r_k2", "ON")]
