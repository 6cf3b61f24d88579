"""ARRAY functions beyond the constructors and inspection of `nested.py` (Doris 2.1 semantics):
array_sort / array_reverse_sort, array_distinct, array_compact, array_join, array_max / min /
sum / avg, array_position, array_slice, array_remove, array_union / intersect / except,
array_concat, arrays_overlap, array_with_constant, array_range, array_popback / popfront,
array_pushfront / pushback, and split_by_string (string -> ARRAY<STRING>).

Elements are the physical trees of `storage.nested` (DECIMAL unscaled, DATE days, ...), so
comparisons and sums work on them directly. Per-row Python loops over the decoded cells.
Set operations keep first-seen order and drop duplicates. Upstream: Doris
`vec/functions/array/*.cpp`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sql.errors import DorisError
from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.coercion import common_type
from sql.functions.nested import nested_out, physical, scalar_out, trees
from sql.functions.vector import Vec
from storage import nested
from storage.types import (
    BIGINT,
    BOOLEAN,
    DOUBLE,
    NULL,
    STRING,
    DataType,
    TypeKind,
    array_of,
)

Sig = tuple[list[DataType | None], DataType]


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable,
         propagate: bool = True) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, propagate))


def _no_signature(name: str, types: list[DataType]) -> DorisError:
    args = ", ".join(t.sql().upper() for t in types)
    return DorisError(f"Can not find the compatibility function signature: {name}({args})")


def _elem(t: DataType) -> DataType:
    return t.children[0] if t.kind is TypeKind.ARRAY else NULL


def _need_array(name: str, types: list[DataType], *positions: int) -> None:
    for i in positions:
        if types[i].kind not in (TypeKind.ARRAY, TypeKind.NULL):
            raise _no_signature(name, types)


def _values(v: Vec) -> list[Any]:
    """A scalar Vec's values as array elements (nested cells decoded), None for NULL."""
    vals = physical(v)
    if v.type.is_nested:
        return [None if x is None else nested.load(x) for x in vals]
    return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in vals]


def _key(x: Any) -> Any:
    """A hashable form of an element (nested elements are lists)."""
    return repr(x) if isinstance(x, (list, dict)) else x


