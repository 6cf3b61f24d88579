"""Sort and Limit operators against Python's sorted() with MySQL NULL ordering."""

from __future__ import annotations

import functools
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.operators import BatchesSource

from executor.limit import Limit
from executor.operator import ExecContext, Operator
from executor.sort import Sort
from planner.logical import LogicalSort, LogicalValues, SortKey
from sql.binder.expressions import ColumnRef
from storage.batch import Batch, Column
from storage.types import BIGINT, DOUBLE, STRING


def to_batches(rows: list[tuple], size: int) -> list[Batch]:  # type: ignore[type-arg]
    types = (BIGINT, STRING, DOUBLE)
    return [Batch(("a", "s", "x"), tuple(Column.from_physical(t, [r[i] for r in rows[j: j + size]])
                                         for i, t in enumerate(types)))
            for j in range(0, len(rows), size)]


def run(op: Operator) -> list[tuple]:  # type: ignore[type-arg]
    op.open(ExecContext(cancel=threading.Event(), batch_size=5))
    out: list[tuple] = []  # type: ignore[type-arg]
    for b in op.batches():
        out.extend(b.rows())
    op.close()
    return out


DUMMY = LogicalValues(("a",), (BIGINT,), ())
COLS = {"a": (0, BIGINT), "s": (1, STRING), "x": (2, DOUBLE)}


def mysql_cmp(keys: list[tuple[str, bool]]):  # type: ignore[no-untyped-def]
    def cmp(r1: tuple, r2: tuple) -> int:  # type: ignore[type-arg]
        for name, desc in keys:
            i = COLS[name][0]
            a, b = r1[i], r2[i]
            if a == b:
                continue
            if a is None:  # NULL is the smallest value: first for ASC, last for DESC
                c = -1
            elif b is None:
                c = 1
            else:
                if isinstance(a, str):
                    a, b = a.encode(), b.encode()
                c = -1 if a < b else 1
            return -c if desc else c
        return 0

    return functools.cmp_to_key(cmp)


row_st = st.tuples(st.one_of(st.none(), st.integers(-5, 5)),
                   st.one_of(st.none(), st.sampled_from(["", "a", "ab", "b", "é", "a\x00"])),
                   st.one_of(st.none(), st.floats(-3, 3, allow_nan=False)))


@settings(max_examples=80, deadline=None)
@given(st.lists(row_st, min_size=1, max_size=40), st.data())
def test_multi_key_sort_matches_reference(rows, data) -> None:  # type: ignore[no-untyped-def]
    names = data.draw(st.lists(st.sampled_from(["a", "s", "x"]), min_size=1, max_size=3,
                               unique=True))
    keys = [(n, data.draw(st.booleans())) for n in names]
    plan = LogicalSort(DUMMY, tuple(SortKey(ColumnRef(n, COLS[n][1]), d, not d) for n, d in keys))
    got = run(Sort(plan.keys, BatchesSource(to_batches(rows, 3))))
    want = sorted(rows, key=mysql_cmp(keys))  # stable, like the operator
    assert got == want


@pytest.mark.parametrize("limit,offset", [(0, 0), (3, 0), (3, 4), (None, 7), (100, 2), (2, 100)])
def test_limit_offset_across_batches(limit: int | None, offset: int) -> None:
    rows = [(i, str(i), float(i)) for i in range(23)]
    op = Limit(limit, offset, BatchesSource(to_batches(rows, 4)))
    got = run(op)
    end = None if limit is None else offset + limit
    assert got == rows[offset:end]


def test_limit_stops_pulling_its_child() -> None:
    pulled = []

    class Counting(Operator):
        def produce(self):  # type: ignore[no-untyped-def]
            for b in to_batches([(i, "x", 0.0) for i in range(100)], 10):
                pulled.append(b)
                yield b

    assert len(run(Limit(5, 0, Counting()))) == 5
    assert len(pulled) == 1


def test_sort_explicit_nulls_first_for_desc() -> None:
    rows = [(1, None, 0.0), (None, None, 0.0), (3, None, 0.0)]
    random.Random(1).shuffle(rows)
    plan = LogicalSort(DUMMY, (SortKey(ColumnRef("a", BIGINT), True, True),))
    assert [r[0] for r in run(Sort(plan.keys, BatchesSource(to_batches(rows, 2))))] == [None, 3, 1]
