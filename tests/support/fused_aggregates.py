"""Shared pieces of the fused-aggregate tests (tests/unit/executor/test_fused_aggregate.py for
the global path, test_fused_group_by.py for GROUP BY): the integer programs the kernels are
checked on, the columns and aggregate calls of the fused-vs-general operator tests, and the
value comparison they use."""

from __future__ import annotations

import math

from executor.kernels.fused_aggregate import (
    OP_ADD,
    OP_COL,
    OP_CONST,
    OP_MUL,
    OP_NEG,
    OP_SCALE,
    OP_SUB,
)
from sql.binder.expressions import AggregateCall, Arithmetic, Cast, ColumnRef, Literal, Negate
from storage.types import BIGINT, DOUBLE, STRING, TINYINT, decimal

# programs over two integer columns and one constant (kernel vs reference)
INT_PROGRAMS = [
    [(OP_COL, 0)],
    [(OP_COL, 0), (OP_COL, 1), (OP_MUL, 0)],
    [(OP_COL, 0), (OP_CONST, 0), (OP_COL, 1), (OP_SUB, 0), (OP_MUL, 0)],
    [(OP_COL, 1), (OP_SCALE, 2), (OP_COL, 0), (OP_ADD, 0), (OP_NEG, 0)],
]

D152 = decimal(15, 2)
NAMES = ("q", "p", "d", "x", "f", "s")
TYPES = (TINYINT, D152, D152, BIGINT, DOUBLE, STRING)
Q, P, DISC, X, F, S = (ColumnRef(n, t) for n, t in zip(NAMES, TYPES))
ONE = Literal(100, decimal(3, 2))


def aggregate_calls() -> list[AggregateCall]:
    """TPC-H Q1's kinds of aggregates and more: DECIMAL programs, casts, negation, BIGINT near
    the kernels' bounds, floats with NaN / -0.0, COUNT of a column."""
    wide = decimal(31, 4)
    disc_price = Arithmetic("*", P, Arithmetic("-", Cast(ONE, decimal(16, 2)),
                                               Cast(DISC, decimal(16, 2)), decimal(16, 2)),
                            wide)
    return [
        AggregateCall("count", (), False, BIGINT),
        AggregateCall("sum", (Arithmetic("*", P, DISC, wide),), False, decimal(38, 4)),
        AggregateCall("sum", (disc_price,), False, decimal(38, 4)),
        AggregateCall("sum", (Cast(Q, BIGINT),), False, BIGINT),
        AggregateCall("avg", (Q,), False, DOUBLE),
        AggregateCall("avg", (P,), False, decimal(38, 6)),
        AggregateCall("min", (Negate(X, BIGINT),), False, BIGINT),
        AggregateCall("max", (Arithmetic("+", X, Cast(Q, BIGINT), BIGINT),), False, BIGINT),
        AggregateCall("sum", (X,), False, BIGINT),
        AggregateCall("count", (DISC,), False, BIGINT),
        AggregateCall("sum", (F,), False, DOUBLE),
        AggregateCall("min", (F,), False, DOUBLE),
        AggregateCall("max", (F,), False, DOUBLE),
        AggregateCall("avg", (F,), False, DOUBLE),
        AggregateCall("min", (DISC,), False, D152),
    ]


def same(a: object, b: object, split_float_sums: bool = False) -> bool:
    """Equal values of the same type, floats bit for bit. `split_float_sums`: a batch went to
    the general path after an int64 bound was reached, so float sums were added in two runs
    (the fused total and the general path's) combined at the end, as any two-phase plan adds
    them; SQL leaves float summation order open, so those agree to the last few ulps."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if split_float_sums:
            return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b and type(a) is type(b)
