"""Selection vectors for a segment window: row tests that yield the surviving row numbers.

A window of a column-wise scan (storage/segment/iterator.py) used to test each predicate column
into a boolean mask over the whole window, AND the masks, count them, and turn the result into
row numbers (`flatnonzero` over the window, plus an `arange` of its row ids) before gathering
the output columns: five passes over 64k rows per test even when the first test kept 4% of
them (SSB-flat Q3.1: `c_region = 'ASIA' AND s_region = 'ASIA'`). Here the first test emits the
row numbers it keeps (one pass), and every later test only looks at those rows and narrows them
(DuckDB's selection vectors; Doris' `_evaluate_vectorization_predicate` hands a `sel` array from
one column predicate to the next the same way). Kernels: numba, `cache=True`, `nogil=True`, with
numpy twins (`*_reference`) the tests compare them with.
- dictionary codes: `table[codes[i]]` (the column's merged dictionary lookup table,
  storage/segment/dict_codes.py) and the row's validity (NULL satisfies no comparison);
- integer ranges: `lo <= v <= hi`, not one of `excluded`, not NULL (storage/segment/
  range_test.py `IntegerRange`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def codes_first(codes: np.ndarray, table: np.ndarray, valid: np.ndarray,
                has_validity: bool) -> np.ndarray:
    """Row numbers i (ascending) with table[codes[i]] and (no validity or valid[i])."""
    n = codes.shape[0]
    out = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        out[k] = i
        k += table[codes[i]] & (not has_validity or valid[i])  # branch-free append
    return out[:k].copy()


@njit(cache=True, nogil=True)
def codes_next(codes: np.ndarray, table: np.ndarray, valid: np.ndarray, has_validity: bool,
               rows: np.ndarray) -> np.ndarray:
    """The rows of `rows` (ascending row numbers) that `codes_first` would keep."""
    out = np.empty(rows.shape[0], np.int64)
    k = 0
    for j in range(rows.shape[0]):
        i = rows[j]
        out[k] = i
        k += table[codes[i]] & (not has_validity or valid[i])
    return out[:k].copy()


@njit(cache=True, nogil=True)
def range_first(values: np.ndarray, valid: np.ndarray, has_validity: bool, lo: int, hi: int,
                excluded: np.ndarray) -> np.ndarray:
    """Row numbers i (ascending) with lo <= values[i] <= hi, not excluded, not NULL."""
    n = values.shape[0]
    out = np.empty(n, np.int64)
    k = 0
    for i in range(n):
        v = values[i]
        out[k] = i
        k += (v >= lo) & (v <= hi) & (not has_validity or valid[i])
    if excluded.shape[0]:
        return _drop_excluded(values, out[:k], excluded)
    return out[:k].copy()


@njit(cache=True, nogil=True)
def range_next(values: np.ndarray, valid: np.ndarray, has_validity: bool, lo: int, hi: int,
               excluded: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rows of `rows` (ascending row numbers) that `range_first` would keep."""
    out = np.empty(rows.shape[0], np.int64)
    k = 0
    for j in range(rows.shape[0]):
        i = rows[j]
        v = values[i]
        out[k] = i
        k += (v >= lo) & (v <= hi) & (not has_validity or valid[i])
    if excluded.shape[0]:
        return _drop_excluded(values, out[:k], excluded)
    return out[:k].copy()


@njit(cache=True, nogil=True)
def _drop_excluded(values: np.ndarray, rows: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    out = np.empty(rows.shape[0], np.int64)
    k = 0
    for j in range(rows.shape[0]):
        i = rows[j]
        v = values[i]
        keep = True
        for x in excluded:
            if v == x:
                keep = False
                break
        if keep:
            out[k] = i
            k += 1
    return out[:k].copy()


def codes_reference(codes: np.ndarray, table: np.ndarray, validity: np.ndarray | None,
                    rows: np.ndarray | None) -> np.ndarray:
    """numpy twin of `codes_first` (rows None) / `codes_next`."""
    hit = table[codes.astype(np.int64)]
    if validity is not None:
        hit &= validity
    keep = np.flatnonzero(hit)
    return keep if rows is None else rows[hit[rows]]


def range_reference(values: np.ndarray, validity: np.ndarray | None, lo: int, hi: int,
                    excluded: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """numpy twin of `range_first` (rows None) / `range_next`, in exact integers."""
    v = values.astype(object)
    hit = np.array([lo <= x <= hi and x not in excluded.tolist() for x in v], np.bool_)
    if validity is not None:
        hit &= validity
    return np.flatnonzero(hit) if rows is None else rows[hit[rows]]
