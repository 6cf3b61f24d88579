"""Hash aggregate and key encoding against a plain-Python GROUP BY reference."""

from __future__ import annotations

import random
import threading
from collections import defaultdict

import numpy as np
import pytest
from support.operators import BatchesSource

import executor.hash_aggregate as hash_aggregate_module
from executor.hash_aggregate import HashAggregate
from executor.keys import column_codes, group_codes
from executor.operator import ExecContext
from planner.logical import LogicalAggregate, LogicalValues
from sql.binder.expressions import AggregateCall, ColumnRef
from storage.batch import Batch, Column
from storage.types import BIGINT, DOUBLE, STRING, decimal


def run_agg(batches: list[Batch], group_by,  # type: ignore[no-untyped-def]
            aggregates) -> list[tuple]:
    dummy = LogicalValues(batches[0].names if batches else ("k",), (BIGINT,), ())
    plan = LogicalAggregate(dummy, tuple(group_by), tuple(aggregates))
    op = HashAggregate(plan, BatchesSource(batches))
    op.open(ExecContext(cancel=threading.Event()))
    rows: list[tuple] = []
    for b in op.batches():
        rows.extend(b.rows())
    op.close()
    return rows


def make_batches(rows: list[tuple], size: int) -> list[Batch]:
    out = []
    for i in range(0, len(rows), size):
        chunk = rows[i: i + size]
        out.append(Batch(("k", "s", "v", "m"), (
            Column.from_physical(BIGINT, [r[0] for r in chunk]),
            Column.from_physical(STRING, [r[1] for r in chunk]),
            Column.from_physical(DOUBLE, [r[2] for r in chunk]),
            Column.from_physical(decimal(10, 2), [r[3] for r in chunk]),
        )))
    return out


def random_rows(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    return [(rng.choice([None, 1, 2, 3, -5]), rng.choice([None, "a", "b", "", "bb"]),
             rng.choice([None, rng.uniform(-10, 10)]), rng.choice([None, rng.randint(-999, 999)]))
            for _ in range(n)]


K, S, V, M = (ColumnRef("k", BIGINT), ColumnRef("s", STRING), ColumnRef("v", DOUBLE),
              ColumnRef("m", decimal(10, 2)))


def reference(rows: list[tuple]) -> dict[tuple, list]:  # type: ignore[type-arg]
    groups: dict[tuple, list] = defaultdict(list)  # type: ignore[type-arg]
    for r in rows:
        groups[(r[0], r[1])].append(r)
    return groups


@pytest.mark.parametrize("batch_size", [1, 7, 1000])
@pytest.mark.parametrize("compact", [False, True])
def test_group_by_two_keys_all_aggregates(batch_size: int, compact: bool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if compact:
        monkeypatch.setattr(hash_aggregate_module, "_COMPACT_ROWS", 5)
    rows = random_rows(300, batch_size)
    aggs = [
        ("c", AggregateCall("count", (), False, BIGINT)),
        ("cv", AggregateCall("count", (V,), False, BIGINT)),
        ("sv", AggregateCall("sum", (V,), False, DOUBLE)),
        ("sm", AggregateCall("sum", (M,), False, decimal(38, 2))),
        ("mn", AggregateCall("min", (M,), False, decimal(10, 2))),
        ("mx", AggregateCall("max", (V,), False, DOUBLE)),
        ("am", AggregateCall("avg", (M,), False, decimal(38, 4))),
        ("dm", AggregateCall("count", (M,), True, BIGINT)),
        ("ds", AggregateCall("sum", (M,), True, decimal(38, 2))),
    ]
    got = run_agg(make_batches(rows, batch_size), [("gk", K), ("gs", S)], aggs)
    ref = reference(rows)
    assert len(got) == len(ref)
    for row in got:
        g = ref[(row[0], row[1])]
        vs = [r[2] for r in g if r[2] is not None]
        ms = [r[3] for r in g if r[3] is not None]
        assert row[2] == len(g)
        assert row[3] == len(vs)
        assert (row[4] is None) == (not vs) and (not vs or row[4] == pytest.approx(sum(vs)))
        assert row[5] == (sum(ms) if ms else None)
        assert row[6] == (min(ms) if ms else None)
        assert row[7] == (max(vs) if vs else None)
        if ms:
            exact = sum(ms) * 100 / len(ms)  # scale 2 -> 4
            assert abs(row[8] - exact) <= 0.5
        else:
            assert row[8] is None
        assert row[9] == len(set(ms))
        assert row[10] == (sum(set(ms)) if ms else None)


def test_global_aggregate_on_empty_input_gives_one_row() -> None:
    aggs = [("c", AggregateCall("count", (), False, BIGINT)),
            ("s", AggregateCall("sum", (V,), False, DOUBLE)),
            ("d", AggregateCall("count", (V,), True, BIGINT)),
            ("m", AggregateCall("min", (S,), False, STRING))]
    assert run_agg([], [], aggs) == [(0, None, 0, None)]
    assert run_agg([], [("gk", K)], aggs) == []


def test_null_keys_form_one_group_and_strings_min_max() -> None:
    rows = [(None, "x", 1.0, 1), (None, "a", 2.0, 2), (1, None, 3.0, 3), (1, "b", None, None)]
    aggs = [("mn", AggregateCall("min", (S,), False, STRING)),
            ("mx", AggregateCall("max", (S,), False, STRING))]
    got = run_agg(make_batches(rows, 2), [("gk", K)], aggs)
    assert sorted(got, key=repr) == sorted([(None, "a", "x"), (1, "b", "b")], key=repr)


# ---- key encoding --------------------------------------------------------------------------
def test_column_codes_follow_byte_order_and_separate_null() -> None:
    vals = ["b", "a\x00", "a", None, "", "ab", "a"]
    col = Column.from_physical(STRING, vals)
    codes, card = column_codes(col)
    assert card == 6  # 5 distinct values + NULL
    non_null = [(v, c) for v, c in zip(vals, codes.tolist()) if v is not None]
    by_code = sorted(non_null, key=lambda x: x[1])
    assert [v for v, _ in by_code] == sorted([v for v, _ in non_null], key=lambda s: s.encode())
    assert codes[3] == card - 1


def test_column_codes_long_strings_use_object_path() -> None:
    vals = ["x" * 100 + "b", "x" * 100 + "a", "x" * 100 + "b"]
    codes, card = column_codes(Column.from_physical(STRING, vals))
    assert card == 2 and codes.tolist() == [1, 0, 1]


def test_group_codes_composite_keys() -> None:
    a = Column.from_physical(BIGINT, [1, 1, 2, None, 1])
    b = Column.from_physical(STRING, ["x", "y", "x", "x", "x"])
    codes, groups, first = group_codes([a, b], 5)
    assert groups == 4
    assert codes[0] == codes[4]
    assert len(set(codes.tolist())) == 4
    assert sorted(first.tolist()) == [0, 1, 2, 3]
    # numpy-only reference: tuples of the two columns
    ref = {}
    for i, key in enumerate(zip(a.to_pylist(), b.to_pylist())):
        ref.setdefault(key, codes[i])
        assert ref[key] == codes[i]
    assert np.array_equal(np.sort(np.unique(codes)), np.arange(groups))
