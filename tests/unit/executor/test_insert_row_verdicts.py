"""executor/insert.py: the per-value conversion and Doris' strict / ratio verdicts."""

from __future__ import annotations

import pytest

from executor.insert import RowRejected, Tolerance, convert_value
from sql.errors import DorisError
from storage.catalog.meta import ColumnMeta
from storage.types import DataType, TypeKind

TINY = ColumnMeta("n", DataType(TypeKind.TINYINT))
TINY_NOT_NULL = ColumnMeta("n", DataType(TypeKind.TINYINT), nullable=False)
SHORT = ColumnMeta("s", DataType(TypeKind.VARCHAR, length=2))
BIGINT = DataType(TypeKind.BIGINT)
TEXT = DataType(TypeKind.STRING)


def test_strict_rejects_what_non_strict_nulls() -> None:
    with pytest.raises(RowRejected, match=r"column `n` \(tinyint\), row 7: Number out of range"):
        convert_value(TINY, 300, BIGINT, 7, strict=True)
    assert convert_value(TINY, 300, BIGINT, 7, strict=False) is None
    # never NULL-ed: a NOT NULL column, a string too long, a NULL for NOT NULL
    with pytest.raises(RowRejected):
        convert_value(TINY_NOT_NULL, 300, BIGINT, 1, strict=False)
    with pytest.raises(RowRejected, match="too long"):
        convert_value(SHORT, "abc", TEXT, 1, strict=False)
    with pytest.raises(RowRejected, match="null value for not null column, column=n, row=2"):
        convert_value(TINY_NOT_NULL, None, BIGINT, 2, strict=False)
    assert convert_value(TINY, 5, BIGINT, 1) == 5


def test_strict_fails_on_any_filtered_row_and_stops_after_five() -> None:
    tol = Tolerance(strict=True, total=10)
    tol.check()  # nothing filtered
    for i in range(4):
        tol.reject(f"bad {i}")
    with pytest.raises(DorisError, match=r"strict mode. first_error_msg: bad 0; bad 1; bad 2"):
        tol.check()
    with pytest.raises(DorisError):  # the fifth bad row ends the statement at once
        tol.reject("bad 4")


def test_ratio() -> None:
    tol = Tolerance(strict=False, max_filter_ratio=0.2, total=10)
    tol.reject("a")
    tol.reject("b")
    tol.check()  # 2/10 <= 0.2
    tol.reject("c")
    with pytest.raises(DorisError, match=r"too many filtered data 3/10 insert_max_filter_ratio "
                                         r"is 0\.200000"):
        tol.check()


def test_whole_column_casts_equal_value_by_value() -> None:
    """INSERT SELECT converts a column at once only where every value converts exactly; the
    result equals the value-by-value conversion, and out-of-range values take the value path."""
    import numpy as np

    from executor.insert import _cast_whole
    from storage.batch import Column

    src = Column(BIGINT, np.array([5, -7, 0, 99], dtype=np.int64),
                 np.array([True, True, False, True]))
    for target in (ColumnMeta("x", DataType(TypeKind.INT)), TINY,
                   ColumnMeta("d", DataType(TypeKind.DOUBLE))):
        cast = _cast_whole(src, target)
        assert cast is not None
        by_value = [convert_value(target, v, BIGINT, i) for i, v in enumerate(src.to_pylist())]
        assert cast.to_pylist() == by_value
    wide = Column(BIGINT, np.array([5, 300], dtype=np.int64))
    assert _cast_whole(wide, TINY) is None  # 300 is out of TINYINT's range
    assert _cast_whole(src, TINY_NOT_NULL) is None  # a NULL for a NOT NULL column
    assert _cast_whole(Column(TEXT, np.zeros(0, np.uint8), None, np.zeros(1, np.int64)),
                       TINY) is None  # text is parsed value by value
