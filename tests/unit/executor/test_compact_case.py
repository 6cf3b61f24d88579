"""CASE over wide DECIMAL branches under `compact=True` (SUM/AVG arguments: TPC-H Q14's
`sum(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)`):
int64 when every branch is exact int64, the same values as the object path, NULLs included,
and the object path when a branch is beyond int64."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.compile import compile_column, compile_expr
from sql.binder.expressions import Arithmetic, Case, ColumnRef, Comparison, Literal
from sql.functions.vector import widen
from storage.batch import Batch, Column
from storage.types import INT, decimal

P, D = decimal(15, 2), decimal(16, 2)
W = decimal(32, 4)  # P * D: a wide DECIMAL (Python ints unless compact)


def _expr(default: object) -> Case:
    product = Arithmetic("*", ColumnRef("p", P), ColumnRef("d", D), W)
    cond = Comparison(">", ColumnRef("k", INT), Literal(0, INT))
    return Case(((cond, product),), None if default is None else Literal(default, W), W)


def _batch(ps: list, ds: list, ks: list) -> Batch:
    return Batch(("p", "d", "k"), (Column.from_physical(P, ps), Column.from_physical(D, ds),
                                   Column.from_physical(INT, ks)))


def _values(col: Column) -> list:
    data = col.data.tolist()
    return [x if col.validity is None or col.validity[i] else None for i, x in enumerate(data)]


@settings(max_examples=150, deadline=None)
@given(st.data(), st.one_of(st.none(), st.integers(-10**6, 10**6)))
def test_compact_case_matches_the_object_path(data: st.DataObject, default: object) -> None:
    n = data.draw(st.integers(0, 30))
    num = st.one_of(st.none(), st.integers(-10**12, 10**12))  # |p * d| < 2**62: compact
    ps = data.draw(st.lists(num, min_size=n, max_size=n))
    ds = data.draw(st.lists(st.one_of(st.none(), st.integers(-10**6, 10**6)), min_size=n,
                            max_size=n))
    ks = data.draw(st.lists(st.one_of(st.none(), st.integers(-2, 2)), min_size=n, max_size=n))
    batch = _batch(ps, ds, ks)
    e = _expr(default)
    compact = compile_column(e, compact=True)(batch)
    plain = compile_column(e)(batch)
    assert compact.type == plain.type == W
    assert compact.data.dtype == np.int64
    assert _values(Column(W, np.array(compact.data.tolist(), dtype=object),
                          compact.validity)) == _values(plain)
    want = [(p * d if p is not None and d is not None else None) if k is not None and k > 0
            else default for p, d, k in zip(ps, ds, ks)]
    assert _values(plain) == want


def test_a_branch_beyond_int64_takes_the_object_path() -> None:
    big = 10**15 - 1
    batch = _batch([big, 3], [10**15 - 1, 4], [1, 1])
    e = _expr(0)
    v = compile_expr(e, compact=True)(batch)
    assert widen(v).data.tolist() == [big * (10**15 - 1), 12]
    assert v.data.dtype == np.dtype(object)
