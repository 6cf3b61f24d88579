"""PartitionRouter.describe_misses: the nearest partitions named in a "no partition for this
tuple" error (issue 15: a load after the last dynamic partition says which partitions exist)."""

from __future__ import annotations

import numpy as np

from storage.batch import Batch, Column
from storage.catalog.meta import (
    ColumnMeta,
    DistributionInfo,
    DistributionType,
    KeysType,
    PartitionInfo,
    PartitionMeta,
    PartitionType,
    TableMeta,
)
from storage.partition import PartitionRouter
from storage.types import INT


def _router(kind: PartitionType, parts: list[PartitionMeta]) -> PartitionRouter:
    table = TableMeta(1, 1, "t", KeysType.DUP_KEYS, (ColumnMeta("k", INT, is_key=True),),
                      PartitionInfo(kind, ("k",)),
                      DistributionInfo(DistributionType.HASH, ("k",), 1), 10)
    return PartitionRouter(table, parts)


def _batch(values: list[int]) -> Batch:
    return Batch(("k",), (Column(INT, np.asarray(values, dtype=np.int32), None),))


def test_range_misses_name_the_partitions_below_and_above() -> None:
    parts = [PartitionMeta(11, 1, "p20", 1, ("20",), ("30",)),
             PartitionMeta(10, 1, "p10", 1, ("10",), ("20",)),
             PartitionMeta(12, 1, "p50", 1, ("50",), ("60",))]
    r = _router(PartitionType.RANGE, parts)
    batch = _batch([5, 35, 70, 15])
    assert r.route(batch).tolist()[:3] == [-1, -1, -1]
    assert r.describe_misses(batch, [0, 1, 2]) == [
        "nearest partitions: p10 [10, 20) above",
        "nearest partitions: p20 [20, 30) below, p50 [50, 60) above",
        "nearest partitions: p50 [50, 60) below"]


def test_open_bounds_list_tables_and_empty_tables() -> None:
    r = _router(PartitionType.RANGE, [PartitionMeta(10, 1, "low", 1, None, ("0",))])
    assert r.describe_misses(_batch([7]), [0]) == ["nearest partitions: low [MIN, 0) below"]
    empty = _router(PartitionType.RANGE, [])
    assert empty.describe_misses(_batch([1]), [0]) == ["the table has no partitions"]
    listed = _router(PartitionType.LIST, [PartitionMeta(10, 1, "a", 1, list_values=(("1",),))])
    assert listed.describe_misses(_batch([9]), [0]) == [
        "no partition lists this value (partitions: a)"]
