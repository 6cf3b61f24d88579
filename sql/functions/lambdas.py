"""Higher-order ARRAY functions (Doris 2.1): the registry side of `array_map` and the array
forms the lambda forms are rewritten into, as Doris' Nereids rewrites them:

    array_map(lambda, a1, ..)       the lambda's value for each element (types below)
    array_filter(lambda, a1, ..)    array_filter(a1, array_map(lambda, a1, ..))
    array_filter(arr, bools)        the elements whose flag is true (0 and NULL drop)
    array_exists(lambda, ..)        array_exists(array_map(..)): ARRAY<BOOLEAN>, element-wise
    array_count(lambda, ..)         array_count(array_map(..)): BIGINT, NULL array -> 0
    array_first_index / array_last_index   1-based index of the first / last true flag, else 0
    array_first(lambda, a1)         element_at(array_filter(a1, array_map(..)), 1)
    array_last(lambda, a1)          element_at(array_filter(a1, array_map(..)), -1)
    array_sortby(src, keys)         src ordered by keys ascending, NULL keys first (stable);
                                    NULL keys array keeps src as is; lambda: keys = array_map

The lambda itself is bound by `sql/binder/bind_lambdas.py` and evaluated by
`executor/lambdas.py` (the body runs once per batch over the flattened elements); `array_map`'s
entry here is only its type rule. A flag is true when it is non-NULL and non-zero (a numeric or
boolean element; Doris casts the mapped array to ARRAY<BOOLEAN>). Upstream: Doris Nereids
`ArrayMap`, `ArrayFilter`, `ArrayExists`, `ArrayCount`, `ArrayFirstIndex`, `ArrayLastIndex`,
`ArrayFirst`, `ArrayLast`, `ArraySortBy`; BE `vec/functions/array/function_array_*.cpp`.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

from sql.errors import DorisError
from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.nested import nested_out, physical, trees
from sql.functions.vector import Vec
from storage import nested
from storage.types import BIGINT, BOOLEAN, DataType, TypeKind, array_of

Sig = tuple[list[DataType | None], DataType]

# the functions that take a lambda as their first argument (Doris 2.1); array_match_all /
# array_match_any and array_sort with a comparator came in Doris 3.0
LAMBDA_FUNCTIONS = frozenset({
    "array_map", "array_filter", "array_exists", "array_count", "array_first_index",
    "array_last_index", "array_first", "array_last", "array_sortby"})


def _no_signature(name: str, types: list[DataType]) -> DorisError:
    args = ", ".join(t.sql().upper() for t in types)
    return DorisError(f"Can not find the compatibility function signature: {name}({args})")


def element_values(v: Vec) -> list[Any]:
    """A Vec's values as array elements (physical trees, None for NULL, text as str)."""
    vals = physical(v)
    if v.type.is_nested:
        return [None if x is None else nested.load(x) for x in vals]
    return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in vals]


def _is_flag_array(t: DataType) -> bool:
    if t.kind is TypeKind.NULL:
        return True
    if t.kind is not TypeKind.ARRAY:
        return False
    e = t.children[0]
    return e.kind in (TypeKind.NULL, TypeKind.BOOLEAN) or (e.is_numeric and not e.is_nested)


def _flag(x: Any) -> int | None:
    """An element as a BOOLEAN: NULL stays NULL, otherwise non-zero is true."""
    return None if x is None else int(x != 0)


# ---- array_map: type rule only -------------------------------------------------------------
def _map_sig(types: list[DataType]) -> Sig:
    # args: (lambda, arrays.., outer columns..); the lambda's type is its body's type
    return [None] * len(types), array_of(types[0])


def _map_impl(a: list[Vec], env: EvalEnv) -> Vec:
    raise DorisError("The first arg of array_map must be lambda")


register_scalar(ScalarFunction("array_map", 1, -1, _map_sig, _map_impl, False))


# ---- flags: array_exists, array_count, array_first_index, array_last_index ----------------
def _flags_sig(name: str, ret: DataType | None) -> Callable[[list[DataType]], Sig]:
    def sig(types: list[DataType]) -> Sig:
        if not _is_flag_array(types[0]):
            raise _no_signature(name, types)
        return [None], ret if ret is not None else array_of(BOOLEAN)
    return sig


def _exists(a: list[Vec], env: EvalEnv) -> Vec:
    return nested_out(array_of(BOOLEAN), [None if c is None else [_flag(x) for x in c]
                                          for c in trees(a[0])])


def array_count(flags: list[Any] | None) -> int:
    return 0 if flags is None else sum(1 for x in flags if _flag(x))


