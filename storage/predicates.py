"""Column predicates storage understands: the closed set indexes and delete versions evaluate.

`ColumnPredicate(column, op, values)` compares one column with constants (physical values, see
`storage/types.py`). The executor pushes them into scans (`ReadOptions`), DELETE stores them on
a delete version, and segment indexes (short key, zone map, later bloom filter and bitmap) use
them to skip data without the SQL expression IR. `evaluate` is the exact row-level semantics
(SQL three-valued logic: NULL never satisfies a comparison).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from storage.batch import DEFAULT_BATCH_SIZE, Column

if TYPE_CHECKING:
    from storage.membership import MembershipTable

OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null", "in_bitmap",
       "in_bloom")
# Operators the indexes (short key, zone maps) understand; `in_bitmap` (a join's runtime filter,
# values = (IntegerSet,)) is evaluated row by row only; the filter's min / max travel as separate
# `>=` / `<=` predicates that the indexes do use. `in_bloom` (a join's runtime filter on string /
# float keys, values = (KeyBloomFilter,), storage/key_bloom.py) passes the rows whose key may be
# a build key: inexact (false positives pass), so only a join's own runtime filter uses it; the
# indexes prune with the min / max it carries (index_forms).
RUNTIME_FILTER_OPS = frozenset({"in_bitmap", "in_bloom"})
INDEXABLE_OPS = frozenset(OPS) - RUNTIME_FILTER_OPS


class IntegerSet:
    """A set of integers as a dense bitmap over [lo, lo + len(bits)): O(1) membership per row.

    Equality is identity (a filter built for one query is never compared by value)."""

    __slots__ = ("_count", "_table", "bits", "lo")

    def __init__(self, lo: int, bits: np.ndarray) -> None:
        self.lo = int(lo)
        self.bits = bits  # bool per value lo, lo + 1, ... (never modified once built)
        # built on first use, kept for every segment and window the filter tests
        self._table: MembershipTable | None = None
        self._count: int | None = None

    @classmethod
    def of(cls, values: np.ndarray) -> IntegerSet:
        if len(values) == 0:
            return cls(0, np.zeros(0, np.bool_))
        lo, hi = int(values.min()), int(values.max())
        bits = np.zeros(hi - lo + 1, np.bool_)
        bits[values.astype(np.int64) - lo] = True
        return cls(lo, bits)

    @property
    def hi(self) -> int:
        return self.lo + len(self.bits) - 1

    def __len__(self) -> int:
        if self._count is None:  # asked per segment (IN-list probes of the indexes)
            self._count = int(np.count_nonzero(self.bits))
        return self._count

    def __repr__(self) -> str:
        return f"IntegerSet(lo={self.lo}, span={len(self.bits)}, count={len(self)})"

    def contains(self, values: np.ndarray) -> np.ndarray:
        if self._table is None:
            from storage.membership import MembershipTable

            self._table = MembershipTable(self.lo, self.bits)
        return self._table.contains(values)


@dataclass(frozen=True, slots=True)
class ColumnPredicate:
    column: str
    op: str  # one of OPS
    values: tuple[object, ...] = ()  # physical values (storage/types.py)

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown predicate operator {self.op!r}")


def index_forms(pred: ColumnPredicate) -> list[ColumnPredicate]:
    """What the indexes may prune with for `pred`: itself, or for a key set its [min, max]."""
    if pred.op == "in_bloom":  # the indexes prune with the keys' [min, max]
        (keys,) = pred.values
        return [ColumnPredicate(pred.column, ">=", (keys.lo,)),  # type: ignore[attr-defined]
                ColumnPredicate(pred.column, "<=", (keys.hi,))]  # type: ignore[attr-defined]
    if pred.op != "in_bitmap":
        return [pred]
    (members,) = pred.values
    if not len(members.bits):  # type: ignore[attr-defined]
        return [ColumnPredicate(pred.column, "in", ())]
    return [ColumnPredicate(pred.column, ">=", (members.lo,)),  # type: ignore[attr-defined]
            ColumnPredicate(pred.column, "<=", (members.hi,))]  # type: ignore[attr-defined]


# Evaluation order inside a scan: the tests that usually keep the fewest rows first, so later
# predicate columns are decoded and tested only for the rows still alive.
_EVAL_RANK = {"=": 0, "in_bitmap": 1, "in_bloom": 1, "in": 1, "is_null": 2,
              "<": 3, "<=": 3, ">": 3, ">=": 3, "!=": 4, "not_in": 4, "is_not_null": 5}


def evaluation_rank(pred: ColumnPredicate) -> int:
    return _EVAL_RANK.get(pred.op, 9)


@dataclass(frozen=True, slots=True)
class Disjunction:
    """An OR of conjunctions of ColumnPredicates (disjunctive normal form): a row passes when
    every predicate of at least one branch holds. `a = 1 OR (b > 2 AND c IS NULL)` is
    `((a = 1,), (b > 2, c is_null))`. Storage evaluates it exactly, and the bitmap indexes answer
    it as a union of intersections when every column in it has one."""

    branches: tuple[tuple[ColumnPredicate, ...], ...]

    def columns(self) -> frozenset[str]:
        return frozenset(p.column.lower() for b in self.branches for p in b)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    columns: tuple[str, ...]
    predicates: tuple[ColumnPredicate, ...] = ()
    batch_size: int = DEFAULT_BATCH_SIZE
    # ANDed with `predicates`; each is exact like them (issue 14: OR trees reach the bitmap index)
    disjunctions: tuple[Disjunction, ...] = ()


def evaluate(pred: ColumnPredicate, col: Column) -> np.ndarray:
    """Bool mask of the rows of `col` that satisfy `pred` (NULL rows never match except IS NULL)."""
    n = len(col)
    if pred.op == "in_bitmap":  # a runtime key set: one membership pass, no NULL mask to build
        (members,) = pred.values
        hit = members.contains(col.data)  # type: ignore[attr-defined]
        return hit if col.validity is None else hit & col.validity
    nulls = col.null_mask()
    if pred.op == "is_null":
        return nulls.copy()
    if pred.op == "is_not_null":
        return ~nulls
    op = pred.op
    if op == "in_bloom":
        (keys,) = pred.values
        return keys.contains(col) & ~nulls  # type: ignore[attr-defined]
    if col.offsets is not None and op in ("in", "not_in") and len(pred.values) > 16:
        hit = _varlen_in(col, pred.values)
        return (hit if op == "in" else ~hit) & ~nulls
    if col.offsets is not None and (op not in ("in", "not_in") or len(pred.values) <= 16):
        return _evaluate_varlen(pred, col) & ~nulls
    values = col.string_values() if col.offsets is not None else col.data
    if op in ("in", "not_in"):
        wanted = list(pred.values)
        if values.dtype == np.dtype(object):
            members = set(wanted)
            hit = np.fromiter((v in members for v in values), dtype=np.bool_, count=n)
        else:
            hit = (np.isin(values, np.array(wanted, dtype=values.dtype)) if wanted
                   else np.zeros(n, np.bool_))
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


_SIGN_TESTS = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
               ">": np.greater, ">=": np.greater_equal}


def _evaluate_varlen(pred: ColumnPredicate, col: Column) -> np.ndarray:
    """Comparisons of a var-len column with constants on its offsets+bytes buffers (byte
    order = code point order for UTF-8), never building Python strings."""
    from storage.segment.encoding import varlen_compare_const

    offsets = col.offsets
    assert offsets is not None

    def sign(v: object) -> np.ndarray:
        if isinstance(v, str):
            raw = v.encode()
        elif isinstance(v, (bytes, bytearray, memoryview)):
            raw = bytes(v)
        else:
            raise TypeError(f"a string column compared with the non-string constant {v!r}")
        return varlen_compare_const(offsets, col.data, np.frombuffer(raw, np.uint8))

    if pred.op in ("in", "not_in"):
        hit = np.zeros(len(col), np.bool_)
        for v in pred.values:
            hit |= sign(v) == 0
        return hit if pred.op == "in" else ~hit
    return _SIGN_TESTS[pred.op](sign(pred.values[0]), 0)


def _varlen_in(col: Column, values: tuple[object, ...]) -> np.ndarray:
    """Rows of a var-len column equal to one of many constants (a runtime filter's `in` list
    holds up to 1024): hashed, then confirmed byte for byte in numba (storage/key_bloom.py)."""
    from storage.key_bloom import varlen_in

    return varlen_in(col, values)


def evaluate_disjunction(disjunction: Disjunction, column: Callable[[str], Column],
                         n: int) -> np.ndarray:
    """Bool mask of the n rows satisfying `disjunction` (OR of ANDs; NULL never satisfies a
    comparison, so a branch with a NULL operand fails unless it tests IS NULL). `column(name)`
    gives the n-row column a predicate names."""
    out = np.zeros(n, np.bool_)  # no branch: FALSE
    for branch in disjunction.branches:
        hit = np.ones(n, np.bool_)  # an empty conjunction: TRUE
        for p in branch:
            hit &= evaluate(p, column(p.column))
            if not hit.any():
                break
        out |= hit
    return out
