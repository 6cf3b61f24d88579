"""Property test (issue 5, "How it is checked"): every join distribution mode returns the same rows.

Random data (NULL, duplicate and skewed keys, empty partitions and buckets; INT, BIGINT,
VARCHAR, DATE and DECIMAL join keys) in tables of colocate groups, tables outside any group,
tables with other bucket counts, RANDOM distribution, partitioned and not. Random join queries
(INNER, LEFT/RIGHT/FULL OUTER, semi / anti joins through IN / EXISTS / NOT IN / NOT EXISTS,
two- and three-way joins, keys on distribution columns and not, extra non-equi ON conditions,
aggregates above, WHERE filters) run over the wire under every way a user asks for a mode: no
hint, `JOIN [shuffle]`, `JOIN [broadcast]`, `JOIN [bucket]`, `SET disable_colocate_plan =
true` (and the seed's `disable_colocate_join`), `SET enable_bucket_shuffle_join = false`, `SET
broadcast_row_count_limit = 0` (the QueryOptions fields planner/query.py `distribute_options` reads);
a mode the session switched off must never appear in the variant's EXPLAIN. Every variant must return the same
multiset of rows as DuckDB over the same data, and over the run EXPLAIN must show that every
mode (COLOCATE, BUCKET_SHUFFLE, BROADCAST, PARTITIONED) was really planned for many queries.

Reproduce a failure with the seed printed in the assertion message:
`SHALEDB_PROPERTY_SEED=<seed> pytest tests/sql/test_join_mode_properties.py`.
"""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import random
import re
from dataclasses import dataclass

import duckdb
import pytest
from support.duck import insert_rows
from support.rows import normalize_rows
from support.seeds import property_seeds

DEFAULT_SEEDS = (5, 1205)
QUERIES_PER_SEED = 20

# name -> (DDL type, DuckDB type)
COLUMNS = {
    "k_int": ("INT", "INTEGER"),
    "k_big": ("BIGINT", "BIGINT"),
    "k_str": ("VARCHAR(16)", "VARCHAR"),
    "k_date": ("DATE", "DATE"),
    "k_dec": ("DECIMAL(10, 2)", "DECIMAL(10, 2)"),
    "v": ("INT", "INTEGER"),
}
KEY_COLUMNS = ("k_int", "k_big", "k_str", "k_date", "k_dec")


@dataclass(frozen=True)
class Table:
    name: str
    dist: tuple[str, ...]  # HASH columns; () = RANDOM
    buckets: int
    group: str | None = None  # colocate group (suffix; the test prefixes the database name)
    partitioned: bool = False  # RANGE(k_date) with an always-empty partition
    keys: str = "DUPLICATE"  # UNIQUE: KEY(k_int); AGGREGATE: every k_* column a key, v SUM
    rollup: str = ""  # ROLLUP clause: scans that need only its columns may read it


# Colocate groups: g_int (k_int, 4 buckets, five tables, two partitioned), g_sd ((k_str,
# k_date), 3 buckets), g_dec (k_dec, 5 buckets), g_big (k_big, 2 buckets). Outside any group:
# the same distribution as g_int (o_int: colocate must still be refused), other bucket counts,
# RANDOM distribution. g_int also holds a UNIQUE and an AGGREGATE table (merged rows); two
# tables have a rollup (the scan reads it when it has every column the query needs).
TABLES = (
    Table("ci0", ("k_int",), 4, "g_int", partitioned=True),
    Table("ci1", ("k_int",), 4, "g_int", rollup="r_str(k_str, k_int, k_date, v)"),
    Table("ci2", ("k_int",), 4, "g_int"),
    Table("cu", ("k_int",), 4, "g_int", keys="UNIQUE"),
    Table("ca", ("k_int",), 4, "g_int", partitioned=True, keys="AGGREGATE"),
    Table("cs0", ("k_str", "k_date"), 3, "g_sd"),
    Table("cs1", ("k_str", "k_date"), 3, "g_sd", partitioned=True),
    Table("cd0", ("k_dec",), 5, "g_dec"),
    Table("cd1", ("k_dec",), 5, "g_dec"),
    Table("cb0", ("k_big",), 2, "g_big", partitioned=True),
    Table("cb1", ("k_big",), 2, "g_big"),
    Table("o_int", ("k_int",), 4),
    Table("o_int7", ("k_int",), 7, partitioned=True, rollup="r_date(k_date, k_str, k_int, v)"),
    Table("o_str", ("k_str",), 2),
    Table("o_date", ("k_date",), 3),
    Table("o_rand", (), 3),
)

