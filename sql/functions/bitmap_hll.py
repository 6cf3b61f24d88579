"""BITMAP and HLL functions (Doris semantics), registered into `sql.functions`.

Scalars: to_bitmap, bitmap_empty, bitmap_hash, bitmap_from_string, bitmap_count,
bitmap_to_string, bitmap_to_base64, bitmap_from_base64, hll_hash, hll_empty, hll_cardinality,
hll_to_base64, hll_from_base64 (the base64 pair moves a serialized cell through text: the Spark
data source reads and loads BITMAP/HLL values as binary with them). Aggregates: bitmap_union,
bitmap_union_count, bitmap_union_int, hll_union (alias hll_raw_agg), hll_union_agg, and
approx_count_distinct (alias ndv) on an HLL of the values.
BITMAP/HLL physical values are the serialized cells of `storage.bitmap` / `storage.hll` (bytes
in a `Vec`). As in Doris' vectorized engine the constructors never return NULL: to_bitmap(NULL)
or of a negative number, bitmap_hash(NULL) and hll_hash(NULL) give an empty set, and
bitmap_count / hll_cardinality of NULL give 0. Union aggregates ignore NULL cells and give the
empty set (count 0) for groups without any.
Upstream: Doris `function_bitmap.cpp`, `function_hll.cpp`, `aggregate_function_bitmap.h`,
`aggregate_function_hll_union_agg.h`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import TypeVar, cast

import mmh3
import numpy as np
from pyroaring import BitMap64

from sql.errors import DorisError
from sql.functions import (
    AggregateFunction,
    EvalEnv,
    MergeFn,
    PartialFn,
    ScalarFunction,
    State,
    register_aggregate,
    register_scalar,
)
from sql.functions.vector import Vec, as_int, object_array
from storage import bitmap, hll
from storage.types import BIGINT, STRING, DataType, TypeKind

BITMAP_T = DataType(TypeKind.BITMAP)
HLL_T = DataType(TypeKind.HLL)
_BITMAP_HASH_SEED = 104729  # Doris HashUtil::MURMUR3_32_SEED


def _no_signature(name: str, types: list[DataType]) -> DorisError:
    args = ", ".join(t.sql().upper() for t in types)
    return DorisError(f"Can not find the compatibility function signature: {name}({args})")


def _needs(name: str, kind: TypeKind) -> Callable[[list[DataType]], list[DataType]]:
    """Argument rule: exactly one argument of `kind` (NULL literals pass)."""
    def rule(t: list[DataType]) -> list[DataType]:
        if len(t) != 1 or t[0].kind not in (kind, TypeKind.NULL):
            raise _no_signature(name, t)
        return list(t)

    return rule


def _rows(v: Vec) -> list[object | None]:
    """Values of a Vec as a list with None for NULL."""
    vals = v.data.tolist()
    if v.validity is not None:
        for i in np.flatnonzero(~v.validity).tolist():
            vals[i] = None
    if v.type.kind is TypeKind.NULL:
        return [None] * len(vals)
    return vals


def _blobs(v: Vec) -> list[bytes | None]:
    """A BITMAP / HLL column's values: serialized sketches (storage/bitmap.py, storage/hll.py),
    None for NULL."""
    return cast("list[bytes | None]", _rows(v))


def _blob_vec(t: DataType, values: list[bytes]) -> Vec:
    return Vec(t, object_array(values))


def _text_bytes(t: DataType, value: object) -> bytes:
    """The text a value hashes as (hll_hash / ndv hash the string form, as Doris casts)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    text = t.format_value(value)
    return (text or "").encode("utf-8")


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable,
         propagate: bool = False, *aliases: str) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, propagate), *aliases)


# ---- BITMAP scalars ------------------------------------------------------------------------
def _to_bitmap_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    a = t[0]
    if a.is_integer or a.is_string or a.kind in (TypeKind.NULL, TypeKind.BOOLEAN):
        return [None], BITMAP_T
    if a.is_numeric:
        return [BIGINT], BITMAP_T
    raise _no_signature("to_bitmap", t)


