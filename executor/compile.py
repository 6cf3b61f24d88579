"""Expression compiler: bound IR -> a Python closure evaluating it over a Batch with numpy.

`compile_expr(expr)` walks the tree once and returns `fn(batch) -> Vec`; each node becomes a
closure over its children's closures, so per-batch work is only the vectorised numpy calls (no
tree walking, no isinstance dispatch per batch). Column decodes are cached per batch so a string
column used twice is decoded once. Constant-vs-column comparisons and IN lists of constants use
scalar fast paths. numba kernels (executor/kernels/) can later replace hot node types here.
Upstream: DuckDB `ExpressionExecutor`, Doris `VExprContext`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from executor.interruptible import call_in_chunks
from executor.kernels.strings import LikeProgram, like_kernel, like_program
from executor.lambdas import compile_array_map, compile_fused, is_fused_call, is_lambda_call
from sql.binder.expressions import (
    SWAPPED_OP,
    AggregateCall,
    And,
    Arithmetic,
    Call,
    Case,
    Cast,
    ColumnRef,
    Comparison,
    Expr,
    InList,
    IsNull,
    Like,
    Literal,
    Negate,
    Not,
    Or,
)
from sql.functions import EvalEnv, scalar_function
from sql.functions.cast import cast_vec
from sql.functions.operators import (
    arithmetic,
    case,
    compare,
    compare_scalar,
    in_constants,
    in_vectors,
    is_null,
    like,
    logical_and,
    logical_not,
    logical_or,
    negate,
)
from sql.functions.temporal import in_date_range
from sql.functions.text_columns import substring_column
from sql.functions.vector import Vec, and_valid, bool_vec, constant, truthy, widen
from storage.batch import Batch, Column
from storage.segment.encoding import varlen_compare_const
from storage.types import BLOB_KINDS, DataType, TypeKind

Cache = dict[str, Vec]
Node = Callable[[Batch, Cache], Vec]
TextNode = Callable[[Batch, Cache], Column]  # a text expression as a var-len Column


def compile_expr(expr: Expr, cancel: threading.Event | None = None,
                 compact: bool = False) -> Callable[[Batch], Vec]:
    """Compile `expr`; the result evaluates it on a batch (which must have >= 1 column).

    `compact=True` lets a wide DECIMAL arithmetic result stay an exact int64 array (see
    sql/functions/operators.py); only consumers that handle that (SUM/AVG kernels) ask for it.
    """
    node = _compile_compact(expr, cancel) if compact and _is_compactable(expr) else _compile(
        expr, cancel)

    def run(batch: Batch) -> Vec:
        return node(batch, {})

    return run


def compile_column(expr: Expr, cancel: threading.Event | None = None,
                   compact: bool = False) -> Callable[[Batch], Column]:
    """Like `compile_expr` but returns a storage Column; column refs pass through untouched.

    With `compact=True` a wide DECIMAL arithmetic result may come as an int64 Column.
    """
    if isinstance(expr, ColumnRef):
        name = expr.name
        return lambda batch: batch.column(name)
    if compact and _is_compactable(expr):
        node = _compile_compact(expr, cancel)

        def run(batch: Batch) -> Column:
            v = node(batch, {})
            valid = None if v.validity is None or v.validity.all() else v.validity
            return Column(v.type, np.ascontiguousarray(v.data), valid)

        return run
    fn = compile_expr(expr, cancel)
    return lambda batch: fn(batch).to_column()


def compile_predicate(expr: Expr, cancel: threading.Event | None = None
                      ) -> Callable[[Batch], np.ndarray]:
    """Compile a filter: returns the bool mask of rows where `expr` is TRUE (NULL = drop)."""
    fn = compile_expr(expr, cancel)
    return lambda batch: truthy(fn(batch))


def _compile(e: Expr, cancel: threading.Event | None) -> Node:
    if isinstance(e, ColumnRef):
        name = e.name

        def col(batch: Batch, cache: Cache) -> Vec:
            v = cache.get(name)
            if v is None:
                v = Vec.from_column(batch.column(name))
                cache[name] = v
            return v

        return col
    if isinstance(e, Literal):
        t, value = e.type, e.value
        return lambda batch, cache: constant(t, value, batch.num_rows)
    if isinstance(e, Cast):
        arg = _compile(e.arg, cancel)
        t = e.type
        if e.arg.dtype.is_varlen and not (_is_text(t) and _is_text(e.arg.dtype)):
            # parsing text loops over rows in Python: interruptible (text -> text is a relabel)
            def cast_rows(a: list[Vec], env: EvalEnv) -> Vec:
                return cast_vec(a[0], t)

            return lambda batch, cache: call_in_chunks(
                cast_rows, [arg(batch, cache)], batch.num_rows, cancel)
        return lambda batch, cache: cast_vec(arg(batch, cache), t)
    if _is_arith(e):
        # arithmetic chains pass compact wide results between them; others see objects
        arith = _compile_arith(e, cancel)
        return lambda batch, cache: widen(arith(batch, cache))
    if isinstance(e, Comparison):
        return _comparison(e, cancel)
    if isinstance(e, (And, Or)):
        args = [_compile(a, cancel) for a in e.args]
        combine = logical_and if isinstance(e, And) else logical_or
        return lambda batch, cache: combine([a(batch, cache) for a in args])
    if isinstance(e, Not):
        arg = _compile(e.arg, cancel)
        return lambda batch, cache: logical_not(arg(batch, cache))
    if isinstance(e, IsNull):
        arg = _compile(e.arg, cancel)
        neg = e.negated
        return lambda batch, cache: is_null(arg(batch, cache), neg)
    if isinstance(e, Like):
        src = _text_source(e.arg, cancel)
        if (src is not None and isinstance(e.pattern, Literal)
                and isinstance(e.pattern.value, str)):
            prog = like_program(e.pattern.value, e.escape)
            if prog is not None:
                return _like_text_column(src, prog, e)
        arg, pat = _compile(e.arg, cancel), _compile(e.pattern, cancel)
        neg, esc = e.negated, e.escape

        def like_rows(a: list[Vec], env: EvalEnv) -> Vec:
            return like(a[0], a[1], neg, esc)

        return lambda batch, cache: call_in_chunks(
            like_rows, [arg(batch, cache), pat(batch, cache)], batch.num_rows, cancel)
    if isinstance(e, InList):
        return _in_list(e, cancel)
    if isinstance(e, Case):
        conds = [_compile(c, cancel) for c, _ in e.whens]
        thens = [_compile(t, cancel) for _, t in e.whens]
        default = _compile(e.default, cancel) if e.default is not None else None
        t = e.type

        def run_case(batch: Batch, cache: Cache) -> Vec:
            return case([c(batch, cache) for c in conds], [th(batch, cache) for th in thens],
                        default(batch, cache) if default is not None else None, t,
                        batch.num_rows)

        return run_case
    if isinstance(e, Call):
        if is_lambda_call(e):  # array_map(x -> .., arr): the body runs over the elements
            return compile_array_map(e, cancel, _compile)
        if is_fused_call(e):  # array_count(array_map(..)), ..: no cells in between
            return compile_fused(e, cancel, _compile)
        return _call_value(e, cancel)
    if isinstance(e, AggregateCall):
        # ValueError: what evaluation errors are reported as (not a caller's type mistake)
        raise ValueError(  # noqa: TRY004
            f"aggregate {e.sql()} cannot be evaluated as a scalar expression")
    raise ValueError(f"cannot compile {type(e).__name__}")


def _is_arith(e: Expr) -> bool:
    return isinstance(e, (Arithmetic, Negate))


def _is_compactable(e: Expr) -> bool:
    """A wide DECIMAL value that may be computed as exact int64 (compact): arithmetic, and a
    CASE whose branches are (TPC-H Q14 / Q8: `sum(CASE WHEN .. THEN price * (1 - disc) ELSE 0
    END)`, which otherwise turned every row's value into a Python int)."""
    return _is_arith(e) or (isinstance(e, Case) and e.type.is_object and e.type.is_decimal)


def _compile_compact(e: Expr, cancel: threading.Event | None) -> Node:
    if not isinstance(e, Case):
        return _compile_arith(e, cancel)
    conds = [_compile(c, cancel) for c, _ in e.whens]
    thens = [_compact_operand(x, cancel) for _, x in e.whens]
    default = _compact_operand(e.default, cancel) if e.default is not None else None
    t = e.type

    def run_case(batch: Batch, cache: Cache) -> Vec:
        cs = [c(batch, cache) for c in conds]
        ts = [th(batch, cache) for th in thens]
        d = default(batch, cache) if default is not None else None
        if all(v.data.dtype == np.int64 for v in (*ts, *(() if d is None else (d,)))):
            # every branch is exact int64: choose per row in int64, keep the wide type
            out = case(cs, ts, d, _COMPACT_LAYOUT, batch.num_rows)
            return Vec(t, out.data, out.validity)
        return case(cs, [widen(x) for x in ts], None if d is None else widen(d), t,
                    batch.num_rows)

    return run_case


# the physical layout a compact wide value has (int64), to run `case` over
_COMPACT_LAYOUT = DataType(TypeKind.BIGINT)
# a wide literal stays an int64 constant when it is far from int64's range
_COMPACT_LITERAL_LIMIT = 2**62


def _compact_operand(e: Expr, cancel: threading.Event | None) -> Node:
    if _is_compactable(e):
        return _compile_compact(e, cancel)
    if (isinstance(e, Literal) and e.type.is_object and isinstance(e.value, int)
            and abs(e.value) < _COMPACT_LITERAL_LIMIT):
        t, value = e.type, e.value
        return lambda batch, cache: Vec(t, np.full(batch.num_rows, value, np.int64))
    return _compile(e, cancel)


def _compile_arith(e: Expr, cancel: threading.Event | None) -> Node:
    """An arithmetic node whose wide DECIMAL result may be compact (int64), as may be the
    results of its arithmetic children."""
    def child(x: Expr) -> Node:
        return _compile_arith(x, cancel) if _is_arith(x) else _compile(x, cancel)

    if isinstance(e, Arithmetic):
        left, right = child(e.left), child(e.right)
        op, t = e.op, e.type
        return lambda batch, cache: arithmetic(op, left(batch, cache), right(batch, cache), t)
    assert isinstance(e, Negate)
    arg = child(e.arg)
    t = e.type
    return lambda batch, cache: negate(arg(batch, cache), t)


def _comparison(e: Comparison, cancel: threading.Event | None) -> Node:
    op = e.op
    left, right = e.left, e.right
    if isinstance(left, Literal) and not isinstance(right, Literal):
        left, right, op = right, left, SWAPPED_OP[op]
    if isinstance(right, Literal) and left.dtype == right.type:
        src = _text_source(left, cancel)
        if src is not None and right.value is not None and op != "<=>":
            return _compare_text_column(src, op, right.value)
        arg = _compile(left, cancel)
        value = right.value
        return lambda batch, cache: compare_scalar(op, arg(batch, cache), value)
    lf, rf = _compile(left, cancel), _compile(right, cancel)
    return lambda batch, cache: compare(op, lf(batch, cache), rf(batch, cache))


def _in_list(e: InList, cancel: threading.Event | None) -> Node:
    arg = _compile(e.arg, cancel)
    neg = e.negated
    if all(isinstance(v, Literal) and v.type == e.arg.dtype for v in e.values):
        values = [v.value for v in e.values]  # type: ignore[attr-defined]
        src = _text_source(e.arg, cancel)
        if src is not None and None not in values and len(values) <= 16:
            return _in_text_column(src, values, neg)
        return lambda batch, cache: in_constants(arg(batch, cache), values, neg)
    vals = [_compile(v, cancel) for v in e.values]
    return lambda batch, cache: in_vectors(arg(batch, cache), [v(batch, cache) for v in vals], neg)


# ---- string column vs constants, on the offsets+bytes buffers ------------------------------
# Decoding a string column into Python str objects costs far more than comparing its bytes;
# byte order is code point order for UTF-8, so the storage kernel gives the same answer.
_SIGN_TESTS = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
               ">": np.greater, ">=": np.greater_equal}


