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
    duck.executemany("INSERT INTO r VALUES (?, ?, ?)", rows_r)
    duck.execute("CREATE TABLE l (k INT, city VARCHAR, v BIGINT)")
    duck.executemany("INSERT INTO l VALUES (?, ?, ?)", rows_l)
    yield p, duck
    p.close()


def _check(
    p: InProcess, duck: duckdb.DuckDBPyConnection, where: str, table: str = "r", cols: str = "k, v"
):
    sql = f"SELECT {cols} FROM {table} WHERE {where}"
    (scan,) = p.scans(sql)
    got = sorted(p.query(sql))
    assert got == sorted(p.query(sql, OFF)), sql
    assert got == sorted(tuple(r) for r in duck.execute(sql).fetchall()), sql
    return scan.selection


@pytest.mark.parametrize(
    "where, parts",
    [
        ("dt = '2024-02-10'", ["p2"]),
        ("dt < '2024-02-01'", ["p1"]),
        ("dt <= '2024-02-01'", ["p1", "p2"]),
        ("dt > '2024-03-31'", ["p3", "p4"]),
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
    duck.executemany("INSERT INTO ym VALUES (?, ?, ?)", rows)
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
        ("m = 3", ["a", "b", "c", "d"]),
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