# Partitions by k_date: p_empty only receives rows whose k_date is NULL (Doris puts NULL in the
# lowest range), so it stays empty in loads without NULL dates.
PARTITION_CLAUSE = """PARTITION BY RANGE(k_date) (
    PARTITION p_empty VALUES LESS THAN ("2023-01-01"),
    PARTITION p_2024a VALUES LESS THAN ("2024-01-03"),
    PARTITION p_2024b VALUES LESS THAN ("2024-01-05"),
    PARTITION p_rest VALUES LESS THAN MAXVALUE)"""

DATES = [dt.date(2024, 1, d) for d in range(1, 7)]
STRS = ["a", "b", "B", "ab", "", "zz", "x y", "\u00e9t\u00e9"]
DECS = [decimal.Decimal(x) for x in ("0.00", "1.50", "-2.25", "3.10", "99999999.99", "7.00")]

MODES = ("COLOCATE", "BUCKET_SHUFFLE", "BROADCAST", "PARTITIONED")
JOIN_OP = re.compile(r"join op: [A-Z ]+?\((COLOCATE|BUCKET_SHUFFLE|BROADCAST|PARTITIONED)")

# (name, hint inserted after JOIN, session statements of the variant's connection)
VARIANTS = (
    ("default", "", ()),
    ("hint shuffle", " [shuffle]", ()),
    ("hint broadcast", " [broadcast]", ()),
    ("hint bucket", " [bucket]", ()),
    ("disable_colocate_plan", "", ("SET disable_colocate_plan = true",)),
    ("disable_colocate_join", "", ("SET disable_colocate_join = true",)),  # the seed's name
    ("no bucket shuffle", "", ("SET enable_bucket_shuffle_join = false",)),
    ("broadcast limit 0", "", ("SET broadcast_row_count_limit = 0",)),
)


# ---- data ------------------------------------------------------------------------------------
def _skewed(rnd: random.Random, values: list, null_rate: float) -> object:
    """NULL with `null_rate`, else a value from `values` with a heavy first element (skew)."""
    if rnd.random() < null_rate:
        return None
    if rnd.random() < 0.3:
        return values[0]
    return rnd.choice(values)


def random_rows(rnd: random.Random, n: int) -> list[tuple]:
    ints = rnd.sample(range(-3, 25), 10)
    null_rate = rnd.choice((0.0, 0.1, 0.25))
    rows = []
    for _ in range(n):
        k_int = _skewed(rnd, ints, null_rate)
        rows.append((
            k_int,
            # k_big mostly follows k_int (so joins on either find partners), sometimes not
            (k_int * 1_000_000_007 if k_int is not None and rnd.random() < 0.8
             else _skewed(rnd, [3_000_000_021, -5, 0, 2**40], null_rate)),
            _skewed(rnd, STRS, null_rate),
            rnd.choice(DATES) if rnd.random() > null_rate / 2 else None,
            _skewed(rnd, DECS, null_rate),
            None if rnd.random() < 0.15 else rnd.randrange(-5, 20),
        ))
    return rows


def _literal(x: object) -> str:
    if x is None:
        return "NULL"
    if isinstance(x, (str, dt.date)):
        return "'" + str(x).replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(x)