def _raw_text_column(e: Expr) -> bool:
    """A text column, possibly under a text-to-text CAST (CHAR -> VARCHAR: same values)."""
    if isinstance(e, Cast) and e.type.is_varlen and e.type.kind not in BLOB_KINDS:
        e = e.arg
    return isinstance(e, ColumnRef) and e.type.is_varlen and e.type.kind not in BLOB_KINDS


def _raw_text_name(e: Expr) -> str:
    return e.arg.name if isinstance(e, Cast) else e.name  # type: ignore[attr-defined]


def _is_text(t: DataType) -> bool:
    return t.is_varlen and t.kind not in BLOB_KINDS


def _retyped(col: Column, t: DataType) -> Column:
    return col if col.type == t else Column(t, col.data, col.validity, col.offsets)


# SUBSTRING(text, pos[, len]) with constant pos/len: computed on the Column by Arrow
_SUBSTRING_NAMES = frozenset({"substring", "substr", "mid"})


def _text_source(e: Expr, cancel: threading.Event | None) -> TextNode | None:
    """A node giving `e`'s values as a var-len Column (offsets + UTF-8 bytes) without decoding
    them into Python strings, for the constant comparisons / IN / LIKE above and for SUBSTRING
    as a value; None when `e` is no such expression (a text column, a text-to-text CAST of
    one, SUBSTRING of one with constant non-negative position and length)."""
    if _raw_text_column(e):
        name = _raw_text_name(e)
        return lambda batch, cache: batch.column(name)
    if isinstance(e, Cast) and _is_text(e.type) and _is_text(e.arg.dtype):
        # text -> text keeps the values (CHAR(15) -> VARCHAR(15) around Q22's SUBSTRING)
        inner_text = _text_source(e.arg, cancel)
        if inner_text is None:
            return None
        t = e.type
        return lambda batch, cache: _retyped(inner_text(batch, cache), t)
    if not (isinstance(e, Call) and e.name in _SUBSTRING_NAMES and 2 <= len(e.args) <= 3
            and e.type == e.args[0].dtype):
        return None
    bounds = e.args[1:]
    if not all(isinstance(b, Literal) and isinstance(b.value, int) for b in bounds):
        return None
    pos = bounds[0].value  # type: ignore[attr-defined]
    length = bounds[1].value if len(bounds) > 1 else None  # type: ignore[attr-defined]
    if pos < 0:
        return None
    inner = _text_source(e.args[0], cancel)
    if inner is None:
        return None
    rows = _call(e, cancel)  # the row-by-row path: bytes that are not UTF-8

    def run(batch: Batch, cache: Cache) -> Column:
        out = substring_column(inner(batch, cache), pos, length)
        if out is None:
            return rows(batch, cache).to_column()
        return out

    return run


