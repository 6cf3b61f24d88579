"""Column.from_arrow reads fixed-width Arrow arrays through buffer views (no pandas import):
the values and validity equal numpy's own conversion (`to_numpy`) for every fixed-width type,
with NULLs, sliced arrays (offsets inside a bit or data buffer) and empty arrays."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Column

# (arrow type, table type, value strategy)
CASES = [
    (pa.int8(), T.TINYINT, st.integers(-128, 127)),
    (pa.int16(), T.SMALLINT, st.integers(-(2**15), 2**15 - 1)),
    (pa.int32(), T.INT, st.integers(-(2**31), 2**31 - 1)),
    (pa.int64(), T.BIGINT, st.integers(-(2**63), 2**63 - 1)),
    (pa.uint8(), T.SMALLINT, st.integers(0, 255)),
    (pa.float32(), T.FLOAT, st.floats(width=32, allow_nan=False)),
    (pa.float64(), T.DOUBLE, st.floats(allow_nan=False)),
    (pa.bool_(), T.BOOLEAN, st.booleans()),
    (pa.date32(), T.DATE, st.integers(-(2**20), 2**20)),
    (pa.timestamp("us"), T.datetime(6), st.integers(-(2**50), 2**50)),
]


def _reference(arr: pa.Array, numpy_dtype: np.dtype) -> tuple[np.ndarray, np.ndarray | None]:
    """What from_arrow returned before the buffer views: pyarrow's own to_numpy."""
    validity = (np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=np.bool_)
                if arr.null_count else None)
    if pa.types.is_date32(arr.type) or pa.types.is_timestamp(arr.type):
        arr = arr.view(pa.int32() if pa.types.is_date32(arr.type) else pa.int64())
    filled = arr.fill_null(0 if not pa.types.is_boolean(arr.type) else False)
    return np.asarray(filled.to_numpy(zero_copy_only=False)).astype(numpy_dtype), validity


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fixed_width_from_arrow_matches_to_numpy(data: st.DataObject) -> None:
    atype, dtype, values = data.draw(st.sampled_from(CASES))
    raw = data.draw(st.lists(st.one_of(st.none(), values), max_size=70))
    arr = pa.array(raw, atype)
    lo = data.draw(st.integers(0, len(raw)))
    hi = data.draw(st.integers(lo, len(raw)))
    arr = arr.slice(lo, hi - lo)
    col = Column.from_arrow(dtype, arr)
    want, validity = _reference(arr, dtype.numpy_dtype)
    assert col.data.dtype == dtype.numpy_dtype
    assert np.array_equal(col.data, want)
    if validity is None:
        assert col.validity is None
    else:
        assert col.validity is not None and np.array_equal(col.validity, validity)
