"""executor/load/job.py's `coalesced`: parsed blocks joined into batches of at least min_rows
rows, every row kept once and in order, each batch with the row each of its blocks starts at
and the block's reader record."""

from __future__ import annotations

import pyarrow as pa

from executor.load.job import coalesced
from executor.load.spec import StatsRecord


def test_blocks_join_in_order_up_to_min_rows() -> None:
    blocks = [pa.record_batch({"c0": pa.array([f"v{i}_{j}" for j in range(n)])})
              for i, n in enumerate([3, 4, 1, 7, 2, 2])]
    records = [StatsRecord(skipped_rows=i) for i in range(len(blocks))]
    out = list(coalesced(iter(zip(blocks, records)), 6))
    assert [b.num_rows for b, _ in out] == [7, 8, 4]
    assert [v for b, _ in out for v in b.column(0).to_pylist()] == \
        [v for b in blocks for v in b.column(0).to_pylist()]
    assert [[(start, r.skipped_rows) for start, r in blocks_of] for _, blocks_of in out] == \
        [[(0, 0), (3, 1)], [(0, 2), (1, 3)], [(0, 4), (2, 5)]]
    assert list(coalesced(iter([]), 6)) == []
    assert [b.num_rows for b, _ in coalesced(iter(zip(blocks[:1], records)), 100)] == [3]
