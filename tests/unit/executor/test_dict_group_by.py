"""GROUP BY on dictionary codes (storage/batch.py DictColumn, executor/grouped_state.py).

Random string columns (NULLs, empty strings, unicode, a NUL byte) are written into several
segments whose pages switch between DICT (repetitive values) and PLAIN (all-distinct values),
each segment with its own dictionaries, and read back through the segment iterator (with and
without a page cache, with a predicate that keeps most rows or one that keeps few, so both the
column-wise path with a merged dictionary per segment and the page-wise path run). The batches
are grouped by a string key, two string keys, and a string plus an integer key, in one
aggregate, in several instances combined, and in two phases (partial states sent as Batches
and merged, as across an exchange); COUNT(DISTINCT) takes the numpy path. Every result equals a
pure-Python GROUP BY and DuckDB's. Deterministic tests prove the encoded path is taken: scan
batches carry DictColumns, and grouping them never decodes their strings.
"""

from __future__ import annotations

import tempfile
import threading
import zlib
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.operators import BatchesSource

from executor.grouped_state import GroupedState
from executor.hash_aggregate import HashAggregate
from executor.operator import ExecContext, Operator
from executor.two_phase_aggregate import MergeAggregate, PartialAggregate
from planner.aggregate_phase import AggregateExprs
from sql.binder.expressions import AggregateCall, ColumnRef
from storage import types as T
from storage.batch import Batch, Column, DictColumn
from storage.page_cache import PageCache
from storage.predicates import ColumnPredicate
from storage.segment import SegmentReader, write_segment, writer

NAMES = ("k", "s", "t", "g")
TYPES = {"k": T.BIGINT, "s": T.varchar(40), "t": T.STRING, "g": T.INT}
POOL = ["", "a", "AIR", "ASIA", "b", "ab", "zz", "é", "日本", "🙂", "a\x00", "a\x00b", "ÆØÅ"]
K, S, TT, G = (ColumnRef(n, TYPES[n]) for n in NAMES)
KEY_SETS = {"s": (("s", S),), "s,t": (("s", S), ("t", TT)), "s,g": (("s", S), ("g", G))}
AGGS = (("c", AggregateCall("count", (), False, T.BIGINT)),
        ("ct", AggregateCall("count", (TT,), False, T.BIGINT)),
        ("sk", AggregateCall("sum", (K,), False, T.BIGINT)),
        ("mn", AggregateCall("min", (K,), False, T.BIGINT)),
        ("mx", AggregateCall("max", (G,), False, T.INT)))


def run(op: Operator) -> list[Batch]:
    op.open(ExecContext(cancel=threading.Event()))
    try:
        return list(op.batches())
    finally:
        op.close()


def rows_of(batches: list[Batch]) -> list[tuple[object, ...]]:
    return [r for b in batches for r in b.rows()]


def ordered(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return sorted(rows, key=lambda r: [(v is None, v) for v in r])


def column_values(rng: np.random.Generator, n: int, start: int) -> list[str | None]:
    """Runs of repetitive values (DICT pages) and all-distinct values (PLAIN pages)."""
    out: list[str | None] = []
    while len(out) < n:
        m = int(rng.integers(1, 300))
        null = float(rng.choice([0.0, 0.2, 1.0 if rng.random() < 0.1 else 0.5]))
        if rng.random() < 0.6:
            pool = list(rng.choice(POOL, size=int(rng.integers(1, 6))))
            vals = [str(rng.choice(pool)) for _ in range(m)]
        else:
            vals = [f"{rng.choice(POOL)}#{start + len(out) + i}" for i in range(m)]
        out.extend(None if rng.random() < null else v for v in vals)
    return out[:n]


@st.composite
def segments(draw: st.DrawFn) -> list[Batch]:
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    out = []
    start = 0
    for _ in range(draw(st.integers(1, 3))):
        n = int(rng.integers(1, 700))
        s = column_values(rng, n, start)
        t = column_values(rng, n, start + 7)
        g = [None if rng.random() < 0.1 else int(x) for x in rng.integers(-2, 3, n)]
        out.append(Batch(NAMES, (Column(T.BIGINT, np.arange(start, start + n)),
                                 Column.from_physical(TYPES["s"], s),
                                 Column.from_physical(T.STRING, t),
                                 Column.from_physical(T.INT, g))))
        start += n
    return out


def scan(paths: list[Path], preds: list[ColumnPredicate], cache: PageCache | None,
         batch_size: int) -> list[Batch]:
    out = []
    for path in paths:
        with SegmentReader(path, TYPES, page_cache=cache) as reader:
            out.extend(b for b in reader.read(list(NAMES), preds, batch_size=batch_size)
                       if b.num_rows)
    return out


def reference(rows: list[tuple[object, ...]], keys: str) -> list[tuple[object, ...]]:
    """Pure-Python GROUP BY of rows (k, s, t, g) with the AGGS."""
    pos = [NAMES.index(k) for k in keys.split(",")]
    groups: dict[tuple[object, ...], list[tuple[object, ...]]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[p] for p in pos)].append(r)
    out = []
    for key, rs in groups.items():
        gs = [r[3] for r in rs if r[3] is not None]
        out.append(key + (len(rs), sum(r[2] is not None for r in rs), sum(r[0] for r in rs),
                          min(r[0] for r in rs), max(gs) if gs else None))
    return ordered(out)


