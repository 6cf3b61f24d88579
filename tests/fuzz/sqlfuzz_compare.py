"""Comparing one query's rows from ShaleDB (over the wire) with DuckDB's.

Values: support.rows.normalize_value's rules (floats and decimals to 4 places, dates as ISO
text, booleans as 0/1), and further every number becomes one float rounded to 12 significant
digits, so an INT from one engine equals a DECIMAL or DOUBLE from the other where Doris' result
type differs from DuckDB's (avg of a DECIMAL is a DECIMAL in Doris, a DOUBLE in DuckDB; int +
decimal literals) and a large sum compares whatever its type. -0.0 is 0.0.

Rows: a multiset always. With an ORDER BY, the sequence of the sort-key values must also be
equal (rows tied on the keys may come in any order, their keys cannot); with a LIMIT the rows
kept are defined only when the keys cover every column, otherwise only the key sequence and the
row count are compared.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from support.rows import normalize_value


def canonical(x: object) -> object:
    x = normalize_value(x)
    if isinstance(x, (int, float)):
        return float(f"{float(x):.12g}") + 0.0
    return x


def canonical_rows(rows: Sequence[Sequence[object]]) -> list[tuple[object, ...]]:
    return [tuple(canonical(x) for x in r) for r in rows]


def differences(got: Sequence[Sequence[object]], expected: Sequence[Sequence[object]],
                order: Sequence[tuple[int, bool]], limited: bool) -> str | None:
    """None when ShaleDB's rows (`got`) match DuckDB's (`expected`), else what differs."""
    got_c, exp_c = canonical_rows(got), canonical_rows(expected)
    if len(got_c) != len(exp_c):
        return f"row count {len(got_c)} != {len(exp_c)}"
    positions = [p for p, _ in order]
    if order:
        got_keys = [tuple(r[p] for p in positions) for r in got_c]
        exp_keys = [tuple(r[p] for p in positions) for r in exp_c]
        if got_keys != exp_keys:
            first = next(i for i, (a, b) in enumerate(zip(got_keys, exp_keys)) if a != b)
            return (f"order differs at row {first}: sort keys {got_keys[first]} != "
                    f"{exp_keys[first]}")
    if limited and len(set(positions)) < len(got_c[0] if got_c else ()):
        return None  # the kept rows are not defined beyond their keys
    if collections.Counter(got_c) != collections.Counter(exp_c):
        missing = list((collections.Counter(exp_c) - collections.Counter(got_c)).elements())
        extra = list((collections.Counter(got_c) - collections.Counter(exp_c)).elements())
        return f"rows differ: missing {missing[:10]}, unexpected {extra[:10]}"
    return None
