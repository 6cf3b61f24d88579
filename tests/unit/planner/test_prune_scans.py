"""Partition and bucket pruning (planner/rules/prune_scans.py) on real tables.

Each check plans a query against a real StorageEngine (tests/unit/planner/inprocess.py), looks
at the selection recorded on the scan, and proves the pruned plan returns the same rows as the
unpruned plan (rule switched off) and as DuckDB over the same rows.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inprocess import InProcess
from support.duck import insert_rows

from storage.batch import Column
from storage.distribution import bucket_of_rows
from storage.types import INT

OFF = frozenset({"prune_scans"})
DAYS = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(0, 120, 3)]


@pytest.fixture(scope="module")
def db(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[InProcess, duckdb.DuckDBPyConnection]]:
    p = InProcess(Path(tmp_path_factory.mktemp("prune")))
    p.run("CREATE DATABASE d; USE d")
    p.run("""CREATE TABLE r (k INT, dt DATE, v BIGINT) DUPLICATE KEY(k)
        PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-02-01'),
          PARTITION p2 VALUES LESS THAN ('2024-03-01'), PARTITION p3 VALUES LESS THAN ('2024-04-01'),
          PARTITION p4 VALUES LESS THAN MAXVALUE)
        DISTRIBUTED BY HASH(k) BUCKETS 4""")
    p.run("""CREATE TABLE l (k INT, city VARCHAR(10), v BIGINT) DUPLICATE KEY(k)
        PARTITION BY LIST(city) (PARTITION pn VALUES IN ('bj', 'sh'), PARTITION ps VALUES IN ('gz'),
          PARTITION pw VALUES IN ('cd', 'xa'))
        DISTRIBUTED BY HASH(k, city) BUCKETS 3""")
    rnd = random.Random(7)
    rows_r = [(rnd.randrange(40), rnd.choice(DAYS), rnd.randrange(-50, 50)) for _ in range(300)]
    rows_l = [
        (rnd.randrange(40), rnd.choice(["bj", "sh", "gz", "cd", "xa"]), rnd.randrange(100))
        for _ in range(200)
    ]
    p.run("INSERT INTO r VALUES " + ", ".join(f"({k}, '{d}', {v})" for k, d, v in rows_r))
    p.run("INSERT INTO l VALUES " + ", ".join(f"({k}, '{c}', {v})" for k, c, v in rows_l))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE r (k INT, dt DATE, v BIGINT)")
    insert_rows(duck, "r", rows_r)
    duck.execute("CREATE TABLE l (k INT, city VARCHAR, v BIGINT)")
    insert_rows(duck, "l", rows_l)
    yield p, duck
    p.close()


def _sorted(rows) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Rows in a total order (NULLs first), for comparing result sets."""
    return sorted(rows, key=lambda r: tuple((x is not None, x if x is not None else 0) for x in r))


def _check(
    p: InProcess, duck: duckdb.DuckDBPyConnection, where: str, table: str = "r", cols: str = "k, v"
):
    sql = f"SELECT {cols} FROM {table} WHERE {where}"
    (scan,) = p.scans(sql)
    got = _sorted(p.query(sql))
    assert got == _sorted(p.query(sql, OFF)), sql
    assert got == _sorted(tuple(r) for r in duck.execute(sql).fetchall()), sql
    return scan.selection


@pytest.mark.parametrize(
    "where, parts",
    [
        ("dt = '2024-02-10'", ["p2"]),
        ("dt < '2024-02-01'", ["p1"]),
        ("dt <= '2024-02-01'", ["p1", "p2"]),
        ("dt > '2024-03-30'", ["p3", "p4"]),
        ("dt > '2024-03-31'", ["p4"]),  # dates are discrete: p3 ends before 2024-04-01
        ("dt >= '2024-04-01'", ["p4"]),
        ("dt BETWEEN '2024-01-20' AND '2024-02-05'", ["p1", "p2"]),
        ("dt IN ('2024-01-04', '2024-04-03')", ["p1", "p4"]),
        ("dt >= '2024-02-01' AND dt < '2024-03-01'", ["p2"]),
        ("dt < '2024-01-15' OR dt >= '2024-04-10'", ["p1", "p4"]),
        ("(dt = '2024-01-04' OR dt = '2024-03-03') AND v > 0", ["p1", "p3"]),
        ("dt < '2024-01-01'", ["p1"]),
        ("dt = '2024-02-10' AND dt = '2024-03-10'", []),
        ("v > 0", ["p1", "p2", "p3", "p4"]),
        ("dt = '2024-02-10' OR v > 10", ["p1", "p2", "p3", "p4"]),
    ],
)
def test_range_partition_pruning(db, where: str, parts: list[str]) -> None:
    p, duck = db
    sel = _check(p, duck, where)
    assert list(sel.partition_names) == parts
    assert sel.total_partitions == 4 and sel.total_tablets == 4 * len(parts)
    assert len(sel.tablet_ids) == 4 * len(parts)


