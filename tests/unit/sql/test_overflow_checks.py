"""The vectorised overflow checks (sql/functions/overflow.py) against exact Python ints."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sql.errors import DorisError
from sql.functions.operators import arithmetic
from sql.functions.overflow import check_int64
from sql.functions.vector import Vec
from storage.types import BIGINT

I64 = st.one_of(st.integers(-(2**63), 2**63 - 1),
                st.sampled_from([-(2**63), 2**63 - 1, -1, 0, 1, 2**31, -(2**32), 3037000500]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(I64, I64), min_size=1, max_size=40), st.sampled_from("+-*"))
def test_int64_checks_flag_exactly_the_rows_python_ints_overflow(pairs, op) -> None:  # type: ignore[no-untyped-def]
    x = np.array([a for a, _ in pairs], np.int64)
    y = np.array([b for _, b in pairs], np.int64)
    exact = [a + b if op == "+" else a - b if op == "-" else a * b for a, b in pairs]
    overflows = [not -(2**63) <= v < 2**63 for v in exact]
    with np.errstate(over="ignore"):
        r = x + y if op == "+" else x - y if op == "-" else x * y
    if any(overflows):
        with pytest.raises(DorisError, match="Arithmetic overflow"):
            check_int64(op, x, y, r, BIGINT, None)
        # rows under NULL do not count
        check_int64(op, x, y, r, BIGINT, ~np.array(overflows))
    else:
        check_int64(op, x, y, r, BIGINT, None)
        assert r.tolist() == exact


def test_arithmetic_reports_the_first_overflowing_row() -> None:
    a = Vec(BIGINT, np.array([1, 2**62, 5], np.int64))
    b = Vec(BIGINT, np.array([1, 2**62, 6], np.int64))
    with pytest.raises(DorisError) as info:
        arithmetic("+", a, b, BIGINT)
    assert info.value.code == 1690 and info.value.sqlstate == "22003"
    assert "4611686018427387904 add 4611686018427387904 is out of the range of bigint" in str(
        info.value.message)
    assert arithmetic("*", a, Vec(BIGINT, np.array([3, 1, 7], np.int64)), BIGINT).data.tolist() \
        == [3, 2**62, 35]
