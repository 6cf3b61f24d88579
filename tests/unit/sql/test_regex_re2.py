"""RE2 semantics of sql/functions/regex.py: Doris' GlobalReplace / Replace / extract_all rules,
the literal fast path equal to the RE2 path, and Doris' error for a rejected pattern."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sql.functions.regex import InvalidRegex, Regex, compile_regex, like_to_regex, parse_rewrite


@pytest.mark.parametrize("text,pattern,rewrite,once,want", [
    ("abc", "b*", "-", False, "-a-c-"),  # RE2: no empty match right after a match
    ("abc", "x*", "-", False, "-a-b-c-"),
    ("aéb", "", "-", False, "-a-é-b-"),  # steps over whole UTF-8 characters
    ("2020-01-02", r"(\d+)-(\d+)-(\d+)", r"\3/\2/\1", False, "02/01/2020"),
    ("a.b.c", "[.]", "/", True, "a/b.c"),
    ("abc", "b", r"\2", False, "abc"),  # a group the pattern lacks: unchanged
    ("abc", "b", r"[\0\\]", False, "a[b\\]c"),
    ("aaa", "^a", "x", False, "xaa"),  # ^ only at the start, also in later searches
    ("a\nb", "a.b", "x", False, "x"),  # dot_nl as in Doris
])
def test_replace(text: str, pattern: str, rewrite: str, once: bool, want: str) -> None:
    assert compile_regex(pattern).replace(text, parse_rewrite(rewrite), once) == want


@pytest.mark.parametrize("text,pattern,want", [
    ("a1 b22 c333", "([a-z])([0-9]+)", "['a','b','c']"),
    ("abc", "[a-z]", ""),  # no group
    ("123", "([a-z])", ""),  # no match
    ("xAyB", "([A-Z])", "['A','B']"),
])
def test_extract_all(text: str, pattern: str, want: str) -> None:
    assert compile_regex(pattern).extract_all(text) == want


@settings(max_examples=200, deadline=None)
@given(st.text("ab .-é", max_size=12), st.sampled_from(["a", "b ", "é", " ", "ab"]),
       st.sampled_from(["", "-", r"<\0>", "xy"]), st.booleans())
def test_literal_fast_path_equals_the_re2_path(text, lit, rewrite, once) -> None:  # type: ignore[no-untyped-def]
    fast = compile_regex(lit)
    slow = Regex("(?:" + lit + ")")  # same language, not literal: the RE2 loop
    assert fast.literal == lit and slow.literal is None
    rw = parse_rewrite(rewrite)
    assert fast.replace(text, rw, once) == slow.replace(text, rw, once)
    assert fast.contains([text]).tolist() == slow.contains([text]).tolist()


def test_rejected_pattern_is_doris_error() -> None:
    with pytest.raises(InvalidRegex) as info:
        Regex("([a-z")
    assert info.value.code == 1105
    assert info.value.message == ("errCode = 2, detailMessage = Invalid regex expression: ([a-z. "
                                  "Error: missing ]: [a-z")


def test_like_translation() -> None:
    rx = compile_regex(like_to_regex("a%b_c\\%"))
    assert rx.fullmatches(["aXXbYc%", "abYc%", "aXbc%", "aXbYc"]).tolist() == [
        True, True, False, False]