@pytest.mark.parametrize(
    "where, parts",
    [
        ("city = 'gz'", ["ps"]),
        ("city IN ('bj', 'xa')", ["pn", "pw"]),
        ("city > 'gz'", ["pn", "pw"]),  # 'sh' and 'xa'
        ("city = 'nowhere'", []),
        ("city = 'sh' OR city = 'cd'", ["pn", "pw"]),
    ],
)
def test_list_partition_pruning(db, where: str, parts: list[str]) -> None:
    p, duck = db
    sel = _check(p, duck, where, table="l", cols="k, city, v")
    assert list(sel.partition_names) == parts


def _bucket(values: list[tuple[int, str]] | list[int], buckets: int, with_city: bool) -> set[int]:
    from storage.types import varchar

    if with_city:
        cols = [
            Column.from_physical(INT, [k for k, _ in values]),  # type: ignore[misc]
            Column.from_physical(varchar(10), [c for _, c in values]),
        ]  # type: ignore[misc]
    else:
        cols = [Column.from_physical(INT, list(values))]
    return {int(b) for b in bucket_of_rows(cols, buckets)}


def test_bucket_pruning_equality_and_in(db) -> None:
    p, duck = db
    sel = _check(p, duck, "k = 5")
    assert len(sel.partition_names) == 4 and len(sel.tablet_ids) == 4  # one bucket per partition
    cat = p.engine.catalog
    seqs = {cat_t.bucket_seq for cat_t in cat.all_tablets() if cat_t.tablet_id in sel.tablet_ids}
    assert seqs == _bucket([5], 4, False)
    sel = _check(p, duck, "k IN (5, 6, 7) AND dt < '2024-02-01'")
    assert sel.partition_names == ("p1",)
    seqs = {t.bucket_seq for t in cat.all_tablets() if t.tablet_id in sel.tablet_ids}
    assert seqs == _bucket([5, 6, 7], 4, False)


def test_bucket_pruning_needs_every_distribution_column(db) -> None:
    p, duck = db
    sel = _check(p, duck, "k = 3", table="l", cols="k, city, v")
    assert len(sel.tablet_ids) == 9  # city unbound: every bucket
    sel = _check(p, duck, "k = 3 AND city = 'gz'", table="l", cols="k, city, v")
    assert sel.partition_names == ("ps",)
    seqs = {t.bucket_seq for t in p.engine.catalog.all_tablets() if t.tablet_id in sel.tablet_ids}
    assert seqs == _bucket([(3, "gz")], 3, True) and len(sel.tablet_ids) == 1
    sel = _check(p, duck, "k = 3 OR city = 'gz'", table="l", cols="k, city, v")
    assert len(sel.tablet_ids) == 9  # OR binds nothing


