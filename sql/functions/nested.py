"""ARRAY / MAP / STRUCT functions (Doris 2.1 semantics), registered into `sql.functions`.

Constructors: array(..) (also `[..]`), map(k1, v1, ..) (also `{'k': v}`), struct(..) (also
`{v1, v2}`; fields named col1, col2, .. as in Doris) and named_struct('f1', v1, ..).
Access: element_at(array, i) / `array[i]` (1-based; negative counts from the end; out of range
gives NULL), element_at(map, key) / `map[key]`, struct_element(struct, 'name' | position).
Inspection: array_size (aliases size, cardinality; MAP too), array_contains, map_keys,
map_values, map_contains_key, map_contains_value. Casts between nested types and from/to strings
(`cast_nested`) convert element by element and give NULL for a value that does not convert,
as Doris' non-strict cast does.

Values are the canonical cells of `storage.nested` (bytes in a Vec's object array); each
implementation decodes the cells of a batch once. Upstream: Doris `function_array_element.h`,
`function_array_index.h`, `function_map.cpp`, `function_struct_element.cpp`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from sql.errors import DorisError
from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.coercion import common_type
from sql.functions.vector import Vec, object_array
from storage import nested
from storage.types import (
    BIGINT,
    BOOLEAN,
    NULL,
    STRING,
    DataType,
    TypeError_,
    TypeKind,
    array_of,
    map_of,
    struct_of,
)


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable, *aliases: str,
         propagate: bool = True) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, propagate), *aliases)


def _no_signature(name: str, types: list[DataType]) -> DorisError:
    args = ", ".join(t.sql().upper() for t in types)
    return DorisError(f"Can not find the compatibility function signature: {name}({args})")


# storage.nested.dump's text (compact, UTF-8, NaN kept) from one reused encoder: json.dumps
# with non-default arguments builds a new encoder per call (2.4x slower on short arrays)
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def trees(v: Vec) -> list[Any]:
    """The physical trees of a nested Vec's cells, None for NULL rows.

    The cells are canonical JSON, so a batch decodes with ONE json.loads of the cells joined
    into a JSON array (3x faster than a loads per cell); a cell that is not canonical bytes
    falls back to the per-cell path."""
    n = len(v.data)
    if v.type.kind is TypeKind.NULL:
        return [None] * n
    cells = v.data.tolist()
    if v.validity is not None:
        for i in np.flatnonzero(~v.validity).tolist():
            cells[i] = b"null"
    if not cells:
        return []
    try:
        out = json.loads(b"[" + b",".join(cells) + b"]")
    except (TypeError, ValueError):
        out = None
    if out is None or len(out) != n:
        valid = v.validity
        return [None if valid is not None and not valid[i] else nested.load(c)
                for i, c in enumerate(cells)]
    return out


def physical(v: Vec) -> list[Any]:
    """A scalar Vec's physical values, None for NULL rows."""
    vals = v.data.tolist()
    if v.type.kind is TypeKind.NULL:
        return [None] * len(vals)
    if v.validity is not None:
        for i in np.flatnonzero(~v.validity).tolist():
            vals[i] = None
    return vals


def nested_out(t: DataType, values: list[Any]) -> Vec:
    """Physical trees (None = NULL) -> a nested Vec of cells."""
    ok = np.fromiter((x is not None for x in values), np.bool_, count=len(values))
    cells = [b"" if x is None else _ENCODE(x).encode("utf-8") for x in values]
    return Vec(t, object_array(cells), None if ok.all() else ok)


def scalar_out(t: DataType, values: list[Any]) -> Vec:
    """Physical scalar values (None = NULL) -> a Vec of type t."""
    ok = np.fromiter((x is not None for x in values), np.bool_, count=len(values))
    if t.is_nested:
        return nested_out(t, values)
    if t.kind is TypeKind.NULL:
        return Vec(t, np.zeros(len(values), np.int8), np.zeros(len(values), np.bool_))
    if t.is_varlen:
        data = object_array(["" if x is None else x for x in values])
    elif t.is_object:
        data = object_array([0 if x is None else x for x in values])
    else:
        data = np.array([0 if x is None else x for x in values], dtype=t.numpy_dtype)
    return Vec(t, data, None if ok.all() else ok)