def duckdb_rows(rows: list[tuple[object, ...]], keys: str) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    con.execute("CREATE TABLE x (k BIGINT, s VARCHAR, t VARCHAR, g INTEGER)")
    if rows:
        con.executemany("INSERT INTO x VALUES (?, ?, ?, ?)", rows)
    got = con.execute(f"SELECT {keys}, count(*), count(t), sum(k), min(k), max(g) FROM x "
                      f"GROUP BY {keys}").fetchall()
    return ordered([tuple(int(v) if hasattr(v, "as_integer_ratio") and not isinstance(
        v, (int, float)) else v for v in r) for r in got])


def two_phase(batches: list[Batch], plan: AggregateExprs, instances: int) -> list[Batch]:
    """Partial aggregates over `instances` shares of the input, their state Batches split by
    group and merged by two merging instances, as across a hash exchange."""
    states: list[Batch] = []
    for i in range(instances):
        states.extend(run(PartialAggregate(plan, BatchesSource(batches[i::instances]))))
    nkeys = len(plan.group_by)
    shares: list[list[Batch]] = [[], []]
    for state in states:
        # every instance sends a group to the same merging instance: split by the key values
        share = np.array([zlib.crc32(repr(r[:nkeys]).encode()) % 2 for r in state.rows()])
        for j in range(2):
            part = np.flatnonzero(share == j)
            if len(part):
                shares[j].append(state.take(part))
    return [b for share in shares for b in run(MergeAggregate(plan, BatchesSource(share)))]


@settings(max_examples=20, deadline=None)
@given(segs=segments(), page_size=st.sampled_from([96, 700, 65536]),
       batch_size=st.sampled_from([7, 300, 65536]), cached=st.booleans(),
       selective=st.booleans(), keys=st.sampled_from(sorted(KEY_SETS)))
def test_group_by_dictionary_codes_equals_python_and_duckdb(
        segs: list[Batch], page_size: int, batch_size: int, cached: bool, selective: bool,
        keys: str) -> None:
    all_rows = [r for b in segs for r in b.rows()]
    total = len(all_rows)
    # selective: few rows survive (the page-wise path); else most (the merged dictionary)
    bound = total // 10 if selective else total
    preds = [ColumnPredicate("k", "<", (bound,))] if selective else []
    rows = [r for r in all_rows if r[0] < bound]  # type: ignore[operator]
    expected = reference(rows, keys)
    assert duckdb_rows(rows, keys) == expected
    plan = AggregateExprs(KEY_SETS[keys], AGGS)
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)
        paths = []
        for i, b in enumerate(segs):
            paths.append(Path(d) / f"seg-{i}.seg")
            write_segment(paths[-1], b, ["k"], 1)
        cache = PageCache(1 << 24) if cached else None
        for _ in range(2 if cached else 1):  # the second pass reads cached merged codes
            batches = scan(paths, preds, cache, batch_size)
            assert ordered(rows_of(batches)) == ordered(rows)
            one = run(HashAggregate(plan, BatchesSource(batches)))
            assert ordered(rows_of(one)) == expected
            for instances in (1, 3):
                assert ordered(rows_of(two_phase(batches, plan, instances))) == expected
            # parallel partial aggregation: twins combined into one state
            twins = [GroupedState(plan) for _ in range(2)]
            for i, b in enumerate(batches):
                twins[i % 2].sink([b.column(n) for n, _ in KEY_SETS[keys]],
                                  [None, b.column("t"), b.column("k"), b.column("k"),
                                   b.column("g")], b.num_rows)
            twins[0].combine(twins[1])
            cols = twins[0].finalize()
            got = [] if cols is None else Batch(plan.names, tuple(cols)).rows()
            assert ordered(got) == expected


