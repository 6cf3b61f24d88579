"""Range partition routing: the vectorised path (one integer-physical column: INT, BIGINT, DATE,
DATETIME) equals the row-at-a-time reference `route_rows` on random values, NULLs, gaps between
ranges, a MIN lower and a MAXVALUE upper."""

from __future__ import annotations

import numpy as np
import pytest

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
from storage.types import BIGINT, DATE, INT, datetime, varchar


def router(col_type, bounds: list[tuple[str | None, str | None]]) -> PartitionRouter:
    table = TableMeta(1, 1, "t", KeysType.DUP_KEYS, (ColumnMeta("k", col_type, is_key=True),),
                      PartitionInfo(PartitionType.RANGE, ("k",)),
                      DistributionInfo(DistributionType.HASH, ("k",), 1), 10)
    parts = [PartitionMeta(10 + i, 1, f"p{i}", 1, None if lo is None else (lo,),
                           None if hi is None else (hi,)) for i, (lo, hi) in enumerate(bounds)]
    return PartitionRouter(table, parts[::-1])  # declaration order does not matter


CASES = [
    (INT, [(None, "100"), ("100", "200"), ("300", "400"), ("400", None)], -500, 900),
    (BIGINT, [("-50", "0"), ("0", "10"), ("20", "30")], -100, 100),  # gaps, no MIN, no MAX
    (DATE, [(None, "2024-01-01"), ("2024-01-01", "2024-02-01"), ("2024-03-01", None)],
     19600, 19850),
    (datetime(0), [("2024-01-01 00:00:00", "2024-01-02 00:00:00")],
     1704067200 * 10**6 - 10**11, 1704067200 * 10**6 + 2 * 10**11),
    (INT, [(None, None)], -10, 10),  # one partition takes everything
]


@pytest.mark.parametrize("col_type, bounds, lo, hi", CASES)
def test_vectorised_range_routing_equals_row_at_a_time(col_type, bounds, lo, hi) -> None:
    r = router(col_type, bounds)
    assert r._numeric is not None
    rng = np.random.default_rng(5)
    n = 5000
    values = rng.integers(lo, hi, n).astype(col_type.numpy_dtype)
    validity = rng.random(n) > 0.05
    for valid in (None, validity):
        batch = Batch(("k",), (Column(col_type, values, valid),))
        got = r.route(batch)
        assert got.tolist() == r.route_rows(batch).tolist()
        assert (got >= 0).any()


def test_string_ranges_keep_the_row_path() -> None:
    r = router(varchar(10), [(None, "m"), ("m", None)])
    assert r._numeric is None
    batch = Batch(("k",), (Column.from_physical(varchar(10), ["a", "z", None]),))
    assert r.route(batch).tolist() == [1, 0, 1]  # partitions were given in reverse order
