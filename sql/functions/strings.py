"""String scalar functions beyond `scalar.py`: TRIM with characters, SPLIT_PART, SUBSTRING_INDEX,
REGEXP / REGEXP_EXTRACT / REGEXP_REPLACE, FIND_IN_SET, hashes, HEX/UNHEX, STRCMP ...

All work on the decoded object arrays of `Vec` with per-row Python loops (regular expressions are
compiled once per distinct pattern, on RE2: `regex.py`). Semantics follow Doris 2.1 where it
differs from MySQL: SPLIT_PART gives NULL for a part that does not exist; REGEXP_EXTRACT gives
'' when nothing matches; UNHEX of invalid input gives ''.
Also holds `__tuple_key`, the internal key COUNT(DISTINCT a, b, ...) is rewritten to.
Upstream: Doris `function_string.cpp`, `function_regexp.cpp`.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterator
from typing import Any, SupportsFloat

import numpy as np

from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.regex import (
    InvalidRegex,
    Regex,
    compile_regex,
    parse_rewrite,
    single_value,
)
from sql.functions.vector import Vec, and_valid, as_int, object_array
from storage.types import BIGINT, BOOLEAN, INT, STRING, TINYINT, DataType


def _reg(name: str, lo: int, hi: int, signature: Callable, impl: Callable, *aliases: str,
         propagate: bool = True) -> None:
    register_scalar(ScalarFunction(name, lo, hi, signature, impl, propagate), *aliases)


def _s(t: DataType) -> DataType:
    return t if t.is_string else STRING


def _rows(a: list[Vec]) -> Iterator[tuple[Any, ...]]:
    # Any: a row holds each column's values as numpy's tolist gives them, their Python type
    # set by the column's SQL type (str, int, float); the functions below are typed per type.
    return zip(*(v.data.tolist() for v in a))


def _str_out(vals: list[str | None]) -> Vec:
    """Strings with None meaning NULL."""
    ok = np.fromiter((v is not None for v in vals), np.bool_, count=len(vals))
    return Vec(STRING, object_array([v if v is not None else "" for v in vals]),
               None if ok.all() else ok)


def _int_out(t: DataType, vals: list[int]) -> Vec:
    return Vec(t, np.array(vals, dtype=t.numpy_dtype))


# ---- trimming ------------------------------------------------------------------------------
def trim_string(s: str, rhs: str, left: bool, right: bool) -> str:
    """Remove repeated whole occurrences of `rhs` (MySQL TRIM(... 'xy' FROM s), Doris trim)."""
    if not rhs:
        return s
    if left:
        while s.startswith(rhs):
            s = s[len(rhs):]
    if right:
        while s.endswith(rhs):
            s = s[: len(s) - len(rhs)]
    return s


def _trim(left: bool, right: bool) -> Callable:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        if len(a) == 1:
            return Vec(a[0].type, object_array([trim_string(s, " ", left, right)
                                                for s in a[0].data.tolist()]))
        return Vec(a[0].type, object_array([trim_string(s, r, left, right) for s, r in _rows(a)]))

    return impl


def _trim_sig(t: list[DataType]) -> tuple[list[DataType | None], DataType]:
    return [_s(x) for x in t], _s(t[0])


_reg("trim", 1, 2, _trim_sig, _trim(True, True))
_reg("ltrim", 1, 2, _trim_sig, _trim(True, False))
_reg("rtrim", 1, 2, _trim_sig, _trim(False, True))


# ---- splitting -----------------------------------------------------------------------------
def split_part(s: str, delim: str, n: int) -> str | None:
    if not delim or n == 0:
        return None
    parts = s.split(delim)
    if abs(n) > len(parts):
        return None
    return parts[n - 1] if n > 0 else parts[n]


def substring_index(s: str, delim: str, n: int) -> str:
    if not delim or n == 0:
        return ""
    parts = s.split(delim)
    return delim.join(parts[:n]) if n > 0 else delim.join(parts[n:])


_reg("split_part", 3, 3, lambda t: ([_s(t[0]), STRING, BIGINT], STRING),
     lambda a, env: _str_out([split_part(*r) for r in _rows(a)]))
_reg("substring_index", 3, 3, lambda t: ([_s(t[0]), STRING, BIGINT], STRING),
     lambda a, env: _str_out([substring_index(*r) for r in _rows(a)]))


def find_in_set(s: str, lst: str) -> int:
    if "," in s:
        return 0
    items = lst.split(",")
    return items.index(s) + 1 if s in items else 0


_reg("find_in_set", 2, 2, lambda t: ([STRING, STRING], INT),
     lambda a, env: _int_out(INT, [find_in_set(*r) for r in _rows(a)]))


# ---- small string builders -----------------------------------------------------------------
_reg("space", 1, 1, lambda t: ([BIGINT], STRING),
     lambda a, env: _str_out([" " * max(int(n), 0) for n in a[0].data.tolist()]))
_reg("ascii", 1, 1, lambda t: ([_s(t[0])], INT),
     lambda a, env: _int_out(INT, [s.encode("utf-8")[0] if s else 0
                                   for s in a[0].data.tolist()]))


def _char(a: list[Vec], env: EvalEnv) -> Vec:
    """CHAR(n, ...): bytes of each integer (big-endian), NULL arguments skipped (MySQL)."""
    out = []
    for i in range(env.n):
        buf = b""
        for v in a:
            if v.validity is not None and not v.validity[i]:
                continue
            x = int(v.data[i]) % 2**32
            buf += x.to_bytes(max(1, (x.bit_length() + 7) // 8), "big")
        out.append(buf.decode("utf-8", "replace"))
    return Vec(STRING, object_array(out))


_reg("char", 1, -1, lambda t: ([BIGINT] * len(t), STRING), _char, "chr", propagate=False)


def strcmp(x: str, y: str) -> int:
    bx, by = x.encode("utf-8"), y.encode("utf-8")
    return (bx > by) - (bx < by)


_reg("strcmp", 2, 2, lambda t: ([_s(t[0]), _s(t[1])], TINYINT),
     lambda a, env: _int_out(TINYINT, [strcmp(*r) for r in _rows(a)]))


# ---- regular expressions (RE2, see regex.py) -------------------------------------------------
def _pattern_rows(a: list[Vec], pattern_arg: int = 1) -> tuple[list[str], Regex | None]:
    """The first argument's values and, when the pattern is one constant, its program."""
    pats = a[pattern_arg].data.tolist()
    const = single_value(pats)
    return a[0].data.tolist(), (compile_regex(const) if isinstance(const, str) else None)


