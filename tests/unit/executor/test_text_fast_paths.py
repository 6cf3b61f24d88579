"""Fast paths on text columns and constant date arithmetic, against plain-Python references.

- LIKE with `%`-only patterns on the offsets+bytes buffers (executor/kernels/strings.py) vs its
  Python reference and vs the `str` matcher (`like_matcher`), multi-byte UTF-8 included;
- comparisons / IN / LIKE on a text column under a text-to-text CAST (CHAR -> VARCHAR) take the
  byte path (executor/compile.py) with the same results as Python `str` comparisons;
- month arithmetic on constant operands (sql/functions/temporal.py) vs the per-row computation
  and a calendar reference.
"""

from __future__ import annotations

import calendar
import datetime as dt

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sql.functions.vector as vector_module
from executor.compile import compile_column
from executor.kernels.strings import like_kernel, like_program, like_segments_reference
from sql.binder.expressions import Cast, ColumnRef, Comparison, InList, Like, Literal
from sql.functions.operators import like_matcher
from sql.functions.temporal import _add_months, _add_months_each
from storage.batch import Batch, Column
from storage.types import STRING, DataType, TypeKind, varchar

ALPHABET = "ab%_\\é日"


def test_like_program_parsing() -> None:
    p = like_program("%special%requests%")
    assert p is not None and p.segments == (b"special", b"requests")
    assert not p.anchor_start and not p.anchor_end
    p = like_program("a%b")
    assert p is not None and p.segments == (b"a", b"b") and p.anchor_start and p.anchor_end
    p = like_program("%\\%%")  # escaped percent is literal
    assert p is not None and p.segments == (b"%",)
    p = like_program("%%")
    assert p is not None and p.segments == () and not p.anchor_start
    assert like_program("a_b%") is None  # `_` is one character: str path
    assert like_program("abc") is None  # no `%`: equality path
    p = like_program("%a\\")  # trailing lone escape is a literal backslash
    assert p is not None and p.segments == (b"a\\",)


def _column(values: list[str | None]) -> Column:
    return Column.from_physical(STRING, values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(ALPHABET, max_size=8), st.none()), max_size=20),
       st.text(ALPHABET, max_size=7))
def test_like_kernel_matches_reference_and_str_matcher(values: list, pattern: str) -> None:
    prog = like_program(pattern)
    if prog is None:
        return
    col = _column(values)
    assert col.offsets is not None
    pat, starts = prog.packed()
    got = like_kernel(col.offsets, col.data, pat, starts, prog.anchor_start,
                      prog.anchor_end).tolist()
    raw = [(v or "").encode("utf-8") for v in values]
    assert got == like_segments_reference(raw, prog)
    m = like_matcher(pattern)
    assert got == [m(v or "") for v in values]


CH = DataType(TypeKind.CHAR, length=10)
C = ColumnRef("c", CH)
S = ColumnRef("s", STRING)
WORDS = ["MAIL", "SHIP", "", "AIR", None, "日本MAIL", "MAILé", "special requests x", "x%y"]


def _batch() -> Batch:
    return Batch(("c", "s"), (Column.from_physical(CH, WORDS), Column.from_physical(STRING, WORDS)))


def _vals(expr, b: Batch) -> list[object]:  # type: ignore[no-untyped-def]
    return compile_column(expr)(b).to_pylist()


@pytest.fixture
def no_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The byte paths never build Python strings: decoding a column fails the test."""
    def fail(col: Column) -> None:
        raise AssertionError("text column decoded")

    monkeypatch.setattr(vector_module, "decode_strings", fail)


@pytest.mark.parametrize("pattern", ["%MAIL%", "MAIL%", "%MAIL", "%special%requests%",
                                     "%\\%%", "M%L", "%", "%é", "日%"])
@pytest.mark.parametrize("negated", [False, True])
def test_like_on_columns_and_casts(pattern: str, negated: bool, no_decode: None) -> None:
    m = like_matcher(pattern)
    expect = [None if w is None else int(m(w) != negated) for w in WORDS]
    b = _batch()
    assert _vals(Like(S, Literal(pattern, STRING), negated), b) == expect
    assert _vals(Like(Cast(C, varchar(10)), Literal(pattern, varchar(10)), negated), b) == expect


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
def test_comparisons_on_cast_char_columns(op: str, no_decode: None) -> None:
    import operator as o
    fn = {"=": o.eq, "!=": o.ne, "<": o.lt, "<=": o.le, ">": o.gt, ">=": o.ge}[op]
    for lit in ["MAIL", "", "日", "MAILé"]:
        expect = [None if w is None else int(fn(w, lit)) for w in WORDS]
        got = _vals(Comparison(op, Cast(C, varchar(10)), Literal(lit, varchar(10))), _batch())
        assert got == expect, lit


def test_in_list_on_cast_char_columns(no_decode: None) -> None:
    lits = ["MAIL", "SHIP", "日本MAIL"]
    expr = InList(Cast(C, varchar(10)), tuple(Literal(x, varchar(10)) for x in lits))
    assert _vals(expr, _batch()) == [None if w is None else int(w in lits) for w in WORDS]
    neg = InList(Cast(C, varchar(10)), tuple(Literal(x, varchar(10)) for x in lits), True)
    assert _vals(neg, _batch()) == [None if w is None else int(w not in lits) for w in WORDS]


# ---- month arithmetic ----------------------------------------------------------------------
EPOCH = dt.date(1970, 1, 1)


def _ref_add_months(day: int, months: int) -> int:
    d = EPOCH + dt.timedelta(days=day)
    total = d.year * 12 + d.month - 1 + months
    y, m = divmod(total, 12)
    last = calendar.monthrange(y, m + 1)[1]
    return (dt.date(y, m + 1, min(d.day, last)) - EPOCH).days


@pytest.mark.parametrize("date,months", [
    (dt.date(1994, 1, 1), 12), (dt.date(2000, 1, 31), 1), (dt.date(2001, 3, 31), -1),
    (dt.date(1969, 12, 31), 2), (dt.date(2024, 2, 29), 12), (dt.date(2024, 2, 29), -48),
])
def test_add_months_constant_operands(date: dt.date, months: int) -> None:
    day = (date - EPOCH).days
    days, ms = np.full(5, day, np.int32), np.full(5, months, np.int64)
    got = _add_months(days, ms)
    assert got.tolist() == _add_months_each(days, ms).tolist() == [_ref_add_months(day, months)] * 5


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-30000, 30000), st.integers(-500, 500)), max_size=20))
def test_add_months_per_row(pairs: list[tuple[int, int]]) -> None:
    days = np.array([p[0] for p in pairs], np.int32)
    ms = np.array([p[1] for p in pairs], np.int64)
    assert _add_months(days, ms).tolist() == [_ref_add_months(d, m) for d, m in pairs]
