"""A DUPLICATE memtable whose rows arrived in key order skips its sort (storage/memtable.py):
`in_key_order` is never True when the stable sort would move a row (random keys of several
types, NULLs, NaN, -0.0, repeats, sorted and unsorted), is True whenever the sort would keep
fixed-width keys as they are (no NaN). tests/unit/storage/test_memtable_flush.py reads
flushed DUPLICATE memtables back against an engine that never flushes."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.batch import Batch, Column
from storage.memtable import in_key_order
from storage.merge import sort_order
from storage.types import parse_type

_TYPES = {"INT": st.integers(-3, 3), "BIGINT": st.integers(-(2**63), 2**63 - 1),
          "DOUBLE": st.sampled_from([0.0, -0.0, 1.5, -2.0, float("nan"), float("inf")]),
          "DATE": st.sampled_from([0, 18262, 25000, -5]),  # physical days since 1970
          "VARCHAR(8)": st.sampled_from(["", "a", "b"])}


@st.composite
def batches(draw: st.DrawFn) -> tuple[Batch, tuple[str, ...]]:
    n = draw(st.integers(0, 40))
    kinds = draw(st.lists(st.sampled_from(sorted(_TYPES)), min_size=1, max_size=3))
    names, cols = [], []
    for i, kind in enumerate(kinds):
        values = draw(st.lists(st.none() | _TYPES[kind], min_size=n, max_size=n))
        if draw(st.booleans()):  # often sorted, the case the shortcut is for
            present = sorted((v for v in values if v is not None),
                             key=lambda v: (isinstance(v, float) and math.isnan(v), v))  # NaN last
            values = [None] * (n - len(present)) + present
        names.append(f"k{i}")
        cols.append(Column.from_physical(parse_type(kind), values))
    batch = Batch(tuple(names), tuple(cols))
    return batch, tuple(names[: draw(st.integers(1, len(names)))])


@settings(max_examples=400, deadline=None)
@given(case=batches())
def test_in_key_order_means_the_sort_keeps_every_row(case: tuple[Batch, tuple[str, ...]]
                                                     ) -> None:
    batch, keys = case
    order, _ = sort_order(batch, keys)
    kept = bool(np.array_equal(order, np.arange(batch.num_rows)))
    got = in_key_order(batch, keys)
    if got:
        assert kept
    fixed = all(batch.column(k).offsets is None for k in keys)
    no_nan = all(not (batch.column(k).data.dtype.kind == "f"
                      and np.isnan(batch.column(k).data).any()) for k in keys)
    if kept and fixed and no_nan:
        assert got