def create_tables(cur, duck: duckdb.DuckDBPyConnection, db: str, rnd: random.Random) -> None:
    for t in TABLES:
        cols = ", ".join(f"{c} {ddl}" + (" SUM" if t.keys == "AGGREGATE" and c == "v" else "")
                         for c, (ddl, _) in COLUMNS.items())
        keys = ", ".join(KEY_COLUMNS) if t.keys == "AGGREGATE" else "k_int"
        dist = f"HASH({', '.join(t.dist)})" if t.dist else "RANDOM"
        props = ['"replication_num" = "1"']
        if t.group:
            props.append(f'"colocate_with" = "{db}_{t.group}"')
        cur.execute(
            f"CREATE TABLE {t.name} ({cols}) {t.keys} KEY({keys}) "
            + (PARTITION_CLAUSE + " " if t.partitioned else "")
            + f"DISTRIBUTED BY {dist} BUCKETS {t.buckets} PROPERTIES ({', '.join(props)})"
            + (f" ROLLUP ({t.rollup})" if t.rollup else ""))
        duck.execute(f"CREATE TABLE {t.name} ("
                     + ", ".join(f"{c} {dtype}" for c, (_, dtype) in COLUMNS.items()) + ")")
        # a few loads each (several rowsets per tablet); sometimes a table stays empty
        logical: list[tuple] = []
        merged: dict[tuple, tuple] = {}
        for _ in range(rnd.choice((0, 1, 2, 2, 3)) if rnd.random() < 0.9 else 0):
            rows = random_rows(rnd, rnd.randrange(1, 60))
            if t.keys == "UNIQUE":  # one row per key in a load; a later load overwrites
                rows = list({r[0]: r for r in rows}.values())
                merged.update({r[0]: r for r in rows})
            elif t.keys == "AGGREGATE":  # rows with equal keys merge, v summed (NULLs ignored)
                for r in rows:
                    old = merged.get(r[:5])
                    if old is None or old[5] is None:
                        merged[r[:5]] = r
                    elif r[5] is not None:
                        merged[r[:5]] = r[:5] + (old[5] + r[5],)
            else:
                logical += rows
            cur.execute(f"INSERT INTO {t.name} VALUES "
                        + ", ".join("(" + ", ".join(_literal(x) for x in r) + ")" for r in rows))
        logical += list(merged.values())
        if logical:
            insert_rows(duck, t.name, logical)


# ---- queries ---------------------------------------------------------------------------------
@dataclass
class Query:
    template: str  # `{H}` where a join hint goes

    def sql(self, hint: str = "") -> str:
        return self.template.replace("{H}", hint)


def _pick_pair(rnd: random.Random) -> tuple[Table, Table, list[str]]:
    """Two tables and the key columns to join them on, biased to the interesting cases:
    same group on its distribution columns (colocate), left distribution covered (bucket
    shuffle), anything else (broadcast / shuffle)."""
    r = rnd.random()
    if r < 0.4:  # same colocate group, joined on the group's distribution columns
        group = rnd.choice(sorted({t.group for t in TABLES if t.group}))
        a, b = rnd.sample([t for t in TABLES if t.group == group], 2)
        keys = list(a.dist)
    elif r < 0.65:  # the left table's distribution columns are covered
        a = rnd.choice([t for t in TABLES if t.dist])
        b = rnd.choice([t for t in TABLES if t is not a])
        keys = list(a.dist)
    else:
        a, b = rnd.sample(TABLES, 2)
        keys = [rnd.choice(KEY_COLUMNS)]
    if rnd.random() < 0.25:  # one more equi key
        extra = rnd.choice([c for c in KEY_COLUMNS if c not in keys])
        keys.append(extra)
    rnd.shuffle(keys)
    return a, b, keys


def _on(a: str, b: str, keys: list[str], rnd: random.Random, plain: set[str] | None = None) -> str:
    """The ON condition; `plain` collects the keys compared column to column."""
    conds = []
    for k in keys:
        if k == "k_int" and rnd.random() < 0.1:  # keys of different types, computed
            conds.append(f"{a}.k_big = CAST({b}.k_int AS BIGINT) * 1000000007")
        else:
            conds.append(f"{a}.{k} = {b}.{k}")
            if plain is not None:
                plain.add(k)
    if rnd.random() < 0.25:  # extra non-equi condition
        conds.append(rnd.choice([f"{a}.v < {b}.v", f"{a}.v + {b}.v > 6",
                                 f"{a}.k_date <> {b}.k_date", f"{a}.k_str >= {b}.k_str"]))
    return " AND ".join(conds)


