"""Registry aggregates as window functions (executor/window_aggregates.py): COLLECT_LIST,
ARRAY_AGG, COUNT_IF, BOOL_OR, MAX_BY, GROUP_CONCAT, PERCENTILE, STDDEV_SAMP ... OVER (PARTITION
BY .. ORDER BY .. [ROWS ..]) on random data with NULLs, against a Python reference per frame
(and DuckDB's quantile_cont / stddev_samp for the numeric ones)."""

from __future__ import annotations

import json
import math
import random

import duckdb
import pytest


@pytest.fixture(scope="module")
def window_rows() -> list[tuple[int, int, int | None]]:
    rng = random.Random(11)
    return [(i, rng.randint(0, 3), None if rng.random() < 0.15 else rng.randint(-9, 9))
            for i in range(120)]


def _load(db_conn, rows: list[tuple[int, int, int | None]], table: str) -> None:
    cur = db_conn.cursor()
    cur.execute(f"CREATE TABLE IF NOT EXISTS {table} (id INT, g INT, v INT) DUPLICATE KEY(id) "
                "DISTRIBUTED BY HASH(id) BUCKETS 3 PROPERTIES ('replication_num'='1')")
    cur.execute(f"TRUNCATE TABLE {table}")
    cur.execute(f"INSERT INTO {table} VALUES " + ", ".join(
        f"({i}, {g}, {'NULL' if v is None else v})" for i, g, v in rows))


def _frames(rows, lo_off: int | None, hi_off: int | None):
    """Per id: the rows of its frame (partition g ordered by id), ROWS lo_off..hi_off
    (None = unbounded)."""
    out = {}
    for g in {r[1] for r in rows}:
        part = sorted((r for r in rows if r[1] == g), key=lambda r: r[0])
        for j, r in enumerate(part):
            lo = 0 if lo_off is None else max(0, j + lo_off)
            hi = len(part) if hi_off is None else min(len(part), j + hi_off + 1)
            out[r[0]] = part[lo:hi]
    return out


def test_collecting_and_boolean_aggregates_over_frames(db_conn, window_rows) -> None:
    _load(db_conn, window_rows, "win_agg")
    cur = db_conn.cursor()
    cur.execute(
        "SELECT id, collect_list(v) OVER (PARTITION BY g ORDER BY id), "
        "array_agg(v) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING),"
        " count_if(v > 0) OVER (PARTITION BY g), bool_or(v > 7) OVER (PARTITION BY g ORDER BY id),"
        " max_by(id, v) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 3 PRECEDING AND CURRENT ROW),"
        " group_concat(cast(v as string), '|') OVER (PARTITION BY g ORDER BY id "
        "ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING) "
        "FROM win_agg ORDER BY id")
    got = cur.fetchall()
    running = _frames(window_rows, None, 0)
    sliding = _frames(window_rows, -2, 1)
    whole = _frames(window_rows, None, None)
    last4 = _frames(window_rows, -3, 0)
    ahead = _frames(window_rows, 0, 2)
    assert len(got) == len(window_rows)
    for id_, clist, aagg, cif, bor, mby, gcat in got:
        vals = [r[2] for r in running[id_] if r[2] is not None]
        assert json.loads(clist) == vals
        assert json.loads(aagg) == [r[2] for r in sliding[id_]]
        assert cif == sum(1 for r in whole[id_] if r[2] is not None and r[2] > 0)
        flags = [r[2] > 7 for r in running[id_] if r[2] is not None]
        assert bor == (None if not flags else int(any(flags)))
        cands = [r for r in last4[id_] if r[2] is not None]
        if cands:
            best = max(r[2] for r in cands)
            assert mby in {r[0] for r in cands if r[2] == best}
        else:
            assert mby is None
        texts = [str(r[2]) for r in ahead[id_] if r[2] is not None]
        assert gcat == ("|".join(texts) if texts else None)


def test_numeric_aggregates_over_partitions_match_duckdb(db_conn, window_rows) -> None:
    _load(db_conn, window_rows, "win_num")
    cur = db_conn.cursor()
    cur.execute("SELECT id, percentile(v, 0.25) OVER (PARTITION BY g), "
                "stddev_samp(v) OVER (PARTITION BY g ORDER BY id), "
                "percentile(v, 0.5) OVER (ORDER BY id ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING) "
                "FROM win_num ORDER BY id")
    ours = cur.fetchall()
    duck = duckdb.connect()
    try:
        duck.execute("CREATE TABLE t (id INT, g INT, v INT)")
        duck.executemany("INSERT INTO t VALUES (?, ?, ?)", window_rows)
        theirs = duck.execute(
            "SELECT id, quantile_cont(v, 0.25) OVER (PARTITION BY g), "
            "stddev_samp(v) OVER (PARTITION BY g ORDER BY id), "
            "quantile_cont(v, 0.5) OVER (ORDER BY id ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING) "
            "FROM t ORDER BY id").fetchall()
    finally:
        duck.close()
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a[0] == b[0]
        for x, y in zip(a[1:], b[1:]):
            if y is None or (isinstance(y, float) and math.isnan(y)):
                assert x is None, (a, b)
            else:
                assert x == pytest.approx(y, rel=1e-9, abs=1e-9), (a, b)


def test_window_aggregate_of_group_by_results(db_conn, window_rows) -> None:
    """An aggregate inside the window function's argument is bound in the GROUP BY first."""
    _load(db_conn, window_rows, "win_grp")
    cur = db_conn.cursor()
    cur.execute("SELECT g, collect_list(count(*)) OVER (ORDER BY g), "
                "max_by(g, sum(v)) OVER () FROM win_grp GROUP BY g ORDER BY g")
    got = cur.fetchall()
    counts = {g: sum(1 for r in window_rows if r[1] == g) for g in {r[1] for r in window_rows}}
    sums = {g: sum(r[2] for r in window_rows if r[1] == g and r[2] is not None) for g in counts}
    best = max(sums.values())
    order = sorted(counts)
    for j, (g, lst, mby) in enumerate(got):
        assert g == order[j]
        assert json.loads(lst) == [counts[x] for x in order[:j + 1]]
        assert sums[mby] == best


def test_distinct_window_aggregate_is_refused(db_conn, window_rows) -> None:
    _load(db_conn, window_rows, "win_dst")
    cur = db_conn.cursor()
    with pytest.raises(Exception, match="DISTINCT in window function COLLECT_LIST"):
        cur.execute("SELECT collect_list(DISTINCT v) OVER () FROM win_dst")
