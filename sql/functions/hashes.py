"""MURMUR_HASH3_64(str, ..) (Doris 2.1): Doris' own 64-bit MurmurHash3 variant.

Doris does not take half of MurmurHash3_x64_128 (what mmh3.hash64 gives): its
`murmur_hash3_x64_64` runs the x64 mixing on one 64-bit lane (8-byte blocks, `h1 = rotl(h1, 27)
* 5 + 0x52dce729`), xors the length and finishes with fmix64. The first argument is hashed with
seed 0, each further one with the previous hash as its seed; any NULL argument gives NULL.
Result BIGINT (the uint64 read as signed). Pure Python per value: the strings are walked in
8-byte blocks. (XXHASH_32 / XXHASH_64 are not provided: no xxhash library is a dependency.)
Upstream: Doris `be/src/util/murmur_hash3.cpp`, `vec/functions/function_hash.cpp`.
"""

from __future__ import annotations

from typing import Any

from sql.functions import EvalEnv, ScalarFunction, register_scalar
from sql.functions.nested import physical, scalar_out
from sql.functions.vector import Vec
from storage.types import BIGINT, STRING

_MASK = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _MASK
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _MASK
    return k ^ (k >> 33)


def _mix(k: int) -> int:
    k = (k * _C1) & _MASK
    return (_rotl(k, 31) * _C2) & _MASK


def murmur_hash3_x64_64(data: bytes, seed: int) -> int:
    """Doris' `murmur_hash3_x64_64` as an unsigned 64-bit int."""
    h = seed & _MASK
    blocks = len(data) // 8
    for i in range(blocks):
        h ^= _mix(int.from_bytes(data[8 * i:8 * i + 8], "little"))
        h = (_rotl(h, 27) * 5 + 0x52DCE729) & _MASK
    tail = data[8 * blocks:]
    if tail:
        h ^= _mix(int.from_bytes(tail, "little"))
    return _fmix64(h ^ len(data))


def murmur_hash3_64(*strings: Any) -> int | None:
    if any(s is None for s in strings):
        return None
    h = 0
    for s in strings:
        text = s if isinstance(s, bytes) else str(s).encode("utf-8")
        h = murmur_hash3_x64_64(text, h)
    return h - (1 << 64) if h >> 63 else h


def _murmur64(a: list[Vec], env: EvalEnv) -> Vec:
    cols = [physical(v) for v in a]
    return scalar_out(BIGINT, [murmur_hash3_64(*row) for row in zip(*cols)])


register_scalar(ScalarFunction("murmur_hash3_64", 1, -1,
                               lambda t: ([STRING] * len(t), BIGINT), _murmur64))
