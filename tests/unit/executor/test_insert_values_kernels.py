"""The numba kernels of the INSERT VALUES fast path (executor/kernels/insert_values.py) against
plain-Python references: the regex scanner for what is a statement and what its tokens are,
Python's Decimal / float / datetime and the scanner's `unquote` for the values.

Generated statements mix every token shape (numbers with signs, points, exponents and more
than 18 digits; strings with MySQL escapes, doubled quotes, unicode; NULL/TRUE/FALSE in any
case) with malformed ones and ASCII whitespace; the kernel must accept exactly what the regex
scanner accepts, with the same tokens."""

from __future__ import annotations

import datetime as dt
import random
import re
from decimal import Decimal

import numpy as np
import pytest

from executor.insert_values_scanner import TokenArrays, scan_rows, scan_tokens, unquote
from executor.kernels import insert_values as K

GOOD = [
    "0", "-0", "7", "-12", "007", "123456789012345678", "-999999999999999999",
    "12345678901234567890123", "0.5", "-0.5", ".25", "-.25", "1.", "1.e5", "12.3400", "-1.5e-3",
    "2E+10", "1e308", "1e-320", "4.9e-324", "0.1", "3.141592653589793", "100000000000000000000.5",
    "0.000000000000000000001234", "1e400", "9007199254740993", "123456.125",
    "NULL", "null", "Null", "TRUE", "true", "FALSE", "False",
    "''", "'plain'", "'it''s'", "'it\\'s'", '"dq""x"', "'a\\\\b'", "'nl\\n tab\\t cr\\r'",
    "'\\0 \\b \\Z'", "'\\% \\_'", "'\\q'", "'ünï ✓ 日本 😀'", "'a\"b'", '"a\'b"', "'a\\'\\'b'",
    "'multi\nline'", "'2024-02-29'", "'2023-02-29'", "'0000-01-01'", "'2024-13-01'",
    "'2024-01-01 23:59:59'", "'2024-01-01T00:00:00.5'", "'2024-01-01 24:00:00'", "'a,b)'",
]
BAD = ["+1", "-", ".", "-.", "1e", "1e+", "1abc", "abs(1)", "DEFAULT", "0x1F", "NULLX", "'open",
       "1.5.3", "--1", "e5", "TRU"]