def _regexp(a: list[Vec], env: EvalEnv) -> Vec:
    vals, rx = _pattern_rows(a)
    if rx is not None:
        hits = rx.contains(vals)
    else:  # a pattern per row: Doris' REGEXP errors on an invalid one too
        hits = np.fromiter((compile_regex(p).contains([s])[0]
                            for s, p in zip(vals, a[1].data.tolist())), np.bool_,
                           count=len(vals))
    return Vec(BOOLEAN, hits.view(np.uint8))


def _per_row(a: list[Vec], one: Callable[[Regex, str, list[object]], str | None]) -> Vec:
    """Apply `one(program, value, other args)` per row; with a pattern per row, a pattern RE2
    rejects gives NULL for its row (Doris warns and pushes NULL), a constant one is an error."""
    vals, rx = _pattern_rows(a)
    rest = [v.data.tolist() for v in a[2:]]
    if rx is not None:
        return _str_out([one(rx, s, [r[i] for r in rest]) for i, s in enumerate(vals)])
    out: list[str | None] = []
    for i, (s, p) in enumerate(zip(vals, a[1].data.tolist())):
        try:
            prog = compile_regex(p)
        except InvalidRegex:
            out.append(None)
            continue
        out.append(one(prog, s, [r[i] for r in rest]))
    return _str_out(out)


def regexp_extract(rx: Regex, s: str, idx: int) -> str | None:
    if idx < 0 or idx > rx.groups:
        return None  # an index past the groups gives NULL here (MySQL errors)
    return rx.extract(s, idx)


_reg("regexp", 2, 2, lambda t: ([_s(t[0]), STRING], BOOLEAN), _regexp, "rlike", "regexp_like")
_reg("regexp_extract", 3, 3, lambda t: ([_s(t[0]), STRING, BIGINT], STRING),
     lambda a, env: _per_row(a, lambda rx, s, r: regexp_extract(rx, s, as_int(r[0]))))
_reg("regexp_extract_all", 2, 2, lambda t: ([_s(t[0]), STRING], STRING),
     lambda a, env: _per_row(a, lambda rx, s, r: rx.extract_all(s)))
_reg("regexp_replace", 3, 3, lambda t: ([_s(t[0]), STRING, STRING], STRING),
     lambda a, env: _per_row(a, lambda rx, s, r: rx.replace(s, parse_rewrite(r[0]), False)))
