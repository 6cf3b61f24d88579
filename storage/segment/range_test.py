"""One-pass row test for the comparisons of one integer column (numba, nogil).

A window of the segment iterator tests each predicate column with the conjunction of its
predicates. For SSB's `lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25` that was one numpy
comparison per predicate plus a NULL mask, its negation and an AND each (`storage.predicates.
evaluate`): about four passes over the window per predicate, all holding the GIL between them
(py-spy: 11% of SSB-flat Q1.1's server samples). `IntegerRange.of` folds the comparisons of
an integer-backed column (integers, DECIMAL as scaled integers, DATE as day numbers) into one
closed range plus the values `!=` excludes, and `mask` tests a window in one nogil pass. Any
other predicate (IN, IS NULL, runtime filters, non-integer constants) keeps the general
`evaluate` conjunction, which is also the reference the tests compare with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from storage.predicates import ColumnPredicate

_INT64_MIN = -(2 ** 63)
_INT64_MAX = 2 ** 63 - 1


@dataclass(frozen=True)
class IntegerRange:
    """lo <= value <= hi and value not in `excluded` (NULL never matches)."""

    lo: int
    hi: int
    excluded: np.ndarray  # int64

    @staticmethod
    def of(preds: list[ColumnPredicate], dtype: np.dtype) -> IntegerRange | None:
        """The range the predicates describe on a column of integer `dtype`, or None when
        some predicate is not an integer comparison."""
        if dtype.kind != "i":
            return None
        info = np.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
        excluded: list[int] = []
        for p in preds:
            if p.op not in ("=", "!=", "<", "<=", ">", ">=") or len(p.values) != 1:
                return None
            v = p.values[0]
            if not isinstance(v, int) or isinstance(v, bool) or not \
                    _INT64_MIN <= v <= _INT64_MAX:
                return None
            if p.op == "=":
                lo, hi = max(lo, v), min(hi, v)
            elif p.op == "!=":
                excluded.append(v)
            elif p.op == "<":
                hi = min(hi, v - 1)
            elif p.op == "<=":
                hi = min(hi, v)
            elif p.op == ">":
                lo = max(lo, v + 1)
            else:
                lo = max(lo, v)
        return IntegerRange(lo, hi, np.array(excluded, np.int64))

    def mask(self, values: np.ndarray, validity: np.ndarray | None) -> np.ndarray:
        """Rows of a window (its values and validity, None: no NULL) inside the range."""
        if self.lo > self.hi:
            return np.zeros(len(values), np.bool_)
        valid = validity if validity is not None else np.ones(0, np.bool_)
        # lo <= hi lie inside the column type's range (`of` starts from it), so the bounds
        # compare in the values' own width (narrow SIMD lanes)
        as_values = values.dtype.type
        return _range_mask(values, valid, validity is not None, as_values(self.lo),
                           as_values(self.hi), self.excluded)


@numba.njit(cache=True, nogil=True)
def _range_mask(values: np.ndarray, valid: np.ndarray, has_validity: bool, lo: int, hi: int,
                excluded: np.ndarray) -> np.ndarray:
    # branch-free loops (LLVM vectorizes them); the rare `!=` values in a second pass
    n = len(values)
    out = np.empty(n, np.bool_)
    if has_validity:
        for i in range(n):
            v = values[i]
            out[i] = (v >= lo) & (v <= hi) & valid[i]
    else:
        for i in range(n):
            v = values[i]
            out[i] = (v >= lo) & (v <= hi)
    if len(excluded):
        for i in range(n):
            if out[i]:
                v = values[i]
                for x in excluded:
                    if v == x:
                        out[i] = False
                        break
    return out