def _element_tree(t: DataType, value: Any) -> Any:
    """An argument's physical value as an element of a nested value (nested cells decoded)."""
    if value is None:
        return None
    if t.is_nested:
        return nested.load(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _columns(args: list[Vec]) -> list[list[Any]]:
    return [[_element_tree(a.type, x) for x in physical(a)] for a in args]


# ---- constructors --------------------------------------------------------------------------
def _element_type(types: list[DataType]) -> DataType:
    try:
        return common_type(types) if types else NULL
    except DorisError:
        raise DorisError("can not find common type for "
                         + ", ".join(t.sql() for t in types)) from None


def _array_sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
    elem = _element_type(types)
    return [elem if elem.kind is not TypeKind.NULL else None] * len(types), array_of(elem)


def _array(args: list[Vec], env: EvalEnv) -> Vec:
    cols = _columns(args)
    t = array_of(_element_type([a.type for a in args]))
    return nested_out(t, [list(row) for row in zip(*cols)] if cols else [[]] * env.n)


def _map_sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
    if len(types) % 2:
        raise DorisError("map() needs an even number of arguments (key, value, ...)")
    key, value = _element_type(types[0::2]), _element_type(types[1::2])
    targets: list[DataType | None] = []
    for i in range(len(types)):
        t = key if i % 2 == 0 else value
        targets.append(t if t.kind is not TypeKind.NULL else None)
    return targets, map_of(key, value)


def _map(args: list[Vec], env: EvalEnv) -> Vec:
    cols = _columns(args)
    t = map_of(_element_type([a.type for a in args[0::2]]),
               _element_type([a.type for a in args[1::2]]))
    rows = [list(r) for r in zip(*cols)] if cols else [[]] * env.n
    return nested_out(t, [_dedup_pairs(r) for r in rows])


def _dedup_pairs(flat: list[Any]) -> list[list[Any]]:
    """Key/value pairs of a map() call; a repeated key keeps its last value (Doris)."""
    out: dict[Any, Any] = {}
    for k, v in zip(flat[0::2], flat[1::2]):
        key = tuple(k) if isinstance(k, list) else k
        out.pop(key, None)
        out[key] = v
    return [[list(k) if isinstance(k, tuple) else k, v] for k, v in out.items()]


def _struct_sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
    fields = [(f"col{i + 1}", t if t.kind is not TypeKind.NULL else NULL)
              for i, t in enumerate(types)]
    return [None] * len(types), struct_of(fields)


def _struct(args: list[Vec], env: EvalEnv) -> Vec:
    t = struct_of([(f"col{i + 1}", a.type) for i, a in enumerate(args)])
    return nested_out(t, [list(r) for r in zip(*_columns(args))])


def named_struct_type(names: list[str], types: list[DataType]) -> DataType:
    return struct_of(list(zip(names, types)))


def _named_struct_sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
    # the names are constants: the binder builds the type with `named_struct_type`
    if len(types) % 2:
        raise DorisError("named_struct requires an even number of arguments")
    return [None] * len(types), struct_of(
        [(f"col{i + 1}", t) for i, t in enumerate(types[1::2])])


def _named_struct(args: list[Vec], env: EvalEnv) -> Vec:
    names = [str(physical(a)[0]) if len(a) else "" for a in args[0::2]]
    values = args[1::2]
    t = struct_of([(n, v.type) for n, v in zip(names, values)])
    return nested_out(t, [list(r) for r in zip(*_columns(values))])


# ---- access --------------------------------------------------------------------------------
def _element_at_sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
    container = types[0]
    if container.kind is TypeKind.ARRAY:
        return [None, BIGINT], container.children[0]
    if container.kind is TypeKind.MAP:
        return [None, container.children[0]], container.children[1]
    raise _no_signature("element_at", types)


def _element_at(args: list[Vec], env: EvalEnv) -> Vec:
    container, key = args
    t = container.type
    out: list[Any] = []
    keys = physical(key)
    if t.kind is TypeKind.ARRAY:
        for cell, i in zip(trees(container), keys):
            if cell is None or i is None or i == 0 or abs(i) > len(cell):
                out.append(None)
            else:
                out.append(cell[i - 1] if i > 0 else cell[i])
        return scalar_out(t.children[0], out)
    probe = [_element_tree(key.type, k) for k in keys]
    for cell, k in zip(trees(container), probe):
        found = None
        if cell is not None and k is not None:
            for kk, vv in cell:
                if kk == k:
                    found = vv
        out.append(found)
    return scalar_out(t.children[1], out)


def _struct_element_sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
    if types[0].kind is not TypeKind.STRUCT:
        raise _no_signature("struct_element", types)
    return [None, None], types[0]  # the binder sets the field's type (needs the constant)


def struct_field_index(t: DataType, field: object, call_sql: str | None = None) -> int:
    """The position of a field given by name or 1-based position (Doris' struct_element).
    Errors end with the call as Doris' FE prints it (`call_sql`, StructElement.toSql()),
    else with the struct's type."""
    where = call_sql if call_sql is not None else t.desc_sql()
    if isinstance(field, int):
        if not 1 <= field <= len(t.children):
            raise DorisError(f"the specified field index out of bound: {where}")
        return field - 1
    names = [n.lower() for n in t.field_names]
    name = str(field).lower()
    if name not in names:
        raise DorisError(f"the specified field name {field} was not found: {where}")
    return names.index(name)


def _struct_element(args: list[Vec], env: EvalEnv) -> Vec:
    s, field = args
    t = s.type
    f = physical(field)[0] if len(field) else None
    pos = struct_field_index(t, f if not isinstance(f, bytes) else f.decode())
    out = [None if cell is None else cell[pos] for cell in trees(s)]
    return scalar_out(t.children[pos], out)


# ---- inspection ----------------------------------------------------------------------------
def _size_sig(name: str) -> Callable[[list[DataType]], tuple[list[DataType | None], DataType]]:
    def sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
        if types[0].kind not in (TypeKind.ARRAY, TypeKind.MAP, TypeKind.NULL):
            raise _no_signature(name, types)
        return [None], BIGINT
    return sig


def _size(args: list[Vec], env: EvalEnv) -> Vec:
    return scalar_out(BIGINT, [None if c is None else len(c) for c in trees(args[0])])


def _contains_sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
    if types[0].kind is not TypeKind.ARRAY:
        raise _no_signature("array_contains", types)
    elem = types[0].children[0]
    return [None, elem if elem.kind is not TypeKind.NULL else None], BOOLEAN


def _contains(args: list[Vec], env: EvalEnv) -> Vec:
    arr, value = args
    probe = [_element_tree(value.type, x) for x in physical(value)]
    out = [None if c is None or p is None else int(p in c) for c, p in zip(trees(arr), probe)]
    return scalar_out(BOOLEAN, out)


def _map_part_sig(name: str, part: int
                  ) -> Callable[[list[DataType]], tuple[list[DataType | None], DataType]]:
    def sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
        if types[0].kind is not TypeKind.MAP:
            raise _no_signature(name, types)
        return [None], array_of(types[0].children[part])
    return sig


def _map_part(part: int) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(args: list[Vec], env: EvalEnv) -> Vec:
        t = array_of(args[0].type.children[part])
        return nested_out(t, [None if c is None else [p[part] for p in c]
                              for c in trees(args[0])])
    return impl


def _map_contains_sig(name: str, part: int
                      ) -> Callable[[list[DataType]], tuple[list[DataType | None], DataType]]:
    def sig(types: list[DataType]) -> tuple[list[DataType | None], DataType]:
        if types[0].kind is not TypeKind.MAP:
            raise _no_signature(name, types)
        elem = types[0].children[part]
        return [None, elem if elem.kind is not TypeKind.NULL else None], BOOLEAN
    return sig


def _map_contains(part: int) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(args: list[Vec], env: EvalEnv) -> Vec:
        m, probe_vec = args
        probe = [_element_tree(probe_vec.type, x) for x in physical(probe_vec)]
        out = [None if c is None or p is None else int(any(e[part] == p for e in c))
               for c, p in zip(trees(m), probe)]
        return scalar_out(BOOLEAN, out)
    return impl


_reg("array", 0, -1, _array_sig, _array, propagate=False)
_reg("map", 0, -1, _map_sig, _map, propagate=False)
_reg("struct", 1, -1, _struct_sig, _struct, propagate=False)
_reg("named_struct", 2, -1, _named_struct_sig, _named_struct, propagate=False)
_reg("element_at", 2, 2, _element_at_sig, _element_at)
_reg("struct_element", 2, 2, _struct_element_sig, _struct_element, propagate=False)
_reg("array_size", 1, 1, _size_sig("array_size"), _size)
_reg("size", 1, 1, _size_sig("size"), _size)
_reg("cardinality", 1, 1, _size_sig("cardinality"), _size)
_reg("array_contains", 2, 2, _contains_sig, _contains)
_reg("map_keys", 1, 1, _map_part_sig("map_keys", 0), _map_part(0))
_reg("map_values", 1, 1, _map_part_sig("map_values", 1), _map_part(1))
_reg("map_contains_key", 2, 2, _map_contains_sig("map_contains_key", 0), _map_contains(0))
_reg("map_contains_value", 2, 2, _map_contains_sig("map_contains_value", 1), _map_contains(1))


# ---- casts ---------------------------------------------------------------------------------
def cast_nested(v: Vec, target: DataType) -> Vec:
    """CAST into or out of a nested type: element-wise; a value that does not convert is NULL.

    Nested -> string gives Doris' text; string -> nested parses it (`'[1, 2]'`).
    """
    src = v.type
    if src.kind is TypeKind.NULL:
        return scalar_out(target, [None] * len(v))
    if not target.is_nested:
        if target.is_string:
            texts = [None if c is None else src.format_value(c) for c in physical(v)]
            return scalar_out(target if target.is_string else STRING, texts)
        raise DorisError(f"can not cast from origin type {src.sql().upper()} to target type="
                         f"{target.sql().upper()}")
    by_name = src.kind is TypeKind.MAP and target.kind is TypeKind.STRUCT  # {'f1': 1, ..}
    if not (src.is_nested or src.is_string) or (
            src.is_nested and src.kind is not target.kind and not by_name):
        raise DorisError(f"can not cast from origin type {src.sql().upper()} to target type="
                         f"{target.sql().upper()}")
    out: list[Any] = []
    for cell in physical(v):
        if cell is None:
            out.append(None)
            continue
        try:
            value = src.to_python(cell) if src.is_nested else cell
            out.append(nested.load(target.to_physical(value)))  # type: ignore[arg-type]
        except (TypeError_, ValueError, ArithmeticError):
            out.append(None)
    return nested_out(target, out)