def array_first_index(flags: list[Any] | None) -> int:
    return next((i + 1 for i, x in enumerate(flags or []) if _flag(x)), 0)


def array_last_index(flags: list[Any] | None) -> int:
    xs = flags or []
    return next((i + 1 for i in range(len(xs) - 1, -1, -1) if _flag(xs[i])), 0)


def flat_flags(rows: list[list[Any] | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row of each element, 1-based position in its row, truth) over all elements of all
    rows, NULL rows contributing none; one numpy pass instead of a loop per row."""
    lengths = np.fromiter((0 if r is None else len(r) for r in rows), np.int64, count=len(rows))
    flat = list(chain.from_iterable(r for r in rows if r))
    values = np.array([0 if x is None else x for x in flat], dtype=np.float64)
    row_of = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths
    position = np.arange(len(flat), dtype=np.int64) - starts[row_of] + 1
    return row_of, position, values != 0


def _count_impl(a: list[Vec], env: EvalEnv) -> Vec:
    rows = trees(a[0])
    row_of, _, truth = flat_flags(rows)
    counts = np.bincount(row_of[truth], minlength=len(rows)).astype(np.int64)
    return Vec(BIGINT, counts, None)


def _index_impl(last: bool) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        rows = trees(a[0])
        row_of, position, truth = flat_flags(rows)
        if last:
            out = np.zeros(len(rows), np.int64)
            np.maximum.at(out, row_of[truth], position[truth])
        else:
            out = np.full(len(rows), np.iinfo(np.int64).max, np.int64)
            np.minimum.at(out, row_of[truth], position[truth])
            out[out == np.iinfo(np.int64).max] = 0
        return Vec(BIGINT, out, None)
    return impl


register_scalar(ScalarFunction("array_exists", 1, 1, _flags_sig("array_exists", None), _exists))
# a NULL array counts nothing and has no index: 0, not NULL (Doris)
for _name, _impl in (("array_count", _count_impl), ("array_first_index", _index_impl(False)),
                     ("array_last_index", _index_impl(True))):
    register_scalar(ScalarFunction(_name, 1, 1, _flags_sig(_name, BIGINT), _impl, False))


# ---- array_filter(arr, flags) --------------------------------------------------------------
def _filter_sig(types: list[DataType]) -> Sig:
    if types[0].kind not in (TypeKind.ARRAY, TypeKind.NULL) or not _is_flag_array(types[1]):
        raise _no_signature("array_filter", types)
    return [None, None], types[0]


def array_filter(xs: list[Any], flags: list[Any]) -> list[Any]:
    """Doris pairs elements and flags by position and ignores the longer array's tail: its
    own page shows array_filter([1, 2, 3, 4, 5], [0, 1, 0]) = [2], and the 2.1 page says extra
    flags are ignored and a shorter flag array filters only the positions it covers. So
    different lengths are not an error (unlike array_sortby, where Doris raises)."""
    return [x for x, f in zip(xs, flags) if _flag(f)]


def _filter(a: list[Vec], env: EvalEnv) -> Vec:
    out = [None if c is None or f is None else array_filter(c, f)
           for c, f in zip(trees(a[0]), trees(a[1]))]
    return nested_out(a[0].type, out)


register_scalar(ScalarFunction("array_filter", 2, 2, _filter_sig, _filter))


# ---- array_sortby(src, keys) ---------------------------------------------------------------
def _sortby_sig(types: list[DataType]) -> Sig:
    for t in types:
        if t.kind not in (TypeKind.ARRAY, TypeKind.NULL):
            raise _no_signature("array_sortby", types)
    if types[1].kind is TypeKind.ARRAY and types[1].children[0].is_nested:
        raise _no_signature("array_sortby", types)
    return [None, None], types[0]


def array_sortby(src: list[Any], keys: list[Any] | None) -> list[Any]:
    """`src` ordered by `keys` ascending, NULL keys first, ties in their original order."""
    if keys is None:
        return src
    if len(keys) != len(src):
        raise DorisError(f"function array_sortby's 2 arrays have different element counts: "
                         f"{len(src)} and {len(keys)}")
    order = sorted(range(len(src)), key=lambda i: (keys[i] is not None, keys[i]
                                                   if keys[i] is not None else 0))
    return [src[i] for i in order]


def _sortby(a: list[Vec], env: EvalEnv) -> Vec:
    out = [None if c is None else array_sortby(c, k) for c, k in zip(trees(a[0]), trees(a[1]))]
    return nested_out(a[0].type, out)


register_scalar(ScalarFunction("array_sortby", 2, 2, _sortby_sig, _sortby, False))
