"""storage/reader.py `coalesce`: the tablet reader's output batches. Large batches pass through
without a copy, small ones are concatenated, oversized ones sliced; rows and their order are
those of the input, whatever the mix of sizes."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.batch import Batch, Column
from storage.reader import coalesce
from storage.types import BIGINT, STRING

SIZE = 100


def _batch(start: int, n: int) -> Batch:
    ids = list(range(start, start + n))
    return Batch(("id", "s"), (Column.from_physical(BIGINT, ids),
                               Column.from_physical(STRING, [None if i % 7 == 0 else f"v{i}"
                                                             for i in ids])))


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 1, 3, 49, 50, 51, 99, 100, 101, 250]), max_size=12))
def test_rows_and_order_are_kept(sizes: list[int]) -> None:
    batches, start = [], 0
    for n in sizes:
        batches.append(_batch(start, n))
        start += n
    out = list(coalesce(iter(batches), SIZE))
    ids = [v for b in out for v in b.column("id").to_pylist()]
    assert ids == list(range(start))
    assert [v for b in out for v in b.column("s").to_pylist()] == \
        [v for b in batches for v in b.column("s").to_pylist()]
    assert all(0 < b.num_rows <= SIZE for b in out)
    # small batches are merged: no two consecutive outputs are both under half of SIZE (a
    # small remainder is only ever flushed before a large batch, or at the end)
    assert not any(a.num_rows < SIZE // 2 and b.num_rows < SIZE // 2
                   for a, b in pairwise(out))


def test_large_batches_pass_through_uncopied() -> None:
    """A window the predicates thinned to 60 rows is yielded as is (no concatenation)."""
    big = _batch(0, 60)
    small = [_batch(60 + i, 1) for i in range(3)]
    out = list(coalesce(iter([big, *small, _batch(63, 80)]), SIZE))
    assert out[0] is big
    assert [b.num_rows for b in out] == [60, 3, 80]
    assert out[2] is not big and out[2].num_rows == 80


def test_oversized_batches_are_sliced_without_copy() -> None:
    b = _batch(0, 250)
    out = list(coalesce(iter([b]), SIZE))
    assert [x.num_rows for x in out] == [100, 100, 50]
    assert all(np.shares_memory(x.column("id").data, b.column("id").data) for x in out)