@settings(max_examples=15, deadline=None)
@given(segs=segments(), page_size=st.sampled_from([96, 65536]))
def test_count_distinct_and_order_on_codes(segs: list[Batch], page_size: int) -> None:
    """COUNT(DISTINCT) (the numpy path: keys factorized on codes) equals Python's."""
    rows = [r for b in segs for r in b.rows()]
    plan = AggregateExprs((("s", S),), (("d", AggregateCall("count", (TT,), True, T.BIGINT)),))
    expected: dict[object, set[object]] = defaultdict(set)
    for r in rows:
        expected[r[1]]
        if r[2] is not None:
            expected[r[1]].add(r[2])
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)
        paths = []
        for i, b in enumerate(segs):
            paths.append(Path(d) / f"seg-{i}.seg")
            write_segment(paths[-1], b, ["k"], 1)
        batches = scan(paths, [], PageCache(1 << 24), 65536)
        got = rows_of(run(HashAggregate(plan, BatchesSource(batches))))
    assert ordered(got) == ordered([(k, len(v)) for k, v in expected.items()])


@pytest.fixture(scope="module")
def dict_segments(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two segments whose `s` and `t` pages are all DICT, with different dictionaries."""
    d = tmp_path_factory.mktemp("dictgroup")
    paths = []
    for i, pool in enumerate((["AIR", "MAIL", "", "日本"], ["RAIL", "AIR", "a\x00"])):
        n = 5000
        s: list[str | None] = [None if j % 11 == 0 else pool[j % len(pool)] for j in range(n)]
        t = [pool[(j // 3) % len(pool)] for j in range(n)]
        batch = Batch(NAMES, (Column(T.BIGINT, np.arange(i * n, (i + 1) * n)),
                              Column.from_physical(TYPES["s"], s),
                              Column.from_physical(T.STRING, t),
                              Column(T.INT, np.arange(n, dtype=np.int32) % 3)))
        paths.append(d / f"seg-{i}.seg")
        write_segment(paths[-1], batch, ["k"], 1)
    return paths


def test_scan_batches_carry_dictionary_codes(dict_segments: list[Path]) -> None:
    batches = scan(dict_segments, [], PageCache(1 << 24), 1024)
    assert batches and all(isinstance(b.column("s"), DictColumn)
                           and isinstance(b.column("t"), DictColumn) for b in batches)
    # a predicate column's rows leave as codes too
    batches = scan(dict_segments, [ColumnPredicate("s", "!=", ("AIR",))], None, 1024)
    assert batches and all(isinstance(b.column("s"), DictColumn) for b in batches)


def test_grouping_codes_never_decodes_the_strings(dict_segments: list[Path]) -> None:
    batches = scan(dict_segments, [], PageCache(1 << 24), 1024)
    plan = AggregateExprs(KEY_SETS["s,t"], AGGS)
    state = GroupedState(plan)
    for b in batches:
        state.sink([b.column("s"), b.column("t")],
                   [None, b.column("t"), b.column("k"), b.column("k"), b.column("g")],
                   b.num_rows)
    assert not any(b.column(n).is_decoded for b in batches for n in ("s", "t")
                   if isinstance(b.column(n), DictColumn))
    cols = state.finalize()
    assert cols is not None
    got = Batch(plan.names, tuple(cols)).rows()
    expected = reference([r for b in batches for r in b.rows()], "s,t")
    assert ordered(got) == expected
    assert len(got) == len({(r[0], r[1]) for r in got})