def _filter(alias: str, rnd: random.Random) -> str:
    return rnd.choice([
        f"{alias}.v > 3", f"{alias}.v IS NULL", f"{alias}.k_int IN (1, 2, 3, 7)",
        f"{alias}.k_date >= '2024-01-04'", f"{alias}.k_str <> 'a'", f"{alias}.k_dec < 2",
        f"{alias}.k_int = 5", f"{alias}.k_date BETWEEN '2024-01-02' AND '2024-01-03'",
        f"({alias}.v < 0 OR {alias}.k_str = 'b')", f"{alias}.k_big IS NOT NULL",
    ])


def _select(aliases: list[str], rnd: random.Random) -> tuple[str, str]:
    """(select list, GROUP BY clause or '') over the given table aliases."""
    if rnd.random() < 0.5:
        cols = [f"{a}.{c}" for a in aliases for c in rnd.sample(list(COLUMNS), 2)]
        return ", ".join(cols), ""
    g = [f"{rnd.choice(aliases)}.{rnd.choice(KEY_COLUMNS)}" for _ in range(rnd.randrange(3))]
    g = list(dict.fromkeys(g))
    aggs = rnd.sample([
        "count(*)", f"count({aliases[-1]}.v)", f"sum({aliases[0]}.v)",
        f"min({aliases[-1]}.k_str)", f"max({aliases[0]}.k_date)",
        f"count(DISTINCT {aliases[-1]}.k_int)", f"sum({aliases[-1]}.k_dec)",
        f"avg({aliases[0]}.v)",
    ], rnd.randrange(1, 4))
    return ", ".join(g + aggs), (" GROUP BY " + ", ".join(g)) if g else ""


def random_query(rnd: random.Random) -> Query:
    shape = rnd.random()
    if shape < 0.2:
        return _semi_query(rnd)
    if shape < 0.32:
        return _aggregate_then_join_query(rnd)
    a, b, keys = _pick_pair(rnd)
    kind = rnd.choice(["JOIN", "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN"])
    plain: set[str] = set()
    from_ = f"{a.name} x {kind}{{H}} {b.name} y ON {_on('x', 'y', keys, rnd, plain)}"
    aliases = ["x", "y"]
    if shape > 0.65:
        c = _third_table(rnd, a, b, plain)
        kind2 = rnd.choice(["JOIN", "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN"])
        # join the third table to either of the first two, on its distribution columns or not
        to = rnd.choice(aliases)
        keys2 = list(c.dist) if c.dist and rnd.random() < 0.6 else [rnd.choice(KEY_COLUMNS)]
        from_ += f" {kind2}{{H}} {c.name} z ON {_on(to, 'z', keys2, rnd)}"
        aliases.append("z")
    where = " AND ".join(_filter(rnd.choice(aliases), rnd) for _ in range(rnd.randrange(3)))
    select, group = _select(aliases, rnd)
    return Query(f"SELECT {select} FROM {from_}" + (f" WHERE {where}" if where else "") + group)


def _aggregate_then_join_query(rnd: random.Random) -> Query:
    """A join aggregated by the left table's join keys, joined with a third table on them
    (the aggregate keeps the left side's distribution, so the outer join may be colocated)."""
    a, b, keys = _pick_pair(rnd)
    kind = rnd.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN"])
    plain: set[str] = set()
    on = _on('x', 'y', keys, rnd, plain)
    c = _third_table(rnd, a, b, plain)
    groups = ", ".join(f"x.{k}" for k in keys)
    inner = (f"SELECT {', '.join(f'x.{k} AS {k}' for k in keys)}, count(*) AS c, "
             f"sum(y.v) AS sv, count(y.k_str) AS cs FROM {a.name} x {kind}{{H}} {b.name} y "
             f"ON {on}")
    if rnd.random() < 0.3:
        inner += f" WHERE {_filter('x', rnd)}"
    inner += f" GROUP BY {groups}"
    kind2 = rnd.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN"])
    on = " AND ".join(f"q.{k} = z.{k}" for k in keys)
    if rnd.random() < 0.5:
        select, group = "q.*, z.v, z.k_str", ""
    else:
        select, group = "z.k_str, sum(q.c), max(q.sv), count(*)", " GROUP BY z.k_str"
    return Query(f"SELECT {select} FROM ({inner}) q {kind2}{{H}} {c.name} z ON {on}{group}")