def _sign(col: Column, value: object) -> np.ndarray:
    raw = str(value).encode("utf-8")
    assert col.offsets is not None  # a var-len column (checked by the caller)
    return varlen_compare_const(col.offsets, col.data, np.frombuffer(raw, np.uint8))


def _compare_text_column(src: TextNode, op: str, value: object) -> Node:
    test = _SIGN_TESTS[op]

    def run(batch: Batch, cache: Cache) -> Vec:
        col = src(batch, cache)
        if col.offsets is None:  # not var-len after all: the generic path
            return compare_scalar(op, Vec.from_column(col), value)
        return bool_vec(test(_sign(col, value), 0), col.validity)

    return run


def _like_text_column(src: TextNode, prog: LikeProgram, e: Like) -> Node:
    pat, starts = prog.packed()
    neg, esc, pattern = e.negated, e.escape, e.pattern.value  # type: ignore[attr-defined]

    def run(batch: Batch, cache: Cache) -> Vec:
        col = src(batch, cache)
        if col.offsets is None:
            v = Vec.from_column(col)
            return like(v, constant(e.pattern.dtype, pattern, len(v)), neg, esc)
        hit = like_kernel(col.offsets, col.data, pat, starts, prog.anchor_start, prog.anchor_end)
        return bool_vec(~hit if neg else hit, col.validity)

    return run


