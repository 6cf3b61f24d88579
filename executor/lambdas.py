"""Evaluation of `array_map(LambdaExpr, arrays.., outer..)` (sql/binder/bind_lambdas.py).

Per batch: the arrays' cells are decoded once, their elements concatenated into one column per
lambda variable, each outer argument repeated once per element of its row, and the body is
evaluated ONCE over that element batch by the ordinary expression compiler (vectorised; no
Python call per element). The results are cut back into one array per row. A row where any
array is NULL gives NULL; arrays of one row must have equal lengths (Doris' error otherwise).
Upstream: Doris BE `vec/exprs/lambda_function/varray_map_function.cpp`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain, compress

import numpy as np

from sql.binder.bind_lambdas import LambdaExpr
from sql.binder.expressions import Call, Expr
from sql.errors import DorisError
from sql.functions.lambdas import element_values
from sql.functions.nested import nested_out, scalar_out, trees
from sql.functions.vector import Vec
from storage.batch import Batch
from storage.types import BIGINT, NULL, TypeKind

Cache = dict[str, Vec]
Node = Callable[[Batch, Cache], Vec]
Compiler = Callable[[Expr, "threading.Event | None"], Node]


def is_lambda_call(e: Expr) -> bool:
    return isinstance(e, Call) and e.name == "array_map" and bool(e.args) and isinstance(
        e.args[0], LambdaExpr)


@dataclass
class Mapped:
    """One batch's array_map before encoding: per row NULL-ness and element count, the first
    array's elements (flattened, NULL rows left out) and the body's value per element."""

    is_null: np.ndarray
    lengths: np.ndarray
    first: list[object]
    values: list[object]

    def rows(self) -> list[list[object] | None]:
        ends = np.cumsum(self.lengths).tolist()
        starts = [0, *ends[:-1]]
        return [None if null else self.values[a:b]
                for null, a, b in zip(self.is_null.tolist(), starts, ends)]


def _mapper(e: Call, cancel: threading.Event | None, compile_node: Compiler
            ) -> Callable[[Batch, Cache], Mapped]:
    lam = e.args[0]
    assert isinstance(lam, LambdaExpr)
    spec = lam.body
    n_arrays = len(spec.variables)
    array_nodes = [compile_node(a, cancel) for a in e.args[1:1 + n_arrays]]
    outer_nodes = [compile_node(a, cancel) for a in e.args[1 + n_arrays:]]
    element_types = [a.dtype.children[0] if a.dtype.kind is TypeKind.ARRAY else NULL
                     for a in e.args[1:1 + n_arrays]]
    body = compile_node(spec.expr, cancel)
    names = spec.variables + spec.outer

    def run(batch: Batch, cache: Cache) -> Mapped:
        cells = [trees(node(batch, cache)) for node in array_nodes]
        outers = [node(batch, cache) for node in outer_nodes]
        n = batch.num_rows
        sizes = [np.fromiter((-1 if c is None else len(c) for c in col), np.int64, count=n)
                 for col in cells]
        is_null = np.zeros(n, np.bool_)
        for size in sizes:
            is_null |= size < 0
        for j, size in enumerate(sizes[1:], start=2):
            bad = np.flatnonzero((size != sizes[0]) & ~is_null)
            if len(bad):
                raise DorisError(_size_error(int(sizes[0][bad[0]]), j, int(size[bad[0]])))
        lengths = np.where(is_null, 0, sizes[0])
        if not lengths.any():
            return Mapped(is_null, lengths, [], [])
        keep = (~is_null).tolist()
        flats = [list(chain.from_iterable(compress(col, keep))) for col in cells]
        columns = [scalar_out(t, flat).to_column() for flat, t in zip(flats, element_types)]
        rows = np.repeat(np.arange(n), lengths)
        for v in outers:
            valid = None if v.validity is None else v.validity[rows]
            columns.append(Vec(v.type, v.data[rows], valid).to_column())
        values = element_values(body(Batch(names, tuple(columns)), {}))
        return Mapped(is_null, lengths, flats[0], values)

    return run


def compile_array_map(e: Call, cancel: threading.Event | None, compile_node: Compiler) -> Node:
    mapped = _mapper(e, cancel, compile_node)
    out_type = e.type

    def run(batch: Batch, cache: Cache) -> Vec:
        return nested_out(out_type, mapped(batch, cache).rows())

    return run


# consumers of a mapped array that read it without its cells (no encode + decode between)
_FUSED = frozenset({"array_count", "array_first_index", "array_last_index", "array_filter"})


def is_fused_call(e: Expr) -> bool:
    """array_count / array_first_index / array_last_index (array_map(..)) and
    array_filter(a, array_map(l, a, ..)): the forms the lambda rewrites produce."""
    if not (isinstance(e, Call) and e.name in _FUSED and e.args and is_lambda_call(e.args[-1])):
        return False
    inner = e.args[-1]
    assert isinstance(inner, Call)
    if e.name == "array_filter":
        return len(e.args) == 2 and e.args[0] == inner.args[1]
    return len(e.args) == 1


def compile_fused(e: Call, cancel: threading.Event | None, compile_node: Compiler) -> Node:
    inner = e.args[-1]
    assert isinstance(inner, Call)
    mapped = _mapper(inner, cancel, compile_node)
    name, out_type = e.name, e.type

    def run(batch: Batch, cache: Cache) -> Vec:
        m = mapped(batch, cache)
        n = len(m.lengths)
        truth = np.fromiter((x is not None and x != 0 for x in m.values), np.bool_,
                            count=len(m.values))
        row_of = np.repeat(np.arange(n, dtype=np.int64), m.lengths)
        if name == "array_filter":
            kept = np.bincount(row_of[truth], minlength=n).tolist()
            chosen = list(compress(m.first, truth.tolist()))
            out: list[list[object] | None] = []
            pos = 0
            for null, k in zip(m.is_null.tolist(), kept):
                out.append(None if null else chosen[pos:pos + k])
                pos += k
            return nested_out(out_type, out)
        if name == "array_count":
            return Vec(BIGINT, np.bincount(row_of[truth], minlength=n).astype(np.int64), None)
        position = np.arange(len(m.values), dtype=np.int64) - np.repeat(
            np.cumsum(m.lengths) - m.lengths, m.lengths) + 1
        if name == "array_last_index":
            idx = np.zeros(n, np.int64)
            np.maximum.at(idx, row_of[truth], position[truth])
        else:
            idx = np.full(n, np.iinfo(np.int64).max, np.int64)
            np.minimum.at(idx, row_of[truth], position[truth])
            idx[idx == np.iinfo(np.int64).max] = 0
        return Vec(BIGINT, idx, None)

    return run


def _size_error(first: int, position: int, size: int) -> str:
    return ("in array map function, the input column size are not equal completely, nested "
            f"column data rows 1st size is {first}, {position}th size is {size}.")
