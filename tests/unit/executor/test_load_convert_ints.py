"""executor/load/convert.py, integer columns: text casts straight to the column's width; a
value out of its range is refused by the cast and handled by the per-value path (NULL outside
strict mode, a filtered row naming the value in strict mode)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from executor.load.convert import convert_column, vector_convert
from storage.catalog.meta import ColumnMeta
from storage.types import BIGINT, INT, SMALLINT, TINYINT


def test_in_range_values_convert_whole_column() -> None:
    for t, text, values in ((TINYINT, ["-128", "127", None], [-128, 127]),
                            (SMALLINT, ["-32768", "32767", None], [-32768, 32767]),
                            (INT, ["-2147483648", "2147483647", None], [-2**31, 2**31 - 1]),
                            (BIGINT, ["-9223372036854775808", "9223372036854775807", None],
                             [-2**63, 2**63 - 1])):
        col = vector_convert(t, pa.array(text, pa.string()))
        assert col is not None and col.data.dtype == t.numpy_dtype
        assert col.data[:2].tolist() == values and col.validity.tolist() == [True, True, False]


def test_out_of_range_goes_to_the_per_value_path() -> None:
    text = pa.array(["1", "128", "-129", "x"], pa.string())
    assert vector_convert(TINYINT, text) is None
    bad = np.zeros(4, np.bool_)
    reasons: dict[int, str] = {}
    lenient = convert_column(ColumnMeta("t", TINYINT), text, False, bad, reasons)
    assert lenient.to_pylist() == [1, None, None, None] and not bad.any()
    strict = convert_column(ColumnMeta("t", TINYINT), text, True, bad, reasons)
    assert strict.to_pylist() == [1, None, None, None]
    assert bad.tolist() == [False, True, True, True]
    assert "value: 128" in reasons[1] and "value: -129" in reasons[2]


def test_text_that_is_not_utf8_in_a_typed_column_is_a_bad_row() -> None:
    """Typed columns convert before the UTF-8 check (a cast that succeeds read only ASCII);
    a value that is not UTF-8 still makes its row bad with Doris' reason, strict or not."""
    from storage.types import DATE, DOUBLE
    raw = [b"1", b"\xe3\x28", None, b"4"]
    text = pa.Array.from_buffers(pa.string(), 4, pa.array(raw, pa.binary()).buffers())
    for t in (INT, BIGINT, DOUBLE):
        for strict in (False, True):
            bad = np.zeros(4, np.bool_)
            reasons: dict[int, str] = {}
            col = convert_column(ColumnMeta("c", t), text, strict, bad, reasons)
            assert bad.tolist() == [False, True, False, False]
            assert "only support csv data in utf8 codec" in reasons[1]
            assert col.to_pylist() == [1, None, None, 4]
    dates = pa.array(["2024-01-02", None], pa.string())
    bad = np.zeros(2, np.bool_)
    col = convert_column(ColumnMeta("d", DATE), dates, True, bad, {})
    assert not bad.any() and col.validity is not None and col.validity.tolist() == [True, False]
