"""Vec: the value form expression implementations compute on.

A `Vec` is a typed numpy array plus an optional `validity` mask (None = no nulls), as a storage
`Column` is (same field name, same meaning), except that strings are decoded into a numpy
object array of `str` (blobs: `bytes`) so Python-level string functions and comparisons can run
on them. Fixed-width types keep their physical storage dtype (storage/types.py), LARGEINT and
wide DECIMAL stay object arrays of int. Values under a null are always defined (0 / "" ), so
implementations can compute branch-free and only combine validity masks. Conversion to and
from `Column` happens at operator edges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import SupportsInt

import numpy as np

from sql.functions.text_columns import decode_text
from storage.batch import Column
from storage.types import BLOB_KINDS, DataType, TypeKind


@dataclass(frozen=True, slots=True, eq=False)
class Vec:
    type: DataType
    data: np.ndarray
    validity: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.data)

    @property
    def is_text(self) -> bool:
        return self.type.is_varlen

    def null_mask(self) -> np.ndarray:
        if self.validity is None:
            return np.zeros(len(self.data), dtype=np.bool_)
        return ~self.validity

    def with_validity(self, valid: np.ndarray | None) -> Vec:
        return Vec(self.type, self.data, valid)

    @staticmethod
    def from_column(col: Column) -> Vec:
        if col.offsets is None:
            return Vec(col.type, col.data, col.validity)
        return Vec(col.type, decode_strings(col), col.validity)

    def to_column(self) -> Column:
        t = self.type
        if t.kind is TypeKind.NULL:
            return Column(t, np.zeros(len(self.data), np.int8), np.zeros(len(self.data), np.bool_))
        if t.is_varlen:
            return encode_strings(t, self.data, self.validity)
        data = self.data
        want = t.numpy_dtype
        if data.dtype != want:
            if want == np.dtype(object):
                data = wide_objects(data)
            else:
                data = data.astype(want)
        valid: np.ndarray | None = None
        if self.validity is not None:
            valid = np.asarray(self.validity, dtype=np.bool_)
            if valid.all():
                valid = None
        return Column(t, np.ascontiguousarray(data), valid)


def wide_objects(data: np.ndarray) -> np.ndarray:
    """Integer-valued array -> object array of Python ints (the wide DECIMAL / LARGEINT layout).

    `astype(object)` makes Python ints from int64/uint64 in C (no per-element Python call);
    other dtypes (bool, float) keep the element-wise `int()` conversion.
    """
    if data.dtype == np.dtype(object):
        return data
    if data.dtype.kind in "iu":
        return data.astype(object)
    out = np.empty(len(data), dtype=object)
    out[:] = [int(x) for x in data.tolist()]
    return out


def widen(v: Vec) -> Vec:
    """A wide-typed Vec in its canonical object layout.

    Arithmetic may return wide DECIMAL results as exact int64 arrays (see operators.py,
    "compact wide results"); every consumer other than arithmetic expects object arrays.
    """
    if v.type.is_object and v.data.dtype != np.dtype(object) and v.type.kind is not TypeKind.NULL:
        return Vec(v.type, wide_objects(v.data), v.validity)
    return v


def as_int(value: object) -> int:
    """A physical integer value (a Python int from `tolist`, or a numpy integer) as an int."""
    if isinstance(value, SupportsInt):
        return int(value)
    raise TypeError(f"not an integer value: {value!r}")


def decode_strings(col: Column) -> np.ndarray:
    """Var-len column -> object array of str (bytes for HLL/BITMAP); "" under nulls."""
    n = len(col)
    assert col.offsets is not None, "decode_strings of a fixed-width column"
    out = np.empty(n, dtype=object)
    if n == 0:
        return out
    if col.type.kind not in BLOB_KINDS:
        fast = decode_text(col)  # Arrow's C++ decode; None when the bytes are not UTF-8
        if fast is not None:
            return fast
    buf = col.data.tobytes()
    offs = col.offsets.tolist()
    if col.type.kind in BLOB_KINDS:
        out[:] = [buf[offs[i]: offs[i + 1]] for i in range(n)]
    else:
        out[:] = [buf[offs[i]: offs[i + 1]].decode("utf-8", "replace") for i in range(n)]
    return out


def encode_strings(t: DataType, values: np.ndarray, valid: np.ndarray | None) -> Column:
    """Object array of str/bytes -> Arrow large_string layout Column."""
    n = len(values)
    if valid is not None and valid.all():
        valid = None
    vals = values.tolist()
    if valid is not None:
        nulls = np.flatnonzero(~valid).tolist()
        for i in nulls:
            vals[i] = ""
    encoded = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in vals]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return Column(t, data, None if valid is None else np.asarray(valid, np.bool_), offsets)


def constant(t: DataType, value: object, n: int) -> Vec:
    """A Vec repeating one physical value (None = all NULL)."""
    if t.kind is TypeKind.NULL:
        return Vec(t, np.zeros(n, np.int8), np.zeros(n, np.bool_))
    if t.is_varlen:
        data = np.empty(n, dtype=object)
        data[:] = "" if value is None else value
    elif t.is_object:
        data = np.empty(n, dtype=object)
        data[:] = 0 if value is None else as_int(value)
    else:
        data = np.full(n, 0 if value is None else value, dtype=t.numpy_dtype)
    valid = np.zeros(n, np.bool_) if value is None else None
    return Vec(t, data, valid)


def and_valid(*masks: np.ndarray | None) -> np.ndarray | None:
    """Combine validity masks: valid only where every input is valid (None = all valid)."""
    out: np.ndarray | None = None
    for m in masks:
        if m is None:
            continue
        out = m if out is None else (out & m)
    return out


def valid_of(vecs: Sequence[Vec]) -> np.ndarray | None:
    return and_valid(*(v.validity for v in vecs))


def object_array(values: Sequence[object]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def bool_vec(data: np.ndarray, valid: np.ndarray | None) -> Vec:
    from storage.types import BOOLEAN

    return Vec(BOOLEAN, np.asarray(data, dtype=np.bool_).view(np.uint8), valid)


def truthy(v: Vec) -> np.ndarray:
    """SQL truth of a Vec: True where the value is non-null and non-zero (NULL counts False)."""
    if v.type.kind is TypeKind.NULL:
        return np.zeros(len(v), np.bool_)
    if v.is_text:
        data = np.array([_str_truth(x) for x in v.data.tolist()], dtype=np.bool_)
    elif v.data.dtype == np.dtype(object):
        data = np.array([x != 0 for x in v.data.tolist()], dtype=np.bool_)
    else:
        data = v.data != 0
    if v.validity is not None:
        data = data & v.validity
    return data


def _str_truth(s: object) -> bool:
    try:
        return float(str(s).strip() or "0") != 0
    except ValueError:
        return False
