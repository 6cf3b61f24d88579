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