def _in_text_column(src: TextNode, values: list[object], negated: bool) -> Node:
    def run(batch: Batch, cache: Cache) -> Vec:
        col = src(batch, cache)
        if col.offsets is None:
            return in_constants(Vec.from_column(col), values, negated)
        hit = np.zeros(len(col), np.bool_)
        for v in values:
            hit |= _sign(col, v) == 0
        return bool_vec(~hit if negated else hit, col.validity)

    return run


def _call_value(e: Call, cancel: threading.Event | None) -> Node:
    """A call; SUBSTRING of a text column runs on the Column (`_text_source`)."""
    src = _text_source(e, cancel)
    if src is not None:
        return lambda batch, cache: Vec.from_column(src(batch, cache))
    return _call(e, cancel)


def _call(e: Call, cancel: threading.Event | None) -> Node:
    fn = scalar_function(e.name)
    args = [_compile(a, cancel) for a in e.args]
    t = e.type
    impl = fn.impl
    propagate = fn.propagate_nulls

    chunked = fn.row_independent
    temporal = t.kind in (TypeKind.DATE, TypeKind.DATETIME)

    def run_call(batch: Batch, cache: Cache) -> Vec:
        vals = [a(batch, cache) for a in args]
        if chunked:  # KILL / query_timeout reach a slow function inside a batch
            res = call_in_chunks(impl, vals, batch.num_rows, cancel)
        else:
            res = impl(vals, EvalEnv(batch.num_rows, cancel))
        valid = res.validity
        if propagate:
            valid = and_valid(valid, *(v.validity for v in vals))
        if temporal:
            return _date_range_null(Vec(t, res.data, valid))
        return Vec(t, res.data, valid)

    return run_call


def _date_range_null(v: Vec) -> Vec:
    """A date function's value outside 0000..9999 is NULL (Doris 2.1), never sent as a
    five-digit year: one vectorised range test per batch."""
    ok = in_date_range(v.type, v.data)
    if ok is None:
        return v
    return Vec(v.type, np.where(ok, v.data, 0).astype(v.data.dtype), and_valid(v.validity, ok))
