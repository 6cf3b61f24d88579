"""gather_varlen (8-byte chunk copies) against the pure-numpy reference: every row length
around the chunk size, every start alignment, empty / long / unicode strings, repeated and
empty index lists, offsets that do not start at 0, and Column.take with NULLs."""

from __future__ import annotations

import numpy as np
import pytest

from storage.batch import Column
from storage.gather import gather_varlen, gather_varlen_reference
from storage.types import varchar


def _check(offsets: np.ndarray, data: np.ndarray, indices: np.ndarray) -> None:
    got = gather_varlen(offsets, data, indices)
    want = gather_varlen_reference(offsets, data, indices)
    assert got[0].dtype == np.int64 and got[1].dtype == np.uint8
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(got[1], want[1])


def _column(rng: np.random.Generator, n: int, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    lengths = rng.integers(0, max_len + 1, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(0, 256, int(offsets[-1])).astype(np.uint8)
    return offsets, data


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("max_len", [0, 1, 7, 8, 9, 16, 17, 40, 300])
def test_gather_matches_reference(seed: int, max_len: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    offsets, data = _column(rng, n, max_len)
    for indices in (rng.integers(0, n, int(rng.integers(0, 2 * n))),  # repeats, any order
                    np.arange(n), np.arange(n)[::-1].copy(),
                    np.array([n - 1] * 5), np.zeros(0, np.int64),
                    np.sort(rng.choice(n, n // 2 + 1, replace=False))):
        _check(offsets, data, indices.astype(np.int64))


@pytest.mark.parametrize("shift", range(9))
def test_every_length_at_every_alignment(shift: int) -> None:
    # rows of length 0..33 each starting at every byte offset mod 8, the last row at the
    # very end of the data (the chunk copy must fall back to bytes there)
    lengths = np.array([shift] + list(range(34)) * 3, np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = (np.arange(int(offsets[-1])) * 7 % 251).astype(np.uint8)
    n = len(lengths)
    rng = np.random.default_rng(shift)
    for indices in (np.arange(n), rng.permutation(n), np.array([n - 1, 0, n - 1])):
        _check(offsets, data, indices.astype(np.int64))


def test_offsets_not_starting_at_zero_and_int32_offsets() -> None:
    rng = np.random.default_rng(3)
    offsets, data = _column(rng, 200, 20)
    view = offsets[50:]  # a sliced column: offsets start mid-buffer
    idx = rng.integers(0, len(view) - 1, 300).astype(np.int64)
    _check(view, data, idx)
    _check(offsets.astype(np.int32), data, idx)
    # data longer than the last offset (a view of a bigger buffer)
    _check(offsets[:101], data, rng.integers(0, 100, 150).astype(np.int64))


def test_column_take_strings_with_nulls_unicode_and_long() -> None:
    rng = np.random.default_rng(11)
    pool = ["", "a", "1-URGENT", "4-NOT SPECI", "TRUCK", "héllo wörld", "日本語のテキスト",
            "x" * 8, "y" * 9, "z" * 500, "emoji 🎉🎉", None]
    values = [pool[i] for i in rng.integers(0, len(pool), 1000)]
    col = Column.from_physical(varchar(1000), values)
    for idx in (rng.integers(0, 1000, 3000), np.arange(1000)[::-1], np.zeros(0, np.int64),
                np.array([999])):
        got = col.take(idx.astype(np.int64))
        assert got.to_pylist() == [values[i] for i in idx]