def _third_table(rnd: random.Random, a: Table, b: Table, plain: set[str]) -> Table:
    """The third table of a three-way join (`plain`: the keys a and b are joined on directly):
    often one of a's colocate group, so COLOCATE joins above colocated, broadcast and
    bucket-shuffle joins all occur, else any other table."""
    same = [t for t in TABLES if a.group is not None and t.group == a.group]
    if same and rnd.random() < 0.5:
        return rnd.choice(same)  # another table of the group, or a self join
    return rnd.choice([t for t in TABLES if t not in (a, b)])


def _semi_query(rnd: random.Random) -> Query:
    a, b, keys = _pick_pair(rnd)
    k = keys[0]
    inner_where = f" AND {_filter('y', rnd)}" if rnd.random() < 0.4 else ""
    form = rnd.choice(["IN", "NOT IN", "EXISTS", "NOT EXISTS"])
    if form in ("IN", "NOT IN"):
        sub = f"x.{k} {form} (SELECT y.{k} FROM {b.name} y WHERE 1 = 1{inner_where})"
    else:
        corr = " AND ".join(f"y.{c} = x.{c}" for c in keys)
        if rnd.random() < 0.3:
            corr += " AND y.v > x.v"
        sub = f"{form} (SELECT 1 FROM {b.name} y WHERE {corr}{inner_where})"
    r = rnd.random()
    if r < 0.15:  # the subquery's truth value as a column (a mark join)
        return Query(f"SELECT x.k_int, x.v, {sub} AS m FROM {a.name} x")
    if r < 0.3:  # under OR / NOT: a mark join filtered above
        where = rnd.choice([f"({sub} OR {_filter('x', rnd)})", f"NOT ({sub} AND x.v > 2)"])
    else:
        where = sub
    if rnd.random() < 0.4:
        where += f" AND {_filter('x', rnd)}"
    select, group = _select(["x"], rnd)
    return Query(f"SELECT {select} FROM {a.name} x WHERE {where}{group}")


# ---- comparison ------------------------------------------------------------------------------


def _explain_modes(cur, sql: str) -> set[str]:
    cur.execute("EXPLAIN " + sql)
    return set(JOIN_OP.findall("\n".join(str(r[0]) for r in cur.fetchall())))


def _run_seed(server, db: str, seed: int, queries: int) -> collections.Counter:
    rnd = random.Random(seed)
    duck = duckdb.connect()
    conns = {}
    try:
        for name, _hint, setup in VARIANTS:
            key = setup or ()
            if key not in conns:
                c = server.connect(db)
                with c.cursor() as cur:
                    # the tables are small: spread every fragment over the backends anyway, so
                    # each mode really routes rows between instances
                    cur.execute("SET shaledb_small_fragment_rows = 0")
                    for s in setup:
                        cur.execute(s)
                conns[key] = c
        with conns[()].cursor() as cur:
            create_tables(cur, duck, db, rnd)
        planned: collections.Counter = collections.Counter()
        for i in range(queries):
            q = random_query(rnd)
            expected = normalize_rows(duck.execute(q.sql()).fetchall())
            modes_of_query: set[str] = set()
            for name, hint, setup in VARIANTS:
                sql = q.sql(hint)
                with conns[setup or ()].cursor() as cur:
                    cur.execute(sql)
                    got = normalize_rows(cur.fetchall())
                    modes = _explain_modes(cur, sql)
                modes_of_query |= modes
                # a mode the session switched off is never planned
                off = {"disable_colocate_plan": "COLOCATE", "disable_colocate_join": "COLOCATE",
                       "no bucket shuffle": "BUCKET_SHUFFLE"}.get(name)
                assert off not in modes, f"seed={seed} variant '{name}' planned {off}: {sql}"
                assert got == expected, (
                    f"seed={seed} query #{i} variant '{name}' ({'; '.join(setup)}) differs from "
                    f"DuckDB\nSQL: {sql}\nexpected ({len(expected)} rows): {expected[:20]}\n"
                    f"got ({len(got)} rows): {got[:20]}")
            planned.update(modes_of_query)
        return planned
    finally:
        for c in conns.values():
            c.close()
        duck.close()