_atoms = st.one_of(
    st.tuples(
        st.sampled_from(["=", "<", "<=", ">", ">="]),
        st.sampled_from(DAYS + [dt.date(2024, 2, 1), dt.date(2024, 3, 1), dt.date(2023, 12, 31)]),
    ).map(lambda t: f"dt {t[0]} '{t[1]}'"),
    st.lists(st.sampled_from(DAYS), min_size=1, max_size=3).map(
        lambda ds: "dt IN (" + ", ".join(f"'{d}'" for d in ds) + ")"
    ),
    st.tuples(st.sampled_from(DAYS), st.sampled_from(DAYS)).map(
        lambda t: f"dt BETWEEN '{min(t)}' AND '{max(t)}'"
    ),
    st.integers(0, 45).map(lambda k: f"k = {k}"),
    st.lists(st.integers(0, 45), min_size=1, max_size=4).map(
        lambda ks: "k IN (" + ", ".join(map(str, ks)) + ")"
    ),
    st.integers(-50, 50).map(lambda v: f"v > {v}"),
)
_preds = st.recursive(
    _atoms,
    lambda inner: st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})"
    ),
    max_leaves=4,
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(where=_preds)
def test_random_predicates_prune_soundly(db, where: str) -> None:
    p, duck = db
    sel = _check(p, duck, where)
    assert sel.total_partitions == 4


# ---- multi-column RANGE partitions ------------------------------------------------------------
@pytest.fixture(scope="module")
def ym(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[InProcess, duckdb.DuckDBPyConnection]]:
    p = InProcess(Path(tmp_path_factory.mktemp("prune_ym")))
    p.run("CREATE DATABASE d; USE d")
    p.run("""CREATE TABLE ym (y INT, m INT, v BIGINT) DUPLICATE KEY(y, m)
        PARTITION BY RANGE(y, m) (
          PARTITION a VALUES LESS THAN ("2023", "7"),
          PARTITION b VALUES LESS THAN ("2024"),
          PARTITION c VALUES LESS THAN ("2024", "7"),
          PARTITION d VALUES LESS THAN MAXVALUE)
        DISTRIBUTED BY HASH(v) BUCKETS 2""")
    rnd = random.Random(5)
    rows = [
        (rnd.choice([2022, 2023, 2024, 2025]), rnd.randrange(1, 13), rnd.randrange(100))
        for _ in range(200)
    ]
    p.run("INSERT INTO ym VALUES " + ", ".join(f"({a}, {b}, {c})" for a, b, c in rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE ym (y INT, m INT, v BIGINT)")
    insert_rows(duck, "ym", rows)
    yield p, duck
    p.close()


@pytest.mark.parametrize(
    "where, parts",
    [
        ("y = 2023 AND m = 3", ["a"]),
        ("y = 2023 AND m >= 7", ["b"]),
        ("y = 2023", ["a", "b"]),
        ("y = 2024 AND m < 7", ["c"]),
        ("y = 2024 AND m = 9", ["d"]),
        ("y = 2022", ["a"]),
        ("y >= 2025", ["d"]),
        ("m = 3", ["a", "c", "d"]),  # b holds only y = 2023, m >= 7 (no INT between 2023 and 2024)
        ("m = 8", ["a", "b", "d"]),  # c holds only y = 2024, m < 7
    ],
)
def test_multi_column_range_pruning(ym, where: str, parts: list[str]) -> None:
    p, duck = ym
    sel = _check(p, duck, where, table="ym", cols="y, m, v")
    assert list(sel.partition_names) == parts


_ym_atoms = st.one_of(
    st.tuples(st.sampled_from(["=", "<", "<=", ">", ">="]), st.integers(2021, 2026)).map(
        lambda t: f"y {t[0]} {t[1]}"
    ),
    st.tuples(st.sampled_from(["=", "<", "<=", ">", ">="]), st.integers(0, 13)).map(
        lambda t: f"m {t[0]} {t[1]}"
    ),
    st.lists(st.integers(2021, 2026), min_size=1, max_size=3).map(
        lambda ys: "y IN (" + ", ".join(map(str, ys)) + ")"
    ),
)
_ym_preds = st.recursive(
    _ym_atoms,
    lambda inner: st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})"
    ),
    max_leaves=4,
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(where=_ym_preds)
def test_random_multi_column_predicates_prune_soundly(ym, where: str) -> None:
    p, duck = ym
    _check(p, duck, where, table="ym", cols="y, m, v")


# ---- three-column RANGE partitions: every column prunes --------------------------------------
# (name, lower, upper) as the DDL below declares them; None = MIN / MAXVALUE.
T3_PARTS = [
    ("p1", None, (1, 5, 10)),
    ("p2", (1, 5, 10), (1, 8)),
    ("p3", (1, 8), (2, 3, 7)),
    ("p4", (2, 3, 7), (3,)),
    ("p5", (3, 1, 1), (3, 1, 5)),
    ("p6", (4,), (5, 5, 5)),
]
# every constant the tests use lies inside the domain
T3_DOMAIN = [(a, b, c) for a in range(-1, 14) for b in range(-1, 14) for c in range(-1, 14)]


