"""A load's split of routed rows into tablets (storage/txn.py `_tablet_groups`,
`_partitions_used`): the counting-sort grouping equals the np.unique reference it replaced
(same tablets, same order, rows in input order), for one and many partitions and buckets,
empty input, group ids past uint16, and rows no partition took (-1)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.txn import _partitions_used, _tablet_groups


def reference_groups(part_idx: np.ndarray, buckets: np.ndarray
                     ) -> list[tuple[tuple[int, int], list[int]]]:
    out = []
    for p, b in sorted({(int(p), int(b)) for p, b in zip(part_idx, buckets, strict=True)}):
        rows = np.flatnonzero((part_idx == p) & (buckets == b)).tolist()
        out.append(((p, b), rows))
    return out


def groups_as_lists(part_idx: np.ndarray, buckets: np.ndarray
                    ) -> list[tuple[tuple[int, int], list[int]]]:
    n = len(part_idx)
    return [(key, list(range(n)) if rows is None else rows.tolist())
            for key, rows in _tablet_groups(part_idx, buckets)]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.integers(0, 300), st.integers(0, 2**32 - 1))
def test_tablet_groups_match_reference(partitions: int, buckets: int, rows: int,
                                       seed: int) -> None:
    rng = np.random.default_rng(seed)
    part_idx = rng.integers(0, partitions, rows).astype(np.int64)
    bucket = rng.integers(0, buckets, rows).astype(np.int64)
    assert groups_as_lists(part_idx, bucket) == reference_groups(part_idx, bucket)


def test_one_tablet_takes_every_row_without_positions() -> None:
    part_idx = np.full(5, 3, np.int64)
    buckets = np.full(5, 7, np.int64)
    assert _tablet_groups(part_idx, buckets) == [((3, 7), None)]


def test_group_ids_past_uint16_use_the_wide_sort() -> None:
    part_idx = np.array([700, 2, 700, 2, 0], np.int64)
    buckets = np.array([120, 5, 3, 5, 127], np.int64)  # 701 * 128 group ids > 65535
    assert groups_as_lists(part_idx, buckets) == reference_groups(part_idx, buckets)


@given(st.lists(st.integers(-1, 12), max_size=60))
def test_partitions_used_are_the_distinct_placed_ones(values: list[int]) -> None:
    part_idx = np.array(values, np.int64)
    assert _partitions_used(part_idx) == sorted({v for v in values if v >= 0})
