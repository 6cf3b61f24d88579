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
        lengths = np.zeros(n, np.int64)
        is_null = np.zeros(n, np.bool_)
        for i in range(n):
            row = [c[i] for c in cells]
            if any(x is None for x in row):
                is_null[i] = True
                continue
            sizes = {len(x) for x in row}
            if len(sizes) > 1:
                raise DorisError(_size_error(row))
            lengths[i] = len(row[0])
        total = int(lengths.sum())
        if total == 0:
            return nested_out(out_type, [None if is_null[i] else [] for i in range(n)])
        columns: list[Column] = []
        for c, t in zip(cells, element_types):
            flat = [x for i, cell in enumerate(c) if not is_null[i] for x in cell]
            columns.append(scalar_out(t, flat).to_column())
        rows = np.repeat(np.arange(n), lengths)
        for v in outers:
            valid = None if v.validity is None else v.validity[rows]
            columns.append(Vec(v.type, v.data[rows], valid).to_column())
        values = element_values(body(Batch(names, tuple(columns)), {}))
        out: list[list[object] | None] = []
        pos = 0
        for i in range(n):
            k = int(lengths[i])
            out.append(None if is_null[i] else values[pos:pos + k])
            pos += k
        return nested_out(out_type, out)

    return run


def _size_error(row: list[list[object]]) -> str:
    first = len(row[0])
    for j, x in enumerate(row[1:], start=2):
        if len(x) != first:
            return ("in array map function, the input column size are not equal completely, "
                    f"nested column data rows 1st size is {first}, {j}th size is {len(x)}.")
    return "in array map function, the input column size are not equal completely"
