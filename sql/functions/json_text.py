"""JSON scalar functions over JSON text held in strings (we have no JSONB column type yet):
GET_JSON_STRING / _INT / _BIGINT / _DOUBLE, JSON_EXTRACT (JSONB_EXTRACT), JSON_VALID,
JSON_LENGTH, JSON_KEYS, JSON_CONTAINS, JSON_OBJECT, JSON_ARRAY, JSON_QUOTE /
JSON_UNQUOTE; and TO_BASE64 / FROM_BASE64.

Doris path syntax: `$`, `.key`, `."quoted key"`, `[n]`. A missing path, invalid JSON or an
invalid path gives NULL, as Doris does. JSON text is written without spaces (`{"a":1}`), the
way Doris prints JSONB. Per-row Python loops. Upstream: Doris `function_json.cpp`,
`function_jsonb.cpp`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.vector import Vec, object_array
from storage.types import BIGINT, BOOLEAN, DOUBLE, INT, STRING, DataType

MISSING = object()  # a path that finds nothing (also the JSON loads' marker)
# `.key`, `."quoted.key"`, `[n]` (Doris also accepts `.[n]`)
_STEP = re.compile(r'\.(?:"((?:[^"\\]|\\.)*)"|([^.\[\]"]+))|\.?\[(\d+)\]')


def parse_path(path: str) -> list[str | int] | None:
    """`$.a."b c"[0]` -> ['a', 'b c', 0]; None when the path is not valid."""
    path = path.strip()
    if not path.startswith("$"):
        return None
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            return None
        if m.group(3) is not None:
            steps.append(int(m.group(3)))
        else:
            steps.append(m.group(1) if m.group(1) is not None else m.group(2))
        pos = m.end()
    return steps


def extract(doc: Any, steps: list[str | int]) -> Any:
    """The value at `steps` in a parsed document, or MISSING."""
    for step in steps:
        if isinstance(step, int):
            if not isinstance(doc, list) or step >= len(doc):
                return MISSING
            doc = doc[step]
        else:
            if not isinstance(doc, dict) or step not in doc:
                return MISSING
            doc = doc[step]
    return doc


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return MISSING


def _lookup(text: str, path: str) -> Any:
    steps = parse_path(path)
    doc = _load(text)
    if steps is None or doc is MISSING:
        return MISSING
    return extract(doc, steps)


def _out(t: DataType, vals: list[Any]) -> Vec:
    """Values with None meaning NULL, as a Vec of type `t`."""
    ok = np.fromiter((v is not None for v in vals), np.bool_, count=len(vals))
    if t.is_string:
        data = object_array([v if v is not None else "" for v in vals])
    else:
        data = np.array([v if v is not None else 0 for v in vals], dtype=t.numpy_dtype)
    return Vec(t, data, None if ok.all() else ok)


def _rows(a: list[Vec]) -> Any:
    return zip(*(v.data.tolist() for v in a))


def _per_row(t: DataType, fn: Callable[..., Any]) -> Callable[[list[Vec], EvalEnv], Vec]:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        return _out(t, [fn(*r) for r in _rows(a)])

    return impl


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable, *aliases: str,
         propagate: bool = True) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, propagate), *aliases)


# ---- get_json_* ----------------------------------------------------------------------------
def get_json_string(text: str, path: str) -> str | None:
    v = _lookup(text, path)
    if v is MISSING or v is None:
        return None
    return v if isinstance(v, str) else dumps(v)


def get_json_int(bits: int) -> Callable[[str, str], int | None]:
    limit = 2 ** (bits - 1)

    def fn(text: str, path: str) -> int | None:
        v = _lookup(text, path)
        if isinstance(v, bool) or not isinstance(v, int) or not -limit <= v < limit:
            return None
        return v

    return fn


def get_json_double(text: str, path: str) -> float | None:
    v = _lookup(text, path)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


_STR2 = lambda t: ([STRING, STRING], STRING)  # noqa: E731
_reg("get_json_string", 2, 2, _STR2, _per_row(STRING, get_json_string))
_reg("get_json_int", 2, 2, lambda t: ([STRING, STRING], INT), _per_row(INT, get_json_int(32)))
_reg("get_json_bigint", 2, 2, lambda t: ([STRING, STRING], BIGINT),
     _per_row(BIGINT, get_json_int(64)))
_reg("get_json_double", 2, 2, lambda t: ([STRING, STRING], DOUBLE),
     _per_row(DOUBLE, get_json_double))


# ---- json_extract and friends ----------------------------------------------------------------
def json_extract(text: str, *paths: str) -> str | None:
    """One path: the value's JSON text; several: a JSON array of the found values."""
    found = [_lookup(text, p) for p in paths]
    if len(found) == 1:
        return None if found[0] is MISSING else dumps(found[0])
    values = [v for v in found if v is not MISSING]
    return dumps(values) if values else None