@pytest.mark.parametrize("seed", property_seeds(DEFAULT_SEEDS))
def test_every_join_mode_returns_the_same_rows(server, make_db, seed: int) -> None:
    db = make_db(f"joinprop{seed}")
    planned = _run_seed(server, db, seed, QUERIES_PER_SEED)
    # the variants must really have exercised every mode, each for many queries
    for mode in MODES:
        assert planned[mode] >= QUERIES_PER_SEED // 5, (
            f"seed={seed}: join mode {mode} planned for only {planned[mode]} of "
            f"{QUERIES_PER_SEED} queries ({dict(planned)})")


def _small_group(cur, db: str, data: dict[str, list[tuple]]) -> duckdb.DuckDBPyConnection:
    """Tables (id INT, v INT): t1 and t2 colocated (4 buckets on id), o outside (3 buckets);
    the same rows in a DuckDB connection, which is returned."""
    duck = duckdb.connect()
    for name, rows in data.items():
        props = f'"colocate_with" = "{db}_g"' if name != "o" else '"replication_num" = "1"'
        cur.execute(f"CREATE TABLE {name} (id INT, v INT) DUPLICATE KEY(id) DISTRIBUTED BY "
                    f"HASH(id) BUCKETS {3 if name == 'o' else 4} PROPERTIES ({props})")
        duck.execute(f"CREATE TABLE {name} (id INT, v INT)")
        cur.execute(f"INSERT INTO {name} VALUES "
                    + ", ".join("(" + ", ".join(_literal(x) for x in r) + ")" for r in rows))
        insert_rows(duck, name, rows)
    return duck


@pytest.mark.parametrize("inner_on, inner_mode", [
    ("t1.v = o.id", "BROADCAST"),  # t1 JOIN o keeps t1's distribution: broadcast ...
    ("t1.id = o.v", "BUCKET_SHUFFLE"),  # ... or bucket shuffle into t1's buckets
])
def test_colocate_join_over_broadcast_join(db_conn, db: str, inner_on: str,
                                           inner_mode: str) -> None:
    cur = db_conn.cursor()
    cur.execute("SET shaledb_small_fragment_rows = 0")  # several instances, even this small
    duck = _small_group(cur, db, {
        "t1": [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (None, 7)],
        "t2": [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (None, 8)],
        "o": [(i, i) for i in range(1, 8)],
    })
    # t1 JOIN o keeps t1's distribution, so the join with t2 is COLOCATE
    sql = ("SELECT s.id, s.v, t2.v FROM t2 JOIN (SELECT t1.id, o.v FROM t1 JOIN o "
           f"ON {inner_on}) s ON s.id = t2.id")
    assert _explain_modes(cur, sql) == {"COLOCATE", inner_mode}
    expected = normalize_rows(duck.execute(sql).fetchall())
    cur.execute(sql)
    assert normalize_rows(cur.fetchall()) == expected, sql


def test_outer_colocate_join_then_aggregate_then_colocate_join(db_conn, db: str) -> None:
    cur = db_conn.cursor()
    cur.execute("SET shaledb_small_fragment_rows = 0")  # several instances, even this small
    duck = _small_group(cur, db, {
        "t1": [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (None, 7)],
        "t2": [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (None, 8), (9, 9), (10, 10), (11, 11),
               (12, 12)],
    })
    sql = ("SELECT a.id, a.c, z.v FROM (SELECT t1.id, count(*) AS c FROM t1 FULL OUTER JOIN t2 "
           "ON t1.id = t2.id GROUP BY t1.id) a LEFT JOIN t2 z ON a.id = z.id")
    # the FULL OUTER join is colocated; its output is not partitioned by t1.id any more (the
    # unmatched t2 rows have a NULL t1.id in every bucket), so the aggregate merges across
    # instances and the outer LEFT JOIN is not colocated
    cur.execute(f"EXPLAIN {sql}")
    ops = [line.split("join op: ")[1] for (line,) in cur.fetchall() if "join op: " in line]
    assert ops == ["LEFT OUTER JOIN(BROADCAST)[]", "FULL OUTER JOIN(COLOCATE[])[]"], ops
    expected = normalize_rows(duck.execute(sql).fetchall())
    cur.execute(sql)
    assert normalize_rows(cur.fetchall()) == expected, sql