def _t3_partition(key: tuple[int, int, int]) -> str | None:
    """Reference routing, independent of storage/partition.py: a bound with m values compares
    with the key's first m values (missing values are MIN)."""
    for name, lo, hi in T3_PARTS:
        if (lo is None or key[: len(lo)] >= lo) and (hi is None or key[: len(hi)] < hi):
            return name
    return None


@pytest.fixture(scope="module")
def t3(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[InProcess, duckdb.DuckDBPyConnection]]:
    p = InProcess(Path(tmp_path_factory.mktemp("prune_t3")))
    p.run("CREATE DATABASE d; USE d")
    p.run("""CREATE TABLE t3 (a INT, b INT, c INT, v BIGINT) DUPLICATE KEY(a, b, c)
        PARTITION BY RANGE(a, b, c) (
          PARTITION p1 VALUES LESS THAN ("1", "5", "10"),
          PARTITION p2 VALUES LESS THAN ("1", "8"),
          PARTITION p3 VALUES [("1", "8"), ("2", "3", "7")),
          PARTITION p4 VALUES LESS THAN ("3"),
          PARTITION p5 VALUES [("3", "1", "1"), ("3", "1", "5")),
          PARTITION p6 VALUES [("4"), ("5", "5", "5")))
        DISTRIBUTED BY HASH(v) BUCKETS 2""")
    rnd = random.Random(11)
    keys = [k for k in T3_DOMAIN if _t3_partition(k) is not None]
    rows = [(*rnd.choice(keys), rnd.randrange(100)) for _ in range(400)]
    rows += [(1, 9, None, 1), (0, None, None, 2), (1, 5, None, 3)]  # NULL sorts lowest
    p.run("INSERT INTO t3 VALUES " + ", ".join(
        "(" + ", ".join("NULL" if x is None else str(x) for x in r) + ")" for r in rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE t3 (a INT, b INT, c INT, v BIGINT)")
    insert_rows(duck, "t3", rows)
    yield p, duck
    p.close()


@pytest.mark.parametrize(
    "where, parts",
    [
        ("a = 1 AND b = 5 AND c >= 10", ["p2"]),  # the third column decides
        ("a = 1 AND b = 5 AND c < 10", ["p1"]),
        ("a = 1 AND b = 5 AND c = 10", ["p2"]),
        ("a = 1 AND b = 5", ["p1", "p2"]),
        ("a = 1 AND b = 9", ["p3"]),
        ("a = 2 AND b = 3 AND c <= 6", ["p3"]),
        ("a = 2 AND b = 3 AND c > 6", ["p4"]),
        ("a = 3 AND b = 1 AND c BETWEEN 2 AND 3", ["p5"]),
        ("a = 3 AND b = 1 AND c >= 5", []),  # the hole between p5 and p6
        ("a = 3 AND b = 2", []),
        ("a = 5 AND b = 5 AND c IN (4, 5)", ["p6"]),
        ("a = 1 AND b IN (4, 9)", ["p1", "p3"]),
        ("a = 1 AND b <= 4", ["p1"]),
        ("c = 3", ["p1", "p2", "p3", "p4", "p5", "p6"]),
        ("(a = 1 AND b = 5 AND c = 12) OR (a = 3 AND b = 1 AND c = 1)", ["p2", "p5"]),
    ],
)
def test_three_column_range_pruning(t3, where: str, parts: list[str]) -> None:
    p, duck = t3
    sel = _check(p, duck, where, table="t3", cols="a, b, c, v")
    assert list(sel.partition_names) == parts


def _t3_sql(conj: list[tuple[str, str, tuple[int, ...]]]) -> str:
    parts = []
    for col, op, vals in conj:
        parts.append(f"{col} IN ({', '.join(map(str, vals))})" if op == "IN"
                     else f"{col} {op} {vals[0]}")
    return " AND ".join(parts)


def _t3_holds(key: tuple[int, int, int], conj: list[tuple[str, str, tuple[int, ...]]]) -> bool:
    for col, op, vals in conj:
        x = key["abc".index(col)]
        ok = {"=": x == vals[0], "<=": x <= vals[0], ">=": x >= vals[0], "IN": x in vals}[op]
        if not ok:
            return False
    return True


# a prefix of equalities then one comparison / IN on the next column: pruning must be exact
# (inclusive ops only, so the integer domain and the value intervals agree at the edges)
_t3_exact = st.integers(0, 3).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-1, 6), min_size=n, max_size=n),
        st.sampled_from(["=", "<=", ">=", "IN"]),
        st.lists(st.integers(-1, 12), min_size=1, max_size=3),
    )
)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=_t3_exact)
def test_three_column_pruning_is_exact_for_prefix_predicates(t3, spec) -> None:
    p, duck = t3
    eqs, op, vals = spec
    conj = [(c, "=", (v,)) for c, v in zip("abc", eqs)]
    if len(eqs) < 3:
        conj.append(("abc"[len(eqs)], op, tuple(vals) if op == "IN" else (vals[0],)))
    if not conj:
        return
    sel = _check(p, duck, _t3_sql(conj), table="t3", cols="a, b, c, v")
    want = {_t3_partition(k) for k in T3_DOMAIN if _t3_holds(k, conj)} - {None}
    assert set(sel.partition_names) == want, _t3_sql(conj)


