"""SUBSTRING with constant bounds on the var-len Column (sql/functions/text_columns.py through
executor/compile.py's text sources) and Arrow decoding, against the row-by-row Python path:
NULLs, empty strings, multi-byte UTF-8, bytes that are not UTF-8 (row path), empty batches."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import executor.compile as compile_module
from executor.compile import compile_column, compile_expr, compile_predicate
from sql.binder.expressions import Call, Cast, ColumnRef, Comparison, InList, Like, Literal
from sql.functions.scalar import _substr
from sql.functions.text_columns import substring_column
from sql.functions.vector import decode_strings
from storage.batch import Batch, Column
from storage.types import BIGINT, STRING, DataType, TypeKind

CH = DataType(TypeKind.CHAR, length=15)
ALPHABET = "ab1-\u00e9\u65e5\U0001f600 "
values_st = st.lists(st.one_of(st.text(ALPHABET, max_size=9), st.none()), max_size=25)
bounds_st = st.tuples(st.integers(0, 12), st.one_of(st.none(), st.integers(-2, 12)))


def _sub(col: ColumnRef, pos: int, length: int | None) -> Call:
    args = [col, Literal(pos, BIGINT)] + ([] if length is None else [Literal(length, BIGINT)])
    return Call("substring", tuple(args), col.type)


def _reference(values: list[str | None], pos: int, length: int | None) -> list[str | None]:
    return [None if v is None else (_substr(v, pos) if length is None else _substr(v, pos, length))
            for v in values]


def _values(c: Column) -> list[str | None]:
    data = decode_strings(c).tolist()
    return [None if c.validity is not None and not c.validity[i] else x
            for i, x in enumerate(data)]


@settings(max_examples=300, deadline=None)
@given(values_st, bounds_st)
def test_substring_column_matches_row_by_row(values: list, bounds: tuple) -> None:
    pos, length = bounds
    col = Column.from_physical(STRING, values)
    out = substring_column(col, pos, length)
    assert out is not None and len(out) == len(values)
    assert _values(out) == _reference(values, pos, length)
    # through the compiler, on a CHAR column under a CHAR -> VARCHAR cast, as TPC-H binds it
    ref = Cast(ColumnRef("c", CH), STRING)
    batch = Batch(("c",), (Column.from_physical(CH, values),))
    assert _values(compile_column(_sub(ref, pos, length))(batch)) == _reference(
        values, pos, length)


@settings(max_examples=200, deadline=None)
@given(values_st, bounds_st, st.lists(st.text(ALPHABET, max_size=3), min_size=1, max_size=5),
       st.booleans())
def test_in_and_compare_over_substring_match_python(values: list, bounds: tuple,
                                                    consts: list, negated: bool) -> None:
    pos, length = bounds
    col = ColumnRef("s", STRING)
    batch = Batch(("s",), (Column.from_physical(STRING, values),))
    sub = _reference(values, pos, length)
    e = InList(_sub(col, pos, length), tuple(Literal(c, STRING) for c in consts), negated)
    want = [v is not None and ((v in consts) != negated) for v in sub]
    assert compile_predicate(e)(batch).tolist() == want
    e2 = Comparison("<", _sub(col, pos, length), Literal(consts[0], STRING))
    assert compile_predicate(e2)(batch).tolist() == [v is not None and v < consts[0] for v in sub]
    e3 = Like(_sub(col, pos, length), Literal(f"%{consts[0]}%", STRING), negated)
    want3 = [v is not None and ((consts[0] in v) != negated) for v in sub]
    assert compile_predicate(e3)(batch).tolist() == want3


def test_substring_takes_the_text_source_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is what runs (not the row-by-row SUBSTRING), and the same rows come out."""
    calls = []
    real = compile_module.substring_column
    monkeypatch.setattr(compile_module, "substring_column",
                        lambda *a: calls.append(a) or real(*a))
    batch = Batch(("s",), (Column.from_physical(STRING, ["13-x", "31-y", None, ""]),))
    e = InList(_sub(ColumnRef("s", STRING), 1, 2), (Literal("13", STRING),
                                                    Literal("", STRING)), False)
    assert compile_predicate(e)(batch).tolist() == [True, False, False, True]
    assert len(calls) == 1
    # TPC-H Q22 as bound: CAST(substr(c_phone, 1, 2) AS varchar(15)) IN (..) over CHAR(15)
    vc = DataType(TypeKind.VARCHAR, length=15)
    batch = Batch(("c",), (Column.from_physical(CH, ["13-x", "31-y", None, "1"]),))
    e = InList(Cast(_sub(ColumnRef("c", CH), 1, 2), vc), (Literal("13", vc), Literal("1", vc)),
               False)
    assert compile_predicate(e)(batch).tolist() == [True, False, False, True]
    assert len(calls) == 2


def test_invalid_utf8_and_negative_positions_take_the_row_path() -> None:
    raw = Column(STRING, np.frombuffer(b"ab\xffcd\xc3", np.uint8).copy(), None,
                 np.array([0, 3, 6], np.int64))
    assert substring_column(raw, 1, 2) is None
    batch = Batch(("s",), (raw,))
    got = compile_expr(_sub(ColumnRef("s", STRING), 1, 2))(batch).data.tolist()
    assert got == ["ab", "cd"]  # as Python decodes them with replacement characters
    got = compile_expr(_sub(ColumnRef("s", STRING), 2, 2))(batch).data.tolist()
    assert got == ["b\ufffd", "d\ufffd"]
    good = Column.from_physical(STRING, ["hello", "h\u00e9"])
    assert substring_column(good, -2, 1) is None
    out = compile_expr(_sub(ColumnRef("s", STRING), -2, 1))(Batch(("s",), (good,)))
    assert out.data.tolist() == ["l", "h"]


def test_empty_batch_and_decode_fallback() -> None:
    empty = Column.from_physical(STRING, [])
    out = substring_column(empty, 1, 2)
    assert out is not None and len(out) == 0 and _values(out) == []
    raw = Column(STRING, np.frombuffer(b"\xff", np.uint8).copy(), None, np.array([0, 1], np.int64))
    assert decode_strings(raw).tolist() == ["\ufffd"]


@settings(max_examples=200, deadline=None)
@given(values_st)
def test_arrow_decode_matches_python_decode(values: list) -> None:
    col = Column.from_physical(STRING, values)
    got = decode_strings(col)
    assert got.dtype == np.dtype(object)
    assert got.tolist() == ["" if v is None else v for v in values]
