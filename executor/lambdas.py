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
from itertools import chain, compress

import numpy as np

from sql.binder.bind_lambdas import LambdaExpr
from sql.binder.expressions import Call, Expr
from sql.errors import DorisError
from sql.functions.lambdas import element_values
from sql.functions.nested import nested_out, scalar_out, trees
from sql.functions.vector import Vec
from storage.batch import Batch, Column
from storage.types import NULL, TypeKind

Cache = dict[str, Vec]
Node = Callable[[Batch, Cache], Vec]
Compiler = Callable[[Expr, "threading.Event | None"], Node]


def is_lambda_call(e: Expr) -> bool:
    return isinstance(e, Call) and e.name == "array_map" and bool(e.args) and isinstance(
        e.args[0], LambdaExpr)


def compile_array_map(e: Call, cancel: threading.Event | None, compile_node: Compiler) -> Node:
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
    out_type = e.type

    def run(batch: Batch, cache: Cache) -> Vec:
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
        keep = (~is_null).tolist()
        if not lengths.any():
            return nested_out(out_type, [None if null else [] for null in is_null.tolist()])
        columns: list[Column] = []
        for col, t in zip(cells, element_types):
            flat = list(chain.from_iterable(compress(col, keep)))
            columns.append(scalar_out(t, flat).to_column())
        rows = np.repeat(np.arange(n), lengths)
        for v in outers:
            valid = None if v.validity is None else v.validity[rows]
            columns.append(Vec(v.type, v.data[rows], valid).to_column())
        values = element_values(body(Batch(names, tuple(columns)), {}))
        ends = np.cumsum(lengths).tolist()
        starts = [0, *ends[:-1]]
        return nested_out(out_type, [None if null else values[a:b]
                                     for null, a, b in zip(is_null.tolist(), starts, ends)])

    return run


def _size_error(first: int, position: int, size: int) -> str:
    return ("in array map function, the input column size are not equal completely, nested "
            f"column data rows 1st size is {first}, {position}th size is {size}.")
