"""Aggregate update kernels over group ids (numba): COUNT, SUM, MIN, MAX (AVG = SUM + COUNT).

Each kernel folds one batch of rows into per-group state arrays in place: `gids[i]` is the
group of row i (from executor/kernels/hash_table.py) and `valid[i]` says whether row i's value
takes part (NULL inputs are ignored). The same kernels merge partial states: a partial's state
rows are just rows whose group ids map into the merged table (counts are summed, sums added,
min/max folded with `has` as validity). Upstream: DuckDB `AggregateFunction::update/combine`,
Doris `IAggregateFunction::add/merge`.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def count_rows(gids: np.ndarray, counts: np.ndarray) -> None:
    """counts[g] += number of rows of group g (COUNT(*))."""
    for i in range(len(gids)):
        counts[gids[i]] += 1


@numba.njit(cache=True, nogil=True)
def count_valid(gids: np.ndarray, valid: np.ndarray, counts: np.ndarray) -> None:
    """counts[g] += number of valid rows of group g (COUNT(col))."""
    for i in range(len(gids)):
        if valid[i]:
            counts[gids[i]] += 1


@numba.njit(cache=True, nogil=True)
def sum_update(gids: np.ndarray, values: np.ndarray, valid: np.ndarray, sums: np.ndarray,
               has: np.ndarray) -> None:
    """sums[g] += each valid value of group g (int64 or float64); has[g] marks groups seen."""
    for i in range(len(gids)):
        if valid[i]:
            g = gids[i]
            sums[g] += values[i]
            has[g] = True


@numba.njit(cache=True, nogil=True)
def min_update(gids: np.ndarray, values: np.ndarray, valid: np.ndarray, out: np.ndarray,
               has: np.ndarray) -> None:
    """out[g] = min(out[g], valid values of group g); NaN wins, like np.minimum."""
    for i in range(len(gids)):
        if valid[i]:
            g = gids[i]
            v = values[i]
            if not has[g]:
                out[g] = v
                has[g] = True
            elif v < out[g] or v != v:  # noqa: PLR0124 - v != v: v is NaN
                out[g] = v


@numba.njit(cache=True, nogil=True)
def max_update(gids: np.ndarray, values: np.ndarray, valid: np.ndarray, out: np.ndarray,
               has: np.ndarray) -> None:
    """out[g] = max(out[g], valid values of group g); NaN wins, like np.maximum."""
    for i in range(len(gids)):
        if valid[i]:
            g = gids[i]
            v = values[i]
            if not has[g]:
                out[g] = v
                has[g] = True
            elif v > out[g] or v != v:  # noqa: PLR0124 - v != v: v is NaN
                out[g] = v
