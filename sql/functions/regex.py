"""Regular expressions on RE2, as Doris evaluates them: REGEXP / RLIKE and the regexp_* functions.

Owns every user-supplied pattern: compiling it (once per distinct pattern, cached), the Doris
error for a pattern RE2 rejects, and the per-row matching loops over a batch. RE2 matches in
time linear in the input (no backtracking), so `'aaa…!' REGEXP '^(a+)+$'` answers at once;
Python's `re` is never given a user pattern (it backtracks exponentially and holds the GIL).

We call the compiled program's low-level `Match` on UTF-8 bytes rather than the `re`-like
str API of the `google-re2` wrapper: the wrapper re-encodes and re-maps offsets per call
(about 4 us a row), the direct call is about 1.5 us. Spans are byte offsets; results are
sliced from the bytes and decoded once. `_regexp.Match` and `_Anchor` are the wrapper's own
internals (what its `search` calls), hence the `google-re2>=1.1,<2` range in pyproject.toml;
tests/unit/sql/test_regex_re2.py breaks first if they change.

Semantics follow Doris 2.1 (`function_regexp.cpp`, `like.cpp`, `StringFunctions::compile_regex`):
RE2 syntax with `.` matching newlines (dot_nl); POSIX classes `[[:alpha:]]` are RE2's own;
replacement strings use `\\1`..`\\9` (`\\0` the whole match) and `\\\\` for a backslash;
REGEXP_REPLACE is RE2::GlobalReplace (an empty match right after the previous match is
skipped); a group reference past the pattern's groups leaves the string unchanged (RE2's
Replace refuses such a rewrite). A constant pattern RE2 rejects is an error
`Invalid regex expression: <pattern>. Error: <RE2's reason>`; for a pattern that varies per
row REGEXP errors too, while the regexp_* functions give NULL for that row (Doris warns).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Protocol

import numpy as np
import re2

from sql.errors import DorisError

_UNANCHORED = re2._Anchor.UNANCHORED  # the wrapper's anchor enum (re2.search uses it)
_ANCHOR_BOTH = re2._Anchor.ANCHOR_BOTH
_NO_MATCH = -1
_META = frozenset("\\^$.|?*+()[]{}")


class InvalidRegex(DorisError):
    """A pattern RE2 rejects (Doris: `Invalid regex expression: ...`)."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"Invalid regex expression: {pattern}. Error: {reason}")


def _options(case_insensitive: bool = False) -> re2.Options:
    opts = re2.Options()
    opts.dot_nl = True  # Doris sets dot_nl: '.' matches '\n' too
    opts.log_errors = False
    opts.case_sensitive = not case_insensitive
    return opts


class Regex:
    """One compiled RE2 program and the batch operations Doris' functions need."""

    __slots__ = ("_match", "groups", "literal", "pattern")

    def __init__(self, pattern: str, case_insensitive: bool = False) -> None:
        try:
            compiled = re2.compile(pattern, _options(case_insensitive))
        except re2.error as e:
            reason = e.args[0] if e.args else str(e)
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise InvalidRegex(pattern, str(reason)) from None
        self.pattern = pattern
        self.groups: int = compiled.groups
        # a pattern without metacharacters matches itself only: str methods answer (in C)
        plain = pattern and not case_insensitive and not any(c in _META for c in pattern)
        self.literal: str | None = pattern if plain else None
        # (anchor, bytes, start, end) -> [(start, end) per group 0..n], (-1, -1) = no match
        self._match: Callable[..., list[tuple[int, int]]] = compiled._regexp.Match

    # ---- single values (bytes in, spans out) ------------------------------------------------
    def search(self, text: bytes, start: int = 0) -> list[tuple[int, int]] | None:
        spans = self._match(_UNANCHORED, text, start, len(text))
        return None if spans[0][0] == _NO_MATCH else spans

    def fullmatch(self, text: bytes) -> bool:
        return self._match(_ANCHOR_BOTH, text, 0, len(text))[0][0] != _NO_MATCH

    # ---- batches ------------------------------------------------------------------------------
    def contains(self, values: Sequence[str]) -> np.ndarray:
        """REGEXP: True where the pattern matches somewhere in the value."""
        if self.literal is not None:
            lit = self.literal
            return np.fromiter((lit in v for v in values), np.bool_, count=len(values))
        match = self._match
        return np.fromiter((match(_UNANCHORED, b, 0, len(b))[0][0] != _NO_MATCH
                            for b in _encoded(values)), np.bool_, count=len(values))

    def fullmatches(self, values: Sequence[str]) -> np.ndarray:
        """LIKE through a translated pattern: True where the whole value matches."""
        match = self._match
        return np.fromiter((match(_ANCHOR_BOTH, b, 0, len(b))[0][0] != _NO_MATCH
                            for b in _encoded(values)), np.bool_, count=len(values))

    def extract(self, value: str, index: int) -> str:
        """Group `index` of the first match, '' when nothing matches (0 <= index <= groups)."""
        b = value.encode("utf-8")
        spans = self.search(b)
        if spans is None:
            return ""
        start, end = spans[index]
        return "" if start < 0 else b[start:end].decode("utf-8", "replace")

    def extract_all(self, value: str) -> str:
        """Doris REGEXP_EXTRACT_ALL: group 1 of every match as `['a','b']`, '' when the
        pattern has no group or nothing matches."""
        if self.groups == 0:
            return ""
        b = value.encode("utf-8")
        found: list[bytes] = []
        pos, n = 0, len(b)
        while pos < n:
            spans = self.search(b, pos)
            if spans is None:
                break
            (s, e), (gs, ge) = spans[0], spans[1]
            if s == e:  # an empty match: step one byte on, as Doris does
                pos = e + 1
                continue
            found.append(b[gs:ge] if gs >= 0 else b"")
            pos = e
        if not found:
            return ""
        return "[" + ",".join("'" + f.decode("utf-8", "replace") + "'" for f in found) + "]"

    def replace(self, value: str, rewrite: Rewrite, first_only: bool) -> str:
        """RE2::GlobalReplace (or RE2::Replace with `first_only`) of `value`."""
        if rewrite.max_group > self.groups:
            return value  # RE2 refuses a rewrite naming a group the pattern lacks
        if self.literal is not None:
            lit = self.literal.encode("utf-8")
            rep = rewrite.expand(lit, [(0, len(lit))]).decode("utf-8", "replace")
            return value.replace(self.literal, rep, 1 if first_only else -1)
        b = value.encode("utf-8")
        n = len(b)
        match, constant = self._match, rewrite.constant  # locals: this loop is the hot path
        out: list[bytes] = []
        append = out.append
        pos = 0
        last_end = -1
        count = 0
        while pos <= n:
            spans = match(_UNANCHORED, b, pos, n)
            s, e = spans[0]
            if s == _NO_MATCH:
                break
            if s > pos:
                append(b[pos:s])
            if s == e and s == last_end:
                # no empty match right where the last one ended: copy one character on
                step = _utf8_len(b, s) if s < n else 1
                append(b[s:s + step])
                pos = s + step
                continue
            append(constant if constant is not None else rewrite.expand(b, spans))
            pos = last_end = e
            count += 1
            if first_only:
                break
        if count == 0:
            return value
        append(b[pos:])
        return b"".join(out).decode("utf-8", "replace")