def json_valid(text: str) -> int:
    return 0 if _load(text) is MISSING else 1


def json_length(text: str, path: str = "$") -> int | None:
    v = _lookup(text, path)
    if v is MISSING:
        return None
    return len(v) if isinstance(v, (list, dict)) else 1


def json_keys(text: str, path: str = "$") -> str | None:
    v = _lookup(text, path)
    return dumps(list(v)) if isinstance(v, dict) else None


def json_unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        v = _load(text)
        if isinstance(v, str):
            return v
    return text


def contains(target: Any, candidate: Any) -> bool:
    """MySQL/Doris JSON containment: an array contains each element of a candidate array (or
    the candidate scalar) somewhere; an object contains a candidate object's keys with
    contained values; scalars must be equal."""
    if isinstance(target, list):
        wanted = candidate if isinstance(candidate, list) else [candidate]
        return all(any(contains(t, w) for t in target) for w in wanted)
    if isinstance(target, dict):
        return isinstance(candidate, dict) and all(
            k in target and contains(target[k], v) for k, v in candidate.items())
    if isinstance(target, bool) or isinstance(candidate, bool):
        return type(target) is type(candidate) and target == candidate
    return not isinstance(candidate, (list, dict)) and target == candidate


def json_contains(text: str, candidate: str, path: str = "$") -> int | None:
    target = _lookup(text, path)
    wanted = _load(candidate)
    if target is MISSING or wanted is MISSING:
        return None
    return int(contains(target, wanted))


_reg("json_contains", 2, 3, lambda t: ([STRING] * len(t), BOOLEAN),
     _per_row(BOOLEAN, json_contains))
_reg("json_extract", 2, -1, lambda t: ([STRING] * len(t), STRING),
     _per_row(STRING, json_extract), "jsonb_extract")
_reg("json_valid", 1, 1, lambda t: ([STRING], INT), _per_row(INT, json_valid))
_reg("json_length", 1, 2, lambda t: ([STRING] * len(t), INT), _per_row(INT, json_length))
_reg("json_keys", 1, 2, lambda t: ([STRING] * len(t), STRING), _per_row(STRING, json_keys))
_reg("json_quote", 1, 1, lambda t: ([STRING], STRING), _per_row(STRING, dumps))
_reg("json_unquote", 1, 1, lambda t: ([STRING], STRING), _per_row(STRING, json_unquote))


# ---- constructors --------------------------------------------------------------------------
def _json_values(v: Vec) -> list[Any]:
    """A column's values as JSON values (NULL -> None)."""
    vals = v.data.tolist()
    if v.type.kind.name == "BOOLEAN":
        vals = [bool(x) for x in vals]
    elif not (v.type.is_numeric or v.type.is_string):
        vals = [str(x) for x in vals]
    elif v.type.is_numeric and not v.type.is_integer:
        vals = [x if isinstance(x, (int, float)) else float(x) for x in vals]
    if v.validity is not None:
        vals = [x if ok else None for x, ok in zip(vals, v.validity.tolist())]
    return vals


def _json_array(a: list[Vec], env: EvalEnv) -> Vec:
    cols = [_json_values(v) for v in a]
    return _out(STRING, [dumps(list(row)) for row in zip(*cols)] if cols
                else ["[]"] * env.n)


def _json_object(a: list[Vec], env: EvalEnv) -> Vec:
    cols = [_json_values(v) for v in a]
    if not cols:
        return _out(STRING, ["{}"] * env.n)
    return _out(STRING, [dumps({str(row[i]): row[i + 1] for i in range(0, len(row) - 1, 2)})
                         for row in zip(*cols)])


_reg("json_array", 0, -1, lambda t: ([None] * len(t), STRING), _json_array, propagate=False)
_reg("json_object", 0, -1, lambda t: ([None] * len(t), STRING), _json_object, propagate=False)


# ---- base64 --------------------------------------------------------------------------------
def from_base64(text: str) -> str | None:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeError):
        return None


_reg("to_base64", 1, 1, lambda t: ([STRING], STRING),
     _per_row(STRING, lambda s: base64.b64encode(s.encode("utf-8")).decode("ascii")))
_reg("from_base64", 1, 1, lambda t: ([STRING], STRING), _per_row(STRING, from_base64))
