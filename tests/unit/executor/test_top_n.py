"""TOP-N operator (executor/top_n.py) against a full Sort followed by a Limit: same rows in
the same order (ties in input order), also when its buffer is compacted mid-stream."""

from __future__ import annotations

import random

import pytest
from test_sort import DUMMY, BatchesSource, run, to_batches

import executor.top_n as top_n_module
from executor.limit import Limit
from executor.sort import Sort
from executor.top_n import TopN
from planner.logical import LogicalLimit, LogicalSort, SortKey
from sql.binder.expressions import ColumnRef
from storage.types import BIGINT, DOUBLE, STRING


def _rows(n: int, seed: int) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    return [(rng.choice([None, *range(6)]), rng.choice(["b", "a", None, "c"]), float(i))
            for i in range(n)]


@pytest.mark.parametrize("compact_rows", [1, 7, 1 << 16])
@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (1, 0), (5, 3), (40, 0), (500, 10)])
def test_top_n_equals_sort_then_limit(monkeypatch: pytest.MonkeyPatch, compact_rows: int,
                                      limit: int, offset: int) -> None:
    monkeypatch.setattr(top_n_module, "COMPACT_ROWS", compact_rows)
    rows = _rows(300, limit * 31 + offset)
    sort = LogicalSort(DUMMY, (SortKey(ColumnRef("a", BIGINT), True),
                               SortKey(ColumnRef("s", STRING), False)))
    plan = LogicalLimit(sort, limit, offset)
    want = run(Limit(plan.limit, plan.offset, Sort(sort.keys, BatchesSource(to_batches(rows, 9)))))
    got = run(TopN(sort.keys, plan.limit, plan.offset, BatchesSource(to_batches(rows, 9))))
    assert got == want
    assert len(got) == max(0, min(limit, len(rows) - offset))


def test_top_n_keeps_a_bounded_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(top_n_module, "COMPACT_ROWS", 20)
    sort = LogicalSort(DUMMY, (SortKey(ColumnRef("x", DOUBLE), False),))
    op = TopN(sort.keys, 3, 1, BatchesSource(to_batches(_rows(1000, 1), 10)))
    held: list[int] = []
    sink = op.sink

    def watched(batch):  # type: ignore[no-untyped-def]
        sink(batch)
        held.append(op._rows)

    op.sink = watched  # type: ignore[method-assign]
    assert [r[2] for r in run(op)] == [1.0, 2.0, 3.0]
    assert max(held) <= 30  # never more than the compaction bound plus one batch