WS = [" ", "", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c"]


def _statement(rng: random.Random, ncols: int, bad: bool) -> str:
    rows = []
    for _ in range(rng.randint(1, 6)):
        vals = [rng.choice(GOOD) for _ in range(ncols)]
        if bad and rng.random() < 0.3:
            vals[rng.randrange(ncols)] = rng.choice(BAD)
        if bad and rng.random() < 0.05:
            vals.pop()
        sep = rng.choice(WS) + "," + rng.choice(WS)
        rows.append("(" + rng.choice(WS) + sep.join(vals) + rng.choice(WS) + ")")
    body = (rng.choice(WS) + "," + rng.choice(WS)).join(rows)
    if bad and rng.random() < 0.1:
        body += rng.choice([",", ") ", " (1)", ";;", "; SELECT 1", " -- c"])
    return "INSERT INTO t VALUES " + body + rng.choice(["", ";", " ;\n", "\n"])


def _reference_token(text: str) -> dict[str, object]:
    """What the kernel records for one token, computed from its text in plain Python."""
    if text[0] in "'\"":
        body = text[1:-1]
        escaped = "\\" in body or text[0] * 2 in body
        return {"kind": K.K_SQ if text[0] == "'" else K.K_DQ, "escaped": escaped}
    upper = text.upper()
    if upper in ("NULL", "TRUE", "FALSE"):
        return {"kind": {"NULL": K.K_NULL, "TRUE": K.K_TRUE, "FALSE": K.K_FALSE}[upper]}
    kind = K.K_EXP if "e" in text.lower() else K.K_DEC if "." in text else K.K_INT
    mantissa = re.match(r"-?([\d.]*)", text).group(1).replace(".", "")  # type: ignore[union-attr]
    significant = len(mantissa.lstrip("0"))
    return {"kind": kind, "value": Decimal(text), "big": significant > 18, "float": float(text),
            "neg": text.startswith("-")}


def _check_tokens(ta: TokenArrays, expected: list[tuple[str, ...]]) -> None:
    ncols = len(expected)
    assert ta.num_rows == len(expected[0])
    for j in range(ncols):
        assert ta.texts(j) == list(expected[j])
        for i, text in enumerate(expected[j]):
            ref = _reference_token(text)
            assert ta.kind[i, j] == ref["kind"], text
            flags = int(ta.flags[i, j])
            if "escaped" in ref:
                assert bool(flags & K.F_ESCAPED) == ref["escaped"], text
            if "value" in ref:
                assert bool(flags & K.F_BIG) == ref["big"], text
                assert bool(flags & K.F_NEG) == ref["neg"], text
                if not ref["big"]:
                    assert Decimal(int(ta.mant[i, j])).scaleb(-int(ta.frac[i, j])) == ref["value"], text
                if not flags & K.F_INEXACT:
                    got = float(ta.fval[i, j])
                    assert got == ref["float"] and np.signbit(got) == np.signbit(ref["float"]), text


@pytest.mark.parametrize("seed", range(6))
def test_scan_values_matches_the_regex_scanner(seed: int) -> None:
    rng = random.Random(seed)
    accepted = 0
    for _ in range(300):
        ncols = rng.randint(1, 5)
        sql = _statement(rng, ncols, bad=rng.random() < 0.5)
        start = len("INSERT INTO t VALUES ")
        expected = scan_rows(sql, start, ncols)
        ta = scan_tokens(sql, start, ncols)
        assert (ta is None) == (expected is None), sql
        if ta is not None:
            accepted += 1
            _check_tokens(ta, expected)  # type: ignore[arg-type]
    assert accepted > 100


def test_non_ascii_whitespace_is_left_to_the_regex_scanner() -> None:
    sql = "INSERT INTO t VALUES (1,\u00a02)"
    assert scan_tokens(sql, len("INSERT INTO t VALUES "), 2) is None
    assert scan_rows(sql, len("INSERT INTO t VALUES "), 2) is not None


def _tokens(texts: list[str]) -> TokenArrays:
    sql = "(" + "),(".join(texts) + ")"
    ta = scan_tokens(sql, 0, 1)
    assert ta is not None
    return ta


def _reference_date(text: str) -> int | None:
    if text.upper() == "NULL":
        return 0
    m = re.fullmatch(r"['\"](\d{4})-(\d{2})-(\d{2})['\"]", text)
    if m is None or m.group(1) == "0000":
        return None
    try:
        return (dt.date(*map(int, m.groups())) - dt.date(1970, 1, 1)).days
    except ValueError:
        return None


def _reference_datetime(text: str) -> int | None:
    if text.upper() == "NULL":
        return 0
    m = re.fullmatch(r"['\"](\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?['\"]", text)
    if m is None or m.group(1) == "0000":
        return None
    try:
        value = dt.datetime(*map(int, m.groups()[:6]), int((m.group(7) or "0").ljust(6, "0")))
    except ValueError:
        return None
    return (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def _dates(rng: random.Random, with_time: bool) -> list[str]:
    out = []
    for _ in range(200):
        y = rng.choice([1, 4, 99, 100, 1900, 1970, 2000, 2023, 2024, 9999, 0])
        text = f"{y:04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d}"
        if with_time:
            text += rng.choice([" ", "T", "_"]) + f"{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:{rng.randint(0, 61):02d}"
            text += rng.choice(["", ".", ".5", ".123456", ".1234567", f".{rng.randint(0, 999):03d}"])
        q = rng.choice(["'", '"'])
        out.append(rng.choice([f"{q}{text}{q}", f"{q}{text}{q}", "NULL", f"'{text} '", "20240101"]))
    return out


@pytest.mark.parametrize("with_time", [False, True])
def test_decode_dates_and_datetimes(with_time: bool) -> None:
    rng = random.Random(7)
    for _ in range(20):
        texts = _dates(rng, with_time)
        ta = _tokens(texts)
        ref = [(_reference_datetime if with_time else _reference_date)(t) for t in texts]
        out = np.empty(len(texts), dtype=np.int64)
        kernel = K.decode_datetimes if with_time else K.decode_dates
        first_bad = kernel(ta.buf, ta.kind[:, 0].copy(), ta.start[:, 0].copy(), ta.end[:, 0].copy(),
                           ta.flags[:, 0].copy(), out)
        expected_bad = next((i for i, r in enumerate(ref) if r is None), -1)
        assert first_bad == expected_bad
        upto = len(texts) if first_bad < 0 else first_bad
        assert out[:upto].tolist() == ref[:upto]


def test_gather_strings_applies_mysql_escapes() -> None:
    texts = [t for t in GOOD if t[0] in "'\""] + ["NULL"]
    ta = _tokens(texts)
    offsets = np.empty(len(texts) + 1, dtype=np.int64)
    data = np.empty(int((ta.end - ta.start).sum()), dtype=np.uint8)
    assert K.gather_strings(ta.buf, ta.kind[:, 0].copy(), ta.start[:, 0].copy(), ta.end[:, 0].copy(),
                            ta.flags[:, 0].copy(), offsets, data) == -1
    got = [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(texts))]
    assert got == [b"" if t == "NULL" else unquote(t).encode("utf-8") for t in texts]
    # a number among the strings: its index comes back
    ta = _tokens(["'a'", "1", "'b'"])
    assert K.gather_strings(ta.buf, ta.kind[:, 0].copy(), ta.start[:, 0].copy(), ta.end[:, 0].copy(),
                            ta.flags[:, 0].copy(), offsets, data) == 1


@pytest.mark.parametrize("day", ["1900-02-29", "2000-02-29", "2100-02-29", "2023-02-29", "2024-02-29",
                                 "1970-01-01", "0001-01-01", "9999-12-31", "1969-12-31", "2024-04-31",
                                 "2024-00-10", "2024-12-00", "0000-01-01"])
def test_calendar_edges(day: str) -> None:
    for text, ref, kernel in ((f"'{day}'", _reference_date, K.decode_dates),
                              (f"'{day} 12:34:56.789'", _reference_datetime, K.decode_datetimes)):
        ta = _tokens([text])
        out = np.empty(1, dtype=np.int64)
        bad = kernel(ta.buf, ta.kind[:, 0].copy(), ta.start[:, 0].copy(), ta.end[:, 0].copy(),
                     ta.flags[:, 0].copy(), out)
        expected = ref(text)
        assert (bad == 0) == (expected is None)
        if expected is not None:
            assert int(out[0]) == expected
