"""is_identity (executor/kernels/join_hash.py) against its numpy reference: a probe-side
gather can be skipped exactly when the pair indexes are 0..n-1 in order."""

from __future__ import annotations

import numpy as np
import pytest

from executor.kernels.join_hash import is_identity


def is_identity_reference(indices: np.ndarray) -> bool:
    return bool(np.array_equal(indices, np.arange(len(indices))))


@pytest.mark.parametrize("case", [
    [], [0], [1], [0, 1, 2], [0, 0, 2], [0, 2, 1], [0, 1, 3], [1, 2, 3], list(range(1000)),
])
def test_is_identity_matches_reference(case: list[int]) -> None:
    idx = np.asarray(case, dtype=np.int64)
    assert is_identity(idx) == is_identity_reference(idx)


def test_random_pairs() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(0, 50))
        idx = np.sort(rng.integers(0, max(n, 1), n)).astype(np.int64)
        assert is_identity(idx) == is_identity_reference(idx)
