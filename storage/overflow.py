"""Range checks for values storage computes itself: a SUM column's per-key sum in a memtable or
a materialized view's build (storage/merge.py). LARGEINT and DECIMAL(p > 18) cells are Python
ints, so their sums never wrap and can leave the column's range; writing one would fail deep in
the segment encoder. They fail here instead with Doris' backend wording for a value that does
not fit its type (`Arithmetic overflow, convert failed from <v>, expected data is [<lo>,
<hi>]`, be/src/vec/data_types/data_type_decimal.h) and MySQL's code for an out-of-range value
(1690, SQLSTATE 22003), which the statement's client receives as its error.
"""

from __future__ import annotations

import numpy as np

from storage.errors import DorisError, ErrorCode
from storage.types import DataType, TypeKind


def _bounds(t: DataType) -> tuple[int, int] | None:
    if t.kind is TypeKind.LARGEINT:
        return t.int_range()
    if t.is_decimal and t.precision > 18:
        top = 10 ** t.precision - 1  # unscaled
        return -top, top
    return None


def check_wide_values(t: DataType, values: np.ndarray, valid: np.ndarray | None = None) -> None:
    """Raise Doris' overflow error for the first (valid) cell of `values` (Python ints, the
    physical cells of `t`) outside `t`'s range; nothing for other types."""
    bounds = _bounds(t)
    if bounds is None or values.dtype != np.dtype(object) or not len(values):
        return
    lo, hi = bounds
    outside = np.asarray((values < lo) | (values > hi), np.bool_)  # one C loop, no Python one
    if valid is not None:
        outside &= np.asarray(valid, np.bool_)
    if outside.any():
        v = int(values[int(np.argmax(outside))])
        raise DorisError(f"Arithmetic overflow, convert failed from {_text(t, v)}, "
                         f"expected data is [{_text(t, lo)}, {_text(t, hi)}]",
                         ErrorCode.DATA_OUT_OF_RANGE)


def _text(t: DataType, v: int) -> str:
    if not (t.is_decimal and t.scale):
        return str(v)
    sign = "-" if v < 0 else ""
    digits = str(abs(v)).rjust(t.scale + 1, "0")
    return f"{sign}{digits[:-t.scale]}.{digits[-t.scale:]}"
