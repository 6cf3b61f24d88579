"""LIKE over the offsets+bytes buffers of a text column (numba), without decoding to `str`.

Handles patterns made of literal text and `%` only (`LikeProgram`): the literal segments
between `%`s are matched greedily leftmost-first, which is exact for `%`-only patterns; a
pattern that does not start (end) with `%` pins its first (last) segment to the start (end) of
the value. Matching UTF-8 bytes equals matching code points here: a valid UTF-8 sequence found
inside valid UTF-8 always starts on a character boundary. Patterns with `_` (one character,
not one byte) stay on the `str` path (sql/functions/operators.py `like_matcher`).
`like_segments_reference` is the plain-Python reference the tests compare the kernel with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np


@dataclass(frozen=True)
class LikeProgram:
    segments: tuple[bytes, ...]  # non-empty literal pieces between `%`s, in order
    anchor_start: bool  # the pattern does not start with `%`
    anchor_end: bool  # the pattern does not end with `%`

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """(concatenated segment bytes, segment start offsets with a final end offset)."""
        starts = np.zeros(len(self.segments) + 1, np.int64)
        np.cumsum([len(s) for s in self.segments], out=starts[1:])
        return np.frombuffer(b"".join(self.segments), np.uint8).copy(), starts


def like_program(pattern: str, escape: str = "\\") -> LikeProgram | None:
    """The `%`-only program of a LIKE pattern, or None when it has `_` or no `%` at all.

    Escapes follow `like_matcher`: the escape character makes the next character literal, a
    trailing lone escape is itself literal.
    """
    tokens: list[str | None] = []  # None = `%`
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape and i + 1 < len(pattern):
            tokens.append(pattern[i + 1])
            i += 2
            continue
        if ch == "_":
            return None
        tokens.append(None if ch == "%" else ch)
        i += 1
    if None not in tokens:
        return None  # plain equality: other paths handle it
    segments: list[bytes] = []
    cur: list[str] = []
    for tok in tokens:
        if tok is None:
            if cur:
                segments.append("".join(cur).encode("utf-8"))
            cur = []
        else:
            cur.append(tok)
    if cur:
        segments.append("".join(cur).encode("utf-8"))
    return LikeProgram(tuple(segments), tokens[0] is not None, tokens[-1] is not None)


@numba.njit(cache=True, nogil=True)
def _at(data: np.ndarray, pos: int, pat: np.ndarray, a: int, b: int) -> bool:
    for j in range(b - a):
        if data[pos + j] != pat[a + j]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def like_kernel(offsets: np.ndarray, data: np.ndarray, pat: np.ndarray, starts: np.ndarray,
                anchor_start: bool, anchor_end: bool) -> np.ndarray:
    """out[i] = value i matches the `%`-only program (segments `pat[starts[k]:starts[k+1]]`)."""
    n = offsets.shape[0] - 1
    nseg = starts.shape[0] - 1
    out = np.zeros(n, np.bool_)
    for r in range(n):
        pos = offsets[r]
        end = offsets[r + 1]
        first = 0
        last = nseg
        if anchor_start and nseg > 0:
            ln = starts[1] - starts[0]
            if pos + ln > end or not _at(data, pos, pat, starts[0], starts[1]):
                continue
            pos += ln
            first = 1
        if anchor_end and last > first:
            ln = starts[last] - starts[last - 1]
            if end - ln < pos or not _at(data, end - ln, pat, starts[last - 1], starts[last]):
                continue
            end -= ln
            last -= 1
        ok = True
        for k in range(first, last):
            a, b = starts[k], starts[k + 1]
            ln = b - a
            found = -1
            for p in range(pos, end - ln + 1):
                if data[p] == pat[a] and _at(data, p, pat, a, b):
                    found = p
                    break
            if found < 0:
                ok = False
                break
            pos = found + ln
        out[r] = ok
    return out


def like_segments_reference(values: list[bytes], prog: LikeProgram) -> list[bool]:
    """Plain-Python reference of `like_kernel` (same greedy algorithm, with bytes.find)."""
    out = []
    for v in values:
        pos, end = 0, len(v)
        segs = list(prog.segments)
        ok = True
        if prog.anchor_start and segs:
            s = segs.pop(0)
            ok = v.startswith(s)
            pos = len(s)
        if ok and prog.anchor_end and segs:
            s = segs.pop()
            ok = end - len(s) >= pos and v.endswith(s)
            end -= len(s)
        for s in segs if ok else []:
            at = v.find(s, pos, end)
            if at < 0:
                ok = False
                break
            pos = at + len(s)
        out.append(ok)
    return out