def _as_uint64(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit():
            return None
        value = int(text)
    return as_int(value)


def _to_bitmap(a: list[Vec], env: EvalEnv) -> Vec:
    return _blob_vec(BITMAP_T, [bitmap.single(_as_uint64(v)) for v in _rows(a[0])])


def _bitmap_hash(a: list[Vec], env: EvalEnv) -> Vec:
    out = []
    for v in _rows(a[0]):
        if v is None:
            out.append(bitmap.EMPTY)
        else:
            out.append(bitmap.single(mmh3.hash(_text_bytes(a[0].type, v), _BITMAP_HASH_SEED,
                                               signed=False)))
    return _blob_vec(BITMAP_T, out)


def _bitmap_from_string(a: list[Vec], env: EvalEnv) -> Vec:
    out: list[bytes] = []
    ok = np.ones(len(a[0]), np.bool_)
    for i, s in enumerate(_rows(a[0])):
        parts = [p.strip() for p in str(s).split(",")] if s is not None else None
        if parts is None or not all(p.isdigit() for p in parts if p) or any(
                int(p) > bitmap.MAX_VALUE for p in parts if p):
            out.append(b"")
            ok[i] = False
        else:
            out.append(bitmap.from_values(int(p) for p in parts if p))
    return Vec(BITMAP_T, object_array(out), None if ok.all() else ok)


def _bitmap_count(a: list[Vec], env: EvalEnv) -> Vec:
    return Vec(BIGINT, np.array([bitmap.cardinality(v) if v is not None else 0
                                 for v in _blobs(a[0])], dtype=np.int64))


def _bitmap_to_string(a: list[Vec], env: EvalEnv) -> Vec:
    return Vec(STRING, object_array([bitmap.to_string(v) if v is not None else ""
                                     for v in _blobs(a[0])]))


_reg("to_bitmap", 1, 1, _to_bitmap_sig, _to_bitmap)
_reg("bitmap_empty", 0, 0, lambda t: ([], BITMAP_T),
     lambda a, env: _blob_vec(BITMAP_T, [bitmap.EMPTY] * env.n))
_reg("bitmap_hash", 1, 1, lambda t: ([None], BITMAP_T), _bitmap_hash)
_reg("bitmap_from_string", 1, 1,
     lambda t: ([None if t[0].is_string or t[0].kind is TypeKind.NULL else STRING], BITMAP_T),
     _bitmap_from_string, True)
_reg("bitmap_count", 1, 1, lambda t: (_needs("bitmap_count", TypeKind.BITMAP)(t), BIGINT),
     _bitmap_count)
_reg("bitmap_to_string", 1, 1,
     lambda t: (_needs("bitmap_to_string", TypeKind.BITMAP)(t), STRING), _bitmap_to_string, True)


# ---- base64 of serialized cells (Doris 2.1's bitmap/hll _to_base64 / _from_base64) ---------
def _to_base64(empty: bytes) -> Callable[[list[Vec], EvalEnv], Vec]:
    """bitmap_to_base64 / hll_to_base64 (an empty b"" cell is the empty set's encoding)."""
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        return Vec(STRING, object_array([base64.b64encode(v or empty).decode("ascii")
                                         if v is not None else None for v in _blobs(a[0])]))

    return impl


def _from_base64(t: DataType, decode: Callable[[bytes], object]) -> Callable[[list[Vec], EvalEnv],
                                                                             Vec]:
    """bitmap_from_base64 / hll_from_base64: text that is not base64 of a valid cell gives
    NULL (Doris returns NULL for an invalid input)."""
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        out: list[bytes] = []
        ok = np.ones(len(a[0]), np.bool_)
        for i, s in enumerate(_rows(a[0])):
            try:
                blob = base64.b64decode(_text_bytes(a[0].type, s), validate=True)
                decode(blob)
            except (binascii.Error, ValueError, TypeError, OverflowError, IndexError):
                out.append(b"")
                ok[i] = False
                continue
            out.append(blob)
        return Vec(t, object_array(out), None if ok.all() else ok)

    return impl


def _text_arg(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    return [None if t[0].is_string or t[0].kind is TypeKind.NULL else STRING], STRING


_reg("bitmap_to_base64", 1, 1,
     lambda t: (_needs("bitmap_to_base64", TypeKind.BITMAP)(t), STRING),
     _to_base64(bitmap.EMPTY), True)
_reg("bitmap_from_base64", 1, 1, lambda t: (_text_arg(t)[0], BITMAP_T),
     _from_base64(BITMAP_T, bitmap.decode), True)
_reg("hll_to_base64", 1, 1,
     lambda t: (_needs("hll_to_base64", TypeKind.HLL)(t), STRING),
     _to_base64(hll.EMPTY), True)
_reg("hll_from_base64", 1, 1, lambda t: (_text_arg(t)[0], HLL_T),
     _from_base64(HLL_T, hll.Hll.decode), True)


# ---- HLL scalars ---------------------------------------------------------------------------
def _hll_hash(a: list[Vec], env: EvalEnv) -> Vec:
    t = a[0].type
    return _blob_vec(HLL_T, [hll.EMPTY if v is None else hll.from_values([_text_bytes(t, v)])
                             for v in _rows(a[0])])


def _hll_cardinality(a: list[Vec], env: EvalEnv) -> Vec:
    return Vec(BIGINT, np.array([hll.cardinality(v) if v is not None else 0
                                 for v in _blobs(a[0])], dtype=np.int64))


def _hll_hash_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    if t[0].kind in (TypeKind.HLL, TypeKind.BITMAP):
        raise _no_signature("hll_hash", t)
    return [None], HLL_T


_reg("hll_hash", 1, 1, _hll_hash_sig, _hll_hash)
_reg("hll_empty", 0, 0, lambda t: ([], HLL_T), lambda a, env: _blob_vec(HLL_T, [hll.EMPTY] * env.n))
_reg("hll_cardinality", 1, 1, lambda t: (_needs("hll_cardinality", TypeKind.HLL)(t), BIGINT),
     _hll_cardinality)


# ---- aggregates ----------------------------------------------------------------------------
# State of the union aggregates: (object array with one sketch or None per group, has-rows).
def _runs(codes: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Stable order by group code and its runs as (code, lo, hi)."""
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    if len(sc) == 0:
        return order, []
    starts = np.flatnonzero(np.concatenate(([True], sc[1:] != sc[:-1]))).tolist()
    ends = starts[1:] + [len(sc)]
    return order, [(int(sc[s]), s, e) for s, e in zip(starts, ends)]


Sketch = TypeVar("Sketch")


def _group_objects(items: np.ndarray, codes: np.ndarray, groups: int,
                   fold: Callable[[list[Sketch]], Sketch]) -> State:
    """Fold the non-None objects of each group into one."""
    keep = np.array([x is not None for x in items.tolist()], dtype=np.bool_) if len(items) else \
        np.zeros(0, np.bool_)
    items, codes = items[keep], codes[keep]
    out = np.empty(groups, dtype=object)
    out[:] = None
    has = np.zeros(groups, np.bool_)
    order, runs = _runs(codes)
    vals = items[order].tolist()
    for code, lo, hi in runs:
        out[code] = fold(vals[lo:hi])
        has[code] = True
    return out, has


def _valid_items(arg: Vec | None, codes: np.ndarray) -> tuple[list[object], np.ndarray]:
    assert arg is not None
    if arg.type.kind is TypeKind.NULL:
        return [], codes[:0]
    if arg.validity is None:
        return arg.data.tolist(), codes
    return arg.data[arg.validity].tolist(), codes[arg.validity]


# Folds may reuse their inputs: every sketch in a state is owned by that state alone.
def _bitmap_fold(bms: list[BitMap64]) -> BitMap64:
    return BitMap64.union(*bms) if len(bms) > 1 else bms[0]


def _hll_fold(sketches: list[hll.Hll]) -> hll.Hll:
    acc = sketches[0]
    for s in sketches[1:]:
        acc.merge(s)
    return acc


def _sketch_aggregate(decode: Callable[[bytes], Sketch], fold: Callable[[list[Sketch]], Sketch]
                      ) -> tuple[PartialFn, MergeFn]:
    def partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
        items, cs = _valid_items(arg, codes)
        blobs = cast("list[bytes]", items)  # a BITMAP / HLL column: serialized sketches
        return _group_objects(object_array([decode(b) for b in blobs]), cs, groups, fold)

    def merge(state: State, codes: np.ndarray, groups: int) -> State:
        return _group_objects(state[0], codes, groups, fold)

    return partial, merge


def _empty_state(groups: int, t: DataType) -> State:
    out = np.empty(groups, dtype=object)
    out[:] = None
    return out, np.zeros(groups, np.bool_)


def _bitmap_blob(x: BitMap64 | None) -> bytes:
    return bitmap.encode(x) if x is not None else bitmap.EMPTY


def _hll_blob(x: hll.Hll | None) -> bytes:
    return x.encode() if x is not None else hll.EMPTY


_bm_partial, _bm_merge = _sketch_aggregate(bitmap.decode, _bitmap_fold)
_hll_partial, _hll_merge = _sketch_aggregate(hll.Hll.decode, _hll_fold)


def _register_union(name: str, kind: TypeKind, partial: PartialFn, merge: MergeFn,
                    ret: DataType, final: Callable[[State, DataType], Vec], *aliases: str) -> None:
    register_aggregate(AggregateFunction(
        name, arg_types=_needs(name, kind), return_type=lambda t: ret, partial=partial,
        merge=merge, final=final, empty=_empty_state), *aliases)


_register_union("bitmap_union", TypeKind.BITMAP, _bm_partial, _bm_merge, BITMAP_T,
                lambda s, t: Vec(BITMAP_T, object_array([_bitmap_blob(x) for x in s[0].tolist()])))
_register_union("bitmap_union_count", TypeKind.BITMAP, _bm_partial, _bm_merge, BIGINT,
                lambda s, t: Vec(BIGINT, np.array([len(x) if x is not None else 0
                                                   for x in s[0].tolist()], dtype=np.int64)))
_register_union("hll_union", TypeKind.HLL, _hll_partial, _hll_merge, HLL_T,
                lambda s, t: Vec(HLL_T, object_array([_hll_blob(x) for x in s[0].tolist()])),
                "hll_raw_agg")
_register_union("hll_union_agg", TypeKind.HLL, _hll_partial, _hll_merge, BIGINT,
                lambda s, t: Vec(BIGINT, np.array([x.estimate() if x is not None else 0
                                                   for x in s[0].tolist()], dtype=np.int64)))


# bitmap_union_int(int) = count(distinct) through a bitmap; ndv / approx_count_distinct through
# an HLL of the values' text.
def _int_bitmap_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    items, cs = _valid_items(arg, codes)
    ints = [as_int(v) for v in items]
    keep = np.array([v >= 0 for v in ints], dtype=np.bool_)
    vals = [v for v, k in zip(ints, keep.tolist(), strict=True) if k]
    bms = object_array([BitMap64([v]) for v in vals])
    return _group_objects(bms, cs[keep], groups, _bitmap_fold)


def _int_args(t: list[DataType]) -> list[DataType]:
    if len(t) != 1 or not (t[0].is_integer or t[0].kind is TypeKind.NULL):
        raise _no_signature("bitmap_union_int", t)
    return list(t)


register_aggregate(AggregateFunction(
    "bitmap_union_int", arg_types=_int_args, return_type=lambda t: BIGINT,
    partial=_int_bitmap_partial, merge=_bm_merge,
    final=lambda s, t: Vec(BIGINT, np.array([len(x) if x is not None else 0
                                             for x in s[0].tolist()], dtype=np.int64)),
    empty=_empty_state))


def _ndv_partial(arg: Vec | None, codes: np.ndarray, groups: int) -> State:
    items, cs = _valid_items(arg, codes)
    assert arg is not None
    hashes = hll.hash_bytes(_text_bytes(arg.type, v) for v in items)
    out = np.empty(groups, dtype=object)
    out[:] = None
    has = np.zeros(groups, np.bool_)
    order, runs = _runs(cs)
    sorted_hashes = hashes[order]
    for code, lo, hi in runs:
        out[code] = hll.Hll.from_hashes(sorted_hashes[lo:hi])
        has[code] = True
    return out, has


def _any_args(t: list[DataType]) -> list[DataType]:
    if len(t) != 1 or t[0].kind in (TypeKind.HLL, TypeKind.BITMAP):
        raise _no_signature("approx_count_distinct", t)
    return list(t)


register_aggregate(AggregateFunction(
    "approx_count_distinct", arg_types=_any_args, return_type=lambda t: BIGINT,
    partial=_ndv_partial, merge=_hll_merge,
    final=lambda s, t: Vec(BIGINT, np.array([x.estimate() if x is not None else 0
                                             for x in s[0].tolist()], dtype=np.int64)),
    empty=_empty_state), "ndv", "approx_distinct")
