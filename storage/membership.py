"""Membership kernel of `IntegerSet` (storage/predicates.py): which values fall in a dense bitmap.

Used by the `in_bitmap` predicate, the form a hash join's runtime filter takes when its build
keys are integers over a bounded span. `bitmap_contains_reference` is the plain-numpy twin the
tests compare with.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _contains(values, lo, bits, out):  # type: ignore[no-untyped-def]
    span = bits.shape[0]
    for i in range(values.shape[0]):
        d = np.int64(values[i]) - lo
        out[i] = 0 <= d < span and bits[d]


def bitmap_contains(values: np.ndarray, lo: int, bits: np.ndarray) -> np.ndarray:
    """Bool per value: lo <= v < lo + len(bits) and bits[v - lo]."""
    out = np.empty(len(values), np.bool_)
    if len(values) and len(bits):
        _contains(values, np.int64(lo), bits, out)
    else:
        out[:] = False
    return out


def bitmap_contains_reference(values: np.ndarray, lo: int, bits: np.ndarray) -> np.ndarray:
    d = values.astype(np.int64) - lo
    inside = (d >= 0) & (d < len(bits))
    out = np.zeros(len(values), np.bool_)
    out[inside] = bits[d[inside]]
    return out