class Rewrite:
    """An RE2 rewrite string parsed once: literal pieces and group numbers."""

    __slots__ = ("constant", "max_group", "pieces")

    def __init__(self, text: str) -> None:
        raw = text.encode("utf-8")
        pieces: list[bytes | int] = []
        lit = bytearray()
        i = 0
        while i < len(raw):
            c = raw[i]
            if c == 0x5C and i + 1 < len(raw):  # backslash
                nxt = raw[i + 1]
                if 0x30 <= nxt <= 0x39:
                    if lit:
                        pieces.append(bytes(lit))
                        lit = bytearray()
                    pieces.append(nxt - 0x30)
                    i += 2
                    continue
                if nxt == 0x5C:
                    lit.append(0x5C)
                    i += 2
                    continue
            lit.append(c)
            i += 1
        if lit:
            pieces.append(bytes(lit))
        self.pieces = pieces
        self.max_group = max((p for p in pieces if isinstance(p, int)), default=0)
        # no group reference: the same bytes for every match
        self.constant: bytes | None = (b"".join(p for p in pieces if isinstance(p, bytes))
                                       if not any(isinstance(p, int) for p in pieces) else None)

    def expand(self, text: bytes, spans: list[tuple[int, int]]) -> bytes:
        out = []
        for p in self.pieces:
            if isinstance(p, int):
                s, e = spans[p]
                if s >= 0:
                    out.append(text[s:e])
            else:
                out.append(p)
        return b"".join(out)


def _utf8_len(b: bytes, i: int) -> int:
    lead = b[i]
    if lead < 0x80:
        return 1
    if lead >= 0xF0:
        return 4
    if lead >= 0xE0:
        return 3
    return 2 if lead >= 0xC0 else 1


def _encoded(values: Sequence[str]) -> list[bytes]:
    return [v.encode("utf-8") for v in values]


@lru_cache(maxsize=512)
def compile_regex(pattern: str, case_insensitive: bool = False) -> Regex:
    """The compiled program for `pattern` (cached: a constant pattern compiles once)."""
    return Regex(pattern, case_insensitive)


class TextMatch(Protocol):
    """What callers of `text_regex` use of a match (re2 ships no type stubs)."""

    def groupdict(self) -> dict[str, str | None]: ...


class TextPattern(Protocol):
    """What callers of `text_regex` use of a compiled pattern."""

    def match(self, text: str) -> TextMatch | None: ...


def text_regex(source: str, case_insensitive: bool = False) -> TextPattern:
    """A compiled RE2 pattern with the `re`-like str API (match / groupdict), for callers that
    build a pattern from user text (STR_TO_DATE's format) and want named groups."""
    try:
        return re2.compile(source, _options(case_insensitive))
    except re2.error as e:
        reason = e.args[0] if e.args else str(e)
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidRegex(source, str(reason)) from None


@lru_cache(maxsize=512)
def parse_rewrite(text: str) -> Rewrite:
    return Rewrite(text)


def single_value(values: list[object]) -> object | None:
    """The one value of a list whose items are all equal (a constant argument), else None.

    `list.count` compares by identity first, so a broadcast constant costs one C loop."""
    if not values:
        return None
    first = values[0]
    return first if values.count(first) == len(values) else None


def like_to_regex(pattern: str, escape: str = "\\") -> str:
    """RE2 source for a LIKE pattern (`%` any run, `_` one character, `escape` quotes)."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape and i + 1 < len(pattern):
            out.append(re2.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re2.escape(ch))
        i += 1
    return "".join(out)