_reg("regexp_replace_one", 3, 3, lambda t: ([_s(t[0]), STRING, STRING], STRING),
     lambda a, env: _per_row(a, lambda rx, s, r: rx.replace(s, parse_rewrite(r[0]), True)))


# ---- hashes and hex ------------------------------------------------------------------------
def _digest(name: str) -> Callable:
    def impl(a: list[Vec], env: EvalEnv) -> Vec:
        return Vec(STRING, object_array([hashlib.new(name, str(s).encode("utf-8")).hexdigest()
                                         for s in a[0].data.tolist()]))

    return impl


def sha2(s: str, bits: int) -> str | None:
    if bits not in (224, 256, 384, 512):
        return None
    return hashlib.new(f"sha{bits}", s.encode("utf-8")).hexdigest()


_reg("md5", 1, 1, lambda t: ([STRING], STRING), _digest("md5"), "md5sum")
_reg("sha1", 1, 1, lambda t: ([STRING], STRING), _digest("sha1"), "sha")
_reg("sha2", 2, 2, lambda t: ([STRING, BIGINT], STRING),
     lambda a, env: _str_out([sha2(*r) for r in _rows(a)]))


def _hex(a: list[Vec], env: EvalEnv) -> Vec:
    v = a[0]
    if v.type.is_integer:
        return Vec(STRING, object_array([f"{int(x) % 2**64:X}" for x in v.data.tolist()]))
    return Vec(STRING, object_array([str(s).encode("utf-8").hex().upper()
                                     for s in v.data.tolist()]))


def unhex(s: str) -> str:
    try:
        return bytes.fromhex(s).decode("utf-8", "replace") if len(s) % 2 == 0 else ""
    except ValueError:
        return ""


_reg("hex", 1, 1, lambda t: ([t[0] if t[0].is_integer else _s(t[0])], STRING), _hex)
_reg("unhex", 1, 1, lambda t: ([STRING], STRING),
     lambda a, env: _str_out([unhex(s) for s in a[0].data.tolist()]))


# ---- internal: COUNT(DISTINCT a, b) key ----------------------------------------------------
def _tuple_key(a: list[Vec], env: EvalEnv) -> Vec:
    """One string per row identifying the tuple of physical values; NULL if any is NULL (a
    row with a NULL is not counted by COUNT(DISTINCT a, b), as in MySQL)."""
    keys = ["\x00".join(repr(x) for x in row) for row in _rows(a)]
    return Vec(STRING, object_array(keys), and_valid(*(v.validity for v in a)))


_reg("__tuple_key", 1, -1, lambda t: ([None] * len(t), STRING), _tuple_key)


# ---- internal: GROUP_CONCAT(x ORDER BY k1, k2 ...) ------------------------------------------
def sort_key_text(value: object, t: DataType) -> str:
    """A string whose text order is the SQL order of `value` (ascending, NULL first)."""
    if t.is_varlen:
        return str(value)
    if t.is_float:
        if not isinstance(value, SupportsFloat):
            raise TypeError(f"not a floating-point value: {value!r}")
        bits = struct.unpack(">q", struct.pack(">d", float(value)))[0]
        bits = ~bits if bits < 0 else bits | -(2**63)  # negatives flip all bits
        return f"{bits & 0xFFFF_FFFF_FFFF_FFFF:016x}"
    return f"{as_int(value) + 2**127:039d}"


def _order_pack(a: list[Vec], env: EvalEnv) -> Vec:
    """(value, key1, ... keyN) -> 'key1 \\0 ... keyN \\0 text': group_concat sorts these
    strings and keeps the text after the N-th NUL; NULL value -> NULL (skipped)."""
    value, keys = a[0], a[1:]
    t = value.type
    texts = [v if t.is_string else str(t.format_value(v)) for v in value.data.tolist()]
    cols = []
    for k in keys:
        enc = [sort_key_text(x, k.type) for x in k.data.tolist()]
        if k.validity is not None:
            enc = [e if ok else "" for e, ok in zip(enc, k.validity.tolist())]
        cols.append(enc)
    out = ["\x00".join([*(c[i] for c in cols), texts[i]]) for i in range(env.n)]
    return Vec(STRING, object_array(out), value.validity)


_reg("__order_pack", 2, -1, lambda t: ([None] * len(t), STRING), _order_pack, propagate=False)
