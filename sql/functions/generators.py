"""Table functions of `LATERAL VIEW` (Doris' table-generating functions): their output types
and the rows each input row generates.

    explode(array)                 one row per element          (element type)
    posexplode(array)              one row per element          (pos INT from 0, element)
    explode_map(map)               one row per entry            (key, value)
    explode_split(str, delimiter)  one row per piece            (VARCHAR)
    explode_numbers(n)             rows 0 .. n-1                (INT)
    explode_json_array_int|double|string(json)  one row per element of a JSON array

Each has an `_outer` form: an input row that generates nothing (NULL, empty) still gives one
row, its generated columns NULL; the plain form drops that row (Doris' semantics).
Values are the physical trees of storage/nested.py (elements of a nested cell are already in
their storage form), so the generated columns are built with `scalar_out`.
Upstream: Doris `VExplodeTableFunction`, `VExplodeSplitTableFunction`,
`VExplodeNumbersTableFunction`, `VExplodeJsonArrayTableFunction`, `VExplodeMapTableFunction`,
`VPosExplodeTableFunction`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from sql.errors import DorisError
from sql.functions.nested import physical, trees
from sql.functions.vector import Vec
from storage.types import BIGINT, DOUBLE, INT, STRING, DataType, TypeKind

Rows = list[list[tuple[Any, ...]]]  # per input row, the tuples it generates


def _explode(args: list[Vec]) -> Rows:
    return [[] if t is None else [(e,) for e in t] for t in trees(args[0])]


def _posexplode(args: list[Vec]) -> Rows:
    return [[] if t is None else list(enumerate(t)) for t in trees(args[0])]


def _explode_map(args: list[Vec]) -> Rows:
    return [[] if t is None else [(k, v) for k, v in t] for t in trees(args[0])]


def _explode_split(args: list[Vec]) -> Rows:
    out: Rows = []
    for s, sep in zip(physical(args[0]), physical(args[1])):
        if s is None or sep is None:
            out.append([])
        elif sep == "":
            out.append([(s,)])
        else:
            out.append([(piece,) for piece in str(s).split(str(sep))])
    return out


def _explode_numbers(args: list[Vec]) -> Rows:
    return [[] if n is None or n <= 0 else [(i,) for i in range(int(n))]
            for n in physical(args[0])]


def _json_element(kind: str) -> Callable[[Any], Any]:
    def as_int(x: Any) -> Any:
        if isinstance(x, bool) or not isinstance(x, int | float):
            return None
        return int(x) if -(1 << 63) <= x < (1 << 63) else None

    def as_double(x: Any) -> Any:
        return None if isinstance(x, bool) or not isinstance(x, int | float) else float(x)

    def as_string(x: Any) -> Any:
        if x is None:
            return None
        return x if isinstance(x, str) else json.dumps(x, separators=(",", ":"))

    return {"int": as_int, "double": as_double, "string": as_string}[kind]


def _explode_json_array(kind: str) -> Callable[[list[Vec]], Rows]:
    convert = _json_element(kind)

    def run(args: list[Vec]) -> Rows:
        out: Rows = []
        for s in physical(args[0]):
            try:
                value = json.loads(s) if s is not None else None
            except ValueError:
                value = None
            out.append([(convert(x),) for x in value] if isinstance(value, list) else [])
        return out

    return run


def _element_types(name: str, types: Sequence[DataType]) -> tuple[DataType, ...]:
    """The generated columns' types for `name(types..)`; a Doris error for a wrong call."""
    def need(count: int, what: str, ok: Callable[[DataType], bool]) -> None:
        if len(types) != count or not ok(types[0]):
            got = ", ".join(t.sql() for t in types)
            raise DorisError(f"table function {name}({got}) is not supported: "
                             f"{name} takes {what}")

    if name in ("explode", "posexplode"):
        need(1, "one ARRAY", lambda t: t.kind is TypeKind.ARRAY)
        element = types[0].children[0]
        return (element,) if name == "explode" else (INT, element)
    if name == "explode_map":
        need(1, "one MAP", lambda t: t.kind is TypeKind.MAP)
        return tuple(types[0].children)
    if name == "explode_split":
        need(2, "a string and a delimiter", lambda t: t.is_string or t.kind is TypeKind.NULL)
        return (STRING,)
    if name == "explode_numbers":
        need(1, "one integer", lambda t: t.is_integer or t.kind is TypeKind.NULL)
        return (INT,)
    kind = name.removeprefix("explode_json_array_")
    need(1, "one JSON array string", lambda t: t.is_string or t.kind is TypeKind.NULL)
    return ({"int": BIGINT, "double": DOUBLE, "string": STRING}[kind],)


_GENERATORS: dict[str, Callable[[list[Vec]], Rows]] = {
    "explode": _explode,
    "posexplode": _posexplode,
    "explode_map": _explode_map,
    "explode_split": _explode_split,
    "explode_numbers": _explode_numbers,
    "explode_json_array_int": _explode_json_array("int"),
    "explode_json_array_double": _explode_json_array("double"),
    "explode_json_array_string": _explode_json_array("string"),
}


def split_name(name: str) -> tuple[str, bool]:
    """(base function, outer) of a table function name; a Doris error for an unknown one."""
    low = name.lower()
    base = low.removesuffix("_outer")
    if base not in _GENERATORS:
        raise DorisError(f"Can not found table function: {low}")
    return base, low != base


def output_types(name: str, types: Sequence[DataType]) -> tuple[DataType, ...]:
    base, _ = split_name(name)
    return _element_types(base, types)


def generate(name: str, args: list[Vec]) -> Rows:
    """Per input row, the tuples of generated values (physical; None = NULL); an `_outer`
    function gives an all-NULL tuple to a row that generates nothing."""
    base, outer = split_name(name)
    rows = _GENERATORS[base](args)
    if outer:
        width = len(_element_types(base, [a.type for a in args]))
        empty = [(None,) * width]
        rows = [r if r else empty for r in rows]
    return rows
