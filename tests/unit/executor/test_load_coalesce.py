"""executor/load/job.py's `coalesced`: parsed blocks joined into batches of at least min_rows
rows, every row kept once and in order."""

from __future__ import annotations

import pyarrow as pa

from executor.load.job import coalesced


def test_blocks_join_in_order_up_to_min_rows() -> None:
    blocks = [pa.record_batch({"c0": pa.array([f"v{i}_{j}" for j in range(n)])})
              for i, n in enumerate([3, 4, 1, 7, 2, 2])]
    out = list(coalesced(iter(blocks), 6))
    assert [b.num_rows for b in out] == [7, 8, 4]
    assert [v for b in out for v in b.column(0).to_pylist()] == \
        [v for b in blocks for v in b.column(0).to_pylist()]
    assert list(coalesced(iter([]), 6)) == []
    assert [b.num_rows for b in coalesced(iter(blocks[:1]), 100)] == [3]