def _dedup(xs: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for x in xs:
        k = _key(x)
        if k not in seen:
            seen.add(k)
            out.append(x)
    return out


# ---- one array in, one array out -----------------------------------------------------------
def _same_array(name: str) -> Callable[[list[DataType]], Sig]:
    def sig(types: list[DataType]) -> Sig:
        _need_array(name, types, 0)
        return [None], types[0]
    return sig


def _map_array(fn: Callable[[list[Any]], list[Any]]) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        return nested_out(a[0].type, [None if c is None else fn(c) for c in trees(a[0])])
    return impl


def array_sort(xs: list[Any]) -> list[Any]:
    """Ascending, NULLs first (Doris array_sort)."""
    return [x for x in xs if x is None] + sorted(x for x in xs if x is not None)


def array_reverse_sort(xs: list[Any]) -> list[Any]:
    """Descending, NULLs last (Doris array_reverse_sort)."""
    return sorted((x for x in xs if x is not None), reverse=True) + [x for x in xs if x is None]


def array_compact(xs: list[Any]) -> list[Any]:
    """Drops consecutive duplicates."""
    return [x for i, x in enumerate(xs) if i == 0 or _key(xs[i - 1]) != _key(x)]


for _name, _fn in (("array_sort", array_sort), ("array_reverse_sort", array_reverse_sort),
                   ("array_distinct", _dedup), ("array_compact", array_compact),
                   ("array_popback", lambda xs: xs[:-1]), ("array_popfront", lambda xs: xs[1:])):
    _reg(_name, 1, 1, _same_array(_name), _map_array(_fn))


# ---- aggregates over one array -------------------------------------------------------------
def _agg_sig(name: str) -> Callable[[list[DataType]], Sig]:
    def sig(types: list[DataType]) -> Sig:
        _need_array(name, types, 0)
        e = _elem(types[0])
        if name in ("array_max", "array_min"):
            if e.is_nested:
                raise _no_signature(name, types)
            return [None], e
        if not (e.is_numeric or e.kind is TypeKind.NULL) or e.kind is TypeKind.BOOLEAN:
            raise _no_signature(name, types)
        if name == "array_avg":
            return [None], DOUBLE
        if e.kind is TypeKind.DECIMAL:
            return [None], DataType(TypeKind.DECIMAL, precision=38, scale=e.scale)
        return [None], DOUBLE if e.is_float else BIGINT if e.kind is not TypeKind.LARGEINT else e
    return sig


def _agg(name: str) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        e = _elem(a[0].type)
        scale = 10 ** e.scale if e.kind is TypeKind.DECIMAL else 1
        out: list[Any] = []
        for c in trees(a[0]):
            xs = [x for x in c if x is not None] if c is not None else []
            if not xs:
                out.append(None)
            elif name == "array_max":
                out.append(max(xs))
            elif name == "array_min":
                out.append(min(xs))
            elif name == "array_sum":
                out.append(sum(xs))
            else:
                out.append(sum(xs) / len(xs) / scale)
        _, ret = _agg_sig(name)([a[0].type])
        return scalar_out(ret, out)
    return impl


for _name in ("array_max", "array_min", "array_sum", "array_avg"):
    _reg(_name, 1, 1, _agg_sig(_name), _agg(_name))


# ---- array and element ---------------------------------------------------------------------
def _with_element_sig(name: str, ret: DataType | None) -> Callable[[list[DataType]], Sig]:
    def sig(types: list[DataType]) -> Sig:
        _need_array(name, types, 0)
        e = _elem(types[0])
        target = common_type([e, types[1]]) if e.kind is not TypeKind.NULL else types[1]
        arr = array_of(target)
        return [arr if arr != types[0] else None, target], ret if ret is not None else arr
    return sig


def _element_rows(a: list[Vec]) -> list[tuple[Any, Any]]:
    return list(zip(trees(a[0]), _values(a[1])))


def _position(a: list[Vec], env: EvalEnv) -> Vec:
    out: list[int | None] = []
    for c, v in _element_rows(a):
        if c is None:
            out.append(None)
            continue
        k = _key(v)
        out.append(next((i + 1 for i, x in enumerate(c) if _key(x) == k), 0))
    return scalar_out(BIGINT, out)


def _remove(a: list[Vec], env: EvalEnv) -> Vec:
    t = array_of(common_type([_elem(a[0].type), a[1].type]))
    return nested_out(t, [None if c is None else [x for x in c if _key(x) != _key(v)]
                          for c, v in _element_rows(a)])


def _push(front: bool) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        e = _elem(a[0].type)
        t = array_of(common_type([e, a[1].type]) if e.kind is not TypeKind.NULL else a[1].type)
        return nested_out(t, [None if c is None else ([v] + c if front else c + [v])
                              for c, v in _element_rows(a)])
    return impl


_reg("array_position", 2, 2, _with_element_sig("array_position", BIGINT), _position,
     propagate=False)
_reg("array_remove", 2, 2, _with_element_sig("array_remove", None), _remove)
_reg("array_pushfront", 2, 2, _with_element_sig("array_pushfront", None), _push(True),
     propagate=False)
_reg("array_pushback", 2, 2, _with_element_sig("array_pushback", None), _push(False),
     propagate=False)


def _slice_sig(types: list[DataType]) -> Sig:
    _need_array("array_slice", types, 0)
    return [None] + [BIGINT] * (len(types) - 1), types[0]


def array_slice(xs: list[Any], offset: int, length: int | None) -> list[Any]:
    """1-based offset, negative counts from the end; 0 or out of range gives []."""
    n = len(xs)
    if offset > 0:
        start = offset - 1
    elif offset < 0 and -offset <= n:
        start = n + offset
    else:
        return []
    if start >= n:
        return []
    end = n if length is None else (start + length if length >= 0 else n + length)
    return xs[start:max(start, end)]


def _slice(a: list[Vec], env: EvalEnv) -> Vec:
    offsets = physical(a[1])
    lengths = physical(a[2]) if len(a) > 2 else [None] * len(offsets)
    return nested_out(a[0].type, [None if c is None else array_slice(c, o, n)
                                  for c, o, n in zip(trees(a[0]), offsets, lengths)])


_reg("array_slice", 2, 3, _slice_sig, _slice)


# ---- several arrays ------------------------------------------------------------------------
def _arrays_sig(name: str, ret: DataType | None) -> Callable[[list[DataType]], Sig]:
    def sig(types: list[DataType]) -> Sig:
        _need_array(name, types, *range(len(types)))
        elems = [_elem(t) for t in types if _elem(t).kind is not TypeKind.NULL]
        arr = array_of(common_type(elems) if elems else NULL)
        return [arr if t != arr and t.kind is not TypeKind.NULL else None for t in types], (
            ret if ret is not None else arr)
    return sig


def _set_op(fn: Callable[[list[list[Any]]], Any], ret: DataType | None
            ) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        cols = [trees(v) for v in a]
        out = [None if any(c is None for c in row) else fn(list(row)) for row in zip(*cols)]
        if ret is not None:
            return scalar_out(ret, out)
        elems = [_elem(v.type) for v in a if _elem(v.type).kind is not TypeKind.NULL]
        return nested_out(array_of(common_type(elems) if elems else NULL), out)
    return impl


def _union(rows: list[list[Any]]) -> list[Any]:
    return _dedup([x for r in rows for x in r])


def _intersect(rows: list[list[Any]]) -> list[Any]:
    rest = [{_key(x) for x in r} for r in rows[1:]]
    return [x for x in _dedup(rows[0]) if all(_key(x) in s for s in rest)]


def _except(rows: list[list[Any]]) -> list[Any]:
    other = {_key(x) for x in rows[1]}
    return [x for x in _dedup(rows[0]) if _key(x) not in other]


def _overlap(rows: list[list[Any]]) -> int:
    other = {_key(x) for x in rows[1] if x is not None}
    return int(any(_key(x) in other for x in rows[0] if x is not None))


_reg("array_union", 2, -1, _arrays_sig("array_union", None), _set_op(_union, None))
_reg("array_intersect", 2, -1, _arrays_sig("array_intersect", None), _set_op(_intersect, None))
_reg("array_except", 2, 2, _arrays_sig("array_except", None), _set_op(_except, None))
_reg("array_concat", 1, -1, _arrays_sig("array_concat", None),
     _set_op(lambda rows: [x for r in rows for x in r], None))
_reg("arrays_overlap", 2, 2, _arrays_sig("arrays_overlap", BOOLEAN), _set_op(_overlap, BOOLEAN))


# ---- builders ------------------------------------------------------------------------------
def _with_constant(a: list[Vec], env: EvalEnv) -> Vec:
    counts = physical(a[0])
    vals = _values(a[1])
    return nested_out(array_of(a[1].type), [None if n is None else [v] * max(0, n)
                                            for n, v in zip(counts, vals)])


def _range(a: list[Vec], env: EvalEnv) -> Vec:
    cols = [physical(v) for v in a]
    out: list[Any] = []
    for row in zip(*cols):
        if any(x is None for x in row):
            out.append(None)
            continue
        start, end, step = (0, row[0], 1) if len(row) == 1 else (
            row[0], row[1], row[2] if len(row) > 2 else 1)
        out.append(None if step <= 0 else list(range(start, end, step)))
    return nested_out(array_of(BIGINT), out)


_reg("array_with_constant", 2, 2, lambda t: ([BIGINT, None], array_of(t[1])), _with_constant,
     propagate=False)
_reg("array_range", 1, 3, lambda t: ([BIGINT] * len(t), array_of(BIGINT)), _range)


# ---- strings -------------------------------------------------------------------------------
def _text(x: Any) -> str:
    if isinstance(x, bytes):
        return x.decode("utf-8", "replace")
    return str(x)


def _join_sig(types: list[DataType]) -> Sig:
    _need_array("array_join", types, 0)
    return [None] + [STRING] * (len(types) - 1), STRING


def _join(a: list[Vec], env: EvalEnv) -> Vec:
    e = _elem(a[0].type)
    if e.is_nested:
        raise DorisError("array_join does not support nested arrays")
    seps = _values(a[1])
    reps = _values(a[2]) if len(a) > 2 else [None] * len(seps)
    out: list[Any] = []
    for c, sep, rep in zip(trees(a[0]), seps, reps):
        if c is None:
            out.append(None)
            continue
        texts = iter(_texts(e, [x for x in c if x is not None]))
        parts = [next(texts) if x is not None else rep for x in c]
        out.append(sep.join(p for p in parts if p is not None))
    return scalar_out(STRING, out)


def _texts(t: DataType, xs: list[Any]) -> list[str]:
    """Elements as text, the cast-to-string form of their type."""
    if t.is_string or t.kind is TypeKind.NULL or not xs:
        return [_text(x) for x in xs]
    from sql.functions.cast import cast_vec  # cast imports the registry: bind late

    return [_text(x) for x in cast_vec(scalar_out(t, xs), STRING).data.tolist()]


def split_by_string(s: str, sep: str) -> list[str]:
    """Doris: an empty separator splits into characters."""
    return list(s) if sep == "" else s.split(sep)


_reg("array_join", 2, 3, _join_sig, _join)
_reg("split_by_string", 2, 2, lambda t: ([STRING, STRING], array_of(STRING)),
     lambda a, env: nested_out(array_of(STRING), [
         split_by_string(_text(s), _text(p)) for s, p in zip(_values(a[0]), _values(a[1]))]))
