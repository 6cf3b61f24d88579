"""Column predicates storage understands: the closed set indexes and delete versions evaluate.

`ColumnPredicate(column, op, values)` compares one column with constants (physical values, see
`storage/types.py`). The executor pushes them into scans (`ReadOptions`), DELETE stores them on
a delete version, and segment indexes (short key, zone map, later bloom filter and bitmap) use
them to skip data without the SQL expression IR. `evaluate` is the exact row-level semantics
(SQL three-valued logic: NULL never satisfies a comparison).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from storage.batch import DEFAULT_BATCH_SIZE, Column

OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null")


@dataclass(frozen=True, slots=True)
class ColumnPredicate:
    column: str
    op: str  # one of OPS
    values: tuple[object, ...] = ()  # physical values (storage/types.py)

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown predicate operator {self.op!r}")


@dataclass(frozen=True, slots=True)
class ReadOptions:
    columns: tuple[str, ...]
    predicates: tuple[ColumnPredicate, ...] = ()
    batch_size: int = DEFAULT_BATCH_SIZE


def evaluate(pred: ColumnPredicate, col: Column) -> np.ndarray:
    """Bool mask of the rows of `col` that satisfy `pred` (NULL rows never match except IS NULL)."""
    n = len(col)
    nulls = col.null_mask()
    if pred.op == "is_null":
        return nulls.copy()
    if pred.op == "is_not_null":
        return ~nulls
    values = col.string_values() if col.offsets is not None else col.data
    op = pred.op
    if op in ("in", "not_in"):
        wanted = list(pred.values)
        if values.dtype == np.dtype(object):
            hit = np.fromiter((v in set(wanted) for v in values), dtype=np.bool_, count=n)
        else:
            hit = np.isin(values, np.array(wanted, dtype=values.dtype)) if wanted else np.zeros(n, np.bool_)
        mask = hit if op == "in" else ~hit
    else:
        v = pred.values[0]
        if values.dtype == np.dtype(object):
            cmp = {"=": lambda a: a == v, "!=": lambda a: a != v, "<": lambda a: a < v,
                   "<=": lambda a: a <= v, ">": lambda a: a > v, ">=": lambda a: a >= v}[op]
            mask = np.fromiter((cmp(a) for a in values), dtype=np.bool_, count=n)
        else:
            scalar = np.array(v).astype(values.dtype) if not isinstance(v, float) else v
            mask = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
                    ">": np.greater, ">=": np.greater_equal}[op](values, scalar)
    return mask & ~nulls