_t3_atoms = st.tuples(
    st.sampled_from("abc"), st.sampled_from(["=", "<", "<=", ">", ">="]), st.integers(-1, 12)
).map(lambda t: f"{t[0]} {t[1]} {t[2]}")
_t3_preds = st.recursive(
    _t3_atoms,
    lambda inner: st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})"
    ),
    max_leaves=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(where=_t3_preds)
def test_random_three_column_predicates_prune_soundly(t3, where: str) -> None:
    p, duck = t3
    _check(p, duck, where, table="t3", cols="a, b, c, v")


# ---- multi-column LIST partitions: a point box per value tuple --------------------------------
@pytest.fixture(scope="module")
def l2(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[InProcess, duckdb.DuckDBPyConnection]]:
    p = InProcess(Path(tmp_path_factory.mktemp("prune_l2")))
    p.run("CREATE DATABASE d; USE d")
    p.run("""CREATE TABLE l2 (k INT, city VARCHAR(10), v BIGINT) DUPLICATE KEY(k)
        PARTITION BY LIST(city, k) (
          PARTITION x VALUES IN (("bj", "1"), ("sh", "2")),
          PARTITION y VALUES IN (("bj", "2")),
          PARTITION z VALUES IN (("gz", "1"), ("gz", "3")))
        DISTRIBUTED BY HASH(k) BUCKETS 2""")
    rnd = random.Random(3)
    keys = [("bj", 1), ("sh", 2), ("bj", 2), ("gz", 1), ("gz", 3)]
    rows = [(k, c, rnd.randrange(50)) for c, k in (rnd.choice(keys) for _ in range(100))]
    p.run("INSERT INTO l2 VALUES " + ", ".join(f"({k}, '{c}', {v})" for k, c, v in rows))
    duck = duckdb.connect()
    duck.execute("CREATE TABLE l2 (k INT, city VARCHAR, v BIGINT)")
    insert_rows(duck, "l2", rows)
    yield p, duck
    p.close()


@pytest.mark.parametrize(
    "where, parts",
    [
        ("city = 'bj'", ["x", "y"]),
        ("city = 'bj' AND k = 2", ["y"]),
        ("k = 1", ["x", "z"]),
        ("k >= 2 AND city = 'gz'", ["z"]),
        ("k > 1 AND city = 'sh'", ["x"]),
        ("city = 'sh' AND k = 1", []),
        ("(city = 'bj' AND k = 2) OR k = 3", ["y", "z"]),
    ],
)
def test_multi_column_list_pruning(l2, where: str, parts: list[str]) -> None:
    p, duck = l2
    sel = _check(p, duck, where, table="l2", cols="k, city, v")
    assert list(sel.partition_names) == parts
