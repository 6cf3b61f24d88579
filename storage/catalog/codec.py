"""JSON encoding of the catalog's frozen dataclasses, driven by their type hints.

The repository stores each metadata object as one JSON document; this module is the only place
that knows how to turn a `TableMeta` (with nested dataclasses, enums, tuples and `DataType`s)
into JSON and back, so adding a field to a dataclass needs no repository change. Fields missing
from an older document take the dataclass default.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from typing import Any

from storage.types import DataType, parse_type


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if isinstance(value, DataType):
            return value.sql()
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [to_jsonable(v) for v in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    from storage.catalog import meta

    return typing.get_type_hints(cls, vars(meta))


def from_jsonable(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return from_jsonable(args[0], value)
    if origin is tuple:
        items = typing.get_args(tp)
        if len(items) == 2 and items[1] is Ellipsis:
            return tuple(from_jsonable(items[0], v) for v in value)
        return tuple(from_jsonable(a, v) for a, v in zip(items, value))
    if tp is DataType:
        return parse_type(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        kwargs = {
            f.name: from_jsonable(hints[f.name], value[f.name])
            for f in dataclasses.fields(tp)
            if f.name in value
        }
        return tp(**kwargs)
    return value


def loads(cls: type, text: str) -> Any:
    return from_jsonable(cls, json.loads(text))
