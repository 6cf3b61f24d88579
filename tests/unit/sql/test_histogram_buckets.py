"""HISTOGRAM's bucket construction (sql/functions/histogram.py) against the expectations of
Doris' own BE unit tests for `histogram_helpers.hpp` (be/test/vec/utils/histogram_helpers_test.cpp),
plus invariants on random inputs."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from sql.functions.histogram import (
    bucket_max_values,
    build_buckets,
    can_assign,
    histogram_json,
)
from storage.types import INT, STRING

# (values, counts, max buckets) -> [(lower, upper, ndv, count, pre_sum)]
BUILD_CASES = [
    ([], [], 10, []),
    ([1], [5], 10, [(1, 1, 1, 5, 0)]),
    ([1, 2, 3], [10, 20, 30], 3, [(1, 1, 1, 10, 0), (2, 2, 1, 20, 10), (3, 3, 1, 30, 30)]),
    ([1, 2, 3, 4], [5, 10, 20, 30], 2, [(1, 3, 3, 35, 0), (4, 4, 1, 30, 35)]),
    ([1, 2, 3, 4], [20, 30, 40, 50], 3,
     [(1, 2, 2, 50, 0), (3, 3, 1, 40, 50), (4, 4, 1, 50, 90)]),
    ([1, 2, 3], [5, 10, 15], 1, [(1, 3, 3, 30, 0)]),
    ([1, 2, 3, 4, 5, 6], [100, 200, 300, 400, 500, 600], 4,
     [(1, 3, 3, 600, 0), (4, 4, 1, 400, 600), (5, 5, 1, 500, 1000), (6, 6, 1, 600, 1500)]),
]


@pytest.mark.parametrize("values,counts,buckets,expected", BUILD_CASES)
def test_build_buckets_matches_doris(values, counts, buckets, expected) -> None:
    assert build_buckets(values, counts, buckets) == expected


@pytest.mark.parametrize("counts,buckets,expected", [
    ([1], 1, 1), ([1], 10, 1), ([1, 2], 1, 3), ([1, 2], 2, 1), ([2, 2, 2], 3, 2),
    ([2, 2, 2], 4, 1)])
def test_bucket_max_values_matches_doris(counts, buckets, expected) -> None:
    assert bucket_max_values(counts, buckets) == expected


@pytest.mark.parametrize("counts,size,buckets,expected", [
    ([], 1, 1, False), ([10], 1, 1, False), ([10], 5, 1, False), ([10], 5, 2, True),
    ([10, 20, 30], 1, 3, False), ([10, 20, 30], 10, 3, True), ([5, 10, 15, 20], 30, 2, True),
    ([5, 10, 15, 20], 30, 1, False), ([5, 10, 15, 20], 100, 1, True), ([100], 99, 1, False),
    ([100], 100, 1, True)])
def test_can_assign_matches_doris(counts, size, buckets, expected) -> None:
    assert can_assign(counts, size, buckets) is expected


def test_json_text_is_doris_rapidjson_form() -> None:
    assert histogram_json(INT, Counter(), 128) == '{"num_buckets":0,"buckets":[]}'
    assert histogram_json(STRING, Counter({"b": 1, "a": 2}), 128) == (
        '{"num_buckets":2,"buckets":[{"lower":"a","upper":"a","ndv":1,"count":2,"pre_sum":0},'
        '{"lower":"b","upper":"b","ndv":1,"count":1,"pre_sum":2}]}')


@pytest.mark.parametrize("seed", range(20))
def test_random_histograms_partition_the_values(seed: int) -> None:
    """Buckets cover every value once, in order, never more than asked, pre_sum accumulates."""
    rng = random.Random(seed)
    data = Counter(rng.randint(-30, 30) for _ in range(rng.randint(1, 300)))
    n = rng.randint(1, 12)
    doc = json.loads(histogram_json(INT, data, n))
    buckets = doc["buckets"]
    assert doc["num_buckets"] == len(buckets) <= n
    values = sorted(data)
    pos = pre = 0
    for b in buckets:
        assert int(b["lower"]) == values[pos]
        covered = values[pos:pos + b["ndv"]]
        assert int(b["upper"]) == covered[-1]
        assert b["count"] == sum(data[v] for v in covered)
        assert b["pre_sum"] == pre
        pre += b["count"]
        pos += b["ndv"]
    assert pos == len(values) and pre == sum(data.values())
